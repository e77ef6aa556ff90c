//! The `ranks` view as text for people.

use std::fmt::Write;

use super::RanksReport;
use crate::format::{duration_us, percent};

/// The readable report: the clock, the ranks (the straggler marked), the collectives and the
/// worst of them.
pub fn text(r: &RanksReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Ranks: {} over {} file(s)",
        r.ranks.len(),
        r.files.len()
    );
    let _ = writeln!(out, "Clock: {}", r.clock.method);
    if r.files.len() > 1 {
        for (i, file) in r.files.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {file}: {:+.1} µs (session start {:+.1} µs, collectives {:+.1} µs, spread {:.1} µs over {})",
                r.clock.offset_ns.get(i).copied().unwrap_or(0) as f64 / 1e3,
                r.clock.session_start_ns.get(i).copied().unwrap_or(0) as f64 / 1e3,
                r.clock.correction_ns.get(i).copied().unwrap_or(0) as f64 / 1e3,
                r.clock.spread_ns.get(i).copied().unwrap_or(0) as f64 / 1e3,
                r.clock.matched.get(i).copied().unwrap_or(0),
            );
        }
    }
    match r.straggler.and_then(|i| r.ranks.get(i)) {
        Some(s) => {
            let place = match s.named_by {
                super::NamedBy::ProcessDevice => s.file.clone(),
                _ => format!("{}, pid {}, GPU {}", s.file, s.pid, s.device),
            };
            let _ = writeln!(
                out,
                "Straggler: {} ({place}) arrives last in {} of its collectives, {} late on average (worst {})",
                s.rank,
                percent(s.last_share),
                duration_us(s.mean_lateness_us),
                duration_us(s.worst_lateness_us)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Straggler: none (no rank arrives last in more than {} of its collectives)",
                percent(r.threshold)
            );
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<16} {:<14} {:>8} {:>4} {:>7} {:>11} {:>11} {:>11} {:>11} {:>7}  {:<40} file",
        "rank",
        "named by",
        "pid",
        "GPU",
        "last",
        "mean late",
        "worst late",
        "waiting",
        "transfer",
        "idle",
        "bound"
    );
    for (i, s) in r.ranks.iter().enumerate() {
        let mark = if r.straggler == Some(i) { " ◀" } else { "" };
        let bound = match (s.bound, s.gpu_bound) {
            (Some(b), Some(g)) if b != g => format!("{} (GPU: {})", b.label(), g.label()),
            (Some(b), _) => b.label().to_string(),
            (None, Some(g)) => format!("GPU: {}", g.label()),
            (None, None) => "-".to_string(),
        };
        let named_by = serde_json::to_value(s.named_by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<16} {:<14} {:>8} {:>4} {:>7} {:>11} {:>11} {:>11} {:>11} {:>7}  {:<40} {}{mark}",
            s.rank,
            named_by,
            s.pid,
            s.device,
            percent(s.last_share),
            duration_us(s.mean_lateness_us),
            duration_us(s.worst_lateness_us),
            duration_us(s.waiting_us),
            duration_us(s.transferring_us),
            s.gpu_idle_ratio.map_or("-".to_string(), percent),
            bound,
            s.file,
        );
    }
    verdicts(&mut out, r);
    let c = &r.collectives;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Collectives matched: {}; skew mean {}, median {}, p90 {}, max {}; transfer median {}",
        c.count,
        duration_us(c.skew_us.mean),
        duration_us(c.skew_us.median),
        duration_us(c.skew_us.p90),
        duration_us(c.skew_us.max),
        duration_us(c.transfer_us.median),
    );
    for n in &c.by_name {
        let _ = writeln!(
            out,
            "  {} ×{} on {} ranks: skew mean {}, max {}; transfer mean {}",
            n.name,
            n.count,
            n.ranks,
            duration_us(n.mean_skew_us),
            duration_us(n.max_skew_us),
            duration_us(n.mean_transfer_us)
        );
    }
    if !c.worst.is_empty() {
        let _ = writeln!(out, "Largest skews:");
        for w in &c.worst {
            let who = r.ranks.get(w.last_rank).map_or("?", |s| s.rank.as_str());
            let _ = writeln!(
                out,
                "  {} #{}: skew {}, transfer {}, last {} (its start {} ns in its file)",
                w.name,
                w.index,
                duration_us(w.skew_us),
                duration_us(w.transfer_us),
                who,
                w.last_start_ns
            );
        }
    }
    if let Some(cause) = &r.cause {
        super::cause::text(&mut out, cause);
    }
    for n in &r.notes {
        let _ = writeln!(out, "Note: {n}");
    }
    out
}

/// Each rank's verdict, one line each: detect's wording over its own device.
fn verdicts(out: &mut String, r: &RanksReport) {
    let said: Vec<(&str, &str)> = r
        .ranks
        .iter()
        .filter_map(|s| Some((s.rank.as_str(), s.verdict.as_deref()?)))
        .collect();
    if said.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Verdict per rank (its file's host-overhead verdict, its own GPU's shares):"
    );
    for (rank, verdict) in said {
        let _ = writeln!(out, "  {rank}: {verdict}");
    }
}
