//! TP=2: two ranks (processes) on devices 0 and 1, an NCCL allreduce per layer, and rank 1 as
//! the straggler in 9 of every 10 collectives.
//!
//! The ranks' Python loops run in lockstep (same host durations, realigned after each layer, as
//! the collectives force in practice); before a collective the designated straggler loses
//! 30–80 µs on the host, so its allreduce kernel starts that much later while the other rank's
//! kernel waits inside NCCL. Both kernels end together, when the last rank has arrived. In
//! `tp2-straggler` and `tp4-straggler` that host time lies in an NVTX range, [`PLANTED_OP`],
//! which every rank runs before each all-reduce (the planted cause `ranks` finds: answers
//! `straggler_cause`); in `tp2-phases` it is unnamed.
//!
//! `tp2-phases` runs the same steps in three phases separated by idle pauses (warm-up,
//! benchmark, teardown), for iteration isolation. `tp4-straggler` is the same run on four ranks
//! (devices 0–3), fewer steps, rank 1 still the straggler.

use serde_json::Map;

use super::Built;
use crate::synth::answers::{self, PlacedStep, Placement};
use crate::synth::costs::Costs;
use crate::synth::decode::{self, DEFAULT_PACING};
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{LAUNCH_LATENCY, Sim};
use crate::synth::timeline::{MS, Ns, Timeline, US};

const LAYERS: usize = 4;

/// The NVTX range the straggler's late host time lies in (`tp2-straggler`, `tp4-straggler`):
/// every rank runs it before each all-reduce for [`PLANTED_BASE`], the straggler that much plus
/// its late time (so the ranks' copies of the op pair up collective by collective).
pub const PLANTED_OP: &str = "_prepare_inputs";

/// Every rank's time in [`PLANTED_OP`] before each all-reduce, beyond the straggler's late time.
pub const PLANTED_BASE: Ns = 5 * US;

/// Builds the scenario; `scale` multiplies the number of steps.
pub fn tp2_straggler(seed: u64, scale: u32, costs: &Costs) -> Built {
    straggler_run(seed, scale, costs, 2, 33)
}

/// `ranks` ranks stepping `steps` steps per scale unit (the first 3 per unit context steps),
/// rank 1 the straggler.
fn straggler_run(seed: u64, scale: u32, costs: &Costs, ranks: usize, steps: u64) -> Built {
    let mut run = Tp2::new(seed, costs, ranks);
    run.planted = Some(PLANTED_OP);
    let n_ctx = 3 * scale as u64;
    for i in 0..steps * scale as u64 {
        let reqs = if i < n_ctx { (4, 28) } else { (0, 32) };
        run.step(reqs);
    }
    run.finish(1, 0)
}

/// A serving run in three phases separated by pauses longer than 100 ms: CUDA-graph warm-up
/// (batches 32, 16, 8, 4), the benchmark (ramp-up, steady state at 32, drain at 16) and a
/// teardown of two steps. The benchmark is not the last phase: the teardown is too short.
pub fn tp2_phases(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut run = Tp2::new(seed, costs, 2);
    for generation in [32, 16, 8, 4] {
        run.step((0, generation));
    }
    run.pause(150 * MS);
    for _ in 0..3 {
        run.step((4, 28));
    }
    for _ in 0..30 * scale {
        run.step((0, 32));
    }
    for _ in 0..3 {
        run.step((0, 16));
    }
    run.pause(120 * MS);
    for _ in 0..2 {
        run.step((0, 8));
    }
    run.finish(3, 1)
}

/// TP=4: four ranks (processes 50001–50004 on devices 0–3), 3 context and 9 generation steps
/// per scale unit; rank 1 arrives last at 9 of every 10 all-reduces, rank 0 at the tenth.
pub fn tp4_straggler(seed: u64, scale: u32, costs: &Costs) -> Built {
    straggler_run(seed, scale, costs, 4, 12)
}

/// Ranks stepping together, and where their steps landed.
struct Tp2 {
    sim: Sim,
    collective: u64,
    phase: usize,
    placement: Placement,
    /// The NVTX range naming the straggler's late host time, if any.
    planted: Option<&'static str>,
    /// Per collective: the rank made late, its time in the planted range and another rank's.
    late: Vec<(usize, Ns, Ns)>,
}

impl Tp2 {
    fn new(seed: u64, costs: &Costs, ranks: usize) -> Tp2 {
        let procs: Vec<(u32, &'static str, u32)> = (0..ranks as u32)
            .map(|p| (50001 + p, "python3", p))
            .collect();
        let tl = Timeline::new(&procs);
        let mut sim = Sim::new(tl, seed, false).costed(costs);
        for p in 0..ranks {
            sim.domain_create(p, "TensorRT-LLM");
        }
        sim.mark(0, "executor loop start");
        Tp2 {
            sim,
            collective: 0,
            phase: 0,
            placement: Placement::default(),
            planted: None,
            late: Vec::new(),
        }
    }

    fn step(&mut self, reqs: (u32, u32)) {
        let number = self.placement.steps.len() as u64 + 1;
        let mut layers = Layers {
            collective: &mut self.collective,
            planted: self.planted,
            late: &mut self.late,
        };
        let (ranks, allreduce) = run_step(&mut self.sim, number, reqs, &mut layers);
        self.placement.steps.push(PlacedStep {
            ctx: reqs.0,
            generation: reqs.1,
            phase: self.phase,
            ranks,
            allreduce: Some(allreduce),
        });
    }

    /// Both ranks idle for `dt` (no kernels, no NVTX): the next steps form a new phase.
    fn pause(&mut self, dt: Ns) {
        realign(&mut self.sim, dt);
        self.phase += 1;
    }

    /// The built scenario with its `phases` and which of them is the benchmark.
    fn finish(self, phases: usize, benchmark_phase: usize) -> Built {
        let mut placement = self.placement;
        placement.phases = phases;
        placement.benchmark_phase = benchmark_phase;
        let mut extras = Map::new();
        extras.insert("stragglers".into(), answers::stragglers(&self.sim.tl));
        extras.insert(
            "analyze".into(),
            answers::analyze_answers(&self.sim.tl, &placement),
        );
        if let Some(op) = self.planted {
            extras.insert("straggler_cause".into(), planted_cause(op, &self.late));
        }
        Built {
            tl: self.sim.tl,
            extras,
        }
    }
}

/// The planted cause of the straggler's lateness: over the collectives rank 1 was made late at,
/// but the first (no collective before it), its host time in `op` per collective
/// (`straggler_us`), the other ranks' (`others_us`) and the difference (`mean_us`: its kernel
/// starts that much later than it would have).
fn planted_cause(op: &str, late: &[(usize, Ns, Ns)]) -> serde_json::Value {
    let mine: Vec<(Ns, Ns)> = late
        .iter()
        .skip(1)
        .filter(|l| l.0 == 1)
        .map(|l| (l.1, l.2))
        .collect();
    let n = mine.len().max(1) as f64;
    let (straggler, others): (Ns, Ns) = mine.iter().fold((0, 0), |(a, b), &(s, o)| (a + s, b + o));
    serde_json::json!({
        "rank_device": 1,
        "op": op,
        "collectives": mine.len(),
        "straggler_us": straggler as f64 / 1000.0 / n,
        "others_us": others as f64 / 1000.0 / n,
        "mean_us": (straggler - others) as f64 / 1000.0 / n,
    })
}

/// A step's collectives: their count so far, and where the straggler's late host time goes.
struct Layers<'a> {
    collective: &'a mut u64,
    planted: Option<&'static str>,
    late: &'a mut Vec<(usize, Ns, Ns)>,
}

/// The ranks: one process each.
fn ranks(sim: &Sim) -> usize {
    sim.tl.procs.len()
}

/// Every host resumes together at the latest one's clock plus `extra`.
fn realign(sim: &mut Sim, extra: Ns) {
    let t = (0..ranks(sim)).map(|p| sim.now(p)).max().unwrap_or(0) + extra;
    (0..ranks(sim)).for_each(|p| sim.wait_until(p, t));
}

/// One step on both ranks: each rank's forward-step range and the step's allreduce kernels
/// `(first start, last end, count)`.
fn run_step(
    sim: &mut Sim,
    number: u64,
    (ctx, generation): (u32, u32),
    layers: &mut Layers<'_>,
) -> (Vec<(Ns, Ns)>, (Ns, Ns, u32)) {
    realign(sim, 0);
    let offset = sim.uniform(5 * US, 20 * US);
    sim.advance(1, offset);
    let before = [
        ("_schedule", sim.jitter(120 * US, 10)),
        ("_fetch_new_requests", sim.jitter(40 * US, 10)),
        ("broadcast_requests", sim.jitter(250 * US, 10)),
    ];
    let prep = sim.jitter(if ctx > 0 { 1500 * US } else { 500 * US }, 5);
    let mut fwd = vec![0usize; ranks(sim)];
    for (p, slot) in fwd.iter_mut().enumerate() {
        for (name, dur) in before {
            sim.range(p, name, dur);
        }
        *slot = sim.open(p, &decode::forward_name(number, ctx, generation));
        sim.range(p, "_prepare_tp_inputs", prep);
    }
    let mut allreduce: Option<(Ns, Ns, u32)> = None;
    for _ in 0..LAYERS {
        let (s, e) = layer(sim, ctx > 0, layers);
        let n_ranks = ranks(sim) as u32;
        allreduce = Some(allreduce.map_or((s, e, n_ranks), |(a, b, n)| {
            (a.min(s), b.max(e), n + n_ranks)
        }));
    }
    let tail = [
        (kinds::RMS_NORM, sim.uniform(4 * US, 8 * US)),
        (kinds::SAMPLER, sim.uniform(4 * US, 8 * US)),
    ];
    let sample = sim.jitter(150 * US, 10);
    let after = [
        ("_update_requests", sim.jitter(250 * US, 10)),
        ("_handle_responses", sim.jitter(120 * US, 10)),
    ];
    let mut ranks = Vec::with_capacity(fwd.len());
    for (p, &f) in fwd.iter().enumerate() {
        compute(sim, p, &tail);
        sim.host_api(p, kinds::EVENT_RECORD, 3 * US);
        sim.advance(p, 5 * US);
        ranks.push(sim.close(p, f));
        decode::sample(sim, p, sample, None);
        for (name, dur) in after {
            sim.range(p, name, dur);
        }
    }
    (ranks, allreduce.unwrap_or((0, 0, 0)))
}

fn compute(sim: &mut Sim, p: usize, ks: &[(KernelKind, Ns)]) {
    let pace = DEFAULT_PACING;
    for (k, dur) in ks {
        sim.advance(p, pace.between);
        sim.launch(p, kinds::LAUNCH_EXACT, pace.api, k, *dur, pace.gpu_gap);
    }
}

/// One decoder layer on both ranks, then the allreduce with a straggler (its late host time in
/// the planted range, when there is one); returns the allreduce kernels' first start and end.
fn layer(sim: &mut Sim, is_ctx: bool, layers: &mut Layers<'_>) -> (Ns, Ns) {
    let (lo, hi) = if is_ctx {
        (6 * US, 8 * US)
    } else {
        (4 * US, 8 * US)
    };
    let ks: Vec<(KernelKind, Ns)> = kinds::LAYER
        .iter()
        .map(|&k| (k, sim.uniform(lo, hi)))
        .collect();
    for p in 0..ranks(sim) {
        compute(sim, p, &ks);
    }
    let straggler = if *layers.collective % 10 == 9 { 0 } else { 1 };
    *layers.collective += 1;
    let late = sim.uniform(30 * US, 80 * US);
    match layers.planted {
        Some(op) => {
            // Every rank prepares its inputs; the straggler's take `late` longer.
            let mut took = vec![0; ranks(sim)];
            for (p, t) in took.iter_mut().enumerate() {
                let extra = if p == straggler { late } else { 0 };
                let (s, e) = sim.range(p, op, PLANTED_BASE + extra);
                *t = e - s;
            }
            let other = took.get(1 - straggler).copied().unwrap_or(0);
            let mine = took.get(straggler).copied().unwrap_or(0);
            layers.late.push((straggler, mine, other));
        }
        None => sim.advance(straggler, late),
    }
    let span = allreduce(sim);
    realign(sim, 30 * US);
    span
}

/// Each rank launches its allreduce; each kernel starts on arrival and all end together.
/// Returns the first start and the common end.
fn allreduce(sim: &mut Sim) -> (Ns, Ns) {
    let pace = DEFAULT_PACING;
    let mut arrivals = vec![(0 as Ns, 0u32); ranks(sim)];
    for (p, slot) in arrivals.iter_mut().enumerate() {
        sim.advance(p, pace.between);
        let s = sim.now(p);
        let api = sim.launch_ns(pace.api);
        let corr = sim.api_row(p, kinds::LAUNCH_EXACT, s, s + api);
        sim.wait_until(p, s + api);
        let dev = sim.tl.procs[p].device;
        *slot = (
            (s + api + LAUNCH_LATENCY).max(sim.gpu_free(dev) + pace.gpu_gap),
            corr,
        );
    }
    // The kernels' own part after the last arrival (the transfer) is what the costs scale.
    let transfer = sim.uniform(15 * US, 25 * US);
    let end = arrivals.iter().map(|a| a.0).max().unwrap_or(0)
        + sim.kernel_ns(&kinds::NCCL_ALLREDUCE, transfer);
    for (p, &(start, corr)) in arrivals.iter().enumerate() {
        sim.kernel_row(p, &kinds::NCCL_ALLREDUCE, start, end, corr, 0);
        let dev = sim.tl.procs[p].device;
        sim.set_gpu_free(dev, end);
    }
    let first = arrivals.iter().map(|a| a.0).min().unwrap_or(end);
    (first, end)
}
