//! Every rank, one answer: each rank's record at the collectives, the clock each file was put
//! on, and the collectives whose ranks arrived furthest apart.

use super::{Cell, Kind, Table, col, csv_only};
use crate::ranks::RanksReport;
use crate::ranks::cause::StragglerCause;

/// One row per rank: its name and where it comes from, its record at the collectives, the
/// time its collective kernels waited vs transferred, what bounds its file and its GPU, its
/// GPU's idle share and its verdict.
pub fn ranks_table(r: &RanksReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "ranks",
        "Each rank at the collectives",
        &[
            col("rank", "Rank", Key),
            col("named_by", "Named by", Label),
            col("file", "File", Text),
            col("pid", "Process", Key),
            col("device", "GPU", Key),
            col("collectives", "Collectives", Count),
            col("last_share", "Last in", Share),
            col("mean_lateness_us", "Mean lateness", Duration),
            col("worst_lateness_us", "Worst lateness", Duration),
            col("waiting_us", "Waiting", Duration),
            col("transferring_us", "Transferring", Duration),
            col("bound", "File bound", Label),
            col("gpu_bound", "GPU bound", Label),
            col("gpu_idle_ratio", "GPU idle", Share),
            // In its own table on the page and in the reports (a sentence needs the width).
            csv_only("verdict", Text),
            csv_only("straggler", Key),
        ],
    );
    for (i, k) in r.ranks.iter().enumerate() {
        t.row(vec![
            k.rank.clone().into(),
            json_key(k.named_by).into(),
            k.file.clone().into(),
            k.pid.into(),
            k.device.into(),
            k.collectives.into(),
            k.last_share.into(),
            k.mean_lateness_us.into(),
            k.worst_lateness_us.into(),
            k.waiting_us.into(),
            k.transferring_us.into(),
            k.bound.map(|b| b.label()).into(),
            k.gpu_bound.map(|b| b.label()).into(),
            k.gpu_idle_ratio.into(),
            k.verdict.clone().into(),
            (if r.straggler == Some(i) { "yes" } else { "" }).into(),
        ]);
        if r.straggler == Some(i) {
            t.emphasize_last("the straggler: last at most of its collectives");
        }
    }
    t
}

/// One row per rank: its verdict, the sentence detect words (its file's verdict, else its GPU's
/// bound, with its own GPU's shares of the window).
pub fn verdicts_table(r: &RanksReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "ranks_verdicts",
        "Each rank's verdict",
        &[col("rank", "Rank", Key), col("verdict", "Verdict", Text)],
    );
    for (i, k) in r.ranks.iter().enumerate() {
        t.row(vec![k.rank.clone().into(), k.verdict.clone().into()]);
        if r.straggler == Some(i) {
            t.emphasize_last("the straggler: last at most of its collectives");
        }
    }
    t
}

/// One row per file: how its times were put on the first file's clock.
pub fn clock_table(r: &RanksReport) -> Table {
    use Kind::*;
    let c = &r.clock;
    let mut t = Table::new(
        "ranks_clock",
        "One clock: each file's offset from the first",
        &[
            col("file", "File", Text),
            col("offset_us", "Offset", Duration),
            col("session_start_us", "Session start after file 0", Duration),
            col("correction_us", "Correction by collectives", Duration),
            col("spread_us", "Spread", Duration),
            col("matched", "Collectives it rests on", Count),
        ],
    );
    let us = |v: Option<&i64>| v.map_or(Cell::Missing, |&ns| Cell::from(ns as f64 / 1000.0));
    for (i, file) in r.files.iter().enumerate() {
        t.row(vec![
            file.clone().into(),
            us(c.offset_ns.get(i)),
            us(c.session_start_ns.get(i)),
            us(c.correction_ns.get(i)),
            us(c.spread_ns.get(i)),
            c.matched.get(i).copied().into(),
        ]);
    }
    t
}

/// The collectives whose ranks arrived furthest apart, largest skew first.
pub fn worst_collectives(r: &RanksReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "ranks_worst_collectives",
        "The collectives with the largest skew",
        &[
            col("name", "Collective", Text),
            col("index", "#", Count),
            col("skew_us", "Skew", Duration),
            col("transfer_us", "Transfer", Duration),
            col("last_rank", "Last rank", Key),
            csv_only("first_arrival_ns", Timestamp),
            csv_only("last_arrival_ns", Timestamp),
        ],
    );
    for c in &r.collectives.worst {
        let last = r
            .ranks
            .get(c.last_rank)
            .map_or(Cell::Missing, |k| k.rank.clone().into());
        t.row(vec![
            c.name.clone().into(),
            c.index.into(),
            c.skew_us.into(),
            c.transfer_us.into(),
            last,
            Cell::from(c.first_arrival_ns as f64),
            Cell::from(c.last_arrival_ns as f64),
        ]);
    }
    t
}

/// Why the rank last most often was late: per cause, its time per span (its previous
/// collective's end → its arrival) against the other ranks' at the same collectives.
pub fn straggler_causes(c: &StragglerCause) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "ranks_straggler_causes",
        "Why the last rank was late: per span before its late collectives",
        &[
            col("side", "Side", Key),
            col("cause", "Cause", Key),
            col("label", "Where most of it was", Text),
            col("straggler_us", "Last rank", Duration),
            col("others_us", "Others", Duration),
            col("excess_us", "Excess", Duration),
        ],
    );
    for row in &c.causes {
        t.row(vec![
            json_key(row.side).into(),
            row.cause.clone().into(),
            row.label.clone().into(),
            row.straggler_us.into(),
            row.others_us.into(),
            row.excess_us.into(),
        ]);
    }
    t
}

/// The NVTX ops holding the last rank's host time in those spans (the host's own time in each
/// op, not its children's), largest excess first: where the cause table's `nvtx` row went.
pub fn straggler_ops(c: &StragglerCause) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "ranks_straggler_ops",
        "Why the last rank was late: NVTX ops (host's own time) per span",
        &[
            col("op", "NVTX op", Text),
            col("straggler_us", "Last rank", Duration),
            col("others_us", "Others", Duration),
            col("excess_us", "Excess", Duration),
        ],
    );
    for row in &c.ops {
        t.row(vec![
            row.op.clone().into(),
            row.straggler_us.into(),
            row.others_us.into(),
            row.excess_us.into(),
        ]);
    }
    t
}

/// A unit enum's value as its JSON says it (`file-name`, `host`).
fn json_key(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
