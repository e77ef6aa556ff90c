//! Baseline vs target (reference §8.4): per-step deltas, per-op statuses, the conclusion and the
//! comparability check.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::breakdown::{OpRow, PerName, TraceBreakdown};
use super::handoff::{Criteria, Handoff, HandoffOp};
use super::workload::comparability;
use crate::model::Ns;
use crate::profile::Profile;

/// Above this growth an op is a REGRESSION (percent).
pub const REGRESSION_PCT: f64 = 50.0;
/// Below this change an op is IMPROVED (percent).
pub const IMPROVED_PCT: f64 = -30.0;
/// Regression sources listed in the summary.
pub const TOP_SOURCES: usize = 5;

/// How an op changed (first matching rule wins: NEW, REMOVED, REGRESSION, IMPROVED).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    #[serde(rename = "NEW")]
    New,
    #[serde(rename = "REMOVED")]
    Removed,
    #[serde(rename = "REGRESSION")]
    Regression,
    #[serde(rename = "IMPROVED")]
    Improved,
    #[serde(rename = "unchanged")]
    Unchanged,
}

impl Status {
    /// The reference's rule on per-step values (`b`, `t` ≥ 0).
    pub fn of(b: f64, t: f64) -> Status {
        if b == 0.0 {
            return Status::New;
        }
        if t == 0.0 {
            return Status::Removed;
        }
        let pct = (t - b) / b * 100.0;
        if pct > REGRESSION_PCT {
            Status::Regression
        } else if pct < IMPROVED_PCT {
            Status::Improved
        } else {
            Status::Unchanged
        }
    }

    /// The JSON value (`unchanged` rather than the reference's empty label).
    pub fn name(self) -> &'static str {
        match self {
            Status::Unchanged => "unchanged",
            s => s.label(),
        }
    }

    /// The label the reference prints (empty when unchanged).
    pub fn label(self) -> &'static str {
        match self {
            Status::New => "NEW",
            Status::Removed => "REMOVED",
            Status::Regression => "REGRESSION",
            Status::Improved => "IMPROVED",
            Status::Unchanged => "",
        }
    }
}

/// A figure in both traces.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Delta {
    pub baseline: Option<f64>,
    pub target: Option<f64>,
    /// `(target − baseline) / baseline · 100`; the reference prints 0 for a zero baseline,
    /// `standard` gives null.
    pub delta_pct: Option<f64>,
    /// `target − baseline` in the figure's unit.
    pub delta: Option<f64>,
}

impl Delta {
    pub(super) fn new(baseline: Option<f64>, target: Option<f64>, profile: Profile) -> Delta {
        let delta = baseline.zip(target).map(|(b, t)| t - b);
        let delta_pct = baseline.zip(delta).and_then(|(b, d)| match profile {
            _ if b != 0.0 => Some(d / b * 100.0),
            Profile::TrtllmSkill => Some(0.0),
            Profile::Standard => None,
        });
        Delta {
            baseline,
            target,
            delta_pct,
            delta,
        }
    }
}

/// One row of the NVTX, kernel or API table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpDelta {
    pub name: String,
    pub baseline_us_per_step: f64,
    pub target_us_per_step: f64,
    pub delta_us: f64,
    pub status: Status,
    /// Null when the op is new (no baseline).
    pub delta_pct: Option<f64>,
    /// The op's longest instance in the target (else in the baseline, for an op the target
    /// lost), where the page opens the timeline; null for kernel and API rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longest: Option<OpInstance>,
    /// NVTX ops (`standard`): self time per step (µs) in both traces, 0 where the op is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_self_us_per_step: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_self_us_per_step: Option<f64>,
    /// `target_self_us_per_step − baseline_self_us_per_step`: what the table sorts by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_delta_us: Option<f64>,
    /// NVTX ops (`standard`): the parent op and the depth (the target's, else the baseline's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// NVTX ops grouped by shape: how many names (instances) the op groups in each trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<Instances>,
    /// NVTX ops grouped by shape: the names grouped, each in both traces (by target time, then
    /// baseline time, then name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberDelta>,
}

/// How many names an op grouped by shape holds in each trace, and in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Instances {
    pub baseline: usize,
    pub target: usize,
    pub common: usize,
}

/// One name of an op grouped by shape, in both traces (µs per step; 0 where absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberDelta {
    pub name: String,
    pub baseline_us_per_step: f64,
    pub target_us_per_step: f64,
    pub delta_us: f64,
}

/// One instance of an op in one of the two traces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpInstance {
    /// `"baseline"` or `"target"`: whose clock `start_ns`/`end_ns` are on.
    pub trace: &'static str,
    pub start_ns: Ns,
    pub end_ns: Ns,
}

/// Names each row's longest instance from the two traces' op rows (the target's first).
fn with_longest(mut rows: Vec<OpDelta>, b: &[OpRow], t: &[OpRow]) -> Vec<OpDelta> {
    let (b_ops, t_ops) = (first_by_name(b, |o| &o.name), first_by_name(t, |o| &o.name));
    let find = |ops: &HashMap<&str, &OpRow>, name: &str| ops.get(name)?.longest;
    for r in &mut rows {
        let (side, span) = match find(&t_ops, &r.name) {
            Some(w) => ("target", Some(w)),
            None => ("baseline", find(&b_ops, &r.name)),
        };
        r.longest = span.map(|w| OpInstance {
            trace: side,
            start_ns: w.start_ns,
            end_ns: w.end_ns,
        });
    }
    rows
}

/// The comparison (`C` of the JSON), then added keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub wall_time_per_step_us: Delta,
    /// Every op of either trace, by |Δ| descending (name ascending on ties).
    pub nvtx: Vec<OpDelta>,
    pub kernels: Vec<OpDelta>,
    pub api: Vec<OpDelta>,
    pub kernels_per_step: Delta,
    pub conclusion: String,
    pub comparability: Vec<String>,
    // ---- added keys ----
    /// `inter-step host overhead`, `step execution`, or in `standard` also `GPU execution` /
    /// `launch count`; null when the figures are missing.
    pub primary_cause: Option<&'static str>,
    /// Both traces have a benchmark phase (else the reference stops: "Cannot compare").
    pub benchmark_found: bool,
    pub iterations: Delta,
    pub iteration_wall_us: Delta,
    pub iteration_gap_avg_us: Delta,
    pub iteration_gap_p50_us: Delta,
    pub step_duration_us: Delta,
    pub inter_step_gap_p50_us: Delta,
    pub gpu_time_per_step_us: Delta,
    /// Launch-API time per step (µs; `standard`'s launch-count attribution).
    pub launch_api_time_per_step_us: Delta,
    /// NVTX ops that grew, largest growth first (the reference prints five).
    pub top_regressions: Vec<OpDelta>,
    pub handoff: Handoff,
    /// What the two captures cover differently, measured on the NVTX ops (`standard`): other
    /// instances (layers, blocks) of ops both have, or much of one's op time in ops the other
    /// lacks (another phase). Shown with the comparability warnings; a gate does not refuse on
    /// it, since the steps still compare.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coverage: Vec<String>,
    /// How the NVTX table is built, as its note says (`standard`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvtx_note: Option<String>,
    /// The whole-window comparison (`standard`): the conclusion and hand-off come from it when
    /// steps could not be compared (`window.note` then says so).
    pub window: Option<super::window::WindowComparison>,
    /// GPU time per kernel class in both traces (`standard` only; absent from
    /// `trtllm-skill`'s JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_classes: Option<super::classes::ClassComparison>,
}

/// Compares two breakdowns made with the same profile.
pub fn compare(b: &TraceBreakdown, t: &TraceBreakdown, profile: Profile) -> Comparison {
    let d = |x: Option<f64>, y: Option<f64>| Delta::new(x, y, profile);
    let iso = |f: fn(&TraceBreakdown) -> f64| {
        let g = |x: &TraceBreakdown| x.benchmark_found().then(|| f(x));
        d(g(b), g(t))
    };
    let nvtx = with_tree(
        with_longest(
            rows(&b.nvtx_per_step_us, &t.nvtx_per_step_us),
            &b.nvtx_ops,
            &t.nvtx_ops,
        ),
        &b.nvtx_ops,
        &t.nvtx_ops,
    );
    let top_regressions: Vec<OpDelta> = regressions(&nvtx);
    let mut c = Comparison {
        wall_time_per_step_us: d(b.wall_time_per_step_us, t.wall_time_per_step_us),
        kernels: rows(&b.kernel_time_per_step_us, &t.kernel_time_per_step_us),
        api: rows(&b.api_time_per_step_us, &t.api_time_per_step_us),
        kernels_per_step: d(b.kernels_per_step, t.kernels_per_step),
        conclusion: String::new(),
        comparability: comparability(&b.workload, &t.workload),
        coverage: coverage(&nvtx),
        nvtx_note: b.nvtx_note.clone().or_else(|| t.nvtx_note.clone()),
        primary_cause: None,
        benchmark_found: b.benchmark_found() && t.benchmark_found(),
        iterations: d(
            b.iterations.map(|n| n as f64),
            t.iterations.map(|n| n as f64),
        ),
        iteration_wall_us: iso(|x| x.isolation.iteration_wall_us.avg),
        iteration_gap_avg_us: iso(|x| x.isolation.iteration_gap_us.avg),
        iteration_gap_p50_us: iso(|x| x.isolation.iteration_gap_us.p50),
        step_duration_us: d(b.step_duration_avg_us(), t.step_duration_avg_us()),
        inter_step_gap_p50_us: d(
            b.inter_step_gap_us.map(|g| g.p50),
            t.inter_step_gap_us.map(|g| g.p50),
        ),
        gpu_time_per_step_us: d(b.gpu_time_per_step_us, t.gpu_time_per_step_us),
        launch_api_time_per_step_us: d(launch_api_time(b), launch_api_time(t)),
        handoff: handoff(&top_regressions, b, t),
        top_regressions,
        nvtx,
        window: None,
        kernel_classes: None,
    };
    let (cause, text) = conclusion(&c, b, t, profile);
    c.primary_cause = cause;
    c.conclusion = text;
    if cause.is_some()
        && let Some(op) = c
            .top_regressions
            .first()
            .filter(|r| r.self_delta_us.is_some())
    {
        c.conclusion.push_str(&format!(
            " The NVTX op whose own (self) time grew most: {} ({:+.1} µs per step).",
            op.name,
            growth(op)
        ));
    }
    // The window comparison is always given in `standard`; it answers when steps did not.
    if profile == Profile::Standard
        && let (Some(bw), Some(tw)) = (&b.window, &t.window)
    {
        let per_step = c.benchmark_found
            && b.wall_time_per_step_us.is_some()
            && t.wall_time_per_step_us.is_some();
        let without = if per_step {
            String::new()
        } else {
            missing(b, t)
        };
        let w = super::window::compare_windows(bw, tw, &without);
        if !per_step {
            c.primary_cause = w.primary_cause;
            c.conclusion = w.conclusion.clone();
            c.handoff = window_handoff(&w, b, t);
        }
        c.window = Some(w);
    }
    with_kernel_classes(&mut c, b, t);
    c
}

/// The comparison per kernel class (per step when the comparison is, else over the whole
/// windows); when GPU execution grew, the conclusion names the class that grew most.
fn with_kernel_classes(c: &mut Comparison, b: &TraceBreakdown, t: &TraceBreakdown) {
    let (Some(bk), Some(tk)) = (&b.kernel_classes, &t.kernel_classes) else {
        return;
    };
    let per_step = !c.window.as_ref().is_some_and(|w| w.replaces_steps);
    c.kernel_classes = super::classes::compare_classes(bk, tk, per_step);
    if c.primary_cause == Some("GPU execution")
        && let Some(sentence) = c.kernel_classes.as_ref().and_then(|k| k.sentence())
    {
        c.conclusion = format!("{} {sentence}", c.conclusion);
    }
}

/// The figure a regression gate reads of a comparison: time per unit of work in both traces,
/// and by how much the target's grew.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RegressionFigure {
    /// `wall time per step` (µs), or without per-step figures `time per kernel launched` over
    /// the whole kernel window (µs, the inverse of the window's kernels per second).
    pub figure: &'static str,
    pub baseline: f64,
    pub target: f64,
    /// `(target − baseline) / baseline · 100`: positive when the target is slower.
    pub regressed_pct: f64,
}

impl Comparison {
    /// What a gate compares: wall time per step when both traces have steady steps, else the
    /// window comparison's time per kernel launched; `None` when neither was measured (the
    /// conclusion says why).
    pub fn regression_figure(&self) -> Option<RegressionFigure> {
        let grew = |figure, b: f64, t: f64| {
            (b > 0.0 && b.is_finite() && t.is_finite()).then(|| RegressionFigure {
                figure,
                baseline: b,
                target: t,
                regressed_pct: (t - b) / b * 100.0,
            })
        };
        let wall = &self.wall_time_per_step_us;
        if self.benchmark_found
            && let (Some(b), Some(t)) = (wall.baseline, wall.target)
        {
            return grew("wall time per step", b, t);
        }
        let w = self.window.as_ref().filter(|w| w.replaces_steps)?;
        let per_kernel =
            |kernels_per_s: Option<f64>| kernels_per_s.filter(|&k| k > 0.0).map(|k| 1e6 / k);
        grew(
            "time per kernel launched",
            per_kernel(w.kernels_per_s.baseline)?,
            per_kernel(w.kernels_per_s.target)?,
        )
    }

    /// Why the two traces cannot be held to a gate: each workload difference
    /// ([`Comparison::comparability`]), or the conclusion when no figure was measured in both.
    pub fn incomparable(&self) -> Vec<String> {
        let mut why = self.comparability.clone();
        if self.regression_figure().is_none() {
            why.push(self.conclusion.clone());
        }
        why
    }
}

/// The hand-off of a window comparison: the NVTX ops that grew per second of window, else the
/// kernels that did.
fn window_handoff(
    w: &super::window::WindowComparison,
    b: &TraceBreakdown,
    t: &TraceBreakdown,
) -> Handoff {
    let nvtx = regressions(&w.nvtx);
    let top = if nvtx.is_empty() {
        regressions(&w.kernels)
    } else {
        nvtx
    };
    handoff(&top, b, t)
}

/// Union of names, by |Δ| descending then name; missing values are 0.
pub(super) fn rows(b: &PerName, t: &PerName) -> Vec<OpDelta> {
    let names: BTreeSet<&str> = b.0.iter().chain(&t.0).map(|(n, _)| n.as_str()).collect();
    let (b_values, t_values) = (first_by_name(&b.0, |e| &e.0), first_by_name(&t.0, |e| &e.0));
    let value = |m: &HashMap<&str, &(String, f64)>, name: &str| m.get(name).map_or(0.0, |e| e.1);
    let mut out: Vec<OpDelta> = names
        .into_iter()
        .map(|name| {
            let bv = value(&b_values, name);
            let tv = value(&t_values, name);
            OpDelta {
                name: name.to_string(),
                baseline_us_per_step: bv,
                target_us_per_step: tv,
                delta_us: tv - bv,
                status: Status::of(bv, tv),
                delta_pct: (bv > 0.0).then(|| (tv - bv) / bv * 100.0),
                longest: None,
                baseline_self_us_per_step: None,
                target_self_us_per_step: None,
                self_delta_us: None,
                parent: None,
                depth: None,
                instances: None,
                members: Vec::new(),
            }
        })
        .collect();
    // Stable sort over name-ordered rows: ties keep name order.
    out.sort_by(|x, y| y.delta_us.abs().total_cmp(&x.delta_us.abs()));
    out
}

/// Each name's first entry, looked up by name: a trace's per-name lists run to one name per
/// step (a window's NVTX ops name every step), where a scan per name is quadratic.
fn first_by_name<T>(entries: &[T], name: impl Fn(&T) -> &String) -> HashMap<&str, &T> {
    let mut out: HashMap<&str, &T> = HashMap::with_capacity(entries.len());
    for e in entries {
        out.entry(name(e).as_str()).or_insert(e);
    }
    out
}

/// Rows that grew, largest growth first (every row, not only the printed 20): by self time
/// where the rows carry it (`standard` NVTX ops: a parent does not grow because its child did),
/// else by time.
pub(super) fn regressions(rows: &[OpDelta]) -> Vec<OpDelta> {
    let mut grew: Vec<OpDelta> = rows.iter().filter(|r| growth(r) > 0.0).cloned().collect();
    grew.sort_by(|x, y| growth(y).total_cmp(&growth(x)));
    grew
}

/// The change a row is ranked by: its self time's where it has one, else its time's.
fn growth(r: &OpDelta) -> f64 {
    r.self_delta_us.unwrap_or(r.delta_us)
}

/// Fills the NVTX rows' self times, parents, depths, instances and members from the two
/// traces' op rows (`standard`; rows without self time are left as they are), and sorts them
/// by |self-time change| (then as they were: by |change|, then name).
fn with_tree(mut rows: Vec<OpDelta>, b: &[OpRow], t: &[OpRow]) -> Vec<OpDelta> {
    if !b.iter().chain(t).any(|o| o.self_us_per_step.is_some()) {
        return rows;
    }
    let (b_ops, t_ops) = (first_by_name(b, |o| &o.name), first_by_name(t, |o| &o.name));
    for r in &mut rows {
        let (bo, to) = (b_ops.get(r.name.as_str()), t_ops.get(r.name.as_str()));
        let own =
            |o: Option<&&OpRow>| o.map_or(0.0, |o| o.self_us_per_step.unwrap_or(o.us_per_step));
        let (bs, ts) = (own(bo), own(to));
        r.baseline_self_us_per_step = Some(bs);
        r.target_self_us_per_step = Some(ts);
        r.self_delta_us = Some(ts - bs);
        r.status = self_status(bo.is_some(), to.is_some(), bs, ts);
        let side = to.or(bo);
        r.parent = side.and_then(|o| o.parent.clone());
        r.depth = side.and_then(|o| o.depth);
        let names = |o: Option<&&OpRow>| -> Vec<(String, f64)> {
            match o {
                Some(o) if !o.members.is_empty() => o
                    .members
                    .iter()
                    .map(|m| (m.name.clone(), m.us_per_step))
                    .collect(),
                Some(o) => vec![(o.name.clone(), o.us_per_step)],
                None => Vec::new(),
            }
        };
        let grouped =
            bo.is_some_and(|o| !o.members.is_empty()) || to.is_some_and(|o| !o.members.is_empty());
        if grouped {
            let (bm, tm) = (names(bo), names(to));
            let mut all: Vec<&str> = bm.iter().chain(&tm).map(|(n, _)| n.as_str()).collect();
            all.sort_unstable();
            all.dedup();
            let value = |v: &[(String, f64)], n: &str| v.iter().find(|(m, _)| m == n).map(|e| e.1);
            r.instances = Some(Instances {
                baseline: bm.len(),
                target: tm.len(),
                common: all
                    .iter()
                    .filter(|n| value(&bm, n).is_some() && value(&tm, n).is_some())
                    .count(),
            });
            let mut members: Vec<MemberDelta> = all
                .into_iter()
                .map(|n| {
                    let (bv, tv) = (value(&bm, n).unwrap_or(0.0), value(&tm, n).unwrap_or(0.0));
                    MemberDelta {
                        name: n.to_string(),
                        baseline_us_per_step: bv,
                        target_us_per_step: tv,
                        delta_us: tv - bv,
                    }
                })
                .collect();
            members.sort_by(|x, y| {
                y.target_us_per_step
                    .total_cmp(&x.target_us_per_step)
                    .then(y.baseline_us_per_step.total_cmp(&x.baseline_us_per_step))
                    .then(x.name.cmp(&y.name))
            });
            r.members = members;
        }
    }
    // Stable: ties keep the |Δ| then name order.
    rows.sort_by(|x, y| growth(y).abs().total_cmp(&growth(x).abs()));
    rows
}

/// The status of an NVTX op by its self time (`standard`): NEW or REMOVED only for an op one
/// trace lacks; otherwise the reference's thresholds on the self time (an op whose own time is
/// nil in the baseline regresses if it has any in the target).
fn self_status(in_baseline: bool, in_target: bool, bs: f64, ts: f64) -> Status {
    match (in_baseline, in_target) {
        (false, _) => Status::New,
        (_, false) => Status::Removed,
        _ if bs == 0.0 && ts > 0.0 => Status::Regression,
        _ if bs == 0.0 => Status::Unchanged,
        _ if ts == 0.0 => Status::Improved,
        _ => Status::of(bs, ts),
    }
}

/// A shape present in both traces whose names differ, as the coverage warning lists it.
const COVERAGE_EXAMPLES: usize = 3;
/// Ops found in one trace only holding at least this share of that trace's NVTX self time per
/// step mean the captures cover different work (another phase).
pub const ONE_SIDED_SHARE: f64 = 0.25;

/// The coverage warnings of the NVTX rows ([`Comparison::coverage`]), measured: the ops both
/// traces have whose instances differ, and the share of each trace's NVTX self time in ops
/// the other lacks.
fn coverage(nvtx: &[OpDelta]) -> Vec<String> {
    let mut out = Vec::new();
    if nvtx.iter().all(|r| r.self_delta_us.is_none()) {
        return out;
    }
    let mut differ: Vec<(&OpDelta, Instances)> = nvtx
        .iter()
        .filter_map(|r| r.instances.map(|i| (r, i)))
        .filter(|(_, i)| {
            i.baseline > 0 && i.target > 0 && (i.common < i.baseline || i.common < i.target)
        })
        .collect();
    if !differ.is_empty() {
        differ.sort_by(|x, y| {
            let missing = |i: &Instances| i.baseline + i.target - 2 * i.common;
            missing(&y.1)
                .cmp(&missing(&x.1))
                .then(x.0.name.cmp(&y.0.name))
        });
        let examples: Vec<String> = differ
            .iter()
            .take(COVERAGE_EXAMPLES)
            .map(|(r, i)| {
                format!(
                    "{} ({} in the baseline, {} in the target, {} in both)",
                    r.name, i.baseline, i.target, i.common
                )
            })
            .collect();
        out.push(format!(
            "the captures cover different instances (layers, blocks) of {} op{} both traces have: {}{}; their per-step times compare different parts of the model",
            differ.len(),
            if differ.len() == 1 { "" } else { "s" },
            examples.join("; "),
            if differ.len() > COVERAGE_EXAMPLES { "; …" } else { "" }
        ));
    }
    let side = |own: fn(&OpDelta) -> f64, other: fn(&OpDelta) -> f64| {
        let total: f64 = nvtx.iter().map(own).sum();
        let alone: Vec<&OpDelta> = nvtx
            .iter()
            .filter(|r| own(r) > 0.0 && other(r) == 0.0)
            .collect();
        let share = alone.iter().map(|r| own(r)).sum::<f64>() / total;
        (share.is_finite() && share >= ONE_SIDED_SHARE).then_some((share, alone))
    };
    let bv = |r: &OpDelta| {
        r.baseline_self_us_per_step
            .unwrap_or(r.baseline_us_per_step)
    };
    let tv = |r: &OpDelta| r.target_self_us_per_step.unwrap_or(r.target_us_per_step);
    for (label, found) in [("baseline", side(bv, tv)), ("target", side(tv, bv))] {
        if let Some((share, alone)) = found {
            let names: Vec<&str> = alone
                .iter()
                .take(COVERAGE_EXAMPLES)
                .map(|r| r.name.as_str())
                .collect();
            out.push(format!(
                "{:.0}% of the {label}'s NVTX self time per step is in {} op{} the other trace lacks ({}{}): the captures may cover different phases or work",
                share * 100.0,
                alone.len(),
                if alone.len() == 1 { "" } else { "s" },
                names.join(", "),
                if alone.len() > COVERAGE_EXAMPLES { ", …" } else { "" }
            ));
        }
    }
    out
}

/// Time per step in kernel-launch API calls (`cudaLaunchKernel*`, `cuLaunchKernel*`, graph launches).
fn launch_api_time(b: &TraceBreakdown) -> Option<f64> {
    b.wall_time_per_step_us?;
    Some(
        b.api_ops
            .iter()
            .filter(|r| {
                crate::names::launch::is_launch_api(
                    &r.name,
                    crate::names::launch::LaunchApis::AllVersioned,
                )
            })
            .map(|r| r.us_per_step)
            .sum(),
    )
}

fn handoff(top: &[OpDelta], b: &TraceBreakdown, t: &TraceBreakdown) -> Handoff {
    // Self time where the rows carry it (`standard` NVTX ops).
    let ops = top
        .iter()
        .map(|r| {
            HandoffOp::new(
                &r.name,
                r.target_self_us_per_step.unwrap_or(r.target_us_per_step),
                Some(growth(r)),
            )
        })
        .collect();
    let seen_prep = b
        .nvtx_per_step_us
        .0
        .iter()
        .chain(&t.nvtx_per_step_us.0)
        .any(|(n, _)| n.contains("_prepare_tp_inputs"));
    let self_time = top.iter().any(|r| r.target_self_us_per_step.is_some());
    Handoff::new(
        ops,
        true,
        seen_prep,
        Criteria {
            wall_time_per_step_us: t.wall_time_per_step_us,
            inter_step_gap_p50_us: t.inter_step_gap_us.map(|g| g.p50),
            kernels_per_step: t.kernels_per_step,
        },
    )
    .measured_as(self_time)
}

/// The conclusion line and its cause.
fn conclusion(
    c: &Comparison,
    b: &TraceBreakdown,
    t: &TraceBreakdown,
    profile: Profile,
) -> (Option<&'static str>, String) {
    if !c.benchmark_found {
        return (
            None,
            "Cannot compare: benchmark phase not found in one or both traces.".into(),
        );
    }
    let wall = c.wall_time_per_step_us;
    let (Some(wall_delta), Some(dur), Some(gap)) = (
        wall.delta,
        c.step_duration_us.delta,
        c.inter_step_gap_p50_us.delta,
    ) else {
        return (
            None,
            format!(
                "Cannot compare per step: no steady-state steps in {}.",
                missing(b, t)
            ),
        );
    };
    match profile {
        Profile::TrtllmSkill => reference_conclusion(gap, dur),
        Profile::Standard => standard_conclusion(c, wall_delta, dur, gap),
    }
}

fn missing(b: &TraceBreakdown, t: &TraceBreakdown) -> String {
    match (
        b.wall_time_per_step_us.is_none(),
        t.wall_time_per_step_us.is_none(),
    ) {
        (true, true) => format!("{} and {}", b.label, t.label),
        (true, false) => b.label.clone(),
        _ => t.label.clone(),
    }
}

/// Reference §8.4: the inter-step gap (p50) grew more than the step duration (mean), or not.
fn reference_conclusion(gap_delta: f64, dur_delta: f64) -> (Option<&'static str>, String) {
    if gap_delta > dur_delta {
        (
            Some("inter-step host overhead"),
            "Regression is primarily in INTER-STEP HOST OVERHEAD. The gap between forward steps increased more than step execution.".into(),
        )
    } else {
        (
            Some("step execution"),
            "Regression is primarily in STEP EXECUTION TIME. Forward step duration increased more than inter-step gap.".into(),
        )
    }
}

/// `standard`: the same split, and inside a step, launch-call time against GPU busy time.
fn standard_conclusion(
    c: &Comparison,
    wall: f64,
    dur: f64,
    gap: f64,
) -> (Option<&'static str>, String) {
    let pct = c
        .wall_time_per_step_us
        .delta_pct
        .map_or_else(String::new, |p| format!(" ({p:+.1}%)"));
    let launch = c.launch_api_time_per_step_us.delta.unwrap_or(0.0);
    let gpu = c.gpu_time_per_step_us.delta.unwrap_or(0.0);
    let kernels = match (c.kernels_per_step.baseline, c.kernels_per_step.target) {
        (Some(b), Some(t)) => format!("; kernels per step {b:.1} → {t:.1}"),
        _ => String::new(),
    };
    let detail = format!(
        "inter-step gap p50 {gap:+.1} µs, step duration {dur:+.1} µs (launch calls {launch:+.1} µs, GPU busy {gpu:+.1} µs per step{kernels})"
    );
    if wall <= 0.0 {
        return (
            None,
            format!(
                "No per-step regression: wall time per step changed by {wall:+.1} µs{pct}: {detail}."
            ),
        );
    }
    let cause = standard_cause(gap, dur, launch, gpu);
    let what = match cause {
        "inter-step host overhead" => {
            "INTER-STEP HOST OVERHEAD: the host work between forward steps grew more than the steps"
        }
        "launch count" => {
            "KERNEL LAUNCHES: the steps grew, and more of it in launch calls than in GPU busy time"
        }
        _ => "GPU EXECUTION: the steps grew, and more of it in GPU busy time than in launch calls",
    };
    (
        Some(cause),
        format!("Wall time per step rose by {wall:+.1} µs{pct}; primarily {what}: {detail}."),
    )
}

/// Where a regression sits: between steps (gap p50 grew more than the mean step), else inside
/// the steps, in launch calls or in GPU busy time, whichever grew more per step.
fn standard_cause(gap: f64, dur: f64, launch: f64, gpu: f64) -> &'static str {
    if gap > dur {
        "inter-step host overhead"
    } else if launch >= gpu {
        "launch count"
    } else {
        "GPU execution"
    }
}

#[cfg(test)]
mod tests;
