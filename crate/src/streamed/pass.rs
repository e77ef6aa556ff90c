//! The kernel pass: the kernel table read once in `rowid` order into the one-pass analyses.
//!
//! It starts before the plan exists (the other worker is still reading NVTX): chunks read until
//! then wait in a bounded buffer, and the caller stops reading when it is full
//! ([`KernelPass::buffer_full`]) until [`KernelPass::set_plan`]. Memory: the buffer bound plus
//! the analyses' own state, whatever the table's size.

use rusqlite::Connection;

use super::KernelPlan;
use super::consumers::{Consumers, KernelResults};
use crate::error::{Error, Result};
use crate::model::{CoverageNote, KernelEvent, Processes, Strings};
use crate::trace::{KERNEL_TABLE, KernelRows, Schema, kernel_table_notes};

/// Kernels held while waiting for the plan: 256 Ki events (12 MiB, reserved at once). The
/// plan comes after the other worker's NVTX load, later than a larger buffer would fill anyway.
pub const BUFFER_EVENTS: usize = 1 << 18;

/// One pass over one file's kernel table.
pub struct KernelPass {
    rows: KernelRows,
    /// `StringIds` of this file, read by this worker (name ids agree with the other worker's).
    strings: Strings,
    /// Before the plan: processes as met; after it, the plan's table extended as met.
    processes: Processes,
    waiting: Vec<KernelEvent>,
    consumers: Option<Consumers>,
    label: String,
    /// What the file's kernel table lacks, for the trace's coverage notes.
    coverage: Vec<CoverageNote>,
    present: bool,
}

impl KernelPass {
    /// A pass over the kernel table of an open export whose strings are loaded.
    pub fn new(conn: &Connection, schema: &Schema, strings: Strings, label: &str) -> Result<Self> {
        Ok(KernelPass {
            rows: KernelRows::new(conn, schema, label)?,
            strings,
            processes: Processes::default(),
            waiting: Vec::with_capacity(BUFFER_EVENTS),
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
        self.consumers.is_none() && self.waiting.len() >= BUFFER_EVENTS
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
        // Before the plan, read no more than the buffer holds (it never reallocates).
        let rows = if self.consumers.is_none() {
            let room = BUFFER_EVENTS.saturating_sub(self.waiting.len());
            rows.min(u32::try_from(room).unwrap_or(u32::MAX))
        } else {
            rows
        };
        if rows == 0 {
            return Ok(true);
        }
        let mut failed = None;
        let (waiting, consumers) = (&mut self.waiting, &mut self.consumers);
        self.rows.next_chunk(
            conn,
            &self.label,
            rows,
            &self.strings,
            &mut self.processes,
            |ev| match consumers {
                Some(c) if failed.is_none() => failed = c.push(ev).err(),
                Some(_) => {}
                None => waiting.push(ev),
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
        let met = std::mem::replace(&mut self.processes, numbered);
        let mut consumers = Consumers::new(plan.sweeps, &self.label)?;
        for mut ev in std::mem::take(&mut self.waiting) {
            let gpid = met
                .global_pid
                .get(ev.process as usize)
                .copied()
                .unwrap_or(0);
            ev.process = self.processes.intern(gpid);
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
