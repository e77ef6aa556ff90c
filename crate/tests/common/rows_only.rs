//! A loaded trace's rows behind metadata that holds none of the event tables.

use nsys_lens::model::rows::{CallRow, Columns, EventRows, KernelRow, MemOpRow, Rows, SyncRow};
use nsys_lens::model::{NvtxRow, Trace};

/// A trace's rows with its metadata stripped of the event tables, as the file source gives
/// them (`trace::FileRows`): an analysis that read a table through `meta()` would see it empty.
/// Counts the reads of the calls.
pub struct RowsOnly {
    rows: Trace,
    meta: Trace,
    call_reads: std::cell::Cell<u32>,
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
        RowsOnly {
            rows: trace,
            meta,
            call_reads: Default::default(),
        }
    }

    /// How many times the calls were read since the last time asked.
    #[allow(dead_code)] // not every test binary counts them
    pub fn call_reads(&self) -> u32 {
        self.call_reads.take()
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
    fn replays(&self) -> Rows<'_, KernelRow> {
        self.rows.replays()
    }
    fn calls(&self) -> Rows<'_, CallRow> {
        self.call_reads.set(self.call_reads.get() + 1);
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
