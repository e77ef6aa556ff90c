//! A view folded over the NVTX ranges as the page's host side reads them, the rows kept as
//! well ([`FileScan::host_side_folding`](super::FileScan::host_side_folding)): the verdict's
//! host facts are known once the ranges are read, while the calls are still to come, so the
//! page's reader worker can sweep the GPU work meanwhile.

use super::super::runs::Keyed;
use crate::model::{Ns, NvtxRow, Strings, Threads, Trace};

/// What the host side tells a view of its NVTX ranges.
pub trait RangeFold {
    /// A range, in table order; `strings` and `threads` as the scan has them so far. `false`:
    /// the fold gives up.
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool;
    /// After the last range: `in_order` when every range came in start order (ties in table
    /// order, as a pass hands them out) and the fold took each; else the fold is void.
    fn ranges_read(&mut self, meta: &Trace, in_order: bool);
}

/// A [`RangeFold`] as the scan's hook: the rows kept as a scan without hook keeps them.
pub(super) struct RangeHook<'f> {
    fold: &'f mut dyn RangeFold,
    last: Ns,
    alive: bool,
}

impl<'f> RangeHook<'f> {
    pub(super) fn new(fold: &'f mut dyn RangeFold) -> RangeHook<'f> {
        RangeHook {
            fold,
            last: Ns::MIN,
            alive: true,
        }
    }
}

impl super::ScanHook for RangeHook<'_> {
    fn keeps_rows(&self) -> bool {
        true
    }

    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) {
        self.alive &= row.key() >= self.last;
        self.last = row.key();
        if self.alive {
            self.alive = self.fold.range(row, strings, threads);
        }
    }

    fn ranges_read(&mut self, meta: &Trace) {
        self.fold.ranges_read(meta, self.alive);
    }

    fn call(&mut self, _: &crate::model::rows::CallRow) {}

    fn calls_read(&mut self) {}
}
