//! CUDA-graph coverage (reference §9.2, spec §4): which kernels ran inside graph replays and
//! which were launched eagerly, overall and per phase, and whether the capture could see graph
//! kernels at all.
//!
//! A kernel is graph-launched when its correlation id joins a `cudaGraphLaunch*`/`cuGraphLaunch*`
//! call of its own process, or when nsys recorded a `graphNodeId`/`graphId` for it. With
//! graph-level tracing (`--cuda-graph-trace=graph`, the default) nsys records a replay as one
//! graph event and no kernels, so coverage can only be measured from a node-level capture.

use serde::Serialize;

use crate::drill::phase_steps;
use crate::index::units::{ratio, us};
use crate::index::{SpanCursor, TraceIndex};
use crate::model::Ns;
use crate::names::api::ApiKind;
use crate::names::kernels::KernelCategory;

/// The table nsys writes for whole-graph executions under graph-level tracing.
pub const GRAPH_TRACE_TABLE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";

/// An eagerly launched kernel name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EagerKernel {
    pub name: String,
    pub category: KernelCategory,
    /// GEMM, norm or collective: work CUDA graphs capture without trouble.
    pub capturable: bool,
    pub count: u64,
    pub total_us: f64,
}

/// Coverage within one phase (kernels launched inside its forward steps).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseCoverage {
    pub phase: String,
    pub steps: u64,
    pub kernels: u64,
    pub graph_kernels: u64,
    pub eager_kernels: u64,
    pub coverage: f64,
}

/// The `graphs` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphReport {
    pub graph_kernels: u64,
    pub eager_kernels: u64,
    /// Graph kernels / all kernels.
    pub coverage: f64,
    /// `CUDA_GRAPH_TRACE_OPTIONS:MODE` of the capture: `node`, `graph` or `unknown`.
    pub capture_mode: String,
    /// Eager kernels by name, most time first.
    pub eager_top: Vec<EagerKernel>,
    pub graph_launch_calls: u64,
    pub graph_kernel_us: f64,
    pub eager_kernel_us: f64,
    /// Time of eager GEMM/norm/collective kernels.
    pub capturable_eager_us: f64,
    pub phases: Vec<PhaseCoverage>,
    /// Set when the capture cannot show graph kernels: what happened and how to re-capture.
    pub advice: Option<String>,
}

#[derive(Default)]
struct Tally {
    graph: u64,
    eager: u64,
    graph_ns: Ns,
    eager_ns: Ns,
    capturable_eager_ns: Ns,
    graph_calls: u64,
    /// Per name id: (eager count, eager ns).
    eager_by_name: Vec<(u64, Ns)>,
    /// Per phase (context, generation): (kernels, graph kernels).
    phases: [(u64, u64); 2],
}

/// Graph coverage over every input; `top` limits the eager-kernel list.
pub fn graph_report(inputs: &[TraceIndex<'_>], top: usize) -> GraphReport {
    let mut eager_names: Vec<EagerKernel> = Vec::new();
    let mut total = Tally::default();
    for ix in inputs {
        let t = tally(ix);
        eager_names.extend(eager_list(ix, &t));
        total.graph += t.graph;
        total.eager += t.eager;
        total.graph_ns += t.graph_ns;
        total.eager_ns += t.eager_ns;
        total.capturable_eager_ns += t.capturable_eager_ns;
        total.graph_calls += t.graph_calls;
        for (a, b) in total.phases.iter_mut().zip(t.phases) {
            a.0 += b.0;
            a.1 += b.1;
        }
    }
    let eager_top = merge_eager(eager_names, top);
    let capture_mode = capture_mode(inputs);
    let advice = advice(inputs, &capture_mode, &total);
    GraphReport {
        graph_kernels: total.graph,
        eager_kernels: total.eager,
        coverage: ratio(total.graph as f64, (total.graph + total.eager) as f64),
        capture_mode,
        eager_top,
        graph_launch_calls: total.graph_calls,
        graph_kernel_us: us(total.graph_ns),
        eager_kernel_us: us(total.eager_ns),
        capturable_eager_us: us(total.capturable_eager_ns),
        phases: phases(inputs, &total),
        advice,
    }
}

/// Whether kernel `k`, launched by runtime row `call` (if known), ran inside a graph replay.
pub fn is_graph_kernel(ix: &TraceIndex<'_>, k: usize, call: Option<usize>) -> bool {
    let kern = &ix.trace.kernels;
    kern.graph_node_of(k) != 0
        || kern.graph_id_of(k) != 0
        || call.is_some_and(|row| ix.call_kind(row) == ApiKind::GraphLaunch)
}

fn tally(ix: &TraceIndex<'_>) -> Tally {
    let kern = &ix.trace.kernels;
    let rt = &ix.trace.runtime;
    let mut t = Tally {
        eager_by_name: vec![(0, 0); ix.trace.strings.len()],
        ..Tally::default()
    };
    let windows = [&ix.steps.context, &ix.steps.generation]
        .map(|p| p.as_ref().map_or(&[][..], |p| p.window.spans()));
    for d in &ix.devices {
        // Launch times follow the device's kernel order closely: a cursor per phase.
        let mut cursors = windows.map(SpanCursor::new);
        for k in d.kernels() {
            let k = k as usize;
            let call = ix.launch_call(k);
            let graph = is_graph_kernel(ix, k, call);
            let dur = (kern.end[k] - kern.start[k]).max(0);
            if graph {
                t.graph += 1;
                t.graph_ns += dur;
            } else {
                t.eager += 1;
                t.eager_ns += dur;
                let name = kern.short_name[k];
                if ix.names.category(name).capturable() {
                    t.capturable_eager_ns += dur;
                }
                if let Some(e) = t.eager_by_name.get_mut(name as usize) {
                    e.0 += 1;
                    e.1 += dur;
                }
            }
            let at = call.map_or(kern.start[k], |row| rt.start[row]);
            for (c, p) in cursors.iter_mut().zip(t.phases.iter_mut()) {
                if c.find(at).is_some() {
                    p.0 += 1;
                    p.1 += u64::from(graph);
                }
            }
        }
    }
    t.graph_calls = (0..rt.len())
        .filter(|&r| ix.call_kind(r) == ApiKind::GraphLaunch)
        .count() as u64;
    t
}

fn eager_list(ix: &TraceIndex<'_>, t: &Tally) -> Vec<EagerKernel> {
    t.eager_by_name
        .iter()
        .enumerate()
        .filter(|(_, e)| e.0 > 0)
        .map(|(id, &(count, ns))| {
            let id = id as u32;
            let category = ix.names.category(id);
            EagerKernel {
                name: match ix.trace.strings.get(id) {
                    "" => "(unnamed)".to_string(),
                    s => s.to_string(),
                },
                category,
                capturable: category.capturable(),
                count,
                total_us: us(ns),
            }
        })
        .collect()
}

/// Sums equal names across inputs; most time first, then by name; at most `top`.
fn merge_eager(mut all: Vec<EagerKernel>, top: usize) -> Vec<EagerKernel> {
    all.sort_by(|a, b| a.name.cmp(&b.name));
    let mut merged: Vec<EagerKernel> = Vec::new();
    for e in all {
        match merged.last_mut() {
            Some(m) if m.name == e.name => {
                m.count += e.count;
                m.total_us += e.total_us;
            }
            _ => merged.push(e),
        }
    }
    merged.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    merged.truncate(top);
    merged
}

fn capture_mode(inputs: &[TraceIndex<'_>]) -> String {
    let modes: Vec<String> = inputs
        .iter()
        .map(|ix| {
            ix.trace
                .meta
                .capture_option("CUDA_GRAPH_TRACE_OPTIONS:MODE")
                .map_or("unknown".to_string(), str::to_ascii_lowercase)
        })
        .collect();
    match modes.first() {
        Some(m) if modes.iter().all(|x| x == m) => m.clone(),
        Some(_) => "mixed".to_string(),
        None => "unknown".to_string(),
    }
}

fn advice(inputs: &[TraceIndex<'_>], mode: &str, t: &Tally) -> Option<String> {
    let graph_table = inputs.iter().any(|ix| {
        ix.trace
            .meta
            .tables
            .iter()
            .any(|name| name == GRAPH_TRACE_TABLE)
    });
    let graphs_used = t.graph_calls > 0 || graph_table;
    if !graphs_used || (mode == "node" && t.graph > 0) {
        return None;
    }
    let seen = if mode == "graph" {
        "the capture used graph-level tracing (CUDA_GRAPH_TRACE_OPTIONS:MODE = Graph): each replay was recorded as one graph event, without its kernels"
    } else {
        "no kernel of those replays was recorded"
    };
    Some(format!(
        "{} graph launch call(s), but {seen}; graph coverage counts only what was recorded. Re-capture with node-level graph tracing: nsys profile --cuda-graph-trace=node ...",
        t.graph_calls
    ))
}

fn phases(inputs: &[TraceIndex<'_>], t: &Tally) -> Vec<PhaseCoverage> {
    let steps = phase_steps(inputs);
    ["context", "generation"]
        .iter()
        .zip(t.phases)
        .zip(steps)
        .filter(|&(_, steps)| steps > 0)
        .map(|((name, (kernels, graph)), steps)| PhaseCoverage {
            phase: name.to_string(),
            steps,
            kernels,
            graph_kernels: graph,
            eager_kernels: kernels - graph,
            coverage: ratio(graph as f64, kernels as f64),
        })
        .collect()
}
