//! The in-memory trace: columnar event tables loaded from an nsys export.
//!
//! Everything the analyses read lives here, decoupled from SQLite: `trace::load` fills these
//! vectors with plain `SELECT`s, and `detect`/later analyses only ever see this model. Columns are
//! parallel `Vec`s (struct-of-arrays) so a multi-million-row table costs a few dozen bytes per
//! event and scans stay cache-friendly. Times are integer nanoseconds throughout.

pub mod capture;
pub mod chunked;
pub mod intervals;

mod events;
mod ids;
mod meta;
mod strings;
mod tables;

pub use events::{
    KernelEvent, Kernels, MemOps, NVTX_RANGE_TYPES, NvtxRanges, NvtxRow, OmittedRanges, OutOfOrder,
    PAGEABLE_MEMORY, RuntimeCalls, StartOrder, Syncs,
};
pub use ids::{
    GLOBAL_PID_MASK, NO_NAME, NameId, Ns, ProcessIdx, ThreadIdx, UNHELD_NAME, os_pid, os_tid,
};
pub use meta::{CoverageNote, GpuInfo, TraceMeta};
pub use strings::{NameFlags, RowIds, StringIndex, Strings, flag};
pub use tables::{Processes, Threads};

use serde::Serialize;

/// A whole loaded trace.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub meta: TraceMeta,
    pub strings: Strings,
    pub processes: Processes,
    pub threads: Threads,
    pub kernels: Kernels,
    pub runtime: RuntimeCalls,
    pub nvtx: NvtxRanges,
    pub memcpy: MemOps,
    pub memset: MemOps,
    pub syncs: Syncs,
    pub gpus: Vec<GpuInfo>,
    /// What was missing while loading (tables, columns), as facts rather than errors.
    pub coverage: Vec<CoverageNote>,
    /// Which of the event tables were present in the file.
    pub present: PresentTables,
    /// Warm-up spans and GC/GIL markers for the capture checks (`trace::capture`).
    pub capture: capture::CaptureMarks,
}

/// Which event tables exist (a missing table differs from an empty one).
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct PresentTables {
    pub kernels: bool,
    pub runtime: bool,
    pub nvtx: bool,
    pub memcpy: bool,
    pub memset: bool,
    pub syncs: bool,
    /// `OSRT_API` (OS runtime calls) exists in the file; no loader reads its rows.
    pub osrt: bool,
}

impl Trace {
    /// Fails with a message naming `source` when the trace has no kernel to analyse (every
    /// analysis starts from kernels).
    pub fn require_kernels(&self, source: &str) -> crate::error::Result<()> {
        self.require_kernels_launched(source, self.loaded_launch_calls())
    }

    /// Kernel-launch API calls among the loaded runtime calls.
    pub fn loaded_launch_calls(&self) -> u64 {
        (0..self.runtime.len())
            .filter(|&r| {
                let name = self.strings.get(self.runtime.name[r]);
                crate::names::api::api_kind(name).launches_kernels()
            })
            .count() as u64
    }

    /// [`Trace::require_kernels`] when the launch calls were counted elsewhere (swept, not
    /// loaded): `launch_calls` kernel-launch API calls were traced.
    pub fn require_kernels_launched(
        &self,
        source: &str,
        launch_calls: u64,
    ) -> crate::error::Result<()> {
        if !self.kernels.is_empty() {
            return Ok(());
        }
        let why = if self.present.kernels {
            "the kernel table is empty"
        } else {
            "no CUPTI_ACTIVITY_KIND_KERNEL table"
        };
        let advice = if launch_calls > 0 {
            format!(
                "CUDA tracing was on: {launch_calls} kernel-launch API calls were traced, but no kernel record was written. The GPU activity buffers were not flushed before the process ended: capture with nsys profile --cuda-flush-interval=100, and let the application synchronize (cudaDeviceSynchronize) and call cudaProfilerStop or cudaDeviceReset before it exits"
            )
        } else {
            "Capture with CUDA tracing on (nsys profile --trace=cuda,nvtx ...) and export again"
                .to_string()
        };
        Err(crate::error::Error::NoKernels {
            path: source.to_string(),
            why: why.into(),
            advice,
        })
    }

    pub fn note(&mut self, subject: impl Into<String>, reason: impl Into<String>) {
        self.coverage.push(CoverageNote {
            subject: subject.into(),
            reason: reason.into(),
        });
    }
}
