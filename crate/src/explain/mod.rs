//! The explainer (spec §5): what a trace's kernels, CUDA calls, copies and NVTX ranges say, and
//! what to do next — prioritized findings mapped to the reference's optimization patterns
//! (reference §9.5).
//!
//! The explainer is a fold over the trace's rows in start order ([`EventRows`]: the loaded
//! trace, or the file read as it goes), so it runs in bounded memory: what it holds is per
//! name, per distinct duration, per process and thread, per step, per range open at the clock
//! and per launch in flight — never per kernel, call or range. Each section is its own module
//! with its tally; [`explain_rows`] runs the passes. [`crate::findings`] turns the sections
//! (and the drill-down's results) into findings with severity and evidence.

pub mod api;
pub mod kernels;
pub mod memory;
pub mod nvtx;
pub mod processes;
pub mod stats;

use std::cell::RefCell;

use hashbrown::HashMap;
use serde::Serialize;

use crate::error::Result;
use crate::index::call_facts::CallFacts;
use crate::index::call_join::{CallJoin, Hold};
use crate::index::kernel_pass::{KernelFold, Rider};
use crate::index::units::us;
use crate::index::{TraceIndex, steady_spans};
use crate::model::rows::{CallRow, EventRows, KernelRow, Rows};
use crate::model::{CoverageNote, NO_NAME, NameId, Ns, NvtxRow, ProcessIdx, Strings, Trace};
use crate::names::api::{ApiKind, api_kind};
use crate::steps::Step;
use stats::Percentiles;

/// Names listed per table by default.
pub const DEFAULT_TOP: usize = 20;

/// What the explainer's window spans, so every figure compared with it says what was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowBasis {
    /// First kernel start to last kernel end: host calls outside it (set-up before the first
    /// kernel, tear-down after the last) are not counted "in the window".
    Kernels,
    /// No kernel records: the first to the last host event (API call, NVTX range, copy), i.e.
    /// the whole capture.
    Capture,
}

/// The window the explainer's rates and shares refer to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Window {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub duration_us: f64,
    pub basis: WindowBasis,
}

impl Window {
    /// The part of `[start, end)` inside the window, if any (a zero-length call at a window
    /// edge counts as inside).
    pub fn clip(&self, start: Ns, end: Ns) -> Option<(Ns, Ns)> {
        let (s, e) = (start.max(self.start_ns), end.max(start).min(self.end_ns));
        (s <= e && start <= self.end_ns && end >= self.start_ns).then_some((s, e))
    }
}

/// The kernel window (`kernels`: first start, last end), or the whole capture's host events
/// when there is no kernel.
fn window_of(rows: &dyn EventRows, kernels: Option<(Ns, Ns)>) -> Window {
    let (start_ns, end_ns, basis) = match kernels {
        Some((s, e)) => (s, e, WindowBasis::Kernels),
        None => {
            let (s, e) = host_extent(rows);
            (s, e, WindowBasis::Capture)
        }
    };
    Window {
        start_ns,
        end_ns,
        duration_us: us(end_ns - start_ns),
        basis,
    }
}

/// First start to last end over the host's events: API calls, NVTX ranges, copies and memsets.
fn host_extent(rows: &dyn EventRows) -> (Ns, Ns) {
    let spans = rows
        .calls()
        .map(|c| (c.start, c.end))
        .chain(rows.ranges().map(|r| (r.start, r.end)))
        .chain(rows.memcpy().map(|m| (m.start, m.end)))
        .chain(rows.memset().map(|m| (m.start, m.end)));
    let mut extent: Option<(Ns, Ns)> = None;
    for (s, e) in spans {
        let e = e.max(s);
        extent = Some(extent.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
    }
    extent.unwrap_or((0, 0))
}

/// The explainer's result for one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainReport {
    pub file: String,
    pub window: Window,
    pub kernels: kernels::KernelTime,
    pub launch_storm: kernels::LaunchStorm,
    /// Every CUDA API call (runtime and driver) by name.
    pub api_calls: api::CallSummary,
    pub syncs: api::CallSummary,
    pub allocations: api::CallSummary,
    pub memory: memory::MemorySummary,
    pub nvtx: nvtx::NvtxSummary,
    pub processes: Vec<processes::ProcessStats>,
    pub launch_latency: api::LaunchLatency,
    pub coverage: Vec<CoverageNote>,
}

/// Explains one indexed trace; `top` limits the named lists. (The fold over the loaded
/// trace's rows, [`explain_rows`], for callers that still hold a [`TraceIndex`].)
pub fn explain(ix: &TraceIndex<'_>, top: usize) -> ExplainReport {
    // A loaded trace's rows never fail to read: no check to make.
    fold(ix.trace, &ix.label, &ix.steps.steps, top).0
}

/// Explains the trace whose rows `rows` reads, `label` naming it and `steps` its forward steps
/// (the standard profile's, TP-merged); `top` limits the named lists. Fails when a row could
/// not be read.
pub fn explain_rows(
    rows: &dyn EventRows,
    label: &str,
    steps: &[Step],
    top: usize,
) -> Result<ExplainReport> {
    explain_rows_held(rows, label, steps, top).map(|(report, _)| report)
}

/// [`explain_rows`] with the most state the fold held at once.
pub fn explain_rows_held(
    rows: &dyn EventRows,
    label: &str,
    steps: &[Step],
    top: usize,
) -> Result<(ExplainReport, Held)> {
    let out = fold(rows, label, steps, top);
    rows.check()?;
    Ok(out)
}

/// The most state the explainer's fold held at once: what bounds its memory besides the
/// per-name, per-process and per-thread tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    /// Kernels read (what the held state must not grow with).
    pub kernels: u64,
    /// Calls held by a join until their kernel or copy came (the most of any join).
    pub pending_calls: usize,
    /// NVTX ranges open at the clock (on the threads' stacks, and read ahead at one start).
    pub open_ranges: usize,
    /// Entries held for the exact percentiles of the top kernel names and of launch latency:
    /// coarse buckets, then the distinct values inside the buckets the percentiles fall in
    /// (`stats::Percentiles`).
    pub duration_entries: usize,
}

/// The API kinds of the call names met, classified once per distinct name.
#[derive(Debug, Clone, Default)]
pub struct ApiKinds(HashMap<NameId, ApiKind>);

impl ApiKinds {
    /// The kind of `name`, classified the first time it is met.
    pub fn classify(&mut self, strings: &Strings, name: NameId) -> ApiKind {
        *self.0.entry(name).or_insert_with(|| match name as usize {
            i if i < strings.len() => api_kind(strings.get(name)),
            _ => ApiKind::Other,
        })
    }

    /// The kind of a name classified already (`Other` when not met).
    pub fn get(&self, name: NameId) -> ApiKind {
        self.0.get(&name).copied().unwrap_or(ApiKind::Other)
    }
}

/// The process that made call `c` (`None`: its thread is not in the thread table).
fn call_process(meta: &Trace, c: &CallRow) -> Option<ProcessIdx> {
    meta.threads.process.get(c.thread as usize).copied()
}

/// The explainer's passes, each run by itself ([`Explainer`] with no one else's pass to ride).
fn fold(rows: &dyn EventRows, label: &str, steps: &[Step], top: usize) -> (ExplainReport, Held) {
    let mut explainer = Explainer::new(rows, label, steps, top);
    for k in rows.kernels() {
        explainer.kernel(&k, None);
    }
    explainer.finish()
}

/// The explainer's passes as a value, so that what already passes over a trace's kernels
/// joined to their launch calls (the drill-down) carries the explainer's kernel passes on its
/// own ([`Rider`]): every kernel (the window, time per name); then [`Explainer::join`], the
/// kernels joined to their launch calls with the ranges open around them, the calls and ranges
/// tallied as the join reads them (it needs the window first); then every kernel again with its
/// launch call (the percentiles' exact values; [`Explainer::finish`] makes that pass itself
/// when no one did); then the copies and memsets joined to their calls.
pub struct Explainer<'r> {
    rows: &'r dyn EventRows,
    label: String,
    /// The steady steps' spans.
    steady: Vec<(Ns, Ns)>,
    top: usize,
    tally: kernels::KernelTally,
    procs: processes::ProcessTally,
    held: Held,
    /// What the join found (`None` before it), and the copies and memsets, joined to the calls
    /// the last pass hands over.
    joined: Option<(HostJoined, memory::CopyJoin<'r>)>,
    /// Kernels the last pass (the percentiles' exact values) was handed.
    exact: u64,
}

/// What [`Explainer::join`] found of the calls, the ranges and the kernels joined to them.
struct HostJoined {
    window: Window,
    kinds: ApiKinds,
    summaries: api::CallSummaries,
    launches: kernels::LaunchCalls,
    facts: CallFacts,
    ranges: nvtx::RangeTally,
    kernels: Joined,
}

impl<'r> Explainer<'r> {
    /// The explainer of the trace whose rows `rows` reads, `label` naming it and `steps` its
    /// forward steps (the standard profile's, TP-merged); `top` limits the named lists.
    pub fn new(rows: &'r dyn EventRows, label: &str, steps: &[Step], top: usize) -> Explainer<'r> {
        let meta = rows.meta();
        Explainer {
            rows,
            label: label.to_string(),
            steady: steady_spans(steps).0,
            top,
            tally: kernels::KernelTally::new(meta.strings.len(), meta.processes.len()),
            procs: processes::ProcessTally::new(meta),
            held: Held::default(),
            joined: None,
            exact: 0,
        }
    }

    /// The join (once every kernel was handed to the first pass): the kernels joined to their
    /// launch calls, each call and range tallied as it is read.
    pub fn join(&mut self) {
        if self.joined.is_none() {
            self.joined = Some(self.host_join());
        }
    }

    fn host_join(&mut self) -> (HostJoined, memory::CopyJoin<'r>) {
        let rows = self.rows;
        let strings = &rows.meta().strings;
        let window = window_of(rows, self.tally.extent());
        let host = RefCell::new(HostTally {
            kinds: ApiKinds::default(),
            calls: api::CallTally::new(window, &self.steady, strings.len()),
            launches: kernels::LaunchCalls::new(rows.meta().processes.len()),
            facts: CallFacts::default(),
            ranges: nvtx::RangeTally::new(rows.meta().threads.len(), strings.len()),
            procs: &mut self.procs,
        });
        self.held.kernels = self.tally.count();
        let kernels = first_join(rows, &host, &self.tally, self.top, &mut self.held);
        let host = host.into_inner();
        let copies = memory::CopyJoin::new(rows, &host.kinds, window);
        let joined = HostJoined {
            window,
            kinds: host.kinds,
            summaries: host.calls.finish(strings),
            launches: host.launches,
            facts: host.facts,
            ranges: host.ranges,
            kernels,
        };
        (joined, copies)
    }

    /// The report and the most state held; the percentiles' pass is made here when no one
    /// handed the kernels again after the join.
    pub fn finish(mut self) -> (ExplainReport, Held) {
        let rows = self.rows;
        let meta = rows.meta();
        let strings = &meta.strings;
        let (mut host, mut copies) = match self.joined.take() {
            Some(joined) => joined,
            None => self.host_join(),
        };
        if self.exact == 0 {
            let (kinds, procs) = (&host.kinds, &mut self.procs);
            let second = KernelJoin {
                ranges: Box::new(std::iter::empty()),
                kind: &mut |c| {
                    copies.call(c, procs);
                    kinds.get(c.name)
                },
                graph_launches: false,
                to_the_end: true,
            };
            let (joined, tally) = (&mut host.kernels, &self.tally);
            join_kernels(rows, second, &mut self.held, &mut |k, launch| {
                joined.second(k, launch, tally)
            });
        }
        let joined = &host.kernels;
        self.held.duration_entries = joined.latency.held()
            + joined
                .durations
                .values()
                .map(Percentiles::held)
                .sum::<usize>();
        let window = host.window;
        let (memory, copies_held) = copies.finish(&mut self.procs);
        self.held.pending_calls = self.held.pending_calls.max(copies_held);
        let mut coverage = meta.coverage.clone();
        coverage.extend(
            host.facts
                .coverage(meta.present.runtime, rows.columns().call_correlations),
        );
        let (tally, top) = (&self.tally, self.top);
        let report = ExplainReport {
            file: self.label,
            window,
            kernels: kernels::kernel_summary(tally, &joined.durations, strings, top),
            launch_storm: kernels::launch_storm(
                tally,
                &host.launches,
                meta.present.runtime,
                (window.start_ns, window.end_ns),
            ),
            api_calls: host.summaries.api,
            syncs: host.summaries.syncs,
            allocations: host.summaries.allocations,
            memory,
            nvtx: nvtx::nvtx_summary(&host.ranges, &joined.gpu, strings, top),
            processes: self.procs.finish(meta),
            launch_latency: api::LaunchLatency::of(&joined.latency),
            coverage,
        };
        (report, self.held)
    }

    /// [`Explainer::finish`]'s report; fails when a row could not be read.
    pub fn report(self) -> Result<ExplainReport> {
        let rows = self.rows;
        let (report, _) = self.finish();
        rows.check()?;
        Ok(report)
    }
}

/// Before the join, the first pass (window, time per name); after it, the percentiles' exact
/// values.
impl KernelFold for Explainer<'_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        match &mut self.joined {
            None => {
                self.tally.add(k);
                self.procs.kernel(k);
            }
            Some((host, _)) => {
                self.exact += 1;
                let launch = call.map(|c| (*c, (host.kinds.get(c.name), NO_NAME)));
                host.kernels.second(k, launch, &self.tally);
            }
        }
    }
}

impl Rider for Explainer<'_> {
    fn first_pass_done(&mut self) {
        self.join();
    }

    /// After the join, the calls the last pass reads: the copies and memsets are joined to them.
    fn call(&mut self, c: &CallRow) {
        if let Some((_, copies)) = self.joined.as_mut() {
            copies.call(c, &mut self.procs);
        }
    }
}

/// What the first kernel join tallies of the calls and ranges it reads (each once, in start
/// order; the rest after the last kernel read to the end), and the API kinds it classifies.
struct HostTally<'w> {
    kinds: ApiKinds,
    calls: api::CallTally<'w>,
    launches: kernels::LaunchCalls,
    facts: CallFacts,
    ranges: nvtx::RangeTally,
    procs: &'w mut processes::ProcessTally,
}

impl HostTally<'_> {
    /// Tallies call `c` of a trace of `meta`; its API kind.
    fn call(&mut self, meta: &Trace, c: &CallRow) -> ApiKind {
        let kind = self.kinds.classify(&meta.strings, c.name);
        let process = call_process(meta, c);
        self.calls.add(c, kind, process);
        self.launches.add(kind, process);
        self.procs.call(c, kind, process);
        self.facts.add(kind, c.correlation, process);
        kind
    }

    fn range(&mut self, meta: &Trace, r: &NvtxRow) {
        self.ranges.add(r);
        self.procs.range(meta, r);
    }
}

/// What a kernel's launch call was, joined: the call, its kind, and the innermost NVTX range
/// open on its thread when it was made (`NO_NAME`: none, or ranges not read).
type Launch = (CallRow, (ApiKind, NameId));

/// Kernel start − launch call end, for a kernel launched eagerly (graph replays queue).
fn eager_latency(k: &KernelRow, launch: Option<Launch>) -> Option<Ns> {
    match launch? {
        (call, (ApiKind::Launch, _)) => Some(k.start - call.end),
        _ => None,
    }
}

/// The kernels joined to their launch calls: GPU time per range and the percentiles' buckets
/// (the calls and ranges tallied into `host` as they are read).
fn first_join(
    rows: &dyn EventRows,
    host: &RefCell<HostTally<'_>>,
    tally: &kernels::KernelTally,
    top: usize,
    held: &mut Held,
) -> Joined {
    let meta = rows.meta();
    let mut joined = Joined {
        gpu: nvtx::GpuTally::new(meta.strings.len()),
        latency: Percentiles::new(&api::LATENCY_QUANTILES),
        durations: tally
            .top_names(top)
            .into_iter()
            .map(|name| (name, Percentiles::new(&kernels::KERNEL_QUANTILES)))
            .collect(),
    };
    let first = KernelJoin {
        ranges: Box::new(rows.ranges().inspect(|r| host.borrow_mut().range(meta, r))),
        kind: &mut |c| host.borrow_mut().call(meta, c),
        graph_launches: true,
        to_the_end: true,
    };
    join_kernels(rows, first, held, &mut |k, launch| {
        joined
            .gpu
            .add(launch.map_or(NO_NAME, |(_, (_, range))| range), duration(k));
        if let Some(latency) = eager_latency(k, launch) {
            joined.latency.first(latency);
        }
        if let Some(p) = joined.durations.get_mut(&tally.name_key(k.short_name)) {
            p.first(duration(k));
        }
    });
    joined.latency.end_first();
    joined
        .durations
        .values_mut()
        .for_each(Percentiles::end_first);
    joined
}

fn duration(k: &KernelRow) -> Ns {
    (k.end - k.start).max(0)
}

/// What the kernels say once joined to their launch calls.
struct Joined {
    /// GPU time per innermost launching range.
    gpu: nvtx::GpuTally,
    /// Kernel start − launch call end of eagerly launched kernels.
    latency: Percentiles,
    /// The durations of the top kernel names ([`kernels::KernelTally::top_names`]).
    durations: HashMap<usize, Percentiles>,
}

impl Joined {
    /// Kernel `k` read again, with its launch: the percentiles' exact values.
    fn second(&mut self, k: &KernelRow, launch: Option<Launch>, tally: &kernels::KernelTally) {
        if let Some(latency) = eager_latency(k, launch) {
            self.latency.second(latency);
        }
        if let Some(p) = self.durations.get_mut(&tally.name_key(k.short_name)) {
            p.second(duration(k));
        }
    }
}

/// How a pass joins kernels to their calls: the ranges read alongside (for the innermost one
/// open at each launch; none: the pass needs no range), the API kind of each call read,
/// whether graph launches are joined (held to the end), and whether the calls and ranges are
/// read to the end once the kernels are (for what tallies them as they are read).
struct KernelJoin<'a, 'k> {
    ranges: Rows<'a, NvtxRow>,
    kind: &'k mut dyn FnMut(&CallRow) -> ApiKind,
    graph_launches: bool,
    to_the_end: bool,
}

/// One pass over the kernels joined to their launch calls, each handed to `visit` with its
/// call: a launch call, when read, is held (with the innermost NVTX range open on its thread,
/// when ranges are read) until its kernel comes; a graph launch's call to the end, when asked
/// (eager latency needs no graph launch).
fn join_kernels(
    rows: &dyn EventRows,
    how: KernelJoin<'_, '_>,
    held: &mut Held,
    visit: &mut dyn FnMut(&KernelRow, Option<Launch>),
) {
    let meta = rows.meta();
    let graph_launches = how.graph_launches;
    let mut open = nvtx::OpenRanges::new(how.ranges, meta.threads.len());
    let kind_of = how.kind;
    let mut join = CallJoin::with_payload(rows.calls(), |c| {
        let kind = kind_of(c);
        let hold = match kind {
            ApiKind::Launch => Hold::Once,
            ApiKind::GraphLaunch if graph_launches => Hold::Many,
            _ => return (Hold::No, (kind, NO_NAME)),
        };
        (hold, (kind, open.innermost(c.thread, c.start)))
    });
    for k in rows.kernels() {
        let launch = join.find_with(k.start, k.process, k.correlation);
        visit(&k, launch);
    }
    held.pending_calls = held.pending_calls.max(join.peak());
    if how.to_the_end {
        join.read_to_end();
    }
    drop(join);
    held.open_ranges = held.open_ranges.max(open.peak());
    if how.to_the_end {
        open.read_to_end();
    }
}
