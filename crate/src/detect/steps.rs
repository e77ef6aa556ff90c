//! Forward steps and the phases they form (context vs generation).

use super::config::{PhaseWindow, Switches};
use super::names::StepName;
use crate::model::intervals::IntervalSet;
use crate::model::{NVTX_RANGE_TYPES, NameId, Ns, NvtxRanges};

/// TP ranks' copies of one step start within this much of each other (reference: 100 µs).
pub const TP_DEDUP_NS: Ns = 100_000;

/// One forward step (possibly merged from several TP ranks' ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub start: Ns,
    pub end: Ns,
    pub name: StepName,
    /// How many raw NVTX ranges were merged into this step.
    pub ranks: u32,
    /// The (first) range's NVTX name.
    pub name_id: NameId,
}

/// Which NVTX rows a profile can see, and under which name.
pub fn visible_name(nvtx: &NvtxRanges, i: usize, sw: &Switches) -> Option<NameId> {
    if sw.nvtx_range_types_only && !NVTX_RANGE_TYPES.contains(&nvtx.event_type[i]) {
        return None;
    }
    // Reference filter `n.end > 0`; ranges that end before they start are damaged rows.
    if nvtx.end[i] <= 0 || nvtx.end[i] < nvtx.start[i] {
        return None;
    }
    let name = if sw.nvtx_text_fallback {
        nvtx.name[i]
    } else {
        nvtx.text_id_name[i]
    };
    (name != crate::model::NO_NAME).then_some(name)
}

/// All forward-step ranges in start order, TP-deduplicated when the profile says so; `names`
/// gives a name's parsed step, if it is one.
pub fn forward_steps(
    nvtx: &NvtxRanges,
    names: impl Fn(NameId) -> Option<StepName>,
    sw: &Switches,
) -> (Vec<Step>, usize) {
    let step = |i: usize| {
        let name_id = visible_name(nvtx, i, sw)?;
        let name = names(name_id)?;
        Some(Step {
            start: nvtx.start[i],
            end: nvtx.end[i],
            name,
            ranks: 1,
            name_id,
        })
    };
    // Counted first: the steps of a long trace are its largest list while a plan is built.
    let mut raw: Vec<Step> = Vec::with_capacity((0..nvtx.len()).filter_map(step).count());
    raw.extend((0..nvtx.len()).filter_map(step));
    raw.sort_by_key(|s| (s.start, s.end));
    let raw_count = raw.len();
    if sw.dedup_steps {
        dedup_tp_steps_in_place(&mut raw);
    }
    (raw, raw_count)
}

/// Merges consecutive ranges with the same step number starting < 100 µs after the group's
/// first (reference `dedup_tp_steps`): one step from the min start to the max end.
pub fn dedup_tp_steps(steps: &[Step]) -> Vec<Step> {
    let mut out = steps.to_vec();
    dedup_tp_steps_in_place(&mut out);
    out
}

/// [`dedup_tp_steps`] without a second list of steps.
pub fn dedup_tp_steps_in_place(steps: &mut Vec<Step>) {
    let mut kept = 0;
    let mut i = 0;
    while i < steps.len() {
        let j = tp_group_end(steps, i);
        let mut merged = steps[i];
        for s in &steps[i + 1..j] {
            merged.start = merged.start.min(s.start);
            merged.end = merged.end.max(s.end);
            merged.ranks += 1;
        }
        steps[kept] = merged;
        kept += 1;
        i = j;
    }
    steps.truncate(kept);
    steps.shrink_to_fit();
}

/// How many steps [`dedup_tp_steps`] would give.
pub fn count_tp_steps(steps: &[Step]) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < steps.len() {
        i = tp_group_end(steps, i);
        count += 1;
    }
    count
}

/// The end of the TP group starting at `i`: the ranges after it with its step number that start
/// less than 100 µs after it.
fn tp_group_end(steps: &[Step], i: usize) -> usize {
    let first = steps[i];
    let mut j = i + 1;
    while j < steps.len()
        && (steps[j].start - first.start).abs() < TP_DEDUP_NS
        && steps[j].name.step == first.name.step
    {
        j += 1;
    }
    j
}

/// The steps of one phase and the window its metrics are measured in.
#[derive(Debug, Clone)]
pub struct PhaseSteps {
    pub steps: Vec<Step>,
    pub window: IntervalSet,
}

/// A phase as the verdict needs it, without its steps (a copy of every step would double the
/// plan on a long trace): the window and how many steps, merged and raw, fall in it.
#[derive(Debug, Clone)]
pub struct PhaseCounts {
    pub window: IntervalSet,
    pub steps: u64,
    /// Raw NVTX ranges behind those steps (TP copies counted).
    pub raw_steps: u64,
}

/// How many forward steps a profile found, without the steps: what the verdict reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Steps after the profile's TP de-duplication (if any).
    pub steps: usize,
    /// NVTX ranges behind them (TP copies counted).
    pub raw: usize,
    /// Distinct steps once TP copies are merged (= `steps` when the profile de-duplicates).
    pub distinct: usize,
}

impl StepCounts {
    /// The counts of `steps` found from `raw` ranges under `sw`.
    pub fn of(steps: &[Step], raw: usize, sw: &Switches) -> StepCounts {
        let distinct = if sw.dedup_steps {
            steps.len()
        } else {
            count_tp_steps(steps)
        };
        StepCounts {
            steps: steps.len(),
            raw,
            distinct,
        }
    }
}

/// The context and generation phases of `steps` as the verdict needs them: like [`phases`]
/// without copying the steps.
pub fn phase_counts(steps: &[Step], sw: &Switches) -> (Option<PhaseCounts>, Option<PhaseCounts>) {
    let context = |s: &&Step| s.name.ctx > 0;
    let generation = |s: &&Step| s.name.ctx == 0 && s.name.gen_reqs > 0;
    (
        phase_count(steps.iter().filter(context), sw),
        phase_count(steps.iter().filter(generation), sw),
    )
}

fn phase_count<'s>(
    steps: impl Iterator<Item = &'s Step> + Clone,
    sw: &Switches,
) -> Option<PhaseCounts> {
    let count = steps.clone().count();
    if count == 0 {
        return None;
    }
    Some(PhaseCounts {
        window: phase_window(steps.clone(), sw),
        steps: count as u64,
        raw_steps: steps.map(|s| u64::from(s.ranks)).sum(),
    })
}

/// A phase's window: the union of its steps or their span, by profile.
fn phase_window<'s>(steps: impl Iterator<Item = &'s Step> + Clone, sw: &Switches) -> IntervalSet {
    match sw.phase_window {
        PhaseWindow::UnionOfSteps => {
            IntervalSet::from_unsorted(steps.map(|s| (s.start, s.end)).collect())
        }
        PhaseWindow::Span => {
            let start = steps.clone().map(|s| s.start).min().unwrap_or(0);
            let end = steps.map(|s| s.end).max().unwrap_or(0);
            IntervalSet::single(start, end)
        }
    }
}

/// Splits steps into context (C > 0) and generation (C == 0, G > 0); idle steps are skipped.
pub fn phases(steps: &[Step], sw: &Switches) -> (Option<PhaseSteps>, Option<PhaseSteps>) {
    let context: Vec<Step> = steps.iter().copied().filter(|s| s.name.ctx > 0).collect();
    let generation: Vec<Step> = steps
        .iter()
        .copied()
        .filter(|s| s.name.ctx == 0 && s.name.gen_reqs > 0)
        .collect();
    (phase(context, sw), phase(generation, sw))
}

fn phase(steps: Vec<Step>, sw: &Switches) -> Option<PhaseSteps> {
    if steps.is_empty() {
        return None;
    }
    let window = phase_window(steps.iter(), sw);
    Some(PhaseSteps { steps, window })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(start: Ns, end: Ns, n: u64) -> Step {
        Step {
            start,
            end,
            name: StepName {
                step: n,
                ctx: 0,
                gen_reqs: 8,
            },
            ranks: 1,
            name_id: 0,
        }
    }

    #[test]
    fn dedup_merges_same_step_within_100us_only() {
        let raw = [
            step(0, 500, 1),
            step(99_999, 700, 1),
            step(100_000, 900, 1),
            step(1_000_000, 1_100_000, 2),
            step(1_000_010, 1_090_000, 3),
        ];
        let d = dedup_tp_steps(&raw);
        assert_eq!(d.len(), 4);
        assert_eq!(count_tp_steps(&raw), 4);
        assert_eq!((d[0].start, d[0].end, d[0].ranks), (0, 700, 2));
        assert_eq!((d[1].start, d[1].ranks), (100_000, 1));
        assert_eq!(d[2].name.step, 2);
        assert_eq!(d[3].name.step, 3);
    }
}
