//! The named scenarios of spec §7: each places a serving run whose answers are known.

mod capture;
mod causes;
mod copies;
mod gaps;
mod indexed;
mod layers;
mod loops;
mod records;
mod serving;
mod tp2;

use serde_json::{Map, Value};

use super::answers::{PlacedStep, Placement};
use super::costs::{Costs, Knobs};
use super::decode::{Step, StepPlaced};
use super::timeline::Timeline;

/// A placed scenario: its timeline and the answers that only it knows how to state.
pub struct Built {
    pub tl: Timeline,
    pub extras: Map<String, Value>,
}

/// Builds a scenario from its seed, scale and costs.
type Builder = fn(u64, u32, &Costs) -> Built;

/// `(name, one-line description, builder, the cost knobs it supports)`; `--scale N` multiplies
/// the steps (or gaps).
pub const SCENARIOS: [(&str, &str, Builder, Knobs); 25] = [
    (
        "host-bound",
        "TP=1 decode loop, eager cudaLaunchKernel, exposed _prepare_tp_inputs, short kernels: YES, host prep confirmed (1280 kernels per scale unit)",
        loops::host_bound,
        Knobs::ALL,
    ),
    (
        "gpu-bound",
        "long back-to-back kernels, host one step ahead, inline NVTX text, cudaLaunchKernel_v7000: NO",
        loops::gpu_bound,
        Knobs::ALL,
    ),
    (
        "context-only",
        "context steps host-bound with heavy _prepare_tp_inputs, generation GPU-bound: aggregate NO, context YES",
        loops::context_only,
        Knobs::ALL,
    ),
    (
        "tp2-straggler",
        "TP=2, two ranks on devices 0/1, NCCL allreduce per layer, rank 1 arrives last at 90% of collectives",
        tp2::tp2_straggler,
        Knobs::ALL,
    ),
    (
        "tp4-straggler",
        "TP=4, four ranks on devices 0-3, NCCL allreduce per layer, 12 steps, rank 1 arrives last at 90% of collectives",
        tp2::tp4_straggler,
        Knobs::ALL,
    ),
    (
        "tp2-phases",
        "TP=2 serving run in three allreduce phases 150/120 ms apart: CUDA-graph warm-up (4 steps), benchmark (3 ctx, 30 steady at gen 32, 3 drain), teardown (2 steps)",
        tp2::tp2_phases,
        Knobs::ALL,
    ),
    (
        "regression-baseline",
        "TP=1 loop, v1.1-like host work (_fetch_new_requests 36 us, _update_requests 413 us, 6 launches/step)",
        loops::regression_baseline,
        Knobs::ALL,
    ),
    (
        "regression-target",
        "same GPU work as regression-baseline, more host work (+broadcast_requests, 270/723 us, 22 launches/step)",
        loops::regression_target,
        Knobs::ALL,
    ),
    (
        "indexed-layers-baseline",
        "TP=1 steps of eight layers whose NVTX ranges carry the layer index (FSDP::pre_forward (blocks.N…)), layers 0-7, with aten::to ⊃ aten::_to_copy ⊃ aten::copy_ nested per layer: known self times",
        indexed::indexed_layers_baseline,
        Knobs::DEVICE,
    ),
    (
        "indexed-layers-target",
        "indexed-layers-baseline capturing layers 4-11 instead, aten::copy_ twice as long (its parents' own time unchanged), broadcast_requests added",
        indexed::indexed_layers_target,
        Knobs::DEVICE,
    ),
    (
        "kernel-classes",
        "TP=1 loop, 3 context and 40 generation steps, each launching a GEMM, attention, norm, elementwise, reduction, memory, sampling and other kernel of fixed durations and a host-to-device copy: known time per kernel class and phase",
        loops::kernel_classes,
        Knobs::ALL,
    ),
    (
        "cuda-graphs",
        "node-level graph tracing: 14-node cudaGraphLaunch replays plus eager cudaLaunchKernel_v7000 kernels",
        loops::cuda_graphs,
        Knobs::ALL,
    ),
    (
        "serving-graphs",
        "vLLM-like serving, graph-level tracing (MODE = Graph): prefill every 8th step as piecewise graphs around eager attention, decode as one full cudaGraphLaunch; one GRAPH_TRACE row per launch, no kernels inside",
        serving::serving_graphs,
        Knobs::ALL,
    ),
    (
        "serving-graphs-node",
        "serving-graphs traced at node level (MODE = Node): the same placement, the kernels inside the graphs written with graphNodeId and graphId, no GRAPH_TRACE rows",
        serving::serving_graphs_node,
        Knobs::ALL,
    ),
    (
        "copy-bound",
        "TP=1 decode loop streaming each layer's 64 MiB of weights host to device (pinned cudaMemcpyAsync, ~2.8 ms) before its short kernels, host a step ahead: NO, transfer-bound",
        copies::copy_bound,
        Knobs::ALL,
    ),
    (
        "copy-bound-pageable",
        "copy-bound with the weights in pageable host memory: each cudaMemcpyAsync stages its copy and returns once it ends, so the host waits out every copy: YES by the thresholds (the host sits in its copy calls), transfer-bound by the critical path",
        copies::copy_bound_pageable,
        Knobs::ALL,
    ),
    (
        "gaps",
        "one device, one stream, inter-kernel gaps of known sizes in all nine buckets",
        gaps::gaps,
        Knobs::NONE,
    ),
    (
        "layers",
        "TP=1 decoder, six identical 10-kernel layers per step with Python before attention/allreduce/residual, 6 ms cudaEventCreate every 8th step: known per-layer pattern",
        layers::layers,
        Knobs::ALL,
    ),
    (
        "idle-causes",
        "one device whose idle gaps hold planted causes: JIT compile, module load and a slow first launch at start, then per step a sync, cudaMalloc, an IO range, GC pauses, GIL waits, untraced host time and the launch",
        causes::idle_causes,
        Knobs::NONE,
    ),
    (
        "host-records",
        "one device whose idle gaps the trace's own records explain: module and lazy function loading inside a first launch, a profiler buffer flush, a launch waiting on a full command buffer, then per step the launching thread blocked, running sampled untraced code, preempted, and the launch",
        records::host_records,
        Knobs::NONE,
    ),
    (
        "capture-short",
        "46 host-bound kernels in about 2 ms: the capture checks flag it too short to judge",
        capture::short,
        Knobs::NONE,
    ),
    (
        "capture-warmup",
        "one kernel, then a module load, an NVRTC compile in a compileFusion range and an 8 ms first launch (~200 ms idle), then a GPU-bound loop with GC and GIL ranges; no capture range",
        capture::warmup,
        Knobs::NONE,
    ),
    (
        "capture-graph-level",
        "6-node cudaGraphLaunch replays traced at graph level (MODE = Graph: one GRAPH_TRACE row each, no kernels inside) between eager kernels",
        capture::graph_level,
        Knobs::NONE,
    ),
    (
        "capture-no-nvtx",
        "a GPU-bound eager loop with no NVTX range",
        capture::no_nvtx,
        Knobs::NONE,
    ),
    (
        "capture-gpu-metrics",
        "a GPU-bound loop with GPU metrics sampled at 10 kHz (SMs Active, SM Issue, Tensor Active, DRAM bandwidth, GPC clock): compute-bound",
        capture::gpu_metrics,
        Knobs::NONE,
    ),
];

/// One process's decode loop as placed, in one phase (the benchmark): what the root-cause
/// oracle reads of it.
pub(crate) fn one_phase(steps: &[Step], placed: &[StepPlaced]) -> Placement {
    Placement {
        steps: steps
            .iter()
            .zip(placed)
            .map(|(s, p)| PlacedStep {
                ctx: s.ctx,
                generation: s.generation,
                phase: 0,
                ranks: vec![(p.start, p.end)],
                allreduce: None,
            })
            .collect(),
        phases: 1,
        benchmark_phase: 0,
    }
}
