//! A loaded trace's rows behind metadata that holds none of the event tables.

use nsys_lens::model::rows::{CallRow, Columns, EventRows, KernelRow, MemOpRow, Rows, SyncRow};
use nsys_lens::model::{NvtxRow, Trace};

/// A trace's rows with its metadata stripped of the event tables, as the file source gives
/// them (`trace::FileRows`): an analysis that read a table through `meta()` would see it empty.
pub struct RowsOnly {
    rows: Trace,
    meta: Trace,
}

impl RowsOnly {
    pub fn of(trace: Trace) -> RowsOnly {
        let mut meta = trace.clone();
        meta.kernels = Default::default();
        meta.runtime = Default::default();
        meta.nvtx = Default::default();
        meta.memcpy = Default::default();
        meta.memset = Default::default();
        meta.syncs = Default::default();
        RowsOnly { rows: trace, meta }
    }
}

impl EventRows for RowsOnly {
    fn meta(&self) -> &Trace {
        &self.meta
    }
    fn columns(&self) -> Columns {
        self.rows.columns()
    }
    fn kernels(&self) -> Rows<'_, KernelRow> {
        self.rows.kernels()
    }
    fn calls(&self) -> Rows<'_, CallRow> {
        self.rows.calls()
    }
    fn ranges(&self) -> Rows<'_, NvtxRow> {
        self.rows.ranges()
    }
    fn memcpy(&self) -> Rows<'_, MemOpRow> {
        self.rows.memcpy()
    }
    fn memset(&self) -> Rows<'_, MemOpRow> {
        self.rows.memset()
    }
    fn syncs(&self) -> Rows<'_, SyncRow> {
        self.rows.syncs()
    }
    fn check(&self) -> nsys_lens::error::Result<()> {
        Ok(())
    }
}
