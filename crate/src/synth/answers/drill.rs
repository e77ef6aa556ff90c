//! Drill-down and explainer answers (spec §4–§5), derived from the placed rows with plain code:
//! sorted lists, unions, linear scans. Never calls `drill`, `explain` or `model`.
//!
//! Definitions stated once, here and in the answers file:
//! - a lane's gaps are the holes between the union of its GPU work rows: kernels, graph-level
//!   replays (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`), memcpy and memset rows (lane = device and
//!   stream, or device: `idle_buckets` are the device-idle gaps of the `standard` profile's busy
//!   time). A row that takes no time (end ≤ start) is no work and is skipped. A lane reads its
//!   rows by start, then end, then table (kernels, graph replays, memcpy, memset), then place in
//!   the table; the row before a gap is the last so read to reach the busy interval's end, the
//!   row after is the first read after the gap;
//! - a device's idle time is counted over the window of the verdict (spec §2): the first start
//!   to the last end of any GPU work row of the trace (rows taking no time included). Its
//!   `idle_buckets` hold the device's gaps and two more stretches: from the window's start to
//!   its first row, and from its last row's end to the window's end (no row on that side:
//!   `null`). The per-stream buckets keep the gaps only;
//! - a gap names a kernel by its short name, a replay `[CUDA graph replay]`, a copy
//!   `[CUDA memcpy <direction>]` by its `copyKind` (1 `Host-to-Device`, 2 `Device-to-Host`,
//!   8 `Device-to-Device`, 9 `Host-to-Host`, 10 `Peer-to-Peer`), a memset `[CUDA memset]`;
//! - the largest gaps are ordered by size, then earlier start, then lower device and stream;
//! - a row's call is the runtime call of its process with its correlation id (a kernel's or
//!   replay's launch, a copy's `cudaMemcpy*`, a memset's `cudaMemset*`). A gap's NVTX ranges are
//!   the push/pop ranges overlapping it on the threads of the calls of the rows on either side
//!   (on any thread of those rows' processes when neither call is in the trace); its API calls
//!   are all runtime calls of those rows' processes overlapping it; both aggregated by name,
//!   largest overlap first, ≤ 10;
//! - `graphs` and `explain` read the kernel table only;
//! - a kernel is graph-launched when it has a graph node id or its launch call is a graph launch;
//!   it belongs to a phase when its launch call starts inside one of that phase's steps.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::parse_steps;
use super::work::{self, Source, Work};
use crate::synth::timeline::{Kernel, Ns, Timeline};

/// Top gaps listed, and names listed per gap.
const TOP: usize = 10;
const NAMES: usize = 10;
/// Above this many kernels (benchmark files) the drill answers are skipped: tests use small runs.
const MAX_KERNELS: usize = 1_000_000;

fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// Which of the nine buckets `[lo, hi)` a gap of `g` ns falls in.
fn bucket(g: Ns) -> usize {
    const UPPER_NS: [Ns; 8] = [
        1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
    ];
    UPPER_NS.iter().filter(|&&hi| g >= hi).count()
}

/// A gap between GPU work rows `prev` and `next` (indices into the rows in lane order; `None`:
/// the window's start or end).
#[derive(Debug, Clone, Copy)]
struct Gap {
    start: Ns,
    end: Ns,
    device: u32,
    stream: Option<u8>,
    prev: Option<usize>,
    next: Option<usize>,
}

/// Every GPU work row that takes time, in the order a lane reads them: start, end, then table
/// (kernels, graph replays, memcpy, memset), then place in the table.
fn work_in_order(tl: &Timeline) -> Vec<Work> {
    let mut rows = work::rows(tl);
    rows.retain(|w| w.end > w.start);
    rows.sort_by_key(|w| (w.start, w.end, w.source));
    rows
}

/// The gaps of one lane (`lane`: indices into `rows`, in order): union, then holes; with a
/// `window`, also the stretches from its start to the first row and from the last row's end to
/// its end.
fn lane_gaps(
    rows: &[Work],
    lane: &[usize],
    stream: Option<u8>,
    window: Option<(Ns, Ns)>,
) -> Vec<Gap> {
    // (span start, span end, first row of span, last row of span to reach its end)
    let mut spans: Vec<(Ns, Ns, usize, usize)> = Vec::new();
    for &i in lane {
        let w = &rows[i];
        match spans.last_mut() {
            Some(sp) if w.start <= sp.1 => {
                if w.end >= sp.1 {
                    sp.1 = w.end;
                    sp.3 = i;
                }
            }
            _ => spans.push((w.start, w.end, i, i)),
        }
    }
    let mut gaps: Vec<Gap> = spans
        .windows(2)
        .filter(|w| w[1].0 > w[0].1)
        .map(|w| Gap {
            start: w[0].1,
            end: w[1].0,
            device: rows[w[0].3].device,
            stream,
            prev: Some(w[0].3),
            next: Some(w[1].2),
        })
        .collect();
    if let (Some((ws, we)), Some(first), Some(last)) = (window, spans.first(), spans.last()) {
        let device = rows[first.2].device;
        let edge = |start: Ns, end: Ns, prev: Option<usize>, next: Option<usize>| Gap {
            start,
            end,
            device,
            stream,
            prev,
            next,
        };
        if first.0 > ws {
            gaps.push(edge(ws, first.0, None, Some(first.2)));
        }
        if we > last.1 {
            gaps.push(edge(last.1, we, Some(last.3), None));
        }
    }
    gaps
}

/// The gaps of every lane: per (device, stream) when `window` is `None`, else per device with
/// the stretches at the window's edges.
fn all_gaps(rows: &[Work], window: Option<(Ns, Ns)>) -> Vec<Gap> {
    let mut lanes: BTreeMap<(u32, Option<u8>), Vec<usize>> = BTreeMap::new();
    for (i, w) in rows.iter().enumerate() {
        let key = (w.device, window.is_none().then_some(w.stream));
        lanes.entry(key).or_default().push(i);
    }
    lanes
        .iter()
        .flat_map(|(&(_, stream), lane)| lane_gaps(rows, lane, stream, window))
        .collect()
}

fn buckets(gaps: &[Gap]) -> Value {
    let mut count = [0u64; 9];
    let mut total = [0 as Ns; 9];
    for g in gaps.iter().map(|g| g.end - g.start) {
        count[bucket(g)] += 1;
        total[bucket(g)] += g;
    }
    (0..9)
        .map(|b| json!({"count": count[b], "total_us": us(total[b])}))
        .collect()
}

/// The name nsys's timeline gives a copy of `copyKind` `kind` (`ENUM_CUDA_MEMCPY_OPER`), for the
/// kinds the generator writes.
fn copy_name(kind: u8) -> &'static str {
    match kind {
        1 => "[CUDA memcpy Host-to-Device]",
        2 => "[CUDA memcpy Device-to-Host]",
        8 => "[CUDA memcpy Device-to-Device]",
        9 => "[CUDA memcpy Host-to-Host]",
        10 => "[CUDA memcpy Peer-to-Peer]",
        other => panic!("the drill answers name no copy of copyKind {other}"),
    }
}

/// What a gap names the row on one of its sides: a kernel by its short name, the other rows as
/// nsys's timeline names them.
fn row_name<'t>(tl: &'t Timeline, w: &Work) -> &'t str {
    match w.source {
        Source::Kernel(i) => tl.names.get(tl.kernels[i].short),
        Source::Replay(_) => "[CUDA graph replay]",
        Source::Memcpy(i) => copy_name(tl.memcpy[i].kind),
        Source::Memset(_) => "[CUDA memset]",
    }
}

/// Name → (count, overlap ns) as the ranked list of the answers.
fn ranked(tl: &Timeline, acc: HashMap<u32, (u64, Ns)>) -> Value {
    let mut v: Vec<(&str, u64, Ns)> = acc
        .into_iter()
        .map(|(name, (n, ns))| (tl.names.get(name), n, ns))
        .collect();
    v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    v.truncate(NAMES);
    v.into_iter()
        .map(|(name, count, ns)| json!({"name": name, "count": count, "overlap_us": us(ns)}))
        .collect()
}

fn top_gaps(
    tl: &Timeline,
    rows: &[Work],
    calls: &HashMap<(u8, u32), usize>,
    mut gaps: Vec<Gap>,
) -> Value {
    gaps.sort_by_key(|g| {
        (
            std::cmp::Reverse(g.end - g.start),
            g.start,
            g.device,
            g.stream,
        )
    });
    gaps.truncate(TOP);
    gaps.iter()
        .map(|g| {
            let (wp, wn) = (g.prev.map(|i| &rows[i]), g.next.map(|i| &rows[i]));
            let sides: Vec<&Work> = [wp, wn].into_iter().flatten().collect();
            let processes: Vec<u8> = sides.iter().map(|w| w.proc).collect();
            // The threads of the calls that issued the rows on either side.
            let threads: Vec<(u8, u32)> = sides
                .iter()
                .filter_map(|w| calls.get(&(w.proc, w.corr)))
                .map(|&a| (tl.apis[a].proc, tl.apis[a].tid))
                .collect();
            let ours = |proc: u8, tid: u32| match threads.is_empty() {
                true => processes.contains(&proc),
                false => threads.contains(&(proc, tid)),
            };
            let overlap = |s: Ns, e: Ns| e.min(g.end) - s.max(g.start);
            let mut nvtx: HashMap<u32, (u64, Ns)> = HashMap::new();
            for r in &tl.nvtx {
                let Some(end) = r.end.filter(|&e| e > 0 && e >= r.start) else {
                    continue;
                };
                if r.event_type == 59 && ours(r.proc, r.tid) && overlap(r.start, end) > 0 {
                    let e = nvtx.entry(r.name).or_default();
                    *e = (e.0 + 1, e.1 + overlap(r.start, end));
                }
            }
            let mut api: HashMap<u32, (u64, Ns)> = HashMap::new();
            for a in &tl.apis {
                if processes.contains(&a.proc) && overlap(a.start, a.end) > 0 {
                    let e = api.entry(a.name).or_default();
                    *e = (e.0 + 1, e.1 + overlap(a.start, a.end));
                }
            }
            json!({
                "device": g.device,
                "stream": g.stream,
                "start_ns": g.start,
                "end_ns": g.end,
                "gap_us": us(g.end - g.start),
                "prev_kernel": wp.map(|w| row_name(tl, w)),
                "next_kernel": wn.map(|w| row_name(tl, w)),
                "nvtx": ranked(tl, nvtx),
                "api": ranked(tl, api),
            })
        })
        .collect()
}

/// Forward steps per phase after TP de-duplication (same number, starts < 100 µs apart):
/// `[context, generation]`, each as (step count, union of step intervals).
fn phase_windows(tl: &Timeline) -> [(usize, Vec<(Ns, Ns)>); 2] {
    let mut steps = parse_steps(tl, true, |t| t == 59);
    steps.sort_by_key(|s| (s.start, s.end));
    let mut out: [(usize, Vec<(Ns, Ns)>); 2] = [(0, Vec::new()), (0, Vec::new())];
    let mut i = 0;
    while i < steps.len() {
        let first = steps[i];
        let mut j = i + 1;
        while j < steps.len()
            && steps[j].number == first.number
            && steps[j].start - first.start < 100_000
        {
            j += 1;
        }
        let phase = if first.ctx > 0 {
            Some(0)
        } else if first.generation > 0 {
            Some(1)
        } else {
            None
        };
        if let Some(p) = phase {
            out[p].0 += 1;
            out[p]
                .1
                .extend(steps[i..j].iter().map(|s| (s.start, s.end)));
        }
        i = j;
    }
    for w in &mut out {
        w.1 = super::ivl::union(std::mem::take(&mut w.1));
    }
    out
}

fn is_graph_kernel(tl: &Timeline, k: &Kernel, launch: Option<usize>) -> bool {
    k.graph_node != 0
        || launch.is_some_and(|a| {
            let name = tl.names.get(tl.apis[a].name);
            name.starts_with("cudaGraphLaunch") || name.starts_with("cuGraphLaunch")
        })
}

/// Every launch call by (proc, corr).
fn all_calls(tl: &Timeline) -> HashMap<(u8, u32), usize> {
    tl.apis
        .iter()
        .enumerate()
        .map(|(i, a)| ((a.proc, a.corr), i))
        .collect()
}

fn graphs(tl: &Timeline, calls: &HashMap<(u8, u32), usize>) -> Value {
    let phases = phase_windows(tl);
    let mut per_phase = [(0u64, 0u64); 2];
    let mut eager: BTreeMap<&str, (u64, Ns)> = BTreeMap::new();
    let mut graph = 0u64;
    for k in &tl.kernels {
        let launch = calls.get(&(k.proc, k.corr)).copied();
        let is_graph = is_graph_kernel(tl, k, launch);
        if is_graph {
            graph += 1;
        } else {
            let e = eager.entry(tl.names.get(k.short)).or_default();
            *e = (e.0 + 1, e.1 + (k.end - k.start));
        }
        let at = launch.map_or(k.start, |a| tl.apis[a].start);
        for (p, (_, spans)) in per_phase.iter_mut().zip(&phases) {
            if super::ivl::covers(spans, at) {
                p.0 += 1;
                p.1 += u64::from(is_graph);
            }
        }
    }
    let mut eager_list: Vec<(&str, u64, Ns)> =
        eager.into_iter().map(|(n, (c, t))| (n, c, t)).collect();
    eager_list.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    let phase = |i: usize| json!({"steps": phases[i].0, "kernels": per_phase[i].0, "graph_kernels": per_phase[i].1});
    json!({
        "graph_kernels": graph,
        "eager_kernels": tl.kernels.len() as u64 - graph,
        "context": phase(0),
        "generation": phase(1),
        "eager_by_name": eager_list.iter().map(|(n, c, t)| json!({"name": n, "count": c, "total_us": us(*t)})).collect::<Vec<_>>(),
    })
}

/// `s[floor(n × q)]` of sorted `s` (clamped), in µs.
fn quantile(s: &[Ns], q: f64) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    us(s[((s.len() as f64 * q) as usize).min(s.len() - 1)])
}

fn explain(tl: &Timeline, calls: &HashMap<(u8, u32), usize>) -> Value {
    let mut by_name: BTreeMap<&str, Vec<Ns>> = BTreeMap::new();
    let mut latency: Vec<Ns> = Vec::new();
    for k in &tl.kernels {
        by_name
            .entry(tl.names.get(k.short))
            .or_default()
            .push(k.end - k.start);
        if let Some(&a) = calls.get(&(k.proc, k.corr))
            && tl
                .names
                .get(tl.apis[a].name)
                .starts_with("cudaLaunchKernel")
        {
            latency.push(k.start - tl.apis[a].end);
        }
    }
    let kernels: Vec<Value> = by_name
        .iter_mut()
        .map(|(name, d)| {
            d.sort_unstable();
            json!({
                "name": name, "count": d.len(), "total_us": us(d.iter().sum()),
                "min_us": us(d[0]), "max_us": us(d[d.len() - 1]),
                "p50_us": quantile(d, 0.5), "p90_us": quantile(d, 0.9),
            })
        })
        .collect();
    latency.sort_unstable();
    let sync_names = [
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
    ];
    let syncs: Vec<&crate::synth::timeline::Api> = tl
        .apis
        .iter()
        .filter(|a| {
            sync_names
                .iter()
                .any(|s| tl.names.get(a.name).starts_with(s))
        })
        .collect();
    json!({
        "kernels": kernels,
        "launch_latency": {
            "kernels": latency.len(),
            "p50_us": quantile(&latency, 0.5),
            "p90_us": quantile(&latency, 0.9),
            "p99_us": quantile(&latency, 0.99),
        },
        "syncs": {"calls": syncs.len(), "total_us": us(syncs.iter().map(|a| a.end - a.start).sum())},
        "memcpy": {"count": tl.memcpy.len(), "bytes": tl.memcpy.iter().map(|m| m.bytes).sum::<i64>()},
        "nvtx_gpu": nvtx_gpu(tl, calls),
    })
}

/// The name the explainer reports a range under: the forward steps' ranges, each named for its
/// step, under the marker's pattern.
fn reported_name<'n>(step: &regex::Regex, name: &'n str) -> &'n str {
    match step.is_match(name) {
        true => "[Executor] _forward_step N: C ctx reqs, G gen reqs",
        false => name,
    }
}

/// GPU time by the innermost push/pop range open on the launching thread at the launch call
/// (latest start, then shortest), and the share of kernel time attributed.
fn nvtx_gpu(tl: &Timeline, calls: &HashMap<(u8, u32), usize>) -> Value {
    type Ranges = Vec<(Ns, Ns, u32)>;
    let mut per_thread: HashMap<(u8, u32), Ranges> = HashMap::new();
    for r in &tl.nvtx {
        if let Some(end) = r
            .end
            .filter(|&e| r.event_type == 59 && e > 0 && e >= r.start)
        {
            per_thread
                .entry((r.proc, r.tid))
                .or_default()
                .push((r.start, end, r.name));
        }
    }
    let step = regex::Regex::new(r"^\[Executor\] _forward_step \d+: \d+ ctx reqs, \d+ gen reqs$")
        .expect("constant regex");
    // In (start, longest first) order: walking back from the last range started by `t`, the
    // first one still open at `t` has the latest start, then the shortest.
    for ranges in per_thread.values_mut() {
        ranges.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
    }
    let mut gpu: BTreeMap<&str, Ns> = BTreeMap::new();
    let (mut attributed, mut total) = (0 as Ns, 0 as Ns);
    for k in &tl.kernels {
        total += k.end - k.start;
        let Some(&a) = calls.get(&(k.proc, k.corr)) else {
            continue;
        };
        let (t, key) = (tl.apis[a].start, (tl.apis[a].proc, tl.apis[a].tid));
        let inner = per_thread.get(&key).and_then(|v| {
            v[..v.partition_point(|r| r.0 <= t)]
                .iter()
                .rev()
                .find(|r| t < r.1)
        });
        if let Some(r) = inner {
            attributed += k.end - k.start;
            *gpu.entry(reported_name(&step, tl.names.get(r.2)))
                .or_default() += k.end - k.start;
        }
    }
    json!({
        "attributed_us": us(attributed),
        "kernel_us": us(total),
        "by_name": gpu.iter().map(|(n, t)| json!({"name": n, "gpu_us": us(*t)})).collect::<Vec<_>>(),
    })
}

/// The `drill` answers of any scenario (skipped above `MAX_KERNELS` kernels).
pub fn drill_answers(tl: &Timeline) -> Value {
    if tl.kernels.len() > MAX_KERNELS {
        return Value::Null;
    }
    let window = work::rows(tl).iter().fold(None, |w: Option<(Ns, Ns)>, r| {
        Some(w.map_or((r.start, r.end), |(s, e)| (s.min(r.start), e.max(r.end))))
    });
    let rows = work_in_order(tl);
    let stream_gaps = all_gaps(&rows, None);
    let idle_gaps = window.map_or_else(Vec::new, |w| all_gaps(&rows, Some(w)));
    let calls = all_calls(tl);
    json!({
        "definitions": "see crate/src/synth/answers/drill.rs: gaps are holes in each lane's union of GPU work rows (kernels, graph replays, memcpy, memset; rows taking no time skipped; lane = device+stream, or device: the standard profile's idle time, counted over the verdict's window, first start to last end of any GPU work row, so a device's lane also holds the stretches from the window's start to its first row and from its last row to the window's end, null on the side with no row); gap ends named by kernel short name, [CUDA graph replay], [CUDA memcpy <direction>], [CUDA memset]; top gaps by size, earlier start, lower device/stream; NVTX = push/pop ranges overlapping the gap on the threads of the calls that issued the rows on either side (any thread of their processes when neither call is traced), API = calls of those rows' processes overlapping it, by name, largest overlap first, at most 10; graphs and explain: kernels only",
        "stream_buckets": buckets(&stream_gaps),
        "idle_buckets": buckets(&idle_gaps),
        "top_stream_gaps": top_gaps(tl, &rows, &calls, stream_gaps),
        "top_idle_gaps": top_gaps(tl, &rows, &calls, idle_gaps),
        "graphs": graphs(tl, &calls),
        "explain": explain(tl, &calls),
    })
}

/// A scenario's planned layer: per position the kernel short name and its functional block.
pub struct LayerPlan<'a> {
    pub positions: &'a [(&'a str, &'a str)],
    /// Kernels launched in each steady step before the first layer.
    pub prefix: usize,
    pub layers: usize,
}

/// The per-layer pattern the scenario placed: mean preceding gap per position over steady
/// steps (0 for a step's first kernel), blocks of consecutive equal labels ranked by
/// gap per layer × layers per step.
pub fn layer_pattern(tl: &Timeline, plan: &LayerPlan<'_>) -> Value {
    let mut steps = parse_steps(tl, true, |t| t == 59);
    let max_gen = steps.iter().map(|s| s.generation).max().unwrap_or(0);
    steps.retain(|s| s.ctx == 0 && s.generation == max_gen);
    steps.sort_by_key(|s| s.start);
    let calls = all_calls(tl);
    let mut order: Vec<usize> = (0..tl.kernels.len()).collect();
    order.sort_by_key(|&i| (tl.kernels[i].start, tl.kernels[i].end));
    let mut per_step: Vec<Vec<(usize, Ns)>> = vec![Vec::new(); steps.len()];
    let mut busy_until: Option<Ns> = None;
    for &i in &order {
        let k = &tl.kernels[i];
        let gap = busy_until.map_or(0, |b| (k.start - b).max(0));
        busy_until = Some(busy_until.map_or(k.end, |b| b.max(k.end)));
        let at = calls
            .get(&(k.proc, k.corr))
            .map_or(k.start, |&a| tl.apis[a].start);
        if let Some(s) = steps.iter().position(|s| s.start <= at && at < s.end) {
            let first = per_step[s].is_empty();
            per_step[s].push((i, if first { 0 } else { gap }));
        }
    }
    let width = plan.positions.len();
    let mut gap_sum = vec![0 as Ns; width];
    let mut placed_as_planned = true;
    for seq in &per_step {
        for (n, &(i, gap)) in seq
            .iter()
            .skip(plan.prefix)
            .take(width * plan.layers)
            .enumerate()
        {
            placed_as_planned &= tl.names.get(tl.kernels[i].short) == plan.positions[n % width].0;
            gap_sum[n % width] += gap;
        }
    }
    let occurrences = (steps.len() * plan.layers).max(1) as f64;
    let mean: Vec<f64> = gap_sum.iter().map(|&g| us(g) / occurrences).collect();
    let mut blocks: Vec<(usize, usize, &str, f64)> = Vec::new();
    for (j, &(_, label)) in plan.positions.iter().enumerate() {
        match blocks.last_mut() {
            Some(b) if b.2 == label => {
                b.1 = j;
                b.3 += mean[j];
            }
            _ => blocks.push((j, j, label, mean[j])),
        }
    }
    blocks.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.0.cmp(&b.0)));
    json!({
        "placed_as_planned": placed_as_planned,
        "steps": steps.len(),
        "layers_per_step": plan.layers,
        "sequence": plan.positions.iter().map(|p| p.0).collect::<Vec<_>>(),
        "mean_gap_us": mean,
        "blocks": blocks.iter().enumerate().map(|(rank, b)| json!({
            "rank": rank + 1, "first": b.0, "last": b.1, "label": b.2,
            "gap_per_layer_us": b.3, "total_gap_us": b.3 * plan.layers as f64,
        })).collect::<Vec<_>>(),
    })
}
