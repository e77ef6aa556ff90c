//! CUDA-graph coverage (reference §9.2, spec §4): which kernels ran inside graph replays and
//! which were launched eagerly, overall and per phase, and whether the capture could see graph
//! kernels at all.
//!
//! A kernel is graph-launched when its correlation id joins a `cudaGraphLaunch*`/`cuGraphLaunch*`
//! call of its own process, or when nsys recorded a `graphNodeId`/`graphId` for it. With
//! graph-level tracing (`--cuda-graph-trace=graph`, the default) nsys records a replay as one
//! graph event and no kernels, so coverage can only be measured from a node-level capture;
//! both modes give the share of compute time spent in graphs (`graph_share`), and a node-level
//! capture the distinct graphs (`graphId`) and kernel nodes (`graphNodeId`) and the launches
//! whose kernels ran. `CUDA_GRAPH_NODE_EVENTS` (the export's graph-node creation records, when
//! present) adds how many nodes were created and how many of them cloned
//! (`docs/gpu-work.md`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::drill::phase_steps;
use crate::index::Fold;
use crate::index::SpanCursor;
use crate::index::kernel_pass::kernel_pass;
use crate::index::rows::RowIndex;
use crate::index::units::{ratio, us};
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{NameId, Ns, ProcessIdx};
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
    /// Graph replays recorded whole (graph-level tracing): GPU busy time whose kernels are not
    /// itemized.
    pub replays: u64,
    pub replay_us: f64,
    /// Replay time / (replay + kernel time): the share of GPU compute time inside replays.
    pub replay_share: f64,
    /// (Replay + graph kernel time) / (replay + kernel time): the share of GPU compute time
    /// spent in graphs, at graph level (replays) or node level (kernels carrying a
    /// `graphNodeId`/`graphId`, or launched by a graph launch) alike, up to the gaps between
    /// nodes a replay covers.
    pub graph_share: f64,
    /// Graph executions seen: replays at graph level; at node level, the graph launches whose
    /// kernels ran (each launch's kernels share its correlation id).
    pub graph_executions: u64,
    /// Distinct graphs by `graphId` (replays, or node-level kernels in exports whose kernel
    /// table has the column); `None` when no row carries one.
    pub graphs: Option<u64>,
    /// Distinct `graphNodeId`s of node-level graph kernels: the graphs' kernel nodes.
    pub graph_nodes: u64,
    /// What the export's `CUDA_GRAPH_NODE_EVENTS` table says of graph nodes, when it has one.
    pub node_events: Option<crate::model::GraphNodeEvents>,
    pub graph_kernel_us: f64,
    pub eager_kernel_us: f64,
    /// Time of eager GEMM/norm/collective kernels.
    pub capturable_eager_us: f64,
    pub phases: Vec<PhaseCoverage>,
    /// Set when the capture cannot show graph kernels: what happened and how to re-capture.
    pub advice: Option<String>,
}

/// One input's (or every input's) graph and eager kernels.
#[derive(Default)]
pub(crate) struct Tally {
    graph: u64,
    eager: u64,
    graph_ns: Ns,
    eager_ns: Ns,
    capturable_eager_ns: Ns,
    graph_calls: u64,
    /// Graph replays recorded at graph level, and their time.
    replays: u64,
    replay_ns: Ns,
    /// Per name id: (eager count, eager ns).
    eager_by_name: BTreeMap<NameId, (u64, Ns)>,
    /// Per phase (context, generation): (kernels, graph kernels).
    phases: [(u64, u64); 2],
    /// Distinct graph ids and graph node ids met (bounded by the graphs' nodes).
    graph_ids: BTreeSet<u32>,
    node_ids: BTreeSet<u64>,
    /// Node level: per process, the highest correlation id of a graph kernel so far (a launch's
    /// kernels share its id, later launches have higher ones), and the launches counted.
    launch_marks: Vec<(ProcessIdx, u32)>,
    node_launches: u64,
}

impl Tally {
    /// A graph kernel recorded at node level: its ids, and its launch when first met.
    fn node_kernel(&mut self, k: &KernelRow) {
        if k.graph_id != 0 {
            self.graph_ids.insert(k.graph_id);
        }
        if k.graph_node != 0 {
            self.node_ids.insert(k.graph_node);
        }
        match self.launch_marks.iter_mut().find(|(p, _)| *p == k.process) {
            Some((_, last)) if k.correlation <= *last => {}
            Some((_, last)) => {
                *last = k.correlation;
                self.node_launches += 1;
            }
            None => {
                self.launch_marks.push((k.process, k.correlation));
                self.node_launches += 1;
            }
        }
    }
}

/// Graph coverage over every input; `top` limits the eager-kernel list.
pub fn graph_report(inputs: &[RowIndex<'_>], top: usize) -> GraphReport {
    let tallies: Vec<Tally> = inputs
        .iter()
        .map(|ix| {
            let mut fold = GraphFold::new(ix);
            kernel_pass(ix, &mut [&mut fold]);
            fold.finish()
        })
        .collect();
    report_of(inputs, &tallies, top)
}

/// The report from each input's tally (as `inputs`).
pub(crate) fn report_of(inputs: &[RowIndex<'_>], tallies: &[Tally], top: usize) -> GraphReport {
    let mut eager_names: Vec<EagerKernel> = Vec::new();
    let mut total = Tally::default();
    let (mut graphs, mut nodes) = (0u64, 0u64);
    for (ix, t) in inputs.iter().zip(tallies) {
        eager_names.extend(eager_list(ix, t));
        total.graph += t.graph;
        total.eager += t.eager;
        total.graph_ns = total.graph_ns.saturating_add(t.graph_ns);
        total.eager_ns = total.eager_ns.saturating_add(t.eager_ns);
        total.capturable_eager_ns = total
            .capturable_eager_ns
            .saturating_add(t.capturable_eager_ns);
        total.graph_calls += t.graph_calls;
        total.replays += t.replays;
        total.replay_ns = total.replay_ns.saturating_add(t.replay_ns);
        total.node_launches += t.node_launches;
        // Ids are per process: each input's distinct ones add up.
        graphs += t.graph_ids.len() as u64;
        nodes += t.node_ids.len() as u64;
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
        replays: total.replays,
        replay_us: us(total.replay_ns),
        replay_share: ratio(
            total.replay_ns as f64,
            (total.replay_ns + total.graph_ns + total.eager_ns) as f64,
        ),
        graph_share: ratio(
            (total.replay_ns + total.graph_ns) as f64,
            (total.replay_ns + total.graph_ns + total.eager_ns) as f64,
        ),
        graph_executions: total.replays + total.node_launches,
        graphs: (graphs > 0).then_some(graphs),
        graph_nodes: nodes,
        node_events: node_events(inputs),
        graph_kernel_us: us(total.graph_ns),
        eager_kernel_us: us(total.eager_ns),
        capturable_eager_us: us(total.capturable_eager_ns),
        phases: phases(inputs, &total),
        advice,
    }
}

/// Whether kernel `k`, launched by `call` (if joined), ran inside a graph replay.
pub fn is_graph_kernel(ix: &RowIndex<'_>, k: &KernelRow, call: Option<&CallRow>) -> bool {
    k.graph_node != 0
        || k.graph_id != 0
        || call.is_some_and(|c| ix.names.api(c.name) == ApiKind::GraphLaunch)
}

/// One input's tally as its kernels pass in start order, each with its launch call.
pub(crate) struct GraphFold<'a, 't> {
    ix: &'a RowIndex<'t>,
    tally: Tally,
    /// Launch times follow the kernel order closely: a cursor per phase.
    cursors: [SpanCursor<'a>; 2],
}

impl<'a, 't> GraphFold<'a, 't> {
    pub(crate) fn new(ix: &'a RowIndex<'t>) -> GraphFold<'a, 't> {
        GraphFold {
            ix,
            tally: Tally::default(),
            cursors: ix.phase_spans().map(SpanCursor::new),
        }
    }

    pub(crate) fn finish(self) -> Tally {
        Tally {
            graph_calls: self.ix.calls.graph_launches,
            ..self.tally
        }
    }
}

impl Fold for GraphFold<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        if !k.work.is_compute() {
            return;
        }
        if k.work == crate::model::Work::Replay {
            self.tally.replays += 1;
            self.tally.replay_ns = self
                .tally
                .replay_ns
                .saturating_add((k.end - k.start).max(0));
            if k.graph_id != 0 {
                self.tally.graph_ids.insert(k.graph_id);
            }
            return;
        }
        let (ix, t) = (self.ix, &mut self.tally);
        let graph = is_graph_kernel(ix, k, call);
        let dur = (k.end - k.start).max(0);
        if graph {
            t.graph += 1;
            t.graph_ns = t.graph_ns.saturating_add(dur);
            t.node_kernel(k);
        } else {
            t.eager += 1;
            t.eager_ns = t.eager_ns.saturating_add(dur);
            if ix.names.category(k.short_name).capturable() {
                t.capturable_eager_ns = t.capturable_eager_ns.saturating_add(dur);
            }
            if (k.short_name as usize) < ix.meta().strings.len() {
                let e = t.eager_by_name.entry(k.short_name).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(dur);
            }
        }
        let at = call.map_or(k.start, |c| c.start);
        for (c, p) in self.cursors.iter_mut().zip(t.phases.iter_mut()) {
            if c.find(at).is_some() {
                p.0 += 1;
                p.1 += u64::from(graph);
            }
        }
    }
}

fn eager_list(ix: &RowIndex<'_>, t: &Tally) -> Vec<EagerKernel> {
    t.eager_by_name
        .iter()
        .map(|(&id, &(count, ns))| {
            let category = ix.names.category(id);
            EagerKernel {
                name: match ix.string(id) {
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

/// Every input's `CUDA_GRAPH_NODE_EVENTS` counts added up; `None` when no input has the table.
fn node_events(inputs: &[RowIndex<'_>]) -> Option<crate::model::GraphNodeEvents> {
    inputs
        .iter()
        .filter_map(|ix| ix.meta().meta.graph_node_events)
        .reduce(|a, b| crate::model::GraphNodeEvents {
            rows: a.rows + b.rows,
            cloned: a.cloned + b.cloned,
        })
}

fn capture_mode(inputs: &[RowIndex<'_>]) -> String {
    let modes: Vec<String> = inputs
        .iter()
        .map(|ix| {
            ix.meta()
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

fn advice(inputs: &[RowIndex<'_>], mode: &str, t: &Tally) -> Option<String> {
    let graph_table = inputs.iter().any(|ix| {
        ix.meta()
            .meta
            .tables
            .iter()
            .any(|name| name == GRAPH_TRACE_TABLE)
    });
    let graphs_used = t.graph_calls > 0 || graph_table;
    if !graphs_used || (mode == "node" && t.graph > 0) {
        return None;
    }
    if t.replays > 0 {
        let share = ratio(
            t.replay_ns as f64,
            (t.replay_ns + t.graph_ns + t.eager_ns) as f64,
        );
        return Some(format!(
            "{} graph replays recorded whole (graph-level tracing) hold {:.1}% of the kernel and replay time ({}): that time is measured as GPU busy time; only the kernels inside the replays are not itemized (their names, classes and the per-layer pattern inside graphs). When those matter, re-capture with node-level graph tracing: nsys profile --cuda-graph-trace=node ...",
            t.replays,
            share * 100.0,
            crate::format::duration_ns(t.replay_ns)
        ));
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

fn phases(inputs: &[RowIndex<'_>], t: &Tally) -> Vec<PhaseCoverage> {
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
