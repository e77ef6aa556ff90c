//! The event tables as parallel columns: kernels, CUDA runtime calls, NVTX ranges, memory
//! operations and syncs. Times are integer ns.

use super::ids::{NameId, Ns, ProcessIdx, ThreadIdx};
use super::rows::{CallRow, KernelRow, MemOpRow, SyncRow};

/// GPU kernels (`CUPTI_ACTIVITY_KIND_KERNEL`), in table order.
///
/// `stream`, `correlation` and `demangled_name` are empty when loaded with
/// `LoadOptions::detect()` (see `trace::LoadOptions::event_details`).
#[derive(Debug, Default, Clone)]
pub struct Kernels {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    /// `correlationId`, joining the runtime call that launched the kernel (within a process).
    pub correlation: Vec<u32>,
    pub short_name: Vec<NameId>,
    pub demangled_name: Vec<NameId>,
    /// `graphNodeId` (0 when NULL). Empty when no kernel has one: most traces pay nothing.
    pub graph_node: Vec<u64>,
    /// `graphId` (0 when NULL; only nsys ≥ 2026.1 has the column). Empty when none is set.
    pub graph_id: Vec<u32>,
}

/// Sets `column[row]`, growing a lazily allocated column (zeros for earlier rows).
fn set_sparse<T: Copy + Default>(column: &mut Vec<T>, row: usize, value: T) {
    if column.len() <= row {
        column.resize(row + 1, T::default());
    }
    column[row] = value;
}

impl Kernels {
    /// Room for `n` more kernels in the columns [`Kernels::push`] fills.
    pub fn reserve_exact(&mut self, n: usize, details: bool) {
        self.start.reserve_exact(n);
        self.end.reserve_exact(n);
        self.device.reserve_exact(n);
        self.process.reserve_exact(n);
        self.short_name.reserve_exact(n);
        if details {
            self.stream.reserve_exact(n);
            self.correlation.reserve_exact(n);
            self.demangled_name.reserve_exact(n);
        }
    }

    /// Appends a kernel; stream, correlation and demangled name only with `details` (the
    /// graph ids grow their columns only once one is set).
    pub fn push(&mut self, row: &KernelRow, details: bool) {
        let i = self.start.len();
        self.start.push(row.start);
        self.end.push(row.end);
        self.device.push(row.device);
        self.process.push(row.process);
        self.short_name.push(row.short_name);
        if details {
            self.stream.push(row.stream);
            self.correlation.push(row.correlation);
            self.demangled_name.push(row.demangled_name);
        }
        if row.graph_node != 0 {
            set_sparse(&mut self.graph_node, i, row.graph_node);
        }
        if row.graph_id != 0 {
            set_sparse(&mut self.graph_id, i, row.graph_id);
        }
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The kernel's `graphNodeId`, 0 when none.
    pub fn graph_node_of(&self, i: usize) -> u64 {
        self.graph_node.get(i).copied().unwrap_or(0)
    }

    /// The kernel's `graphId`, 0 when none.
    pub fn graph_id_of(&self, i: usize) -> u32 {
        self.graph_id.get(i).copied().unwrap_or(0)
    }

    /// Devices that ran at least one kernel, ascending.
    pub fn devices(&self) -> Vec<u32> {
        let mut seen: Vec<u32> = Vec::new();
        let mut last = None;
        for &d in &self.device {
            if last != Some(d) && !seen.contains(&d) {
                seen.push(d);
            }
            last = Some(d);
        }
        seen.sort_unstable();
        seen
    }
}

/// What a row of GPU work is. Busy time is what the GPU did on any engine (`docs/gpu-work.md`):
/// kernels, CUDA-graph replays traced at graph level (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`, one row
/// per replay, no kernel rows inside), copies and memsets. Kernel-only analyses (names, classes,
/// patterns, the `trtllm-skill` profile) read [`Work::Kernel`] rows alone.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Work {
    #[default]
    Kernel,
    /// A CUDA graph's whole replay (graph-level tracing).
    Replay,
    /// A memory copy: `copyKind` (`ENUM_CUDA_MEMCPY_OPER`) and whether a side is pageable host
    /// memory.
    Copy {
        kind: u8,
        pageable: bool,
    },
    Memset,
}

/// A copy's direction, grouped from `copyKind` (`ENUM_CUDA_MEMCPY_OPER`: arrays count as their
/// side, unified-memory migrations as the direction they move).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Direction {
    #[serde(rename = "H2D")]
    HostToDevice,
    #[serde(rename = "D2H")]
    DeviceToHost,
    #[serde(rename = "D2D")]
    DeviceToDevice,
    #[serde(rename = "P2P")]
    PeerToPeer,
    #[serde(rename = "H2H")]
    HostToHost,
    #[serde(rename = "unknown")]
    Unknown,
}

impl Direction {
    pub const ALL: [Direction; 6] = [
        Direction::HostToDevice,
        Direction::DeviceToHost,
        Direction::DeviceToDevice,
        Direction::PeerToPeer,
        Direction::HostToHost,
        Direction::Unknown,
    ];

    pub fn of(copy_kind: u8) -> Direction {
        match copy_kind {
            1 | 3 | 11 => Direction::HostToDevice,
            2 | 4 | 12 => Direction::DeviceToHost,
            5..=8 | 13 => Direction::DeviceToDevice,
            10 => Direction::PeerToPeer,
            9 => Direction::HostToHost,
            _ => Direction::Unknown,
        }
    }

    /// The short label reports use (`H2D`).
    pub fn label(self) -> &'static str {
        match self {
            Direction::HostToDevice => "H2D",
            Direction::DeviceToHost => "D2H",
            Direction::DeviceToDevice => "D2D",
            Direction::PeerToPeer => "P2P",
            Direction::HostToHost => "H2H",
            Direction::Unknown => "unknown",
        }
    }

    /// The name nsys's timeline gives such a copy.
    pub fn copy_name(self) -> &'static str {
        match self {
            Direction::HostToDevice => "[CUDA memcpy Host-to-Device]",
            Direction::DeviceToHost => "[CUDA memcpy Device-to-Host]",
            Direction::DeviceToDevice => "[CUDA memcpy Device-to-Device]",
            Direction::PeerToPeer => "[CUDA memcpy Peer-to-Peer]",
            Direction::HostToHost => "[CUDA memcpy Host-to-Host]",
            Direction::Unknown => "[CUDA memcpy]",
        }
    }
}

/// The name of a graph replay row (its graph id is the row's `graph_id`).
pub const REPLAY_NAME: &str = "[CUDA graph replay]";
/// The name of a memset row.
pub const MEMSET_NAME: &str = "[CUDA memset]";

/// Every name a non-kernel GPU-work row is given, interned into every trace's strings when
/// they are loaded so rows of any source name them alike.
pub fn work_names() -> impl Iterator<Item = &'static str> {
    Direction::ALL
        .into_iter()
        .map(Direction::copy_name)
        .chain([REPLAY_NAME, MEMSET_NAME])
}

impl Work {
    /// The name of a non-kernel row (`None` for a kernel, named by its table).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Work::Kernel => None,
            Work::Replay => Some(REPLAY_NAME),
            Work::Copy { kind, .. } => Some(Direction::of(kind).copy_name()),
            Work::Memset => Some(MEMSET_NAME),
        }
    }

    /// Kernels and graph replays: the work the SMs run.
    pub fn is_compute(self) -> bool {
        matches!(self, Work::Kernel | Work::Replay)
    }

    /// Copies and memsets: the work the copy engines (or memset kernels) run.
    pub fn is_transfer(self) -> bool {
        matches!(self, Work::Copy { .. } | Work::Memset)
    }

    /// The class of a row of this kind named `short_name`: a graph replay, copy or memset by
    /// its kind, a kernel by its short name (`names::kernels::kernel_category`). The one rule
    /// the timeline colours GPU work by and Root cause rolls its time up by.
    pub fn class(self, short_name: &str) -> crate::names::kernels::KernelCategory {
        use crate::names::kernels::{KernelCategory, kernel_category};
        match self {
            Work::Kernel => kernel_category(short_name),
            Work::Replay => KernelCategory::Replay,
            Work::Copy { .. } => KernelCategory::Copy,
            Work::Memset => KernelCategory::Memset,
        }
    }

    /// The kind of GPU work a name drawn on a device lane stands for: a graph replay, copy or
    /// memset by the name every load gives such rows (`[CUDA graph replay] graph 3`, `[CUDA
    /// memcpy Host-to-Device] 4.0 GiB`), else a kernel.
    pub fn of_name(name: &str) -> Work {
        let copy = Direction::Unknown.copy_name().trim_end_matches(']');
        if name.starts_with(REPLAY_NAME) {
            Work::Replay
        } else if name.starts_with(MEMSET_NAME) {
            Work::Memset
        } else if name.starts_with(copy) {
            Work::Copy {
                kind: 0,
                pageable: false,
            }
        } else {
            Work::Kernel
        }
    }
}

/// The table a row of GPU work comes from. The timeline indexes each by row number and reads
/// rows back from it (a view zoomed in, a hover, a launch link), so a row is named by its table
/// and its row there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkTable {
    /// `CUPTI_ACTIVITY_KIND_KERNEL`.
    Kernels,
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`.
    Replays,
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    Memcpy,
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    Memset,
}

impl WorkTable {
    pub const ALL: [WorkTable; 4] = [
        WorkTable::Kernels,
        WorkTable::Replays,
        WorkTable::Memcpy,
        WorkTable::Memset,
    ];

    /// The table rows of this kind of work come from.
    pub fn of(work: Work) -> WorkTable {
        match work {
            Work::Kernel => WorkTable::Kernels,
            Work::Replay => WorkTable::Replays,
            Work::Copy { .. } => WorkTable::Memcpy,
            Work::Memset => WorkTable::Memset,
        }
    }

    /// Its place in [`WorkTable::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Kernels {
    /// The kernel at row index `i` as a [`KernelRow`] (`stream` 0 when not loaded).
    pub fn event(&self, i: usize) -> KernelRow {
        super::rows::kernel_table_row(self, i, None)
    }

    /// Row indices sorted by `(start, end)`, ties in table order: the order every one-pass
    /// analysis expects. A 4-byte index per kernel, built only when the table is out of order.
    pub fn start_order(&self) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..self.len() as u32).collect();
        let key = |&i: &u32| (self.start[i as usize], self.end[i as usize]);
        if !idx.is_sorted_by_key(key) {
            idx.sort_by_key(key);
        }
        idx
    }

    /// Every kernel as a [`KernelRow`], in start order.
    pub fn events_in_start_order(&self) -> impl Iterator<Item = KernelRow> + '_ {
        self.start_order()
            .into_iter()
            .map(|i| self.event(i as usize))
    }
}

/// A kernel met out of start order by a one-pass analysis: the caller falls back to loading
/// (and sorting) the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel row {row} starts at {start} ns, before the previous kernel ({previous} ns): the kernel table is not in start order"
)]
pub struct OutOfOrder {
    pub row: i64,
    pub start: Ns,
    /// The largest start seen before it.
    pub previous: Ns,
}

/// The order check every one-pass analysis makes on the kernels it is fed.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartOrder {
    last: Option<Ns>,
}

impl StartOrder {
    /// Accepts `ev` when it starts no earlier than every kernel accepted before it.
    pub fn check(&mut self, ev: &KernelRow) -> Result<(), OutOfOrder> {
        match self.last {
            Some(previous) if ev.start < previous => Err(OutOfOrder {
                row: ev.row,
                start: ev.start,
                previous,
            }),
            _ => {
                self.last = Some(ev.start);
                Ok(())
            }
        }
    }
}

/// CUDA runtime/driver API calls (`CUPTI_ACTIVITY_KIND_RUNTIME`).
#[derive(Debug, Default, Clone)]
pub struct RuntimeCalls {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub thread: Vec<ThreadIdx>,
    pub correlation: Vec<u32>,
    pub name: Vec<NameId>,
}

impl RuntimeCalls {
    /// Room for `n` more calls in the columns [`RuntimeCalls::push`] fills.
    pub fn reserve_exact(&mut self, n: usize, details: bool) {
        self.start.reserve_exact(n);
        self.end.reserve_exact(n);
        self.thread.reserve_exact(n);
        self.name.reserve_exact(n);
        if details {
            self.correlation.reserve_exact(n);
        }
    }

    /// Appends a call (its correlation id only with `details`).
    pub fn push(&mut self, call: &CallRow, details: bool) {
        self.start.push(call.start);
        self.end.push(call.end);
        self.thread.push(call.thread);
        self.name.push(call.name);
        if details {
            self.correlation.push(call.correlation);
        }
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// NVTX events that have an end (ranges); marks and domain rows are not kept.
#[derive(Debug, Default, Clone)]
pub struct NvtxRanges {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub thread: Vec<ThreadIdx>,
    pub event_type: Vec<u8>,
    pub domain: Vec<u32>,
    /// The range's name as a user sees it: `text` when non-NULL, else `StringIds[textId]`.
    pub name: Vec<NameId>,
    /// `StringIds[textId]` only (`NO_NAME` when `textId` is NULL): what the reference scripts see.
    pub text_id_name: Vec<NameId>,
    /// What a windows-only load (the page's verdict) did not keep.
    pub omitted: OmittedRanges,
}

/// One NVTX range as the loader reads it: a row of [`NvtxRanges`], or a row handed straight to
/// a consumer that keeps only what it derives (the page's detect plans).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvtxRow {
    /// Its row: the `rowid` when read from the file, the index in a loaded table.
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub thread: ThreadIdx,
    pub event_type: u8,
    pub domain: u32,
    /// `text` when non-NULL, else `StringIds[textId]` (see [`NvtxRanges::name`]).
    pub name: NameId,
    /// `StringIds[textId]` only (see [`NvtxRanges::text_id_name`]).
    pub text_id_name: NameId,
}

/// NVTX ranges read but not kept: only their count and one fact about their names remain.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OmittedRanges {
    pub count: u64,
    /// Some of them are named by inline `text`.
    pub inline_text: bool,
}

impl NvtxRanges {
    /// Adds a push/pop range on `thread` named `name` (both by text and by `textId`).
    #[cfg(test)]
    pub(crate) fn push_range(&mut self, (start, end): (Ns, Ns), thread: ThreadIdx, name: NameId) {
        let row = NvtxRow {
            row: self.len() as i64,
            start,
            end,
            thread,
            event_type: 59,
            domain: 0,
            name,
            text_id_name: name,
        };
        self.push(&row, true);
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Row `i` (`i < len()`); `domain` is 0 when the load did not read domains.
    pub fn row(&self, i: usize) -> NvtxRow {
        NvtxRow {
            row: i as i64,
            start: self.start[i],
            end: self.end[i],
            thread: self.thread[i],
            event_type: self.event_type[i],
            domain: self.domain.get(i).copied().unwrap_or(0),
            name: self.name[i],
            text_id_name: self.text_id_name[i],
        }
    }

    /// Adds a row; `with_domain`: the load reads domains (else the column stays empty).
    pub fn push(&mut self, row: &NvtxRow, with_domain: bool) {
        self.start.push(row.start);
        self.end.push(row.end);
        self.thread.push(row.thread);
        self.event_type.push(row.event_type);
        if with_domain {
            self.domain.push(row.domain);
        }
        self.name.push(row.name);
        self.text_id_name.push(row.text_id_name);
    }

    /// Counts a range read but not kept.
    pub fn omit(&mut self, inline_text: bool) {
        self.omitted.count += 1;
        self.omitted.inline_text |= inline_text;
    }

    /// Ranges in the file, including those a windows-only load left out.
    pub fn total(&self) -> u64 {
        self.len() as u64 + self.omitted.count
    }

    /// Whether some range is named by its inline `text` rather than a `textId` (the
    /// trtllm-skill profile cannot see those names), counting ranges left out.
    pub fn has_inline_text_names(&self) -> bool {
        self.omitted.inline_text
            || self
                .name
                .iter()
                .zip(&self.text_id_name)
                .any(|(a, b)| a != b)
    }

    /// Gives back the columns' spare capacity (up to half of each after loading row by row):
    /// the page holds the ranges while it builds the detect plans, its peak.
    pub fn shrink_to_fit(&mut self) {
        self.start.shrink_to_fit();
        self.end.shrink_to_fit();
        self.thread.shrink_to_fit();
        self.event_type.shrink_to_fit();
        self.domain.shrink_to_fit();
        self.name.shrink_to_fit();
        self.text_id_name.shrink_to_fit();
    }

    /// Lets the kept ranges go, keeping what the verdict's facts and warnings say of them: the
    /// page's analysis worker needs them only until the detect plans are built.
    pub fn forget_ranges(&mut self) {
        *self = NvtxRanges {
            omitted: OmittedRanges {
                count: self.total(),
                inline_text: self.has_inline_text_names(),
            },
            ..NvtxRanges::default()
        };
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// NVTX event types that are ranges: push/pop, start/end and their NVTXT-imported variants.
pub const NVTX_RANGE_TYPES: [u8; 4] = [59, 60, 70, 71];

/// Memory copies or memsets (`CUPTI_ACTIVITY_KIND_MEMCPY` / `_MEMSET`).
#[derive(Debug, Default, Clone)]
pub struct MemOps {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    pub correlation: Vec<u32>,
    pub bytes: Vec<u64>,
    /// `copyKind` for memcpy (ENUM_CUDA_MEMCPY_OPER), 0 for memset.
    pub kind: Vec<u8>,
    /// `srcKind` / `memKind` (ENUM_CUDA_MEM_KIND; 0 = pageable), 255 when unknown.
    pub src_mem: Vec<u8>,
    pub dst_mem: Vec<u8>,
}

/// `ENUM_CUDA_MEM_KIND` value of pageable host memory.
pub const PAGEABLE_MEMORY: u8 = 0;

impl MemOps {
    pub fn push(&mut self, op: &MemOpRow) {
        self.start.push(op.start);
        self.end.push(op.end);
        self.device.push(op.device);
        self.stream.push(op.stream);
        self.process.push(op.process);
        self.correlation.push(op.correlation);
        self.bytes.push(op.bytes);
        self.kind.push(op.kind);
        self.src_mem.push(op.src_mem);
        self.dst_mem.push(op.dst_mem);
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Whether operation `i` has a pageable host side (source or destination).
    pub fn pageable_host(&self, i: usize) -> bool {
        self.src_mem.get(i) == Some(&PAGEABLE_MEMORY)
            || self.dst_mem.get(i) == Some(&PAGEABLE_MEMORY)
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// CUDA synchronization events (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`).
#[derive(Debug, Default, Clone)]
pub struct Syncs {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    pub correlation: Vec<u32>,
    pub sync_type: Vec<u8>,
}

impl Syncs {
    pub fn push(&mut self, sync: &SyncRow) {
        self.start.push(sync.start);
        self.end.push(sync.end);
        self.device.push(sync.device);
        self.stream.push(sync.stream);
        self.process.push(sync.process);
        self.correlation.push(sync.correlation);
        self.sync_type.push(sync.sync_type);
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// The host tables the timeline's thread tracks show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostTable {
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`: CUDA API calls.
    Api,
    /// `NVTX_EVENTS` ranges (those with an end).
    Nvtx,
}

/// A row of a [`HostTable`] as the timeline's index scan sees it: where and when, not what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpan {
    /// The SQLite `rowid`.
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    /// `globalTid` as exported (process and thread in one number).
    pub thread: i64,
}

/// A row of a [`HostTable`] read again for a zoomed-in view, with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRow {
    pub span: HostSpan,
    /// The API function, or the range's text; empty when the export names none.
    pub name: String,
}

/// What joins a kernel to the CUDA API call that launched it: the correlation id and the
/// process (the high bits of `globalPid` / `globalTid`, as nsys packs them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkKey {
    pub correlation: i64,
    pub process: i64,
}
