//! Where a regression lies on the critical path: two traces' paths per step, part by part and
//! name by name. The parts of each path sum to its wall time per step, so their differences sum
//! to the difference of the step times: the regression, split by what the steps waited on.

use std::collections::BTreeMap;

use serde::Serialize;

use super::graph::Part;
use super::{CriticalPath, WhatIf};

/// A part of the path in both traces, per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartDelta {
    pub part: Part,
    pub label: &'static str,
    pub baseline_us: f64,
    pub target_us: f64,
    pub delta_us: f64,
    /// Of the step time's difference (null when the step time did not change).
    pub share_of_delta: Option<f64>,
}

/// A name on either path (an NVTX op by its shape, a kernel by name), per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameDelta {
    pub name: String,
    pub part: Part,
    pub baseline_us: f64,
    pub target_us: f64,
    pub delta_us: f64,
}

/// The regression between two traces, on the critical path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathRegression {
    pub baseline_per_step_us: f64,
    pub target_per_step_us: f64,
    pub delta_us: f64,
    pub delta_pct: Option<f64>,
    pub baseline_bound: crate::detect::bound::BoundKind,
    pub target_bound: crate::detect::bound::BoundKind,
    pub parts: Vec<PartDelta>,
    /// The names whose time on the path changed most (either way), largest change first.
    pub names: Vec<NameDelta>,
}

/// Names listed.
const TOP_NAMES: usize = 12;

/// The regression from `baseline` to `target`, from their critical paths per step.
pub fn regression(baseline: &WhatIf, target: &WhatIf) -> PathRegression {
    let (b, t) = (&baseline.critical_path, &target.critical_path);
    let delta_us = t.per_step_us - b.per_step_us;
    let share = |d: f64| (delta_us != 0.0).then(|| d / delta_us);
    let part_us = |p: &CriticalPath, part: Part| {
        p.parts
            .iter()
            .find(|x| x.part == part)
            .map_or(0.0, |x| x.per_step_us)
    };
    let parts = Part::ALL
        .iter()
        .map(|&part| {
            let (bu, tu) = (part_us(b, part), part_us(t, part));
            PartDelta {
                part,
                label: part.label(),
                baseline_us: bu,
                target_us: tu,
                delta_us: tu - bu,
                share_of_delta: share(tu - bu),
            }
        })
        .collect();
    PathRegression {
        baseline_per_step_us: b.per_step_us,
        target_per_step_us: t.per_step_us,
        delta_us,
        delta_pct: (b.per_step_us != 0.0).then(|| 100.0 * delta_us / b.per_step_us),
        baseline_bound: b.bound,
        target_bound: t.bound,
        parts,
        names: names(b, t),
    }
}

fn names(b: &CriticalPath, t: &CriticalPath) -> Vec<NameDelta> {
    let per_step = |p: &CriticalPath, ns: i64| ns as f64 / 1000.0 / p.steps.max(1) as f64;
    let mut both: BTreeMap<(Part, &str), (f64, f64)> = BTreeMap::new();
    for n in &b.names {
        both.entry((n.part, &n.name)).or_default().0 += per_step(b, n.ns);
    }
    for n in &t.names {
        both.entry((n.part, &n.name)).or_default().1 += per_step(t, n.ns);
    }
    let mut out: Vec<NameDelta> = both
        .into_iter()
        .map(|((part, name), (bu, tu))| NameDelta {
            name: name.to_string(),
            part,
            baseline_us: bu,
            target_us: tu,
            delta_us: tu - bu,
        })
        .filter(|d| d.delta_us != 0.0)
        .collect();
    out.sort_by(|a, b| {
        b.delta_us
            .abs()
            .total_cmp(&a.delta_us.abs())
            .then(a.name.cmp(&b.name))
    });
    out.truncate(TOP_NAMES);
    out
}
