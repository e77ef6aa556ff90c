//! Repeating-pattern mapping (reference §9.3, spec §4): the per-layer kernel sequence inside
//! steady-state steps, found automatically, numbered, grouped into functional blocks and ranked
//! by the host gap each block waits on per step (gap per layer × layers per step).
//!
//! The layer is the shortest period `p` whose repetition covers the longest stretch of a step's
//! kernel-name sequence (`name[i] == name[i + p]` over a run of `r` positions covers `r + p`
//! kernels); the unit starts where that run starts. Occurrences are then counted as
//! non-overlapping exact matches in every steady step. A kernel's preceding gap is the device's
//! idle time right before it (its start minus the latest end of all earlier kernels, ≥ 0); the
//! first kernel of a step counts 0 (its gap is the inter-step host work, which the gap analysis
//! reports).

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::index::Fold;
use crate::index::kernel_pass::{Rider, kernel_pass};
use crate::index::rows::RowIndex;
use crate::index::units::us;
use crate::index::{SpanCursor, steady_spans};
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{NameId, Ns};
use crate::names::kernels::KernelCategory;

/// Longest prefix of a step searched for the period, and the longest period tried.
const SEARCH_KERNELS: usize = 4096;
const MAX_PERIOD: usize = 1024;
/// Steps whose units vote for the layer sequence.
const VOTING_STEPS: usize = 8;
/// Without forward steps, the first kernels of the device stand in for one step.
const NO_STEP_KERNELS: usize = 200_000;

/// One position of the layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternKernel {
    pub index: usize,
    pub name: String,
    pub category: KernelCategory,
    /// Mean idle gap before this kernel, per layer occurrence.
    pub mean_gap_us: f64,
    pub mean_duration_us: f64,
}

/// Consecutive positions of one functional category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternBlock {
    /// `A`, `B`, … in layer order.
    pub group: String,
    pub first: usize,
    pub last: usize,
    /// `"0–2"` (or `"3"`).
    pub kernels: String,
    pub operation: String,
    pub category: KernelCategory,
    pub names: Vec<String>,
    pub gap_per_layer_us: f64,
    /// Gap per layer × layers per step: the block's host gap per step.
    pub total_gap_us: f64,
    /// `HIGH` (the largest), `Medium` (≥ half of it) or `Low`.
    pub priority: String,
    /// 1 = largest total gap.
    pub rank: usize,
}

/// The `patterns` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternReport {
    pub found: bool,
    pub file: Option<String>,
    pub device: Option<u32>,
    /// Which kernels were searched (steady-state steps, generation steps, whole trace).
    pub source: String,
    pub steps: u64,
    /// Layer occurrences found in those steps.
    pub layers: u64,
    pub layers_per_step: f64,
    /// Mean duration of the searched steps (0 without steps).
    pub step_us: f64,
    pub kernels: Vec<PatternKernel>,
    /// Ranked: largest total gap first.
    pub blocks: Vec<PatternBlock>,
    pub note: Option<String>,
}

/// Finds the per-layer pattern in the first input (ranks of one model repeat the same layer):
/// a pass over its kernels reading the first steps' sequences for the vote and, when the steps
/// come in device order, counting the layer's occurrences in every step as the kernels come;
/// else a second pass counts them.
pub fn pattern_report(inputs: &[RowIndex<'_>]) -> PatternReport {
    let Some(ix) = inputs.first() else {
        return not_found(None, None, "no trace".into(), 0);
    };
    let plan = PatternPlan::of(ix);
    report_of(ix, &plan, first_sequences(ix, &plan, VOTING_STEPS), None)
}

/// Where the layer is searched in a trace: the device that ran the most kernels (ties: the
/// last), inside the steady steps.
pub(crate) struct PatternPlan {
    device: Option<u32>,
    spans: Vec<(Ns, Ns)>,
    /// Which steps `spans` are.
    steps: &'static str,
}

impl PatternPlan {
    pub(crate) fn of(ix: &RowIndex<'_>) -> PatternPlan {
        let (spans, steps) = steady_spans(&ix.steps.steps);
        let device = ix.devices.iter().max_by_key(|d| d.kernels);
        PatternPlan {
            device: device.map(|d| d.device),
            spans,
            steps,
        }
    }
}

/// The pattern of `ix` from the first steps' sequences (`first`, read by a [`VoteFold`]):
/// the layer voted and its occurrences counted on the vote's pass, or else counted in a pass
/// over the kernels (`rider` riding on it when it asks to).
pub(crate) fn report_of(
    ix: &RowIndex<'_>,
    plan: &PatternPlan,
    first: FirstSequences,
    rider: Option<&mut (dyn Rider + '_)>,
) -> PatternReport {
    let spans = &plan.spans;
    let Some(device) = plan.device else {
        return not_found(Some(ix), None, plan.steps.into(), 0);
    };
    let (source, step_count) = if spans.is_empty() {
        (
            format!(
                "the first {NO_STEP_KERNELS} kernels of device {device} (no forward-step NVTX ranges)"
            ),
            1,
        )
    } else {
        (
            format!("{} ({} steps)", plan.steps, spans.len()),
            spans.len() as u64,
        )
    };
    let counted = match first.counted {
        Some(counted) => counted,
        None => {
            let unit = vote_unit(first.steps.values());
            let tally = unit
                .as_deref()
                .map(|unit| count_occurrences(ix, plan, unit, first.in_order, rider));
            Counted { unit, tally }
        }
    };
    let (Some(unit), Some(tally)) = (counted.unit, counted.tally) else {
        return not_found(Some(ix), Some(device), source, step_count);
    };
    if tally.occurrences < 2 {
        return not_found(Some(ix), Some(device), source, step_count);
    }
    let kernels = layer_kernels(ix, &unit, &tally);
    let layers_per_step = tally.occurrences as f64 / step_count as f64;
    PatternReport {
        found: true,
        file: Some(ix.label.clone()),
        device: Some(device),
        source,
        steps: step_count,
        layers: tally.occurrences,
        layers_per_step,
        step_us: if spans.is_empty() {
            0.0
        } else {
            spans.iter().map(|&(s, e)| us(e - s)).sum::<f64>() / spans.len() as f64
        },
        blocks: blocks(&kernels, layers_per_step),
        kernels,
        note: None,
    }
}

fn not_found(
    ix: Option<&RowIndex<'_>>,
    device: Option<u32>,
    source: String,
    steps: u64,
) -> PatternReport {
    PatternReport {
        found: false,
        file: ix.map(|ix| ix.label.clone()),
        device,
        source,
        steps,
        layers: 0,
        layers_per_step: 0.0,
        step_us: 0.0,
        kernels: Vec::new(),
        blocks: Vec::new(),
        note: Some(
            "no kernel sequence repeats at least twice inside the searched steps: no per-layer pattern"
                .into(),
        ),
    }
}

/// One kernel of a step's sequence: its short name, its duration and the device's idle time
/// right before it (0 for a step's first kernel: it waits on the inter-step host work, not on
/// the layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SeqKernel {
    name: NameId,
    duration: Ns,
    gap: Ns,
}

/// The first steps' sequences (by step index), whether the steps came in device order, and
/// the layer's count when the vote's pass made it.
pub(crate) struct FirstSequences {
    steps: BTreeMap<u32, Vec<SeqKernel>>,
    in_order: bool,
    counted: Option<Counted>,
}

/// The layer voted (`None`: no step has one) and its occurrences counted in every step.
struct Counted {
    unit: Option<Vec<NameId>>,
    tally: Option<Tally>,
}

/// Most kernels of the voting steps held whole (24 B each: 6 MiB) while the vote's pass waits
/// to count the layer in them.
const HELD_STEP_KERNELS: usize = 1 << 18;

/// The layer's count on the vote's pass ([`VoteFold`]). While the steps come in device order,
/// the voting steps (the first ones) are held whole until the next step's first kernel decides
/// the vote; then they are counted, and every later step as its kernels come. Steps out of
/// order, or voting steps too long to hold, leave the count to a pass of its own.
enum CountAhead {
    Holding {
        kernels: usize,
    },
    Counting {
        unit: Option<Vec<NameId>>,
        tally: Option<Tally>,
        step: u32,
        search: StepMatch,
    },
    GivenUp,
}

/// The sequences of the `keep` lowest steps that launched kernels on the plan's device, each
/// cut at [`SEARCH_KERNELS`] (the most the layer search reads), in one pass.
fn first_sequences(ix: &RowIndex<'_>, plan: &PatternPlan, keep: usize) -> FirstSequences {
    let mut fold = VoteFold::new(ix, plan);
    fold.keep = keep;
    kernel_pass(ix, &mut [&mut fold]);
    fold.finish()
}

/// Reads the first steps' sequences as the kernels pass: a step's kernels kept while fewer
/// than [`VOTING_STEPS`] lower steps have kernels, dropped once they do; and counts the layer
/// on the way when it can ([`CountAhead`]).
pub(crate) struct VoteFold<'a, 'p> {
    ix: &'a RowIndex<'a>,
    walk: StepWalk<'p>,
    first: FirstSequences,
    keep: usize,
    last: u32,
    ahead: CountAhead,
}

impl<'a, 'p> VoteFold<'a, 'p> {
    pub(crate) fn new(ix: &'a RowIndex<'a>, plan: &'p PatternPlan) -> VoteFold<'a, 'p> {
        VoteFold {
            ix,
            walk: StepWalk::new(plan),
            first: FirstSequences {
                steps: BTreeMap::new(),
                in_order: true,
                counted: None,
            },
            keep: VOTING_STEPS,
            last: 0,
            ahead: CountAhead::Holding { kernels: 0 },
        }
    }

    /// The first steps' sequences, with the layer's count when it was made on the way (or can
    /// be now: every step with kernels held whole).
    pub(crate) fn finish(mut self) -> FirstSequences {
        if matches!(self.ahead, CountAhead::Holding { .. }) {
            self.decide();
        }
        if let CountAhead::Counting { unit, tally, .. } = self.ahead {
            self.first.counted = Some(Counted { unit, tally });
        }
        self.first
    }

    /// Votes on the voting steps held whole and counts the layer in them.
    fn decide(&mut self) {
        let unit = vote_unit(self.first.steps.values());
        let tally = unit.as_deref().map(|unit| {
            let mut tally = Tally::new(unit.len());
            for seq in self.first.steps.values() {
                let mut search = StepMatch::default();
                seq.iter().for_each(|&k| tally.push(&mut search, k, unit));
            }
            tally
        });
        self.hold_only_the_search();
        self.ahead = CountAhead::Counting {
            unit,
            tally,
            step: u32::MAX,
            search: StepMatch::default(),
        };
    }

    /// Leaves the count to a pass of its own.
    fn give_up_counting(&mut self) {
        self.hold_only_the_search();
        self.ahead = CountAhead::GivenUp;
    }

    /// Cuts the sequences held to what the vote reads of them.
    fn hold_only_the_search(&mut self) {
        for seq in self.first.steps.values_mut() {
            seq.truncate(SEARCH_KERNELS);
        }
    }
}

impl Fold for VoteFold<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        let Some((step, k)) = self.walk.kernel(k, call) else {
            return;
        };
        if step < self.last {
            self.first.in_order = false;
            if !matches!(self.ahead, CountAhead::GivenUp) {
                self.give_up_counting();
            }
        }
        self.last = self.last.max(step);
        let first = &mut self.first;
        let lowest = first.steps.len() < self.keep
            || first
                .steps
                .last_key_value()
                .is_some_and(|(&max, _)| step <= max);
        if !lowest {
            if matches!(self.ahead, CountAhead::Holding { .. }) {
                self.decide();
            }
            if let CountAhead::Counting {
                unit: Some(unit),
                tally: Some(tally),
                step: counting,
                search,
            } = &mut self.ahead
            {
                if *counting != step {
                    (*counting, *search) = (step, StepMatch::default());
                }
                tally.push(search, k, unit);
            }
            return;
        }
        let seq = first.steps.entry(step).or_default();
        let whole = matches!(self.ahead, CountAhead::Holding { .. });
        if whole || seq.len() < SEARCH_KERNELS {
            let gap = if seq.is_empty() { 0 } else { k.gap };
            seq.push(SeqKernel { gap, ..k });
        }
        if first.steps.len() > self.keep {
            first.steps.pop_last();
        }
        self.ix
            .peak
            .sequence(first.steps.values().map(Vec::len).sum());
        if let CountAhead::Holding { kernels } = &mut self.ahead {
            *kernels += 1;
            if *kernels > HELD_STEP_KERNELS {
                self.give_up_counting();
            }
        }
    }
}

/// The plan's device's kernels as they pass in start order: each kernel launched inside a step
/// (without steps: the first [`NO_STEP_KERNELS`], as step 0) with its step, its duration and
/// the device's idle time right before it.
struct StepWalk<'p> {
    plan: &'p PatternPlan,
    busy_until: Ns,
    steps: SpanCursor<'p>,
    handed: usize,
}

impl<'p> StepWalk<'p> {
    fn new(plan: &'p PatternPlan) -> StepWalk<'p> {
        StepWalk {
            plan,
            busy_until: Ns::MIN,
            steps: SpanCursor::new(&plan.spans),
            handed: 0,
        }
    }

    /// Kernel `k` (launched by `call`, when joined) with its step, if the walk hands it over.
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) -> Option<(u32, SeqKernel)> {
        if self.plan.device != Some(k.device) {
            return None;
        }
        let gap = if self.busy_until == Ns::MIN {
            0
        } else {
            (k.start - self.busy_until).max(0)
        };
        self.busy_until = self.busy_until.max(k.end);
        // Copies, memsets and replays keep the device busy but are not in the sequence.
        if k.work != crate::model::Work::Kernel {
            return None;
        }
        let step = if self.plan.spans.is_empty() {
            (self.handed < NO_STEP_KERNELS).then_some(0)
        } else {
            self.steps.find(call.map_or(k.start, |c| c.start))
        }?;
        self.handed += 1;
        let item = SeqKernel {
            name: k.short_name,
            duration: (k.end - k.start).max(0),
            gap,
        };
        Some((step as u32, item))
    }
}

/// The unit most steps' sequences agree on (ties: the earliest step's).
fn vote_unit<'s>(steps: impl Iterator<Item = &'s Vec<SeqKernel>>) -> Option<Vec<NameId>> {
    let units = steps.filter_map(|seq| {
        let names: Vec<NameId> = seq.iter().take(SEARCH_KERNELS).map(|k| k.name).collect();
        find_unit(&names)
    });
    let mut votes: Vec<(Vec<NameId>, usize)> = Vec::new();
    for unit in units {
        match votes.iter_mut().find(|(u, _)| *u == unit) {
            Some(v) => v.1 += 1,
            None => votes.push((unit, 1)),
        }
    }
    let max = votes.iter().map(|v| v.1).max()?;
    votes.into_iter().find(|v| v.1 == max).map(|v| v.0)
}

/// The repeated unit of one name sequence: the shortest period with the widest coverage.
pub fn find_unit(names: &[NameId]) -> Option<Vec<NameId>> {
    let s = &names[..names.len().min(SEARCH_KERNELS)];
    let mut best: Option<(usize, usize, usize)> = None; // (coverage, period, run start)
    for p in 1..=(s.len() / 2).min(MAX_PERIOD) {
        let (mut run, mut run_start, mut best_run, mut best_start) = (0, 0, 0, 0);
        for i in 0..s.len() - p {
            if s[i] == s[i + p] {
                if run == 0 {
                    run_start = i;
                }
                run += 1;
                if run > best_run {
                    (best_run, best_start) = (run, run_start);
                }
            } else {
                run = 0;
            }
        }
        let coverage = best_run + p;
        if best_run >= p && best.is_none_or(|b| coverage > b.0) {
            best = Some((coverage, p, best_start));
        }
    }
    best.map(|(_, p, start)| s[start..start + p].to_vec())
}

/// Per-position sums over every occurrence of the unit.
struct Tally {
    occurrences: u64,
    gap: Vec<Ns>,
    duration: Vec<Ns>,
}

impl Tally {
    /// No occurrence yet of a unit `len` kernels long.
    fn new(len: usize) -> Tally {
        Tally {
            occurrences: 0,
            gap: vec![0; len],
            duration: vec![0; len],
        }
    }
}

/// One step's search for the unit as its kernels come: the kernels from the current position
/// on, fewer than the unit's length but one (an exact match, non-overlapping, leftmost first).
#[derive(Default)]
struct StepMatch {
    window: VecDeque<SeqKernel>,
    started: bool,
}

impl Tally {
    /// Adds the next kernel of a step: when the step's window then holds one unit's length of
    /// kernels, it is an occurrence (counted, and the search goes on after it) or the search
    /// moves on by one kernel.
    fn push(&mut self, m: &mut StepMatch, k: SeqKernel, unit: &[NameId]) {
        let gap = if m.started { k.gap } else { 0 };
        m.started = true;
        m.window.push_back(SeqKernel { gap, ..k });
        if m.window.len() < unit.len() {
            return;
        }
        if m.window.iter().zip(unit).all(|(k, &n)| k.name == n) {
            self.occurrences += 1;
            for (j, k) in m.window.drain(..).enumerate() {
                self.gap[j] += k.gap;
                self.duration[j] += k.duration;
            }
        } else {
            m.window.pop_front();
        }
    }
}

/// Counts the unit's occurrences in every step's sequence, one pass (`rider` handed its
/// kernels when it asks for them): a search per step, held while the step may still get
/// kernels (when the steps came in device order, until the next step starts).
fn count_occurrences(
    ix: &RowIndex<'_>,
    plan: &PatternPlan,
    unit: &[NameId],
    in_order: bool,
    rider: Option<&mut (dyn Rider + '_)>,
) -> Tally {
    let mut fold = CountFold {
        ix,
        walk: StepWalk::new(plan),
        unit,
        in_order,
        open: BTreeMap::new(),
        tally: Tally::new(unit.len()),
    };
    match rider.filter(|r| r.wants_kernels_again()) {
        Some(rider) => kernel_pass(ix, &mut [&mut fold, rider]),
        None => kernel_pass(ix, &mut [&mut fold]),
    }
    fold.tally
}

/// The count's fold: per step still open, its search.
struct CountFold<'a, 'p> {
    ix: &'a RowIndex<'a>,
    walk: StepWalk<'p>,
    unit: &'p [NameId],
    in_order: bool,
    open: BTreeMap<u32, StepMatch>,
    tally: Tally,
}

impl Fold for CountFold<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        let Some((step, k)) = self.walk.kernel(k, call) else {
            return;
        };
        if self.in_order {
            // Earlier steps get no more kernels.
            self.open.retain(|&s, _| s >= step);
        }
        self.tally
            .push(self.open.entry(step).or_default(), k, self.unit);
        let held = self.open.values().map(|m| m.window.len()).sum();
        self.ix.peak.sequence(held);
    }
}

fn layer_kernels(ix: &RowIndex<'_>, unit: &[NameId], t: &Tally) -> Vec<PatternKernel> {
    let n = t.occurrences.max(1) as f64;
    unit.iter()
        .enumerate()
        .map(|(j, &name)| PatternKernel {
            index: j,
            name: ix.string(name).to_string(),
            category: ix.names.category(name),
            mean_gap_us: us(t.gap[j]) / n,
            mean_duration_us: us(t.duration[j]) / n,
        })
        .collect()
}

/// Groups consecutive positions of one category, then ranks the groups by total gap per step.
fn blocks(kernels: &[PatternKernel], layers_per_step: f64) -> Vec<PatternBlock> {
    let mut out: Vec<PatternBlock> = Vec::new();
    for k in kernels {
        match out.last_mut() {
            Some(b) if b.category == k.category => {
                b.last = k.index;
                b.gap_per_layer_us += k.mean_gap_us;
                if !b.names.contains(&k.name) {
                    b.names.push(k.name.clone());
                }
            }
            _ => out.push(PatternBlock {
                group: group_letter(out.len()),
                first: k.index,
                last: k.index,
                kernels: String::new(),
                operation: k.category.label().to_string(),
                category: k.category,
                names: vec![k.name.clone()],
                gap_per_layer_us: k.mean_gap_us,
                total_gap_us: 0.0,
                priority: String::new(),
                rank: 0,
            }),
        }
    }
    for b in &mut out {
        b.kernels = if b.first == b.last {
            b.first.to_string()
        } else {
            format!("{}–{}", b.first, b.last)
        };
        b.total_gap_us = b.gap_per_layer_us * layers_per_step;
    }
    out.sort_by(|a, b| {
        b.total_gap_us
            .total_cmp(&a.total_gap_us)
            .then(a.first.cmp(&b.first))
    });
    let top = out.first().map_or(0.0, |b| b.total_gap_us);
    for (i, b) in out.iter_mut().enumerate() {
        b.rank = i + 1;
        b.priority = if i == 0 && top > 0.0 {
            "HIGH"
        } else if top > 0.0 && b.total_gap_us >= top / 2.0 {
            "Medium"
        } else {
            "Low"
        }
        .to_string();
    }
    out
}

/// `A`…`Z`, then `AA`, `AB`, …
fn group_letter(i: usize) -> String {
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    if i < 26 {
        letter(i).to_string()
    } else {
        format!("{}{}", letter(i / 26 - 1), letter(i))
    }
}

#[cfg(test)]
mod tests;
