//! The per-trace breakdown (`T` of the JSON): the keys first, then what the
//! text reports, the comparability check and the page need.

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::handoff::Handoff;
use super::stats::{Percentiles, Stats};
use super::workload::Workload;
use crate::iterations::Method;
use crate::model::Ns;
use crate::profile::Profile;

/// `{name: value}` in a meaningful order (largest first), serialized as a JSON object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerName(pub Vec<(String, f64)>);

impl PerName {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for PerName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One name's totals inside the steady state: an NVTX op, a kernel or a CUDA API.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct OpRow {
    pub name: String,
    /// Time per step (µs): `total_us / divisor`, where the divisor is the step count (times
    /// `--tp-size` for NVTX in `trtllm-skill`).
    pub us_per_step: f64,
    pub calls_per_step: f64,
    /// Time over the whole steady state (µs), before any `--tp-size` division.
    pub total_us: f64,
    /// Calls (NVTX instances, kernels, API calls), before any `--tp-size` division.
    pub calls: u64,
    /// NVTX ops: the longest instance counted (one rank's copy), so the page can show one on the
    /// timeline; absent for kernels and API calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longest: Option<WindowNs>,
    /// NVTX ops (`standard`): the op's own time per step, µs — its time minus the time of the
    /// ranges nested directly inside it on the same thread (`docs/spec.md`, NVTX ops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_us_per_step: Option<f64>,
    /// NVTX ops (`standard`): the op most of its time runs directly inside (null at the top).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// NVTX ops (`standard`): how many ops up the `parent` chain (0 at the top).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// NVTX ops (`standard`) grouped by shape (`names::shape`): the names the op groups, by
    /// time (empty when the op is one name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberRow>,
}

/// One name an NVTX op groups ([`OpRow::members`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberRow {
    pub name: String,
    pub us_per_step: f64,
    pub calls: u64,
}

/// A window in trace time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowNs {
    pub start_ns: Ns,
    pub end_ns: Ns,
}

/// One steady step cycle (a step's start to the next step's start), where the page opens the
/// timeline from the Root cause view.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepCycle {
    /// Its position in `step_wall_times_us`.
    pub index: usize,
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub wall_us: f64,
}

/// How many of the slowest step cycles a breakdown names ([`TraceBreakdown::slowest_steps`]).
pub const SLOWEST_STEPS: usize = 5;

/// One phase of iterations (between pauses > 100 ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseInfo {
    pub first: usize,
    pub last: usize,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// Iterations at the trace's most common size.
    pub at_common_size: usize,
}

/// How the iterations were isolated, and what the benchmark phase looks like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IsolationInfo {
    pub reason: String,
    pub total_iterations: usize,
    /// Most common allreduce kernels per iteration (1 for NVTX steps, 0 without iterations).
    pub common_size: u32,
    pub phases: Vec<PhaseInfo>,
    pub benchmark_phase: Option<usize>,
    /// First kernel start: the reference prints times relative to it.
    pub t0_ns: Ns,
    /// Benchmark iterations' wall times (allreduce span or longest rank's step), µs.
    pub iteration_wall_us: Stats,
    /// Pauses between consecutive benchmark iterations, µs.
    pub iteration_gap_us: Stats,
    /// Forward steps (TP ranks merged) overlapping the benchmark window, for the cross-check
    /// against the allreduce iteration count (`standard`, allreduce method).
    pub nvtx_steps_in_window: Option<usize>,
}

/// The steady-state steps the per-step figures come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyInfo {
    /// The largest generation batch (`gen reqs`) among the candidate steps.
    pub max_gen: u64,
    /// Steady ranges before TP de-duplication.
    pub ranges: usize,
    /// The divisor of every per-step figure: steady steps (`trtllm-skill`) or complete steady
    /// step cycles (`standard`: a steady step start to the next step's start).
    pub per_step_divisor: usize,
    /// Forward-step durations (longest rank's in `trtllm-skill`, merged span in `standard`), µs.
    pub step_duration_us: Stats,
    /// `next.start − prev.end` between steady steps, µs.
    pub inter_step_gap_us: Stats,
    /// The window the breakdowns are measured in.
    pub window: WindowNs,
    /// Time the breakdown window covers, µs (the reference's steady-state wall time).
    pub window_us: f64,
}

/// Where the steps came from (`steps` in `analyze --json`): `source` is `marker` (step-marker
/// NVTX ranges), `allreduce` (allreduce groups) or `inferred` (the kernel stream, see
/// [`crate::iterations::inferred`]); `method` says how, `confidence` how sure (1 for a marker
/// or allreduce groups), `count` the iterations found in the whole trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepsFound {
    pub source: &'static str,
    pub method: &'static str,
    pub confidence: f64,
    pub count: usize,
    /// Inferred only: kernels per step on `device`, the kernel that starts each step, and the
    /// collectives per step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_kernels: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_kernel: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collectives_per_step: Vec<(String, usize)>,
    /// Inferred only: whether the unit is a step (`step`) or back-to-back repeats that may be
    /// layer blocks of one step (`repeat`); the smaller block found inside it; the pause before
    /// a unit over the largest other idle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<crate::iterations::inferred::UnitScale>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_kernels: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_ratio: Option<f64>,
    /// Inferred from graph launches: the median interval between them, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<crate::model::Ns>,
    /// Inferred only: what was found, in one sentence (the page shows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The root-cause breakdown of one trace (spec §3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceBreakdown {
    pub label: String,
    pub iteration_method: Method,
    /// Iterations in the benchmark phase (null without one).
    pub iterations: Option<usize>,
    pub benchmark_window: Option<WindowNs>,
    /// Steady-state steps after TP de-duplication (null when not computed).
    pub steady_steps: Option<usize>,
    pub wall_time_per_step_us: Option<f64>,
    pub inter_step_gap_us: Option<Percentiles>,
    pub kernels_per_step: Option<f64>,
    pub nvtx_per_step_us: PerName,
    pub kernel_time_per_step_us: PerName,
    pub api_time_per_step_us: PerName,
    pub warnings: Vec<String>,
    // ---- added keys ----
    /// Where the steps came from (`null`: no steps found).
    pub steps: Option<StepsFound>,
    pub profile: &'static str,
    /// The step marker the steps were read under (`null`: no range was a step).
    pub step_marker: Option<crate::names::steps::StepMarkerReport>,
    /// The `--tp-size` divisor applied to NVTX figures (`trtllm-skill`; 1 in `standard`).
    pub tp_size: u32,
    pub isolation: IsolationInfo,
    pub steady: Option<SteadyInfo>,
    /// GPU time per step. `standard`: GPU busy, per device the union of every GPU operation
    /// (kernels, graph replays, copies, memsets) inside the steady cycles, summed over devices;
    /// `trtllm-skill`: the reference's summed kernel time of its top 15 kernel names.
    pub gpu_time_per_step_us: Option<f64>,
    /// What `gpu_time_per_step_us` measures, as the reports label it.
    pub gpu_time_label: &'static str,
    pub nvtx_ops: Vec<OpRow>,
    pub kernel_ops: Vec<OpRow>,
    pub api_ops: Vec<OpRow>,
    /// Wall time of each steady step cycle (its start to the next step's start), µs, in order:
    /// the per-step plot's series. Shared: a row per step, which a relabelled copy (the page's
    /// Root cause view of its kept analysis) does not copy.
    pub step_wall_times_us: Arc<[f64]>,
    /// The slowest step cycles (at most [`SLOWEST_STEPS`], slowest first; the earlier of a
    /// tie): the steps worth a look on the timeline (`standard`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slowest_steps: Vec<StepCycle>,
    pub workload: Workload,
    /// How the NVTX table is built (`standard`: the grouping rule and self time), as its note
    /// says it; absent in `trtllm-skill`, which lists the reference's names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvtx_note: Option<String>,
    pub handoff: Handoff,
    /// The whole kernel window, normalized (`standard`; what a comparison without steps uses).
    pub window: Option<super::window::WindowFigures>,
    /// GPU time and rows per kernel class, per steady step, per phase and over the whole
    /// kernel window (`standard` only; absent from `trtllm-skill`'s JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_classes: Option<super::classes::KernelClasses>,
    /// The steady cycles' bounds, in order (`standard`; not serialized): what the what-if
    /// replay re-times to predict the wall time per step.
    #[serde(skip)]
    pub steady_cycles: Arc<[CycleBounds]>,
}

/// One steady cycle: a steady step's start to the next step's start, each bound with the NVTX
/// row of its step range (`None` when the steps are iterations of GPU work, not NVTX ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CycleBounds {
    pub start: Ns,
    pub start_row: Option<i64>,
    pub next: Ns,
    pub next_row: Option<i64>,
}

impl TraceBreakdown {
    /// A breakdown holding the isolation facts, with nothing measured yet.
    pub fn new(
        label: &str,
        profile: Profile,
        tp_size: u32,
        method: Method,
        isolation: IsolationInfo,
        workload: Workload,
    ) -> TraceBreakdown {
        TraceBreakdown {
            label: label.to_string(),
            iteration_method: method,
            iterations: None,
            benchmark_window: None,
            steady_steps: None,
            wall_time_per_step_us: None,
            steady_cycles: Arc::default(),
            inter_step_gap_us: None,
            kernels_per_step: None,
            nvtx_per_step_us: PerName::default(),
            kernel_time_per_step_us: PerName::default(),
            api_time_per_step_us: PerName::default(),
            warnings: Vec::new(),
            steps: None,
            profile: profile.name(),
            step_marker: None,
            tp_size,
            isolation,
            steady: None,
            gpu_time_per_step_us: None,
            gpu_time_label: gpu_time_label(profile),
            nvtx_ops: Vec::new(),
            kernel_ops: Vec::new(),
            api_ops: Vec::new(),
            step_wall_times_us: Arc::default(),
            slowest_steps: Vec::new(),
            workload,
            nvtx_note: None,
            handoff: Handoff::default(),
            window: None,
            kernel_classes: None,
        }
    }

    /// Whether the benchmark phase was found (the reference's `bench_found`).
    pub fn benchmark_found(&self) -> bool {
        self.isolation.benchmark_phase.is_some()
    }

    /// Mean forward-step duration of the steady steps, µs.
    pub fn step_duration_avg_us(&self) -> Option<f64> {
        self.steady
            .as_ref()
            .filter(|_| self.wall_time_per_step_us.is_some())
            .map(|s| s.step_duration_us.avg)
    }
}

/// The label of `gpu_time_per_step_us` under `profile`.
pub fn gpu_time_label(profile: Profile) -> &'static str {
    match profile {
        Profile::Standard => "GPU busy per step (devices summed)",
        Profile::TrtllmSkill => "GPU kernel time per step",
    }
}

/// Per-name rows as `{name: us per step}`.
pub fn per_step_map(rows: &[OpRow]) -> PerName {
    PerName(
        rows.iter()
            .map(|r| (r.name.clone(), r.us_per_step))
            .collect(),
    )
}
