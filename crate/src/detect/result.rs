//! The detection result, serialized as the JSON of spec §2.
//!
//! Field order is the reference script's key order first (`verdict` … `phases`), then the keys
//! nsys-lens adds. In the `trtllm-skill` profile the reference keys hold the reference values
//! (rounded to 4 decimals); in `standard` they hold unrounded values.

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::{ScopeThresholds, Thresholds};
use crate::model::CoverageNote;

/// The seven metric values of one scope (reference `METRICS`); `None` serializes as `null`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub gpu_idle_ratio: Option<f64>,
    pub launch_overhead_ratio: Option<f64>,
    pub gpu_utilization: Option<f64>,
    pub nccl_ratio: Option<f64>,
    pub host_prep_exposed_ratio: Option<f64>,
    pub host_prep_perf_impact: Option<f64>,
    pub host_prep_idle_attribution: Option<f64>,
}

/// Which applicable metrics crossed their threshold (reference `crossed_details`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CrossedDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_idle_ratio: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_overhead_ratio: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_utilization: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_prep_exposed_ratio: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_prep_perf_impact: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_prep_idle_attribution: Option<bool>,
}

/// One metric with the figures its value is computed from: value = numerator / denominator,
/// both in µs; or, for a mean of ratios with their own denominators over several devices or
/// processes (M5, M3a, M3c), value = the mean of `parts`' values, each its numerator /
/// denominator (numerator and denominator then `None`: summed, they divide to another number).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub value: Option<f64>,
    pub numerator_us: Option<f64>,
    pub denominator_us: Option<f64>,
    /// Per device or process, when the value is their mean (else empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<EvidencePart>,
    pub threshold: f64,
    /// `"above"` (crossed when value > threshold) or `"below"` (crossed when value < threshold).
    pub direction: &'static str,
    /// `None` when the metric is not applicable (or never counts, like `nccl_ratio`).
    pub crossed: Option<bool>,
    /// One line on what the metric means.
    pub meaning: &'static str,
}

impl Evidence {
    /// The figures its value is computed from, as people read them: `numerator / denominator`,
    /// or for a mean of parts `mean of GPU 0 1.20 ms / 3.00 ms = 40.0%, GPU 1 …` (empty when
    /// not applicable).
    pub fn figures(&self) -> String {
        use crate::format::{duration_us, percent};
        if self.value.is_none() {
            return String::new();
        }
        if !self.parts.is_empty() {
            let parts: Vec<String> = self
                .parts
                .iter()
                .map(|p| {
                    let who = match (p.device, p.pid) {
                        (Some(d), _) => format!("GPU {d}"),
                        (None, Some(pid)) => format!("pid {pid}"),
                        (None, None) => String::new(),
                    };
                    format!(
                        "{who} {} / {} = {}",
                        duration_us(p.numerator_us),
                        duration_us(p.denominator_us),
                        percent(p.value)
                    )
                })
                .collect();
            return format!("mean of {}", parts.join(", "));
        }
        match (self.numerator_us, self.denominator_us) {
            (Some(n), Some(d)) => format!("{} / {}", duration_us(n), duration_us(d)),
            _ => String::new(),
        }
    }
}

/// One device's or process's figures of a metric whose value is their mean.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidencePart {
    /// The device, for a mean over devices (M5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// The process's pid, for a mean over processes (M3a, M3c).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub numerator_us: f64,
    pub denominator_us: f64,
    /// numerator / denominator (0 when the denominator is 0, as the metric's rule says).
    pub value: f64,
}

/// The analysed window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowInfo {
    pub start_ns: i64,
    pub end_ns: i64,
    /// Time actually measured (for a union of steps, less than `end_ns - start_ns`).
    pub duration_us: f64,
    /// How many disjoint intervals make up the window.
    pub intervals: usize,
    /// `"gpu-work"` (first GPU operation's start to the last one's end: kernels, graph replays,
    /// copies, memsets), `"kernels"` (first kernel start to last kernel end, `trtllm-skill`),
    /// `"user"`, `"steps-union"` or `"steps-span"`.
    pub source: &'static str,
}

/// One device's busy/idle figures in a scope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceMetrics {
    pub device: u32,
    pub gpu_name: Option<String>,
    pub kernels: u64,
    pub busy_us: f64,
    pub window_us: f64,
    pub gpu_idle_ratio: f64,
    pub gpu_utilization: f64,
    pub nccl_us: f64,
    pub nccl_ratio: f64,
}

/// One process's launch and host-prep figures in a scope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessMetrics {
    pub pid: u32,
    /// `globalPid` as a string: it exceeds 2^53.
    pub global_pid: String,
    pub name: String,
    pub devices: Vec<u32>,
    pub launch_calls: u64,
    pub launch_us: Option<f64>,
    pub launch_overhead_ratio: Option<f64>,
    /// The NVTX name pattern that selected this process's host-prep ranges.
    pub host_prep_pattern: Option<String>,
    pub host_prep_us: Option<f64>,
    pub host_prep_exposed_us: Option<f64>,
    pub idle_us: Option<f64>,
    pub host_prep_exposed_ratio: Option<f64>,
    pub host_prep_perf_impact: Option<f64>,
    pub host_prep_idle_attribution: Option<f64>,
}

/// A phase's result (reference `PHASE` keys first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseResult {
    pub iteration_count: u64,
    pub verdict: &'static str,
    pub crossed_count: u32,
    pub applicable_count: u32,
    pub host_prep_confirmed: bool,
    pub metrics: Metrics,
    // --- added keys ---
    pub nccl_caveat: bool,
    pub crossed_details: CrossedDetails,
    pub window: WindowInfo,
    pub thresholds: Thresholds,
    pub evidence: BTreeMap<&'static str, Evidence>,
    pub per_device: Vec<DeviceMetrics>,
    pub per_process: Vec<ProcessMetrics>,
    /// Forward steps before TP de-duplication.
    pub raw_step_count: u64,
    /// The phase's GPU work by kind within its window, as the run's `bound` splits it (a
    /// profile counting every GPU operation; `null` under `trtllm-skill`).
    pub bound: Option<super::bound::Bound>,
}

/// Context and generation phases; absent phases are omitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Phases {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<PhaseResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<PhaseResult>,
}

/// Facts about the analysed file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceFacts {
    pub file: String,
    pub nsys_version: Option<String>,
    /// The export's own schema version (`EXPORT_META_DATA`), not the JSON's `schema_version`.
    pub export_schema_version: Option<String>,
    pub gpus: Vec<String>,
    pub devices: Vec<u32>,
    /// Processes that launched kernels.
    pub processes: usize,
    pub kernels: u64,
    /// Kernel-launch API calls (detection loads only those from the runtime table).
    pub launch_api_calls: u64,
    pub nvtx_ranges: u64,
    pub forward_steps: u64,
    /// `CUDA_GRAPH_TRACE_OPTIONS:MODE` (`Graph` or `Node`) when the capture recorded it.
    pub cuda_graph_trace: Option<String>,
}

/// The whole detection result (spec §2 JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetectReport {
    pub verdict: &'static str,
    pub aggregate_metrics: Metrics,
    pub crossed_count: u32,
    pub applicable_count: u32,
    pub host_prep_confirmed: bool,
    pub nccl_caveat: bool,
    pub crossed_details: CrossedDetails,
    pub phases: Phases,
    // --- added keys ---
    /// What bounds the run, with the shares that decide it (`null` under `trtllm-skill`, which
    /// counts kernels only).
    pub bound: Option<super::bound::Bound>,
    pub profile: &'static str,
    pub window: WindowInfo,
    /// The step marker the phases were read under (`null`: no range was a step).
    pub step_marker: Option<crate::names::steps::StepMarkerReport>,
    /// Without a step marker: the repeating unit of the kernel stream, as `analyze` infers its
    /// steps (`null` with a marker, or when the stream does not repeat at step scale).
    pub inferred_steps: Option<crate::iterations::inferred::UnitFound>,
    /// Where the steps come from, in one phrase: the marker, the inferred unit, or none
    /// ([`super::catalogue::step_source`]; the CLI's text and the page's marker field show it).
    pub step_source: String,
    pub thresholds: ScopeThresholds,
    pub evidence: BTreeMap<&'static str, Evidence>,
    pub per_device: Vec<DeviceMetrics>,
    pub per_process: Vec<ProcessMetrics>,
    pub trace: TraceFacts,
    pub coverage: Vec<CoverageNote>,
    pub warnings: Vec<String>,
    /// The verdict in one sentence ([`super::catalogue::summary`]), with a caution when the
    /// capture checks say the capture cannot support it.
    pub summary: String,
    /// The capture checks ([`super::capture`]).
    pub capture: super::capture::CaptureReport,
}
