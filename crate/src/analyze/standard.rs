//! The `standard` profile: the reference's quantities with its defects fixed (reference §4).
//!
//! - Steps come from the benchmark window only (row 13), and with the allreduce method their
//!   count is cross-checked against the allreduce iterations.
//! - Per-step figures divide by complete step *cycles* (a steady step's start to the next
//!   step's start), so every cycle holds one of each inter-step op: `_fetch_new_requests` at 36
//!   µs per call reads 36 µs per step, not 36·(n−1)/n.
//! - TP ranks' copies of an NVTX op (same name, other process, starting within 100 µs) count
//!   once, at the longest copy, instead of dividing by `--tp-size` (row 14).
//! - Kernels count by when they were *launched* (their runtime call, joined on correlation id
//!   and process), all names, all devices (row 15); every CUDA API name is listed.
//! - GPU busy per step is what the GPU did inside the steady cycles: per device the union of
//!   every GPU operation (kernels, graph replays, copies, memsets) clipped to the cycles, summed
//!   over devices (`docs/gpu-work.md`); the reference sums its top kernels' durations.
//! - NVTX names include inline `text`; only push/pop and start/end ranges count.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::breakdown::StepsFound;
use super::breakdown::{
    CycleBounds, OpRow, SLOWEST_STEPS, SteadyInfo, StepCycle, TraceBreakdown, WindowNs,
};
use super::classes::{self, ClassFold, StepSpans};
use super::nesting::{self, Nesting};
use super::ops::{Tallies, contains, overlap};
use super::stats::Stats;
use super::window::{DrillRead, WindowPass};
use super::workload::Workload;
use super::{AnalyzeConfig, FoldPeaks, KernelFacts, finish, isolation_info};
use crate::error::Result;
use crate::index::Fold;
use crate::iterations::forward_steps::{iteration, longest_ranks};
use crate::iterations::inferred::{self, Inference};
use crate::iterations::{Isolation, Iteration, Method, from_inference, isolate};
use crate::model::intervals::IntervalSet;
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{NO_NAME, NameId, Ns, ProcessIdx, Strings, ThreadIdx, Trace};
use crate::names::ranges::emit_nvtx_op;
use crate::names::shape::SHAPE_RULE;
use crate::names::steps::StepName;
use crate::profile::Profile;
use crate::steps::spans::overlap_at;
use crate::steps::{Step, TP_DEDUP_NS, visible_row_name};

/// Per-step figures need at least this many steady steps (as the reference).
const MIN_STEADY: usize = 5;

/// The standard breakdown of `rows`; what a drill-down would read of them again is left in
/// `kept`.
pub fn breakdown(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    peaks: &mut FoldPeaks,
    kept: &mut Option<DrillRead>,
) -> Result<TraceBreakdown> {
    let t0 = rows.kernels().next().map_or(0, |k| k.start);
    // The allreduce iterations and the kernels' spread fold over the window's first passes,
    // the forward steps are its index's (with what the index does not keep of them); its idle
    // attribution, the steady kernels and calls over its last.
    let mut first = FirstPasses {
        facts: KernelFacts::new(rows.meta()),
        steps: RawStepFacts::default(),
    };
    let pass = WindowPass::read(rows, cfg.step_marker.as_ref(), &mut first)?;
    let (allreduce, spread) = first.facts.finish();
    let RawStepFacts {
        count: raw_count,
        names: step_names,
        longest,
    } = first.steps;
    let read = pass.steps();
    let (steps, marker) = (&read.steps[..], read.marker.clone());
    let mut iso = isolate(
        allreduce,
        steps.iter().zip(&longest).map(|(s, &l)| iteration(s, l)),
        raw_count,
        marker.as_ref().map(|m| m.pattern.as_str()),
    );
    drop(longest);
    let inference = (iso.method == Method::None)
        .then(|| inferred::infer(rows))
        .flatten();
    match &inference {
        Some(inf) => iso = from_inference(inf),
        None if iso.method == Method::None => {
            iso.reason = format!(
                "{}; nor does the kernel stream repeat at step scale (a sequence of at least {} kernels repeating {} times); the whole kernel window is reported instead",
                iso.reason,
                inferred::MIN_STEP_KERNELS,
                inferred::MIN_REPEATS
            )
        }
        None => {}
    }
    let mut warnings = Vec::new();
    let window = iso.benchmark_window();
    let mut in_window = window.map_or(Cow::Borrowed(&[][..]), |w| steps_in(steps, w));
    let cross_check = (iso.method == Method::Allreduce).then_some(in_window.len());
    if let Some(w) = check_agreement(&iso, &in_window, window.is_some()) {
        warnings.push(w);
    }
    if window.is_some() && in_window.is_empty() {
        in_window = Cow::Owned(iteration_steps(iso.benchmark_iterations()));
    }
    let max_gen = in_window.iter().map(|s| s.name.gen_reqs).max();
    let context = in_window.iter().filter(|s| s.name.ctx > 0).count();
    let generation = in_window.len() - context;
    let batch = max_gen.filter(|&g| g > 0);
    let mut b = TraceBreakdown::new(
        &cfg.label,
        Profile::Standard,
        1,
        iso.method,
        isolation_info(&iso, t0, cross_check),
        Workload::from_spread(rows.meta(), spread, batch, context, generation),
    );
    b.warnings = warnings;
    b.steps = steps_found(&iso, inference.as_ref());
    b.step_marker = marker;
    b.iterations = window.map(|_| iso.benchmark_iterations().len());
    b.benchmark_window = window.map(|(start_ns, end_ns)| WindowNs { start_ns, end_ns });
    let spans = match window {
        None => {
            b.warnings.push(no_benchmark(&iso));
            None
        }
        Some(_) => {
            let steady = Steady {
                steps: &in_window,
                max_gen: max_gen.unwrap_or(0),
            };
            steady_state(&mut b, &steady)
        }
    };
    let phases = classes::phase_spans(in_window.iter().map(|s| (s.start, s.name.ctx > 0)));
    // Not held through the passes below: a long trace has a step and an iteration per range.
    drop(in_window);
    drop((iso, inference));
    match spans {
        None => {
            let mut by_class = ClassFold::new(&rows.meta().strings, None, phases);
            let read = pass.figures(&mut [&mut by_class], None)?;
            b.window = read.figures;
            b.kernel_classes = Some(by_class.finish());
            *kept = Some(read.drill);
        }
        Some(spans) => {
            b.nvtx_ops = nvtx_rows(rows, spans.spans(), &step_names, spans.n(), peaks);
            b.nvtx_note = Some(nvtx_note());
            let steady = StepSpans {
                scope: "steady steps",
                spans: spans.spans().to_vec(),
                cycles: spans.cycles,
            };
            let by_class = ClassFold::new(&rows.meta().strings, Some(steady), phases);
            steady_ops(rows, &mut b, pass, &spans, by_class, (peaks, kept))?;
        }
    }
    Ok(finish(b))
}

/// What the standard profile folds over the window's first passes.
struct FirstPasses {
    facts: KernelFacts,
    steps: RawStepFacts,
}

/// What Root cause reads of the forward steps before the index merges their TP ranks (the
/// index keeps the merged steps only).
#[derive(Default)]
struct RawStepFacts {
    /// How many ranges the steps were read from.
    count: usize,
    /// Their ranges' NVTX names, sorted, each once.
    names: Vec<NameId>,
    /// Per merged step, its longest rank's duration.
    longest: Vec<Ns>,
}

impl Fold for FirstPasses {
    fn kernel(&mut self, k: &KernelRow, _launch: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            return;
        }
        self.facts.kernel(k, None);
    }

    fn raw_steps(&mut self, raw: &[Step]) {
        let mut names: Vec<NameId> = raw.iter().map(|s| s.name_id).collect();
        names.sort_unstable();
        names.dedup();
        names.shrink_to_fit();
        self.steps = RawStepFacts {
            count: raw.len(),
            names,
            longest: longest_ranks(raw),
        };
    }
}

/// The benchmark window's steps and what picks the steady ones among them.
struct Steady<'a> {
    steps: &'a [Step],
    max_gen: u64,
}

/// The steps overlapping `[ws, we)`: a slice of `steps` when they are contiguous there (steps
/// are in start order, so they nearly always are), else a copy of those that overlap.
fn steps_in(steps: &[Step], (ws, we): (Ns, Ns)) -> Cow<'_, [Step]> {
    let overlaps = |s: &Step| s.end > ws && s.start < we;
    let Some(first) = steps.iter().position(overlaps) else {
        return Cow::Borrowed(&[]);
    };
    let last = steps.iter().rposition(overlaps).unwrap_or(first);
    let run = &steps[first..=last];
    if run.iter().all(overlaps) {
        Cow::Borrowed(run)
    } else {
        Cow::Owned(run.iter().copied().filter(overlaps).collect())
    }
}

/// Where the steps came from, for the report.
fn steps_found(iso: &Isolation, inference: Option<&Inference>) -> Option<StepsFound> {
    let found = inference.map(|i| &i.found);
    let (source, method) = match iso.method {
        Method::Allreduce => ("allreduce", "allreduce-groups"),
        Method::Nvtx => ("marker", "nvtx-ranges"),
        Method::Inferred => ("inferred", found.map_or("", |f| f.method.name())),
        Method::None => return None,
    };
    Some(StepsFound {
        source,
        method,
        confidence: found.map_or(1.0, |f| f.confidence),
        count: iso.iterations.len(),
        period_kernels: found.and_then(|f| f.period_kernels),
        device: found.and_then(|f| f.device),
        first_kernel: inference.map(|i| i.first_kernel.clone()),
        collectives_per_step: inference.map_or_else(Vec::new, |i| i.collectives.clone()),
        unit: found.map(|f| f.unit),
        block_kernels: found.and_then(|f| f.block_kernels),
        pause_ratio: found.and_then(|f| f.pause_ratio),
        interval_ns: found.and_then(|f| f.interval_ns),
        note: inference.map(Inference::summary),
    })
}

fn no_benchmark(iso: &Isolation) -> String {
    if iso.method == Method::None {
        return format!("{}; per-step figures not computed", iso.reason);
    }
    format!(
        "no benchmark phase: no phase of at least 5 iterations with at least half at the most common size ({} iterations in {} phases); per-step figures not computed",
        iso.iterations.len(),
        iso.phases.len()
    )
}

/// The documented cross-check (reference §7.4): allreduce iterations in the benchmark window
/// against the forward steps there.
fn check_agreement(iso: &Isolation, in_window: &[Step], has_window: bool) -> Option<String> {
    if iso.method != Method::Allreduce || !has_window {
        return None;
    }
    let iterations = iso.benchmark_iterations().len();
    if in_window.is_empty() {
        return Some(format!(
            "no forward-step NVTX ranges in the benchmark window: its {iterations} allreduce iterations are used as the steps (no steady-state filter by batch)"
        ));
    }
    (in_window.len() != iterations).then(|| {
        format!(
            "the benchmark window holds {iterations} allreduce iterations but {} forward steps (TP ranks merged): the iteration grouping or the NVTX steps are off (a step with no allreduce, or a gap > 1 ms inside a step)",
            in_window.len()
        )
    })
}

/// Allreduce iterations standing in for forward steps (no counts: all steady).
fn iteration_steps(its: &[Iteration]) -> Vec<Step> {
    its.iter()
        .enumerate()
        .map(|(i, it)| Step {
            row: i as i64,
            start: it.start,
            end: it.end,
            name: StepName {
                step: i as u64,
                ctx: 0,
                gen_reqs: 0,
            },
            ranks: 1,
            name_id: NO_NAME,
        })
        .collect()
}

/// Steady steps (ctx 0, gen = the window's max) and their cycles, whose spans the per-step
/// breakdowns are read in (`None`: too few steady steps for them).
fn steady_state(b: &mut TraceBreakdown, window: &Steady<'_>) -> Option<CycleSet> {
    let (steps, max_gen) = (window.steps, window.max_gen);
    let is_steady = |s: &Step| s.name.ctx == 0 && s.name.gen_reqs == max_gen;
    let steady = || steps.iter().filter(|m| is_steady(m));
    // A cycle: a steady step's start to the next step's start (the next step in the window).
    let cycles = || {
        steps
            .windows(2)
            .filter(|w| is_steady(&w[0]))
            .map(|w| (w[0].start, w[1].start, w[0].end))
    };
    // Each per-cycle list is sized exactly and made when used: a long trace has a cycle per
    // step, and the page's wasm memory keeps its high-water mark.
    let (n_steady, n_cycles) = (steady().count(), cycles().count());
    b.steady_steps = Some(n_steady);
    if n_steady < MIN_STEADY || n_cycles == 0 {
        b.warnings.push(format!(
            "only {n_steady} steady-state steps (0 ctx, {max_gen} gen) with {n_cycles} complete cycles in the benchmark window: at least {MIN_STEADY} steps are needed for per-step figures"
        ));
        return None;
    }
    let n = n_cycles as f64;
    let us = |ns: Ns| ns as f64 / 1000.0;
    let set = IntervalSet::from_unsorted(exactly(n_cycles, cycles().map(|(s, e, _)| (s, e))));
    let (start_ns, end_ns) = set.hull().unwrap_or((0, 0));
    let gap_stats = Stats::of_owned(exactly(
        n_cycles,
        cycles().map(|(_, next, end)| us(next - end)),
    ));
    let durations = exactly(n_steady, steady().map(|s| us(s.end - s.start)));
    b.steady = Some(SteadyInfo {
        max_gen,
        ranges: steady().map(|s| s.ranks as usize).sum(),
        per_step_divisor: n_cycles,
        step_duration_us: Stats::of_owned(durations),
        inter_step_gap_us: gap_stats,
        window: WindowNs { start_ns, end_ns },
        window_us: us(set.measure()),
    });
    b.wall_time_per_step_us = Some(us(set.measure()) / n);
    b.inter_step_gap_us = Some(gap_stats.percentiles());
    b.step_wall_times_us = exactly(n_cycles, cycles().map(|(s, e, _)| us(e - s))).into();
    b.slowest_steps = slowest(cycles());
    let row = |s: &Step| (s.name_id != NO_NAME).then_some(s.row);
    b.steady_cycles = exactly(
        n_cycles,
        steps
            .windows(2)
            .filter(|w| is_steady(&w[0]))
            .map(|w| CycleBounds {
                start: w[0].start,
                start_row: row(&w[0]),
                next: w[1].start,
                next_row: row(&w[1]),
            }),
    )
    .into();
    Some(CycleSet {
        set,
        cycles: n_cycles,
    })
}

/// The `n` items of `items` in a list of exactly their size (a filter's collect grows by
/// doubling).
fn exactly<T>(n: usize, items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.extend(items);
    v
}

/// The steady cycles: their union, and how many (the per-step divisor).
struct CycleSet {
    set: IntervalSet,
    cycles: usize,
}

impl CycleSet {
    fn spans(&self) -> &[(Ns, Ns)] {
        self.set.spans()
    }

    fn n(&self) -> f64 {
        self.cycles as f64
    }
}

/// The kernels launched and the CUDA API calls made inside the steady cycles, by name, and the
/// GPU time per kernel class (`by_class`), folded over the window's last passes (kernels joined
/// to their launch calls, every call), which give the window's figures too.
fn steady_ops(
    rows: &dyn EventRows,
    b: &mut TraceBreakdown,
    pass: WindowPass<'_>,
    cycles: &CycleSet,
    mut by_class: ClassFold<'_>,
    (peaks, kept): (&mut FoldPeaks, &mut Option<DrillRead>),
) -> Result<()> {
    let strings = &rows.meta().strings;
    let (spans, n) = (cycles.spans(), cycles.n());
    let mut kernels = SteadyKernels {
        spans,
        strings,
        tally: Tallies::default(),
    };
    let mut api = Tallies::default();
    let mut call = |c: &CallRow| {
        if contains(spans, c.start) {
            api.add(strings.get(c.name), c.end - c.start);
        }
    };
    let mut busy = SteadyBusy::new(spans);
    let read = pass.figures(
        &mut [&mut kernels, &mut busy, &mut by_class],
        Some(&mut call),
    )?;
    b.window = read.figures;
    b.kernel_classes = Some(by_class.finish());
    peaks.pending_launches = peaks.pending_launches.max(read.pending_launches);
    *kept = Some(read.drill);
    b.kernel_ops = kernels.tally.rows(None, |v| v / n);
    b.api_ops = api.rows(None, |v| v / n);
    b.gpu_time_per_step_us = Some(busy.total() as f64 / 1000.0 / n);
    b.kernels_per_step = Some(b.kernel_ops.iter().map(|r| r.calls).sum::<u64>() as f64 / n);
    Ok(())
}

/// Kernels launched inside the cycles (by their launch call's start; the kernel's own start
/// when no call joins it), every name, all devices: kernel rows only (the steady kernel
/// table is about kernels; the busy time per step, [`SteadyBusy`], counts every GPU operation).
struct SteadyKernels<'a> {
    spans: &'a [(Ns, Ns)],
    strings: &'a Strings,
    tally: Tallies<'a>,
}

impl Fold for SteadyKernels<'_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            return;
        }
        let launched = call.map_or(k.start, |c| c.start);
        if contains(self.spans, launched) {
            self.tally
                .add(self.strings.get(k.short_name), k.end - k.start);
        }
    }
}

/// The GPU's busy time inside the cycles: per device, the union of every GPU operation
/// (kernels, graph replays, copies, memsets: `EventRows::gpu_work`) clipped to the cycles,
/// summed over devices. The rows come in start order, so each device holds its open merged
/// interval and a cursor into the cycles.
struct SteadyBusy<'a> {
    spans: &'a [(Ns, Ns)],
    devices: Vec<(u32, DeviceBusy)>,
}

#[derive(Default)]
struct DeviceBusy {
    open: Option<(Ns, Ns)>,
    cursor: usize,
    ns: Ns,
}

impl DeviceBusy {
    fn push(&mut self, spans: &[(Ns, Ns)], (s, e): (Ns, Ns)) {
        match &mut self.open {
            Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
            open => {
                if let Some((a, b)) = open.replace((s, e)) {
                    self.ns = self
                        .ns
                        .saturating_add(overlap_at(spans, &mut self.cursor, a, b));
                }
            }
        }
    }

    fn close(&mut self, spans: &[(Ns, Ns)]) -> Ns {
        if let Some((a, b)) = self.open.take() {
            self.ns = self
                .ns
                .saturating_add(overlap_at(spans, &mut self.cursor, a, b));
        }
        self.ns
    }
}

impl<'a> SteadyBusy<'a> {
    fn new(spans: &'a [(Ns, Ns)]) -> SteadyBusy<'a> {
        SteadyBusy {
            spans,
            devices: Vec::new(),
        }
    }

    /// Busy ns inside the cycles, summed over devices.
    fn total(&mut self) -> Ns {
        let spans = self.spans;
        self.devices.iter_mut().map(|(_, d)| d.close(spans)).sum()
    }
}

impl Fold for SteadyBusy<'_> {
    fn kernel(&mut self, k: &KernelRow, _call: Option<&CallRow>) {
        if k.end <= k.start {
            return;
        }
        let i = match self.devices.iter().position(|(d, _)| *d == k.device) {
            Some(i) => i,
            None => {
                self.devices.push((k.device, DeviceBusy::default()));
                self.devices.len() - 1
            }
        };
        if let Some((_, d)) = self.devices.get_mut(i) {
            d.push(self.spans, (k.start, k.end));
        }
    }
}

/// The [`SLOWEST_STEPS`] longest cycles `(start, next start, end)`, slowest first (the earlier
/// of a tie first), kept as they come: no list of every cycle.
fn slowest(cycles: impl Iterator<Item = (Ns, Ns, Ns)>) -> Vec<StepCycle> {
    // Ordered so that the greatest is the one to drop: the shortest, then the later.
    let mut kept: BinaryHeap<(Reverse<Ns>, usize, Ns, Ns)> = BinaryHeap::new();
    for (i, (s, next, _)) in cycles.enumerate() {
        kept.push((Reverse(next - s), i, s, next));
        if kept.len() > SLOWEST_STEPS {
            kept.pop();
        }
    }
    kept.into_sorted_vec()
        .into_iter()
        .map(|(_, index, start_ns, end_ns)| StepCycle {
            index,
            start_ns,
            end_ns,
            wall_us: (end_ns - start_ns) as f64 / 1000.0,
        })
        .collect()
}

/// NVTX time per op inside the cycles (clipped), TP ranks' copies merged. A PyTorch
/// `emit_nvtx` range counts under its op (`aten::mm, seq = 12, op_id = 3, sizes = […]` is one
/// call of `aten::mm`: `names::ranges::emit_nvtx_op`, as the explainer groups them).
///
/// The ranges come in start order: each op's copies merge as they come, one open group per op
/// (what `peaks.open_op_groups` counts).
fn nvtx_rows(
    rows: &dyn EventRows,
    spans: &[(Ns, Ns)],
    step_names: &[NameId],
    n: f64,
    peaks: &mut FoldPeaks,
) -> Vec<OpRow> {
    let sw = Profile::Standard.switches();
    let meta = rows.meta();
    let mut open: HashMap<&str, RankGroup> = HashMap::new();
    let mut t = Tallies::default();
    // Each name's op (`emit_nvtx_op`) numbered once, for the nesting fold.
    let mut op_of: HashMap<NameId, u32> = HashMap::new();
    let mut index: hashbrown::HashMap<&str, u32> = hashbrown::HashMap::new();
    let mut nest = Nesting::default();
    for r in rows.ranges() {
        let Some(name) = visible_row_name(&r, &sw) else {
            continue;
        };
        let (s, e) = (r.start, r.end);
        let inside = overlap(spans, s, e);
        if (inside > 0 || contains(spans, s)) && step_names.binary_search(&name).is_err() {
            let copy = (s, inside, process_of(meta, r.thread));
            let op = emit_nvtx_op(meta.strings.get(name));
            if let Some(closed) = open.entry(op).or_default().push(copy) {
                t.add(op, closed);
            }
            peaks.open_op_groups = peaks.open_op_groups.max(open.len());
            t.instance(op, (s, e));
            let next = index.len() as u32;
            let member = *op_of
                .entry(name)
                .or_insert_with(|| *index.entry(op).or_insert(next));
            nest.push(r.thread, (s, e), (op, member), inside);
        }
    }
    for (op, group) in open {
        t.add(op, group.longest);
    }
    nest.finish();
    peaks.nvtx_stack_depth = peaks.nvtx_stack_depth.max(nest.peak_depth);
    nesting::group(t.rows(None, |v| v / n), &index, &nest, |v| v / n)
}

/// What the standard NVTX table's note says of how it is built (shown with the table).
pub fn nvtx_note() -> String {
    format!(
        "{SHAPE_RULE}; an op's members are the names it groups. Self time is an op's time minus that of the ranges nested directly inside it on the same thread (NVTX push/pop ranges nest per thread; Nsight Systems' nvtx_pushpop_sum calls the two DurNonChild and DurChild); the parent is the op most of its time runs directly inside. TP ranks' copies of a range count once, at the longest, and keep the self share measured over all copies. Sorted by the change in self time, so a parent does not move because its child did. The trtllm-skill profile lists the reference scripts' names as they are (no grouping, no self time)."
    )
}

/// The open group of one op's copies, met in start order: copies from different processes
/// starting within 100 µs of the group's first; the instance lasts as long as its longest copy.
#[derive(Debug, Default)]
struct RankGroup {
    first: Ns,
    longest: Ns,
    processes: Vec<ProcessIdx>,
}

impl RankGroup {
    /// Adds the copy `(start, duration, process)`; when it starts a new group, returns the
    /// closed group's duration.
    fn push(&mut self, (start, dur, process): (Ns, Ns, ProcessIdx)) -> Option<Ns> {
        if !self.processes.is_empty()
            && start - self.first < TP_DEDUP_NS
            && !self.processes.contains(&process)
        {
            self.longest = self.longest.max(dur);
            self.processes.push(process);
            return None;
        }
        let closed = (!self.processes.is_empty()).then_some(self.longest);
        (self.first, self.longest) = (start, dur);
        self.processes.clear();
        self.processes.push(process);
        closed
    }
}

/// The process of a runtime or NVTX thread.
fn process_of(trace: &Trace, thread: ThreadIdx) -> ProcessIdx {
    trace
        .threads
        .process
        .get(thread as usize)
        .copied()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iteration(start: Ns) -> Iteration {
        Iteration {
            start,
            end: start + 500,
            kernel_count: 8,
            wall_ns: 500,
        }
    }

    #[test]
    fn the_slowest_cycles_are_the_longest_first_the_earlier_of_a_tie_first() {
        // Walls (next start − start): 10, 30, 20, 30, 5, 40, 30 ns.
        let walls: [Ns; 7] = [10, 30, 20, 30, 5, 40, 30];
        let mut start = 0;
        let cycles: Vec<(Ns, Ns, Ns)> = walls
            .iter()
            .map(|&w| {
                start += 100;
                (start, start + w, start + 1)
            })
            .collect();
        let slowest: Vec<(usize, f64)> = slowest(cycles.into_iter())
            .iter()
            .map(|c| (c.index, c.wall_us * 1000.0))
            .collect();
        assert_eq!(
            slowest,
            [(5, 40.0), (1, 30.0), (3, 30.0), (6, 30.0), (2, 20.0)]
        );
    }

    #[test]
    fn the_cross_check_warns_when_counts_differ_or_steps_are_missing() {
        let its: Vec<Iteration> = (0..6).map(|i| iteration(i * 2_000_000)).collect();
        let iso = Isolation::new(Method::Allreduce, String::new(), its.clone());
        let steps = iteration_steps(&its);
        assert_eq!(check_agreement(&iso, &steps, true), None);
        let w = check_agreement(&iso, &steps[..5], true).unwrap_or_default();
        assert!(
            w.contains("6 allreduce iterations but 5 forward steps"),
            "{w}"
        );
        let w = check_agreement(&iso, &[], true).unwrap_or_default();
        assert!(w.contains("used as the steps"), "{w}");
        let nvtx = Isolation::new(Method::Nvtx, String::new(), its);
        assert_eq!(
            check_agreement(&nvtx, &steps[..5], true),
            None,
            "NVTX method: nothing to check"
        );
    }

    /// `op` on two processes: rank 0 at 0 (30 ns), rank 1 20 µs later (50 ns), rank 0 again
    /// at 50 µs (10 ns), rank 1 at 500 µs (40 ns): three instances of 50, 10 and 40 ns.
    fn rank_copies(order: &[usize]) -> crate::index::testing::TraceBuilder {
        let copies = [
            (1, 0, 30),
            (2, 20_000, 50),
            (1, 50_000, 10),
            (2, 500_000, 40),
        ];
        let mut b = crate::index::testing::TraceBuilder::new();
        for &i in order {
            let (pid, start, dur) = copies[i];
            b.thread(pid, pid);
            b.range("op", start, start + dur);
        }
        b
    }

    #[test]
    fn nvtx_rank_copies_merge_alike_in_start_order_or_not() {
        for order in [[0, 1, 2, 3], [3, 1, 0, 2]] {
            let b = rank_copies(&order);
            let mut peaks = FoldPeaks::default();
            let rows = nvtx_rows(&b.trace, &[(0, 1_000_000)], &[], 2.0, &mut peaks);
            assert_eq!(peaks.open_op_groups, 1, "one op: one open group");
            assert_eq!(rows.len(), 1, "{order:?}");
            let op = &rows[0];
            assert_eq!((op.name.as_str(), op.calls), ("op", 3), "{order:?}");
            assert_eq!((op.total_us, op.us_per_step), (0.1, 0.05), "{order:?}");
        }
    }

    /// One instance per [`RankGroup`] of the copies, taken in start order.
    fn merge_rank_copies(copies: Vec<(Ns, Ns, ProcessIdx)>) -> Vec<Ns> {
        let mut group = RankGroup::default();
        let mut out: Vec<Ns> = copies.into_iter().filter_map(|c| group.push(c)).collect();
        if !group.processes.is_empty() {
            out.push(group.longest);
        }
        out
    }

    #[test]
    fn rank_copies_merge_at_the_longest_but_one_process_never_merges_with_itself() {
        let copies = vec![
            (0, 30, 0),
            (20_000, 50, 1), // rank 1's copy, 20 µs later: merged, longest 50
            (50_000, 10, 0), // rank 0 again within 100 µs: a new instance
            (500_000, 40, 1),
        ];
        assert_eq!(merge_rank_copies(copies), vec![50, 10, 40]);
        // 100 µs apart: two instances.
        assert_eq!(
            merge_rank_copies(vec![(0, 5, 0), (100_000, 7, 1)]),
            vec![5, 7]
        );
        assert!(merge_rank_copies(Vec::new()).is_empty());
    }
}
