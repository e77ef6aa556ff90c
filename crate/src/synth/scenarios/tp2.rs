//! TP=2: two ranks (processes) on devices 0 and 1, an NCCL allreduce per layer, and rank 1 as
//! the straggler in 9 of every 10 collectives.
//!
//! The ranks' Python loops run in lockstep (same host durations, realigned after each layer, as
//! the collectives force in practice); before a collective the designated straggler loses
//! 30–80 µs on the host, so its allreduce kernel starts that much later while the other rank's
//! kernel waits inside NCCL. Both kernels end together, when the last rank has arrived.

use serde_json::Map;

use super::Built;
use crate::synth::answers;
use crate::synth::decode::{self, DEFAULT_PACING};
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{LAUNCH_LATENCY, Sim};
use crate::synth::timeline::{Ns, Timeline, US};

const RANKS: usize = 2;
const LAYERS: usize = 4;

/// Builds the scenario; `scale` multiplies the number of steps.
pub fn tp2_straggler(seed: u64, scale: u32) -> Built {
    let tl = Timeline::new(&[(50001, "python3", 0), (50002, "python3", 1)]);
    let mut sim = Sim::new(tl, seed, false);
    for p in 0..RANKS {
        sim.domain_create(p, "TensorRT-LLM");
    }
    sim.mark(0, "executor loop start");
    let n_ctx = 3 * scale as u64;
    let mut collective = 0u64;
    for i in 0..33 * scale as u64 {
        let reqs = if i < n_ctx { (4, 28) } else { (0, 32) };
        run_step(&mut sim, i + 1, reqs, &mut collective);
    }
    let mut extras = Map::new();
    extras.insert("stragglers".into(), answers::stragglers(&sim.tl));
    Built { tl: sim.tl, extras }
}

/// Both hosts resume together at the later one's clock plus `extra`.
fn realign(sim: &mut Sim, extra: Ns) {
    let t = (0..RANKS).map(|p| sim.now(p)).max().unwrap_or(0) + extra;
    (0..RANKS).for_each(|p| sim.wait_until(p, t));
}

fn run_step(sim: &mut Sim, number: u64, (ctx, generation): (u32, u32), collective: &mut u64) {
    realign(sim, 0);
    let offset = sim.uniform(5 * US, 20 * US);
    sim.advance(1, offset);
    let before = [
        ("_schedule", sim.jitter(120 * US, 10)),
        ("_fetch_new_requests", sim.jitter(40 * US, 10)),
        ("broadcast_requests", sim.jitter(250 * US, 10)),
    ];
    let prep = sim.jitter(if ctx > 0 { 1500 * US } else { 500 * US }, 5);
    let mut fwd = [0usize; RANKS];
    for (p, slot) in fwd.iter_mut().enumerate() {
        for (name, dur) in before {
            sim.range(p, name, dur);
        }
        *slot = sim.open(p, &decode::forward_name(number, ctx, generation));
        sim.range(p, "_prepare_tp_inputs", prep);
    }
    for _ in 0..LAYERS {
        layer(sim, ctx > 0, collective);
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
    for (p, &f) in fwd.iter().enumerate() {
        compute(sim, p, &tail);
        sim.host_api(p, kinds::EVENT_RECORD, 3 * US);
        sim.advance(p, 5 * US);
        sim.close(p, f);
        decode::sample(sim, p, sample, None);
        for (name, dur) in after {
            sim.range(p, name, dur);
        }
    }
}

fn compute(sim: &mut Sim, p: usize, ks: &[(KernelKind, Ns)]) {
    let pace = DEFAULT_PACING;
    for (k, dur) in ks {
        sim.advance(p, pace.between);
        sim.launch(p, kinds::LAUNCH_EXACT, pace.api, k, *dur, pace.gpu_gap);
    }
}

/// One decoder layer on both ranks, then the allreduce with a straggler.
fn layer(sim: &mut Sim, is_ctx: bool, collective: &mut u64) {
    let (lo, hi) = if is_ctx {
        (6 * US, 8 * US)
    } else {
        (4 * US, 8 * US)
    };
    let ks: Vec<(KernelKind, Ns)> = kinds::LAYER
        .iter()
        .map(|&k| (k, sim.uniform(lo, hi)))
        .collect();
    for p in 0..RANKS {
        compute(sim, p, &ks);
    }
    let straggler = if *collective % 10 == 9 { 0 } else { 1 };
    *collective += 1;
    let late = sim.uniform(30 * US, 80 * US);
    sim.advance(straggler, late);
    allreduce(sim);
    realign(sim, 30 * US);
}

/// Each rank launches its allreduce; each kernel starts on arrival and all end together.
fn allreduce(sim: &mut Sim) {
    let pace = DEFAULT_PACING;
    let mut arrivals = [(0 as Ns, 0u32); RANKS];
    for (p, slot) in arrivals.iter_mut().enumerate() {
        sim.advance(p, pace.between);
        let s = sim.now(p);
        let corr = sim.api_row(p, kinds::LAUNCH_EXACT, s, s + pace.api);
        sim.advance(p, pace.api);
        let dev = sim.tl.procs[p].device;
        *slot = (
            (s + pace.api + LAUNCH_LATENCY).max(sim.gpu_free(dev) + pace.gpu_gap),
            corr,
        );
    }
    let end = arrivals.iter().map(|a| a.0).max().unwrap_or(0) + sim.uniform(15 * US, 25 * US);
    for (p, &(start, corr)) in arrivals.iter().enumerate() {
        sim.kernel_row(p, &kinds::NCCL_ALLREDUCE, start, end, corr, 0);
        let dev = sim.tl.procs[p].device;
        sim.set_gpu_free(dev, end);
    }
}
