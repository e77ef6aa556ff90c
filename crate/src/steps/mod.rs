//! Forward steps and the phases they form (context vs generation): read from NVTX ranges under
//! a profile, TP ranks' copies merged, and the phases' windows measured. Detect, iterations,
//! the timeline's step lane and the drill-down's index all read steps here.

pub mod names;
pub mod spans;

use crate::model::intervals::{IntervalSet, UnionBuilder};
use crate::model::{NVTX_RANGE_TYPES, NameId, Ns, NvtxRanges, NvtxRow};
use crate::names::steps::StepName;
use crate::profile::{PhaseWindow, Switches};
use spans::WindowFacts;

/// TP ranks' copies of one step start within this much of each other (reference: 100 µs).
pub const TP_DEDUP_NS: Ns = 100_000;

/// One forward step (possibly merged from several TP ranks' ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The NVTX row of its (first) range ([`crate::model::NvtxRow::row`]).
    pub row: i64,
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
    visible_row_name(&nvtx.row(i), sw)
}

/// [`visible_name`] of a row read but not kept.
pub fn visible_row_name(row: &NvtxRow, sw: &Switches) -> Option<NameId> {
    if sw.nvtx_range_types_only && !NVTX_RANGE_TYPES.contains(&row.event_type) {
        return None;
    }
    // Reference filter `n.end > 0`; ranges that end before they start are damaged rows.
    if row.end <= 0 || row.end < row.start {
        return None;
    }
    let name = if sw.nvtx_text_fallback {
        row.name
    } else {
        row.text_id_name
    };
    (name != crate::model::NO_NAME).then_some(name)
}

/// How a reader of steps parses names: by id ([`names::ParsedNames`], or a plain function).
pub trait StepLookup {
    fn step_name(&self, id: NameId) -> Option<StepName>;
}

impl<F: Fn(NameId) -> Option<StepName>> StepLookup for F {
    fn step_name(&self, id: NameId) -> Option<StepName> {
        self(id)
    }
}

/// The raw (one rank's) forward step `row` is under `sw`, if it is one; `names` parses its name.
pub fn step_of_row(row: &NvtxRow, sw: &Switches, names: &impl StepLookup) -> Option<Step> {
    let name_id = visible_row_name(row, sw)?;
    Some(Step {
        row: row.row,
        start: row.start,
        end: row.end,
        name: names.step_name(name_id)?,
        ranks: 1,
        name_id,
    })
}

/// The forward steps of some NVTX rows (a view's, read again), TP-merged when the profile says
/// so, handed to `visit` in start order.
pub fn steps_of_rows(
    rows: impl Iterator<Item = NvtxRow>,
    names: impl StepLookup,
    sw: &Switches,
    visit: &mut dyn FnMut(Step),
) {
    let mut raw: Vec<Step> = rows.filter_map(|r| step_of_row(&r, sw, &names)).collect();
    if !raw.is_sorted_by_key(|s| (s.start, s.end)) {
        raw.sort_by_key(|s| (s.start, s.end));
    }
    let mut folder = TpFolder::new(sw);
    let mut each = |s: &Step| visit(*s);
    for s in raw {
        // Sorted: the folder cannot refuse a step.
        let _ = folder.push(s, &mut each);
    }
    folder.finish(&mut each);
}

/// [`steps_of_rows`] without holding every step, for rows in start order (as
/// `EventRows::ranges` hands them out): the raw steps of one start are sorted by end before the
/// folder takes them. `false`, some steps handed out already, when a step starts before the
/// one before it: the caller forgets them and reads the rows again with [`steps_of_rows`].
/// (Collected, a step per forward step held 56 bytes each, and twice over while its vector grew:
/// about 200 MB at 1.5 M steps.)
pub fn steps_of_rows_in_order(
    rows: impl Iterator<Item = NvtxRow>,
    names: impl StepLookup,
    sw: &Switches,
    visit: &mut dyn FnMut(Step),
) -> bool {
    let mut steps = StepsInOrder::new(sw);
    for row in rows {
        if !steps.push(&row, (&names, sw), visit) {
            return false;
        }
    }
    steps.finish(visit);
    true
}

/// [`steps_of_rows_in_order`] a row at a time, for a fold that is handed the rows (the page's
/// host side, as it reads the ranges).
pub struct StepsInOrder {
    folder: TpFolder,
    /// The raw steps of the start being read.
    same_start: Vec<Step>,
}

impl StepsInOrder {
    pub fn new(sw: &Switches) -> StepsInOrder {
        StepsInOrder {
            folder: TpFolder::new(sw),
            same_start: Vec::new(),
        }
    }

    /// The next row; `false` when its step starts before the one before it (the caller forgets
    /// the steps visited and reads the rows again with [`steps_of_rows`]).
    pub fn push(
        &mut self,
        row: &NvtxRow,
        (names, sw): (&impl StepLookup, &Switches),
        visit: &mut dyn FnMut(Step),
    ) -> bool {
        let Some(s) = step_of_row(row, sw, names) else {
            return true;
        };
        match self.same_start.first() {
            Some(first) if s.start < first.start => return false,
            Some(first) if s.start > first.start => {
                let each = &mut |s: &Step| visit(*s);
                fold_same_start(&mut self.same_start, &mut self.folder, each);
            }
            _ => {}
        }
        self.same_start.push(s);
        true
    }

    /// Hands out the steps still held.
    pub fn finish(mut self, visit: &mut dyn FnMut(Step)) {
        let each = &mut |s: &Step| visit(*s);
        fold_same_start(&mut self.same_start, &mut self.folder, each);
        self.folder.finish(each);
    }
}

/// Hands `folder` the steps of one start, by end (ties in table order).
fn fold_same_start(steps: &mut Vec<Step>, folder: &mut TpFolder, each: &mut impl FnMut(&Step)) {
    steps.sort_by_key(|s| s.end);
    for s in steps.drain(..) {
        // By start, then end: the folder cannot refuse a step.
        let _ = folder.push(s, each);
    }
}

/// Where a pass over forward steps hands each step (after TP merging, in start order).
pub trait StepSink {
    fn step(&mut self, s: &Step);
    /// Forgets the steps handed so far: the pass starts again (the table was out of order).
    fn restart(&mut self);
}

/// Steps nobody keeps.
impl StepSink for () {
    fn step(&mut self, _: &Step) {}
    fn restart(&mut self) {}
}

impl StepSink for Vec<Step> {
    fn step(&mut self, s: &Step) {
        self.push(*s);
    }
    fn restart(&mut self) {
        self.clear();
    }
}

impl<T: StepSink + ?Sized> StepSink for &mut T {
    fn step(&mut self, s: &Step) {
        (**self).step(s);
    }
    fn restart(&mut self) {
        (**self).restart();
    }
}

/// Two sinks fed the same steps.
impl<A: StepSink, B: StepSink> StepSink for (A, B) {
    fn step(&mut self, s: &Step) {
        self.0.step(s);
        self.1.step(s);
    }
    fn restart(&mut self) {
        self.0.restart();
        self.1.restart();
    }
}

/// A sink that may be absent (one profile of several feeds it).
impl<T: StepSink> StepSink for Option<&mut T> {
    fn step(&mut self, s: &Step) {
        if let Some(sink) = self {
            sink.step(s);
        }
    }
    fn restart(&mut self) {
        if let Some(sink) = self {
            sink.restart();
        }
    }
}

/// The forward steps of one profile, read from the NVTX table on each pass instead of kept: the
/// table lists ranges in start order (every export seen), and a long trace's steps are the
/// largest list a plan would build. A pass that meets a step out of order starts again over the
/// steps sorted into a list.
pub struct StepReader<'a, F: StepLookup> {
    nvtx: &'a NvtxRanges,
    names: F,
    sw: Switches,
}

impl<'a, F: StepLookup> StepReader<'a, F> {
    /// `names` gives a name's parsed step, if it is one.
    pub fn new(nvtx: &'a NvtxRanges, names: F, sw: &Switches) -> StepReader<'a, F> {
        StepReader {
            nvtx,
            names,
            sw: *sw,
        }
    }

    /// In one pass: the step counts and the two phases, each step (TP-merged when the profile
    /// says so) handed to `sink` in start order.
    pub fn summarize(&self, sink: &mut impl StepSink) -> StepSummary {
        self.fold(|| StepSummarizer::new(&self.sw), sink)
    }

    /// Hands each step (TP-merged when the profile says so) to `sink` in start order; returns
    /// how many raw ranges and distinct (merged) steps there were.
    pub fn for_each_step(&self, sink: &mut impl StepSink) -> (usize, usize) {
        self.fold(|| TpFolder::new(&self.sw), sink)
    }

    /// How it parses names (a parser reports the marker it chose once a pass is done).
    pub fn lookup(&self) -> &F {
        &self.names
    }

    /// The raw steps as a list, sorted by start (then end).
    pub fn raw(&self) -> Vec<Step> {
        let mut raw: Vec<Step> = self.in_table_order().collect();
        if !raw.is_sorted_by_key(|s| (s.start, s.end)) {
            raw.sort_by_key(|s| (s.start, s.end));
        }
        raw.shrink_to_fit();
        raw
    }

    /// Folds the raw steps in start order: in table order, in one pass, when the table is so;
    /// else `sink` restarts and the steps are folded again, sorted.
    fn fold<T: StepFold>(&self, new: impl Fn() -> T, sink: &mut impl StepSink) -> T::Out {
        let mut folder = new();
        let mut each = |s: &Step| sink.step(s);
        if self
            .in_table_order()
            .try_for_each(|s| folder.push(s, &mut each))
            .is_ok()
        {
            return folder.finish(&mut each);
        }
        sink.restart();
        let mut raw: Vec<Step> = self.in_table_order().collect();
        raw.sort_by_key(|s| (s.start, s.end));
        let mut folder = new();
        let mut each = |s: &Step| sink.step(s);
        for s in raw {
            // Sorted: the folder cannot refuse a step.
            let _ = folder.push(s, &mut each);
        }
        folder.finish(&mut each)
    }

    fn in_table_order(&self) -> impl Iterator<Item = Step> + '_ {
        (0..self.nvtx.len()).filter_map(|i| step_of_row(&self.nvtx.row(i), &self.sw, &self.names))
    }
}

/// A fold over raw steps in start (then end) order ([`TpFolder`], [`StepSummarizer`]).
pub trait StepFold {
    type Out;
    /// Adds a raw step; steps it completes go to `each`.
    fn push(&mut self, s: Step, each: &mut impl FnMut(&Step)) -> Result<(), StepsUnordered>;
    fn finish(self, each: &mut impl FnMut(&Step)) -> Self::Out;
}

/// A raw step came before the previous one: the folders need start (then end) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepsUnordered;

/// Raw steps in start (then end) order → steps, TP copies merged when the profile says so, as
/// they pass; counts raw ranges and distinct steps.
pub struct TpFolder {
    dedup: bool,
    /// The TP group being read: its first range, and the group merged so far.
    group: Option<(Step, Step)>,
    last: Option<(Ns, Ns)>,
    raw: usize,
    distinct: usize,
}

impl TpFolder {
    pub fn new(sw: &Switches) -> TpFolder {
        TpFolder {
            dedup: sw.dedup_steps,
            group: None,
            last: None,
            raw: 0,
            distinct: 0,
        }
    }
}

impl StepFold for TpFolder {
    /// `(raw ranges, distinct steps)`.
    type Out = (usize, usize);

    /// A step merged or kept is handed to `each` once its group closes.
    fn push(&mut self, s: Step, each: &mut impl FnMut(&Step)) -> Result<(), StepsUnordered> {
        if self.last.is_some_and(|last| (s.start, s.end) < last) {
            return Err(StepsUnordered);
        }
        self.last = Some((s.start, s.end));
        self.raw += 1;
        match &mut self.group {
            Some((first, merged)) if same_tp_group(first, &s) => absorb(merged, &s),
            _ => {
                self.distinct += 1;
                if let Some((_, merged)) = self.group.take().filter(|_| self.dedup) {
                    each(&merged);
                }
                self.group = Some((s, s));
            }
        }
        if !self.dedup {
            each(&s);
        }
        Ok(())
    }

    /// Hands out the last group; `(raw ranges, distinct steps)`.
    fn finish(self, each: &mut impl FnMut(&Step)) -> (usize, usize) {
        if let Some((_, merged)) = self.group.filter(|_| self.dedup) {
            each(&merged);
        }
        (self.raw, self.distinct)
    }
}

/// [`TpFolder`] plus what a plan takes from the steps: counts and the two phases.
pub struct StepSummarizer {
    folder: TpFolder,
    dedup: bool,
    phases: [PhaseAcc; 2],
}

impl StepSummarizer {
    pub fn new(sw: &Switches) -> StepSummarizer {
        StepSummarizer {
            folder: TpFolder::new(sw),
            dedup: sw.dedup_steps,
            phases: [PhaseAcc::new(sw), PhaseAcc::new(sw)],
        }
    }

    /// The spans the phases' windows hold so far (a span per step where steps do not touch).
    pub fn window_spans(&self) -> usize {
        self.phases
            .iter()
            .filter_map(|p| p.union.as_ref())
            .map(UnionBuilder::spans_held)
            .sum()
    }
}

impl StepFold for StepSummarizer {
    type Out = StepSummary;

    /// Each step (TP-merged when the profile says so) goes to its phase, then to `each`.
    fn push(&mut self, s: Step, each: &mut impl FnMut(&Step)) -> Result<(), StepsUnordered> {
        self.folder
            .push(s, &mut into_phases(&mut self.phases, each))
    }

    fn finish(self, each: &mut impl FnMut(&Step)) -> StepSummary {
        let mut phases = self.phases;
        let (raw, distinct) = self.folder.finish(&mut into_phases(&mut phases, each));
        let [context, generation] = phases.map(PhaseAcc::finish);
        StepSummary {
            counts: StepCounts {
                steps: if self.dedup { distinct } else { raw },
                raw,
                distinct,
            },
            context,
            generation,
        }
    }
}

/// Each step into its phase's accumulator, then to `each`.
fn into_phases<'a>(
    phases: &'a mut [PhaseAcc; 2],
    each: &'a mut impl FnMut(&Step),
) -> impl FnMut(&Step) + 'a {
    move |s| {
        if let Some(i) = phase_of(s) {
            phases[i].push(s);
        }
        each(s);
    }
}

/// What one pass over a profile's steps gives its plan ([`StepReader::summarize`]).
pub struct StepSummary {
    pub counts: StepCounts,
    pub context: Option<PhaseCounts>,
    pub generation: Option<PhaseCounts>,
}

/// The phase a step belongs to: 0 context (C > 0), 1 generation (C == 0, G > 0), else none.
pub fn phase_of(s: &Step) -> Option<usize> {
    if s.name.ctx > 0 {
        Some(0)
    } else if s.name.gen_reqs > 0 {
        Some(1)
    } else {
        None
    }
}

/// One phase's steps as they pass: counts, span, and union when the profile's window is one.
struct PhaseAcc {
    steps: u64,
    raw_steps: u64,
    union: Option<UnionBuilder>,
    span: Option<(Ns, Ns)>,
}

impl PhaseAcc {
    fn new(sw: &Switches) -> PhaseAcc {
        PhaseAcc {
            steps: 0,
            raw_steps: 0,
            union: (sw.phase_window == PhaseWindow::UnionOfSteps).then(UnionBuilder::default),
            span: None,
        }
    }

    fn push(&mut self, s: &Step) {
        self.steps += 1;
        self.raw_steps += u64::from(s.ranks);
        if let Some(u) = &mut self.union {
            u.push(s.start, s.end);
        }
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(s.start), b.max(s.end)),
            None => (s.start, s.end),
        });
    }

    fn finish(self) -> Option<PhaseCounts> {
        let (start, end) = self.span?;
        let window = match self.union {
            Some(u) => u.finish(),
            None => IntervalSet::single(start, end),
        };
        Some(PhaseCounts {
            facts: WindowFacts::of(&window),
            window,
            steps: self.steps,
            raw_steps: self.raw_steps,
        })
    }
}

/// All forward-step ranges in start order, TP-deduplicated when the profile says so; `names`
/// gives a name's parsed step, if it is one.
pub fn forward_steps(
    nvtx: &NvtxRanges,
    names: impl StepLookup,
    sw: &Switches,
) -> (Vec<Step>, usize) {
    let mut raw = StepReader::new(nvtx, names, sw).raw();
    let raw_count = raw.len();
    if sw.dedup_steps {
        dedup_tp_steps_in_place(&mut raw);
    }
    (raw, raw_count)
}

/// The TP groups of `steps` (in start order), each a run of ranges [`dedup_tp_steps_in_place`] merges
/// into one step ([`merge_group`]).
pub fn tp_groups(steps: &[Step]) -> impl Iterator<Item = &[Step]> {
    let mut rest = steps;
    std::iter::from_fn(move || {
        let (first, others) = rest.split_first()?;
        let n = 1 + others
            .iter()
            .take_while(|s| same_tp_group(first, s))
            .count();
        let (group, after) = rest.split_at(n);
        rest = after;
        Some(group)
    })
}

/// What a TP group merges into: its step from its min start to its max end.
pub fn merge_group(group: &[Step]) -> Option<Step> {
    let (first, others) = group.split_first()?;
    Some(others.iter().fold(*first, |mut merged, s| {
        absorb(&mut merged, s);
        merged
    }))
}

/// Merges consecutive ranges with the same step number starting < 100 µs after the group's
/// first (reference `dedup_tp_steps`) into one step from the min start to the max end, each
/// group in its first slot's place in the list itself (no second list of steps).
pub fn dedup_tp_steps_in_place(steps: &mut Vec<Step>) {
    let mut kept = 0;
    let mut at = 0;
    while let Some(group) = steps.get(at..).and_then(|rest| tp_groups(rest).next()) {
        let (n, merged) = (group.len(), merge_group(group));
        if let Some(merged) = merged {
            steps[kept] = merged;
            kept += 1;
        }
        at += n;
    }
    steps.truncate(kept);
    steps.shrink_to_fit();
}

/// Whether `s` is a TP rank's copy of the step whose group `first` opened: its step number,
/// starting less than 100 µs from it.
fn same_tp_group(first: &Step, s: &Step) -> bool {
    (s.start - first.start).abs() < TP_DEDUP_NS && s.name.step == first.name.step
}

/// Merges a TP copy into its group's step: from the min start to the max end.
fn absorb(merged: &mut Step, s: &Step) {
    merged.start = merged.start.min(s.start);
    merged.end = merged.end.max(s.end);
    merged.ranks += 1;
}

/// A phase as the verdict needs it, without its steps (a copy of every step would double the
/// plan on a long trace): the window and how many steps, merged and raw, fall in it.
#[derive(Debug, Clone)]
pub struct PhaseCounts {
    pub window: IntervalSet,
    pub facts: WindowFacts,
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

/// Splits steps into context (C > 0) and generation (C == 0, G > 0), idle steps skipped: each
/// phase's window and counts, without a copy of its steps.
pub fn phases(steps: &[Step], sw: &Switches) -> (Option<PhaseCounts>, Option<PhaseCounts>) {
    let [context, generation] = [0, 1].map(|phase| {
        let mut acc = PhaseAcc::new(sw);
        steps
            .iter()
            .filter(|s| phase_of(s) == Some(phase))
            .for_each(|s| acc.push(s));
        acc.finish()
    });
    (context, generation)
}

#[cfg(test)]
mod tests;
