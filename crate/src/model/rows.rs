//! The event tables read row by row in start order: what an analysis written as a fold reads,
//! from the loaded columns ([`Trace`]) or straight from the file (`trace::FileRows`).
//!
//! Why: Root cause, the drill-down and the report must run in the page without the tables in
//! wasm memory. An analysis that folds rows as they come, holding only what is open or still
//! pending (a gap's host intervals, a launch whose kernel has not started), runs over either
//! source with the same code, so the CLI and the page give the same figures. Every iterator
//! is in **start order**: `(start, row)` ascending (kernels `(start, end, row)`), `row` being
//! the row's place in table order (its index when loaded, its `rowid` in the file: both grow
//! in table order, so ties break alike).

use std::cell::RefCell;

use super::Trace;
use super::events::{MemOps, NvtxRow, Work};
use super::ids::{NO_NAME, NameId, Ns, ProcessIdx, ThreadIdx};
use crate::error::Error;

/// One row of GPU work with every column an analysis reads: a kernel, or (from
/// [`EventRows::gpu_work`]) a copy, memset or CUDA-graph replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelRow {
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub device: u32,
    /// 0 when streams were not loaded.
    pub stream: u32,
    pub process: ProcessIdx,
    /// `correlationId` (0: none), joining the launch call within the process.
    pub correlation: u32,
    pub short_name: NameId,
    /// `NO_NAME` when not loaded.
    pub demangled_name: NameId,
    /// `graphNodeId`, 0 when none.
    pub graph_node: u64,
    /// `graphId`, 0 when none.
    pub graph_id: u32,
    /// What the GPU ran: [`Work::Kernel`] from the kernel table; [`EventRows::gpu_work`] gives
    /// the other kinds.
    pub work: Work,
    /// Bytes of a copy or memset, else 0.
    pub bytes: u64,
}

impl KernelRow {
    /// A copy as GPU work, named by its direction as nsys's timeline names it.
    pub fn of_copy(op: &MemOpRow, strings: &super::Strings) -> KernelRow {
        let work = op.copy_work();
        KernelRow::of_memop(op, work, work_name(strings, work))
    }

    /// A memset as GPU work, named [`super::MEMSET_NAME`].
    pub fn of_memset(op: &MemOpRow, strings: &super::Strings) -> KernelRow {
        KernelRow::of_memop(op, Work::Memset, work_name(strings, Work::Memset))
    }

    /// A copy or memset as GPU work, named `name`.
    pub fn of_memop(op: &MemOpRow, work: Work, name: NameId) -> KernelRow {
        KernelRow {
            row: op.row,
            start: op.start,
            end: op.end,
            device: op.device,
            stream: op.stream,
            process: op.process,
            correlation: op.correlation,
            short_name: name,
            demangled_name: name,
            graph_node: 0,
            graph_id: 0,
            work,
            bytes: op.bytes,
        }
    }
}

/// One CUDA runtime API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRow {
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub thread: ThreadIdx,
    /// The thread's process (`Threads::process`).
    pub process: ProcessIdx,
    /// `correlationId` (0: none or not loaded).
    pub correlation: u32,
    pub name: NameId,
}

/// One memory copy or memset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOpRow {
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub device: u32,
    pub stream: u32,
    pub process: ProcessIdx,
    pub correlation: u32,
    pub bytes: u64,
    /// `copyKind` (255: none, as for a memset).
    pub kind: u8,
    pub src_mem: u8,
    pub dst_mem: u8,
}

impl MemOpRow {
    /// What a copy row is as GPU work: its kind and whether a side is pageable.
    pub fn copy_work(&self) -> Work {
        Work::Copy {
            kind: self.kind,
            pageable: self.pageable_host(),
        }
    }

    /// Either side in pageable host memory.
    pub fn pageable_host(&self) -> bool {
        self.src_mem == super::PAGEABLE_MEMORY || self.dst_mem == super::PAGEABLE_MEMORY
    }
}

/// One CUDA synchronization event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRow {
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub device: u32,
    pub stream: u32,
    pub process: ProcessIdx,
    pub correlation: u32,
    pub sync_type: u8,
}

/// Rows of one table in start order. A read error ends the iterator early; the source
/// keeps it for [`EventRows::check`].
pub type Rows<'a, T> = Box<dyn Iterator<Item = T> + 'a>;

/// The event tables of one trace, each read in start order as often as an analysis asks.
pub trait EventRows {
    /// Everything but the event rows: strings, processes, threads, metadata, GPUs, coverage
    /// notes, which tables are present. (A loaded trace's own tables are there too; an
    /// analysis over `EventRows` reads rows only through the iterators below, so it runs
    /// the same over the file, whose `meta` holds none.)
    fn meta(&self) -> &Trace;
    /// Which optional columns the rows carry.
    fn columns(&self) -> Columns;
    fn kernels(&self) -> Rows<'_, KernelRow>;
    /// CUDA-graph replays traced at graph level, [`Work::Replay`] rows named
    /// [`super::REPLAY_NAME`].
    fn replays(&self) -> Rows<'_, KernelRow>;
    fn calls(&self) -> Rows<'_, CallRow>;
    fn ranges(&self) -> Rows<'_, NvtxRow>;
    fn memcpy(&self) -> Rows<'_, MemOpRow>;
    fn memset(&self) -> Rows<'_, MemOpRow>;
    fn syncs(&self) -> Rows<'_, SyncRow>;
    /// The first error an iterator met since the last check (it ended early there): an
    /// analysis checks once it is done, so a failed read is never a silently short table.
    fn check(&self) -> crate::error::Result<()>;

    /// Everything the GPU executed, in start order `(start, end)`: kernels, graph replays,
    /// copies and memsets, each with its [`Work`] (copies and memsets named as nsys's
    /// timeline names them). Busy time is their union; idle is what is left.
    fn gpu_work(&self) -> Rows<'_, KernelRow> {
        let strings = &self.meta().strings;
        let memset_name = work_name(strings, Work::Memset);
        let copies = self
            .memcpy()
            .map(move |op| KernelRow::of_copy(&op, strings));
        let memsets = self
            .memset()
            .map(move |op| KernelRow::of_memop(&op, Work::Memset, memset_name));
        Box::new(StartMerge::new(vec![
            self.kernels(),
            self.replays(),
            Box::new(copies),
            Box::new(memsets),
        ]))
    }
}

/// The interned name of a non-kernel row of `work` (`NO_NAME` for a kernel, or when the
/// strings lack it).
pub fn work_name(strings: &super::Strings, work: Work) -> NameId {
    work.name()
        .and_then(|n| strings.find_text(n))
        .unwrap_or(NO_NAME)
}

/// Row sources each in start order merged into one, by `(start, end)`, ties by source order
/// (what [`EventRows::gpu_work`] gives).
pub fn merged_in_start_order(sources: Vec<Rows<'_, KernelRow>>) -> Rows<'_, KernelRow> {
    Box::new(StartMerge::new(sources))
}

/// Row sources each in start order merged into one, by `(start, end)`, ties by source order.
struct StartMerge<'a> {
    heads: Vec<Option<KernelRow>>,
    sources: Vec<Rows<'a, KernelRow>>,
}

impl<'a> StartMerge<'a> {
    fn new(mut sources: Vec<Rows<'a, KernelRow>>) -> StartMerge<'a> {
        let heads = sources.iter_mut().map(|s| s.next()).collect();
        StartMerge { heads, sources }
    }
}

impl Iterator for StartMerge<'_> {
    type Item = KernelRow;

    fn next(&mut self) -> Option<KernelRow> {
        // The heads compared in place (a row is copied once, out), the first source on ties.
        let mut first: Option<(usize, (Ns, Ns))> = None;
        for (i, head) in self.heads.iter().enumerate() {
            if let Some(h) = head
                && first.is_none_or(|(_, key)| (h.start, h.end) < key)
            {
                first = Some((i, (h.start, h.end)));
            }
        }
        let (i, _) = first?;
        let next = self.sources[i].next();
        std::mem::replace(&mut self.heads[i], next)
    }
}

/// Which optional columns were read (a whole load reads them all when the file has them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Columns {
    pub kernel_streams: bool,
    pub kernel_correlations: bool,
    pub call_correlations: bool,
}

/// Rows `0..n` in start order by `key`, ties in table order; `None` when they already are.
fn start_order<K: Ord>(n: usize, key: impl Fn(usize) -> K) -> Option<Vec<u32>> {
    if (1..n).all(|i| key(i - 1) <= key(i)) {
        return None;
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| key(i as usize));
    Some(order)
}

/// Rows `0..n` of a loaded table in start order, each made by `row`.
fn ordered<'a, T: 'a, K: Ord>(
    n: usize,
    key: impl Fn(usize) -> K,
    row: impl Fn(usize) -> T + 'a,
) -> Rows<'a, T> {
    match start_order(n, key) {
        None => Box::new((0..n).map(row)),
        Some(order) => Box::new(order.into_iter().map(move |i| row(i as usize))),
    }
}

/// A loaded kernel-shaped table's rows in start order: the kernels (`replay_name` `None`), or
/// the graph replays, all named `replay_name`.
fn kernel_table_rows(k: &super::Kernels, replay_name: Option<NameId>) -> Rows<'_, KernelRow> {
    ordered(
        k.len(),
        |i| (k.start[i], k.end[i]),
        move |i| kernel_table_row(k, i, replay_name),
    )
}

/// Row `i` (`i < k.len()`) of a loaded kernel-shaped table (see [`kernel_table_rows`]).
pub(super) fn kernel_table_row(
    k: &super::Kernels,
    i: usize,
    replay_name: Option<NameId>,
) -> KernelRow {
    KernelRow {
        row: i as i64,
        start: k.start[i],
        end: k.end[i],
        device: k.device[i],
        stream: k.stream.get(i).copied().unwrap_or(0),
        process: k.process[i],
        correlation: k.correlation.get(i).copied().unwrap_or(0),
        short_name: replay_name.unwrap_or(k.short_name[i]),
        demangled_name: replay_name
            .unwrap_or_else(|| k.demangled_name.get(i).copied().unwrap_or(NO_NAME)),
        graph_node: k.graph_node_of(i),
        graph_id: k.graph_id_of(i),
        work: match replay_name {
            None => Work::Kernel,
            Some(_) => Work::Replay,
        },
        bytes: 0,
    }
}

impl Trace {
    /// Row `i` of the loaded GPU-work table `table` as [`EventRows::gpu_work`] gives it (the
    /// timeline's re-reads of a loaded trace); `None` past the table's end.
    pub fn work_row(&self, table: super::WorkTable, i: usize) -> Option<KernelRow> {
        use super::WorkTable;
        match table {
            WorkTable::Kernels => {
                (i < self.kernels.len()).then(|| kernel_table_row(&self.kernels, i, None))
            }
            WorkTable::Replays => (i < self.replays.len()).then(|| {
                let name = work_name(&self.strings, Work::Replay);
                kernel_table_row(&self.replays, i, Some(name))
            }),
            WorkTable::Memcpy => (i < self.memcpy.len())
                .then(|| KernelRow::of_copy(&mem_row(&self.memcpy, i), &self.strings)),
            WorkTable::Memset => (i < self.memset.len())
                .then(|| KernelRow::of_memset(&mem_row(&self.memset, i), &self.strings)),
        }
    }
}

impl EventRows for Trace {
    fn meta(&self) -> &Trace {
        self
    }

    fn columns(&self) -> Columns {
        Columns {
            kernel_streams: self.kernels.stream.len() == self.kernels.len(),
            kernel_correlations: self.kernels.correlation.len() == self.kernels.len(),
            call_correlations: self.runtime.correlation.len() == self.runtime.len(),
        }
    }

    fn kernels(&self) -> Rows<'_, KernelRow> {
        kernel_table_rows(&self.kernels, None)
    }

    fn replays(&self) -> Rows<'_, KernelRow> {
        let name = work_name(&self.strings, Work::Replay);
        kernel_table_rows(&self.replays, Some(name))
    }

    fn calls(&self) -> Rows<'_, CallRow> {
        let (rt, threads) = (&self.runtime, &self.threads);
        ordered(
            rt.len(),
            |i| rt.start[i],
            move |i| CallRow {
                row: i as i64,
                start: rt.start[i],
                end: rt.end[i],
                thread: rt.thread[i],
                process: threads
                    .process
                    .get(rt.thread[i] as usize)
                    .copied()
                    .unwrap_or(0),
                correlation: rt.correlation.get(i).copied().unwrap_or(0),
                name: rt.name[i],
            },
        )
    }

    fn ranges(&self) -> Rows<'_, NvtxRow> {
        let n = &self.nvtx;
        ordered(n.len(), |i| n.start[i], move |i| n.row(i))
    }

    fn memcpy(&self) -> Rows<'_, MemOpRow> {
        mem_rows(&self.memcpy)
    }

    fn memset(&self) -> Rows<'_, MemOpRow> {
        mem_rows(&self.memset)
    }

    fn syncs(&self) -> Rows<'_, SyncRow> {
        let s = &self.syncs;
        ordered(
            s.len(),
            |i| s.start[i],
            move |i| SyncRow {
                row: i as i64,
                start: s.start[i],
                end: s.end[i],
                device: s.device[i],
                stream: s.stream[i],
                process: s.process[i],
                correlation: s.correlation[i],
                sync_type: s.sync_type[i],
            },
        )
    }

    fn check(&self) -> crate::error::Result<()> {
        Ok(())
    }
}

/// A borrowed source reads as its owner (a caller boxing `&Trace` or `&FileRows`).
impl<R: EventRows + ?Sized> EventRows for &R {
    fn meta(&self) -> &Trace {
        (**self).meta()
    }
    fn columns(&self) -> Columns {
        (**self).columns()
    }
    fn kernels(&self) -> Rows<'_, KernelRow> {
        (**self).kernels()
    }
    fn replays(&self) -> Rows<'_, KernelRow> {
        (**self).replays()
    }
    fn gpu_work(&self) -> Rows<'_, KernelRow> {
        (**self).gpu_work()
    }
    fn calls(&self) -> Rows<'_, CallRow> {
        (**self).calls()
    }
    fn ranges(&self) -> Rows<'_, NvtxRow> {
        (**self).ranges()
    }
    fn memcpy(&self) -> Rows<'_, MemOpRow> {
        (**self).memcpy()
    }
    fn memset(&self) -> Rows<'_, MemOpRow> {
        (**self).memset()
    }
    fn syncs(&self) -> Rows<'_, SyncRow> {
        (**self).syncs()
    }
    fn check(&self) -> crate::error::Result<()> {
        (**self).check()
    }
}

fn mem_rows(ops: &MemOps) -> Rows<'_, MemOpRow> {
    ordered(ops.len(), |i| ops.start[i], move |i| mem_row(ops, i))
}

/// Row `i` (`i < ops.len()`) of a loaded copy or memset table.
fn mem_row(ops: &MemOps, i: usize) -> MemOpRow {
    MemOpRow {
        row: i as i64,
        start: ops.start[i],
        end: ops.end[i],
        device: ops.device[i],
        stream: ops.stream[i],
        process: ops.process[i],
        correlation: ops.correlation[i],
        bytes: ops.bytes[i],
        kind: ops.kind[i],
        src_mem: ops.src_mem[i],
        dst_mem: ops.dst_mem[i],
    }
}

/// The first read error of a file source, kept until checked ([`EventRows::check`]).
#[derive(Debug, Default)]
pub struct ErrorLatch(RefCell<Option<Error>>);

impl ErrorLatch {
    /// Keeps `e` unless an earlier error is kept.
    pub fn set(&self, e: Error) {
        let mut slot = self.0.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    /// The kept error, cleared.
    pub fn take(&self) -> crate::error::Result<()> {
        match self.0.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_calls_come_in_start_order_ties_in_table_order() {
        let mut t = Trace::default();
        let p = t.processes.intern(1 << 24);
        let th = t.threads.intern((1 << 24) | 5, &mut t.processes);
        for (start, name) in [(30, 0), (10, 1), (30, 2), (20, 3)] {
            t.runtime.start.push(start);
            t.runtime.end.push(start + 5);
            t.runtime.thread.push(th);
            t.runtime.name.push(name);
        }
        let rows: Vec<(i64, Ns, NameId)> = t.calls().map(|c| (c.row, c.start, c.name)).collect();
        assert_eq!(rows, vec![(1, 10, 1), (3, 20, 3), (0, 30, 0), (2, 30, 2)]);
        assert!(t.calls().all(|c| c.process == p && c.correlation == 0));
        assert!(
            !t.columns().call_correlations,
            "no correlation column loaded"
        );
    }
}
