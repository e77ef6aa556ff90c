//! One pass over a trace's kernels in start order, each joined to the call that launched it
//! once ([`RowIndex::launch_join`]) and handed to every fold riding on the pass: the
//! drill-down's analyses, Root cause's steady kernels, the explainer's tallies.

use super::rows::RowIndex;
use crate::model::rows::{CallRow, KernelRow};

/// A fold fed by a pass over one trace's kernels: each kernel in start order, with the call
/// that launched it when joined.
pub trait KernelFold {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>);
}

/// One pass over `ix`'s kernels in start order, each joined to its launch call once
/// ([`RowIndex::launch_join`]) and handed to every fold of `folds`.
pub fn kernel_pass(ix: &RowIndex<'_>, folds: &mut [&mut dyn KernelFold]) {
    kernel_pass_visiting(ix, folds, None);
}

/// [`kernel_pass`], every call handed to `visit` as well (when given): those the join reads,
/// then the rest, read to the end once the kernels are.
pub fn kernel_pass_visiting(
    ix: &RowIndex<'_>,
    folds: &mut [&mut dyn KernelFold],
    visit: Option<&mut dyn FnMut(&CallRow)>,
) {
    let to_the_end = visit.is_some();
    let mut join = ix.launch_join_visiting(visit.map(|v| -> &mut dyn FnMut(&CallRow) { v }));
    for k in ix.rows.kernels() {
        let call = join.find(k.start, k.process, k.correlation);
        for f in folds.iter_mut() {
            f.kernel(&k, call.as_ref());
        }
    }
    ix.peak.calls(join.peak());
    if to_the_end {
        join.read_to_end();
    }
}

/// A fold riding on every pass a driver makes over one trace's kernels joined to their launch
/// calls (the explainer's on the drill-down's), so the trace's kernels and calls are not read
/// again for it: handed every kernel and every call of each pass (the pass reads the calls to
/// the end), and told when the driver's first pass is over, so that the kernels it is handed
/// next are the next pass's.
pub trait Rider: KernelFold {
    fn first_pass_done(&mut self);
    /// Each call the pass reads, in start order, before the kernels it may launch.
    fn call(&mut self, c: &CallRow);
}

/// [`kernel_pass`] over `folds` with `rider` riding, handed every call as well (the pass then
/// reads the calls to the end).
pub fn kernel_pass_riding(
    ix: &RowIndex<'_>,
    folds: &mut [&mut dyn KernelFold],
    rider: Option<&mut (dyn Rider + '_)>,
) {
    let Some(rider) = rider else {
        return kernel_pass(ix, folds);
    };
    let rider = std::cell::RefCell::new(rider);
    let mut all = WithRider {
        folds,
        rider: &rider,
    };
    let mut visit = |c: &CallRow| rider.borrow_mut().call(c);
    kernel_pass_visiting(ix, &mut [&mut all], Some(&mut visit));
}

/// Folds and a rider whose calls are handed over by the same pass.
struct WithRider<'a, 'f, 'b, 'r, 'd> {
    folds: &'a mut [&'f mut dyn KernelFold],
    rider: &'b std::cell::RefCell<&'r mut (dyn Rider + 'd)>,
}

impl KernelFold for WithRider<'_, '_, '_, '_, '_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        for f in self.folds.iter_mut() {
            f.kernel(k, call);
        }
        self.rider.borrow_mut().kernel(k, call);
    }
}
