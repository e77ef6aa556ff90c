//! Technique 2: forward-step NVTX ranges (reference §7.2), TP-rank de-duplication and the
//! steady state (ctx = 0, gen = max).

use super::Iteration;
use crate::model::rows::EventRows;
use crate::model::{NameId, Ns, NvtxRow, Strings};
use crate::names::steps::{StepMarkerReport, StepName, StepSource, StepStyle, parse_step};
use crate::profile::{Profile, Switches};
use crate::sqlike::Like;
use crate::steps::names::StepNames;
use crate::steps::{Step, dedup_tp_steps_in_place, merge_group, step_of_row, tp_groups};

/// Step number of a range the reference selects by `LIKE` but cannot parse (`step_num = -1`).
pub const UNPARSED: u64 = u64::MAX;

/// A forward step merged over TP ranks, with its longest rank's duration (the reference's
/// `dur_us` of a merged step is the longest member's, not the merged span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergedStep {
    pub step: Step,
    pub longest_ns: Ns,
}

/// What picks the forward-step ranges the `trtllm-skill` profile sees out of the NVTX rows:
/// rows whose `textId` name is `LIKE '%[Executor] _forward_step%'`, any event type, unparsable
/// names kept as step −1 with 0/0 requests. (The standard profile's steps are drill's index's:
/// [`crate::index::rows::RowIndex`].)
pub struct ReferenceSteps {
    sw: Switches,
    names: StepNames,
}

impl ReferenceSteps {
    pub fn new(strings: &Strings) -> ReferenceSteps {
        let mut sw = Profile::TrtllmSkill.switches();
        sw.dedup_steps = false;
        ReferenceSteps {
            sw,
            names: StepNames(reference_step_names(strings)),
        }
    }

    /// The raw (one rank's) step `row` is, if it is one.
    pub fn step(&self, row: &NvtxRow) -> Option<Step> {
        step_of_row(row, &self.sw, &|id: NameId| self.names.get(id))
    }

    /// Every step of `rows`, not merged, by start (then end), and the marker they were read
    /// under. `count`: how many there are (a pass that counted [`Self::step`]s); the list is
    /// sized to it, not grown by doubling: a long trace has a step per range, and a grown
    /// list's last copy holds them one and a half times over.
    pub fn read(
        &self,
        rows: &dyn EventRows,
        count: usize,
    ) -> (Vec<Step>, Option<StepMarkerReport>) {
        let mut steps = Vec::with_capacity(count);
        steps.extend(rows.ranges().filter_map(|r| self.step(&r)));
        if !steps.is_sorted_by_key(|s: &Step| (s.start, s.end)) {
            steps.sort_by_key(|s| (s.start, s.end));
        }
        let marker =
            (!steps.is_empty()).then(|| StepSource::Builtin(StepStyle::TensorrtLlm).report(false));
        (steps, marker)
    }
}

/// Per string: `LIKE '%[Executor] _forward_step%'` matches, parsed or as an unparsed step.
fn reference_step_names(strings: &Strings) -> Vec<Option<StepName>> {
    let marker = Like::new("%[Executor] _forward_step%");
    (0..strings.len() as NameId)
        .map(|id| {
            let s = strings.get(id);
            marker.matches(s).then(|| {
                parse_step(s).unwrap_or(StepName {
                    step: UNPARSED,
                    ctx: 0,
                    gen_reqs: 0,
                })
            })
        })
        .collect()
}

/// The steps `raw` (by start) merge into over TP ranks (`steps::dedup_tp_steps_in_place`:
/// same step number, starts < 100 µs after the group's first), each with its longest member's
/// duration; read as they are met, with no list of them held.
pub fn merged_steps(raw: &[Step]) -> impl Iterator<Item = MergedStep> + '_ {
    tp_groups(raw).filter_map(|group| {
        let step = merge_group(group)?;
        let longest_ns = longest_rank(group)?;
        Some(MergedStep { step, longest_ns })
    })
}

/// A TP group's longest rank's duration (`None`: an empty group).
fn longest_rank(group: &[Step]) -> Option<Ns> {
    group.iter().map(|s| s.end - s.start).max()
}

/// The NVTX iteration of a merged step: wall time = its longest rank's duration.
pub fn iteration(step: &Step, longest_ns: Ns) -> Iteration {
    Iteration {
        start: step.start,
        end: step.end,
        kernel_count: 1,
        wall_ns: longest_ns,
    }
}

/// Each TP group's longest rank's duration, one per step that
/// [`crate::steps::dedup_tp_steps_in_place`] merges `raw` (by start) into.
pub fn longest_ranks(raw: &[Step]) -> Vec<Ns> {
    let mut out = Vec::with_capacity(tp_groups(raw).count());
    out.extend(tp_groups(raw).filter_map(longest_rank));
    out
}

/// The steady state: context-free steps at the largest generation batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    /// The largest `gen reqs` among the candidate steps.
    pub max_gen: u64,
    /// Candidate ranges at steady state before TP de-duplication.
    pub raw_count: usize,
    /// The steady steps merged over TP ranks, by start.
    pub steps: Vec<Step>,
    /// Each step's longest rank's duration (the reference's `dur_us` of a merged step), one
    /// per step.
    pub longest_ns: Vec<Ns>,
}

/// The reference's order (§4 row 12): `max_gen` over the *raw* ranges of the whole trace, filter
/// (`ctx == 0 && gen == max_gen`; unparsed ranges count as 0/0), then de-duplicate. Filtered
/// and merged in `raw`'s own list: a long trace has a step per range, and a second list of
/// them would double what the profile holds.
pub fn steady_reference(mut raw: Vec<Step>) -> Steady {
    let max_gen = raw.iter().map(|s| s.name.gen_reqs).max().unwrap_or(0);
    raw.retain(|s| s.name.ctx == 0 && s.name.gen_reqs == max_gen);
    let raw_count = raw.len();
    let longest_ns = longest_ranks(&raw);
    dedup_tp_steps_in_place(&mut raw);
    Steady {
        max_gen,
        raw_count,
        steps: raw,
        longest_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(start: Ns, end: Ns, n: u64, ctx: u64, gen_reqs: u64) -> Step {
        Step {
            row: 0,
            start,
            end,
            name: StepName {
                step: n,
                ctx,
                gen_reqs,
            },
            ranks: 1,
            name_id: 0,
        }
    }

    #[test]
    fn merging_keeps_the_longest_rank_and_the_merged_span() {
        let raw = [
            step(0, 500, 1, 0, 8),
            step(40_000, 900, 1, 0, 8), // same step, 40 µs later, ends later
            step(1_000_000, 1_200_000, 2, 0, 8),
            step(1_099_999, 1_150_000, 2, 0, 8), // 99.999 µs: merged
            step(1_100_000, 1_300_000, 2, 0, 8), // 100 µs: a new step
        ];
        let m: Vec<MergedStep> = merged_steps(&raw).collect();
        assert_eq!(m.len(), 3);
        assert_eq!(
            (m[0].step.start, m[0].step.end, m[0].step.ranks),
            (0, 900, 2)
        );
        assert_eq!(
            m[0].longest_ns, 500,
            "max member duration, not the merged span"
        );
        assert_eq!(m[1].step.ranks, 2);
        assert_eq!(m[1].longest_ns, 200_000);
        assert_eq!(m[2].step.start, 1_100_000);
        let its = iteration(&m[0].step, m[0].longest_ns);
        assert_eq!(its.wall_ns, 500);
        assert_eq!(its.kernel_count, 1);
        let longest: Vec<Ns> = m.iter().map(|m| m.longest_ns).collect();
        assert_eq!(
            longest_ranks(&raw),
            longest,
            "one per merged step, as merged_steps's"
        );
    }

    #[test]
    fn merging_needs_the_same_step_number() {
        let raw = [step(0, 10, 1, 0, 8), step(5, 10, 2, 0, 8)];
        assert_eq!(merged_steps(&raw).count(), 2);
    }

    #[test]
    fn steady_state_is_ctx_zero_at_the_largest_batch_merged_after_the_filter() {
        let raw = vec![
            step(0, 10, 1, 4, 60),  // context
            step(20, 30, 2, 0, 64), // steady
            step(22, 35, 2, 0, 64), // its TP copy
            step(24, 31, 2, 0, 32), // a copy at another batch: filtered out before merging
            step(40, 50, 3, 0, 64), // steady
            step(60, 70, 4, 0, 32), // drain
        ];
        let s = steady_reference(raw.clone());
        assert_eq!(s.max_gen, 64);
        assert_eq!(s.raw_count, 3);
        let spans: Vec<(Ns, Ns, u32)> = s.steps.iter().map(|m| (m.start, m.end, m.ranks)).collect();
        assert_eq!(spans, [(20, 35, 2), (40, 50, 1)]);
        assert_eq!(s.longest_ns, [13, 10], "the longest member of each");
        let steady: Vec<Step> = raw
            .into_iter()
            .filter(|s| s.name.ctx == 0 && s.name.gen_reqs == 64)
            .collect();
        let merged: Vec<MergedStep> = merged_steps(&steady).collect();
        assert_eq!(
            merged
                .iter()
                .map(|m| (m.step, m.longest_ns))
                .collect::<Vec<_>>(),
            s.steps
                .iter()
                .copied()
                .zip(s.longest_ns.iter().copied())
                .collect::<Vec<_>>(),
            "as merging a list of the steady ranges alone"
        );
    }

    #[test]
    fn unparsed_steps_are_steady_only_when_no_step_has_generation_requests() {
        let unparsed = step(0, 10, UNPARSED, 0, 0);
        let s = steady_reference(vec![unparsed, step(20, 30, 1, 1, 0)]);
        assert_eq!((s.max_gen, s.steps.len()), (0, 1));
        let s = steady_reference(vec![unparsed, step(20, 30, 1, 0, 3)]);
        assert_eq!((s.max_gen, s.steps.len()), (3, 1));
        assert_eq!(s.steps[0].start, 20);
    }
}
