//! The kernel pass: the kernel table read once in `rowid` order into the one-pass analyses.
//!
//! It starts before the plan exists (the other worker is still reading NVTX): chunks read until
//! then wait in a bounded buffer, and the caller stops reading when it is full
//! ([`KernelPass::buffer_full`]) until [`KernelPass::set_plan`]. The pass reads no strings: kernel
//! names met before the plan get provisional ids, renumbered by the plan's name index, as
//! processes are by its process table. Memory: the buffer bound plus the analyses' own state,
//! whatever the table's size.

use std::collections::{HashMap, VecDeque};

use rusqlite::Connection;

use serde::{Deserialize, Serialize};

use super::KernelPlan;
use super::consumers::{Consumers, KernelResults};
use super::feed::FeedChunk;
use super::packed::{self, Packer, Unpacker};
use crate::error::{Error, Result};
use crate::model::{CoverageNote, KernelEvent, NO_NAME, NameId, Processes, StringIndex};
use crate::trace::{KERNEL_TABLE, KernelRows, Schema, kernel_table_notes, read_meta};

/// Memory for kernels waiting for the plan (`WaitingKernels`, about 12 Mi kernels of a real
/// export), allocated a block at a time as they come; a chunk read may pass it by at most
/// `READ_AHEAD_ROWS` kernels. Reading ahead of the plan is the pass's head start: the other
/// worker needs seconds for strings and NVTX on a large export, and a waiting kernel later costs
/// only the analyses, not the read.
pub const BUFFER_BYTES: usize = 128 << 20;
/// Rows per chunk read before the plan, at most.
const READ_AHEAD_ROWS: u32 = 1 << 16;

/// One pass over one file's kernel table.
pub struct KernelPass {
    rows: KernelRows,
    /// Before the plan: names as met (provisional ids); after it, the plan's name index.
    names: Names,
    /// Before the plan: processes as met; after it, the plan's table extended as met.
    processes: Processes,
    /// Kernels read before the plan, or before the windows they need were fed.
    waiting: WaitingKernels,
    /// The plan says the sweeps are fed their windows ([`KernelPass::feed`]).
    fed: bool,
    /// The last chunk of windows came.
    feed_done: bool,
    /// Rows given to another reader, consumed after this pass's own ([`KernelPass::split_tail`]).
    tail: Option<Tail>,
    consumers: Option<Consumers>,
    label: String,
    /// What the file's kernel table lacks, for the trace's coverage notes.
    coverage: Vec<CoverageNote>,
    present: bool,
    /// Whether the export holds copies, memsets or graph replays, which this pass (the kernel
    /// table only) does not read.
    other_gpu_work: bool,
}

/// How kernel names (`StringIds.id`s) become [`NameId`]s.
enum Names {
    /// Before the plan: provisional ids in order of first appearance.
    Met(MetNames),
    /// The analysis worker's numbering, from the plan.
    Planned(StringIndex),
}

/// Provisional name ids. Looked up once per kernel, so `StringIds.id`s (dense from 0 in nsys
/// exports) index a vector; others go to a map.
#[derive(Default)]
struct MetNames {
    /// `StringIds.id` per provisional id.
    ids: Vec<i64>,
    dense: Vec<NameId>,
    sparse: HashMap<i64, NameId>,
}

/// Ids below this are looked up in `MetNames::dense` (16 MiB at most).
const DENSE_IDS: usize = 1 << 22;

impl MetNames {
    fn resolve(&mut self, id: i64) -> NameId {
        let next = self.ids.len() as NameId;
        let slot = match usize::try_from(id) {
            Ok(i) if i < DENSE_IDS => {
                if self.dense.len() <= i {
                    self.dense.resize(i + 1, NO_NAME);
                }
                &mut self.dense[i]
            }
            _ => self.sparse.entry(id).or_insert(NO_NAME),
        };
        if *slot == NO_NAME {
            *slot = next;
            self.ids.push(id);
        }
        *slot
    }
}

impl Names {
    fn resolve(&mut self, id: i64) -> NameId {
        match self {
            Names::Met(met) => met.resolve(id),
            Names::Planned(index) => index.resolve(id),
        }
    }
}

impl KernelPass {
    /// A pass over the kernel table of an open export. `graphNodeId` is read only while the
    /// verdict may look at it: in a whole-graph capture until the plan, then only if the trace
    /// launches graphs ([`KernelPlan::graph_nodes`]); the summary's `any_graph_node` is
    /// meaningful only then.
    pub fn new(conn: &Connection, schema: &Schema, label: &str) -> Result<Self> {
        let graph_nodes = read_meta(conn, schema, label)?.traces_whole_graphs();
        Ok(KernelPass {
            rows: KernelRows::new(conn, schema, label, graph_nodes)?,
            names: Names::Met(MetNames::default()),
            processes: Processes::default(),
            waiting: WaitingKernels::default(),
            fed: false,
            feed_done: false,
            tail: None,
            consumers: None,
            label: label.to_string(),
            coverage: kernel_table_notes(schema),
            present: schema.has_table(KERNEL_TABLE),
            other_gpu_work: crate::trace::holds_other_gpu_work(conn),
        })
    }

    pub fn has_plan(&self) -> bool {
        self.consumers.is_some()
    }

    /// Whether reading must wait for the plan, or for more windows ([`KernelPass::feed`]).
    pub fn buffer_full(&self) -> bool {
        self.waiting.bytes >= BUFFER_BYTES
    }

    /// Window and host-prep spans the sweeps hold now (tests and benchmarks read it).
    pub fn held_spans(&self) -> usize {
        self.consumers.as_ref().map_or(0, Consumers::held_spans)
    }

    /// Whether the sweeps wait for the next chunk of windows: kernels wait for them, or the
    /// pass cannot end without the last.
    pub fn needs_feed(&self) -> bool {
        self.fed
            && !self.feed_done
            && self.consumers.is_some()
            && (!self.waiting.is_empty() || self.rows.is_done())
    }

    /// Feeds the sweeps the next chunk of windows ([`super::feed::FeedWriter`]'s bytes, in
    /// order), then the kernels it lets through. Ignored when the plan gave the windows whole.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(consumers) = &mut self.consumers else {
            return Err(Error::Internal {
                detail: "windows were fed to the kernel pass before its plan".into(),
            });
        };
        if !self.fed {
            return Ok(());
        }
        if self.feed_done {
            return Err(Error::Internal {
                detail: "windows were fed to the kernel pass after the last chunk".into(),
            });
        }
        self.feed_done = consumers.feed(&FeedChunk::from_bytes(bytes)?)?;
        self.drain()
    }

    /// Feeds the analyses the waiting kernels the windows fed so far let through.
    fn drain(&mut self) -> Result<()> {
        let Some(consumers) = &mut self.consumers else {
            return Ok(());
        };
        while let Some(ev) = self.waiting.peek()? {
            if !consumers.ready_for(ev.end) {
                break;
            }
            consumers.push(ev);
            self.waiting.pop();
        }
        self.skip_if_unordered();
        Ok(())
    }

    /// Rows read and the table's row span, for progress (rows given away count as they come).
    pub fn progress(&self) -> (u64, u64) {
        let (done, span) = self.rows.progress();
        let Some(t) = self.tail else {
            return (done, span);
        };
        let count = |a: i64, b: i64| (b - a).max(0) as u64;
        (
            done + count(t.first, t.next),
            span + count(t.first, t.last + 1),
        )
    }

    /// Gives `share` (0..1) of the rows not read yet to another reader ([`TailReader`], in the
    /// analysis worker once its host side is loaded); its chunks come through
    /// [`KernelPass::push_tail`] after this pass's own rows. Once, after the plan; `None` when
    /// fewer than `min_rows` would go ([`MIN_TAIL_ROWS`] is worth the page's messages).
    pub fn split_tail(&mut self, share: f64, min_rows: i64) -> Option<(i64, i64)> {
        if self.consumers.is_none() || self.tail.is_some() {
            return None;
        }
        let (first, last) = self.rows.split_tail(share, min_rows)?;
        self.tail = Some(Tail {
            first,
            next: first,
            last,
        });
        Some((first, last))
    }

    /// Whether rows given to another reader are still to come.
    pub fn tail_pending(&self) -> bool {
        self.tail.is_some_and(|t| t.next <= t.last)
    }

    /// Feeds the next chunk of the rows given away ([`TailReader::next_chunk`]'s bytes), once
    /// this pass has read its own.
    pub fn push_tail(&mut self, bytes: &[u8]) -> Result<()> {
        let broken = |detail: String| Error::Internal {
            detail: format!("the kernel rows read by the analysis worker: {detail}"),
        };
        let chunk: TailChunk =
            postcard::from_bytes(bytes).map_err(|e| broken(format!("did not decode: {e}")))?;
        let (Some(tail), Some(consumers)) = (&mut self.tail, &mut self.consumers) else {
            return Err(broken("none were given away".into()));
        };
        let in_order = self.rows.is_done()
            && chunk.first_row == tail.next
            && chunk.last_row <= tail.last
            && chunk.last_row >= chunk.first_row;
        if !in_order {
            return Err(broken(format!(
                "rows {}..={} came out of order",
                chunk.first_row, chunk.last_row
            )));
        }
        let processes: Vec<_> = chunk
            .processes
            .iter()
            .map(|&gpid| self.processes.intern(gpid))
            .collect();
        let mut kernels = 0u32;
        for ev in packed::unpack(&chunk.packed) {
            let mut ev = ev?;
            ev.process = *processes
                .get(ev.process as usize)
                .ok_or_else(|| broken("a kernel of an unknown process".into()))?;
            if self.waiting.is_empty() && consumers.ready_for(ev.end) {
                consumers.push(ev);
            } else {
                self.waiting.push(&ev);
            }
            kernels += 1;
        }
        if kernels != chunk.kernels {
            return Err(broken(format!("{kernels} of {} kernels", chunk.kernels)));
        }
        tail.next = chunk.last_row + 1;
        Ok(())
    }

    /// Reads up to `rows` more rows; `false` once the table is read.
    pub fn step(&mut self, conn: &Connection, rows: u32) -> Result<bool> {
        if self.rows.is_done() {
            return Ok(false);
        }
        // While kernels wait (for the plan or windows), read no more than the buffer holds
        // (and a chunk).
        let rows = if self.buffer_full() {
            0
        } else if self.consumers.is_none() || !self.waiting.is_empty() {
            rows.min(READ_AHEAD_ROWS)
        } else {
            rows
        };
        if rows == 0 {
            return Ok(true);
        }
        let KernelPass {
            rows: table,
            names,
            processes,
            waiting,
            consumers,
            label,
            ..
        } = self;
        table.next_chunk(
            conn,
            label,
            rows,
            |id| names.resolve(id),
            processes,
            |ev| match consumers {
                Some(c) if waiting.is_empty() && c.ready_for(ev.end) => c.push(ev),
                _ => waiting.push(&ev),
            },
        )?;
        self.skip_if_unordered();
        Ok(!self.rows.is_done())
    }

    /// Once a kernel came out of start order the analyses have stopped: the rows not read yet
    /// (and those waiting) are not read, and the views are measured over the file's rows.
    fn skip_if_unordered(&mut self) {
        if self.consumers.as_ref().is_some_and(Consumers::unordered) {
            self.rows.skip_rest();
            self.waiting = WaitingKernels::default();
        }
    }

    /// Starts the analyses with the plan and feeds them the kernels that waited for it.
    pub fn set_plan(&mut self, plan: KernelPlan) -> Result<()> {
        if self.consumers.is_some() {
            return Ok(());
        }
        let mut numbered = Processes::default();
        for &gpid in &plan.processes {
            numbered.intern(gpid);
        }
        let met_processes = std::mem::replace(&mut self.processes, numbered);
        let index = StringIndex::new(&plan.names);
        let met_names: Vec<NameId> = match &self.names {
            Names::Met(met) => met.ids.iter().map(|&id| index.resolve(id)).collect(),
            Names::Planned(_) => Vec::new(),
        };
        self.names = Names::Planned(index);
        if !plan.graph_nodes {
            self.rows.skip_graph_nodes();
        }
        self.consumers = Some(Consumers::new(plan.sweeps, plan.fed)?);
        self.fed = plan.fed;
        // The waiting kernels renumbered, a block at a time.
        let mut waiting = std::mem::take(&mut self.waiting);
        while let Some(mut ev) = waiting.peek()? {
            waiting.pop();
            let gpid = met_processes
                .global_pid
                .get(ev.process as usize)
                .copied()
                .unwrap_or(0);
            ev.process = self.processes.intern(gpid);
            if ev.short_name != NO_NAME {
                ev.short_name = met_names
                    .get(ev.short_name as usize)
                    .copied()
                    .unwrap_or(NO_NAME);
            }
            self.waiting.push(&ev);
        }
        self.drain()
    }

    /// The analyses' results, with the processes they number (`globalPid` per id).
    pub fn finish(self) -> Result<KernelResults> {
        if self.tail_pending() {
            return Err(Error::Internal {
                detail: "the kernel rows given to the analysis worker did not all come".into(),
            });
        }
        if self.fed && !self.feed_done {
            return Err(Error::Internal {
                detail: "the kernel pass ended before all its windows were fed".into(),
            });
        }
        let consumers = self.consumers.ok_or_else(|| Error::Internal {
            detail: "the kernel pass ended before its plan arrived".into(),
        })?;
        if !self.waiting.is_empty() {
            return Err(Error::Internal {
                detail: "kernels still waited for windows when the kernel pass ended".into(),
            });
        }
        let mut results = consumers.finish(self.processes.global_pid, self.coverage, self.present);
        results.other_gpu_work = self.other_gpu_work;
        Ok(results)
    }
}

/// Rows fewer than this are not worth giving to another reader in the page.
pub const MIN_TAIL_ROWS: i64 = 1 << 16;

/// Rows `first..=last` given to another reader; those before `next` have been fed.
#[derive(Debug, Clone, Copy)]
struct Tail {
    first: i64,
    next: i64,
    last: i64,
}

/// Kernel rows `first_row..=last_row` read by another worker for this pass, as bytes.
#[derive(Serialize, Deserialize)]
struct TailChunk {
    first_row: i64,
    last_row: i64,
    kernels: u32,
    /// `globalPid` of each process id the kernels use.
    processes: Vec<i64>,
    /// The kernels ([`packed`]).
    packed: Vec<u8>,
}

/// Reads the rows a [`KernelPass`] gave away ([`KernelPass::split_tail`]), a chunk at a time,
/// into bytes for it: the analysis worker, done with the host side before the loader is done
/// with the kernel table, takes part of the read (reading is most of the pass's time).
pub struct TailReader {
    rows: KernelRows,
    processes: Processes,
    label: String,
}

impl TailReader {
    /// A reader of rows `range` of the kernel table, reading `graphNodeId` when the plan says
    /// the pass does ([`KernelPlan::graph_nodes`]).
    pub fn new(
        conn: &Connection,
        schema: &Schema,
        label: &str,
        graph_nodes: bool,
        range: (i64, i64),
    ) -> Result<TailReader> {
        Ok(TailReader {
            rows: KernelRows::new(conn, schema, label, graph_nodes)?.only(range),
            processes: Processes::default(),
            label: label.to_string(),
        })
    }

    /// The next chunk of at most `rows` rows, as bytes for [`KernelPass::push_tail`]; `None`
    /// once every row is read. `names` maps a `StringIds.id` as the plan's name index does.
    pub fn next_chunk(
        &mut self,
        conn: &Connection,
        rows: u32,
        names: impl FnMut(i64) -> NameId,
    ) -> Result<Option<Vec<u8>>> {
        if self.rows.is_done() {
            return Ok(None);
        }
        let first_row = self.rows.next_row();
        let (mut packer, mut packed, mut kernels) = (Packer::default(), Vec::new(), 0u32);
        self.rows
            .next_chunk(conn, &self.label, rows, names, &mut self.processes, |ev| {
                packer.pack(&ev, &mut packed);
                kernels += 1;
            })?;
        let chunk = TailChunk {
            first_row,
            last_row: self.rows.next_row() - 1,
            kernels,
            processes: self.processes.global_pid.clone(),
            packed,
        };
        Ok(Some(super::encode(&chunk)))
    }
}

/// Kernels waiting for the plan or for windows, packed ([`packed`]: about 11 bytes for a kernel
/// of a real export, against 48 for a [`KernelEvent`]), so the pass reads several times further
/// ahead in the same memory; taken back in order. Blocks are allocated whole and never grow.
#[derive(Default)]
struct WaitingKernels {
    /// Blocks not yet read back, the last one being written.
    blocks: VecDeque<Vec<u8>>,
    /// The packer of the last block (a block decodes on its own).
    packer: Packer,
    /// The block being read back, and its next kernel.
    reading: Option<Unpacker<Vec<u8>>>,
    next: Option<KernelEvent>,
    bytes: usize,
}

/// Bytes per block; a kernel takes at most [`packed::MAX_PACKED`].
const BLOCK_BYTES: usize = 1 << 20;

impl WaitingKernels {
    fn push(&mut self, ev: &KernelEvent) {
        let fits = self
            .blocks
            .back()
            .is_some_and(|b| b.capacity() - b.len() >= packed::MAX_PACKED);
        if !fits {
            self.blocks.push_back(Vec::with_capacity(BLOCK_BYTES));
            self.bytes += BLOCK_BYTES;
            self.packer = Packer::default();
        }
        if let Some(block) = self.blocks.back_mut() {
            self.packer.pack(ev, block);
        }
    }

    fn is_empty(&self) -> bool {
        self.next.is_none() && self.reading.is_none() && self.blocks.is_empty()
    }

    /// The first kernel still waiting.
    fn peek(&mut self) -> Result<Option<KernelEvent>> {
        while self.next.is_none() {
            if let Some(ev) = self.reading.as_mut().and_then(Iterator::next) {
                self.next = Some(ev?);
                break;
            }
            if self.reading.take().is_some() {
                self.bytes -= BLOCK_BYTES;
            }
            let Some(block) = self.blocks.pop_front() else {
                return Ok(None);
            };
            self.reading = Some(Unpacker::new(block));
        }
        Ok(self.next)
    }

    /// Drops the first kernel ([`WaitingKernels::peek`]).
    fn pop(&mut self) {
        self.next = None;
    }

    /// The kernels as they were pushed.
    #[cfg(test)]
    fn into_events(mut self) -> impl Iterator<Item = KernelEvent> {
        std::iter::from_fn(move || {
            let ev = self.peek().ok().flatten();
            self.pop();
            ev
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProcessIdx;

    fn kernel(row: i64, device: u32, process: ProcessIdx, graph_node: u64) -> KernelEvent {
        KernelEvent {
            row,
            start: row.wrapping_mul(10),
            end: row.wrapping_mul(10).wrapping_add(7),
            device,
            stream: 7,
            process,
            short_name: row as NameId % 5,
            graph_node,
            ..KernelEvent::default()
        }
    }

    #[test]
    fn waiting_kernels_come_back_as_they_were_read() {
        let wide_row = 1 << 40;
        let mut read = vec![
            kernel(3, 0, 0, 0),
            kernel(4, 1, 2, 99),
            kernel(5, 70_000, 0, 0),
            kernel(6, 0, 70_000, 0),
            kernel(wide_row, 2, 1, 0),
            kernel(wide_row + 1, 2, 1, 12),
            // Damaged rows: out of order, ending before they start, at the ends of the range.
            KernelEvent {
                end: -5,
                short_name: NO_NAME,
                ..kernel(2, u32::MAX, u32::MAX, u64::MAX)
            },
            KernelEvent {
                start: i64::MAX,
                end: i64::MIN,
                ..kernel(i64::MIN, 0, 0, 1)
            },
            KernelEvent {
                start: i64::MIN,
                end: i64::MAX,
                short_name: NO_NAME - 1,
                ..kernel(i64::MAX, 3, 4, 0)
            },
        ];
        // Enough to fill several blocks.
        read.extend((0..BLOCK_BYTES as i64 / 4).map(|r| kernel(wide_row + 2 + r, 1, 1, 0)));
        let mut waiting = WaitingKernels::default();
        read.iter().for_each(|ev| waiting.push(ev));
        assert!(waiting.blocks.len() > 1, "{} blocks", waiting.blocks.len());
        assert_eq!(waiting.bytes, waiting.blocks.len() * BLOCK_BYTES);
        // Of a graph node, the pass's analyses only ask whether there is one.
        let has_node = |ev: &KernelEvent| KernelEvent {
            graph_node: u64::from(ev.graph_node != 0),
            ..*ev
        };
        let back: Vec<KernelEvent> = waiting.into_events().collect();
        let want: Vec<KernelEvent> = read.iter().map(has_node).collect();
        assert_eq!(back.len(), want.len());
        assert_eq!(back, want);
    }

    #[test]
    fn a_waiting_kernel_of_a_real_export_takes_a_dozen_bytes() {
        // Back-to-back rows a few µs apart, as the host-bound trace's.
        let mut waiting = WaitingKernels::default();
        let n = 100_000;
        for r in 0..n {
            let start = 15_000_000_000 + r * 3_500;
            waiting.push(&KernelEvent {
                row: r + 1,
                start,
                end: start + 2_000 + r % 700,
                device: (r % 4) as u32,
                stream: 7 + (r % 3) as u32,
                process: (r % 4) as u32,
                short_name: (r % 300) as NameId,
                graph_node: 0,
                ..KernelEvent::default()
            });
        }
        let used: usize = waiting.blocks.iter().map(Vec::len).sum();
        assert!(
            used <= 12 * n as usize,
            "{} bytes a kernel",
            used / n as usize
        );
    }
}
