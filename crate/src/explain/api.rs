//! Host-side CUDA API behaviour: blocking synchronization calls and launch latency (spec §5).

use serde::Serialize;

use super::stats::{Distribution, NamedStats, distribution, named_stats};
use crate::index::{SpanCursor, TraceIndex, steady_steps};
use crate::model::Ns;
use crate::names::api::ApiKind;

/// API calls of one class (blocking syncs; object creation and allocation), by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSummary {
    pub calls: u64,
    pub total_us: f64,
    pub by_name: Vec<NamedStats>,
    /// Calls inside steady-state forward steps per step, when there are steps.
    pub calls_per_step: Option<f64>,
}

/// Kernel start − launch call end, for eagerly launched kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchLatency {
    /// Kernels whose launch call was found (graph replays excluded: their nodes queue).
    pub kernels: u64,
    pub distribution: Distribution,
}

/// Host-blocking sync calls by name (`cudaEventQuery`/`cudaStreamWaitEvent` do not block).
pub fn sync_summary(ix: &TraceIndex<'_>) -> CallSummary {
    calls_where(ix, |k| k == ApiKind::BlockingSync)
}

/// Event/stream creation and allocation calls by name.
pub fn alloc_summary(ix: &TraceIndex<'_>) -> CallSummary {
    calls_where(ix, |k| matches!(k, ApiKind::ObjectCreate | ApiKind::Alloc))
}

/// Calls of the kinds `pick` accepts: by name, and how many fall in steady steps per step.
fn calls_where(ix: &TraceIndex<'_>, pick: impl Fn(ApiKind) -> bool) -> CallSummary {
    let rt = &ix.trace.runtime;
    let mut per_name: Vec<(u64, Ns, Ns)> = vec![(0, 0, 0); ix.trace.strings.len()];
    let (steps, _) = steady_steps(&ix.steps.steps);
    let spans: Vec<(Ns, Ns)> = steps.iter().map(|s| (s.start, s.end)).collect();
    let mut in_steps = 0u64;
    let mut cursor = SpanCursor::new(&spans);
    for r in 0..rt.len() {
        if !pick(ix.call_kind(r)) {
            continue;
        }
        let d = (rt.end[r] - rt.start[r]).max(0);
        if let Some(a) = per_name.get_mut(rt.name[r] as usize) {
            *a = (a.0 + 1, a.1 + d, a.2.max(d));
        }
        if cursor.find(rt.start[r]).is_some() {
            in_steps += 1;
        }
    }
    let by_name = named_stats(&ix.trace.strings, &per_name, usize::MAX);
    CallSummary {
        calls: by_name.iter().map(|a| a.count).sum(),
        total_us: by_name.iter().map(|a| a.total_us).sum(),
        by_name,
        calls_per_step: (!spans.is_empty()).then(|| in_steps as f64 / spans.len() as f64),
    }
}

/// The distribution of kernel start − launch call end over eagerly launched kernels.
pub fn launch_latency(ix: &TraceIndex<'_>) -> LaunchLatency {
    let k = &ix.trace.kernels;
    let rt = &ix.trace.runtime;
    let mut lat: Vec<Ns> = Vec::new();
    for i in 0..k.len() {
        if let Some(r) = ix.launch_call(i)
            && ix.call_kind(r) == ApiKind::Launch
        {
            lat.push(k.start[i] - rt.end[r]);
        }
    }
    LaunchLatency {
        kernels: lat.len() as u64,
        distribution: distribution(&mut lat),
    }
}
