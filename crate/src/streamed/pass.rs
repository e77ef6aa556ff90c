//! The kernel pass: the kernel table read once in `rowid` order into the one-pass analyses.
//!
//! It starts before the plan exists (the other worker is still reading NVTX): chunks read until
//! then wait in a bounded buffer, and the caller stops reading when it is full
//! ([`KernelPass::buffer_full`]) until [`KernelPass::set_plan`]. The pass reads no strings: kernel
//! names met before the plan get provisional ids, renumbered by the plan's name index, as
//! processes are by its process table. Memory: the buffer bound plus the analyses' own state,
//! whatever the table's size.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use rusqlite::Connection;

use super::KernelPlan;
use super::consumers::{Consumers, KernelResults};
use crate::error::{Error, Result};
use crate::model::{CoverageNote, KernelEvent, NO_NAME, NameId, Ns, Processes, StringIndex};
use crate::trace::{KERNEL_TABLE, KernelRows, Schema, kernel_table_notes, read_meta};

/// Memory for kernels waiting for the plan ([`WaitingKernels`], about 12 Mi kernels of a real
/// export), allocated a block at a time as they come; a chunk read may pass it by at most
/// [`READ_AHEAD_ROWS`] kernels. Reading ahead of the plan is the pass's head start: the other
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
    waiting: WaitingKernels,
    consumers: Option<Consumers>,
    label: String,
    /// What the file's kernel table lacks, for the trace's coverage notes.
    coverage: Vec<CoverageNote>,
    present: bool,
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
            consumers: None,
            label: label.to_string(),
            coverage: kernel_table_notes(schema),
            present: schema.has_table(KERNEL_TABLE),
        })
    }

    pub fn has_plan(&self) -> bool {
        self.consumers.is_some()
    }

    /// Whether reading must wait for the plan.
    pub fn buffer_full(&self) -> bool {
        self.consumers.is_none() && self.waiting.bytes >= BUFFER_BYTES
    }

    /// Rows read and the table's row span, for progress.
    pub fn progress(&self) -> (u64, u64) {
        self.rows.progress()
    }

    /// Reads up to `rows` more rows; `false` once the table is read.
    pub fn step(&mut self, conn: &Connection, rows: u32) -> Result<bool> {
        if self.rows.is_done() {
            return Ok(false);
        }
        // Before the plan, read no more than the buffer holds (and a chunk).
        let rows = match self.consumers {
            None if self.buffer_full() => 0,
            None => rows.min(READ_AHEAD_ROWS),
            Some(_) => rows,
        };
        if rows == 0 {
            return Ok(true);
        }
        let mut failed = None;
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
                Some(c) if failed.is_none() => failed = c.push(ev).err(),
                Some(_) => {}
                None => waiting.push(&ev),
            },
        )?;
        match failed {
            Some(e) => Err(e),
            None => Ok(!self.rows.is_done()),
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
        let mut consumers = Consumers::new(plan.sweeps, &self.label)?;
        for mut ev in std::mem::take(&mut self.waiting).into_events() {
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
            consumers.push(ev)?;
        }
        self.consumers = Some(consumers);
        Ok(())
    }

    /// The analyses' results, with the processes they number (`globalPid` per id).
    pub fn finish(self) -> Result<KernelResults> {
        let consumers = self.consumers.ok_or_else(|| Error::Internal {
            detail: "the kernel pass ended before its plan arrived".into(),
        })?;
        Ok(consumers.finish(self.processes.global_pid, self.coverage, self.present))
    }
}

/// Kernels waiting for the plan, packed: each as differences from the previous one of its
/// block (row, start) and its duration, as postcard varints (about 11 bytes for a kernel of a
/// real export, against 48 for a [`KernelEvent`]), so the pass reads several times further
/// ahead of the plan in the same memory. Of a graph node only whether there is one is kept (all
/// the pass's analyses ask). Blocks are allocated whole and never grow.
#[derive(Default)]
struct WaitingKernels {
    blocks: Vec<Vec<u8>>,
    /// The last packed kernel's row and start (of the last block; a block starts from 0).
    last: (i64, Ns),
    bytes: usize,
}

/// A packed kernel; fields in [`KernelEvent`] terms.
#[derive(Serialize, Deserialize)]
struct Packed {
    row_step: i64,
    start_step: i64,
    duration: i64,
    /// The device times two, plus one if the kernel has a graph node.
    device_and_graph: u64,
    stream: u32,
    process: u32,
    /// The name id plus one, 0 for none ([`NO_NAME`] would take five bytes).
    name: u32,
}

/// Bytes per block; a kernel takes at most [`MAX_PACKED`].
const BLOCK_BYTES: usize = 1 << 20;
/// Postcard's varints: 10 bytes per 64-bit field, 5 per 32-bit one.
const MAX_PACKED: usize = 4 * 10 + 3 * 5;

impl WaitingKernels {
    fn push(&mut self, ev: &KernelEvent) {
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.capacity() - b.len() >= MAX_PACKED);
        if !fits {
            self.blocks.push(Vec::with_capacity(BLOCK_BYTES));
            self.bytes += BLOCK_BYTES;
            self.last = (0, 0);
        }
        let (row, start) = self.last;
        let packed = Packed {
            row_step: ev.row.wrapping_sub(row),
            start_step: ev.start.wrapping_sub(start),
            duration: ev.end.wrapping_sub(ev.start),
            device_and_graph: u64::from(ev.device) << 1 | u64::from(ev.graph_node != 0),
            stream: ev.stream,
            process: ev.process,
            name: ev.short_name.wrapping_add(1),
        };
        let mut scratch = [0u8; MAX_PACKED];
        if let (Ok(bytes), Some(block)) = (
            postcard::to_slice(&packed, &mut scratch),
            self.blocks.last_mut(),
        ) {
            block.extend_from_slice(bytes);
        }
        self.last = (ev.row, ev.start);
    }

    /// The kernels as they were pushed.
    fn into_events(self) -> impl Iterator<Item = KernelEvent> {
        self.blocks.into_iter().flat_map(|block| {
            let mut last: (i64, Ns) = (0, 0);
            let mut at = 0;
            std::iter::from_fn(move || {
                let (packed, rest) = postcard::take_from_bytes::<Packed>(&block[at..]).ok()?;
                at = block.len() - rest.len();
                let row = last.0.wrapping_add(packed.row_step);
                let start = last.1.wrapping_add(packed.start_step);
                last = (row, start);
                Some(KernelEvent {
                    row,
                    start,
                    end: start.wrapping_add(packed.duration),
                    device: (packed.device_and_graph >> 1) as u32,
                    stream: packed.stream,
                    process: packed.process,
                    short_name: packed.name.wrapping_sub(1),
                    graph_node: packed.device_and_graph & 1,
                })
            })
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
