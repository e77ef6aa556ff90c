//! What a fix would buy: the critical path of the steady steps split by part, the names with
//! most time on it, and the predicted wall time per step of each change.

use super::{Cell, Kind, Table, col, csv_only};
use crate::whatif::compare::PathRegression;
use crate::whatif::graph::Part;
use crate::whatif::{CriticalPath, WhatIf};

/// The critical path per step, by part (parts without time left out).
pub fn whatif_path(p: &CriticalPath) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "whatif_path",
        "Critical path of the steady steps, per step",
        &[
            csv_only("part", Key),
            col("label", "Part", Text),
            col("per_step_us", "Per step", Duration),
            col("share", "Share of the path", Share),
        ],
    );
    for x in p.parts.iter().filter(|x| x.per_step_us != 0.0) {
        t.row(vec![
            key(&x.part),
            x.label.into(),
            x.per_step_us.into(),
            x.share.into(),
        ]);
    }
    t
}

/// The NVTX ops (by shape) and the GPU work with most time on the critical path.
pub fn whatif_names(p: &CriticalPath) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "whatif_names",
        "Most time on the critical path, per step",
        &[
            col("name", "Name", Text),
            col("part", "Part", Key),
            col("per_step_us", "Per step", Duration),
            col("share", "Share of the path", Share),
        ],
    );
    for n in p.top_ops.iter().chain(&p.top_kernels) {
        t.row(vec![
            n.name.clone().into(),
            key(&n.part),
            n.per_step_us.into(),
            n.share.into(),
        ]);
    }
    t
}

/// The replay of unchanged costs, then each change: its wall time per step, GPU window, gain
/// (a fraction: the CSV's `gain` is `gain_pct` ÷ 100) and what bounds the steps by their
/// critical path after it.
pub fn whatif_predicted(w: &WhatIf) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "whatif_predicted",
        "Predicted wall time per step and GPU window",
        &[
            col("change", "Change", Text),
            col("wall_time_per_step_us", "Per step", Duration),
            col("window_us", "GPU window", Duration),
            // Negative: shorter than the replay.
            col("gain", "Time vs the replay", Share),
            col("bound", "Bound by the path", Key),
        ],
    );
    // Without steady steps no critical path is walked: no bound by it.
    let bound = |b: crate::detect::bound::BoundKind| match w.steps {
        0 => Cell::Missing,
        _ => b.label().into(),
    };
    t.row(vec![
        "unchanged (the replay)".into(),
        w.replayed.wall_time_per_step_us.into(),
        w.replayed.window_us.into(),
        Cell::Missing,
        bound(w.critical_path.bound),
    ]);
    for p in &w.predicted {
        t.row(vec![
            p.change.clone().into(),
            p.wall_time_per_step_us.into(),
            p.window_us.into(),
            p.gain_pct.map(|g| g / 100.0).into(),
            bound(p.bound),
        ]);
    }
    t
}

/// The critical path per step of the baseline and the target, by part, and each part's share
/// of the change (parts without time in either left out).
pub fn regression_parts(r: &PathRegression) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "whatif_regression_parts",
        "The change of the critical path per step, by part",
        &[
            csv_only("part", Key),
            col("label", "Part", Text),
            col("baseline_us", "Baseline", Duration),
            col("target_us", "Target", Duration),
            col("delta_us", "Change", Duration),
            col("share_of_delta", "Of the change", Share),
        ],
    );
    for p in r
        .parts
        .iter()
        .filter(|p| p.baseline_us != 0.0 || p.target_us != 0.0)
    {
        t.row(vec![
            key(&p.part),
            p.label.into(),
            p.baseline_us.into(),
            p.target_us.into(),
            p.delta_us.into(),
            p.share_of_delta.into(),
        ]);
    }
    t
}

/// The names whose time on the critical path per step changed most.
pub fn regression_names(r: &PathRegression) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "whatif_regression_names",
        "Changed most on the critical path, per step",
        &[
            col("name", "Name", Text),
            col("part", "Part", Key),
            col("baseline_us", "Baseline", Duration),
            col("target_us", "Target", Duration),
            col("delta_us", "Change", Duration),
        ],
    );
    for n in &r.names {
        t.row(vec![
            n.name.clone().into(),
            key(&n.part),
            n.baseline_us.into(),
            n.target_us.into(),
            n.delta_us.into(),
        ]);
    }
    t
}

/// A part's JSON key (`host`, `launch`, …: its serde name).
fn key(part: &Part) -> Cell {
    match part {
        Part::Host => "host",
        Part::Launch => "launch",
        Part::Calls => "calls",
        Part::Waits => "waits",
        Part::Compute => "compute",
        Part::Communication => "communication",
        Part::Transfers => "transfers",
    }
    .into()
}
