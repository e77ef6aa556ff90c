//! The replays shared between two of the page's workers. Natively the replays run on threads
//! beside the reader (`replay::fan_out`); wasm32 has no threads, so the page's analysis worker
//! replays the unchanged costs and the first changes while a helper worker, which opened the
//! same file, replays the rest with the steady cycles the analysis worker's Root cause found.
//! Its predictions cross as JSON and [`join`] adds them to the analysis worker's answer: their
//! gains are of the analysis worker's replay of the unchanged costs, as if it had made them.

use serde::{Deserialize, Serialize};

use super::{Costs, Prediction, WhatIf, check, gain_pct, prediction, replay, standard_set};
use crate::analyze::breakdown::CycleBounds;
use crate::error::{Error, Result};
use crate::model::rows::EventRows;

/// What the helper replays: the steady cycles and its changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub cycles: Vec<CycleBounds>,
    pub changes: Vec<Costs>,
}

/// The helper's answer: the predictions of its changes (their gains not yet known, their
/// critical paths without the per-name times a comparison of two traces reads) and the most
/// points one of its replays held.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Elsewhere {
    pub predicted: Vec<Prediction>,
    pub peak_points: usize,
}

/// `changes` (the standard set when empty) split in two: those the analysis worker replays
/// beside the unchanged costs, and those a helper replays (none of fewer than two). The
/// replays, the unchanged costs' included, are shared as evenly as they go, the odd one to the
/// helper (the analysis worker finds the steady steps first); the first share is never empty,
/// which would read as the standard set.
pub fn shared(changes: &[Costs]) -> (Vec<Costs>, Vec<Costs>) {
    let mut here = match changes.is_empty() {
        true => standard_set(),
        false => changes.to_vec(),
    };
    let apart = match here.len() {
        0 | 1 => Vec::new(),
        n => here.split_off((n.div_ceil(2) - 1).max(1)),
    };
    (here, apart)
}

/// The helper's side: `plan`'s changes replayed over `rows`.
pub fn replay_apart(rows: &dyn EventRows, plan: &Plan) -> Result<Elsewhere> {
    for c in &plan.changes {
        check(c)?;
    }
    let replays = replay::replay_all(rows, &plan.cycles, &plan.changes, None)?;
    let strings = &rows.meta().strings;
    let peak_points = replays.iter().map(|r| r.peak_points).max().unwrap_or(0);
    let predicted = plan
        .changes
        .iter()
        .zip(&replays)
        .map(|(costs, r)| prediction(costs, r, strings))
        .collect();
    Ok(Elsewhere {
        predicted,
        peak_points,
    })
}

/// The analysis worker's answer for its share of the changes (`here`) with the helper's
/// predictions after them, each gain taken against `here`'s replay of the unchanged costs.
pub fn join(mut here: WhatIf, apart: &[Costs], elsewhere: Elsewhere) -> Result<WhatIf> {
    let came: Vec<&Costs> = elsewhere.predicted.iter().map(|p| &p.costs).collect();
    if came != apart.iter().collect::<Vec<_>>() {
        return Err(Error::Usage(format!(
            "the helper replayed {} changes, not the {} asked of it",
            came.len(),
            apart.len()
        )));
    }
    for mut p in elsewhere.predicted {
        p.gain_pct = gain_pct(&p, &here.replayed);
        for part in &mut p.critical_path.parts {
            part.label = part.part.label();
        }
        here.predicted.push(p);
    }
    here.peak_points = here.peak_points.max(elsewhere.peak_points);
    Ok(here)
}
