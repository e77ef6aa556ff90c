//! Single-rank serving loops: host-bound, GPU-bound, context-only, the regression pair and
//! CUDA graphs. Each differs only in durations, launch style and how far the host runs ahead.

use serde_json::{Map, Value};

use super::Built;
use crate::synth::answers;
use crate::synth::costs::Costs;
use crate::synth::decode::{self, DEFAULT_PACING, Launch, PYTORCH_EAGER, Pacing, Step};
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::Sim;
use crate::synth::timeline::{Ns, Timeline, US};

/// Kernels of `layers` decoder layers plus the final norm and the sampler, durations drawn
/// uniformly in `[lo, hi]` µs.
fn layer_kernels(sim: &mut Sim, layers: usize, lo: Ns, hi: Ns) -> Vec<(KernelKind, Ns)> {
    let mut out = Vec::with_capacity(layers * kinds::LAYER.len() + 2);
    for _ in 0..layers {
        for k in kinds::LAYER {
            out.push((k, sim.uniform(lo * US, hi * US)));
        }
    }
    out.push((kinds::RMS_NORM, sim.uniform(lo * US, hi * US)));
    out.push((kinds::SAMPLER, sim.uniform(lo * US, hi * US)));
    out
}

fn eager(api: &'static str, ks: Vec<(KernelKind, Ns)>) -> Vec<Launch> {
    ks.into_iter()
        .map(|(kind, dur)| Launch::Eager { api, kind, dur })
        .collect()
}

/// Named host ranges with their durations, in order.
type HostRanges = Vec<(&'static str, Ns)>;

/// The usual inter-step host work before and after a forward step (jittered ±10 %).
fn host_ranges(sim: &mut Sim) -> (HostRanges, HostRanges) {
    let before = vec![
        ("_schedule", sim.jitter(120 * US, 10)),
        ("_fetch_new_requests", sim.jitter(40 * US, 10)),
    ];
    let after = vec![
        ("_update_requests", sim.jitter(250 * US, 10)),
        ("_handle_responses", sim.jitter(120 * US, 10)),
    ];
    (before, after)
}

/// A step with the usual host ranges; `ctx > 0` marks a context step.
/// Where a step's GPU work waits: `sync_lag` steps back (0: lockstep), launched with `pacing`.
#[derive(Clone, Copy)]
struct Flow {
    sync_lag: usize,
    pacing: Pacing,
}

const LOCKSTEP: Flow = Flow {
    sync_lag: 0,
    pacing: DEFAULT_PACING,
};
/// Host-bound decode: quick launch calls, so M2 stays clearly under its threshold.
const LOCKSTEP_QUICK: Flow = Flow {
    sync_lag: 0,
    pacing: Pacing {
        api: 5 * US,
        between: 4 * US,
        gpu_gap: 2 * US,
    },
};
const AHEAD: Flow = Flow {
    sync_lag: 1,
    pacing: DEFAULT_PACING,
};
const AHEAD_EAGER: Flow = Flow {
    sync_lag: 1,
    pacing: PYTORCH_EAGER,
};

fn step(
    sim: &mut Sim,
    number: u64,
    (ctx, generation): (u32, u32),
    prep: Ns,
    launches: Vec<Launch>,
    flow: Flow,
) -> Step {
    let (before, after) = host_ranges(sim);
    let sample = sim.jitter(150 * US, 10);
    let Flow { sync_lag, pacing } = flow;
    Step {
        number,
        ctx,
        generation,
        before,
        prep,
        launches,
        sample,
        after,
        sync_lag,
        pacing,
    }
}

fn start(seed: u64, pid: u32, inline: bool, costs: &Costs) -> Sim {
    let mut sim = Sim::new(Timeline::new(&[(pid, "python3", 0)]), seed, inline).costed(costs);
    sim.domain_create(0, "TensorRT-LLM");
    sim.memset(0, 1 << 20, 5 * US, 3 * US);
    sim.advance(0, 200 * US);
    sim
}

fn finish(sim: Sim, extras: Map<String, Value>) -> Built {
    Built { tl: sim.tl, extras }
}

/// TP=1 decode loop, eager exact `cudaLaunchKernel`, ~1.1 ms of exposed `_prepare_tp_inputs`
/// per step and ~20 short kernels: the GPU idles most of the time.
pub fn host_bound(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = start(seed, 31337, false, costs);
    sim.mark(0, "executor loop start");
    let n_ctx = 4 * scale as u64;
    let total = 64 * scale as u64;
    let mut steps = Vec::new();
    for i in 0..total {
        let is_ctx = i < n_ctx;
        let (prep, lo, hi) = if is_ctx {
            (1600, 15, 40)
        } else {
            (1100, 5, 15)
        };
        let prep = sim.jitter(prep * US, 5);
        let ks = layer_kernels(&mut sim, 3, lo, hi);
        let reqs = if is_ctx { (8, 56) } else { (0, 64) };
        steps.push(step(
            &mut sim,
            i + 1,
            reqs,
            prep,
            eager(kinds::LAUNCH_EXACT, ks),
            LOCKSTEP_QUICK,
        ));
    }
    decode::run(&mut sim, 0, &steps);
    finish(sim, Map::new())
}

/// Long kernels queued back to back while the host runs a step ahead; inline NVTX names and a
/// versioned launch API, so the reference profile sees no phases, no host prep and M2 = 0.
pub fn gpu_bound(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = start(seed, 31338, true, costs);
    decode::warmup(&mut sim, 0, kinds::LAUNCH_VERSIONED, 12, 400 * US);
    sim.mark(0, "executor loop start");
    let n_ctx = 2 * scale as u64;
    let total = 42 * scale as u64;
    let mut steps = Vec::new();
    for i in 0..total {
        let prep = sim.jitter(300 * US, 5);
        let ks = layer_kernels(&mut sim, 3, 150, 400);
        let reqs = if i < n_ctx { (4, 60) } else { (0, 64) };
        steps.push(step(
            &mut sim,
            i + 1,
            reqs,
            prep,
            eager(kinds::LAUNCH_VERSIONED, ks),
            AHEAD_EAGER,
        ));
    }
    decode::run(&mut sim, 0, &steps);
    finish(sim, Map::new())
}

/// Context steps with heavy exposed host prep and short kernels, then GPU-bound generation:
/// the aggregate hides what the context phase shows.
pub fn context_only(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = start(seed, 31339, false, costs);
    let n_ctx = 4 * scale as u64;
    let total = 64 * scale as u64;
    let mut steps = Vec::new();
    for i in 0..total {
        let s = if i < n_ctx {
            let prep = sim.jitter(2500 * US, 5);
            let ks = layer_kernels(&mut sim, 3, 10, 30);
            step(
                &mut sim,
                i + 1,
                (8, 56),
                prep,
                eager(kinds::LAUNCH_EXACT, ks),
                LOCKSTEP,
            )
        } else {
            let prep = sim.jitter(400 * US, 5);
            let ks = layer_kernels(&mut sim, 3, 150, 400);
            step(
                &mut sim,
                i + 1,
                (0, 64),
                prep,
                eager(kinds::LAUNCH_EXACT, ks),
                AHEAD_EAGER,
            )
        };
        steps.push(s);
    }
    decode::run(&mut sim, 0, &steps);
    finish(sim, Map::new())
}

/// GPU work of one regression step: identical in baseline and target (fixed durations).
const REGRESSION_GPU: [(KernelKind, Ns); 6] = [
    (kinds::RMS_NORM, 120 * US),
    (kinds::GEMM, 310 * US),
    (kinds::FLASH, 260 * US),
    (kinds::GEMM, 305 * US),
    (kinds::SILU, 90 * US),
    (kinds::SAMPLER, 60 * US),
];

/// Per-step host work of the regression pair (reference §11 version table, µs).
struct RegressionHost {
    fetch: Ns,
    broadcast: Option<Ns>,
    update: Ns,
    tiny_kernels: usize,
}

const BASELINE: RegressionHost = RegressionHost {
    fetch: 36,
    broadcast: None,
    update: 413,
    tiny_kernels: 0,
};
const TARGET: RegressionHost = RegressionHost {
    fetch: 270,
    broadcast: Some(250),
    update: 723,
    tiny_kernels: 16,
};

fn regression_step(number: u64, reqs: (u32, u32), h: &RegressionHost) -> Step {
    let mut before = vec![
        ("_schedule", 120 * US),
        ("_fetch_new_requests", h.fetch * US),
    ];
    if let Some(b) = h.broadcast {
        before.push(("broadcast_requests", b * US));
    }
    let mut ks: Vec<(KernelKind, Ns)> = vec![(kinds::ELEMENTWISE, 2 * US); h.tiny_kernels];
    ks.extend(REGRESSION_GPU);
    Step {
        number,
        ctx: reqs.0,
        generation: reqs.1,
        before,
        prep: 400 * US,
        launches: eager(kinds::LAUNCH_EXACT, ks),
        sample: 150 * US,
        after: vec![
            ("_update_requests", h.update * US),
            ("_handle_responses", 350 * US),
        ],
        sync_lag: 0,
        pacing: DEFAULT_PACING,
    }
}

fn regression(seed: u64, scale: u32, costs: &Costs, pid: u32, h: &RegressionHost) -> Built {
    let mut sim = start(seed, pid, false, costs);
    let n_ctx = 3 * scale as u64;
    let total = 43 * scale as u64;
    let steps: Vec<Step> = (0..total)
        .map(|i| regression_step(i + 1, if i < n_ctx { (8, 56) } else { (0, 64) }, h))
        .collect();
    let placed = decode::run(&mut sim, 0, &steps);
    let placement = super::one_phase(&steps, &placed);
    let mut extras = Map::new();
    extras.insert("per_step".into(), answers::regression_figures(&sim.tl));
    extras.insert(
        "analyze".into(),
        answers::analyze_answers(&sim.tl, &placement),
    );
    finish(sim, extras)
}

/// The regression pair's baseline (TRT-LLM v1.1-like host work).
pub fn regression_baseline(seed: u64, scale: u32, costs: &Costs) -> Built {
    regression(seed, scale, costs, 31340, &BASELINE)
}

/// The regression pair's target: same GPU work, more host work and 16 extra tiny launches.
/// Its answers also hold what comparing it with the baseline (same seed, scale and costs) must
/// give.
pub fn regression_target(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut built = regression(seed, scale, costs, 31341, &TARGET);
    let baseline = regression(seed, scale, costs, 31340, &BASELINE);
    if let (Some(b), Some(t)) = (baseline.extras.get("analyze"), built.extras.get("analyze")) {
        let expected = answers::expected_comparison(b, t);
        built.extras.insert("versus_baseline".into(), expected);
    }
    built
}

/// GPU work of one `kernel-classes` step: a kernel of each class the generator places (no
/// collective: one rank) with fixed durations; context steps run a longer GEMM (prefill).
fn class_launches(context: bool) -> Vec<Launch> {
    let gemm = if context { 900 * US } else { 300 * US };
    let ks: Vec<(KernelKind, Ns)> = vec![
        (kinds::RMS_NORM, 80 * US),
        (kinds::GEMM, gemm),
        (kinds::FLASH, 200 * US),
        (kinds::SILU, 40 * US),
        (kinds::REDUCE, 30 * US),
        (kinds::CAT_COPY, 20 * US),
        (kinds::ELEMENTWISE, 5 * US),
        (kinds::SAMPLER, 25 * US),
        (kinds::POWER_ITERATION, 15 * US),
    ];
    let mut launches = eager(kinds::LAUNCH_EXACT, ks);
    launches.push(Launch::CopyHtoD {
        bytes: 4 << 20,
        dur: 60 * US,
        pageable: false,
    });
    launches
}

/// TP=1 loop of 3 context and 40 generation steps, each launching a kernel of every class the
/// generator places and a host-to-device copy (plus `_sample_async`'s device-to-host copy):
/// the time per kernel class and per phase are known.
pub fn kernel_classes(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = start(seed, 31344, false, costs);
    let n_ctx = 3 * scale as u64;
    let total = 43 * scale as u64;
    let mut steps = Vec::new();
    for i in 0..total {
        let context = i < n_ctx;
        let reqs = if context { (8, 56) } else { (0, 64) };
        let prep = sim.jitter(400 * US, 5);
        steps.push(step(
            &mut sim,
            i + 1,
            reqs,
            prep,
            class_launches(context),
            LOCKSTEP,
        ));
    }
    let placed = decode::run(&mut sim, 0, &steps);
    let placement = super::one_phase(&steps, &placed);
    let mut extras = Map::new();
    extras.insert(
        "analyze".into(),
        answers::analyze_answers(&sim.tl, &placement),
    );
    finish(sim, extras)
}

/// Node-level graph tracing: generation steps replay a 14-node CUDA graph (kernels share the
/// `cudaGraphLaunch` correlation id and carry `graphNodeId`) around two eager launches;
/// context steps are eager.
pub fn cuda_graphs(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = start(seed, 31342, false, costs);
    sim.tl.graph_trace_mode = "Node";
    let base: Vec<(KernelKind, Ns)> = layer_kernels(&mut sim, 2, 40, 120);
    let n_ctx = 3 * scale as u64;
    let total = 43 * scale as u64;
    let mut steps = Vec::new();
    for i in 0..total {
        let s = if i < n_ctx {
            let prep = sim.jitter(900 * US, 5);
            let ks = layer_kernels(&mut sim, 3, 20, 60);
            step(
                &mut sim,
                i + 1,
                (6, 58),
                prep,
                eager(kinds::LAUNCH_VERSIONED, ks),
                LOCKSTEP,
            )
        } else {
            let prep = sim.jitter(250 * US, 5);
            let launches = graph_step_launches(&mut sim, &base);
            step(&mut sim, i + 1, (0, 64), prep, launches, AHEAD)
        };
        steps.push(s);
    }
    decode::run(&mut sim, 0, &steps);
    let mut extras = Map::new();
    extras.insert("cuda_graphs".into(), answers::graph_counts(&sim.tl));
    finish(sim, extras)
}

/// One eager input kernel, the graph replay (node ids 5001…), one eager sampler kernel.
fn graph_step_launches(sim: &mut Sim, base: &[(KernelKind, Ns)]) -> Vec<Launch> {
    let nodes = base
        .iter()
        .enumerate()
        .map(|(i, &(k, d))| (k, sim.jitter(d, 5), 5001 + i as u32))
        .collect();
    vec![
        Launch::Eager {
            api: kinds::LAUNCH_VERSIONED,
            kind: kinds::ELEMENTWISE,
            dur: 3 * US,
        },
        Launch::Graph { nodes, ids: None },
        Launch::Eager {
            api: kinds::LAUNCH_VERSIONED,
            kind: kinds::SAMPLER,
            dur: 20 * US,
        },
    ]
}
