//! A decoder with a known per-layer kernel pattern: six identical 10-kernel layers per step,
//! Python host work before three of the positions (attention metadata, allreduce prep, a
//! residual view chain), and a 6 ms `cudaEventCreateWithFlags` before every 8th steady step.
//!
//! The pattern answers come from the plan below (which kernel is where, which block it belongs
//! to), the gaps from the placed kernels: nothing is derived from the drill-down's own rules.

use serde_json::Map;

use super::Built;
use crate::synth::answers::{self, LayerPlan};
use crate::synth::costs::Costs;
use crate::synth::decode::{self, DEFAULT_PACING};
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::Sim;
use crate::synth::timeline::{MS, Ns, Timeline, US};

const EMBEDDING: KernelKind = KernelKind {
    short: "embedding_gather_kernel",
    demangled: "void tensorrt_llm::kernels::embedding_gather_kernel<__nv_bfloat16>(__nv_bfloat16*, const int*, const __nv_bfloat16*, int)",
    registers: 32,
    grid_x: 64,
    block_x: 256,
};

/// One layer position: kernel, functional block, and the Python host work (NVTX range, µs)
/// that runs before its launch.
type Position = (KernelKind, &'static str, Option<(&'static str, Ns)>);

const LAYER: [Position; 10] = [
    (kinds::RMS_NORM, "norm", None),
    (kinds::GEMM, "gemm", None),
    (kinds::ROPE, "attention", None),
    (kinds::FLASH, "attention", Some(("attention_metadata", 60))),
    (kinds::GEMM, "gemm", None),
    (
        kinds::ALLREDUCE_FUSION,
        "allreduce",
        Some(("allreduce_prep", 20)),
    ),
    (kinds::GEMM, "gemm", None),
    (kinds::SILU, "elementwise", None),
    (kinds::GEMM, "gemm", None),
    (
        kinds::ELEMENTWISE,
        "elementwise",
        Some(("residual_view_chain", 30)),
    ),
];
const LAYERS: usize = 6;
const CONTEXT_STEPS: u64 = 2;
const STEADY_STEPS: u64 = 24;
/// Every this many steady steps, events are created on the step's path (ALLOC).
const EVENT_CREATE_EVERY: u64 = 8;
const EVENT_CREATE: &str = "cudaEventCreateWithFlags_v3020";

/// Builds the scenario; `scale` multiplies the steady steps.
pub fn layers(seed: u64, scale: u32, costs: &Costs) -> Built {
    let mut sim = Sim::new(Timeline::new(&[(31343, "python3", 0)]), seed, false).costed(costs);
    sim.domain_create(0, "TensorRT-LLM");
    sim.advance(0, 200 * US);
    let total = CONTEXT_STEPS + STEADY_STEPS * u64::from(scale);
    for n in 1..=total {
        let reqs = if n <= CONTEXT_STEPS { (4, 60) } else { (0, 64) };
        let create_events = n > CONTEXT_STEPS && (n - CONTEXT_STEPS) % EVENT_CREATE_EVERY == 3;
        step(&mut sim, n, reqs, create_events);
    }
    let positions: Vec<(&str, &str)> = LAYER.iter().map(|p| (p.0.short, p.1)).collect();
    let plan = LayerPlan {
        positions: &positions,
        prefix: 1,
        layers: LAYERS,
    };
    let mut extras = Map::new();
    extras.insert(
        "layer_pattern".into(),
        answers::layer_pattern(&sim.tl, &plan),
    );
    Built { tl: sim.tl, extras }
}

fn launch(sim: &mut Sim, kind: &KernelKind) {
    let pace = DEFAULT_PACING;
    sim.advance(0, pace.between);
    let dur = sim.uniform(5 * US, 12 * US);
    sim.launch(0, kinds::LAUNCH_EXACT, pace.api, kind, dur, pace.gpu_gap);
}

fn step(sim: &mut Sim, number: u64, (ctx, generation): (u32, u32), create_events: bool) {
    let d = sim.jitter(120 * US, 10);
    sim.range(0, "_schedule", d);
    let d = sim.jitter(40 * US, 10);
    sim.range(0, "_fetch_new_requests", d);
    if create_events {
        let r = sim.open(0, "_create_events");
        let d = sim.jitter(6 * MS, 5);
        sim.host_api(0, EVENT_CREATE, d);
        sim.close(0, r);
    }
    let fwd = sim.open(0, &decode::forward_name(number, ctx, generation));
    let d = sim.jitter(300 * US, 5);
    sim.range(0, "_prepare_tp_inputs", d);
    launch(sim, &EMBEDDING);
    for _ in 0..LAYERS {
        for (kind, _, host) in LAYER {
            if let Some((name, us)) = host {
                let d = sim.jitter(us * US, 10);
                sim.range(0, name, d);
            }
            launch(sim, &kind);
        }
    }
    launch(sim, &kinds::RMS_NORM);
    launch(sim, &kinds::SAMPLER);
    sim.host_api(0, kinds::EVENT_RECORD, 3 * US);
    sim.advance(0, 5 * US);
    sim.close(0, fwd);
    let d = sim.jitter(150 * US, 10);
    decode::sample(sim, 0, d, None);
    let d = sim.jitter(250 * US, 10);
    sim.range(0, "_update_requests", d);
    let d = sim.jitter(120 * US, 10);
    sim.range(0, "_handle_responses", d);
}
