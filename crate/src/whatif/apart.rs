//! The replays shared between two of the page's workers. Natively the replays run on threads
//! beside the reader (`replay::fan_out`); wasm32 has no threads, so the page's analysis worker
//! replays the unchanged costs and the first changes while a helper worker, which opened the
//! same file, replays the rest with the steady cycles the analysis worker's Root cause found.
//! Its predictions cross as JSON and [`join`] adds them to the analysis worker's answer: their
//! gains are of the analysis worker's replay of the unchanged costs, as if it had made them.

use serde::{Deserialize, Serialize};

use super::{Costs, Prediction, WhatIf, check, gain_pct, prediction, replay};
use crate::analyze::breakdown::CycleBounds;
use crate::error::{Error, Result};
use crate::model::rows::EventRows;
use crate::model::{NameId, Strings};

/// What the helper replays: the steady cycles and its changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub cycles: Vec<CycleBounds>,
    pub changes: Vec<Costs>,
}

/// A steady cycle as [`Plan::to_bytes`] writes it: its start from the previous cycle's, its
/// length, its rows (postcard's varints: a few bytes a cycle, where a long run has hundreds of
/// thousands of cycles and JSON took about 80 bytes each).
#[derive(Serialize, Deserialize)]
struct CycleStep {
    start: i64,
    start_row: Option<i64>,
    length: i64,
    next_row: Option<i64>,
}

impl Plan {
    /// The changes' JSON (its length first, a little-endian `u32`), then the cycles.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        Plan::write(&self.cycles, &self.changes)
    }

    /// [`Plan::to_bytes`] of a plan of these cycles and changes, without one made.
    pub fn write(cycles: &[CycleBounds], changes: &[Costs]) -> Result<Vec<u8>> {
        let changes = serde_json::to_vec(changes).map_err(|e| Error::Internal {
            detail: format!("the plan's changes: {e}"),
        })?;
        let mut bytes = Vec::with_capacity(4 + changes.len() + 12 * cycles.len());
        bytes.extend_from_slice(&(changes.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&changes);
        let mut last = 0;
        for c in cycles {
            let step = CycleStep {
                start: c.start.wrapping_sub(last),
                start_row: c.start_row,
                length: c.next.wrapping_sub(c.start),
                next_row: c.next_row,
            };
            bytes = postcard::to_extend(&step, bytes).map_err(|e| Error::Internal {
                detail: format!("the plan's cycles: {e}"),
            })?;
            last = c.start;
        }
        Ok(bytes)
    }

    /// The plan [`Plan::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<Plan> {
        let damaged = || Error::Internal {
            detail: "the what-if plan does not read".into(),
        };
        let (len, rest) = bytes.split_first_chunk::<4>().ok_or_else(damaged)?;
        let len = u32::from_le_bytes(*len) as usize;
        let changes = rest.get(..len).ok_or_else(damaged)?;
        let changes: Vec<Costs> = serde_json::from_slice(changes).map_err(|_| damaged())?;
        let mut rest = &rest[len..];
        let mut cycles = Vec::new();
        let mut last: i64 = 0;
        while !rest.is_empty() {
            let (step, after): (CycleStep, &[u8]) =
                postcard::take_from_bytes(rest).map_err(|_| damaged())?;
            let start = last.wrapping_add(step.start);
            cycles.push(CycleBounds {
                start,
                start_row: step.start_row,
                next: start.wrapping_add(step.length),
                next_row: step.next_row,
            });
            last = start;
            rest = after;
        }
        Ok(Plan { cycles, changes })
    }
}

/// The helper's answer: the predictions of its changes (their gains not yet known, their
/// critical paths without the per-name times a comparison of two traces reads) and the most
/// points one of its replays held.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Elsewhere {
    pub predicted: Vec<Prediction>,
    pub peak_points: usize,
}

/// `changes` (at least one: [`super::asked`]) split in two: those the analysis worker replays
/// beside the unchanged costs, and those a helper replays (none of fewer than two). The
/// replays, the unchanged costs' included, are shared as evenly as they go, the odd one to the
/// helper (the analysis worker finds the steady steps first); the first share is never empty,
/// which would read as the standard set.
pub fn shared(changes: &[Costs]) -> (Vec<Costs>, Vec<Costs>) {
    let mut here = changes.to_vec();
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
    Ok(elsewhere(plan, &replays, &rows.meta().strings))
}

/// Names `from..from + count` of `strings` (fewer at its end) as bytes, each its length (a
/// little-endian `u32`) then its text: the names a helper that reads no file replays with, in
/// pieces, so that neither worker holds a second copy of them all at once.
pub fn names_piece(strings: &Strings, from: usize, count: usize) -> Vec<u8> {
    let ids = from.min(strings.len())..from.saturating_add(count).min(strings.len());
    let mut bytes = Vec::new();
    for id in ids {
        let text = strings.get(id as NameId).as_bytes();
        bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
        bytes.extend_from_slice(text);
    }
    bytes
}

/// The analysis worker's names as the helper rebuilds them from [`names_piece`]'s pieces, in
/// id order.
#[derive(Debug, Default)]
pub struct Names(Strings);

impl Names {
    pub fn take_piece(&mut self, mut piece: &[u8]) -> Result<()> {
        let damaged = || Error::Internal {
            detail: "the analysis worker's names do not read".into(),
        };
        while !piece.is_empty() {
            let (len, rest) = piece.split_first_chunk::<4>().ok_or_else(damaged)?;
            let len = u32::from_le_bytes(*len) as usize;
            let text = rest.get(..len).ok_or_else(damaged)?;
            self.0
                .append(std::str::from_utf8(text).map_err(|_| damaged())?);
            piece = &rest[len..];
        }
        Ok(())
    }

    pub fn strings(&self) -> &Strings {
        &self.0
    }
}

/// The helper's side when it reads no file: `plan`'s changes replayed over the batches of rows
/// the analysis worker hands it (`next`, as [`replay::Feed`] sent them) while it replays its own
/// share ([`super::whatif_feeding`]).
pub fn replay_fed_apart(
    names: &Names,
    plan: &Plan,
    next: &mut dyn FnMut() -> Result<Vec<u8>>,
) -> Result<Elsewhere> {
    for c in &plan.changes {
        check(c)?;
    }
    let strings = names.strings();
    let replays = replay::replay_fed(strings, &plan.cycles, &plan.changes, next)?;
    Ok(elsewhere(plan, &replays, strings))
}

/// The predictions of `plan`'s changes from their replays.
fn elsewhere(plan: &Plan, replays: &[replay::Replayed], strings: &Strings) -> Elsewhere {
    let peak_points = replays.iter().map(|r| r.peak_points).max().unwrap_or(0);
    let predicted = plan
        .changes
        .iter()
        .zip(replays)
        .map(|(costs, r)| prediction(costs, r, strings))
        .collect();
    Elsewhere {
        predicted,
        peak_points,
    }
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
