//! A view folded over the NVTX ranges and then the CUDA API calls as the page's host side reads
//! them, the rows kept as well ([`FileScan::host_side_folding`](super::FileScan::host_side_folding)):
//! the verdict's host facts are known once the ranges are read, while the calls are still to
//! come, so the page's reader worker can sweep the GPU work meanwhile; the launch calls are
//! swept as they are read, so the verdict need not read them again after the join.

use super::super::load::RUNTIME_TABLE;
use super::super::row_cache::Cached;
use super::super::runs::Keyed;
use super::{HostScan, Latched};
use crate::error::Result;
use crate::model::rows::{CallRow, ErrorLatch};
use crate::model::{Ns, NvtxRow, Strings, Threads, Trace};

/// What the host side tells a view of its NVTX ranges.
pub trait RangeFold {
    /// A range, in table order; `strings` and `threads` as the scan has them so far. `false`:
    /// the fold gives up.
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool;
    /// After the last range: `in_order` when every range came in start order (ties in table
    /// order, as a pass hands them out) and the fold took each; else the fold is void.
    fn ranges_read(&mut self, meta: &Trace, in_order: bool);
    /// A CUDA API call as a pass over the calls hands it out, in start order (ties in table
    /// order), after the ranges. `false`: the fold of the calls gives up.
    fn call(&mut self, row: &CallRow) -> bool;
    /// After the last call: `complete` when every call came in start order and the fold took
    /// each; else the fold of the calls is void.
    fn calls_read(&mut self, complete: bool);
}

/// A [`RangeFold`] as the scan's hook: the rows kept as a scan without hook keeps them.
pub(super) struct RangeHook<'f> {
    fold: &'f mut dyn RangeFold,
    ranges: InOrder,
    calls: InOrder,
}

/// Rows told to the fold while they come in start order (ties in table order) and it takes
/// them.
pub(super) struct InOrder {
    last: Ns,
    pub(super) alive: bool,
}

impl InOrder {
    pub(super) fn new() -> InOrder {
        InOrder {
            last: Ns::MIN,
            alive: true,
        }
    }

    /// Whether a row keyed `key` goes to the fold: every row before it came in order.
    pub(super) fn admits(&mut self, key: Ns) -> bool {
        self.alive &= key >= self.last;
        self.last = key;
        self.alive
    }
}

impl<'f> RangeHook<'f> {
    pub(super) fn new(fold: &'f mut dyn RangeFold) -> RangeHook<'f> {
        RangeHook {
            fold,
            ranges: InOrder::new(),
            calls: InOrder::new(),
        }
    }
}

impl super::ScanHook for RangeHook<'_> {
    fn keeps_rows(&self) -> bool {
        true
    }

    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) {
        if self.ranges.admits(row.key()) {
            self.ranges.alive = self.fold.range(row, strings, threads);
        }
    }

    fn ranges_read(&mut self, meta: &Trace) {
        self.fold.ranges_read(meta, self.ranges.alive);
    }

    fn call(&mut self, row: &CallRow) {
        if self.calls.admits(row.key()) {
            self.calls.alive = self.fold.call(row);
        }
    }

    fn calls_read(&mut self) {
        self.fold.calls_read(self.calls.alive);
    }
}

impl HostScan {
    /// Hands `fold` the CUDA API calls the host side kept, in start order (ties in table
    /// order), when it kept every one in one sorted run; `Ok(false)` otherwise, nothing handed.
    /// The page's analysis worker sweeps the launch calls among them while the reader worker
    /// still reads the kernel table, rather than in a pass after the join. `fold` returning
    /// `false` stops it.
    pub fn fold_kept_calls(&self, fold: &mut dyn FnMut(&CallRow) -> bool) -> Result<bool> {
        let table = &self.scan.calls;
        let whole = {
            let cache = table.cache.borrow();
            let rows = table.runs.rows();
            table.runs.count() <= 1 && cache.complete() && !cache.closed() && cache.rows() == rows
        };
        if !whole {
            return Ok(false);
        }
        let errors = ErrorLatch::default();
        let none = |_| std::iter::empty::<Result<CallRow>>();
        let kept = Cached::new(&table.cache, &self.scan.cache_budget, true, none).kept_only();
        let calls = Latched {
            rows: kept,
            errors: &errors,
            failed: false,
            left: table.runs.rows(),
            table: RUNTIME_TABLE,
            path: &self.scan.path,
        };
        for call in calls {
            if !fold(&call) {
                break;
            }
        }
        errors.take()?;
        Ok(true)
    }
}
