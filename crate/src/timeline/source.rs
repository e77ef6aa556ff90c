//! Where a view re-reads the rows it covers: the GPU-work tables (and NVTX steps) by row number.

use crate::model::rows::KernelRow;
use crate::model::{HostRow, HostSpan, HostTable, LinkKey, NameId, Trace, WorkTable};
use crate::steps::Step;

/// Where a view re-reads the GPU work it covers: rows of the kernel, graph-replay, copy and
/// memset tables by row number (the SQLite `rowid` in the page, the row index of a loaded
/// table), plus the names they refer to. Object-safe so the page can hand in its SQLite reader.
pub trait KernelSource {
    /// The name `KernelRow::short_name` (or an NVTX step's name) `id` stands for.
    fn name(&self, id: NameId) -> String;

    /// Visits every row of `table` in rows `first_row..=last_row` (missing rows, or a missing
    /// table, are skipped), in table order, named as `EventRows::gpu_work` names them.
    fn work_in_rows(
        &self,
        table: WorkTable,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelRow),
    ) -> crate::error::Result<()>;

    /// Visits the forward steps (the standard profile's, TP copies merged) whose ranges are in
    /// NVTX rows `first_row..=last_row`, in start order.
    fn steps_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(Step),
    ) -> crate::error::Result<()>;

    /// Visits the span of every row of `table` (the host tracks' index scan). None by default:
    /// a source without host rows shows no host track.
    fn host_scan(
        &self,
        _table: HostTable,
        _visit: &mut dyn FnMut(HostSpan),
    ) -> crate::error::Result<()> {
        Ok(())
    }

    /// The key joining row `row` of `table` (a kernel, replay, copy or memset) to its launch
    /// call (`None`: not known).
    fn work_key(&self, _table: WorkTable, _row: i64) -> crate::error::Result<Option<LinkKey>> {
        Ok(None)
    }

    /// The key joining CUDA API call row `row` to the GPU work it launched.
    fn call_key(&self, _row: i64) -> crate::error::Result<Option<LinkKey>> {
        Ok(None)
    }

    /// The row of `table` in `first_row..=last_row` with `key`.
    fn work_with(
        &self,
        _table: WorkTable,
        _first_row: i64,
        _last_row: i64,
        _key: LinkKey,
    ) -> crate::error::Result<Option<i64>> {
        Ok(None)
    }

    /// The CUDA API call row of `first_row..=last_row` with `key`.
    fn call_with(
        &self,
        _first_row: i64,
        _last_row: i64,
        _key: LinkKey,
    ) -> crate::error::Result<Option<i64>> {
        Ok(None)
    }

    /// Visits rows `first_row..=last_row` of `table`, named, in `rowid` order.
    fn host_rows(
        &self,
        _table: HostTable,
        _first_row: i64,
        _last_row: i64,
        _visit: &mut dyn FnMut(HostRow),
    ) -> crate::error::Result<()> {
        Ok(())
    }
}

/// The standard profile's forward steps of `rows` ([`KernelSource::steps_in_rows`]).
pub fn lane_steps_of(
    rows: impl Iterator<Item = crate::model::NvtxRow>,
    strings: &crate::model::Strings,
    visit: &mut dyn FnMut(Step),
) {
    use crate::profile::Profile;
    use crate::steps::names::StepNames;
    let sw = Profile::Standard.switches();
    let names = StepNames::parser(strings, &sw, None);
    crate::steps::steps_of_rows(rows, names, &sw, visit);
}

/// [`lane_steps_of`] over rows in start order, holding no step: `false`, some steps visited
/// already, when they were not in start order (`steps::steps_of_rows_in_order`).
pub fn lane_steps_in_order(
    rows: impl Iterator<Item = crate::model::NvtxRow>,
    strings: &crate::model::Strings,
    visit: &mut dyn FnMut(Step),
) -> bool {
    use crate::profile::Profile;
    use crate::steps::names::StepNames;
    let sw = Profile::Standard.switches();
    let names = StepNames::parser(strings, &sw, None);
    crate::steps::steps_of_rows_in_order(rows, names, &sw, visit)
}

/// A loaded trace reads rows straight from its GPU-work tables.
impl KernelSource for Trace {
    fn name(&self, id: NameId) -> String {
        self.strings.get(id).to_string()
    }

    fn work_in_rows(
        &self,
        table: WorkTable,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelRow),
    ) -> crate::error::Result<()> {
        // Rows past the table's end end the visit.
        for i in first_row.max(0)..=last_row {
            match self.work_row(table, i as usize) {
                Some(row) => visit(row),
                None => break,
            }
        }
        Ok(())
    }

    fn steps_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(Step),
    ) -> crate::error::Result<()> {
        let rows = rows_within(first_row, last_row, self.nvtx.len()).map(|i| self.nvtx.row(i));
        lane_steps_of(rows, &self.strings, visit);
        Ok(())
    }
}

/// Indices `first..=last` of a table of `len` rows.
fn rows_within(first: i64, last: i64, len: usize) -> impl Iterator<Item = usize> {
    let last = last.min(len as i64 - 1);
    (first.max(0)..=last).map(|i| i as usize)
}
