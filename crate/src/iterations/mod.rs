//! Iteration isolation (reference §7): which stretch of a trace is the benchmark, and how it
//! splits into iterations.
//!
//! Two techniques, as the reference: allreduce grouping (tensor-parallel runs: every forward
//! step launches the same number of allreduce kernels, separated by long host gaps between
//! steps) and NVTX forward-step ranges (any TP size, the fallback). Both yield [`Iteration`]s;
//! [`phases`] then splits them at long pauses and picks the benchmark phase.

pub mod allreduce;
pub mod forward_steps;
pub mod inferred;
pub mod phases;

use serde::Serialize;

use crate::model::Ns;

/// A gap longer than this between consecutive allreduce kernels starts a new iteration (1 ms).
pub const ITERATION_GAP_NS: Ns = 1_000_000;
/// A pause longer than this between iterations starts a new phase (100 ms).
pub const PHASE_GAP_NS: Ns = 100_000_000;
/// The benchmark phase needs at least this many iterations.
pub const MIN_BENCHMARK_ITERATIONS: usize = 5;

/// How the iterations were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Groups of allreduce kernels (all devices pooled).
    Allreduce,
    /// `[Executor] _forward_step` NVTX ranges, TP ranks merged.
    Nvtx,
    /// Neither: steps inferred from the repeating kernel stream ([`inferred`]).
    Inferred,
    /// Neither allreduce kernels nor forward-step ranges: no iterations.
    None,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Allreduce => "allreduce",
            Method::Nvtx => "nvtx",
            Method::Inferred => "inferred",
            Method::None => "none",
        }
    }
}

/// Isolation from inferred iterations (the fallback when [`isolate`] finds no method).
pub fn from_inference(inference: &inferred::Inference) -> Isolation {
    Isolation::new(
        Method::Inferred,
        inference.reason(),
        inference.iterations.clone(),
    )
}

/// One iteration: an allreduce group or a (merged) forward step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Iteration {
    pub start: Ns,
    pub end: Ns,
    /// Allreduce kernels in the group (1 for a forward step).
    pub kernel_count: u32,
    /// The reference's "iteration wall time": first allreduce start to last allreduce end, or
    /// the longest TP rank's copy of a forward step.
    pub wall_ns: Ns,
}

/// A run of iterations between pauses longer than [`PHASE_GAP_NS`]; indices are inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseSpan {
    pub first: usize,
    pub last: usize,
}

impl PhaseSpan {
    /// Iterations in the phase (never 0).
    pub fn iteration_count(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// The iterations of a trace, its phases and the chosen benchmark phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Isolation {
    pub method: Method,
    /// Why this method was used (shown to the user).
    pub reason: String,
    pub iterations: Vec<Iteration>,
    /// The most common `kernel_count` (first seen wins a tie).
    pub common_size: u32,
    pub phases: Vec<PhaseSpan>,
    /// Index into `phases` of the benchmark phase, if one qualifies.
    pub benchmark: Option<usize>,
}

impl Isolation {
    /// Splits `iterations` into phases and picks the benchmark phase (reference §7.1 steps 3–5).
    pub fn new(method: Method, reason: String, iterations: Vec<Iteration>) -> Isolation {
        let common_size = phases::common_size(&iterations);
        let spans = phases::split(&iterations, PHASE_GAP_NS);
        let benchmark = phases::benchmark(&iterations, &spans, common_size);
        Isolation {
            method,
            reason,
            iterations,
            common_size,
            phases: spans,
            benchmark,
        }
    }

    /// The benchmark phase's iterations (empty without one).
    pub fn benchmark_iterations(&self) -> &[Iteration] {
        self.benchmark
            .and_then(|b| self.phases.get(b))
            .and_then(|p| self.iterations.get(p.first..=p.last))
            .unwrap_or(&[])
    }

    /// `[first benchmark iteration start, last benchmark iteration end]`.
    pub fn benchmark_window(&self) -> Option<(Ns, Ns)> {
        let its = self.benchmark_iterations();
        Some((its.first()?.start, its.last()?.end))
    }

    /// How many of `phase`'s iterations have the common size.
    pub fn common_count(&self, phase: &PhaseSpan) -> usize {
        self.iterations
            .get(phase.first..=phase.last)
            .map_or(0, |its| {
                its.iter()
                    .filter(|i| i.kernel_count == self.common_size)
                    .count()
            })
    }
}

/// Chooses the technique as the reference does: allreduce grouping when the trace has allreduce
/// kernels (`allreduce`, grouped at gaps > [`ITERATION_GAP_NS`]), else the (merged) forward
/// steps' iterations (`steps`, one per step: [`forward_steps::iteration`]), else nothing.
/// `raw_steps` is the number of step ranges before TP merging and `marker` the range name they
/// were read under (`None`: no range was a step), for the explanation.
pub fn isolate(
    allreduce: allreduce::AllreduceIterations,
    steps: impl ExactSizeIterator<Item = Iteration>,
    raw_steps: usize,
    marker: Option<&str>,
) -> Isolation {
    if allreduce.kernels > 0 {
        let iterations = allreduce.iterations;
        let reason = format!(
            "{} allreduce kernels (tensor parallelism), all devices pooled, grouped into {} iterations at gaps > 1 ms",
            allreduce.kernels,
            iterations.len()
        );
        return Isolation::new(Method::Allreduce, reason, iterations);
    }
    if steps.len() > 0 {
        let reason = format!(
            "no allreduce kernels (TP = 1 or no collectives): {} `{}` NVTX ranges, {} steps after merging TP ranks",
            raw_steps,
            marker.unwrap_or("[Executor] _forward_step"),
            steps.len()
        );
        return Isolation::new(Method::Nvtx, reason, steps.collect());
    }
    let markers = match marker {
        Some(m) => format!("`{m}`"),
        None => crate::names::steps::StepStyle::ALL
            .map(|s| format!("`{}`", s.pattern()))
            .join(", "),
    };
    Isolation::new(
        Method::None,
        format!(
            "no allreduce kernels and no step-marker NVTX ranges ({markers}): iterations cannot be isolated; give a step marker (--step-regex or --phase-map)"
        ),
        Vec::new(),
    )
}
