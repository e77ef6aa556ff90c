//! One pass over a trace's kernels in start order, each joined to the call that launched it
//! once ([`RowIndex::launch_join`]) and handed to every fold riding on the pass: the
//! drill-down's analyses, Root cause's steady kernels, the explainer's tallies.

use std::cell::RefCell;

use super::Fold;
use super::rows::RowIndex;
use crate::model::NameId;
use crate::model::rows::{CallRow, KernelRow};
use crate::names::api::ApiKind;

/// One pass over `ix`'s kernels in start order, each joined to its launch call once
/// ([`RowIndex::launch_join`]) and handed to every fold of `folds`.
pub fn kernel_pass(ix: &RowIndex<'_>, folds: &mut [&mut dyn Fold]) {
    kernel_pass_visiting(ix, folds, None);
}

/// [`kernel_pass`], every call handed to `visit` as well (when given): those the join reads,
/// then the rest, read to the end once the kernels are.
pub fn kernel_pass_visiting(
    ix: &RowIndex<'_>,
    folds: &mut [&mut dyn Fold],
    visit: Option<&mut dyn FnMut(&CallRow)>,
) {
    let to_the_end = visit.is_some();
    let mut join = ix.launch_join_visiting(visit.map(|v| -> &mut dyn FnMut(&CallRow) { v }));
    for k in ix.rows.gpu_work() {
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

/// What a rider noted of a call when the pass read it (the explainer: the call's API kind and
/// the innermost NVTX range open on its thread), handed back with the kernels it launched.
pub type CallNote = (ApiKind, NameId);

/// A fold riding on the passes a driver makes over one trace's kernels joined to their launch
/// calls (the explainer's on the drill-down's), so the trace's kernels and calls are not read
/// again for it: handed every call of the first pass (the pass reads the calls to the end) and
/// every kernel with its launch call and what the rider noted of that call, told when the pass
/// is over, then handed the kernels of a later pass ([`Fold::kernel`]) when it asks for
/// them.
pub trait Rider: Fold {
    /// Each call the first pass reads, in start order, before the kernels it may launch: what
    /// the rider notes of it.
    fn note_call(&mut self, c: &CallRow) -> CallNote;
    /// Each kernel of the first pass, with its launch call and the call's note when joined.
    fn launched(&mut self, k: &KernelRow, launch: Option<(&CallRow, CallNote)>);
    fn first_pass_done(&mut self);
    /// Whether, after the first pass, the rider asks to be handed the kernels of another pass
    /// (with their launch calls).
    fn wants_kernels_again(&self) -> bool;
}

/// [`kernel_pass`] over `folds` with `rider` riding (the pass then reads the calls to the
/// end): one join finds each kernel's launch call for the folds and, with its note, for the
/// rider.
pub fn kernel_pass_riding(
    ix: &RowIndex<'_>,
    folds: &mut [&mut dyn Fold],
    rider: Option<&mut (dyn Rider + '_)>,
) {
    let Some(rider) = rider else {
        return kernel_pass(ix, folds);
    };
    let rider = RefCell::new(rider);
    let mut join = ix.launch_join_noting(|c| rider.borrow_mut().note_call(c));
    for k in ix.rows.gpu_work() {
        let launch = join.find_with(k.start, k.process, k.correlation);
        let call = launch.as_ref().map(|(c, _)| c);
        for f in folds.iter_mut() {
            f.kernel(&k, call);
        }
        let launch = launch.as_ref().map(|(c, note)| (c, *note));
        rider.borrow_mut().launched(&k, launch);
    }
    ix.peak.calls(join.peak());
    join.read_to_end();
}
