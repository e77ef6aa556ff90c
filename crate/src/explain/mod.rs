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
use crate::model::{CoverageNote, Ns};

/// Names listed per table by default.
pub const DEFAULT_TOP: usize = 20;

/// The window the explainer's rates refer to: first kernel start to last kernel end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Window {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub duration_us: f64,
}

/// The explainer's result for one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainReport {
    pub file: String,
    pub window: Window,
    pub kernels: kernels::KernelTime,
    pub launch_storm: kernels::LaunchStorm,
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
    let (start_ns, end_ns) = ix.kernel_extent();
    ExplainReport {
        file: ix.label.clone(),
        window: Window {
            start_ns,
            end_ns,
            duration_us: us(end_ns - start_ns),
        },
        kernels: kernels::kernel_summary(ix, top),
        launch_storm: kernels::launch_storm(ix, (start_ns, end_ns)),
        syncs: api::sync_summary(ix),
        allocations: api::alloc_summary(ix),
        memory: memory::memory_summary(ix),
        nvtx: nvtx::nvtx_summary(ix, top),
        processes: processes::process_breakdown(ix),
        launch_latency: api::launch_latency(ix),
        coverage: coverage(ix),
    }
}

/// What the explainer could not see, beyond what loading recorded.
fn coverage(ix: &TraceIndex<'_>) -> Vec<CoverageNote> {
    let t = ix.trace;
    let mut notes = t.coverage.clone();
    let mut note = |subject: &str, reason: &str| {
        notes.push(CoverageNote {
            subject: subject.into(),
            reason: reason.into(),
        })
    };
    if !t.present.runtime {
        note(
            "syncs, launch latency, launch storm",
            "no CUDA runtime API table: no API calls; the launch rate counts kernels instead",
        );
    } else if ix.calls.is_empty() {
        note(
            "launch latency, NVTX GPU time, memory",
            "runtime correlation ids not loaded: kernels and copies cannot be joined to their API calls",
        );
    } else if ix.launch_calls_only() {
        note(
            "syncs, allocations, memory",
            "the runtime calls (as recorded or loaded) are kernel launches only: no sync, allocation or copy API call to report",
        );
    }
    if !t.present.nvtx {
        note(
            "NVTX",
            "no NVTX_EVENTS table: no range summary and no NVTX-attributed GPU time",
        );
    }
    if !t.present.memcpy && !t.present.memset {
        note(
            "memory",
            "no memcpy/memset tables (or not loaded): no copy summary",
        );
    }
    notes
}
