//! A vLLM-like serving loop with CUDA graphs, written in both graph tracing modes.
//!
//! Every 8th step is a prefill (mixed) step run as piecewise CUDA graphs: one graph per stretch
//! between attention layers, the attention kernels launched eagerly between them (vLLM's
//! piecewise capture). The other steps are pure decode, one full-model `cudaGraphLaunch` each.
//! The host syncs every step (`_sample_async`) and schedules the next one while the GPU idles.
//!
//! `serving-graphs` traces the graphs at graph level (`MODE = Graph`: one
//! `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per launch, the kernels inside not written);
//! `serving-graphs-node` at node level (`MODE = Node`: every kernel inside written with its
//! `graphNodeId` and `graphId`, no graph-trace row). The seed places both identically, so their
//! `standard` answers differ only by the gaps between nodes inside the replays, which a
//! graph-trace row covers and node-level kernels do not (`graph_modes` states the amount).

use serde_json::{Map, json};

use super::Built;
use crate::synth::answers;
use crate::synth::costs::Costs;
use crate::synth::decode::{self, Launch, Pacing, Step};
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{GraphIds, Sim};
use crate::synth::timeline::{Ns, Timeline, US};

const LAYERS: usize = 8;
/// Every this many steps, a prefill step.
const PREFILL_EVERY: u64 = 8;
/// Steps at scale 1.
const STEPS: u64 = 48;
/// Before attention, the attention kernel, after it.
const PRE: [KernelKind; 3] = [kinds::RMS_NORM, kinds::GEMM, kinds::ROPE];
const POST: [KernelKind; 3] = [kinds::GEMM, kinds::SILU, kinds::GEMM];
const HEAD: [KernelKind; 2] = [kinds::RMS_NORM, kinds::SAMPLER];
/// The full decode graph's ids; piece `i` of the piecewise graphs is graph and exec `1 + i`.
const DECODE_GRAPH: GraphIds = GraphIds {
    graph: 20,
    exec: 20,
};
/// Python dispatch between launches; 1 µs between graph nodes on the GPU.
const PACING: Pacing = Pacing {
    api: 5 * US,
    between: 20 * US,
    gpu_gap: US,
};

/// Graph-level tracing (`MODE = Graph`).
pub fn serving_graphs(seed: u64, scale: u32, costs: &Costs) -> Built {
    serving(seed, scale, costs, "Graph")
}

/// Node-level tracing (`MODE = Node`) of the same placement.
pub fn serving_graphs_node(seed: u64, scale: u32, costs: &Costs) -> Built {
    serving(seed, scale, costs, "Node")
}

type Nodes = Vec<(KernelKind, Ns, u32)>;

/// Nodes of `kinds` with durations drawn in `[lo, hi]`, node ids from `first_node`.
fn nodes(sim: &mut Sim, kinds: &[KernelKind], (lo, hi): (Ns, Ns), first_node: u32) -> Nodes {
    kinds
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, sim.uniform(lo, hi), first_node + i as u32))
        .collect()
}

/// A prefill step: piece 0 (pre-attention of layer 0), then per layer the eager attention
/// kernel and the piece after it (post-attention of that layer and pre-attention of the next,
/// or the head after the last layer).
fn prefill(sim: &mut Sim) -> Vec<Launch> {
    let durs = (30 * US, 90 * US);
    let mut out = vec![Launch::Graph {
        nodes: nodes(sim, &PRE, durs, 1001),
        ids: Some(GraphIds { graph: 1, exec: 1 }),
    }];
    for layer in 0..LAYERS {
        out.push(Launch::Eager {
            api: kinds::LAUNCH_VERSIONED,
            kind: kinds::FLASH,
            dur: sim.uniform(60 * US, 120 * US),
        });
        let piece = layer as u32 + 1;
        let mut ks: Vec<KernelKind> = POST.to_vec();
        ks.extend_from_slice(if layer + 1 < LAYERS { &PRE } else { &HEAD });
        out.push(Launch::Graph {
            nodes: nodes(sim, &ks, durs, 1001 + 1000 * piece),
            ids: Some(GraphIds {
                graph: 1 + piece,
                exec: 1 + piece,
            }),
        });
    }
    out
}

/// A decode step: the whole model in one graph.
fn decode_step(sim: &mut Sim) -> Vec<Launch> {
    let mut ks: Vec<KernelKind> = Vec::new();
    for _ in 0..LAYERS {
        ks.extend_from_slice(&PRE);
        ks.push(kinds::FLASH);
        ks.extend_from_slice(&POST);
    }
    ks.extend_from_slice(&HEAD);
    vec![Launch::Graph {
        nodes: nodes(sim, &ks, (8 * US, 30 * US), 20001),
        ids: Some(DECODE_GRAPH),
    }]
}

fn serving(seed: u64, scale: u32, costs: &Costs, mode: &'static str) -> Built {
    let mut sim = Sim::new(Timeline::new(&[(31360, "python3", 0)]), seed, false).costed(costs);
    sim.tl.graph_trace_mode = mode;
    sim.mark(0, "engine core loop start");
    let mut steps = Vec::new();
    for i in 0..STEPS * u64::from(scale) {
        let is_prefill = i % PREFILL_EVERY == 0;
        let launches = if is_prefill {
            prefill(&mut sim)
        } else {
            decode_step(&mut sim)
        };
        let reqs = if is_prefill { (4, 28) } else { (0, 32) };
        let prep = sim.jitter(if is_prefill { 1300 * US } else { 1000 * US }, 5);
        steps.push(Step {
            number: i + 1,
            ctx: reqs.0,
            generation: reqs.1,
            before: vec![
                ("_schedule", sim.jitter(150 * US, 10)),
                ("_fetch_new_requests", sim.jitter(40 * US, 10)),
            ],
            prep,
            launches,
            sample: sim.jitter(120 * US, 10),
            after: vec![
                ("_update_requests", sim.jitter(200 * US, 10)),
                ("_handle_responses", sim.jitter(100 * US, 10)),
            ],
            sync_lag: 0,
            pacing: PACING,
        });
    }
    let (mut launches, mut inner_gaps, mut span) = (0u64, 0 as Ns, 0 as Ns);
    for step in &steps {
        for l in &step.launches {
            if let Launch::Graph { nodes, .. } = l {
                launches += 1;
                let gaps = (nodes.len() as Ns - 1) * PACING.gpu_gap;
                inner_gaps += gaps;
                span += gaps + nodes.iter().map(|n| sim.kernel_ns(&n.0, n.1)).sum::<Ns>();
            }
        }
    }
    let placed = decode::run(&mut sim, 0, &steps);
    let mut extras = Map::new();
    let placement = super::one_phase(&steps, &placed);
    extras.insert(
        "analyze".into(),
        answers::analyze_answers(&sim.tl, &placement),
    );
    extras.insert(
        "graph_modes".into(),
        json!({
            "definitions": "the same placement in both modes; replay_span_ns = sum over graph launches of first node start to last node end; inner_gap_ns = the gaps between consecutive nodes inside those spans (1 us each). standard: bound.busy_ns and bound.compute_ns are larger at graph level by inner_gap_ns, the aggregate window (bound.window_ns) is the same, so gpu_idle_ratio(Graph) = gpu_idle_ratio(Node) - inner_gap_ns / window_ns and gpu_utilization up by as much; verdict, crossed_count, applicable_count and bound.kind agree; trtllm-skill is kernel-only and sees in Graph mode only the eager attention kernels",
            "mode": mode,
            "graph_launches": launches,
            "graph_replays": sim.tl.graph_replays.len(),
            "graph_kernels": sim.tl.kernels.iter().filter(|k| k.graph_node != 0).count(),
            "replay_span_ns": span,
            "inner_gap_ns": inner_gaps,
        }),
    );
    Built { tl: sim.tl, extras }
}
