//! What the drill-down and the explainer read more than once about a trace, built from its rows
//! without holding them ([`rows::RowIndex`]): devices, name classes, call facts, forward steps and
//! phases. Also the runtime call behind each kernel or memory operation, joined as both tables
//! are read in start order ([`call_join`]), and the passes over kernels ([`kernel_pass`]).

pub mod call_facts;
pub mod call_join;
pub mod kernel_pass;
pub mod rows;
#[cfg(test)]
pub(crate) mod testing;
pub mod units;

use crate::model::intervals::IntervalSet;
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{Ns, NvtxRow};
use crate::steps;
use crate::steps::Step;

/// A fold subscribed to the passes over one trace's rows, in start order: each row of GPU work
/// (kernels, graph replays, copies, memsets; a fold about kernels alone skips the others), each
/// runtime call, each NVTX range, the forward steps read. It keeps state bounded by devices,
/// streams, processes, threads, steps and names, never a row per event. The index's passes
/// ([`rows::RowIndex::visiting`]) hand kernels without their launch; the kernel passes
/// ([`kernel_pass::kernel_pass`]) join each to the call that launched it.
pub trait Fold {
    fn kernel(&mut self, _k: &KernelRow, _launch: Option<&CallRow>) {}
    fn call(&mut self, _c: &CallRow) {}
    fn range(&mut self, _r: &NvtxRow) {}
    /// The forward steps read, by start (then end), before TP ranks are merged in their list.
    fn raw_steps(&mut self, _steps: &[Step]) {}
}

/// Folds nothing.
impl Fold for () {}

/// One phase (context or generation): how many forward steps it has and its window.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    pub steps: u64,
    pub window: IntervalSet,
}

/// Forward steps and phases as `detect` sees them in the standard profile.
#[derive(Debug, Clone, Default)]
pub struct StepInfo {
    pub steps: Vec<Step>,
    pub context: Option<Phase>,
    pub generation: Option<Phase>,
    /// The step marker they were read under (`None`: no range was a step).
    pub marker: Option<crate::names::steps::StepMarkerReport>,
}

impl StepInfo {
    /// The forward steps of `raw` (read under `sw`, by start) with TP ranks' copies merged, and
    /// each phase's steps and window.
    pub(crate) fn of(
        mut raw: Vec<Step>,
        sw: &crate::profile::Switches,
        marker: Option<crate::names::steps::StepMarkerReport>,
    ) -> StepInfo {
        steps::dedup_tp_steps_in_place(&mut raw);
        raw.shrink_to_fit();
        let (context, generation) = steps::phases(&raw, sw);
        let phase = |p: Option<steps::PhaseCounts>| {
            p.map(|p| Phase {
                steps: p.steps,
                window: p.window,
            })
        };
        StepInfo {
            steps: raw,
            context: phase(context),
            generation: phase(generation),
            marker,
        }
    }
}

/// Steady-state steps (reference §7: ctx = 0 and gen = the maximum gen count), else every
/// generation step, else every step.
pub fn steady_steps(steps: &[Step]) -> (Vec<Step>, &'static str) {
    let (rule, what) = SteadyRule::of(steps);
    (
        steps.iter().copied().filter(|s| rule.keeps(s)).collect(),
        what,
    )
}

/// [`steady_steps`] as their `(start, end)` only, without a copy of each step.
pub fn steady_spans(steps: &[Step]) -> (Vec<(Ns, Ns)>, &'static str) {
    let (rule, what) = SteadyRule::of(steps);
    let spans = steps.iter().filter(|s| rule.keeps(s));
    (spans.map(|s| (s.start, s.end)).collect(), what)
}

/// Which steps [`steady_steps`] keeps.
#[derive(Clone, Copy)]
enum SteadyRule {
    /// ctx = 0 and gen = this maximum gen count.
    Steady(u64),
    Generation,
    All,
}

impl SteadyRule {
    /// The first rule that keeps a step, and what it keeps.
    fn of(steps: &[Step]) -> (SteadyRule, &'static str) {
        let max_gen = steps.iter().map(|s| s.name.gen_reqs).max().unwrap_or(0);
        let rules = [
            (
                SteadyRule::Steady(max_gen),
                "steady-state steps (0 ctx reqs, max gen reqs)",
            ),
            (SteadyRule::Generation, "generation steps"),
        ];
        rules
            .into_iter()
            .find(|(rule, _)| steps.iter().any(|s| rule.keeps(s)))
            .unwrap_or((SteadyRule::All, "all forward steps"))
    }

    fn keeps(self, s: &Step) -> bool {
        match self {
            SteadyRule::Steady(max_gen) => {
                s.name.ctx == 0 && s.name.gen_reqs == max_gen && max_gen > 0
            }
            SteadyRule::Generation => s.name.ctx == 0,
            SteadyRule::All => true,
        }
    }
}

/// Looks up times in sorted disjoint spans, moving forward: O(1) amortized per lookup when the
/// times mostly increase (kernels in device order); a time behind the cursor falls back to a
/// binary search.
#[derive(Debug, Clone, Copy)]
pub struct SpanCursor<'a> {
    spans: &'a [(Ns, Ns)],
    next: usize,
}

impl<'a> SpanCursor<'a> {
    pub fn new(spans: &'a [(Ns, Ns)]) -> SpanCursor<'a> {
        SpanCursor { spans, next: 0 }
    }

    /// The span containing `t` (`start <= t < end`).
    pub fn find(&mut self, t: Ns) -> Option<usize> {
        if self.next > 0 && self.spans.get(self.next - 1).is_some_and(|s| t < s.1) {
            return span_containing(self.spans, t);
        }
        while self.spans.get(self.next).is_some_and(|s| s.1 <= t) {
            self.next += 1;
        }
        let s = self.spans.get(self.next)?;
        (s.0 <= t).then_some(self.next)
    }

    /// Whether `[start, end)` lies inside one span; `end` should mostly increase.
    pub fn covers(&mut self, start: Ns, end: Ns) -> bool {
        if self.next > 0 && self.spans.get(self.next - 1).is_some_and(|s| end <= s.1) {
            return span_containing(self.spans, start).is_some_and(|i| end <= self.spans[i].1);
        }
        while self.spans.get(self.next).is_some_and(|s| s.1 < end) {
            self.next += 1;
        }
        self.spans
            .get(self.next)
            .is_some_and(|s| s.0 <= start && end <= s.1)
    }
}

/// Index of the span of sorted disjoint `spans` containing `t`.
pub fn span_containing(spans: &[(Ns, Ns)], t: Ns) -> Option<usize> {
    let i = spans.partition_point(|s| s.0 <= t).checked_sub(1)?;
    (t < spans[i].1).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_agrees_with_binary_search() {
        let spans = [(10, 20), (30, 40), (40, 45), (60, 70)];
        let mut c = SpanCursor::new(&spans);
        for t in [0, 10, 19, 20, 35, 40, 44, 45, 12, 61, 70, 100, 65] {
            assert_eq!(c.find(t), span_containing(&spans, t), "t = {t}");
        }
        let mut c = SpanCursor::new(&spans);
        for (s, e) in [
            (11, 20),
            (12, 21),
            (30, 41),
            (41, 45),
            (15, 18),
            (60, 70),
            (59, 70),
        ] {
            let want = span_containing(&spans, s).is_some_and(|i| e <= spans[i].1);
            assert_eq!(c.covers(s, e), want, "[{s}, {e})");
        }
    }
}
