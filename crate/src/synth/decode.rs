//! The TensorRT-LLM executor loop of one rank, step by step (reference §1, §11).
//!
//! Each step: inter-step host ranges (`_schedule`, `_fetch_new_requests`, ...), then the
//! `[Executor] _forward_step N: C ctx reqs, G gen reqs` range holding `_prepare_tp_inputs` and
//! the kernel launches, then `_sample_async` (a D2H copy and a stream sync) and the remaining
//! inter-step ranges. Whether the host or the GPU is the bottleneck follows from the durations
//! and from how far the host runs ahead (`sync_lag`).

use super::kinds::{self, KernelKind};
use super::sim::{GraphIds, Sim};
use super::timeline::{Ns, US};

/// One kernel submission inside a forward step.
#[derive(Debug, Clone)]
pub enum Launch {
    /// An eager launch through `api` of a kernel running `dur`.
    Eager {
        api: &'static str,
        kind: KernelKind,
        dur: Ns,
    },
    /// A CUDA graph replay: `(kernel, duration, graphNodeId)` per node, and which graph it is
    /// (`None`: graph 1 / exec 1 at graph level, no `graphId` on node-level kernels).
    Graph {
        nodes: Vec<(KernelKind, Ns, u32)>,
        ids: Option<GraphIds>,
    },
    /// A `cudaMemcpyAsync` host-to-device copy of `bytes` from pinned memory, running `dur`; from
    /// pageable memory when `pageable` (its call then lasts until the copy ends).
    CopyHtoD { bytes: i64, dur: Ns, pageable: bool },
}

/// One forward step and the host work around it.
#[derive(Debug, Clone)]
pub struct Step {
    pub number: u64,
    pub ctx: u32,
    pub generation: u32,
    /// Inter-step host ranges before the forward step, in order.
    pub before: Vec<(&'static str, Ns)>,
    /// `_prepare_tp_inputs` duration (inside the forward step, before any launch).
    pub prep: Ns,
    pub launches: Vec<Launch>,
    /// `_sample_async` host work, excluding the wait in its stream sync.
    pub sample: Ns,
    /// Inter-step host ranges after `_sample_async`, in order.
    pub after: Vec<(&'static str, Ns)>,
    /// The sync in `_sample_async` waits for the GPU work of step `index - sync_lag`: 0 keeps the
    /// host in lockstep with the GPU, 1 lets it run one step ahead (overlap scheduler).
    pub sync_lag: usize,
    pub pacing: Pacing,
}

/// Host-side pacing of launches.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    /// Duration of one launch API call.
    pub api: Ns,
    /// Host time between consecutive launch calls.
    pub between: Ns,
    /// Minimum idle gap the GPU leaves between queued kernels.
    pub gpu_gap: Ns,
}

/// Launches as fast as a C++ runtime issues them.
pub const DEFAULT_PACING: Pacing = Pacing {
    api: 6 * US,
    between: 3 * US,
    gpu_gap: 2 * US,
};
/// PyTorch eager: ~45 µs of Python between launches, so launch calls are a small share of the
/// forward step even when the step is mostly launching.
pub const PYTORCH_EAGER: Pacing = Pacing {
    api: 5 * US,
    between: 45 * US,
    gpu_gap: 2 * US,
};

/// Placement facts of one step, for the oracle's per-step extras.
#[derive(Debug, Clone, Copy)]
pub struct StepPlaced {
    pub start: Ns,
    pub end: Ns,
    /// When the device finished this step's GPU work.
    pub gpu_end: Ns,
}

/// The forward-step range name the phase regex recognises.
pub fn forward_name(number: u64, ctx: u32, generation: u32) -> String {
    format!("[Executor] _forward_step {number}: {ctx} ctx reqs, {generation} gen reqs")
}

/// Runs `steps` on process `p` in order and returns where each landed.
pub fn run(sim: &mut Sim, p: usize, steps: &[Step]) -> Vec<StepPlaced> {
    let mut placed: Vec<StepPlaced> = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        // None: wait for this step's own GPU work; Some(t): for an earlier step's (0 if none).
        let wait_for = match step.sync_lag {
            0 => None,
            lag => Some(
                i.checked_sub(lag)
                    .and_then(|j| placed.get(j))
                    .map_or(0, |s| s.gpu_end),
            ),
        };
        placed.push(run_step(sim, p, step, wait_for));
    }
    placed
}

fn run_step(sim: &mut Sim, p: usize, step: &Step, wait_for: Option<Ns>) -> StepPlaced {
    let pacing = step.pacing;
    for (name, dur) in &step.before {
        sim.range(p, name, *dur);
    }
    let fwd = sim.open(p, &forward_name(step.number, step.ctx, step.generation));
    sim.range(p, "_prepare_tp_inputs", step.prep);
    for launch in &step.launches {
        sim.advance(p, pacing.between);
        submit(sim, p, launch, pacing);
    }
    sim.host_api(p, kinds::EVENT_RECORD, 3 * US);
    sim.advance(p, 5 * US);
    let (start, end) = sim.close(p, fwd);
    let gpu_end = sample(sim, p, step.sample, wait_for);
    for (name, dur) in &step.after {
        sim.range(p, name, *dur);
    }
    StepPlaced {
        start,
        end,
        gpu_end,
    }
}

fn submit(sim: &mut Sim, p: usize, launch: &Launch, pacing: Pacing) {
    match launch {
        Launch::Eager { api, kind, dur } => {
            sim.launch(p, api, pacing.api, kind, *dur, pacing.gpu_gap);
        }
        Launch::Graph { nodes, ids } => {
            sim.graph_launch(p, 2 * pacing.api, nodes, pacing.gpu_gap, *ids);
        }
        Launch::CopyHtoD {
            bytes,
            dur,
            pageable: false,
        } => {
            sim.memcpy_htod(p, *bytes, pacing.api, *dur);
        }
        Launch::CopyHtoD {
            bytes,
            dur,
            pageable: true,
        } => {
            sim.memcpy_htod_pageable(p, *bytes, pacing.api, *dur);
        }
    }
}

/// `_sample_async`: copy the sampled tokens to the host, wait (for this step's GPU work, or
/// until `wait_for`), finish the host work. Returns when this step's GPU work (copy included) ends.
pub fn sample(sim: &mut Sim, p: usize, work: Ns, wait_for: Option<Ns>) -> Ns {
    let r = sim.open(p, "_sample_async");
    sim.memcpy_dtoh(p, 256, 4 * US, 2 * US);
    let gpu_end = sim.gpu_free(sim.tl.procs[p].device);
    sim.stream_sync(p, wait_for.unwrap_or(gpu_end));
    sim.advance(p, work);
    sim.close(p, r);
    gpu_end
}

/// Queues `n` long kernels back to back before the first step (engine warmup / autotuning), so
/// the GPU is already busy when step 0 prepares its inputs, as in a real serving run.
pub fn warmup(sim: &mut Sim, p: usize, api: &'static str, n: usize, dur: Ns) {
    for _ in 0..n {
        sim.launch(
            p,
            api,
            DEFAULT_PACING.api,
            &kinds::GEMM,
            dur,
            DEFAULT_PACING.gpu_gap,
        );
        sim.advance(p, DEFAULT_PACING.between);
    }
}
