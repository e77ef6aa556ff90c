//! The in-memory trace: columnar event tables loaded from an nsys export.
//!
//! Everything the analyses read lives here, decoupled from SQLite: `trace::load` fills these
//! vectors with plain `SELECT`s, and `detect`/later analyses only ever see this model. Columns are
//! parallel `Vec`s (struct-of-arrays) so a multi-million-row table costs a few dozen bytes per
//! event and scans stay cache-friendly. Times are integer nanoseconds throughout.

pub mod chunked;
pub mod intervals;

mod events;
mod ids;
mod meta;
mod strings;
mod tables;

pub use events::{
    HostRow, HostSpan, HostTable, KernelEvent, Kernels, LinkKey, MemOps, NVTX_RANGE_TYPES,
    NvtxRanges, NvtxRow, OmittedRanges, OutOfOrder, PAGEABLE_MEMORY, RuntimeCalls, StartOrder,
    Syncs,
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
        if !self.kernels.is_empty() {
            return Ok(());
        }
        let why = if self.present.kernels {
            "the kernel table is empty"
        } else {
            "no CUPTI_ACTIVITY_KIND_KERNEL table"
        };
        Err(crate::error::Error::NoKernels {
            path: source.to_string(),
            why: why.into(),
        })
    }

    pub fn note(&mut self, subject: impl Into<String>, reason: impl Into<String>) {
        self.coverage.push(CoverageNote {
            subject: subject.into(),
            reason: reason.into(),
        });
    }
}
