//! The explainer (spec §5): what a trace's kernels, CUDA calls, copies and NVTX ranges say, and
//! what to do next — prioritized findings mapped to the reference's optimization patterns
//! (reference §9.5).
//!
//! Each section is its own module over the shared [`TraceIndex`]; [`crate::findings`] turns
//! the sections (and the drill-down's results) into findings with severity and evidence.

pub mod api;
pub mod kernels;
pub mod memory;
pub mod nvtx;
pub mod processes;
pub mod stats;

use serde::Serialize;

use crate::index::TraceIndex;
use crate::index::units::us;
use crate::model::{CoverageNote, Ns, Trace};

/// Names listed per table by default.
pub const DEFAULT_TOP: usize = 20;

/// What the explainer's window spans, so every figure compared with it says what was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowBasis {
    /// First kernel start to last kernel end: host calls outside it (set-up before the first
    /// kernel, tear-down after the last) are not counted "in the window".
    Kernels,
    /// No kernel records: the first to the last host event (API call, NVTX range, copy), i.e.
    /// the whole capture.
    Capture,
}

/// The window the explainer's rates and shares refer to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Window {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub duration_us: f64,
    pub basis: WindowBasis,
}

impl Window {
    /// The part of `[start, end)` inside the window, if any (a zero-length call at a window
    /// edge counts as inside).
    pub fn clip(&self, start: Ns, end: Ns) -> Option<(Ns, Ns)> {
        let (s, e) = (start.max(self.start_ns), end.max(start).min(self.end_ns));
        (s <= e && start <= self.end_ns && end >= self.start_ns).then_some((s, e))
    }
}

/// The kernel window, or the whole capture's host events when there is no kernel.
pub fn window_of(ix: &TraceIndex<'_>) -> Window {
    let (start_ns, end_ns, basis) = if ix.trace.kernels.is_empty() {
        let (s, e) = host_extent(ix.trace);
        (s, e, WindowBasis::Capture)
    } else {
        let (s, e) = ix.kernel_extent();
        (s, e, WindowBasis::Kernels)
    };
    Window {
        start_ns,
        end_ns,
        duration_us: us(end_ns - start_ns),
        basis,
    }
}

/// First start to last end over the host's events: API calls, NVTX ranges, copies and memsets.
fn host_extent(t: &Trace) -> (Ns, Ns) {
    let spans = [
        (&t.runtime.start, &t.runtime.end),
        (&t.nvtx.start, &t.nvtx.end),
        (&t.memcpy.start, &t.memcpy.end),
        (&t.memset.start, &t.memset.end),
    ];
    let mut extent: Option<(Ns, Ns)> = None;
    for (starts, ends) in spans {
        for (&s, &e) in starts.iter().zip(ends) {
            let e = e.max(s);
            extent = Some(extent.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
        }
    }
    extent.unwrap_or((0, 0))
}

/// The explainer's result for one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainReport {
    pub file: String,
    pub window: Window,
    pub kernels: kernels::KernelTime,
    pub launch_storm: kernels::LaunchStorm,
    /// Every CUDA API call (runtime and driver) by name.
    pub api_calls: api::CallSummary,
    pub syncs: api::CallSummary,
    pub allocations: api::CallSummary,
    pub memory: memory::MemorySummary,
    pub nvtx: nvtx::NvtxSummary,
    pub processes: Vec<processes::ProcessStats>,
    pub launch_latency: api::LaunchLatency,
    pub coverage: Vec<CoverageNote>,
}

/// Explains one indexed trace; `top` limits the named lists.
pub fn explain(ix: &TraceIndex<'_>, top: usize) -> ExplainReport {
    let window = window_of(ix);
    ExplainReport {
        file: ix.label.clone(),
        window,
        kernels: kernels::kernel_summary(ix, top),
        launch_storm: kernels::launch_storm(ix, (window.start_ns, window.end_ns)),
        api_calls: api::api_summary(ix, &window),
        syncs: api::sync_summary(ix, &window),
        allocations: api::alloc_summary(ix, &window),
        memory: memory::memory_summary(ix, &window),
        nvtx: nvtx::nvtx_summary(ix, top),
        processes: processes::process_breakdown(ix),
        launch_latency: api::launch_latency(ix),
        coverage: coverage(ix),
    }
}

/// What the explainer could not see, beyond what loading recorded (a missing table is the
/// loader's note, stated once).
fn coverage(ix: &TraceIndex<'_>) -> Vec<CoverageNote> {
    let mut notes = ix.trace.coverage.clone();
    notes.extend(ix.call_coverage());
    notes
}
