//! What the timeline's zoomed-in views and hovers read again from the open export, by `rowid`:
//! GPU-work rows, forward steps, host tracks and launch links (the summary holds none of them).

use rusqlite::Connection;

use crate::error::Result;
use crate::model::rows::KernelRow;
use crate::model::{HostRow, HostSpan, HostTable, LinkKey, NameId, Strings, WorkTable};
use crate::steps::Step;
use crate::timeline::{KernelSource, lane_steps_of};
use crate::trace::{HostRows, Links, NvtxRows, Schema, WorkRows};

/// The reads an open export's timeline makes again, prepared once from its schema: GPU
/// work, forward steps, host tracks and launch links.
pub struct FileReads {
    pub work: WorkRows,
    pub nvtx: NvtxRows,
    /// [`HostTable::Api`], [`HostTable::Nvtx`].
    pub host: [HostRows; 2],
    pub links: Links,
}

impl FileReads {
    pub fn new(schema: &Schema) -> FileReads {
        FileReads {
            work: WorkRows::new(schema),
            nvtx: NvtxRows::new(schema),
            host: [
                HostRows::new(schema, HostTable::Api),
                HostRows::new(schema, HostTable::Nvtx),
            ],
            links: Links::new(schema),
        }
    }

    /// The source reading them from `conn`, names resolved by `strings`.
    pub fn source<'a>(
        &'a self,
        conn: &'a Connection,
        strings: &'a Strings,
        label: &'a str,
    ) -> SqliteKernels<'a> {
        SqliteKernels {
            conn,
            work: &self.work,
            nvtx: &self.nvtx,
            host: &self.host,
            links: &self.links,
            strings,
            label,
        }
    }
}

/// GPU-work rows (kernels, graph replays, copies, memsets) of an open export, for views zoomed
/// in far enough to draw single operations.
pub struct SqliteKernels<'a> {
    pub conn: &'a Connection,
    pub work: &'a WorkRows,
    /// The NVTX table's rows, for the forward-step lane.
    pub nvtx: &'a NvtxRows,
    /// The CUDA API calls and NVTX ranges ([`HostTable::Api`], [`HostTable::Nvtx`]), for the
    /// host tracks.
    pub host: &'a [HostRows; 2],
    /// GPU work and its launch calls by correlation id, for the hover.
    pub links: &'a Links,
    pub strings: &'a Strings,
    pub label: &'a str,
}

impl KernelSource for SqliteKernels<'_> {
    fn name(&self, id: NameId) -> String {
        self.strings.get(id).to_string()
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
        // Steps are read in start order (TP copies merge as they meet); nsys promises no row
        // order, so a table grouped by thread is sorted here (stable: ties keep table order).
        if !rows.is_sorted_by_key(|r| r.start) {
            rows.sort_by_key(|r| r.start);
        }
        lane_steps_of(rows.into_iter(), self.strings, visit);
        Ok(())
    }

    fn work_key(&self, table: WorkTable, row: i64) -> Result<Option<LinkKey>> {
        self.links.work_key(self.conn, self.label, table, row)
    }

    fn call_key(&self, row: i64) -> Result<Option<LinkKey>> {
        self.links.call_key(self.conn, self.label, row)
    }

    fn work_with(
        &self,
        table: WorkTable,
        first_row: i64,
        last_row: i64,
        key: LinkKey,
    ) -> Result<Option<i64>> {
        let rows = (first_row, last_row);
        self.links
            .work_with(self.conn, self.label, table, rows, key)
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

    fn work_in_rows(
        &self,
        table: WorkTable,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        let rows = (first_row, last_row);
        self.work
            .read(self.conn, self.label, table, rows, self.strings, visit)
    }
}

fn table_index(table: HostTable) -> usize {
    match table {
        HostTable::Api => 0,
        HostTable::Nvtx => 1,
    }
}
