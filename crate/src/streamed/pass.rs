//! The kernel pass: the kernel table read once in `rowid` order into the one-pass analyses.
//!
//! It starts before the plan exists (the other worker is still reading NVTX): chunks read until
//! then wait in a bounded buffer, and the caller stops reading when it is full
//! ([`KernelPass::buffer_full`]) until [`KernelPass::set_plan`]. The pass reads no strings: kernel
//! names met before the plan get provisional ids, renumbered by the plan's name index, as
//! processes are by its process table. Memory: the buffer bound plus the analyses' own state,
//! whatever the table's size.

use std::collections::HashMap;

use rusqlite::Connection;

use super::KernelPlan;
use super::consumers::{Consumers, KernelResults};
use crate::error::{Error, Result};
use crate::model::{
    CoverageNote, KernelEvent, NO_NAME, NameId, Ns, ProcessIdx, Processes, StringIndex,
};
use crate::trace::{KERNEL_TABLE, KernelRows, Schema, kernel_table_notes, read_meta};

/// Kernels held while waiting for the plan, at most: 4 Mi events (128 MiB as [`Waiting`]),
/// allocated a block at a time as they come. Reading ahead of the plan is the pass's head start: the other worker
/// needs seconds for strings and NVTX on a large export, and a buffered kernel later costs only
/// the analyses, not the read.
pub const BUFFER_EVENTS: usize = 1 << 22;
/// Events per buffer block (no reallocation, no copy as the buffer grows).
const BLOCK_EVENTS: usize = 1 << 16;

/// One pass over one file's kernel table.
pub struct KernelPass {
    rows: KernelRows,
    /// Before the plan: names as met (provisional ids); after it, the plan's name index.
    names: Names,
    /// Before the plan: processes as met; after it, the plan's table extended as met.
    processes: Processes,
    waiting: Vec<Block>,
    buffered: usize,
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
            waiting: Vec::new(),
            buffered: 0,
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
        self.consumers.is_none() && self.buffered >= BUFFER_EVENTS
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
        // Before the plan, read no more than the buffer holds.
        let rows = if self.consumers.is_none() {
            let room = BUFFER_EVENTS.saturating_sub(self.buffered);
            rows.min(u32::try_from(room).unwrap_or(u32::MAX))
        } else {
            rows
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
            buffered,
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
                None => {
                    buffer(waiting, ev);
                    *buffered += 1;
                }
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
        for mut ev in std::mem::take(&mut self.waiting)
            .into_iter()
            .flat_map(Block::into_events)
        {
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
        self.buffered = 0;
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

/// A block of kernels waiting for the plan: compact while they fit [`Waiting`], else whole.
enum Block {
    Compact {
        first_row: i64,
        events: Vec<Waiting>,
    },
    Whole(Vec<KernelEvent>),
}

/// A waiting kernel in 32 bytes rather than a [`KernelEvent`]'s 48: its row as an offset from
/// its block's first row, device and provisional process id in 16 bits, and of its graph node
/// only whether it has one (all the pass's analyses ask).
#[derive(Clone, Copy)]
struct Waiting {
    start: Ns,
    end: Ns,
    /// Row offset in the low 31 bits; the top bit: the kernel has a graph node.
    row: u32,
    stream: u32,
    short_name: NameId,
    device: u16,
    process: u16,
}

const HAS_GRAPH_NODE: u32 = 1 << 31;

impl Waiting {
    fn of(ev: &KernelEvent, first_row: i64) -> Option<Waiting> {
        let row = u32::try_from(ev.row.checked_sub(first_row)?).ok()?;
        if row & HAS_GRAPH_NODE != 0 {
            return None;
        }
        Some(Waiting {
            start: ev.start,
            end: ev.end,
            row: row
                | if ev.graph_node != 0 {
                    HAS_GRAPH_NODE
                } else {
                    0
                },
            stream: ev.stream,
            short_name: ev.short_name,
            device: u16::try_from(ev.device).ok()?,
            process: u16::try_from(ev.process).ok()?,
        })
    }

    fn event(self, first_row: i64) -> KernelEvent {
        KernelEvent {
            row: first_row + i64::from(self.row & !HAS_GRAPH_NODE),
            start: self.start,
            end: self.end,
            device: u32::from(self.device),
            stream: self.stream,
            process: ProcessIdx::from(self.process),
            short_name: self.short_name,
            graph_node: u64::from(self.row & HAS_GRAPH_NODE != 0),
        }
    }
}

impl Block {
    fn len(&self) -> usize {
        match self {
            Block::Compact { events, .. } => events.len(),
            Block::Whole(events) => events.len(),
        }
    }

    /// Adds `ev` if there is room and it fits the block's form; else gives it back.
    fn push(&mut self, ev: KernelEvent) -> Option<KernelEvent> {
        if self.len() >= BLOCK_EVENTS {
            return Some(ev);
        }
        match self {
            Block::Compact { first_row, events } => match Waiting::of(&ev, *first_row) {
                Some(w) => events.push(w),
                None => return Some(ev),
            },
            Block::Whole(events) => events.push(ev),
        }
        None
    }

    /// A block starting with `ev`: compact when it fits.
    fn starting_with(ev: KernelEvent) -> Block {
        match Waiting::of(&ev, ev.row) {
            Some(w) => {
                let mut events = Vec::with_capacity(BLOCK_EVENTS);
                events.push(w);
                Block::Compact {
                    first_row: ev.row,
                    events,
                }
            }
            None => {
                let mut events = Vec::with_capacity(BLOCK_EVENTS);
                events.push(ev);
                Block::Whole(events)
            }
        }
    }

    fn into_events(self) -> Box<dyn Iterator<Item = KernelEvent>> {
        match self {
            Block::Compact { first_row, events } => {
                Box::new(events.into_iter().map(move |w| w.event(first_row)))
            }
            Block::Whole(events) => Box::new(events.into_iter()),
        }
    }
}

/// Appends to the block buffer, starting a new block when the last is full or `ev` does not
/// fit its form.
fn buffer(blocks: &mut Vec<Block>, ev: KernelEvent) {
    let rejected = match blocks.last_mut() {
        Some(block) => block.push(ev),
        None => Some(ev),
    };
    if let Some(ev) = rejected {
        blocks.push(Block::starting_with(ev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(row: i64, device: u32, process: ProcessIdx, graph_node: u64) -> KernelEvent {
        KernelEvent {
            row,
            start: row * 10,
            end: row * 10 + 7,
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
        let read = [
            kernel(3, 0, 0, 0),
            kernel(4, 1, 2, 99),
            kernel(5, 70_000, 0, 0),
            kernel(6, 0, 70_000, 0),
            kernel(wide_row, 2, 1, 0),
            kernel(wide_row + 1, 2, 1, 12),
        ];
        let mut blocks = Vec::new();
        read.iter().for_each(|&ev| buffer(&mut blocks, ev));
        assert!(matches!(blocks[0], Block::Compact { .. }));
        assert!(
            matches!(blocks[1], Block::Whole(_)),
            "device 70 000 is kept whole"
        );
        // Of a graph node, the pass's analyses only ask whether there is one.
        let has_node = |ev: KernelEvent| KernelEvent {
            graph_node: u64::from(ev.graph_node != 0),
            ..ev
        };
        let back: Vec<KernelEvent> = blocks
            .into_iter()
            .flat_map(Block::into_events)
            .map(has_node)
            .collect();
        assert_eq!(back, read.map(has_node));

        let mut blocks = Vec::new();
        buffer(&mut blocks, kernel(1, 0, 0, 0));
        buffer(&mut blocks, kernel(wide_row, 0, 0, 5));
        assert_eq!(
            blocks.len(),
            2,
            "a row 2^40 after the block's first starts a block"
        );
        let back: Vec<KernelEvent> = blocks.into_iter().flat_map(Block::into_events).collect();
        assert_eq!(back, [kernel(1, 0, 0, 0), kernel(wide_row, 0, 0, 1)]);
    }

    #[test]
    fn a_block_holds_as_many_kernels_as_it_may() {
        let mut blocks = Vec::new();
        (0..BLOCK_EVENTS as i64 + 1).for_each(|row| buffer(&mut blocks, kernel(row, 0, 0, 0)));
        let lens: Vec<usize> = blocks.iter().map(Block::len).collect();
        assert_eq!(lens, [BLOCK_EVENTS, 1]);
        assert!(matches!(blocks[0], Block::Compact { .. }));
        assert_eq!(std::mem::size_of::<Waiting>(), 32);
    }
}
