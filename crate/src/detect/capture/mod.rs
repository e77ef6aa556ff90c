//! Capture checks: the profiling guide's checklist evaluated on the trace, so a verdict is never
//! given on a capture that cannot support it without saying so. Each check has a status (`ok`,
//! `warn`, `unknown` when the export cannot tell), the rows it read and the exact `nsys` flag or
//! environment variable that fixes it.
//!
//! Computed in `detect`'s assembly from what both front ends hold: the host's capture facts
//! ([`crate::model::capture::CaptureMarks`], read by the loader), the verdict's counts and the
//! kernel sweep's [`IdleProfile`] (bounded: a device's largest gaps, not its kernels).

pub mod gpu_metrics;
pub mod idle;
mod warmup;

use serde::Serialize;

use super::config::Thresholds;
use super::result::Metrics;
use super::sweep::KernelSummary;
use crate::format::counted;
use crate::model::Trace;
use crate::names::launch::launches_graph;
pub use idle::{IdleProfile, IdleSweep};
pub use warmup::{SteadyWindow, WarmupFigures};

/// Fewer GPU operations (kernels, graph replays, copies, memsets) than this and the capture is
/// too short to judge.
pub const MIN_GPU_OPERATIONS: u64 = 1000;
/// A GPU-work window shorter than this (ns) is too short to judge.
pub const MIN_WINDOW_NS: i64 = 100_000_000;
/// A window at least this long (ns) is long enough whatever its operations: a 27 s run of
/// long copies holds few operations, but start-up and single stalls do not dominate it.
pub const LONG_WINDOW_NS: i64 = 1_000_000_000;
/// Fewer forward steps than this (when the trace marks steps) is too few to judge.
pub const MIN_STEPS: usize = 20;
/// Warm-up holding at least this share of the idle time between kernels dominates the capture.
pub const WARMUP_SHARE: f64 = 0.5;

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    /// The export cannot tell (a table or option absent).
    Unknown,
}

/// One check of the capture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureCheck {
    pub id: &'static str,
    pub status: Status,
    /// What is checked, in a few words.
    pub title: &'static str,
    /// What the trace's rows show.
    pub evidence: String,
    /// The `nsys` flag or environment variable that fixes a `warn` (or settles an `unknown`).
    pub fix: Option<String>,
}

/// `capture` in `detect --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureReport {
    pub checks: Vec<CaptureCheck>,
    /// The window after the warm-up and its GPU figures, when warm-up stalls were found early.
    pub steady_window: Option<SteadyWindow>,
    /// The warm-up check's figures (`None` when it could not run).
    pub warmup: Option<WarmupFigures>,
    /// GPU metrics per device and the patterns they show, when the export sampled them.
    pub gpu_metrics: Option<gpu_metrics::GpuMetricsReport>,
}

impl CaptureReport {
    /// The checks that undermine the verdict itself (too short, warm-up dominated) and warn.
    pub fn verdict_cautions(&self) -> Vec<&CaptureCheck> {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Warn && matches!(c.id, "length" | "warmup"))
            .collect()
    }
}

/// What the checks read of the verdict.
pub struct CaptureInputs<'a> {
    /// The file as the user named it (for the command the steady window gives).
    pub file: &'a str,
    pub host: &'a Trace,
    pub kernels: &'a KernelSummary,
    pub forward_steps: usize,
    pub launch_api_calls: u64,
    /// The whole window's aggregate metrics and thresholds (beside the steady window's).
    pub metrics: &'a Metrics,
    pub thresholds: &'a Thresholds,
    /// The context and generation phases' spans (first step start, last step end), if any.
    pub phase_spans: [Option<(i64, i64)>; 2],
}

/// Runs every check.
pub fn check(inp: &CaptureInputs<'_>) -> CaptureReport {
    let (warmup, figures, steady_window) = warmup::check(inp);
    let metrics = gpu_metrics::report(inp);
    CaptureReport {
        checks: vec![
            length(inp),
            warmup,
            graph_trace(inp),
            nvtx(inp),
            capture_range(inp),
            gc_markers(inp),
            gil_markers(inp),
            kernel_records(inp),
            cpu_records(inp),
            gpu_metrics_check(inp, metrics.as_ref()),
        ],
        steady_window,
        warmup: figures,
        gpu_metrics: metrics,
    }
}

fn ms(ns: i64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

fn length(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let k = &inp.kernels.facts;
    let window = k.hull.map_or(0, |(s, e)| e - s);
    let steps = inp.forward_steps;
    let mut short = Vec::new();
    let ops = GpuOperations::of(inp.kernels);
    let what = ops.phrase();
    if ops.total < MIN_GPU_OPERATIONS && window < LONG_WINDOW_NS {
        short.push(format!("{what} (< {MIN_GPU_OPERATIONS})"));
    }
    if window < MIN_WINDOW_NS {
        short.push(format!(
            "a {} GPU-work window (< {})",
            ms(window),
            ms(MIN_WINDOW_NS)
        ));
    }
    if steps > 0 && steps < MIN_STEPS {
        short.push(format!("{steps} forward steps (< {MIN_STEPS})"));
    }
    let steps_text = if steps > 0 {
        format!(", {steps} forward steps")
    } else {
        String::new()
    };
    let (status, evidence) = if short.is_empty() {
        (
            Status::Ok,
            format!("{what} in a {} window{steps_text}", ms(window)),
        )
    } else {
        (
            Status::Warn,
            format!(
                "too short to judge: {}; idle ratios over so little work are dominated by start-up and single stalls",
                short.join(", ")
            ),
        )
    };
    CaptureCheck {
        id: "length",
        status,
        title: "Enough steady work captured",
        evidence,
        fix: (status == Status::Warn).then(|| {
            "capture ≥ 50 steady iterations: nsys profile -c cudaProfilerApi with TLLM_PROFILE_START_STOP=A-B (e.g. 100-150), or a longer --duration".to_string()
        }),
    }
}

/// The GPU operations the sweep read, by kind: what the length check counts. Under a profile
/// that counts kernels only (`trtllm-skill`), kernels alone.
struct GpuOperations {
    total: u64,
    kernels: u64,
    replays: u64,
    copies: u64,
    memsets: u64,
}

impl GpuOperations {
    fn of(summary: &KernelSummary) -> GpuOperations {
        let devices = summary.work.as_ref().map_or(&[][..], |w| &w.devices[..]);
        let sum = |f: fn(&super::sweep::work::DeviceWork) -> u64| devices.iter().map(f).sum();
        GpuOperations {
            total: summary.facts.gpu_ops.max(summary.facts.kernels),
            kernels: summary.facts.kernels,
            replays: sum(|d| d.replays),
            copies: sum(|d| d.copies.iter().map(|c| c.count).sum()),
            memsets: sum(|d| d.memsets),
        }
    }

    /// `1,234 GPU operations (1,000 kernels, 200 copies, 34 memsets)`: the kinds present.
    fn phrase(&self) -> String {
        let kinds: Vec<String> = [
            (self.kernels, "kernel", "kernels"),
            (self.replays, "graph replay", "graph replays"),
            (self.copies, "copy", "copies"),
            (self.memsets, "memset", "memsets"),
        ]
        .iter()
        .filter(|&&(n, one, _)| n > 0 || one == "kernel")
        .map(|&(n, one, many)| counted(n, one, many))
        .collect();
        format!(
            "{} ({})",
            counted(self.total, "GPU operation", "GPU operations"),
            kinds.join(", ")
        )
    }
}

fn graph_trace(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let mode = inp
        .host
        .meta
        .capture_option("CUDA_GRAPH_TRACE_OPTIONS:MODE");
    let graph_calls = !inp.host.strings.sqlite_ids_where(launches_graph).is_empty();
    let node_kernels = inp.kernels.facts.any_graph_node;
    let (status, evidence) = match (mode, graph_calls || node_kernels) {
        (Some("Graph"), true) => (
            Status::Warn,
            "CUDA graphs were launched and traced at graph level (CUDA_GRAPH_TRACE_OPTIONS:MODE = Graph): each replay's GPU time is measured as busy time, but the kernels inside are not recorded one by one, so their names, the idle gaps inside a replay and the per-layer pattern inside graphs are not measured".to_string(),
        ),
        (Some(m), true) => (
            Status::Ok,
            format!("CUDA graphs traced at {} level", m.to_ascii_lowercase()),
        ),
        (Some(m), false) => (
            Status::Ok,
            format!("no CUDA graph launch in the trace (graph tracing mode {m})"),
        ),
        (None, true) => (
            Status::Unknown,
            "CUDA graphs were launched but the export does not record the graph tracing mode".to_string(),
        ),
        (None, false) => (Status::Ok, "no CUDA graph launch in the trace".to_string()),
    };
    CaptureCheck {
        id: "cuda_graph_trace",
        status,
        title: "Kernels inside CUDA graphs recorded",
        evidence,
        fix: (status != Status::Ok).then(|| "nsys profile --cuda-graph-trace=node".to_string()),
    }
}

fn nvtx(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let ranges = inp.host.nvtx.total();
    let steps = inp.forward_steps;
    let (status, evidence) = if !inp.host.present.nvtx || ranges == 0 {
        (
            Status::Warn,
            "no NVTX ranges: no forward steps, no context/generation phases, no named host work in the gaps".to_string(),
        )
    } else if steps == 0 {
        (
            Status::Ok,
            format!("{ranges} NVTX ranges, none of them a forward step: phases not split"),
        )
    } else {
        (
            Status::Ok,
            format!("{ranges} NVTX ranges, {steps} forward steps"),
        )
    };
    CaptureCheck {
        id: "nvtx",
        status,
        title: "NVTX ranges recorded",
        evidence,
        fix: (status == Status::Warn)
            .then(|| "nsys profile -t cuda,nvtx with TLLM_LLMAPI_ENABLE_NVTX=1".to_string()),
    }
}

fn capture_range(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let trigger = inp.host.meta.capture_option("START_TRIGGER");
    let (status, evidence) = match trigger {
        None => (
            Status::Unknown,
            "the export does not record how the capture started (no START_TRIGGER in META_DATA_CAPTURE)".to_string(),
        ),
        Some("Immediate") => (
            Status::Warn,
            "the capture started with the process (START_TRIGGER = Immediate): start-up and warm-up are inside the window".to_string(),
        ),
        Some(t) => (Status::Ok, format!("capture range started by {t}")),
    };
    CaptureCheck {
        id: "capture_range",
        status,
        title: "Capture limited to the steady iterations",
        evidence,
        fix: (status != Status::Ok).then(|| {
            "nsys profile -c cudaProfilerApi with TLLM_PROFILE_START_STOP=A-B (the iterations to capture)".to_string()
        }),
    }
}

/// A marker check: `ranges` names the NVTX ranges looked for, `what` the host time they mark.
struct Marker {
    id: &'static str,
    title: &'static str,
    ranges: &'static str,
    what: &'static str,
    fix: &'static str,
}

fn markers(inp: &CaptureInputs<'_>, m: Marker, count: u64) -> CaptureCheck {
    let Marker {
        id,
        title,
        ranges,
        what,
        fix: fix_with,
    } = m;
    let (status, evidence) = if !inp.host.present.nvtx {
        (
            Status::Unknown,
            format!("no NVTX table: cannot tell whether {what} held idle time"),
        )
    } else if count > 0 {
        (Status::Ok, format!("{count} {ranges} ranges recorded"))
    } else {
        (
            Status::Unknown,
            format!("no {ranges} ranges: {what} cannot be told apart from untraced host time"),
        )
    };
    CaptureCheck {
        id,
        status,
        title,
        evidence,
        fix: (status != Status::Ok).then(|| fix_with.to_string()),
    }
}

fn gc_markers(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let m = Marker {
        id: "gc_markers",
        title: "Python GC pauses marked",
        ranges: "Python GC",
        what: "garbage-collection pauses",
        fix: "TLLM_PROFILE_RECORD_GC=1",
    };
    markers(inp, m, inp.host.capture.gc_ranges)
}

fn gil_markers(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let m = Marker {
        id: "gil_markers",
        title: "Python GIL waits marked",
        ranges: "GIL (Waiting for GIL / Holding GIL)",
        what: "waits for the Python GIL",
        fix: "nsys profile -t cuda,nvtx,python-gil",
    };
    markers(inp, m, inp.host.capture.gil_ranges)
}

fn kernel_records(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let kernels = inp.kernels.facts.kernels;
    let calls = inp.launch_api_calls;
    let (status, evidence, fix) = if !inp.host.present.runtime {
        (
            Status::Warn,
            format!(
                "{kernels} kernel records but no CUDA API table: launch overhead (M2) and the host side of gaps are not measured"
            ),
            Some("nsys profile -t cuda,nvtx".to_string()),
        )
    } else if calls == 0 {
        (
            Status::Warn,
            format!("{kernels} kernel records but no kernel-launch API call traced"),
            Some("nsys profile -t cuda,nvtx".to_string()),
        )
    } else {
        (
            Status::Ok,
            format!("{kernels} kernel records, {calls} kernel-launch API calls"),
            None,
        )
    };
    CaptureCheck {
        id: "kernel_records",
        status,
        title: "Kernels and their launches recorded",
        evidence,
        fix,
    }
}

/// The flags that record the launching processes' CPU side (NVIDIA's Nsight Systems User Guide,
/// `nsys profile` switches; see `docs/host-records.md`): CPU samples, thread scheduling, Python
/// backtrace samples.
const SAMPLE_FLAG: &str = "--sample=process-tree";
const SCHED_FLAG: &str = "--cpuctxsw=process-tree";
const PYTHON_FLAG: &str = "--python-sampling=true";

/// Whether the export holds CPU samples and thread scheduling of the processes that launch
/// kernels: without them, host time no CUDA call, NVTX range or OS call covers cannot be
/// explained (what code ran; whether a launching thread was running, blocked or waiting for a
/// CPU). Info, not a failure: the verdict stands, that time stays `untraced`.
fn cpu_records(inp: &CaptureInputs<'_>) -> CaptureCheck {
    let host = inp.host;
    let records = &host.records;
    let launching = |thread: u32| {
        host.threads
            .process
            .get(thread as usize)
            .is_some_and(|p| inp.kernels.facts.processes.binary_search(p).is_ok())
    };
    let samples = records.samples.iter().any(|s| launching(s.thread));
    let sched = records.sched.iter().any(|s| launching(s.thread));
    let missing = |has: bool, present: bool, what: &str, table: &str| match (has, present) {
        (true, _) => None,
        (false, true) => Some(format!(
            "no {what} of the processes that launch kernels ({table} holds none)"
        )),
        (false, false) => Some(format!("no {what} ({table} absent)")),
    };
    let gaps: Vec<String> = [
        missing(
            samples,
            records.present.samples,
            "CPU samples",
            "COMPOSITE_EVENTS",
        ),
        missing(
            sched,
            records.present.sched,
            "thread scheduling",
            "SCHED_EVENTS",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let (status, evidence) = match (samples, sched) {
        (true, true) => (
            Status::Ok,
            "CPU samples and thread scheduling of the processes that launch kernels recorded: host time no call or range covers is split into a launching thread on a CPU (named by the sampled code) or off it".to_string(),
        ),
        _ => (
            Status::Unknown,
            format!(
                "{}: host time nsys did not trace (no CUDA call, NVTX range or OS call on it) cannot be explained: {}",
                gaps.join(", "),
                match (samples, sched) {
                    (false, false) => "what code ran, and whether a launching thread was running, blocked or waiting for a CPU",
                    (false, true) => "what code ran",
                    _ => "whether a launching thread was running, blocked or waiting for a CPU",
                }
            ),
        ),
    };
    let flags: Vec<&str> = [
        (!samples, SAMPLE_FLAG),
        (!sched, SCHED_FLAG),
        (!samples, PYTHON_FLAG),
    ]
    .into_iter()
    .filter_map(|(want, f)| want.then_some(f))
    .collect();
    CaptureCheck {
        id: "cpu_records",
        status,
        title: "CPU samples and thread scheduling recorded",
        evidence,
        fix: (status != Status::Ok).then(|| {
            let python = match samples {
                false => "--python-sampling names Python code; ",
                true => "",
            };
            format!(
                "nsys profile {} ({python}the kernel's perf_event access is needed: nsys status --environment)",
                flags.join(" ")
            )
        }),
    }
}

fn gpu_metrics_check(
    inp: &CaptureInputs<'_>,
    metrics: Option<&gpu_metrics::GpuMetricsReport>,
) -> CaptureCheck {
    let (status, evidence) = match (metrics, inp.host.capture.gpu_metrics) {
        (Some(r), _) => (Status::Ok, gpu_metrics::evidence(r)),
        (None, Some(rows)) if rows > 0 => (
            Status::Unknown,
            format!("GPU_METRICS holds about {rows} samples, but none of SM Active, SM Issue, Tensor Active or DRAM bandwidth (by name) in the kernel window"),
        ),
        _ => (
            Status::Unknown,
            "no GPU metrics sampled: whether kernels are compute- or memory-bound, and SM idle inside kernels, cannot be told".to_string(),
        ),
    };
    CaptureCheck {
        id: "gpu_metrics",
        status,
        title: "GPU metrics sampled",
        evidence,
        fix: (status != Status::Ok).then(|| "nsys profile --gpu-metrics-devices=all".to_string()),
    }
}
