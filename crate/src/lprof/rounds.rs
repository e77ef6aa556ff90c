//! Rounds compared in order (the skill's VALIDATE and REPORT phases): per function and per line,
//! before → after, the delta and a status; where the bottleneck moved; the improvement over
//! all rounds; and the stopping rule (less than 5 % over the last two rounds).

use serde::Serialize;

use super::{Function, Round};
use crate::lprof::classify::Kind;

/// A change smaller than this share of the time before is UNCHANGED (percent).
pub const CHANGE_PCT: f64 = 5.0;

/// The skill's "diminishing returns": less than this improvement over the last two rounds (%).
pub const STOP_PCT: f64 = 5.0;

/// How a function or line changed from one round to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    New,
    Removed,
    Improved,
    Regression,
    Unchanged,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::New => "NEW",
            Status::Removed => "REMOVED",
            Status::Improved => "IMPROVED",
            Status::Regression => "REGRESSION",
            Status::Unchanged => "UNCHANGED",
        }
    }

    fn of(before: Option<f64>, after: Option<f64>) -> Status {
        match (before, after) {
            (None, _) => Status::New,
            (_, None) => Status::Removed,
            (Some(b), Some(a)) => {
                let pct = if b > 0.0 {
                    (a - b) / b * 100.0
                } else if a > 0.0 {
                    f64::INFINITY
                } else {
                    0.0
                };
                if pct < -CHANGE_PCT {
                    Status::Improved
                } else if pct > CHANGE_PCT {
                    Status::Regression
                } else {
                    Status::Unchanged
                }
            }
        }
    }
}

/// All rounds compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Round i → round i + 1.
    pub steps: Vec<Step>,
    /// 1 − Π(after/before) over the steps, each over the functions both rounds profiled (%).
    pub cumulative_improvement_pct: Option<f64>,
    /// Profiled time per round (sum of function totals), for the plot.
    pub round_totals_s: Vec<f64>,
    pub stopping: Stopping,
}

/// One round against the next.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub from: usize,
    pub to: usize,
    /// Time of the functions both rounds profiled, before and after.
    pub common_before_s: f64,
    pub common_after_s: f64,
    /// (before − after) / before over those functions (%); positive = faster.
    pub improvement_pct: Option<f64>,
    pub functions: Vec<FunctionDelta>,
    /// The lines that changed most, by absolute delta.
    pub lines: Vec<LineDelta>,
    /// "fixing X revealed Y": the hottest line changed after the old one improved.
    pub shift: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    pub function: String,
    pub before_s: Option<f64>,
    pub after_s: Option<f64>,
    pub delta_s: f64,
    pub delta_pct: Option<f64>,
    pub status: Status,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineDelta {
    pub function: String,
    pub text: String,
    pub line_before: Option<u32>,
    pub line_after: Option<u32>,
    pub before_s: Option<f64>,
    pub after_s: Option<f64>,
    pub delta_s: f64,
    pub delta_pct: Option<f64>,
    pub status: Status,
    pub kind: Option<Kind>,
}

/// Whether to stop, by the skill's rules 2 and 3.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stopping {
    /// Improvement over the last two comparisons (needs three rounds), %.
    pub last_two_pct: Option<f64>,
    pub diminishing_returns: bool,
    /// The hottest lines of the last round are all COMPUTE: nothing left to remove.
    pub only_compute_left: bool,
    pub advice: String,
}

pub fn compare(rounds: &[Round], top: usize) -> Comparison {
    let steps: Vec<Step> = rounds
        .windows(2)
        .enumerate()
        .map(|(i, w)| step(i, &w[0], &w[1], top))
        .collect();
    let ratios: Vec<f64> = steps
        .iter()
        .filter(|s| s.common_before_s > 0.0)
        .map(|s| s.common_after_s / s.common_before_s)
        .collect();
    let cumulative_improvement_pct =
        (!ratios.is_empty()).then(|| (1.0 - ratios.iter().product::<f64>()) * 100.0);
    let stopping = stopping(&steps, rounds.last());
    Comparison {
        steps,
        cumulative_improvement_pct,
        round_totals_s: rounds.iter().map(|r| r.total_s).collect(),
        stopping,
    }
}

fn step(i: usize, before: &Round, after: &Round, top: usize) -> Step {
    let mut functions = Vec::new();
    let mut lines = Vec::new();
    let (mut common_before_s, mut common_after_s) = (0.0, 0.0);
    for b in &before.functions {
        let a = after.functions.iter().find(|a| a.key == b.key);
        if let Some(a) = a {
            common_before_s += b.total_s;
            common_after_s += a.total_s;
            lines.extend(line_deltas(b, a));
        }
        functions.push(delta(&b.key, Some(b.total_s), a.map(|a| a.total_s)));
    }
    for a in after
        .functions
        .iter()
        .filter(|a| !before.functions.iter().any(|b| b.key == a.key))
    {
        functions.push(delta(&a.key, None, Some(a.total_s)));
    }
    functions.sort_by(|x, y| x.delta_s.total_cmp(&y.delta_s));
    lines.sort_by(|x, y| y.delta_s.abs().total_cmp(&x.delta_s.abs()));
    let shift = shift(before, after, &lines);
    lines.truncate(top);
    Step {
        from: i,
        to: i + 1,
        common_before_s,
        common_after_s,
        improvement_pct: (common_before_s > 0.0)
            .then(|| (common_before_s - common_after_s) / common_before_s * 100.0),
        functions,
        lines,
        shift,
    }
}

fn delta(function: &str, before: Option<f64>, after: Option<f64>) -> FunctionDelta {
    let d = after.unwrap_or(0.0) - before.unwrap_or(0.0);
    FunctionDelta {
        function: function.to_string(),
        before_s: before,
        after_s: after,
        delta_s: d,
        delta_pct: before
            .filter(|b| *b > 0.0 && after.is_some())
            .map(|b| d / b * 100.0),
        status: Status::of(before, after),
    }
}

/// A line's identity across rounds: its code and which occurrence of that code it is (line
/// numbers move when the file is edited between rounds).
fn identities(f: &Function) -> Vec<(String, usize)> {
    let mut seen: Vec<String> = Vec::new();
    f.lines
        .iter()
        .map(|l| {
            let code = l.text.trim().to_string();
            let n = seen.iter().filter(|s| **s == code).count();
            seen.push(code.clone());
            (code, n)
        })
        .collect()
}

/// Lines hit in either round of a function both rounds profiled.
fn line_deltas(before: &Function, after: &Function) -> Vec<LineDelta> {
    let (ib, ia) = (identities(before), identities(after));
    let timed = |f: &Function, i: usize| f.lines[i].hits.map(|_| f.lines[i].time_s);
    let mut out = Vec::new();
    for (i, id) in ib.iter().enumerate() {
        let j = ia.iter().position(|x| x == id);
        let b = timed(before, i);
        let a = j.and_then(|j| timed(after, j));
        if b.is_none() && a.is_none() {
            continue;
        }
        out.push(line_delta(before, after, &id.0, Some(i), j, b, a));
    }
    for (j, id) in ia.iter().enumerate() {
        if !ib.contains(id) && timed(after, j).is_some() {
            out.push(line_delta(
                before,
                after,
                &id.0,
                None,
                Some(j),
                None,
                timed(after, j),
            ));
        }
    }
    out
}

fn line_delta(
    before: &Function,
    after: &Function,
    text: &str,
    i: Option<usize>,
    j: Option<usize>,
    b: Option<f64>,
    a: Option<f64>,
) -> LineDelta {
    let d = a.unwrap_or(0.0) - b.unwrap_or(0.0);
    let kind = j
        .and_then(|j| after.lines[j].kind)
        .or_else(|| i.and_then(|i| before.lines[i].kind));
    LineDelta {
        function: after.key.clone(),
        text: text.to_string(),
        line_before: i.map(|i| before.lines[i].line),
        line_after: j.map(|j| after.lines[j].line),
        before_s: b,
        after_s: a,
        delta_s: d,
        delta_pct: b.filter(|b| *b > 0.0 && a.is_some()).map(|b| d / b * 100.0),
        status: Status::of(b, a),
        kind,
    }
}

/// "fixing X revealed Y" when the hottest line of `after` is another one than `before`'s, and
/// `before`'s improved or went away.
fn shift(before: &Round, after: &Round, lines: &[LineDelta]) -> Option<String> {
    let (x, y) = (before.hot_lines.first()?, after.hot_lines.first()?);
    if x.function == y.function && x.text == y.text {
        return None;
    }
    let fixed = lines
        .iter()
        .find(|l| l.function == x.function && l.text == x.text)
        .map_or(Status::Removed, |l| l.status);
    if !matches!(fixed, Status::Improved | Status::Removed) {
        return None;
    }
    Some(format!(
        "fixing `{}` ({}, {}) revealed `{}` ({}, {})",
        x.text,
        x.function,
        fmt_s(x.time_s),
        y.text,
        y.function,
        fmt_s(y.time_s)
    ))
}

/// Seconds in the unit that reads best.
pub fn fmt_s(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn stopping(steps: &[Step], last: Option<&Round>) -> Stopping {
    let only_compute_left = last.is_some_and(|r| {
        let top: Vec<_> = r.hot_lines.iter().take(3).collect();
        !top.is_empty() && top.iter().all(|h| h.kind == Some(Kind::Compute))
    });
    let last_two: Vec<&Step> = steps.iter().rev().take(2).collect();
    let last_two_pct = (last_two.len() == 2)
        .then(|| {
            let r: Option<f64> = last_two
                .iter()
                .map(|s| (s.common_before_s > 0.0).then(|| s.common_after_s / s.common_before_s))
                .product();
            r.map(|r| (1.0 - r) * 100.0)
        })
        .flatten();
    let diminishing_returns = last_two_pct.is_some_and(|p| p < STOP_PCT);
    let mut advice = match last_two_pct {
        Some(p) if diminishing_returns => format!(
            "Stop: the last two rounds improved the profiled time by {p:.1} % (< {STOP_PCT} %): diminishing returns."
        ),
        Some(p) => format!(
            "Continue: the last two rounds improved the profiled time by {p:.1} % (≥ {STOP_PCT} %)."
        ),
        None => format!(
            "Profile one more round: the stopping rule (< {STOP_PCT} % over the last two rounds) needs three rounds."
        ),
    };
    if only_compute_left {
        advice.push_str(
            " The hottest lines left are all COMPUTE: no host overhead left to remove there.",
        );
    }
    Stopping {
        last_two_pct,
        diminishing_returns,
        only_compute_left,
        advice,
    }
}
