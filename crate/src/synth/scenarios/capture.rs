//! Captures the capture checks must flag: too short, dominated by a JIT warm-up at the start,
//! CUDA graphs traced at graph level, no NVTX. Each answers `capture` with the status every
//! check must have and, for the warm-up, the share of idle time its spans cover and the
//! steady window after it, computed here from what was placed. The statuses are planned against
//! the checks' thresholds for the unscaled durations: no cost knob.

use serde_json::{Map, Value, json};

use super::Built;
use crate::synth::costs::Costs;
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{GraphIds, Sim, T0};
use crate::synth::timeline::{MS, Ns, Timeline, US};

/// Steady-loop kernels of the warm-up, graph-level and no-NVTX captures.
const LOOP_KERNELS: usize = 2400;
/// Kernels of the short capture (the 46-kernel, 2 ms example).
const SHORT_KERNELS: usize = 46;

const KINDS: [KernelKind; 4] = [kinds::GEMM, kinds::FLASH, kinds::RMS_NORM, kinds::SILU];

fn sim(pid: u32, seed: u64) -> Sim {
    Sim::new(Timeline::new(&[(pid, "python3", 0)]), seed, false)
}

/// `n` eager launches of `api_us` µs calls, kernels of 40–60 µs queued back to back (1 µs
/// apart): the GPU stays busy, the host ahead.
fn steady_loop(sim: &mut Sim, n: usize, api_us: Ns) {
    for i in 0..n {
        let dur = sim.uniform(40 * US, 60 * US);
        sim.launch(0, kinds::LAUNCH_EXACT, api_us * US, &KINDS[i % 4], dur, US);
        sim.advance(0, 4 * US);
    }
}

/// The checks' expected statuses, by id.
fn statuses(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(id, s)| (id.to_string(), Value::from(*s)))
            .collect(),
    )
}

fn built(sim: Sim, capture: Value) -> Built {
    let mut extras = Map::new();
    extras.insert("capture".into(), capture);
    Built { tl: sim.tl, extras }
}

/// 46 kernels in about 2 ms, host-bound: a YES the capture cannot support.
pub fn short(seed: u64, _scale: u32, _: &Costs) -> Built {
    let mut sim = sim(41001, seed);
    for i in 0..SHORT_KERNELS {
        let host = sim.uniform(25 * US, 35 * US);
        sim.range(0, "_forward_op", host);
        let dur = sim.uniform(5 * US, 12 * US);
        sim.launch(0, kinds::LAUNCH_EXACT, 4 * US, &KINDS[i % 4], dur, 0);
    }
    let (first, last) = hull(&sim.tl);
    built(
        sim,
        json!({
            "kernels": SHORT_KERNELS,
            "window_ns": last - first,
            "status": statuses(&[("length", "warn"), ("nvtx", "ok"), ("cuda_graph_trace", "ok"), ("warmup", "ok"), ("capture_range", "unknown"), ("cpu_records", "unknown")]),
        }),
    )
}

/// One kernel, then a module load, an NVRTC compile inside a `compileFusion` range and a slow
/// first launch holding the GPU idle about 200 ms, then a steady GPU-bound loop; GC and GIL
/// ranges in the loop, no capture range (`START_TRIGGER = Immediate`).
pub fn warmup(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = sim(41002, seed);
    sim.tl.start_trigger = Some("Immediate");
    sim.launch(
        0,
        kinds::LAUNCH_EXACT,
        5 * US,
        &kinds::ELEMENTWISE,
        10 * US,
        0,
    );
    let mut spans: Vec<(Ns, Ns)> = Vec::new();
    let at = |sim: &Sim| sim.now(0);
    let load = sim.jitter(30 * MS, 10);
    let s = at(&sim);
    sim.host_api(0, "cuModuleLoadData", load);
    spans.push((s, at(&sim)));
    let range = sim.open(0, "KernelExecutor::compileFusion");
    sim.advance(0, 2 * MS);
    let s = at(&sim);
    let compile = sim.jitter(150 * MS, 10);
    sim.host_api(0, "nvrtcCompileProgram", compile);
    spans.push((s, at(&sim)));
    sim.advance(0, 3 * MS);
    spans.push(sim.close(0, range));
    let s = at(&sim);
    sim.launch(0, kinds::LAUNCH_EXACT, 8 * MS, &kinds::GEMM, 50 * US, 0);
    spans.push((s, s + 8 * MS));
    let (mut gc, mut gil) = (0u64, 0u64);
    for chunk in 0..4 * scale as usize {
        steady_loop(&mut sim, LOOP_KERNELS / 4, 5);
        if chunk % 2 == 0 {
            sim.range(0, "Python GC", 300 * US);
            gc += 1;
        }
        sim.range(0, "Waiting for GIL", 50 * US);
        gil += 1;
    }
    let (first, last) = hull(&sim.tl);
    let gaps = device_gaps(&sim.tl);
    let covered = |g: &(Ns, Ns)| covered(&spans, g.0, g.1);
    let idle: Ns = gaps.iter().map(|g| g.1 - g.0).sum();
    let warm: Ns = gaps.iter().map(covered).sum();
    let mid = first + (last - first) / 2;
    let steady_start = gaps
        .iter()
        .filter(|g| g.0 < mid && 2 * covered(g) >= g.1 - g.0 && covered(g) > 0)
        .map(|g| g.1)
        .max();
    let steady = steady_start.map(|s| {
        let busy = busy_in(&sim.tl, s, last);
        json!({
            "start_ns": s,
            "end_ns": last,
            "gpu_utilization": busy as f64 / (last - s) as f64,
        })
    });
    built(
        sim,
        json!({
            "idle_ns": idle,
            "warmup_ns": warm,
            "warmup_share": warm as f64 / idle as f64,
            "steady_window": steady,
            "gc_ranges": gc,
            "gil_ranges": gil,
            "status": statuses(&[("warmup", "warn"), ("capture_range", "warn"), ("gc_markers", "ok"), ("gil_markers", "ok"), ("length", "ok"), ("nvtx", "ok")]),
        }),
    )
}

/// Nodes per graph replay of [`graph_level`].
const GRAPH_NODES: usize = 6;

/// CUDA graphs replayed under graph-level tracing (`MODE = Graph`): each `cudaGraphLaunch` runs
/// a 6-node graph whose replay is recorded as one `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row (same
/// correlation id, process, device and stream as the call; graph 1, exec 1) and whose kernels
/// are not recorded; eager kernels run between the replays.
pub fn graph_level(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = sim(41003, seed);
    sim.tl.graph_trace_mode = "Graph";
    let steps = 200 * scale as usize;
    let ids = GraphIds { graph: 1, exec: 1 };
    for _ in 0..steps {
        let nodes: Vec<(KernelKind, Ns, u32)> = (0..GRAPH_NODES)
            .map(|i| (KINDS[i % 4], sim.uniform(40 * US, 60 * US), 7001 + i as u32))
            .collect();
        sim.graph_launch(0, 12 * US, &nodes, US, Some(ids));
        steady_loop(&mut sim, LOOP_KERNELS / 200, 5);
    }
    let replay_ns: Ns = sim.tl.graph_replays.iter().map(|r| r.end - r.start).sum();
    built(
        sim,
        json!({
            "graph_launches": steps,
            "graph_replays": steps,
            "graph_replay_ns": replay_ns,
            "status": statuses(&[("cuda_graph_trace", "warn"), ("length", "ok")]),
        }),
    )
}

/// A steady loop with no NVTX range at all.
pub fn no_nvtx(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = sim(41004, seed);
    steady_loop(&mut sim, LOOP_KERNELS * scale as usize, 5);
    built(
        sim,
        json!({
            "status": statuses(&[("nvtx", "warn"), ("gc_markers", "unknown"), ("gil_markers", "unknown"), ("length", "ok")]),
        }),
    )
}

/// First kernel start and last kernel end.
fn hull(tl: &Timeline) -> (Ns, Ns) {
    let first = tl.kernels.iter().map(|k| k.start).min().unwrap_or(T0);
    let last = tl.kernels.iter().map(|k| k.end).max().unwrap_or(T0);
    (first, last)
}

/// The device's merged busy intervals (every scenario here runs one device).
fn busy(tl: &Timeline) -> Vec<(Ns, Ns)> {
    let mut ks: Vec<(Ns, Ns)> = tl.kernels.iter().map(|k| (k.start, k.end)).collect();
    ks.sort_unstable();
    let mut out: Vec<(Ns, Ns)> = Vec::new();
    for (s, e) in ks {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn device_gaps(tl: &Timeline) -> Vec<(Ns, Ns)> {
    busy(tl).windows(2).map(|w| (w[0].1, w[1].0)).collect()
}

fn busy_in(tl: &Timeline, s: Ns, e: Ns) -> Ns {
    busy(tl)
        .iter()
        .map(|b| (b.1.min(e) - b.0.max(s)).max(0))
        .sum()
}

/// Time of `[s, e)` inside the union of `spans`, ns by ns of the span boundaries.
fn covered(spans: &[(Ns, Ns)], s: Ns, e: Ns) -> Ns {
    let mut cuts: Vec<Ns> = vec![s, e];
    for &(a, b) in spans {
        cuts.extend([a.clamp(s, e), b.clamp(s, e)]);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .filter(|w| spans.iter().any(|&(a, b)| a <= w[0] && w[1] <= b))
        .map(|w| w[1] - w[0])
        .sum()
}

/// The metrics sampled by [`gpu_metrics`]: id, name (as nsys names them on Hopper), and the
/// value while a kernel runs (0 otherwise). The clock is matched by no class.
const SAMPLED: [(u32, &str, i64); 6] = [
    (1, "SMs Active [Throughput %]", 85),
    (2, "SM Issue [Throughput %]", 70),
    (3, "Tensor Active [Throughput %]", 55),
    (4, "DRAM Read Bandwidth [Throughput %]", 20),
    (5, "DRAM Write Bandwidth [Throughput %]", 10),
    (6, "GPC Clock Frequency [MHz]", 1980),
];

/// Sampling period of [`gpu_metrics`] (10 kHz, nsys's default).
const SAMPLE_EVERY: Ns = 100 * US;

/// The GPU-bound loop with GPU metrics sampled at 10 kHz from 1 ms before the first kernel to
/// 1 ms after the last: each sample reads its "busy" value when a kernel runs at its instant.
/// Answers the per-metric means over the kernel window, from the samples placed.
pub fn gpu_metrics(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = sim(41005, seed);
    sim.advance(0, 2 * MS);
    steady_loop(&mut sim, LOOP_KERNELS * scale as usize, 5);
    sim.tl.metric_names = SAMPLED.iter().map(|&(id, name, _)| (id, name)).collect();
    let (first, last) = hull(&sim.tl);
    let busy = busy(&sim.tl);
    let running = |t: Ns| {
        let i = busy.partition_point(|b| b.1 <= t);
        busy.get(i).is_some_and(|b| b.0 <= t)
    };
    let mut t = first - MS;
    let mut sums = [0i64; 6];
    let mut inside = 0i64;
    while t < last + MS {
        let on = running(t);
        for (k, &(id, _, value)) in SAMPLED.iter().enumerate() {
            let v = if on || id == 6 { value } else { 0 };
            sim.tl
                .metric_samples
                .push(crate::synth::gpu_metrics::MetricSample {
                    t,
                    device: 0,
                    metric: id,
                    value: v,
                });
            if t >= first && t < last {
                sums[k] += v;
            }
        }
        if t >= first && t < last {
            inside += 1;
        }
        t += SAMPLE_EVERY;
    }
    let mean = |k: usize| sums[k] as f64 / inside as f64;
    built(
        sim,
        json!({
            "gpu_metrics": {
                "device": 0,
                "samples_in_window": inside,
                "sm_active": mean(0),
                "sm_issue": mean(1),
                "tensor_active": mean(2),
                "dram_bandwidth": mean(3) + mean(4),
                "patterns": ["compute_bound"],
            },
            "status": statuses(&[("gpu_metrics", "ok"), ("length", "ok")]),
        }),
    )
}
