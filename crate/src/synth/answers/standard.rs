//! The `standard` profile's answers (spec §2), computed from the placed events.
//!
//! Everything is clipped to the window `W` (a set of disjoint intervals), busy time is per
//! device, launch time a per-process union, host prep per process against the idle time of that
//! process's own devices; aggregates are means.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::ivl::{Iv, intersect, measure, union};
use super::verdict::{self, Metrics, Thresholds};
use super::{Step, parse_steps};
use crate::synth::timeline::{Ns, Timeline};

/// Launch API names counted by M2 (any `_ptsz` / `_vNNNN` suffix).
const LAUNCH_RE: &str = r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel|cudaGraphLaunch|cuGraphLaunch)(_ptsz)?(_v\d+)?$";
/// Host-prep name patterns, first match wins (plain case-sensitive substrings).
const PREP_PATTERNS: [&str; 3] = ["_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs"];
/// NVTX range event types (push/pop, start/end and their NVTXT variants).
const RANGE_TYPES: [u8; 4] = [59, 60, 70, 71];
/// Steps of the same number starting less than this after their group's first start are one step.
const DEDUP_NS: Ns = 100_000;

/// Per-device and per-process interval sets, built once for all scopes.
struct Model {
    /// device → union of its kernels.
    busy: BTreeMap<u32, Vec<Iv>>,
    /// device → union of its NCCL kernels.
    nccl: BTreeMap<u32, Vec<Iv>>,
    /// process → device → union of the process's kernels on that device.
    proc_kernels: BTreeMap<u8, BTreeMap<u32, Vec<Iv>>>,
    /// process → union of its launch calls.
    launches: BTreeMap<u8, Vec<Iv>>,
    /// process → per host-prep pattern, the union of its ranges whose name contains it.
    prep: BTreeMap<u8, [Vec<Iv>; 3]>,
}

fn build(tl: &Timeline) -> Model {
    let mut busy: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
    let mut nccl: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
    let mut pk: BTreeMap<u8, BTreeMap<u32, Vec<Iv>>> = BTreeMap::new();
    let mut is_nccl: HashMap<u32, bool> = HashMap::new();
    for k in &tl.kernels {
        let d = u32::from(k.device);
        busy.entry(d).or_default().push((k.start, k.end));
        if *is_nccl
            .entry(k.short)
            .or_insert_with(|| tl.names.get(k.short).to_ascii_lowercase().contains("nccl"))
        {
            nccl.entry(d).or_default().push((k.start, k.end));
        }
        pk.entry(k.proc)
            .or_default()
            .entry(d)
            .or_default()
            .push((k.start, k.end));
    }
    let launch_re = regex::Regex::new(LAUNCH_RE).expect("constant regex");
    let mut launches: BTreeMap<u8, Vec<Iv>> = BTreeMap::new();
    let mut is_launch: HashMap<u32, bool> = HashMap::new();
    for a in tl.apis.iter().filter(|a| {
        *is_launch
            .entry(a.name)
            .or_insert_with(|| launch_re.is_match(tl.names.get(a.name)))
    }) {
        launches.entry(a.proc).or_default().push((a.start, a.end));
    }
    let mut prep: BTreeMap<u8, [Vec<Iv>; 3]> = BTreeMap::new();
    let mut matches: HashMap<u32, [bool; 3]> = HashMap::new();
    for n in tl
        .nvtx
        .iter()
        .filter(|n| RANGE_TYPES.contains(&n.event_type))
    {
        let Some(end) = n.end else { continue };
        let hit = *matches
            .entry(n.name)
            .or_insert_with(|| PREP_PATTERNS.map(|p| tl.names.get(n.name).contains(p)));
        let lists = prep.entry(n.proc).or_default();
        for (i, _) in hit.iter().enumerate().filter(|(_, h)| **h) {
            lists[i].push((n.start, end));
        }
    }
    Model {
        busy: busy.into_iter().map(|(d, v)| (d, union(v))).collect(),
        nccl: nccl.into_iter().map(|(d, v)| (d, union(v))).collect(),
        proc_kernels: pk
            .into_iter()
            .map(|(p, per_dev)| (p, per_dev.into_iter().map(|(d, v)| (d, union(v))).collect()))
            .collect(),
        launches: launches.into_iter().map(|(p, v)| (p, union(v))).collect(),
        prep: prep
            .into_iter()
            .map(|(p, lists)| (p, lists.map(union)))
            .collect(),
    }
}

/// One scope's metrics plus the per-device figures.
struct Scope {
    metrics: Metrics,
    per_device: Vec<(u32, f64, f64)>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn scope(m: &Model, w: &[Iv]) -> Scope {
    let wlen = measure(w) as f64;
    let mut per_device = Vec::new();
    let mut nccl_ratios = Vec::new();
    let mut busy_in_w: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
    for (&d, busy) in &m.busy {
        let clipped = intersect(busy, w);
        let b = measure(&clipped);
        if b == 0 {
            continue;
        }
        let n = m.nccl.get(&d).map_or(0, |v| measure(&intersect(v, w)));
        per_device.push((d, 1.0 - b as f64 / wlen, b as f64 / wlen));
        nccl_ratios.push(n as f64 / b as f64);
        busy_in_w.insert(d, clipped);
    }
    let procs: Vec<u8> = m
        .proc_kernels
        .keys()
        .copied()
        .filter(|&p| !devices_in(m, p, w).is_empty())
        .collect();
    let launch: Vec<f64> = procs
        .iter()
        .map(|p| m.launches.get(p).map_or(0, |l| measure(&intersect(l, w))) as f64 / wlen)
        .collect();
    let prep: Vec<[f64; 3]> = procs
        .iter()
        .filter_map(|&p| host_prep(m, p, w, &busy_in_w))
        .collect();
    let col = |i: usize| mean(&prep.iter().map(|x| x[i]).collect::<Vec<_>>());
    let metrics = Metrics {
        gpu_idle_ratio: mean(&per_device.iter().map(|x| x.1).collect::<Vec<_>>()),
        launch_overhead_ratio: mean(&launch),
        gpu_utilization: mean(&per_device.iter().map(|x| x.2).collect::<Vec<_>>()),
        nccl_ratio: mean(&nccl_ratios),
        host_prep_exposed_ratio: col(0),
        host_prep_perf_impact: col(1),
        host_prep_idle_attribution: col(2),
    };
    Scope {
        metrics,
        per_device,
    }
}

/// The devices on which process `p` ran a kernel overlapping `w`.
fn devices_in(m: &Model, p: u8, w: &[Iv]) -> Vec<u32> {
    m.proc_kernels.get(&p).map_or_else(Vec::new, |per_dev| {
        per_dev
            .iter()
            .filter(|(_, k)| measure(&intersect(k, w)) > 0)
            .map(|(&d, _)| d)
            .collect()
    })
}

/// `[M3a, M3b, M3c]` of process `p` in `w`, or `None` when it has no host-prep range there.
fn host_prep(m: &Model, p: u8, w: &[Iv], busy_in_w: &BTreeMap<u32, Vec<Iv>>) -> Option<[f64; 3]> {
    // A pattern is chosen when some range of it overlaps W, i.e. its union meets W.
    let prep = m
        .prep
        .get(&p)?
        .iter()
        .map(|u| intersect(u, w))
        .find(|x| measure(x) > 0)?;
    let own_busy: Vec<Iv> = devices_in(m, p, w)
        .iter()
        .flat_map(|d| busy_in_w.get(d).cloned().unwrap_or_default())
        .collect();
    let own_busy = union(own_busy);
    let wlen = measure(w) as f64;
    let idle = wlen - measure(&own_busy) as f64;
    let prep_len = measure(&prep) as f64;
    let exposed = prep_len - measure(&intersect(&prep, &own_busy)) as f64;
    let m3c = if idle > 0.0 { exposed / idle } else { 0.0 };
    Some([exposed / prep_len, exposed / wlen, m3c])
}

/// Forward steps after TP de-duplication: `(start, end, ctx, generation)`.
fn dedup_steps(raw: &[Step]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut group_first_start = Ns::MIN;
    for s in raw {
        match out.last_mut() {
            Some(last) if last.number == s.number && s.start - group_first_start < DEDUP_NS => {
                last.end = last.end.max(s.end);
            }
            _ => {
                group_first_start = s.start;
                out.push(*s);
            }
        }
    }
    out
}

/// The `standard` DETECT-SUBSET of `tl`.
pub fn answers(tl: &Timeline) -> Value {
    let m = build(tl);
    let ws = tl.kernels.iter().map(|k| k.start).min().unwrap_or(0);
    let we = tl.kernels.iter().map(|k| k.end).max().unwrap_or(0);
    let agg = scope(&m, &[(ws, we)]);
    let v = verdict::judge(&agg.metrics, &verdict::DEFAULT);
    let mut raw = parse_steps(tl, true, |t| RANGE_TYPES.contains(&t));
    raw.sort_by_key(|s| (s.start, s.end));
    let steps = dedup_steps(&raw);
    let mut phases = serde_json::Map::new();
    let mut any_phase_yes = false;
    let ctx: Vec<Step> = steps.iter().filter(|s| s.ctx > 0).copied().collect();
    let generation: Vec<Step> = steps
        .iter()
        .filter(|s| s.ctx == 0 && s.generation > 0)
        .copied()
        .collect();
    for (key, list, thr) in [
        ("context", ctx, verdict::DEFAULT),
        ("generation", generation, verdict::GENERATION),
    ] {
        if let Some((value, yes)) = phase(&m, &list, &thr) {
            any_phase_yes |= yes;
            phases.insert(key.to_string(), value);
        }
    }
    json!({
        "verdict": verdict::yes_no(v.yes || any_phase_yes),
        "aggregate_metrics": verdict::metrics_json(&agg.metrics, false),
        "crossed_count": v.crossed,
        "applicable_count": v.applicable,
        "host_prep_confirmed": v.confirmed,
        "nccl_caveat": agg.metrics.nccl_ratio.is_some_and(|x| x > verdict::NCCL_CAVEAT),
        "phases": phases,
        "per_device": agg.per_device.iter().map(|&(d, idle, util)| json!({
            "device": d, "gpu_idle_ratio": idle, "gpu_utilization": util,
        })).collect::<Vec<_>>(),
    })
}

fn phase(m: &Model, steps: &[Step], thr: &Thresholds) -> Option<(Value, bool)> {
    if steps.is_empty() {
        return None;
    }
    let w = union(steps.iter().map(|s| (s.start, s.end)).collect());
    let sc = scope(m, &w);
    Some(verdict::phase_json(steps.len(), &sc.metrics, thr, false))
}
