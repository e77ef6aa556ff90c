//! Root-cause answers (reference §7–§8 and the `standard` profile's definitions), derived from
//! how a scenario placed its steps: which steps exist, in which phase, with which requests, and
//! where each rank's forward-step range and allreduce kernels landed. Iteration grouping is not
//! re-run here: the scenario knows its iterations, one per step.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::skill::like;
use crate::synth::timeline::{Ns, Timeline};

/// One forward step as placed.
#[derive(Debug, Clone)]
pub struct PlacedStep {
    pub ctx: u32,
    pub generation: u32,
    /// The scenario phase (0-based) the step belongs to; phases are > 100 ms apart.
    pub phase: usize,
    /// Each rank's `_forward_step` range.
    pub ranks: Vec<(Ns, Ns)>,
    /// `(first start, last end, kernels)` of the step's allreduce kernels, all ranks.
    pub allreduce: Option<(Ns, Ns, u32)>,
}

impl PlacedStep {
    fn start(&self) -> Ns {
        self.ranks.iter().map(|r| r.0).min().unwrap_or(0)
    }

    fn end(&self) -> Ns {
        self.ranks.iter().map(|r| r.1).max().unwrap_or(0)
    }

    fn longest(&self) -> Ns {
        self.ranks.iter().map(|r| r.1 - r.0).max().unwrap_or(0)
    }
}

/// A scenario's steps and which phase is the benchmark.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub steps: Vec<PlacedStep>,
    pub phases: usize,
    pub benchmark_phase: usize,
}

const DEFINITIONS: &str = "iterations: one per placed step (allreduce groups or merged forward steps); benchmark = the scenario's benchmark phase. trtllm-skill: steady = steps of the whole trace with ctx 0 and gen = max gen; span = first steady start .. last steady end (TP ranks merged: min start, max end); wall_time_per_step_us = span / n; gaps between consecutive steady steps; NVTX ranges registered by textId, fully inside the span, not [Executor], top 30, / n (tp-size 1); kernels and APIs starting in [span), top 15 by total, / n; gpu_time_per_step_us = the sum of those kernels' per-step times. standard: steady = benchmark steps with ctx 0 and gen = the benchmark's max gen; a cycle = a steady step's start to the next benchmark step's start; per-step = total over cycles / cycles; NVTX time clipped to the cycles, TP ranks' copies of an op (the i-th range of that name on each rank) counted once at the longest; kernels counted when their launch call starts in a cycle; gpu_time_per_step_us = per device the union of every placed GPU operation (kernels, graph replays, copies, memsets) clipped to the cycles, summed over devices, / cycles; percentiles p50 = s[n/2], p90 = s[int(0.9 n)]; kernel_classes: summed durations and rows per class of every placed GPU work row (a kernel's class as the scenario placed it, other work by its kind) launched in the steady cycles (per_step, / cycles), in the benchmark's context or generation cycles (a step's start to the next benchmark step's start, / their cycles; phases only when both exist), or anywhere (window_total); kernels and graph replays by their launch call's start, copies and memsets by their own start";

/// `{"definitions", "standard", "trtllm-skill"}`.
pub fn analyze_answers(tl: &Timeline, p: &Placement) -> Value {
    json!({
        "definitions": DEFINITIONS,
        "standard": standard(tl, p),
        "trtllm-skill": skill(tl, p),
    })
}

/// Facts both profiles share: method, phases, benchmark iterations and window.
fn isolation(p: &Placement) -> Map<String, Value> {
    let bench: Vec<&PlacedStep> = p
        .steps
        .iter()
        .filter(|s| s.phase == p.benchmark_phase)
        .collect();
    let allreduce = p.steps.iter().any(|s| s.allreduce.is_some());
    let window = match (bench.first(), bench.last()) {
        (Some(f), Some(l)) if allreduce => f.allreduce.zip(l.allreduce).map(|(a, b)| (a.0, b.1)),
        (Some(f), Some(l)) => Some((f.start(), l.end())),
        _ => None,
    };
    let mut m = Map::new();
    m.insert(
        "iteration_method".into(),
        json!(if allreduce { "allreduce" } else { "nvtx" }),
    );
    m.insert("total_iterations".into(), json!(p.steps.len()));
    m.insert("phases".into(), json!(p.phases));
    m.insert("benchmark_phase".into(), json!(p.benchmark_phase));
    m.insert("iterations".into(), json!(bench.len()));
    m.insert(
        "common_size".into(),
        json!(p.steps.first().and_then(|s| s.allreduce).map_or(1, |a| a.2)),
    );
    m.insert(
        "benchmark_window".into(),
        window.map_or(Value::Null, |(s, e)| json!({"start_ns": s, "end_ns": e})),
    );
    m
}

/// `s[n/2]` and `s[int(0.9·n)]` of the values (µs).
fn percentiles(mut v: Vec<f64>) -> Value {
    v.sort_by(f64::total_cmp);
    let at = |i: usize| {
        v.get(i.min(v.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    json!({"p50": at(v.len() / 2), "p90": at((v.len() as f64 * 0.9) as usize)})
}

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// Per-name `(total ns, count)` → `{name: total µs / n}` of the `limit` largest totals.
fn per_step(totals: HashMap<&str, (Ns, u64)>, n: f64, limit: usize) -> (Value, u64) {
    let mut v: Vec<(&str, (Ns, u64))> = totals.into_iter().collect();
    v.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    v.truncate(limit);
    let count = v.iter().map(|(_, (_, c))| c).sum();
    let map: Map<String, Value> = v
        .into_iter()
        .map(|(k, (ns, _))| (k.to_string(), json!(us(ns) / n)))
        .collect();
    (Value::Object(map), count)
}

/// The reference script's numbers (`tp-size` 1).
fn skill(tl: &Timeline, p: &Placement) -> Value {
    let mut m = isolation(p);
    let max_gen = p.steps.iter().map(|s| s.generation).max().unwrap_or(0);
    let steady: Vec<&PlacedStep> = p
        .steps
        .iter()
        .filter(|s| s.ctx == 0 && s.generation == max_gen)
        .collect();
    m.insert("steady_steps".into(), json!(steady.len()));
    let (Some(first), Some(last)) = (steady.first(), steady.last()) else {
        return Value::Object(m);
    };
    let n = steady.len() as f64;
    let (ss, se) = (first.start(), last.end());
    let gaps: Vec<f64> = steady
        .windows(2)
        .map(|w| us(w[1].start() - w[0].end()))
        .collect();
    let durations: f64 = steady.iter().map(|s| us(s.longest())).sum();
    let mut nvtx: HashMap<&str, (Ns, u64)> = HashMap::new();
    for r in tl.nvtx.iter().filter(|r| !r.inline) {
        let Some(end) = r.end.filter(|&e| e > 0) else {
            continue;
        };
        let name = tl.names.get(r.name);
        if r.start >= ss && end <= se && !like("%[Executor]%", name) {
            let e = nvtx.entry(name).or_default();
            e.0 += end - r.start;
            e.1 += 1;
        }
    }
    let in_span = |t: Ns| t >= ss && t < se;
    let kernels = tally(
        tl.kernels
            .iter()
            .filter(|k| in_span(k.start))
            .map(|k| (tl.names.get(k.short), k.end - k.start)),
    );
    let apis = tally(
        tl.apis
            .iter()
            .filter(|a| in_span(a.start))
            .map(|a| (tl.names.get(a.name), a.end - a.start)),
    );
    let (kernel_map, kernel_count) = per_step(kernels, n, 15);
    let kernel_time: f64 = kernel_map
        .as_object()
        .map_or(0.0, |o| o.values().filter_map(Value::as_f64).sum());
    m.insert("gpu_time_per_step_us".into(), json!(kernel_time));
    m.insert("wall_time_per_step_us".into(), json!(us(se - ss) / n));
    m.insert("inter_step_gap_us".into(), percentiles(gaps));
    m.insert("step_duration_avg_us".into(), json!(durations / n));
    m.insert("kernels_per_step".into(), json!(kernel_count as f64 / n));
    m.insert("nvtx_per_step_us".into(), per_step(nvtx, n, 30).0);
    m.insert("kernel_time_per_step_us".into(), kernel_map);
    m.insert("api_time_per_step_us".into(), per_step(apis, n, 15).0);
    Value::Object(m)
}

fn tally<'a>(events: impl Iterator<Item = (&'a str, Ns)>) -> HashMap<&'a str, (Ns, u64)> {
    let mut out: HashMap<&str, (Ns, u64)> = HashMap::new();
    for (name, d) in events {
        let e = out.entry(name).or_default();
        e.0 += d;
        e.1 += 1;
    }
    out
}

/// Time `[s, e)` spends in the sorted, disjoint cycles.
fn clipped(cycles: &[(Ns, Ns)], s: Ns, e: Ns) -> Ns {
    cycles
        .iter()
        .map(|&(a, b)| (e.min(b) - s.max(a)).max(0))
        .sum()
}

fn in_cycles(cycles: &[(Ns, Ns)], t: Ns) -> bool {
    cycles.iter().any(|&(a, b)| t >= a && t < b)
}

/// The `standard` profile's numbers.
fn standard(tl: &Timeline, p: &Placement) -> Value {
    let mut m = isolation(p);
    let bench: Vec<&PlacedStep> = p
        .steps
        .iter()
        .filter(|s| s.phase == p.benchmark_phase)
        .collect();
    let max_gen = bench.iter().map(|s| s.generation).max().unwrap_or(0);
    let is_steady = |s: &PlacedStep| s.ctx == 0 && s.generation == max_gen;
    let steady: Vec<&&PlacedStep> = bench.iter().filter(|s| is_steady(s)).collect();
    m.insert("steady_steps".into(), json!(steady.len()));
    // (start, next start, end) per steady step followed by another benchmark step.
    let cycles3: Vec<(Ns, Ns, Ns)> = bench
        .windows(2)
        .filter(|w| is_steady(w[0]))
        .map(|w| (w[0].start(), w[1].start(), w[0].end()))
        .collect();
    if cycles3.is_empty() {
        return Value::Object(m);
    }
    let n = cycles3.len() as f64;
    let cycles: Vec<(Ns, Ns)> = merge(cycles3.iter().map(|c| (c.0, c.1)).collect());
    let walls: Vec<f64> = cycles3.iter().map(|c| us(c.1 - c.0)).collect();
    let durations: f64 = steady.iter().map(|s| us(s.end() - s.start())).sum();
    let launched: HashMap<(u8, u32), Ns> = tl
        .apis
        .iter()
        .map(|a| ((a.proc, a.corr), a.start))
        .collect();
    let kernels = tally(
        tl.kernels
            .iter()
            .filter(|k| {
                launched
                    .get(&(k.proc, k.corr))
                    .is_some_and(|&t| in_cycles(&cycles, t))
            })
            .map(|k| (tl.names.get(k.short), k.end - k.start)),
    );
    let apis = tally(
        tl.apis
            .iter()
            .filter(|a| in_cycles(&cycles, a.start))
            .map(|a| (tl.names.get(a.name), a.end - a.start)),
    );
    let (kernel_map, kernel_count) = per_step(kernels, n, usize::MAX);
    m.insert("step_cycles".into(), json!(cycles3.len()));
    m.insert(
        "wall_time_per_step_us".into(),
        json!(walls.iter().sum::<f64>() / n),
    );
    m.insert("step_wall_times_us".into(), json!(walls));
    m.insert(
        "step_cycles_ns".into(),
        json!(cycles3.iter().map(|c| [c.0, c.1]).collect::<Vec<_>>()),
    );
    m.insert(
        "inter_step_gap_us".into(),
        percentiles(cycles3.iter().map(|c| us(c.1 - c.2)).collect()),
    );
    m.insert(
        "step_duration_avg_us".into(),
        json!(durations / steady.len() as f64),
    );
    m.insert("kernels_per_step".into(), json!(kernel_count as f64 / n));
    m.insert(
        "gpu_time_per_step_us".into(),
        json!(us(busy_in(tl, &cycles)) / n),
    );
    m.insert("nvtx_per_step_us".into(), nvtx_standard(tl, &cycles, n));
    m.insert("kernel_time_per_step_us".into(), kernel_map);
    m.insert(
        "api_time_per_step_us".into(),
        per_step(apis, n, usize::MAX).0,
    );
    // Context and generation cycles of the benchmark steps, when it holds both.
    let (mut context, mut generation) = (Vec::new(), Vec::new());
    for w in bench.windows(2) {
        let cycle = (w[0].start(), w[1].start());
        if w[0].ctx > 0 {
            context.push(cycle);
        } else {
            generation.push(cycle);
        }
    }
    let mut classes = Map::new();
    classes.insert("per_step".into(), class_time(tl, &launched, &cycles, n));
    if !context.is_empty() && !generation.is_empty() {
        let mut phases = Map::new();
        for (scope, spans) in [("context steps", context), ("generation steps", generation)] {
            let k = spans.len() as f64;
            phases.insert(scope.into(), class_time(tl, &launched, &merge(spans), k));
        }
        classes.insert("phases".into(), Value::Object(phases));
    }
    classes.insert(
        "window_total".into(),
        class_time(tl, &launched, &[(Ns::MIN, Ns::MAX)], 1.0),
    );
    m.insert("kernel_classes".into(), Value::Object(classes));
    Value::Object(m)
}

/// `{class: {"us": GPU time, "count": rows}}` per unit (`n` cycles) of every placed GPU work row
/// launched inside `spans` (a kernel or graph replay by its launch call's start, a copy or
/// memset by its own start), summed durations; a kernel's class is the one the generator placed
/// it as (`kinds::placed_class`), other work's its kind.
fn class_time(
    tl: &Timeline,
    launched: &HashMap<(u8, u32), Ns>,
    spans: &[(Ns, Ns)],
    n: f64,
) -> Value {
    use super::work::Source;
    let mut out: BTreeMap<&str, (Ns, u64)> = BTreeMap::new();
    for w in super::work::rows(tl) {
        let (class, by_call) = match w.source {
            Source::Kernel(i) => {
                let name = tl.kernels.get(i).map_or("", |k| tl.names.get(k.short));
                (
                    crate::synth::kinds::placed_class(name).unwrap_or("unplaced"),
                    true,
                )
            }
            Source::Replay(_) => ("replay", true),
            Source::Memcpy(_) => ("copy", false),
            Source::Memset(_) => ("memset", false),
        };
        let at = match by_call {
            true => launched.get(&(w.proc, w.corr)).copied().unwrap_or(w.start),
            false => w.start,
        };
        if in_cycles(spans, at) {
            let e = out.entry(class).or_default();
            e.0 += (w.end - w.start).max(0);
            e.1 += 1;
        }
    }
    Value::Object(
        out.into_iter()
            .map(|(k, (ns, rows))| {
                (
                    k.to_string(),
                    json!({"us": us(ns) / n, "count": rows as f64 / n}),
                )
            })
            .collect(),
    )
}

/// Every placed GPU operation (kernels, graph replays, copies, memsets): per device, their
/// union clipped to the cycles, summed over devices.
fn busy_in(tl: &Timeline, cycles: &[(Ns, Ns)]) -> Ns {
    let mut per_device: BTreeMap<u32, Vec<(Ns, Ns)>> = BTreeMap::new();
    for w in super::work::rows(tl)
        .into_iter()
        .filter(|w| w.end > w.start)
    {
        per_device
            .entry(w.device)
            .or_default()
            .push((w.start, w.end));
    }
    per_device
        .into_values()
        .flat_map(merge)
        .map(|(s, e)| clipped(cycles, s, e))
        .sum()
}

fn merge(mut v: Vec<(Ns, Ns)>) -> Vec<(Ns, Ns)> {
    v.sort_unstable();
    let mut out: Vec<(Ns, Ns)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Each rank's (process index) ranges of one name, in placement order.
type RankRanges = BTreeMap<u8, Vec<(Ns, Ns)>>;

/// NVTX ops clipped to the cycles; the i-th range of a name on each rank is one op instance.
fn nvtx_standard(tl: &Timeline, cycles: &[(Ns, Ns)], n: f64) -> Value {
    let mut per_name: BTreeMap<&str, RankRanges> = BTreeMap::new();
    for r in &tl.nvtx {
        let (Some(end), true) = (r.end, r.event_type == 59) else {
            continue;
        };
        let name = tl.names.get(r.name);
        if !name.starts_with("[Executor] _forward_step") {
            per_name
                .entry(name)
                .or_default()
                .entry(r.proc)
                .or_default()
                .push((r.start, end));
        }
    }
    let mut totals: HashMap<&str, (Ns, u64)> = HashMap::new();
    for (name, ranks) in per_name {
        let copies = ranks.values().map(Vec::len).max().unwrap_or(0);
        for i in 0..copies {
            let members: Vec<(Ns, Ns)> = ranks.values().filter_map(|v| v.get(i).copied()).collect();
            let counted = members
                .iter()
                .any(|&(s, e)| clipped(cycles, s, e) > 0 || in_cycles(cycles, s));
            if counted {
                let longest = members
                    .iter()
                    .map(|&(s, e)| clipped(cycles, s, e))
                    .max()
                    .unwrap_or(0);
                let t = totals.entry(name).or_default();
                t.0 += longest;
                t.1 += 1;
            }
        }
    }
    per_step(totals, n, usize::MAX).0
}

/// `{profile: {nvtx name: status}}` of target against baseline (reference §8.4 rules), and the
/// expected conclusion: the inter-step gap p50 grew more than the mean step duration, or not.
pub fn expected_comparison(baseline: &Value, target: &Value) -> Value {
    let mut out = Map::new();
    for profile in ["standard", "trtllm-skill"] {
        let (b, t) = (&baseline[profile], &target[profile]);
        let get = |v: &Value, k: &str| {
            v["nvtx_per_step_us"]
                .get(k)
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
        };
        let mut names: Vec<String> = Vec::new();
        for side in [b, t] {
            if let Some(obj) = side["nvtx_per_step_us"].as_object() {
                names.extend(obj.keys().cloned());
            }
        }
        names.sort();
        names.dedup();
        let statuses: Map<String, Value> = names
            .into_iter()
            .map(|name| {
                let (bv, tv) = (get(b, &name), get(t, &name));
                let status = if bv == 0.0 {
                    "NEW"
                } else if tv == 0.0 {
                    "REMOVED"
                } else if (tv - bv) / bv * 100.0 > 50.0 {
                    "REGRESSION"
                } else if (tv - bv) / bv * 100.0 < -30.0 {
                    "IMPROVED"
                } else {
                    "unchanged"
                };
                (name, json!(status))
            })
            .collect();
        let delta = |k: &str, sub: Option<&str>| {
            let pick = |v: &Value| sub.map_or(&v[k], |s| &v[k][s]).as_f64().unwrap_or(0.0);
            pick(t) - pick(b)
        };
        let host = delta("inter_step_gap_us", Some("p50")) > delta("step_duration_avg_us", None);
        out.insert(
            profile.into(),
            json!({
                "nvtx_status": statuses,
                "host_overhead_dominates": host,
            }),
        );
    }
    Value::Object(out)
}
