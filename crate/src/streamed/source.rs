//! The timeline's re-reads for a streamed trace: kernel rows by `rowid` from the open file.

use std::cell::RefCell;

use rusqlite::Connection;

use crate::error::Result;
use crate::model::{
    HostRow, HostSpan, HostTable, KernelEvent, LinkKey, NameId, Processes, Strings,
};
use crate::steps::Step;
use crate::timeline::{KernelSource, lane_steps_of};
use crate::trace::{HostRows, KernelRows, Links, NvtxRows};

/// Kernel rows of an open export, for views zoomed in far enough to draw single kernels.
pub struct SqliteKernels<'a> {
    pub conn: &'a Connection,
    pub rows: &'a KernelRows,
    /// The NVTX table's rows, for the forward-step lane.
    pub nvtx: &'a NvtxRows,
    /// The CUDA API calls and NVTX ranges ([`HostTable::Api`], [`HostTable::Nvtx`]), for the
    /// host tracks.
    pub host: &'a [HostRows; 2],
    /// Kernels and their launch calls by correlation id, for the hover.
    pub links: &'a Links,
    pub strings: &'a Strings,
    pub label: &'a str,
    /// Process ids for the events read (the timeline does not use them).
    pub scratch: RefCell<Processes>,
}

impl KernelSource for SqliteKernels<'_> {
    fn name(&self, id: NameId) -> String {
        self.strings.get(id).to_string()
    }

    /// A forward step's name is not held: read again by `rowid` (a hover).
    fn nvtx_name(&self, row: i64) -> Result<Option<String>> {
        self.nvtx.name_of(self.conn, self.label, row)
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

    fn kernel_key(&self, row: i64) -> Result<Option<LinkKey>> {
        self.links.kernel_key(self.conn, self.label, row)
    }

    fn call_key(&self, row: i64) -> Result<Option<LinkKey>> {
        self.links.call_key(self.conn, self.label, row)
    }

    fn kernel_with(&self, first_row: i64, last_row: i64, key: LinkKey) -> Result<Option<i64>> {
        let rows = (first_row, last_row);
        self.links.kernel_with(self.conn, self.label, rows, key)
    }

    fn call_with(&self, first_row: i64, last_row: i64, key: LinkKey) -> Result<Option<i64>> {
        let rows = (first_row, last_row);
        self.links.call_with(self.conn, self.label, rows, key)
    }

    fn host_scan(&self, table: HostTable, visit: &mut dyn FnMut(HostSpan)) -> Result<()> {
        self.host[table_index(table)].scan(self.conn, self.label, visit)
    }

    fn host_rows(
        &self,
        table: HostTable,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(HostRow),
    ) -> Result<()> {
        let rows = &self.host[table_index(table)];
        rows.read(
            self.conn,
            self.label,
            (first_row, last_row),
            self.strings,
            visit,
        )
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

fn table_index(table: HostTable) -> usize {
    match table {
        HostTable::Api => 0,
        HostTable::Nvtx => 1,
    }
}
