//! A regression pair whose per-layer NVTX ranges carry their layer's index and whose two
//! captures cover different layers (as two capture windows of one training step do), with
//! PyTorch-like nested ranges of known self times: `aten::to` ⊃ `aten::_to_copy` ⊃
//! `aten::copy_`, where only the innermost one grows in the target.
//!
//! Per layer `i` of a step: `FSDP::pre_forward (blocks.i._checkpoint_wrapped_module)`, the
//! nested copy, a GEMM launch, `FSDP::post_forward (blocks.i…)`. The baseline covers layers
//! 0–7, the target layers 4–11 and adds a `broadcast_requests` range before each step (an op
//! it alone has). The answers are the placed durations: every steady step holds the same ranges.

use serde_json::{Map, Value, json};

use super::Built;
use crate::synth::costs::Costs;
use crate::synth::decode::{self, DEFAULT_PACING};
use crate::synth::kinds;
use crate::synth::sim::Sim;
use crate::synth::timeline::{Ns, Timeline, US};

/// Layers each capture covers.
const BASELINE_LAYERS: std::ops::Range<usize> = 0..8;
const TARGET_LAYERS: std::ops::Range<usize> = 4..12;
const CONTEXT_STEPS: u64 = 2;
const STEADY_STEPS: u64 = 12;

/// Placed durations (µs) of one layer's ranges.
struct Plan {
    pre: Ns,
    post: Ns,
    /// `aten::to`'s own time before and after its child.
    to_self: (Ns, Ns),
    /// `aten::_to_copy`'s own time before and after its child.
    to_copy_self: (Ns, Ns),
    copy: Ns,
    broadcast: Option<Ns>,
}

const BASELINE: Plan = Plan {
    pre: 20,
    post: 10,
    to_self: (10, 5),
    to_copy_self: (8, 4),
    copy: 30,
    broadcast: None,
};
const TARGET: Plan = Plan {
    copy: 60,
    broadcast: Some(80),
    ..BASELINE
};

const PRE: &str = "FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)";
const POST: &str = "FSDP::post_forward (blocks.*._checkpoint_wrapped_module)";

fn layer_name(shape: &str, i: usize) -> String {
    shape.replace('*', &i.to_string())
}

fn build(
    (seed, scale, costs): (u64, u32, &Costs),
    pid: u32,
    plan: &Plan,
    layers: std::ops::Range<usize>,
) -> Sim {
    let mut sim = Sim::new(Timeline::new(&[(pid, "python3", 0)]), seed, false).costed(costs);
    sim.domain_create(0, "TensorRT-LLM");
    sim.advance(0, 200 * US);
    let total = CONTEXT_STEPS + STEADY_STEPS * u64::from(scale);
    for n in 1..=total {
        let (ctx, generation) = if n <= CONTEXT_STEPS { (4, 60) } else { (0, 64) };
        sim.range(0, "_schedule", 100 * US);
        if let Some(b) = plan.broadcast {
            sim.range(0, "broadcast_requests", b * US);
        }
        let fwd = sim.open(0, &decode::forward_name(n, ctx, generation));
        for i in layers.clone() {
            sim.range(0, &layer_name(PRE, i), plan.pre * US);
            let to = sim.open(0, "aten::to");
            sim.advance(0, plan.to_self.0 * US);
            let to_copy = sim.open(0, "aten::_to_copy");
            sim.advance(0, plan.to_copy_self.0 * US);
            sim.range(0, "aten::copy_", plan.copy * US);
            sim.advance(0, plan.to_copy_self.1 * US);
            sim.close(0, to_copy);
            sim.advance(0, plan.to_self.1 * US);
            sim.close(0, to);
            let pace = DEFAULT_PACING;
            sim.advance(0, pace.between);
            sim.launch(
                0,
                kinds::LAUNCH_EXACT,
                pace.api,
                &kinds::GEMM,
                20 * US,
                pace.gpu_gap,
            );
            sim.range(0, &layer_name(POST, i), plan.post * US);
        }
        sim.advance(0, 5 * US);
        sim.close(0, fwd);
        decode::sample(&mut sim, 0, 50 * US, None);
        sim.range(0, "_update_requests", 200 * US);
    }
    sim
}

/// What one capture must give per steady step (µs): each op's time and self time, the names a
/// grouped op holds, each op's parent and depth.
fn answers(plan: &Plan, layers: std::ops::Range<usize>) -> Value {
    let l = layers.len() as f64;
    let us = |v: Ns| v as f64;
    let to_self = us(plan.to_self.0 + plan.to_self.1);
    let to_copy_self = us(plan.to_copy_self.0 + plan.to_copy_self.1);
    let copy = us(plan.copy);
    let mut ops = json!({
        PRE: {"us_per_step": l * us(plan.pre), "self_us_per_step": l * us(plan.pre), "parent": null, "depth": 0},
        POST: {"us_per_step": l * us(plan.post), "self_us_per_step": l * us(plan.post), "parent": null, "depth": 0},
        "aten::to": {"us_per_step": l * (to_self + to_copy_self + copy), "self_us_per_step": l * to_self, "parent": null, "depth": 0},
        "aten::_to_copy": {"us_per_step": l * (to_copy_self + copy), "self_us_per_step": l * to_copy_self, "parent": "aten::to", "depth": 1},
        "aten::copy_": {"us_per_step": l * copy, "self_us_per_step": l * copy, "parent": "aten::_to_copy", "depth": 2},
    });
    if let (Some(b), Some(obj)) = (plan.broadcast, ops.as_object_mut()) {
        obj.insert(
            "broadcast_requests".into(),
            json!({"us_per_step": us(b), "self_us_per_step": us(b), "parent": null, "depth": 0}),
        );
    }
    let members =
        |shape: &str| -> Vec<String> { layers.clone().map(|i| layer_name(shape, i)).collect() };
    json!({
        "ops": ops,
        "members": {PRE: members(PRE), POST: members(POST)},
    })
}

fn built(sim: Sim, key: &str, value: Value) -> Built {
    let mut extras = Map::new();
    extras.insert(key.into(), value);
    Built { tl: sim.tl, extras }
}

/// The baseline: layers 0–7.
pub fn indexed_layers_baseline(seed: u64, scale: u32, costs: &Costs) -> Built {
    let sim = build((seed, scale, costs), 31350, &BASELINE, BASELINE_LAYERS);
    built(sim, "indexed_layers", answers(&BASELINE, BASELINE_LAYERS))
}

/// The target: layers 4–11, `aten::copy_` twice as long, `broadcast_requests` added. Its
/// answers also hold what comparing it with the baseline must give.
pub fn indexed_layers_target(seed: u64, scale: u32, costs: &Costs) -> Built {
    let sim = build((seed, scale, costs), 31351, &TARGET, TARGET_LAYERS);
    let common = TARGET_LAYERS
        .filter(|i| BASELINE_LAYERS.contains(i))
        .count();
    let l = TARGET_LAYERS.len() as f64;
    let grew = l * (TARGET.copy - BASELINE.copy) as f64;
    let mut value = answers(&TARGET, TARGET_LAYERS);
    if let Some(obj) = value.as_object_mut() {
        obj.insert(
            "versus_baseline".into(),
            json!({
                "status": {
                    PRE: "unchanged",
                    POST: "unchanged",
                    "aten::to": "unchanged",
                    "aten::_to_copy": "unchanged",
                    "aten::copy_": "REGRESSION",
                    "broadcast_requests": "NEW",
                },
                "instances": {"baseline": BASELINE_LAYERS.len(), "target": TARGET_LAYERS.len(), "common": common},
                "self_delta_us": {"aten::to": 0.0, "aten::_to_copy": 0.0, "aten::copy_": grew},
                "delta_us": {"aten::to": grew, "aten::_to_copy": grew, "aten::copy_": grew},
                "top_regression": "aten::copy_",
            }),
        );
    }
    built(sim, "indexed_layers", value)
}
