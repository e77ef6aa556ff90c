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
use crate::model::{CoverageNote, KernelEvent, NO_NAME, NameId, Processes, StringIndex};
use crate::trace::{KERNEL_TABLE, KernelRows, Schema, kernel_table_notes, read_meta};

/// Kernels held while waiting for the plan, at most: 4 Mi events (192 MiB), allocated a block at
/// a time as they come. Reading ahead of the plan is the pass's head start: the other worker
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
    waiting: Vec<Vec<KernelEvent>>,
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
        for mut ev in std::mem::take(&mut self.waiting).into_iter().flatten() {
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

/// Appends to the block buffer, starting a new block when the last is full.
fn buffer(blocks: &mut Vec<Vec<KernelEvent>>, ev: KernelEvent) {
    match blocks.last_mut() {
        Some(block) if block.len() < BLOCK_EVENTS => block.push(ev),
        _ => {
            let mut block = Vec::with_capacity(BLOCK_EVENTS);
            block.push(ev);
            blocks.push(block);
        }
    }
}
