//! Scenario-specific answers beyond detection: gap histograms, CUDA-graph counts, stragglers
//! and per-step regression figures, each computed from the placed events.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use super::parse_steps;
use crate::synth::timeline::{Ns, Timeline};

/// The nine gap buckets `[lo, hi)` in µs (spec §4); `None` is +∞.
pub const BUCKETS: [(&str, f64, Option<f64>); 9] = [
    ("<1us", 0.0, Some(1.0)),
    ("1-5us", 1.0, Some(5.0)),
    ("5-10us", 5.0, Some(10.0)),
    ("10-50us", 10.0, Some(50.0)),
    ("50-100us", 50.0, Some(100.0)),
    ("100-500us", 100.0, Some(500.0)),
    ("500us-1ms", 500.0, Some(1000.0)),
    ("1-5ms", 1000.0, Some(5000.0)),
    (">5ms", 5000.0, None),
];

/// Which bucket a gap of `g` ns falls in (half-open).
pub fn bucket_of(g: Ns) -> usize {
    BUCKETS
        .iter()
        .rposition(|b| g >= (b.1 * 1000.0) as Ns)
        .unwrap_or(0)
}

/// `gap_buckets`: gaps between consecutive kernels per (device, stream), by bucket.
pub fn gap_buckets(tl: &Timeline) -> Value {
    let mut lanes: BTreeMap<(u8, u8), Vec<(Ns, Ns)>> = BTreeMap::new();
    for k in &tl.kernels {
        lanes
            .entry((k.device, k.stream))
            .or_default()
            .push((k.start, k.end));
    }
    let mut count = [0u64; 9];
    let mut total = [0 as Ns; 9];
    for lane in lanes.values_mut() {
        lane.sort_unstable();
        for g in lane.windows(2).map(|w| w[1].0 - w[0].1).filter(|&g| g >= 0) {
            count[bucket_of(g)] += 1;
            total[bucket_of(g)] += g;
        }
    }
    BUCKETS
        .iter()
        .enumerate()
        .map(|(i, (label, lo, hi))| {
            json!({ "label": label, "lo_us": lo, "hi_us": hi, "count": count[i], "total_us": total[i] as f64 / 1000.0 })
        })
        .collect()
}

/// `cuda_graphs`: kernels launched by graph replays (graphNodeId set) versus eager launches.
pub fn graph_counts(tl: &Timeline) -> Value {
    let graph = tl.kernels.iter().filter(|k| k.graph_node != 0).count();
    let eager = tl.kernels.len() - graph;
    let calls = |prefix: &str| {
        tl.apis
            .iter()
            .filter(|a| tl.names.get(a.name).starts_with(prefix))
            .count()
    };
    json!({
        "graph_kernels": graph,
        "eager_kernels": eager,
        "graph_launches": calls("cudaGraphLaunch"),
        "eager_launches": calls("cudaLaunchKernel"),
        "graph_coverage": graph as f64 / tl.kernels.len().max(1) as f64,
    })
}

/// `stragglers`: the i-th NCCL kernel of every device is collective i; the device starting it
/// last is that collective's straggler, late by (its start − the earliest start).
pub fn stragglers(tl: &Timeline) -> Value {
    let mut per_dev: BTreeMap<u8, Vec<Ns>> = BTreeMap::new();
    for k in tl
        .kernels
        .iter()
        .filter(|k| tl.names.get(k.short).to_ascii_lowercase().contains("nccl"))
    {
        per_dev.entry(k.device).or_default().push(k.start);
    }
    per_dev.values_mut().for_each(|v| v.sort_unstable());
    let n = per_dev.values().map(Vec::len).min().unwrap_or(0);
    let mut last: BTreeMap<u8, (u64, Ns)> = per_dev.keys().map(|&d| (d, (0, 0))).collect();
    for i in 0..n {
        let starts: Vec<(Ns, u8)> = per_dev.iter().map(|(&d, v)| (v[i], d)).collect();
        let (Some(&(late, dev)), Some(&(early, _))) = (starts.iter().max(), starts.iter().min())
        else {
            continue;
        };
        if let Some(e) = last.get_mut(&dev) {
            e.0 += 1;
            e.1 += late - early;
        }
    }
    let (dev, (count, late_ns)) = last
        .iter()
        .max_by_key(|(_, c)| c.0)
        .map_or((0, (0, 0)), |(&d, &c)| (d, c));
    json!({
        "collectives": n,
        "last_count_by_device": last.iter().map(|(d, c)| json!({"device": d, "count": c.0})).collect::<Vec<_>>(),
        "straggler_device": dev,
        "straggler_share": count as f64 / n.max(1) as f64,
        "mean_lateness_us": late_ns as f64 / 1000.0 / count.max(1) as f64,
    })
}

/// `per_step`: steady-state figures of a TP=1 serving loop (reference §7–§8 definitions).
pub fn regression_figures(tl: &Timeline) -> Value {
    let mut steps = parse_steps(tl, true, |t| t == 59);
    steps.sort_by_key(|s| s.start);
    let max_gen = steps.iter().map(|s| s.generation).max().unwrap_or(0);
    steps.retain(|s| s.ctx == 0 && s.generation == max_gen);
    let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
        return Value::Null;
    };
    let n = steps.len() as f64;
    let (span_s, span_e) = (first.start, last.end);
    let mut gaps: Vec<Ns> = steps.windows(2).map(|w| w[1].start - w[0].end).collect();
    gaps.sort_unstable();
    let p50 = gaps.get(gaps.len() / 2).map_or(0.0, |&g| g as f64 / 1000.0);
    json!({
        "definitions": "steady steps: ctx == 0 and gen == max gen; wall_time_per_step_us = (last steady step end - first steady step start) / n; inter-step gap = next.start - prev.end, p50 = sorted[n/2]; kernels_per_step = kernels launched by calls starting inside steady forward steps / n; nvtx_us_per_step = sum of durations of ranges fully inside the steady span / n (inter-step ranges occur n - 1 times there); nvtx_us_per_call = that sum / number of those ranges",
        "steady_steps": steps.len(),
        "wall_time_per_step_us": (span_e - span_s) as f64 / 1000.0 / n,
        "inter_step_gap_p50_us": p50,
        "kernels_per_step": kernels_in_steps(tl, &steps) as f64 / n,
        "nvtx_us_per_step": nvtx_per_step(tl, span_s, span_e, Some(n)),
        "nvtx_us_per_call": nvtx_per_step(tl, span_s, span_e, None),
    })
}

fn kernels_in_steps(tl: &Timeline, steps: &[super::Step]) -> usize {
    let inside = |t: Ns| {
        let i = steps.partition_point(|s| s.end < t);
        steps.get(i).is_some_and(|s| s.start <= t)
    };
    let launched: HashSet<(u8, u32)> = tl
        .apis
        .iter()
        .filter(|a| inside(a.start))
        .map(|a| (a.proc, a.corr))
        .collect();
    tl.kernels
        .iter()
        .filter(|k| launched.contains(&(k.proc, k.corr)))
        .count()
}

/// Per NVTX op inside the steady span: total µs divided by `per` steps, or per call when `None`.
fn nvtx_per_step(tl: &Timeline, span_s: Ns, span_e: Ns, per: Option<f64>) -> Value {
    let mut per_op: BTreeMap<&str, (Ns, u64)> = BTreeMap::new();
    for r in tl.nvtx.iter().filter(|r| r.event_type == 59) {
        let Some(end) = r.end else { continue };
        let name = tl.names.get(r.name);
        if r.start >= span_s && end <= span_e && !name.contains("[Executor]") {
            let e = per_op.entry(name).or_default();
            e.0 += end - r.start;
            e.1 += 1;
        }
    }
    per_op
        .into_iter()
        .map(|(k, (ns, calls))| {
            (
                k.to_string(),
                json!(ns as f64 / 1000.0 / per.unwrap_or(calls as f64)),
            )
        })
        .collect()
}
