//! What a fix would buy: the critical path of the steady steps and a what-if replay that
//! predicts the wall time per step after a change of costs (`docs/whatif.md`).
//!
//! Why a replay rather than thresholds: a metric that crosses its threshold says a cost is
//! large, not that removing it shortens the step. A loop that waits on a stream sync each step
//! gains from faster kernels even when its launch overhead ratio is high; a GPU-bound loop
//! gains less than its kernels shrink once the host becomes the limit. Re-timing the rows with
//! their dependencies kept answers both.
//!
//! The replay (`replay.rs`) is one fold over the rows in time order; its points and their
//! deciding predecessors (`graph.rs`) give the critical path per steady cycle. The steady
//! cycles are Root cause's, so "wall time per step" means what it means there.

pub mod apart;
pub mod compare;
pub mod graph;
mod replay;

use std::collections::HashMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::analyze::{AnalyzeConfig, TraceBreakdown, analyze_rows};
use crate::detect::bound::BoundKind;
use crate::detect::{DetectConfig, DetectReport, detect_rows};
use crate::error::{Error, Result};
use crate::model::intervals::IntervalSet;
use crate::model::rows::EventRows;
use crate::model::{NO_NAME, Ns, Strings};
use crate::names::kernels::KernelCategory;
use crate::names::shape::op_shape;
use graph::{Part, PartTimes, Place};

pub use crate::costs::Costs;
pub use replay::Feed;

/// The share of the window's device time that copies and memsets fill beyond what compute
/// hid (the verdict's `bound.shares.transfer`) from which the standard set halves them too:
/// below it, halving them buys under 2.5 % of the window, not worth a replay of every row.
pub const COPIES_SHARE: f64 = 0.05;

/// The changes predicted when none is asked for: halve the host's own time, the launch calls,
/// the kernels; no host time at all; and, when copies and memsets fill at least
/// [`COPIES_SHARE`] of the window's device time by `verdict`, halve them.
pub fn standard_set(verdict: &DetectReport) -> Vec<Costs> {
    let with = |f: fn(&mut Costs)| {
        let mut c = Costs::default();
        f(&mut c);
        c
    };
    let mut set = vec![
        with(|c| c.host = 0.5),
        with(|c| c.launch = 0.5),
        with(|c| c.kernels = 0.5),
        with(|c| c.host = 0.0),
    ];
    let transfers = verdict.bound.as_ref().map_or(0.0, |b| b.shares.transfer);
    if transfers >= COPIES_SHARE {
        set.push(with(|c| c.copies = 0.5));
    }
    set
}

/// `changes`, or the standard set for the trace `known` answers for when none is asked.
pub fn asked(known: &dyn Known, cfg: &AnalyzeConfig, changes: &[Costs]) -> Result<Vec<Costs>> {
    match changes.is_empty() {
        true => Ok(standard_set(&verdict_of(known, cfg)?)),
        false => Ok(changes.to_vec()),
    }
}

/// The verdict the replay's bound is set beside, and the standard set chosen by.
fn verdict_of(known: &dyn Known, cfg: &AnalyzeConfig) -> Result<DetectReport> {
    known.verdict(&DetectConfig {
        file_label: cfg.label.clone(),
        step_marker: cfg.step_marker.clone(),
        ..DetectConfig::default()
    })
}

/// Refuses a factor out of range, an empty op name and a class no kernel rule names.
fn check(costs: &Costs) -> Result<()> {
    costs.check_factors()?;
    for (k, _) in &costs.kernel_classes {
        if !KernelCategory::ALL.iter().any(|c| c.key() == k) {
            let keys: Vec<&str> = KernelCategory::ALL.iter().map(|c| c.key()).collect();
            return Err(Error::Usage(format!(
                "no kernel class {k:?}; the classes are {}",
                keys.join(", ")
            )));
        }
    }
    Ok(())
}

/// The steady cycles a replay replayed, summed as they are (a run has a cycle per step, and a
/// replay per change is held at once): how many, their lengths, their union, and how many each
/// bound holds.
#[derive(Debug, Clone, Default)]
pub struct Cycles {
    pub replayed: usize,
    /// Their replayed lengths summed, ns.
    pub length_ns: Ns,
    /// Their replayed spans, each merged into the last when they overlap or touch (steady
    /// cycles follow one another: a few spans).
    spans: Vec<(Ns, Ns)>,
    /// How many cycles each kind of bound holds ([`bound_of`] of each cycle's path).
    pub by_bound: HashMap<BoundKind, usize>,
}

impl Cycles {
    pub fn add(&mut self, (start, end): (Ns, Ns), bound: BoundKind) {
        self.replayed += 1;
        self.length_ns += end - start;
        *self.by_bound.entry(bound).or_default() += 1;
        if end <= start {
            return;
        }
        match self.spans.last_mut() {
            Some(last) if start <= last.1 && last.0 <= end => {
                *last = (last.0.min(start), last.1.max(end));
            }
            _ => self.spans.push((start, end)),
        }
    }

    /// The union of the replayed spans, ns.
    pub fn union_ns(&self) -> Ns {
        IntervalSet::from_unsorted(self.spans.clone()).measure()
    }
}

/// The wall time per step, as Root cause defines it, and the GPU window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepTime {
    /// The union of the steady cycles ÷ their number, µs (null without steady steps).
    pub wall_time_per_step_us: Option<f64>,
    /// First GPU operation's start to the last one's end, µs.
    pub window_us: f64,
    /// The steady cycles' lengths summed, ns (what the critical path's parts sum to).
    pub steps_ns: Ns,
}

/// A part of the critical path: its time per step and share. Read back from JSON (a prediction
/// replayed apart, [`apart`]) without its label, which [`apart::join`] gives again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathPart {
    pub part: Part,
    #[serde(skip_deserializing)]
    pub label: &'static str,
    pub per_step_us: f64,
    pub share: f64,
}

/// A name on the critical path (an NVTX op for host time, a kernel for GPU time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathName {
    pub name: String,
    pub part: Part,
    pub per_step_us: f64,
    pub share: f64,
}

/// The critical path of the steady steps: per step, split by part; the names with most time
/// on it; what bounds the steps by the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    pub steps: usize,
    /// Its length per step, µs: the parts sum to it (to the ns over all steps).
    pub per_step_us: f64,
    /// Its length over all steps, ns.
    pub total_ns: Ns,
    pub parts: Vec<PathPart>,
    pub top_ops: Vec<PathName>,
    pub top_kernels: Vec<PathName>,
    /// The part group with at least half of the path (host: own time, launch calls, other
    /// calls), else mixed.
    pub bound: BoundKind,
    /// How many steps each bound holds, by the step's own path.
    pub steps_by_bound: Vec<(BoundKind, usize)>,
    /// Every name's time on the path over all steps, most first (not serialized: what a
    /// comparison of two traces reads).
    #[serde(skip)]
    pub names: Vec<NameTime>,
}

/// A name's time on the critical path over all steps (host ops by their shape).
#[derive(Debug, Clone, PartialEq)]
pub struct NameTime {
    pub part: Part,
    pub name: String,
    pub ns: Ns,
}

/// One prediction: a change of costs and the step time the replay gives under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub change: String,
    pub costs: Costs,
    pub wall_time_per_step_us: Option<f64>,
    pub window_us: f64,
    /// Of the replayed step time (of the window without steps): negative is faster.
    pub gain_pct: Option<f64>,
    pub bound: BoundKind,
    pub critical_path: CriticalPath,
}

/// What bounds the run: by the critical path of the steady steps, and by the threshold verdict
/// (`detect`'s `bound`), with a note when they differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bounds {
    pub path: BoundKind,
    /// `detect`'s bound over its window (busy shares, the host verdict first).
    pub verdict: Option<BoundKind>,
    /// `detect`'s verdict: YES (host-bound by its thresholds) or NO.
    pub host_verdict: &'static str,
    pub note: Option<String>,
}

/// `whatif`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    pub steps: usize,
    pub bound: Bounds,
    pub measured: StepTime,
    /// The replay of unchanged costs: it must give the measured time.
    pub replayed: StepTime,
    /// (replayed − measured) ÷ measured, percent, of the step time (of the window without steps).
    pub replay_error_pct: f64,
    pub critical_path: CriticalPath,
    pub predicted: Vec<Prediction>,
    /// With a baseline trace (`whatif TARGET --baseline BASE`): where the step time's change
    /// from the baseline lies on the critical path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regression: Option<compare::PathRegression>,
    /// Most graph points held at once by one replay (the fold's bound).
    pub peak_points: usize,
    pub notes: Vec<String>,
}

/// Names listed per table.
const TOP_NAMES: usize = 8;

/// Where the replay takes Root cause's analysis (its steady steps) and the verdict of its trace
/// from: computed over the rows ([`Computed`]), or kept by the caller (the page's open trace,
/// whose Root cause view and verdict ask for the same).
pub trait Known {
    /// Root cause's analysis under `cfg`; its `label` may be another view's (the replay reads
    /// the steps and figures, not the label), so that a kept one is not copied.
    fn analysis(&self, cfg: &AnalyzeConfig) -> Result<Rc<TraceBreakdown>>;
    fn verdict(&self, cfg: &DetectConfig) -> Result<DetectReport>;
}

/// Both computed over the rows.
pub struct Computed<'r>(pub &'r dyn EventRows);

impl Known for Computed<'_> {
    fn analysis(&self, cfg: &AnalyzeConfig) -> Result<Rc<TraceBreakdown>> {
        analyze_rows(self.0, cfg).map(Rc::new)
    }

    fn verdict(&self, cfg: &DetectConfig) -> Result<DetectReport> {
        detect_rows(self.0, cfg)
    }
}

/// The critical path and the predictions of `changes` (the standard set when empty) for the
/// trace `rows`, whose steady steps Root cause finds under `cfg`.
pub fn whatif_rows(rows: &dyn EventRows, cfg: &AnalyzeConfig, changes: &[Costs]) -> Result<WhatIf> {
    whatif_known(rows, cfg, changes, &Computed(rows))
}

/// [`whatif_rows`] with the analysis and the verdict taken from `known`.
pub fn whatif_known(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    changes: &[Costs],
    known: &dyn Known,
) -> Result<WhatIf> {
    let verdict = verdict_of(known, cfg)?;
    let standard;
    let changes = match changes.is_empty() {
        true => {
            standard = standard_set(&verdict);
            &standard[..]
        }
        false => changes,
    };
    replayed_under(rows, cfg, changes, (known, &verdict), None)
}

/// [`whatif_known`] of `changes` (at least one), the rows also handed to `feed`: a helper
/// worker replaying other changes ([`apart::replay_fed_apart`]).
pub fn whatif_feeding(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    changes: &[Costs],
    known: &dyn Known,
    feed: &mut dyn replay::Feed,
) -> Result<WhatIf> {
    let verdict = verdict_of(known, cfg)?;
    replayed_under(rows, cfg, changes, (known, &verdict), Some(feed))
}

/// The measured and replayed step time and the critical path, without predictions: what a
/// comparison of two traces reads ([`compare::regression`]).
pub fn path_rows(rows: &dyn EventRows, cfg: &AnalyzeConfig) -> Result<WhatIf> {
    path_known(rows, cfg, &Computed(rows))
}

/// [`path_rows`] with the analysis and the verdict taken from `known`.
pub fn path_known(rows: &dyn EventRows, cfg: &AnalyzeConfig, known: &dyn Known) -> Result<WhatIf> {
    let verdict = verdict_of(known, cfg)?;
    replayed_under(rows, cfg, &[], (known, &verdict), None)
}

fn replayed_under(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    changes: &[Costs],
    (known, verdict): (&dyn Known, &DetectReport),
    feed: Option<&mut dyn replay::Feed>,
) -> Result<WhatIf> {
    for c in changes {
        check(c)?;
    }
    let b = known.analysis(cfg)?;
    let cycles = &b.steady_cycles;
    let strings = &rows.meta().strings;
    // The unchanged costs first, then each change: one read of the rows for all.
    let mut all: Vec<Costs> = Vec::with_capacity(1 + changes.len());
    all.push(Costs::default());
    all.extend(changes.iter().cloned());
    let mut replays = replay::replay_feeding(rows, cycles, &all, None, feed)?.into_iter();
    let base = replays.next().unwrap_or_default();
    let measured = StepTime {
        wall_time_per_step_us: b.wall_time_per_step_us,
        window_us: us(base.measured_window.map_or(0, |(a, e)| e - a)),
        steps_ns: cycles.iter().map(|c| c.next - c.start).sum(),
    };
    let replayed = step_time(&base);
    let replay_error_pct = match (
        replayed.wall_time_per_step_us,
        measured.wall_time_per_step_us,
    ) {
        (Some(r), Some(m)) => change_pct(r, m),
        _ => change_pct(replayed.window_us, measured.window_us),
    };
    let critical_path = critical_path_of(&base, strings);
    let bound = bounds(verdict, critical_path.bound, !cycles.is_empty());
    let mut predicted = Vec::with_capacity(changes.len());
    let mut peak_points = base.peak_points;
    for (costs, r) in changes.iter().zip(replays) {
        peak_points = peak_points.max(r.peak_points);
        let mut p = prediction(costs, &r, strings);
        p.gain_pct = gain_pct(&p, &replayed);
        predicted.push(p);
    }
    let mut notes = Vec::new();
    if let Some(note) = pageable_note(verdict) {
        notes.push(note);
    }
    if cycles.is_empty() {
        notes.push(format!(
            "no steady steps ({}): the window from the first GPU operation to the last is replayed, and the critical path is not split by step",
            b.warnings.first().map_or("Root cause found none", |w| w.as_str())
        ));
    }
    Ok(WhatIf {
        steps: cycles.len(),
        bound,
        measured,
        replayed,
        replay_error_pct,
        critical_path,
        predicted,
        regression: None,
        peak_points,
        notes,
    })
}

/// When the verdict counts copies with a pageable host side: their calls stage the transfer
/// through pinned memory and return once it is staged or done (NVIDIA's "API synchronization
/// behavior", docs/whatif.md). The replay ends each such call as its copy ends; pinned memory
/// would also let the call return at once, which no factor replays. Whatever the changes: the
/// page's two workers each replay some of them and join the first one's notes.
fn pageable_note(verdict: &DetectReport) -> Option<String> {
    let copies = &verdict.bound.as_ref()?.copies;
    let pageable: u64 = copies.iter().map(|c| c.pageable).sum();
    let all: u64 = copies.iter().map(|c| c.count).sum();
    (pageable > 0).then(|| format!(
        "{pageable} of the {all} copies have a pageable host side: their CUDA calls stage the transfer on the host and end as their copies end, which the replay keeps (a faster copy ends its call sooner); pinned memory would also let those calls return at once, which no factor here replays"
    ))
}

/// The path's bound next to the threshold verdict's; without steady steps there is no path to
/// compare (its bound reads mixed) and no note.
fn bounds(report: &DetectReport, path: BoundKind, steps: bool) -> Bounds {
    let verdict = report.bound.as_ref().map(|b| b.kind);
    let host_verdict = report.verdict;
    let path_host = path == BoundKind::Host;
    // A YES makes the verdict's bound host-bound whatever its busy shares: the thresholds,
    // not the shares, then disagree with the path.
    let note = match (verdict, host_verdict == "YES") {
        _ if !steps => None,
        (_, true) if !path_host => Some(format!(
            "the thresholds call the host a bottleneck, yet the steady steps' critical path is {}: shortening host time buys less than the metrics suggest",
            path.label()
        )),
        (Some(v), _) if v != path => Some(format!(
            "the verdict's busy shares say {} over the whole window, the critical path of the steady steps says {}: a fix pays where the path lies",
            v.label(),
            path.label()
        )),
        (_, false) if path_host => Some(
            "the thresholds do not call the host a bottleneck, yet the steady steps' critical path runs mostly on the host".into(),
        ),
        _ => None,
    };
    Bounds {
        path,
        verdict,
        host_verdict,
        note,
    }
}

/// Where a stretch of the critical path lies: a host thread (`tid`, the `globalTid` as a string:
/// it exceeds 2^53) or a GPU stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathPlace {
    Thread { tid: String },
    Stream { device: u32, stream: u32 },
}

/// One stretch of a step's critical path, in the export's time (ns).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathSegment {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub part: Part,
    pub label: &'static str,
    /// The NVTX op, call or GPU operation the time belongs to (empty: none).
    pub name: String,
    pub place: PathPlace,
}

/// The critical path of one steady step, as the timeline highlights it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepPath {
    /// The step's index among the steady steps (0-based).
    pub step: usize,
    pub steps: usize,
    /// The step's start and the next step's start, ns.
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// In time order; their lengths sum to `end_ns − start_ns`.
    pub segments: Vec<PathSegment>,
}

/// The critical path of steady step `step` of the trace `rows` (Root cause's steps under `cfg`),
/// replayed with unchanged costs, so in the export's own times.
pub fn step_path(rows: &dyn EventRows, cfg: &AnalyzeConfig, step: usize) -> Result<StepPath> {
    let b = analyze_rows(rows, cfg)?;
    let cycles = &b.steady_cycles;
    let Some(cycle) = cycles.get(step) else {
        return Err(Error::Usage(format!(
            "no steady step {step}: the trace has {} (numbered from 0)",
            cycles.len()
        )));
    };
    let r = replay::replay_keeping(rows, cycles, &Costs::default(), Some(step))?;
    let meta = rows.meta();
    let tid = |t: crate::model::ThreadIdx| {
        meta.threads
            .global_tid
            .get(t as usize)
            .map_or_else(String::new, |g| g.to_string())
    };
    let segments = r
        .segments
        .iter()
        .rev()
        .map(|s| PathSegment {
            start_ns: s.start,
            end_ns: s.end,
            part: s.part,
            label: s.part.label(),
            name: match s.name {
                NO_NAME => String::new(),
                n => meta.strings.get(n).to_string(),
            },
            place: match s.place {
                Place::Thread(t) => PathPlace::Thread { tid: tid(t) },
                Place::Stream { device, stream } => PathPlace::Stream { device, stream },
            },
        })
        .collect();
    Ok(StepPath {
        step,
        steps: cycles.len(),
        start_ns: cycle.start,
        end_ns: cycle.next,
        segments,
    })
}

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// The replayed wall time per step (Root cause's rule: the union of the cycles ÷ their number).
/// The prediction of a replay under `costs`, its gain not yet known (it is of the replay of
/// the unchanged costs: [`gain_pct`]).
fn prediction(costs: &Costs, r: &replay::Replayed, strings: &Strings) -> Prediction {
    let t = step_time(r);
    let path = critical_path_of(r, strings);
    Prediction {
        change: costs.label(),
        costs: costs.clone(),
        wall_time_per_step_us: t.wall_time_per_step_us,
        window_us: t.window_us,
        gain_pct: None,
        bound: path.bound,
        critical_path: path,
    }
}

/// `p`'s step time against the replay of the unchanged costs, percent (of the window when
/// neither has steady steps).
fn gain_pct(p: &Prediction, replayed: &StepTime) -> Option<f64> {
    match (p.wall_time_per_step_us, replayed.wall_time_per_step_us) {
        (Some(p), Some(r)) => Some(change_pct(p, r)),
        (None, None) => Some(change_pct(p.window_us, replayed.window_us)),
        _ => None,
    }
}

/// How much `now` differs from `was`, in percent of `was` (0 when `was` is 0).
fn change_pct(now: f64, was: f64) -> f64 {
    if was == 0.0 {
        0.0
    } else {
        100.0 * (now - was) / was
    }
}

fn step_time(r: &replay::Replayed) -> StepTime {
    let cycles = &r.cycles;
    let per_step = (cycles.replayed > 0).then(|| us(cycles.union_ns()) / cycles.replayed as f64);
    StepTime {
        wall_time_per_step_us: per_step,
        window_us: us(r.window.map_or(0, |(a, e)| e - a)),
        steps_ns: cycles.length_ns,
    }
}

fn critical_path_of(r: &replay::Replayed, strings: &Strings) -> CriticalPath {
    let steps = r.cycles.replayed;
    let path = &r.path;
    let steps_n = steps.max(1) as f64;
    let n = steps_n;
    let share = |t: Ns| match path.total {
        0 => 0.0,
        total => t as f64 / total as f64,
    };
    let parts = Part::ALL
        .iter()
        .map(|&p| {
            let t = path.parts.get(p);
            PathPart {
                part: p,
                label: p.label(),
                per_step_us: us(t) / n,
                share: share(t),
            }
        })
        .collect();
    // Host time by the op's shape (its instance numbers as `*`, as Root cause groups ops),
    // GPU time by the operation's name.
    let mut totals: HashMap<(Part, String), Ns> = HashMap::new();
    for (&(part, name), &t) in &path.names {
        if name == NO_NAME {
            continue;
        }
        let text = strings.get(name);
        let key = match part {
            Part::Host => op_shape(text).into_owned(),
            _ => text.to_string(),
        };
        *totals.entry((part, key)).or_default() += t;
    }
    let mut all: Vec<NameTime> = totals
        .into_iter()
        .map(|((part, name), ns)| NameTime { part, name, ns })
        .collect();
    all.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.part.cmp(&b.part))
            .then(a.name.cmp(&b.name))
    });
    let top = |host: bool| {
        all.iter()
            .filter(|n| match host {
                true => n.part == Part::Host,
                false => matches!(
                    n.part,
                    Part::Compute | Part::Communication | Part::Transfers
                ),
            })
            .take(TOP_NAMES)
            .map(|n| PathName {
                name: n.name.clone(),
                part: n.part,
                per_step_us: us(n.ns) / steps_n,
                share: share(n.ns),
            })
            .collect::<Vec<_>>()
    };
    let mut steps_by_bound: Vec<(BoundKind, usize)> =
        r.cycles.by_bound.iter().map(|(&k, &n)| (k, n)).collect();
    steps_by_bound.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    CriticalPath {
        steps,
        per_step_us: us(path.total) / n,
        total_ns: path.total,
        parts,
        top_ops: top(true),
        top_kernels: top(false),
        bound: bound_of(&path.parts),
        steps_by_bound,
        names: all,
    }
}

/// What bounds a path: the group of parts holding at least half of it, else mixed.
pub fn bound_of(parts: &PartTimes) -> BoundKind {
    let t = |ps: &[Part]| -> Ns { ps.iter().map(|&p| parts.get(p)).sum() };
    let total = parts.total();
    let groups = [
        (BoundKind::Host, t(&[Part::Host, Part::Launch, Part::Calls])),
        (BoundKind::Compute, t(&[Part::Compute])),
        (BoundKind::Communication, t(&[Part::Communication])),
        (BoundKind::Transfer, t(&[Part::Transfers])),
    ];
    groups
        .into_iter()
        .find(|&(_, g)| total > 0 && 2 * g >= total)
        .map_or(BoundKind::Mixed, |(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cycles summed as they come give the count, the lengths and the union the whole list
    /// of spans gives, whatever their order (overlapping, touching, apart, empty, out of order).
    #[test]
    fn cycles_summed_as_they_come_give_the_union_of_every_span() {
        let spans = [
            (0, 10),
            (10, 25),
            (20, 30),
            (40, 50),
            (35, 41),
            (60, 60),
            (70, 65),
            (5, 12),
            (100, 130),
        ];
        let mut cycles = Cycles::default();
        for (i, &span) in spans.iter().enumerate() {
            let bound = [BoundKind::Host, BoundKind::Compute][i % 2];
            cycles.add(span, bound);
        }
        assert_eq!(cycles.replayed, spans.len());
        assert_eq!(
            cycles.length_ns,
            spans.iter().map(|(s, e)| e - s).sum::<Ns>()
        );
        let union = IntervalSet::from_unsorted(spans.to_vec()).measure();
        assert_eq!(cycles.union_ns(), union);
        assert_eq!(union, 30 + 15 + 30, "the oracle: [0,30) [35,50) [100,130)");
        assert_eq!(cycles.by_bound.get(&BoundKind::Host), Some(&5));
        assert_eq!(cycles.by_bound.get(&BoundKind::Compute), Some(&4));
    }
}
