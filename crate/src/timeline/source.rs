//! Where a view re-reads the rows it covers: the kernel table (and NVTX steps) by row number.

use crate::model::{HostRow, HostSpan, HostTable, KernelEvent, LinkKey, NameId, Trace};
use crate::steps::Step;

/// Where a view re-reads the kernels it covers: rows of the kernel table by row number (the
/// SQLite `rowid` in the page, the row index of a loaded table), plus the names they refer to.
/// Object-safe so the page can hand in its SQLite reader.
pub trait KernelSource {
    /// The name `KernelEvent::short_name` (or an NVTX step's name) `id` stands for.
    fn name(&self, id: NameId) -> String;

    /// Visits every kernel of rows `first_row..=last_row` (missing rows are skipped), in table
    /// order.
    fn kernels_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelEvent),
    ) -> crate::error::Result<()>;

    /// The name of the NVTX range in row `row`, read from the source: for a forward step
    /// whose name the trace does not hold ([`crate::model::UNHELD_NAME`]). `None`: not read.
    fn nvtx_name(&self, _row: i64) -> crate::error::Result<Option<String>> {
        Ok(None)
    }

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

    /// The key joining kernel row `row` to its launch call (`None`: not known).
    fn kernel_key(&self, _row: i64) -> crate::error::Result<Option<LinkKey>> {
        Ok(None)
    }

    /// The key joining CUDA API call row `row` to the kernel it launched.
    fn call_key(&self, _row: i64) -> crate::error::Result<Option<LinkKey>> {
        Ok(None)
    }

    /// The kernel row of `first_row..=last_row` with `key`.
    fn kernel_with(
        &self,
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

/// A loaded trace reads rows straight from its kernel table.
impl KernelSource for Trace {
    fn name(&self, id: NameId) -> String {
        self.strings.get(id).to_string()
    }

    fn kernels_in_rows(
        &self,
        first_row: i64,
        last_row: i64,
        visit: &mut dyn FnMut(KernelEvent),
    ) -> crate::error::Result<()> {
        for i in rows_within(first_row, last_row, self.kernels.len()) {
            visit(self.kernels.event(i));
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
