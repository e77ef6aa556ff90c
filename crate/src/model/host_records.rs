//! What nsys recorded about *why* the host was slow, beside the calls and ranges it traced:
//! the driver's and the profiler's own overhead records, thread scheduling, and CPU samples.
//!
//! These tables are small next to the event tables (hundreds to tens of thousands of rows in
//! the public exports), so a load holds them whole, sorted by time, in every engine alike
//! (`trace::host_records`). Only rows of threads and processes the trace already knows are
//! kept: a record on a thread that never called CUDA or opened a range cannot be a launching
//! thread's, and numbering no new thread keeps every other id as the event tables give it.

use serde::Serialize;

use super::{NameId, Ns, ProcessIdx, ThreadIdx};

/// What an overhead record says the time went to (`ENUM_CUPTI_OVERHEAD_TYPE`, NVIDIA's
/// `CUpti_ActivityOverheadKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverheadKind {
    /// nsys's own work: CUPTI buffer flushes, instrumentation, resource bookkeeping,
    /// initialisation, TLS and chunk allocation (every `PROFILER_OVERHEAD` row).
    Profiler,
    /// The driver's JIT compiler (PTX to SASS).
    Jit,
    /// Module loading the runtime triggered (`OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING`).
    ModuleLoad,
    /// The driver loading a function on its first launch (`CUDA_MODULE_LOADING=LAZY`).
    LazyLoad,
    /// The launch waited for room in the GPU's command queue (`OVERHEAD_COMMAND_BUFFER_FULL`):
    /// the host was ahead of the GPU.
    CommandBufferFull,
    /// `OVERHEAD_UNKNOWN` / `OVERHEAD_UNDEFINED`.
    Unknown,
}

impl OverheadKind {
    /// The kind of a `CUPTI_ACTIVITY_KIND_OVERHEAD.overheadType` value.
    pub fn of_cupti(overhead_type: i64) -> OverheadKind {
        match overhead_type {
            2 => OverheadKind::Jit,
            3..=5 => OverheadKind::Profiler,
            6 => OverheadKind::ModuleLoad,
            7 => OverheadKind::LazyLoad,
            8 => OverheadKind::CommandBufferFull,
            _ => OverheadKind::Unknown,
        }
    }
}

/// One overhead record: the driver's (`CUPTI_ACTIVITY_KIND_OVERHEAD`) or nsys's own
/// (`PROFILER_OVERHEAD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverheadRow {
    pub start: Ns,
    pub end: Ns,
    pub process: ProcessIdx,
    /// The thread, when the trace knows it (the profiler's flushes run on threads of their own).
    pub thread: Option<ThreadIdx>,
    pub kind: OverheadKind,
    /// The record's own name (`CUPTI Buffer flush`, or the API it ran under); `NO_NAME` if none.
    pub name: NameId,
}

/// Why a thread left its CPU, as far as the scheduling record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OffCpu {
    /// Preempted while runnable: waiting for a CPU (contention, affinity).
    Runnable,
    /// Blocked (sleeping in the kernel): I/O, a lock, a condition, a futex.
    Blocked,
    /// The record does not say (nsys on Linux mostly writes no state).
    Unknown,
}

impl OffCpu {
    /// From `SCHED_EVENTS.threadState` (`ENUM_SAMPLING_THREAD_STATE`) of a switch-out.
    pub fn of_state(state: Option<i64>) -> OffCpu {
        match state {
            Some(1) => OffCpu::Runnable,
            Some(2 | 3 | 7 | 8) => OffCpu::Blocked,
            _ => OffCpu::Unknown,
        }
    }

    /// How a cause label names it.
    pub fn label(self) -> &'static str {
        match self {
            OffCpu::Runnable => "runnable, not scheduled",
            OffCpu::Blocked => "blocked",
            OffCpu::Unknown => "off-CPU",
        }
    }
}

/// One thread switched onto (`on_cpu`) or off a CPU (`SCHED_EVENTS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedRow {
    pub at: Ns,
    pub thread: ThreadIdx,
    pub on_cpu: bool,
    /// Why it left, for a switch-out.
    pub off: OffCpu,
}

/// One CPU sample of a thread (`COMPOSITE_EVENTS`), named by the first frame of its call
/// chain that says something (`SAMPLING_CALLCHAINS`: resolved, outside the profiler's own
/// libraries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRow {
    pub at: Ns,
    pub thread: ThreadIdx,
    /// Index into [`HostRecords::frames`].
    pub frame: u32,
}

/// A call into the OS runtime libraries (`OSRT_API`: `poll`, `read`, `pthread_cond_wait` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OsCallRow {
    pub start: Ns,
    pub end: Ns,
    pub thread: ThreadIdx,
    pub name: NameId,
    /// Index into [`HostRecords::os_labels`]: the function and the code that called it, when
    /// nsys kept the call's backtrace (`OSRT_CALLCHAINS`) and a frame of it names code.
    pub caller: Option<u32>,
}

/// The records of one trace, each sorted by time (ties in table order).
#[derive(Debug, Clone, Default)]
pub struct HostRecords {
    pub overheads: Vec<OverheadRow>,
    pub sched: Vec<SchedRow>,
    pub samples: Vec<SampleRow>,
    /// OS runtime calls, by start.
    pub os_calls: Vec<OsCallRow>,
    /// The samples' frame names (`symbol (module)`), each once. Kept here, not in the string
    /// table: a load's string ids are fixed before these tables are read.
    pub frames: Vec<String>,
    /// OS runtime calls named with their caller (`open64 from _PyObject_MakeTpCall
    /// (python3.11)`), each once.
    pub os_labels: Vec<String>,
    /// Which tables the file has (a table absent is a capture option not set).
    pub present: RecordTables,
}

/// Which of the record tables the export holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RecordTables {
    /// `CUPTI_ACTIVITY_KIND_OVERHEAD` (nsys 2024.x and later).
    pub driver_overhead: bool,
    /// `PROFILER_OVERHEAD`.
    pub profiler_overhead: bool,
    /// `SCHED_EVENTS` (`--cpuctxsw=process-tree`, the default with CPU sampling).
    pub sched: bool,
    /// `COMPOSITE_EVENTS` with `SAMPLING_CALLCHAINS` (`--sample=process-tree`).
    pub samples: bool,
    /// `OSRT_API` (`-t osrt`).
    pub os_calls: bool,
}

impl HostRecords {
    /// The label of an OS runtime call with a known caller.
    pub fn os_label(&self, call: &OsCallRow) -> Option<&str> {
        call.caller
            .and_then(|i| self.os_labels.get(i as usize))
            .map(String::as_str)
    }

    /// The name of a sample's frame.
    pub fn frame(&self, sample: &SampleRow) -> &str {
        self.frames
            .get(sample.frame as usize)
            .map_or("", String::as_str)
    }

    /// Whether any launching thread's scheduling or samples were recorded.
    pub fn has_cpu_view(&self) -> bool {
        !self.sched.is_empty() || !self.samples.is_empty()
    }
}
