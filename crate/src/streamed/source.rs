//! The timeline's re-reads for a streamed trace: kernel rows by `rowid` from the open file.

use std::cell::RefCell;

use rusqlite::Connection;

use crate::detect::names::step_digest_label;
use crate::detect::steps::Step;
use crate::error::Result;
use crate::model::{KernelEvent, NameId, Processes, Strings};
use crate::timeline::{KernelSource, lane_steps_of};
use crate::trace::{KernelRows, NvtxRows};

/// Kernel rows of an open export, for views zoomed in far enough to draw single kernels.
pub struct SqliteKernels<'a> {
    pub conn: &'a Connection,
    pub rows: &'a KernelRows,
    /// The NVTX table's rows, for the forward-step lane.
    pub nvtx: &'a NvtxRows,
    pub strings: &'a Strings,
    pub label: &'a str,
    /// Process ids for the events read (the timeline does not use them).
    pub scratch: RefCell<Processes>,
}

impl KernelSource for SqliteKernels<'_> {
    /// A forward-step name kept as a digest is labelled in TensorRT-LLM's form
    /// ([`step_digest_label`]): a zoomed-out view labels a step per column, and reading each
    /// name back would cost a `StringIds` lookup each.
    fn label(&self, id: NameId) -> String {
        match self.strings.is_digest(id) {
            true => step_digest_label(self.strings.get(id)).unwrap_or_else(|| self.name(id)),
            false => self.strings.get(id).to_string(),
        }
    }

    /// A forward-step name kept as a digest is read again from `StringIds` (a B-tree lookup,
    /// for a hover or a view's few labels); should that fail, the digest stands in for it.
    fn name(&self, id: NameId) -> String {
        if !self.strings.is_digest(id) {
            return self.strings.get(id).to_string();
        }
        let read = self.strings.sqlite_id(id).and_then(|sqlite_id| {
            self.conn
                .prepare_cached("SELECT value FROM StringIds WHERE id = ?1")
                .and_then(|mut stmt| stmt.query_row([sqlite_id], |r| r.get::<_, String>(0)))
                .ok()
        });
        read.unwrap_or_else(|| self.strings.get(id).to_string())
    }

    fn steps_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(Step),
    ) -> Result<()> {
        let mut rows = Vec::new();
        let range = (first_row, last_row);
        self.nvtx
            .read(self.conn, self.label, range, self.strings, &mut |r| {
                rows.push(r)
            })?;
        lane_steps_of(rows.into_iter(), self.strings, visit);
        Ok(())
    }

    fn kernels_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelEvent),
    ) -> Result<()> {
        let mut processes = self.scratch.borrow_mut();
        self.rows.read(
            self.conn,
            self.label,
            (first_row, last_row),
            |id| self.strings.resolve(id),
            &mut processes,
            visit,
        )
    }
}
