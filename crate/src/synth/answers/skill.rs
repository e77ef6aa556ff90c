//! The `trtllm-skill` profile's answers: what `detect_host_overhead.py` would print for the
//! placed events (reference §3.3–§3.5), reproduced with its SQL and float semantics.
//!
//! Kernels are selected by start in `[ws, we)` and never clipped, all devices pooled; M2 sums
//! exact `cudaLaunchKernel` calls; NVTX names come from `textId` only; host-prep ranges must lie
//! fully inside the window and are exposed only in interior gaps between merged kernels.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::verdict::{self, Metrics};
use super::{Step, parse_steps};
use crate::synth::timeline::{Ns, Timeline};

const PREP_LIKE: [&str; 3] = [
    "%_prepare_tp_inputs%",
    "%_prepare_inputs%",
    "%prepare_inputs%",
];
const FORWARD_LIKE: &str = "%[Executor] _forward_step%";

/// SQLite `LIKE` without ESCAPE: `%` any run, `_` one character, ASCII case folding.
pub fn like(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let t: Vec<char> = s.chars().map(|c| c.to_ascii_lowercase()).collect();
    like_at(&p, &t)
}

fn like_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('%') => (0..=t.len()).any(|i| like_at(&p[1..], &t[i..])),
        Some('_') => !t.is_empty() && like_at(&p[1..], &t[1..]),
        Some(c) => t.first() == Some(c) && like_at(&p[1..], &t[1..]),
    }
}

/// The rows the script's queries can see.
struct Rows {
    /// `(start, end, is_nccl)` of every kernel, sorted by (start, end).
    kernels: Vec<(Ns, Ns, bool)>,
    /// Exact `cudaLaunchKernel` calls, sorted by start.
    launches: Vec<(Ns, Ns)>,
    /// Per prep pattern: registered NVTX rows with end > 0 matching it, in table (row) order.
    prep: [Vec<(Ns, Ns)>; 3],
}

fn build(tl: &Timeline) -> Rows {
    let mut is_nccl: HashMap<u32, bool> = HashMap::new();
    let mut kernels: Vec<(Ns, Ns, bool)> = tl
        .kernels
        .iter()
        .map(|k| {
            (
                k.start,
                k.end,
                *is_nccl
                    .entry(k.short)
                    .or_insert_with(|| like("%nccl%", tl.names.get(k.short))),
            )
        })
        .collect();
    kernels.sort_unstable();
    let mut launches: Vec<(Ns, Ns)> = tl
        .apis
        .iter()
        .filter(|a| tl.names.get(a.name) == "cudaLaunchKernel")
        .map(|a| (a.start, a.end))
        .collect();
    launches.sort_unstable();
    let mut cache: HashMap<(u32, usize), bool> = HashMap::new();
    let mut prep: [Vec<(Ns, Ns)>; 3] = Default::default();
    for n in tl.nvtx.iter().filter(|n| !n.inline) {
        let Some(end) = n.end.filter(|&e| e > 0) else {
            continue;
        };
        for (i, pat) in PREP_LIKE.iter().enumerate() {
            if *cache
                .entry((n.name, i))
                .or_insert_with(|| like(pat, tl.names.get(n.name)))
            {
                prep[i].push((n.start, end));
            }
        }
    }
    Rows {
        kernels,
        launches,
        prep,
    }
}

/// `compute_phase_metrics(ws, we, total_us)` of the script.
fn compute(r: &Rows, ws: Ns, we: Ns) -> Metrics {
    let total = (we - ws) as f64 / 1000.0;
    let lo = r.kernels.partition_point(|k| k.0 < ws);
    let hi = r.kernels.partition_point(|k| k.0 < we);
    let sel = &r.kernels[lo..hi];
    let merged = merge(sel);
    let active = merged
        .iter()
        .fold(0.0, |acc, &(s, e)| acc + (e - s) as f64 / 1000.0);
    let idle = total - active;
    let l0 = r.launches.partition_point(|a| a.0 < ws);
    let l1 = r.launches.partition_point(|a| a.0 < we);
    let launch_ns: Ns = r.launches[l0..l1].iter().map(|&(s, e)| e - s).sum();
    let nccl_ns: Ns = sel.iter().filter(|k| k.2).map(|k| k.1 - k.0).sum();
    let nccl_us = nccl_ns as f64 / 1000.0;
    let mut m = Metrics {
        gpu_idle_ratio: Some(idle / total),
        launch_overhead_ratio: Some(launch_ns as f64 / 1000.0 / total),
        gpu_utilization: Some(active / total),
        nccl_ratio: Some(if active > 0.0 { nccl_us / active } else { 0.0 }),
        ..Metrics::default()
    };
    if let Some([a, b, c]) = host_prep(r, ws, we, &merged, total, idle) {
        m.host_prep_exposed_ratio = Some(a);
        m.host_prep_perf_impact = Some(b);
        m.host_prep_idle_attribution = Some(c);
    }
    m
}

/// Touching intervals merge (`s <= last.end`); input sorted by (start, end).
fn merge(sel: &[(Ns, Ns, bool)]) -> Vec<(Ns, Ns)> {
    let mut out: Vec<(Ns, Ns)> = Vec::new();
    for &(s, e, _) in sel {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn host_prep(
    r: &Rows,
    ws: Ns,
    we: Ns,
    merged: &[(Ns, Ns)],
    total: f64,
    idle: f64,
) -> Option<[f64; 3]> {
    let ranges: Vec<(Ns, Ns)> = r
        .prep
        .iter()
        .map(|rows| {
            rows.iter()
                .copied()
                .filter(|&(s, e)| s >= ws && e <= we)
                .collect::<Vec<_>>()
        })
        .find(|v| !v.is_empty())?;
    let prep_total = ranges
        .iter()
        .fold(0.0, |acc, &(s, e)| acc + (e - s) as f64 / 1000.0);
    if prep_total <= 0.0 {
        return None;
    }
    let gaps: Vec<(Ns, Ns)> = merged
        .windows(2)
        .map(|w| (w[0].1, w[1].0))
        .filter(|g| g.1 > g.0)
        .collect();
    let mut exposed = 0.0;
    for &(rs, re) in &ranges {
        // Gaps not overlapping the range add exactly 0.0, so only the overlapping ones are visited.
        let first = gaps.partition_point(|g| g.1 <= rs);
        for &(gs, ge) in gaps[first..].iter().take_while(|g| g.0 < re) {
            exposed += (re.min(ge) - rs.max(gs)).max(0) as f64 / 1000.0;
        }
    }
    let m3c = if idle > 0.0 { exposed / idle } else { 0.0 };
    Some([exposed / prep_total, exposed / total, m3c])
}

/// The `trtllm-skill` DETECT-SUBSET of `tl`.
pub fn answers(tl: &Timeline) -> Value {
    let r = build(tl);
    let ws = tl.kernels.iter().map(|k| k.start).min().unwrap_or(0);
    let we = tl.kernels.iter().map(|k| k.end).max().unwrap_or(0);
    let agg = compute(&r, ws, we);
    let v = verdict::judge(&agg, &verdict::DEFAULT);
    let mut cache: HashMap<u32, bool> = HashMap::new();
    let steps = parse_steps(tl, false, |_| true);
    let steps: Vec<Step> = steps
        .into_iter()
        .filter(|s| {
            *cache
                .entry(s.name)
                .or_insert_with(|| like(FORWARD_LIKE, tl.names.get(s.name)))
        })
        .collect();
    let ctx: Vec<Step> = steps.iter().filter(|s| s.ctx > 0).copied().collect();
    let generation: Vec<Step> = steps
        .iter()
        .filter(|s| s.ctx == 0 && s.generation > 0)
        .copied()
        .collect();
    let mut phases = serde_json::Map::new();
    let mut any_phase_yes = false;
    for (key, list, thr) in [
        ("context", ctx, verdict::DEFAULT),
        ("generation", generation, verdict::GENERATION),
    ] {
        let (Some(s), Some(e)) = (
            list.iter().map(|s| s.start).min(),
            list.iter().map(|s| s.end).max(),
        ) else {
            continue;
        };
        let (value, yes) = verdict::phase_json(list.len(), &compute(&r, s, e), &thr, true);
        any_phase_yes |= yes;
        phases.insert(key.to_string(), value);
    }
    json!({
        "verdict": verdict::yes_no(v.yes || any_phase_yes),
        "aggregate_metrics": verdict::metrics_json(&agg, true),
        "crossed_count": v.crossed,
        "applicable_count": v.applicable,
        "host_prep_confirmed": v.confirmed,
        "nccl_caveat": agg.nccl_ratio.is_some_and(|x| x > verdict::NCCL_CAVEAT),
        "phases": phases,
    })
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn like_follows_sqlite() {
        assert!(like("%_prepare_tp_inputs%", "_prepare_tp_inputs"));
        assert!(!like("%_prepare_tp_inputs%", "prepare_tp_inputs"));
        assert!(like("%nccl%", "ncclDevKernel_AllReduce"));
        assert!(like("%NCCL%", "ncclDev"));
        assert!(like(
            "%[Executor] _forward_step%",
            "[executor] Xforward-step 3"
        ));
        assert!(!like("%[Executor] _forward_step%", "_forward_step 3"));
    }
}
