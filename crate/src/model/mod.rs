//! The in-memory trace: columnar event tables loaded from an nsys export.
//!
//! Everything the analyses read lives here, decoupled from SQLite: `trace::load` fills these
//! vectors with plain `SELECT`s, and `detect`/later analyses only ever see this model. Columns are
//! parallel `Vec`s (struct-of-arrays) so a multi-million-row table costs a few dozen bytes per
//! event and scans stay cache-friendly. Times are integer nanoseconds throughout.

pub mod capture;
pub mod chunked;
pub mod host_records;
pub mod intervals;
pub(crate) mod packed;
pub mod rows;

mod events;
mod ids;
mod meta;
mod strings;
mod tables;

pub use events::{Direction, MEMSET_NAME, REPLAY_NAME, Work, WorkTable, work_names};
pub use events::{
    HostRow, HostSpan, HostTable, Kernels, LinkKey, MemOps, NVTX_RANGE_TYPES, NvtxRanges, NvtxRow,
    OmittedRanges, OutOfOrder, PAGEABLE_MEMORY, RuntimeCalls, StartOrder, Syncs,
};
pub use ids::{GLOBAL_PID_MASK, NO_NAME, NameId, Ns, ProcessIdx, ThreadIdx, os_pid, os_tid};
pub use meta::{CoverageNote, GpuInfo, GraphNodeEvents, NcclRank, TraceMeta};
pub use rows::KernelRow;
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
    /// CUDA-graph replays traced at graph level (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`), one row per
    /// replay in kernel columns: no names, `graph_id` set.
    pub replays: Kernels,
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
    /// What the load gathered of `capture` while reading the NVTX and runtime tables.
    pub capture_fold: capture::CaptureFold,
    /// What nsys recorded about why the host was slow: overhead, scheduling, CPU samples.
    pub records: host_records::HostRecords,
}

/// The kernel table of an nsys export.
pub const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";

/// Why a trace has no kernel records, and what to capture instead (see
/// [`Trace::kernel_absence`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelAbsence {
    /// Which table is missing or empty.
    pub why: String,
    /// The capture advice that fits what the trace does hold.
    pub advice: String,
}

impl KernelAbsence {
    /// For a trace with these tables and `launches` kernel-launch calls but no kernel record:
    /// launch calls recorded, the capture was not flushed; CUDA traced without a launch, the
    /// captured part of the run launched nothing; no CUDA API table, CUDA was not traced.
    pub fn of(present: &PresentTables, launches: u64) -> KernelAbsence {
        let why = match present.kernels {
            true => "the kernel table is empty".to_string(),
            false => format!("no {KERNEL_TABLE} table"),
        };
        let advice = if launches > 0 {
            format!(
                "CUDA was traced and {launches} kernel-launch API calls were recorded, but no kernel record was written: the capture did not end cleanly, so the GPU activity buffers were not flushed. Let the application synchronize (cudaDeviceSynchronize) and call cudaProfilerStop() or cudaDeviceReset before it exits, or let it exit normally instead of killing it (under MPI, profile each rank: mpirun ... nsys profile ...); nsys profile --cuda-flush-interval=100 flushes them periodically. Then export again"
            )
        } else if present.runtime {
            "CUDA was traced but no kernel was launched while the capture ran: capture the part of the run that launches kernels (nsys profile --delay/--duration, or a capture range around the work) and export again".to_string()
        } else {
            "CUDA was not traced (no CUDA API table): capture with nsys profile --trace=cuda,nvtx ... and export again".to_string()
        };
        KernelAbsence { why, advice }
    }

    /// Whether a loader's coverage note states this absence (the kernel table is missing): a
    /// report that states the absence itself leaves that note out, so the fact is said once.
    pub fn noted_by(note: &CoverageNote) -> bool {
        note.subject == KERNEL_TABLE
    }

    /// The error that stops a kernel analysis of `source`.
    pub fn error(self, source: &str) -> crate::error::Error {
        crate::error::Error::NoKernels {
            path: source.to_string(),
            why: self.why,
            advice: self.advice,
        }
    }
}

/// Which event tables exist (a missing table differs from an empty one).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PresentTables {
    pub kernels: bool,
    pub runtime: bool,
    pub nvtx: bool,
    pub memcpy: bool,
    pub memset: bool,
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`: graph replays traced at graph level.
    pub replays: bool,
    pub syncs: bool,
    /// `OSRT_API` (OS runtime calls) exists in the file; no loader reads its rows.
    pub osrt: bool,
}

impl Trace {
    /// Fails with a message naming `source` when the trace has no kernel to analyse (every
    /// kernel analysis starts from kernels); the message says why and how to capture them.
    pub fn require_kernels(&self, source: &str) -> crate::error::Result<()> {
        match self.kernel_absence() {
            None => Ok(()),
            Some(a) => Err(a.error(source)),
        }
    }

    /// Why this trace has no kernel records and the capture advice that fits, or `None` when it
    /// has kernels (see [`KernelAbsence::of`]).
    pub fn kernel_absence(&self) -> Option<KernelAbsence> {
        if !self.kernels.is_empty() {
            return None;
        }
        // Counted from the launch calls, which every load keeps (`detect` loads no other call).
        Some(KernelAbsence::of(&self.present, self.loaded_launch_calls()))
    }

    /// Kernel-launch API calls (kernel and graph launches) among the loaded runtime calls.
    pub fn loaded_launch_calls(&self) -> u64 {
        (0..self.runtime.len())
            .filter(|&r| {
                let name = self.strings.get(self.runtime.name[r]);
                crate::names::api::api_kind(name).launches_kernels()
            })
            .count() as u64
    }

    pub fn note(&mut self, subject: impl Into<String>, reason: impl Into<String>) {
        self.coverage.push(CoverageNote {
            subject: subject.into(),
            reason: reason.into(),
        });
    }
}
