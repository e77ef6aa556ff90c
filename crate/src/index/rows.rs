//! What the drill-down looks up repeatedly, read from a trace's rows ([`EventRows`]) without
//! holding any of them: the devices and what ran on each, the kernel extent, the classes of the
//! names kernels and calls use, facts about the runtime calls, and the forward steps.
//!
//! Built in one pass over kernels, one over calls and one over NVTX ranges. Its state is per
//! device, per device × process, per distinct name and per step, never per kernel, call or
//! range, so it is the same over the loaded columns and over the file.

use std::cell::Cell;

use hashbrown::HashMap;

use super::call_facts::CallFacts;
use super::call_join::{CallJoin, Hold, launch_hold};
use super::{Fold, StepInfo};
use crate::model::intervals::push_gently;
use crate::model::rows::{CallRow, EventRows};
use crate::model::{KernelAbsence, NO_NAME, NameId, Ns, NvtxRow, Trace};
use crate::names::api::{ApiKind, api_kind};
use crate::names::kernels::{KernelCategory, is_collective, kernel_category};
use crate::names::steps::{StepSource, StepStyle};
use crate::profile::{Profile, Switches};
use crate::steps;
use crate::steps::Step;
use crate::steps::names::{AnyBuiltin, ParserOn, StepParser};

/// One device: how many kernels ran on it, which processes launched them, and whether they
/// all ran on one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    pub device: u32,
    pub kernels: u64,
    /// Per process index (as `Trace::processes`): whether it ran GPU work on the device.
    pub processes: Vec<bool>,
    /// Per process index: whether it ran a kernel on the device.
    pub kernel_processes: Vec<bool>,
    /// Every kernel of the device ran on the same stream.
    pub one_stream: bool,
    first_stream: Option<u32>,
}

/// How many runtime calls launch kernels, counted in one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    pub calls: u64,
    /// Kernel and graph launch calls.
    pub launches: u64,
    /// `cudaGraphLaunch*` / `cuGraphLaunch*` calls.
    pub graph_launches: u64,
    /// What the calls can show (joined to their work, other calls than launches).
    pub facts: CallFacts,
}

/// The catalogue's classes of the names kernels and calls use, each name classified once.
#[derive(Debug, Default)]
pub struct RowNames {
    api: HashMap<NameId, ApiKind>,
    kernels: HashMap<NameId, KernelName>,
}

/// A kernel short name's class, and the kernels of that name: what the explainer ranks its
/// names by before it reads a kernel ([`RowNames::kernel_time`]).
#[derive(Debug, Clone, Copy)]
struct KernelName {
    category: KernelCategory,
    collective: bool,
    count: u64,
    /// Summed `end − start` (negative durations as 0).
    total: Ns,
}

impl RowNames {
    /// The API kind of a call's name (`Other` for a name no call uses).
    pub fn api(&self, id: NameId) -> ApiKind {
        self.api.get(&id).copied().unwrap_or(ApiKind::Other)
    }

    /// Every call name's API kind (for a join's hold rule, which outlives a borrow).
    pub fn api_kinds(&self) -> HashMap<NameId, ApiKind> {
        self.api.clone()
    }

    /// The category of a kernel's short name (`Other` for a name no kernel uses).
    pub fn category(&self, id: NameId) -> KernelCategory {
        self.kernels
            .get(&id)
            .map_or(KernelCategory::Other, |k| k.category)
    }

    pub fn is_collective(&self, id: NameId) -> bool {
        self.kernels.get(&id).is_some_and(|k| k.collective)
    }

    /// Per kernel short name: the kernels of that name and their summed duration (ns).
    pub fn kernel_time(&self) -> impl Iterator<Item = (NameId, u64, Ns)> + '_ {
        self.kernels.iter().map(|(&id, k)| (id, k.count, k.total))
    }
}

/// The most state the drill-down's folds held at once over one trace (the boundedness tests
/// read it): open host intervals of one device's idle sweep, calls held by a launch join,
/// pageable copies read ahead of their calls, and kernels held for the layer search.
#[derive(Debug, Default)]
pub struct HeldPeak {
    pub open_intervals: Cell<usize>,
    pub pending_calls: Cell<usize>,
    pub pending_copies: Cell<usize>,
    pub sequence_kernels: Cell<usize>,
}

impl HeldPeak {
    fn raise(cell: &Cell<usize>, n: usize) {
        cell.set(cell.get().max(n));
    }

    pub fn intervals(&self, n: usize) {
        HeldPeak::raise(&self.open_intervals, n);
    }

    pub fn calls(&self, n: usize) {
        HeldPeak::raise(&self.pending_calls, n);
    }

    pub fn copies(&self, n: usize) {
        HeldPeak::raise(&self.pending_copies, n);
    }

    pub fn sequence(&self, n: usize) {
        HeldPeak::raise(&self.sequence_kernels, n);
    }
}

/// A trace's rows with what the drill-down reads of them more than once.
pub struct RowIndex<'r> {
    pub rows: &'r dyn EventRows,
    /// The file name shown in results.
    pub label: String,
    /// Ascending by device.
    pub devices: Vec<DeviceFacts>,
    pub kernels: u64,
    /// `[first kernel start, last kernel end]` (`(0, 0)` without kernels).
    pub extent: (Ns, Ns),
    pub calls: CallCounts,
    /// Per thread index: whether it made a kernel or graph launch call (the threads whose
    /// scheduling and samples explain a device's idle time).
    pub launch_threads: Vec<bool>,
    pub names: RowNames,
    pub steps: StepInfo,
    /// The user's step marker the steps were read under (`None`: the first built-in one met).
    pub step_marker: Option<StepSource>,
    pub peak: HeldPeak,
}

impl<'r> RowIndex<'r> {
    /// Reads `rows` (steps under `marker`, else the first built-in marker met); fails when a
    /// read failed.
    pub fn new(
        rows: &'r dyn EventRows,
        label: &str,
        marker: Option<&StepSource>,
    ) -> crate::error::Result<RowIndex<'r>> {
        let ix = RowIndex::read(rows, label, marker);
        rows.check()?;
        Ok(ix)
    }

    /// [`RowIndex::new`] over a loaded trace, whose reads cannot fail.
    pub fn loaded(trace: &'r Trace, label: &str, marker: Option<&StepSource>) -> RowIndex<'r> {
        RowIndex::read(trace, label, marker)
    }

    /// [`RowIndex::new`], each row its passes read also handed to `visit`: every kernel, then
    /// every call, then every NVTX range, each in start order (so what folds the calls knows
    /// the kernels' extent), for an analysis that would otherwise read them again.
    pub fn visiting(
        rows: &'r dyn EventRows,
        label: &str,
        marker: Option<&StepSource>,
        visit: &mut dyn Fold,
    ) -> crate::error::Result<RowIndex<'r>> {
        let ix = RowIndex::read_visiting(rows, label, marker, visit);
        rows.check()?;
        Ok(ix)
    }

    fn read(rows: &'r dyn EventRows, label: &str, marker: Option<&StepSource>) -> RowIndex<'r> {
        RowIndex::read_visiting(rows, label, marker, &mut ())
    }

    fn read_visiting(
        rows: &'r dyn EventRows,
        label: &str,
        marker: Option<&StepSource>,
        visit: &mut dyn Fold,
    ) -> RowIndex<'r> {
        let mut names = RowNames::default();
        let (devices, kernels, extent) = kernel_facts(rows, &mut names, visit);
        let (calls, launch_threads) = call_counts(rows, &mut names, visit);
        RowIndex {
            rows,
            label: label.to_string(),
            devices,
            kernels,
            extent,
            calls,
            launch_threads,
            names,
            steps: step_info(rows, marker, visit),
            step_marker: marker.cloned(),
            peak: HeldPeak::default(),
        }
    }

    /// What the index read, without the rows: to index the same rows again without reading
    /// them ([`RowIndex::with_facts`]).
    pub fn into_facts(self) -> IndexFacts {
        IndexFacts {
            devices: self.devices,
            kernels: self.kernels,
            extent: self.extent,
            calls: self.calls,
            launch_threads: self.launch_threads,
            names: self.names,
            steps: self.steps,
            step_marker: self.step_marker,
        }
    }

    /// The index of `rows` from what an index of the same rows read ([`RowIndex::into_facts`]).
    pub fn with_facts(rows: &'r dyn EventRows, label: &str, facts: IndexFacts) -> RowIndex<'r> {
        RowIndex {
            rows,
            label: label.to_string(),
            devices: facts.devices,
            kernels: facts.kernels,
            extent: facts.extent,
            calls: facts.calls,
            launch_threads: facts.launch_threads,
            names: facts.names,
            steps: facts.steps,
            step_marker: facts.step_marker,
            peak: HeldPeak::default(),
        }
    }

    /// The trace's strings, processes, threads and metadata (never its event rows).
    pub fn meta(&self) -> &'r Trace {
        self.rows.meta()
    }

    /// The string of `id` (`""` for none).
    pub fn string(&self, id: NameId) -> &'r str {
        self.meta().strings.get(id)
    }

    /// A kernel's name: its short name, else its demangled name.
    pub fn kernel_name(&self, short: NameId, demangled: NameId) -> &'r str {
        match self.string(short) {
            "" if demangled != NO_NAME => self.string(demangled),
            s => s,
        }
    }

    /// Why the trace has no kernel to analyse, or `None` when it has kernels.
    pub fn kernel_absence(&self) -> Option<KernelAbsence> {
        (self.kernels == 0).then(|| KernelAbsence::of(&self.meta().present, self.calls.launches))
    }

    /// The join of kernels (read in start order) to the calls that launched them: kernel
    /// launches held until their kernel starts, graph launches to the end.
    pub fn launch_join(&self) -> CallJoin<'r> {
        self.launch_join_visiting(None)
    }

    /// [`RowIndex::launch_join`], every call it reads handed to `visit` first.
    pub fn launch_join_visiting<'v>(
        &self,
        mut visit: Option<&'v mut dyn FnMut(&CallRow)>,
    ) -> CallJoin<'v>
    where
        'r: 'v,
    {
        self.launch_join_noting(move |c| {
            if let Some(visit) = visit.as_mut() {
                visit(c);
            }
        })
    }

    /// [`RowIndex::launch_join`], every call it reads handed to `note` first: a held call is
    /// found with what `note` said of it.
    pub fn launch_join_noting<'v, P: Copy>(
        &self,
        mut note: impl FnMut(&CallRow) -> P + 'v,
    ) -> CallJoin<'v, P>
    where
        'r: 'v,
    {
        let api = self.names.api_kinds();
        let launched = self.kernel_processes();
        let hold = move |c: &CallRow| {
            let noted = note(c);
            let kind = api.get(&c.name).copied().unwrap_or(ApiKind::Other);
            // A process that ran no kernel in the trace (its kernels not captured, or another
            // rank's file kept its calls) issues nothing a kernel could be joined to: holding
            // its launches would keep every one of them to the end.
            let ran = launched.get(c.process as usize).copied().unwrap_or(false);
            (if ran { launch_hold(kind) } else { Hold::No }, noted)
        };
        CallJoin::with_payload(self.rows.calls(), hold)
    }

    /// Per process index: whether it ran a kernel on some device.
    pub fn kernel_processes(&self) -> Vec<bool> {
        let mut ran = vec![false; self.meta().processes.len()];
        for d in &self.devices {
            ran.iter_mut()
                .zip(&d.kernel_processes)
                .for_each(|(r, &p)| *r |= p);
        }
        ran
    }

    /// The phases' step windows (context, generation) as sorted disjoint spans.
    pub fn phase_spans(&self) -> [&[(Ns, Ns)]; 2] {
        [&self.steps.context, &self.steps.generation]
            .map(|p| p.as_ref().map_or(&[][..], |p| p.window.spans()))
    }
}

/// What a [`RowIndex`] read of a trace, without its rows: kept between analyses of the same
/// rows (the page's Root cause, then its Drill-down) so they are not read again to index them.
#[derive(Debug)]
pub struct IndexFacts {
    devices: Vec<DeviceFacts>,
    kernels: u64,
    extent: (Ns, Ns),
    calls: CallCounts,
    launch_threads: Vec<bool>,
    names: RowNames,
    steps: StepInfo,
    step_marker: Option<StepSource>,
}

impl IndexFacts {
    /// Whether the steps were read under the first built-in marker met (no marker given).
    pub fn builtin_marker(&self) -> bool {
        self.step_marker.is_none()
    }
}

/// Devices (ascending), the kernel count and extent, and each kernel name's class and time.
fn kernel_facts(
    rows: &dyn EventRows,
    names: &mut RowNames,
    visit: &mut dyn Fold,
) -> (Vec<DeviceFacts>, u64, (Ns, Ns)) {
    let strings = &rows.meta().strings;
    let processes = rows.meta().processes.len();
    let mut devices: Vec<DeviceFacts> = Vec::new();
    let (mut count, mut lo, mut hi) = (0u64, Ns::MAX, Ns::MIN);
    // Every GPU operation makes the extent and the devices; names and counts are kernels'.
    for k in rows.gpu_work() {
        visit.kernel(&k, None);
        lo = lo.min(k.start);
        hi = hi.max(k.end);
        let kernel = k.work == crate::model::Work::Kernel;
        count += u64::from(kernel);
        let slot = match devices.binary_search_by_key(&k.device, |d| d.device) {
            Ok(slot) => slot,
            Err(slot) => {
                let facts = DeviceFacts {
                    device: k.device,
                    kernels: 0,
                    processes: vec![false; processes],
                    kernel_processes: vec![false; processes],
                    one_stream: true,
                    first_stream: None,
                };
                devices.insert(slot, facts);
                slot
            }
        };
        let d = &mut devices[slot];
        d.kernels += u64::from(kernel);
        if let Some(f) = d.processes.get_mut(k.process as usize) {
            *f = true;
        }
        match d.first_stream {
            None => d.first_stream = Some(k.stream),
            Some(s) => d.one_stream &= s == k.stream,
        }
        if !kernel {
            continue;
        }
        if let Some(f) = d.kernel_processes.get_mut(k.process as usize) {
            *f = true;
        }
        let name = names.kernels.entry(k.short_name).or_insert_with(|| {
            let s = strings.get(k.short_name);
            KernelName {
                category: kernel_category(s),
                collective: is_collective(s),
                count: 0,
                total: 0,
            }
        });
        name.count += 1;
        name.total = name
            .total
            .saturating_add(k.end.saturating_sub(k.start).max(0));
    }
    let extent = if lo > hi { (0, 0) } else { (lo, hi) };
    (devices, count, extent)
}

/// The runtime calls' counts and facts, and each call name's API kind; per thread, whether it
/// launched.
fn call_counts(
    rows: &dyn EventRows,
    names: &mut RowNames,
    visit: &mut dyn Fold,
) -> (CallCounts, Vec<bool>) {
    let strings = &rows.meta().strings;
    let mut f = CallCounts::default();
    let mut threads = vec![false; rows.meta().threads.len()];
    for c in rows.calls() {
        visit.call(&c);
        let kind = *names
            .api
            .entry(c.name)
            .or_insert_with(|| api_kind(strings.get(c.name)));
        f.calls += 1;
        f.launches += u64::from(kind.launches_kernels());
        f.graph_launches += u64::from(kind == ApiKind::GraphLaunch);
        f.facts.add(kind, c.correlation, Some(c.process));
        if kind.launches_kernels()
            && let Some(t) = threads.get_mut(c.thread as usize)
        {
            *t = true;
        }
    }
    (f, threads)
}

/// Forward steps and phases under the standard profile, read from the NVTX ranges in one pass.
fn step_info(rows: &dyn EventRows, marker: Option<&StepSource>, visit: &mut dyn Fold) -> StepInfo {
    let sw = Profile::Standard.switches();
    let strings = &rows.meta().strings;
    let ranges = rows.ranges().inspect(|r| visit.range(r));
    let (mut steps, used) = match marker {
        Some(_) => {
            let parser = StepParser::new(&sw, marker);
            let names = ParserOn(&parser, strings);
            let mut steps: Vec<Step> = Vec::new();
            for step in ranges.filter_map(|r| steps::step_of_row(&r, &sw, &names)) {
                push_gently(&mut steps, step);
            }
            (steps, parser.used())
        }
        None => builtin_steps(ranges, &sw, strings),
    };
    // Ranges come by (start, row): a stable sort by (start, end) orders ties by row.
    if !steps.is_sorted_by_key(|s| (s.start, s.end)) {
        steps.sort_by_key(|s| (s.start, s.end));
    }
    visit.raw_steps(&steps);
    StepInfo::of(steps, &sw, used)
}

/// The steps under the trace's built-in marker: that of the range earliest in table order that
/// names one, as every other reader of the trace chooses it (it reads the table in row order),
/// though the ranges come in start order here. Every marker's steps are read as the ranges
/// pass (no name is a step under two markers) and the chosen one's kept, so the ranges are
/// read once.
fn builtin_steps(
    ranges: impl Iterator<Item = NvtxRow>,
    sw: &Switches,
    strings: &crate::model::Strings,
) -> (Vec<Step>, Option<crate::names::steps::StepMarkerReport>) {
    let names = AnyBuiltin::new(strings);
    let mut found: [(Option<i64>, Vec<Step>); StepStyle::ALL.len()] = Default::default();
    for r in ranges {
        let Some(step) = steps::step_of_row(&r, sw, &names) else {
            continue;
        };
        let marker = names.last_style();
        let Some(i) = StepStyle::ALL.iter().position(|s| Some(*s) == marker) else {
            continue;
        };
        let (first, steps) = &mut found[i];
        *first = Some(first.map_or(r.row, |f| f.min(r.row)));
        push_gently(steps, step);
    }
    let chosen = (0..found.len())
        .filter_map(|i| found[i].0.map(|row| (row, i)))
        .min();
    match chosen {
        Some((_, i)) => (
            std::mem::take(&mut found[i].1),
            Some(StepSource::Builtin(StepStyle::ALL[i]).report(true)),
        ),
        None => (Vec::new(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// The rows' facts are those the builder placed.
    #[test]
    fn facts_are_those_placed() {
        let mut b = TraceBuilder::new();
        b.range(
            "[Executor] _forward_step 1: 0 ctx reqs, 1 gen reqs",
            0,
            1000,
        );
        let c = b.call("cudaLaunchKernel", 10, 15);
        b.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 20, 40, c);
        let g = b.call("cudaGraphLaunch", 50, 60);
        b.kernel("gemm", 70, 90, g);
        b.call("cudaStreamSynchronize", 95, 99);
        let ix = RowIndex::loaded(&b.trace, "t", None);
        assert_eq!(ix.extent, (20, 90));
        assert_eq!(ix.kernels, 2);
        let devices: Vec<u32> = ix.devices.iter().map(|d| d.device).collect();
        assert_eq!(devices, [b.trace.kernels.device[0]]);
        assert_eq!(ix.steps.steps.len(), 1);
        assert_eq!(
            (ix.calls.calls, ix.calls.launches, ix.calls.graph_launches),
            (3, 2, 1)
        );
        assert_eq!(
            ix.calls.facts.coverage(true, true),
            None,
            "joined, not launches only"
        );
        let short = b.trace.kernels.short_name[0];
        assert!(ix.names.is_collective(short));
        assert!(!ix.names.is_collective(b.trace.kernels.short_name[1]));
        let mut join = ix.launch_join();
        let launches: Vec<Ns> = b
            .trace
            .kernels()
            .map(|k| {
                let call = join.find(k.start, k.process, k.correlation);
                call.map_or(k.start, |c| c.start)
            })
            .collect();
        assert_eq!(launches, [10, 50]);
    }

    /// With two markers in the ranges, the steps are read under the marker of the range first
    /// in table order, as every reader of the table chooses, though the
    /// ranges come in start order: here the later-starting range is first in the table.
    #[test]
    fn the_marker_is_the_first_in_table_order_not_in_start_order() {
        let mut b = TraceBuilder::new();
        b.range("ProfilerStep#1", 5_000, 6_000);
        b.range(
            "[Executor] _forward_step 1: 0 ctx reqs, 1 gen reqs",
            0,
            1_000,
        );
        b.range("ProfilerStep#2", 7_000, 8_000);
        let c = b.call("cudaLaunchKernel", 10, 15);
        b.kernel("k", 20, 40, c);
        let ix = RowIndex::loaded(&b.trace, "t", None);
        let starts = |s: &[Step]| s.iter().map(|s| s.start).collect::<Vec<Ns>>();
        assert_eq!(starts(&ix.steps.steps), [5_000, 7_000], "PyTorch's marker");
        assert!(ix.steps.marker.is_some());
    }
}
