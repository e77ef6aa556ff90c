//! The placed events of a synthetic capture, held in memory between the scenario that places
//! them, the writer that stores them and the oracle that derives the answers from them.
//!
//! Keeping one in-memory timeline (rather than writing rows as they are placed) is what lets the
//! answers be computed from exactly the rows in the file, with no second model to drift apart.

use std::collections::HashMap;

/// Nanoseconds, as nsys stores timestamps.
pub type Ns = i64;

/// A microsecond expressed in ns, for readable scenario constants.
pub const US: Ns = 1_000;
/// A millisecond expressed in ns.
pub const MS: Ns = 1_000_000;

/// NVTX push/pop range (`ENUM_NSYS_EVENT_TYPE` 59).
pub const NVTX_PUSH_POP: u8 = 59;
/// NVTX mark (34): an instant, `end` NULL.
pub const NVTX_MARK: u8 = 34;
/// NVTX domain creation (75): `end` NULL, `text` holds the domain name.
pub const NVTX_DOMAIN_CREATE: u8 = 75;

/// The string table, doubling as `StringIds` (ids are 1-based positions).
#[derive(Debug, Default)]
pub struct Names {
    values: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    /// The `StringIds.id` of `s`, adding it on first use.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        self.values.push(s.to_string());
        let id = self.values.len() as u32;
        self.index.insert(s.to_string(), id);
        id
    }

    /// The string of an id handed out by [`Names::id`]; `""` otherwise.
    pub fn get(&self, id: u32) -> &str {
        id.checked_sub(1)
            .and_then(|i| self.values.get(i as usize))
            .map_or("", String::as_str)
    }

    /// `(id, value)` rows in id order.
    pub fn rows(&self) -> impl Iterator<Item = (u32, &str)> {
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u32 + 1, v.as_str()))
    }
}

/// One traced OS process (a TP rank): its ids and its correlation-id counter.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub name: &'static str,
    /// The CUDA device this rank drives.
    pub device: u32,
    /// Next CUDA correlation id. Every rank starts at the same value, as real CUPTI counters do,
    /// so ids collide across processes and only (process, id) identifies a launch.
    pub next_corr: u32,
}

/// First correlation id handed out in every process (real traces start small and collide).
pub const FIRST_CORRELATION_ID: u32 = 121;

impl Proc {
    pub fn new(pid: u32, name: &'static str, device: u32) -> Proc {
        Proc {
            pid,
            name,
            device,
            next_corr: FIRST_CORRELATION_ID,
        }
    }

    /// `globalPid`: bit 48 set as in real exports (`0x1000090000000`-style), pid in bits 24..48.
    pub fn global_pid(&self) -> i64 {
        (1i64 << 48) | (i64::from(self.pid) << 24)
    }

    /// `globalTid` of thread `tid` of this process.
    pub fn global_tid(&self, tid: u32) -> i64 {
        self.global_pid() | i64::from(tid & 0xFF_FFFF)
    }

    /// The main thread: on Linux its tid equals the pid.
    pub fn main_tid(&self) -> u32 {
        self.pid
    }
}

/// A GPU kernel row (`CUPTI_ACTIVITY_KIND_KERNEL`).
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    pub start: Ns,
    pub end: Ns,
    pub corr: u32,
    pub short: u32,
    pub demangled: u32,
    /// `graphNodeId`, 0 for an eagerly launched kernel (written as NULL).
    pub graph_node: u32,
    /// `graphId` of the graph a node-traced kernel ran in, 0 for none (written as NULL). The
    /// column exists from nsys 2026.1; the writer adds it only when some kernel carries one.
    pub graph_id: u32,
    pub kind: u16,
    pub proc: u8,
    pub device: u8,
    pub stream: u8,
}

/// A CUDA runtime API call row (`CUPTI_ACTIVITY_KIND_RUNTIME`).
#[derive(Debug, Clone, Copy)]
pub struct Api {
    pub start: Ns,
    pub end: Ns,
    pub corr: u32,
    pub name: u32,
    pub tid: u32,
    pub proc: u8,
}

/// An NVTX row; `end` is `None` for marks and domain creation.
#[derive(Debug, Clone, Copy)]
pub struct Nvtx {
    pub start: Ns,
    pub end: Option<Ns>,
    pub name: u32,
    /// `true`: the name is written inline in `text` (textId NULL); `false`: registered (`textId`).
    pub inline: bool,
    pub event_type: u8,
    pub proc: u8,
    pub tid: u32,
    pub domain: u32,
}

/// `ENUM_CUDA_MEMCPY_OPER`: host to device.
pub const COPY_HTOD: u8 = 1;
/// `ENUM_CUDA_MEMCPY_OPER`: device to host.
pub const COPY_DTOH: u8 = 2;
/// `ENUM_CUDA_MEM_KIND`: pageable host memory.
pub const MEM_PAGEABLE: u8 = 0;
/// `ENUM_CUDA_MEM_KIND`: page-locked (pinned) host memory.
pub const MEM_PINNED: u8 = 1;
/// `ENUM_CUDA_MEM_KIND`: device memory.
pub const MEM_DEVICE: u8 = 2;

/// A memcpy or memset GPU activity row.
#[derive(Debug, Clone, Copy)]
pub struct MemOp {
    pub start: Ns,
    pub end: Ns,
    pub corr: u32,
    pub bytes: i64,
    /// `copyKind` for memcpy (`ENUM_CUDA_MEMCPY_OPER`: 1 = HtoD, 2 = DtoH), `memKind` for
    /// memset (`ENUM_CUDA_MEM_KIND`: 2 = device).
    pub kind: u8,
    /// Memcpy only: `srcKind` and `dstKind` (`ENUM_CUDA_MEM_KIND`: 1 = pinned, 2 = device).
    pub src_kind: u8,
    pub dst_kind: u8,
    pub proc: u8,
    pub device: u8,
    pub stream: u8,
}

/// A graph-level trace row (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`, CUPTI's
/// `CUpti_ActivityGraphTrace2`): one replay of a CUDA graph, spanning the GPU work of its nodes,
/// with the correlation id of the `cudaGraphLaunch` call that launched it.
#[derive(Debug, Clone, Copy)]
pub struct GraphReplay {
    pub start: Ns,
    pub end: Ns,
    pub corr: u32,
    pub graph_id: u32,
    pub graph_exec_id: u32,
    pub proc: u8,
    pub device: u8,
    pub stream: u8,
}

/// A `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION` row.
#[derive(Debug, Clone, Copy)]
pub struct SyncOp {
    pub start: Ns,
    pub end: Ns,
    pub corr: u32,
    /// `ENUM_CUPTI_SYNC_TYPE`: 3 = stream synchronize.
    pub sync_type: u8,
    pub proc: u8,
    pub device: u8,
    pub stream: u8,
}

/// A driver (`CUPTI_ACTIVITY_KIND_OVERHEAD`) or profiler (`PROFILER_OVERHEAD`) overhead record
/// on a thread of a process.
#[derive(Debug, Clone, Copy)]
pub struct Overhead {
    pub start: Ns,
    pub end: Ns,
    pub proc: u8,
    pub tid: u32,
    /// `ENUM_CUPTI_OVERHEAD_TYPE` id.
    pub overhead_type: u8,
    /// The record's name (`nameId`): the API it ran under, or the profiler's own name.
    pub name: u32,
    /// The API call it ran under (`correlationId`), 0 for none.
    pub corr: u32,
    /// `true`: `PROFILER_OVERHEAD`; `false`: the driver's table.
    pub profiler: bool,
}

/// A thread switched onto (`on_cpu`) or off a CPU (`SCHED_EVENTS`).
#[derive(Debug, Clone, Copy)]
pub struct Switch {
    pub at: Ns,
    pub proc: u8,
    pub tid: u32,
    pub on_cpu: bool,
    /// `ENUM_SAMPLING_THREAD_STATE` id written with a switch-out (1 running: preempted,
    /// 2 interruptible: blocked); 0 for a switch-in.
    pub state: u8,
}

/// A CPU sample of a thread (`COMPOSITE_EVENTS`) and its call chain, innermost frame first
/// (`SAMPLING_CALLCHAINS`: symbol and module names, whether the symbol is unresolved).
#[derive(Debug, Clone)]
pub struct CpuSample {
    pub at: Ns,
    pub proc: u8,
    pub tid: u32,
    pub frames: Vec<(u32, u32, bool)>,
}

/// Everything placed for one synthetic capture.
#[derive(Debug, Default)]
pub struct Timeline {
    pub names: Names,
    /// `[registersPerThread, gridX, blockX]` per kernel kind (indexed by `Kernel::kind`).
    pub geometry: Vec<[u32; 3]>,
    pub procs: Vec<Proc>,
    pub kernels: Vec<Kernel>,
    pub apis: Vec<Api>,
    pub nvtx: Vec<Nvtx>,
    pub memcpy: Vec<MemOp>,
    pub memset: Vec<MemOp>,
    pub syncs: Vec<SyncOp>,
    /// Graph replays traced at graph level (written only when there are some).
    pub graph_replays: Vec<GraphReplay>,
    /// `CUDA_GRAPH_TRACE_OPTIONS:MODE` written to META_DATA_CAPTURE (`Graph` or `Node`).
    pub graph_trace_mode: &'static str,
    /// `START_TRIGGER` written to META_DATA_CAPTURE when set (`Immediate`: no capture range).
    pub start_trigger: Option<&'static str>,
    /// GPU metric names by id and their samples (`GPU_METRICS`, written only when sampled).
    pub metric_names: Vec<(u32, &'static str)>,
    pub metric_samples: Vec<super::gpu_metrics::MetricSample>,
    /// Host-clock instant the capture started (ns), anchoring `TARGET_INFO_SESSION_START_TIME`.
    pub session_start_utc_ns: i64,
    /// Overhead records, thread switches and CPU samples (each table written only when some
    /// rows of it were placed, as nsys creates tables lazily).
    pub overheads: Vec<Overhead>,
    pub switches: Vec<Switch>,
    pub samples: Vec<CpuSample>,
}

impl Timeline {
    /// An empty timeline with one process per `(pid, name, device)`.
    pub fn new(procs: &[(u32, &'static str, u32)]) -> Timeline {
        Timeline {
            procs: procs
                .iter()
                .map(|&(pid, name, dev)| Proc::new(pid, name, dev))
                .collect(),
            graph_trace_mode: "Graph",
            session_start_utc_ns: 1_763_683_200_000_000_000,
            ..Timeline::default()
        }
    }

    /// The devices that ran kernels, sorted.
    pub fn devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.kernels.iter().map(|k| u32::from(k.device)).collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Hands out the next correlation id of process `proc`.
    pub fn next_corr(&mut self, proc: usize) -> u32 {
        let p = &mut self.procs[proc];
        let id = p.next_corr;
        p.next_corr += 1;
        id
    }
}
