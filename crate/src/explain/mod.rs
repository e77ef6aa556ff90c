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
mod join;
pub mod kernels;
pub mod memory;
pub mod nvtx;
pub mod processes;
pub mod stats;

use hashbrown::HashMap;
use serde::Serialize;

use crate::error::Result;
use crate::index::Fold;
use crate::index::kernel_pass::{CallNote, Rider};
use crate::index::rows::RowIndex;
use crate::index::steady_spans;
use crate::index::units::us;
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{CoverageNote, NO_NAME, NameId, Ns, ProcessIdx, Strings, Trace};
use crate::names::api::{ApiKind, api_kind};
use crate::steps::Step;
use join::HostJoined;
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
    let steady = steady_spans(steps).0;
    let mut explainer = Explainer::new(rows, label, &steady, top);
    for k in rows.gpu_work() {
        explainer.kernel(&k, None);
    }
    explainer.finish()
}

/// The explainer's passes as a value, so that what already passes over a trace's kernels
/// joined to their launch calls (the drill-down) carries the explainer's passes on its own
/// ([`Rider`]): every kernel (the window, time per name) and, when the window and the top
/// names are known before it ([`Explainer::riding`]), the host join with it (the kernels
/// joined to their launch calls with the ranges open around them, every call and range
/// tallied, the copies and memsets joined to them); else the join after it
/// ([`Explainer::join`]). Then, when the percentiles held too many distinct values to know
/// their exact values, every kernel again with its launch call ([`Explainer::finish`] makes
/// that pass itself when no one did).
pub struct Explainer<'r> {
    rows: &'r dyn EventRows,
    label: String,
    /// The steady steps' spans.
    steady: &'r [(Ns, Ns)],
    top: usize,
    tally: kernels::KernelTally,
    procs: processes::ProcessTally,
    held: Held,
    /// The host join riding on the first pass, when it is made with it.
    riding: Option<join::HostJoin<'r>>,
    /// What the join found (`None` before it).
    joined: Option<HostJoined<'r>>,
    /// Kernels the last pass (the percentiles' exact values) was handed.
    exact: u64,
}

impl<'r> Explainer<'r> {
    /// The explainer of the trace whose rows `rows` reads, `label` naming it and `steady` the
    /// spans of its steady forward steps ([`steady_spans`] of the standard profile's steps,
    /// TP-merged); `top` limits the named lists.
    pub fn new(
        rows: &'r dyn EventRows,
        label: &str,
        steady: &'r [(Ns, Ns)],
        top: usize,
    ) -> Explainer<'r> {
        let meta = rows.meta();
        Explainer {
            rows,
            label: label.to_string(),
            steady,
            top,
            tally: kernels::KernelTally::new(meta.strings.len(), meta.processes.len()),
            procs: processes::ProcessTally::new(meta),
            held: Held::default(),
            riding: None,
            joined: None,
            exact: 0,
        }
    }

    /// [`Explainer::new`] over an indexed trace with kernels: its kernel extent and the time
    /// per kernel name give the window and the top names first, so the host join rides on the
    /// first pass too (the passes then read every kernel twice).
    pub fn riding(ix: &'r RowIndex<'_>, steady: &'r [(Ns, Ns)], top: usize) -> Explainer<'r> {
        let mut explainer = Explainer::new(ix.rows, &ix.label, steady, top);
        if ix.kernels > 0 {
            let strings = ix.meta().strings.len();
            let names = kernels::top_names_of(ix.names.kernel_time(), strings, top);
            let window = window_of(ix.rows, Some(ix.extent));
            explainer.riding = Some(join::HostJoin::new(ix.rows, window, steady, names));
        }
        explainer
    }

    /// The join (once every kernel was handed to the first pass): the kernels joined to their
    /// launch calls, each call and range tallied as it is read.
    pub fn join(&mut self) {
        if self.joined.is_none() {
            self.joined = Some(self.host_join());
        }
    }

    fn host_join(&mut self) -> HostJoined<'r> {
        let rows = self.rows;
        self.held.kernels = self.tally.count();
        match self.riding.take() {
            Some(rode) => rode.finish(&mut self.procs, &mut self.held),
            None => {
                let window = window_of(rows, self.tally.extent());
                let names = self.tally.top_names(self.top);
                let host = join::HostJoin::new(rows, window, self.steady, names);
                join::own_pass(rows, host, &mut self.procs, &mut self.held)
            }
        }
    }

    /// Whether the explainer asks for the kernels again (with their launch calls): the
    /// percentiles' exact values after the join, when no pass handed them yet.
    pub fn needs_kernels_again(&self) -> bool {
        self.exact == 0
            && self
                .joined
                .as_ref()
                .is_some_and(|host| host.kernels.needs_second())
    }

    /// The report and the most state held; the percentiles' pass is made here when they need
    /// it and no one handed the kernels again after the join.
    pub fn finish(mut self) -> (ExplainReport, Held) {
        let rows = self.rows;
        let meta = rows.meta();
        let strings = &meta.strings;
        let mut host = match self.joined.take() {
            Some(joined) => joined,
            None => self.host_join(),
        };
        if self.exact == 0 && host.kernels.needs_second() {
            join::exact_pass(rows, &mut host, &self.tally, &mut self.held);
        }
        let joined = &host.kernels;
        self.held.duration_entries = joined.latency.held()
            + joined
                .durations
                .values()
                .map(Percentiles::held)
                .sum::<usize>();
        let window = host.window;
        let (memory, copies_held) = host.copies.finish(&mut self.procs);
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

impl Explainer<'_> {
    /// Kernel `k` on the first pass (window, time per name), with its launch call and what the
    /// host join noted of it when the join rides.
    fn first(&mut self, k: &KernelRow, launch: Option<join::Launch>) {
        self.tally.add(k);
        self.procs.kernel(k);
        if let Some(host) = self.riding.as_mut() {
            host.kernel(k, launch);
        }
    }
}

/// Before the join, the first pass (window, time per name); after it, the percentiles' exact
/// values.
impl Fold for Explainer<'_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            if self.joined.is_none() {
                self.tally.widen(k);
            }
            return;
        }
        match &mut self.joined {
            None => self.first(k, None),
            Some(host) => {
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

    /// On the first pass, the host join's calls when it rides.
    fn note_call(&mut self, c: &CallRow) -> CallNote {
        match self.riding.as_mut() {
            Some(host) => host.call(c, &mut self.procs).1,
            None => (ApiKind::Other, NO_NAME),
        }
    }

    fn launched(&mut self, k: &KernelRow, launch: Option<(&CallRow, CallNote)>) {
        if k.work != crate::model::Work::Kernel {
            self.tally.widen(k);
            return;
        }
        self.first(k, launch.map(|(c, note)| (*c, note)));
    }

    fn wants_kernels_again(&self) -> bool {
        self.needs_kernels_again()
    }
}
