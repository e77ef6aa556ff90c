//! One pass over the kernel table, in start order, for every kernel-derived figure `detect` reads.
//!
//! The page cannot hold the kernel table (millions of rows), so detection splits in two: a
//! [`KernelSweep`] built from the host part of a trace (NVTX, strings, processes, threads,
//! runtime calls) consumes [`KernelEvent`]s in non-decreasing `start` and folds them into a
//! [`KernelSummary`]; `detect::detect_with_kernels` then assembles the report from the host part
//! and the summary. `detect::detect` is the same two steps fed from a loaded table.
//!
//! Memory: the sweep's state and the summary are bounded by scopes (≤ 3 windows) × groups
//! (devices, or one pooled group) × processes, plus
//! - standard M3: per scope, one counter per distinct set of simultaneously busy devices (at
//!   most 2^devices, in practice a few dozen) × (1 + processes with host-prep ranges × ≤ 3
//!   patterns); more than [`MAX_MASK_DEVICES`] devices stops this part (reported, not guessed);
//! - `trtllm-skill` M3: the pooled idle gaps that touch a host-prep range, kept because the
//!   reference sums them range by range in table order (bounded by the host-prep ranges and the
//!   gaps inside them: one per forward step on a TensorRT-LLM trace, none elsewhere);
//! - zero-length kernels at the current last end, merged per group and process, waiting for
//!   the hull's end (only damaged end-before-start kernels past the last end could pile up).
//!
//! Nothing grows with the number of kernels elsewhere.
//!
//! Thresholds play no part here: they only act when the report is assembled, so a page can
//! re-apply edited thresholds to the same summary without streaming the kernels again.

use serde::{Deserialize, Serialize};

use std::collections::{HashMap, VecDeque};

use crate::detect::config::DetectConfig;
use crate::detect::launches::{LaunchSweepResult, sweep_loaded};
use crate::detect::measure::{PrepCollector, PrepRanges};
use crate::detect::name_tables::NameTables;
use crate::model::intervals::IntervalSet;
use crate::model::{
    KernelEvent, NameFlags, Ns, NvtxRow, OutOfOrder, ProcessIdx, StartOrder, Strings, Threads,
    Trace, flag,
};
use crate::names::patterns::NameMatch;
use crate::profile::{PhaseWindow, Switches};
use crate::steps::names::StepParser;
use crate::steps::spans::{
    RangesUnordered, SpanQueue, Spans, WindowFacts, fed_past, overlap_at, overlap_within, seek,
};
use crate::steps::{
    PhaseCounts, Step, StepCounts, StepFold, StepReader, StepSink, StepSummarizer, StepSummary,
    StepsUnordered, phase_of, step_of_row,
};

/// Device sets are 64-bit masks: a trace with more devices than this gets no standard M3.
pub const MAX_MASK_DEVICES: usize = 64;

/// What the host part of a trace decides before any kernel is seen: the profile's switches, the
/// name tables, the forward steps and the phase windows. Built identically by the sweep and by
/// the assembly, so both agree on the windows.
pub struct Plan {
    pub(super) sw: Switches,
    pub(super) names: NameTables,
    pub(super) custom_marker: bool,
    /// The forward steps' counts; the steps themselves are not kept ([`Plan::with_steps`]).
    pub(super) steps: StepCounts,
    pub(super) context: Option<PhaseCounts>,
    pub(super) generation: Option<PhaseCounts>,
    /// Host-prep ranges per process (standard) or pooled; empty under `skip_m3`.
    pub(super) prep: Vec<PrepRanges>,
    /// M2's launch calls swept ahead of the verdict ([`Plan::set_swept_launches`],
    /// [`Plan::sweep_loaded_launches`]); else the verdict sweeps the host's loaded calls.
    pub(super) launches: Option<LaunchSweepResult>,
}

impl Plan {
    /// How many strings its name tables cover (a plan is valid for a trace with as many).
    pub fn string_count(&self) -> usize {
        self.names.launch.len()
    }

    /// Lets go of what only the kernel sweep reads, once its [`SweepPlan`] was sent: the pooled
    /// host-prep ranges of the `trtllm-skill` profile (one per step and rank), which the sweep
    /// measures itself ([`PrepExposure`]).
    pub fn forget_sweep_inputs(&mut self) {
        if !self.sw.prep_per_process {
            self.prep = Vec::new();
        }
    }

    /// How many forward steps were found.
    pub fn step_counts(&self) -> StepCounts {
        self.steps
    }

    /// Sweeps `host`'s loaded kernel-launch API calls now rather than at each verdict (the page,
    /// when the file's could not be swept, does it while the other worker still streams
    /// kernels): `edges` are the first kernel row's start and the last one's end, as for
    /// [`super::launches::LaunchSweep::new`]. The plan must have been built on `host`.
    pub fn sweep_loaded_launches(&mut self, host: &Trace, edges: (Ns, Ns)) {
        self.launches = Some(sweep_loaded(host, self, edges));
    }

    /// Whether M2's launch calls were swept ahead (from the file, or loaded).
    pub fn launches_swept(&self) -> bool {
        self.launches.is_some()
    }

    /// M2 from launch calls swept in start order ([`super::launches::LaunchSweep`] on this plan)
    /// instead of the host's loaded calls.
    pub fn set_swept_launches(&mut self, swept: LaunchSweepResult) {
        self.launches = Some(swept);
    }

    /// What a [`KernelSweep`] needs of this plan under `cfg` (built with the same `cfg`).
    pub fn sweep_plan(&self, cfg: &DetectConfig) -> SweepPlan {
        self.sweep_plan_ref(cfg).to_owned()
    }

    /// [`Plan::sweep_plan`] borrowed, to serialise without copying the windows and ranges.
    pub fn sweep_plan_ref(&self, cfg: &DetectConfig) -> SweepPlanRef<'_> {
        SweepPlanRef {
            sw: self.sw,
            skip_m3: cfg.skip_m3,
            window: cfg.window,
            context: self.context.as_ref().and_then(|p| p.window.as_ref()),
            generation: self.generation.as_ref().and_then(|p| p.window.as_ref()),
            prep: &self.prep,
            nccl: &self.names.nccl,
        }
    }

    pub fn new(host: &Trace, cfg: &DetectConfig) -> Plan {
        Plan::with_steps(host, cfg, &mut ())
    }

    /// The plan, with each forward step it counted handed to `sink` (after TP de-duplication,
    /// in start order): the plan does not keep them, one per step would grow it with the trace.
    pub fn with_steps(host: &Trace, cfg: &DetectConfig, sink: &mut impl StepSink) -> Plan {
        let mut b = PlanBuilder::new(&host.strings, cfg);
        let nvtx = &host.nvtx;
        if let Some(prep) = &mut b.prep {
            for i in 0..nvtx.len() {
                prep.push(&nvtx.row(i), &host.threads, &b.names, &b.sw);
            }
        }
        let parse = |id| b.parser.parse_id(&host.strings, id);
        let found = StepReader::new(nvtx, parse, &b.sw).summarize(sink);
        b.into_plan(found, host.processes.len())
    }
}

/// A [`Plan`] built from NVTX ranges as they are read, in table order, none kept (the page's
/// analysis worker): the forward steps must come in start order, as in every export seen.
pub struct PlanBuilder {
    sw: Switches,
    names: NameTables,
    parser: StepParser,
    custom_marker: bool,
    steps: StepSummarizer,
    /// `None` under `skip_m3`.
    prep: Option<PrepCollector>,
    /// The last range's start, for a fed sweep ([`PlanBuilder::feed`]).
    last_start: Option<Ns>,
}

impl PlanBuilder {
    /// A builder for `cfg` over `strings` (grown by inline NVTX texts as the ranges stream).
    pub fn new(strings: &Strings, cfg: &DetectConfig) -> PlanBuilder {
        let sw = cfg.profile.switches();
        let marker = cfg
            .step_marker
            .as_ref()
            .filter(|_| sw.name_match == NameMatch::Substring);
        PlanBuilder {
            sw,
            names: NameTables::build(strings, &sw),
            parser: StepParser::new(&sw, marker),
            custom_marker: marker.is_some(),
            steps: StepSummarizer::new(&sw),
            prep: (!cfg.skip_m3).then(PrepCollector::default),
            last_start: None,
        }
    }

    /// Adds an NVTX range; each forward step it completes goes to `sink`. `Err`: its step
    /// starts before the previous one, so the table must be read whole ([`Plan::with_steps`]).
    pub fn push(
        &mut self,
        row: &NvtxRow,
        strings: &Strings,
        threads: &Threads,
        sink: &mut impl StepSink,
    ) -> Result<(), StepsUnordered> {
        self.names.extend(strings, &self.sw);
        if let Some(prep) = &mut self.prep {
            prep.push(row, threads, &self.names, &self.sw);
        }
        let parse = |id| self.parser.parse_id(strings, id);
        match step_of_row(row, &self.sw, parse) {
            Some(s) => self.steps.push(s, &mut |s| sink.step(s)),
            None => Ok(()),
        }
    }

    /// A builder whose sweeps are fed ([`PlanBuilder::feed`]): of the phase windows it keeps
    /// the facts, not the windows.
    pub fn fed(strings: &Strings, cfg: &DetectConfig) -> PlanBuilder {
        let builder = PlanBuilder::new(strings, cfg);
        PlanBuilder {
            steps: StepSummarizer::facts_only(&builder.sw),
            ..builder
        }
    }

    /// Adds an NVTX range for a sweep fed as they are read ([`KernelSweep::fed`]): each host-prep
    /// range goes to `prep` as `(slot, pattern, range)`, each forward step it completes to
    /// `sink`. Returns how far the sweep may then go ([`KernelSweep::feed_until`]) when the
    /// range may define windows under some profile ([`NameTables::may_define_windows`], the
    /// ranges the page reads): every such range still to come starts at or after this one,
    /// whether this profile reads it or not (`trtllm-skill` reads no inline text, and may read
    /// no range at all: its sweep must still move on). `Err`: such a range starts before the
    /// previous one (the feed needs them in start order, as every export lists NVTX ranges;
    /// give the sweep its windows whole).
    pub fn feed(
        &mut self,
        row: &NvtxRow,
        (strings, threads): (&Strings, &Threads),
        sink: &mut impl StepSink,
        prep: &mut impl FnMut(usize, usize, (Ns, Ns)),
    ) -> Result<Option<Ns>, StepsUnordered> {
        self.names.extend(strings, &self.sw);
        if !self.names.may_define_windows(row) {
            return Ok(None);
        }
        if self.last_start.is_some_and(|last| row.start < last) {
            return Err(StepsUnordered);
        }
        self.last_start = Some(row.start);
        if self.prep.is_some() {
            super::measure::prep_of_row(row, threads, &self.names, &self.sw, prep);
        }
        let parse = |id| self.parser.parse_id(strings, id);
        if let Some(s) = step_of_row(row, &self.sw, parse) {
            self.steps.push(s, &mut |s| sink.step(s))?;
        }
        let pending = self.steps.pending_start();
        Ok(Some(pending.map_or(row.start, |p| p.min(row.start))))
    }

    /// The plan of a trace with `processes` processes once every range was pushed.
    pub fn finish(mut self, processes: usize, sink: &mut impl StepSink) -> Plan {
        let steps = std::mem::replace(&mut self.steps, StepSummarizer::new(&self.sw));
        let found = steps.finish(&mut |s| sink.step(s));
        self.into_plan(found, processes)
    }

    /// The plan, its steps summarised elsewhere ([`Plan::with_steps`]) or by this builder.
    fn into_plan(self, found: StepSummary, processes: usize) -> Plan {
        Plan {
            prep: self
                .prep
                .map_or_else(Vec::new, |p| p.finish(processes, &self.sw)),
            sw: self.sw,
            names: self.names,
            custom_marker: self.custom_marker,
            steps: found.counts,
            context: found.context,
            generation: found.generation,
            launches: None,
        }
    }
}

/// The part of a [`Plan`] a [`KernelSweep`] reads: small, and serialisable so the page's kernel
/// pass (another worker, which holds neither NVTX ranges nor name tables) gets it as bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    sw: Switches,
    skip_m3: bool,
    /// The user's aggregate window (`cfg.window`), else the kernel hull.
    window: Option<(Ns, Ns)>,
    context: Option<IntervalSet>,
    generation: Option<IntervalSet>,
    prep: Vec<PrepRanges>,
    /// Which names are NCCL kernels, by [`crate::model::NameId`].
    nccl: NameFlags,
}

/// A [`SweepPlan`] borrowed from its [`Plan`]: serialises to the same bytes (same fields, same
/// order), which deserialise as a [`SweepPlan`].
#[derive(Debug, Serialize)]
pub struct SweepPlanRef<'p> {
    sw: Switches,
    skip_m3: bool,
    window: Option<(Ns, Ns)>,
    context: Option<&'p IntervalSet>,
    generation: Option<&'p IntervalSet>,
    prep: &'p [PrepRanges],
    nccl: &'p NameFlags,
}

impl SweepPlanRef<'_> {
    /// The plan of a sweep fed its windows and host-prep ranges ([`KernelSweep::fed`]): they
    /// are left out.
    pub fn without_windows(self) -> Self {
        SweepPlanRef {
            context: None,
            generation: None,
            prep: &[],
            ..self
        }
    }

    pub fn to_owned(&self) -> SweepPlan {
        SweepPlan {
            sw: self.sw,
            skip_m3: self.skip_m3,
            window: self.window,
            context: self.context.cloned(),
            generation: self.generation.cloned(),
            prep: self.prep.to_vec(),
            nccl: self.nccl.clone(),
        }
    }
}

/// Facts about the kernels as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    pub kernels: u64,
    /// Devices that ran at least one kernel, ascending. Bit `i` of a device mask is `devices[i]`.
    pub devices: Vec<u32>,
    /// Processes that ran at least one kernel, ascending.
    pub processes: Vec<ProcessIdx>,
    /// Whether any kernel carries a `graphNodeId`.
    pub any_graph_node: bool,
    /// `(first start, last end)` over all kernels.
    pub hull: Option<(Ns, Ns)>,
}

/// One group's figures in a scope: a device (standard) or all devices pooled (`trtllm-skill`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub device: Option<u32>,
    /// Kernels selected by the window (clipped profile: overlapping it; else starting in it).
    pub kernels: u64,
    /// Processes owning those kernels, ascending.
    pub processes: Vec<ProcessIdx>,
    pub busy_ns: Ns,
    /// Busy µs: the clipped ns / 1000, or (unclipped) the float sum over the merged intervals in
    /// ascending order, the reference's accumulation order.
    pub busy_us: f64,
    /// NCCL µs: clipped union, or (unclipped) the raw sum of NCCL kernel durations.
    pub nccl_us: f64,
}

/// Busy time of one process's host-prep ranges (one name pattern) per set of busy devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrepBusy {
    pub process: ProcessIdx,
    /// Index into `names::PREP_PATTERNS`.
    pub pattern: usize,
    /// How long those ranges cover the window (their union ∩ window).
    pub prep_ns: Ns,
    pub by_mask: Vec<(u64, Ns)>,
}

/// Everything kernel-derived about one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeSummary {
    pub window: WindowFacts,
    pub groups: Vec<GroupSummary>,
    /// Standard M3: time inside the window per non-empty mask of busy devices.
    pub busy_by_mask: Vec<(u64, Ns)>,
    /// Standard M3: the same, inside each process's host-prep ranges (∩ window).
    pub prep_busy: Vec<PrepBusy>,
    /// `trtllm-skill` M3: the pooled host-prep ranges inside the window and how much of them
    /// the kernel gaps expose ([`PrepExposure`]).
    pub prep_exposure: Option<PrepExposure>,
}

/// The reference M3 of one window: its pooled host-prep ranges of the first pattern that has
/// ranges fully inside the window's hull, and their exposure over the gaps between consecutive
/// pooled merged kernel intervals (start in the window) that touch any host-prep range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrepExposure {
    /// Index into `names::PREP_PATTERNS`.
    pub pattern: usize,
    pub prep_us: f64,
    pub exposed_us: f64,
}

impl ScopeSummary {
    /// Time covered by the union of the devices in `mask` (by `busy_by_mask`).
    pub fn busy_of(by_mask: &[(u64, Ns)], devices: u64) -> Ns {
        by_mask
            .iter()
            .filter(|&&(m, _)| m & devices != 0)
            .map(|&(_, ns)| ns)
            .sum()
    }
}

/// The result of a sweep: all `detect` needs from the kernel table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    /// The switches and M3 setting the sweep ran under (assembly checks they match its config).
    pub switches: Switches,
    pub skip_m3: bool,
    /// Whether the aggregate window was the user's (`cfg.window`) rather than the kernel hull.
    pub user_window: bool,
    pub facts: KernelFacts,
    pub aggregate: ScopeSummary,
    pub context: Option<ScopeSummary>,
    pub generation: Option<ScopeSummary>,
    /// More than [`MAX_MASK_DEVICES`] devices ran kernels: the per-process M3 of the standard
    /// profile (which needs device masks) was not computed.
    pub device_masks_overflow: bool,
}

impl KernelSummary {
    /// Renumbers processes (`map` from the sweep's ids to another table's): the page's kernel
    /// pass numbers the processes it meets itself, the analysis worker numbers them its way.
    pub fn remap_processes(&mut self, map: impl Fn(ProcessIdx) -> ProcessIdx) {
        let remap_all = |v: &mut Vec<ProcessIdx>| {
            v.iter_mut().for_each(|p| *p = map(*p));
            v.sort_unstable();
            v.dedup();
        };
        remap_all(&mut self.facts.processes);
        let scopes = std::iter::once(&mut self.aggregate)
            .chain(self.context.as_mut())
            .chain(self.generation.as_mut());
        for scope in scopes {
            for g in &mut scope.groups {
                remap_all(&mut g.processes);
            }
            for p in &mut scope.prep_busy {
                p.process = map(p.process);
            }
        }
    }
}

/// A running union of intervals arriving in start order, measured as each merged interval closes.
#[derive(Debug, Clone, Default)]
struct Union {
    current: Option<(Ns, Ns)>,
    /// Monotone position in the clipping window.
    cursor: usize,
    ns: Ns,
    us: f64,
}

impl Union {
    /// Adds `[s, e)`; returns the gap it opens after the previous merged interval, if any.
    fn add(&mut self, s: Ns, e: Ns, clip: Option<&SpanQueue>) -> Option<(Ns, Ns)> {
        if e <= s {
            return None;
        }
        match &mut self.current {
            Some(cur) if s <= cur.1 => {
                // The union covers `[cur.0, s)` whatever comes next: clipped now, so the window
                // spans behind it can go (a device busy for the whole trace is one interval).
                if let Some(w) = clip
                    && s > cur.0
                {
                    self.ns += overlap_at(w, &mut self.cursor, cur.0, s);
                    cur.0 = s;
                }
                cur.1 = cur.1.max(e);
                None
            }
            Some(cur) => {
                let done = *cur;
                *cur = (s, e);
                self.close(done, clip);
                Some((done.1, s))
            }
            None => {
                self.current = Some((s, e));
                None
            }
        }
    }

    fn close(&mut self, (s, e): (Ns, Ns), clip: Option<&SpanQueue>) {
        match clip {
            Some(w) => self.ns += overlap_at(w, &mut self.cursor, s, e),
            None => {
                self.ns += e - s;
                self.us += (e - s) as f64 / 1000.0;
            }
        }
    }

    fn finish(&mut self, clip: Option<&SpanQueue>) {
        if let Some(done) = self.current.take() {
            self.close(done, clip);
        }
    }
}

/// Small `key → count` table (few distinct keys: processes per device, devices per trace).
#[derive(Debug, Clone, Default)]
struct Counts {
    entries: Vec<(u32, u64)>,
}

impl Counts {
    fn add(&mut self, key: u32, n: u64) {
        match self.entries.iter_mut().rev().find(|(k, _)| *k == key) {
            Some((_, c)) => *c += n,
            None => self.entries.push((key, n)),
        }
    }

    /// Keys with a non-zero count, ascending.
    fn keys(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .entries
            .iter()
            .filter(|&&(_, c)| c > 0)
            .map(|&(k, _)| k)
            .collect();
        keys.sort_unstable();
        keys
    }
}

/// One group's running figures in one scope.
#[derive(Debug, Clone, Default)]
struct GroupAcc {
    kernels: u64,
    processes: Counts,
    busy: Union,
    nccl_raw: Ns,
    nccl: Union,
}

/// A queue the sweep reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueueRef {
    /// A scope's window, by scope position.
    Window(usize),
    /// One process's host-prep union of one pattern (standard).
    Prep(usize, usize),
}

/// The windows and host-prep ranges the sweep reads, each held from its slowest reader on.
#[derive(Debug, Default)]
struct Queues {
    /// Per scope (aggregate, then context and generation when the trace has them); `None` for
    /// the kernel hull.
    windows: Vec<Option<SpanQueue>>,
    /// Standard: per process, per pattern, the union of its host-prep ranges.
    prep: Vec<[SpanQueue; 3]>,
    /// `trtllm-skill`: per pattern, the pooled host-prep ranges in table order.
    pooled: Option<[SpanQueue; 3]>,
    /// Whether each pooled pattern's ranges come in start order (gaps can then be dropped).
    pooled_sorted: bool,
    /// The phase windows are spans (first start to last end), not unions.
    span_phases: bool,
}

impl Queues {
    fn get(&self, r: QueueRef) -> Option<&SpanQueue> {
        match r {
            QueueRef::Window(i) => self.windows.get(i)?.as_ref(),
            QueueRef::Prep(p, k) => self.prep.get(p)?.get(k),
        }
    }

    fn window(&self, scope: usize) -> Option<&SpanQueue> {
        self.get(QueueRef::Window(scope))
    }
}

/// Per-mask time accumulators of one window (standard M3), or of host-prep ranges inside it.
#[derive(Debug, Clone, Default)]
struct MaskAcc {
    /// Where time counts: these spans, or `None` for the kernel hull (every busy instant lies
    /// inside it) ...
    spans: Option<QueueRef>,
    /// ... intersected with these, when set (host-prep ranges inside a window).
    within: Option<QueueRef>,
    cursor: usize,
    within_cursor: usize,
    by_mask: Vec<Ns>,
}

impl MaskAcc {
    fn add(&mut self, q: &Queues, a: Ns, b: Ns, mask_id: usize) {
        let ns = match (self.spans, self.within) {
            (Some(s), Some(w)) => match (q.get(s), q.get(w)) {
                (Some(s), Some(w)) => {
                    overlap_within((s, &mut self.cursor), (w, &mut self.within_cursor), a, b)
                }
                _ => 0,
            },
            (Some(s), None) => q
                .get(s)
                .map_or(0, |s| overlap_at(s, &mut self.cursor, a, b)),
            (None, _) => b - a,
        };
        if ns > 0 {
            if self.by_mask.len() <= mask_id {
                self.by_mask.resize(mask_id + 1, 0);
            }
            self.by_mask[mask_id] += ns;
        }
    }
}

/// Standard M3 of one process and pattern in one scope: busy time per mask inside its host-prep
/// ranges ∩ the window, and how long those ranges cover the window.
#[derive(Debug, Clone)]
struct PrepAcc {
    process: ProcessIdx,
    pattern: usize,
    busy: MaskAcc,
    /// `prep ∩ window` measured up to `measured_to`, with cursors of its own.
    inside_ns: Ns,
    measured_to: Ns,
    cursor: usize,
    within_cursor: usize,
}

impl PrepAcc {
    fn new(process: usize, pattern: usize, window: Option<QueueRef>) -> PrepAcc {
        PrepAcc {
            process: process as ProcessIdx,
            pattern,
            busy: MaskAcc {
                spans: Some(QueueRef::Prep(process, pattern)),
                within: window,
                ..MaskAcc::default()
            },
            inside_ns: 0,
            measured_to: Ns::MIN,
            cursor: 0,
            within_cursor: 0,
        }
    }

    /// Measures `prep ∩ window` on `[measured_to, to)`, from `from` at the earliest (the hull
    /// scope's first start).
    fn measure_to(&mut self, q: &Queues, from: Ns, to: Ns) {
        let a = self.measured_to.max(from);
        if to <= a {
            return;
        }
        let Some(prep) = q.get(QueueRef::Prep(self.process as usize, self.pattern)) else {
            return;
        };
        self.inside_ns += match self.busy.within.and_then(|w| q.get(w)) {
            Some(w) => overlap_within(
                (prep, &mut self.cursor),
                (w, &mut self.within_cursor),
                a,
                to,
            ),
            None => overlap_at(prep, &mut self.cursor, a, to),
        };
        self.measured_to = to;
    }
}

/// One window's running state.
#[derive(Clone)]
struct ScopeAcc {
    /// Position in the scope list, which is also its window's queue.
    index: usize,
    /// The phase (0 context, 1 generation) whose window this is; `None`: the aggregate.
    phase: Option<usize>,
    /// `false`: the kernel hull, known only at the end.
    windowed: bool,
    /// Kernels past a phase span still growing are taken as inside it, with the state before
    /// the first of them kept here: a later step of the phase confirms them (it ends after
    /// them), the end of the ranges without one brings the state back.
    speculation: Option<Box<Speculation>>,
    select_cursor: usize,
    groups: Vec<GroupAcc>,
    /// `trtllm-skill` M3, measured as the kernel gaps pass.
    exposure: Option<ExposureAcc>,
    busy_masks: MaskAcc,
    prep_masks: Vec<PrepAcc>,
}

/// Kernels of the hull scope whose membership waits for the hull's end: a zero-length (or
/// damaged, end-before-start) kernel at or after the last end seen so far lies in the half-open
/// hull `[first start, last end)` only if a later kernel ends after its start.
#[derive(Debug, Clone, Copy)]
struct Deferred {
    start: Ns,
    slot: usize,
    process: ProcessIdx,
    kernels: u64,
    nccl_ns: Ns,
}

/// The global sweep over busy-device masks (standard M3): how long each set of simultaneously
/// busy devices lasts, inside each window and each process's prep ranges. The devices of a
/// process are only known at the end; summing the masks that intersect them then gives the busy
/// time of their union exactly.
struct MaskSweep {
    /// Device of each bit, in order of first appearance.
    bits: Vec<u32>,
    /// Per bit: end of the device's current merged busy interval.
    busy_until: Vec<Ns>,
    clock: Ns,
    masks: Vec<u64>,
    mask_ids: HashMap<u64, usize>,
    /// The last mask looked up: the busy set changes far less often than stretches end.
    last_mask: Option<(u64, usize)>,
    overflow: bool,
}

/// A scope's state before it took kernels past its span on speculation, and the host-prep
/// ranges that were then waiting inside the span (per pattern, table order).
#[derive(Clone)]
struct Speculation {
    before: ScopeAcc,
    aside: [Vec<(Ns, Ns)>; 3],
}

/// A sweep fed its phase windows and host-prep ranges as the NVTX ranges are read: the kernel
/// sweep and the launch sweep ([`super::launches::LaunchSweep`]).
pub trait FedSweep {
    /// A forward step `[start, end)` of `phase` (0 context, 1 generation), in start order.
    fn feed_phase(&mut self, phase: usize, start: Ns, end: Ns) -> Result<(), RangesUnordered>;
    /// A host-prep range of `pattern` of process `slot` (0 when pooled), in start order.
    fn feed_prep(
        &mut self,
        slot: usize,
        pattern: usize,
        range: (Ns, Ns),
    ) -> Result<(), RangesUnordered>;
    /// Every range starting before `t` has been fed.
    fn feed_until(&mut self, t: Ns);
    /// Every range has been fed.
    fn feed_done(&mut self);
}

impl FedSweep for KernelSweep {
    fn feed_phase(&mut self, phase: usize, start: Ns, end: Ns) -> Result<(), RangesUnordered> {
        KernelSweep::feed_phase(self, phase, start, end)
    }

    fn feed_prep(
        &mut self,
        slot: usize,
        pattern: usize,
        range: (Ns, Ns),
    ) -> Result<(), RangesUnordered> {
        KernelSweep::feed_prep(self, slot, pattern, range)
    }

    fn feed_until(&mut self, t: Ns) {
        KernelSweep::feed_until(self, t);
    }

    fn feed_done(&mut self) {
        KernelSweep::feed_done(self);
    }
}

/// Kernels between two trims of the queues: what they hold is what lies between the slowest
/// reader and the clock, read again this often.
const TRIM_EVERY: u64 = 1 << 10;

/// Folds kernels, in start order, into a [`KernelSummary`].
///
/// The page runs one sweep per profile and pushes each streamed kernel to both.
pub struct KernelSweep {
    sw: Switches,
    skip_m3: bool,
    user_window: bool,
    nccl: NameFlags,
    /// Group slot → device, in order of first appearance (standard); unused when pooled.
    slots: Vec<u32>,
    /// Aggregate first, then context and generation when the trace has them.
    scopes: Vec<ScopeAcc>,
    queues: Queues,
    /// Standard: which prep queues have accumulators in every scope.
    tracked_prep: Vec<[bool; 3]>,
    has_context: bool,
    has_generation: bool,
    /// Fed mode ([`KernelSweep::fed`]): every range starting before this has been fed
    /// (`Ns::MAX` once all were, and in a sweep given its windows whole).
    fed_until: Ns,
    /// Fed mode: forward steps fed per phase (a phase exists once it has one).
    phase_steps: Option<[u64; 2]>,
    masks: Option<MaskSweep>,
    deferred: Vec<Deferred>,
    order: StartOrder,
    kernels: u64,
    devices: Counts,
    processes: Counts,
    any_graph_node: bool,
    hull: Option<(Ns, Ns)>,
}

impl KernelSweep {
    /// Derives every window known before the pass from the host part of `host` (its kernel
    /// table is not read) under `cfg`'s profile, window, step marker and `skip_m3`; thresholds
    /// are not read.
    pub fn new(host: &Trace, cfg: &DetectConfig) -> KernelSweep {
        KernelSweep::of(Plan::new(host, cfg).sweep_plan(cfg))
    }

    /// The sweep of a plan already built (`detect` builds it once for sweep and assembly; the
    /// page's kernel pass receives it from the other worker).
    pub fn of(mut plan: SweepPlan) -> KernelSweep {
        let sw = plan.sw;
        let aggregate = plan.window.map(|(s, e)| IntervalSet::single(s, e));
        let has_context = plan.context.is_some();
        let has_generation = plan.generation.is_some();
        let windows: Vec<(Option<usize>, Option<SpanQueue>)> =
            [aggregate, plan.context.take(), plan.generation.take()]
                .into_iter()
                .enumerate()
                .filter(|(i, w)| *i == 0 || w.is_some())
                .map(|(i, w)| (i.checked_sub(1), w.map(|w| SpanQueue::of(w.spans()))))
                .collect();
        let phases: Vec<Option<usize>> = windows.iter().map(|w| w.0).collect();
        let windows = windows.into_iter().map(|w| w.1).collect();
        let queues = queues_of(windows, &std::mem::take(&mut plan.prep), &sw);
        let needs_masks = queues.prep.iter().flatten().any(|q| q.end_index() > 0);
        let mut sweep = KernelSweep::with(plan, queues, &phases, needs_masks);
        sweep.has_context = has_context;
        sweep.has_generation = has_generation;
        sweep.fed_until = Ns::MAX;
        sweep.phase_steps = None;
        sweep.track_prep();
        sweep
    }

    /// A sweep over `queues`, one scope per entry of `phases` (`None`: the aggregate), fed.
    fn with(
        plan: SweepPlan,
        queues: Queues,
        phases: &[Option<usize>],
        needs_masks: bool,
    ) -> KernelSweep {
        let sw = plan.sw;
        let scopes: Vec<ScopeAcc> = phases
            .iter()
            .enumerate()
            .map(|(i, &phase)| ScopeAcc::new(i, phase, &queues, &sw))
            .collect();
        KernelSweep {
            sw,
            skip_m3: plan.skip_m3,
            user_window: plan.window.is_some(),
            nccl: plan.nccl,
            slots: Vec::new(),
            scopes,
            tracked_prep: vec![[false; 3]; queues.prep.len()],
            queues,
            has_context: false,
            has_generation: false,
            fed_until: Ns::MIN,
            phase_steps: Some([0; 2]),
            masks: needs_masks.then(MaskSweep::new),
            deferred: Vec::new(),
            order: StartOrder::default(),
            kernels: 0,
            devices: Counts::default(),
            processes: Counts::default(),
            any_graph_node: false,
            hull: None,
        }
    }

    /// A sweep whose phase windows and host-prep ranges are fed as the NVTX ranges are read
    /// ([`KernelSweep::feed_step`], [`KernelSweep::feed_prep`], [`KernelSweep::feed_until`])
    /// rather than given whole: `plan`'s are not read. It holds of them only what lies between
    /// its slowest reader and the feed, so its memory does not grow with the trace.
    pub fn fed(plan: SweepPlan) -> KernelSweep {
        let sw = plan.sw;
        let aggregate = plan
            .window
            .map(|(s, e)| SpanQueue::of(IntervalSet::single(s, e).spans()));
        let skip_m3 = plan.skip_m3;
        let windows = vec![
            aggregate,
            Some(SpanQueue::default()),
            Some(SpanQueue::default()),
        ];
        let mut queues = queues_of(windows, &[], &sw);
        if !sw.prep_per_process && !skip_m3 {
            queues.pooled = Some(Default::default());
            queues.pooled_sorted = true;
        }
        let needs_masks = sw.prep_per_process && !skip_m3;
        KernelSweep::with(plan, queues, &[None, Some(0), Some(1)], needs_masks)
    }

    /// Feeds a forward step of the profile (TP copies merged), in start order.
    pub fn feed_step(&mut self, step: &Step) -> Result<(), RangesUnordered> {
        match phase_of(step) {
            Some(phase) => self.feed_phase(phase, step.start, step.end),
            None => Ok(()),
        }
    }

    /// Feeds a forward step `[start, end)` of `phase` (0 context, 1 generation), in start order.
    pub fn feed_phase(&mut self, phase: usize, start: Ns, end: Ns) -> Result<(), RangesUnordered> {
        let Some(counts) = &mut self.phase_steps else {
            return Ok(());
        };
        let Some(Some(window)) = self.queues.windows.get_mut(phase + 1) else {
            return Ok(());
        };
        counts[phase] += 1;
        window.add_step(self.sw.phase_window, start, end)?;
        // It starts after every kernel taken so far: those past the span so far are inside.
        if let Some(scope) = self.scopes.iter_mut().find(|s| s.phase == Some(phase)) {
            scope.speculation = None;
        }
        Ok(())
    }

    /// Feeds a host-prep range of `pattern` (index into `names::PREP_PATTERNS`) of process
    /// `slot` (standard; 0 when pooled), in start order.
    pub fn feed_prep(
        &mut self,
        slot: usize,
        pattern: usize,
        (s, e): (Ns, Ns),
    ) -> Result<(), RangesUnordered> {
        if self.phase_steps.is_none() || self.skip_m3 || pattern >= 3 {
            return Ok(());
        }
        if let Some(pooled) = &mut self.queues.pooled {
            return pooled[pattern].add_range(s, e);
        }
        let prep = &mut self.queues.prep;
        if prep.len() <= slot {
            prep.resize_with(slot + 1, Default::default);
            self.tracked_prep.resize(slot + 1, [false; 3]);
        }
        prep[slot][pattern].add_union(s, e)?;
        self.track(slot, pattern);
        Ok(())
    }

    /// Every range starting before `t` has been fed: kernels ending before it can be pushed.
    pub fn feed_until(&mut self, t: Ns) {
        self.fed_until = self.fed_until.max(t);
    }

    /// Every range has been fed.
    pub fn feed_done(&mut self) {
        self.fed_until = Ns::MAX;
        let q = &mut self.queues;
        let windows = q.windows.iter_mut().flatten();
        let prep = q.prep.iter_mut().flatten();
        let pooled = q.pooled.iter_mut().flatten();
        windows
            .chain(prep)
            .chain(pooled)
            .for_each(SpanQueue::finish);
    }

    /// Whether a kernel ending at `end` can be pushed: every range that may decide where it
    /// counts has been fed.
    pub fn ready_for(&self, end: Ns) -> bool {
        fed_past(self.fed_until, end)
    }

    /// Adds one kernel. Kernels must come in non-decreasing `start`: one that starts before its
    /// predecessor is refused with [`OutOfOrder`], and the sweep is then unusable (the caller
    /// falls back to loading and sorting the table). A fed sweep takes a kernel only once it
    /// is [`KernelSweep::ready_for`] its end.
    pub fn push(&mut self, ev: KernelEvent) -> Result<(), OutOfOrder> {
        debug_assert!(self.ready_for(ev.end), "a kernel pushed past the feed");
        self.order.check(&ev)?;
        let (first, last_end) = match self.hull {
            Some((first, last_end)) => (first, last_end.max(ev.end)),
            None => (ev.start, ev.end),
        };
        self.hull = Some((first, last_end));
        self.note_facts(&ev);
        let slot = self.slot(ev.device);
        let nccl = flag(&self.nccl, ev.short_name);
        self.resolve_deferred(last_end);
        let q = &self.queues;
        for scope in self.scopes.iter_mut() {
            if scope.windowed {
                scope.push(&ev, slot, nccl, &self.sw, q);
            } else {
                let pending =
                    scope.push_to_hull(&ev, (slot, nccl), (&self.sw, q), (first, last_end));
                if let Some(d) = pending {
                    defer(&mut self.deferred, d);
                }
            }
        }
        if let Some(m) = &mut self.masks {
            m.push(&ev, &mut self.scopes, q);
        }
        if self.kernels.is_multiple_of(TRIM_EVERY) {
            self.trim(ev.start);
        }
        Ok(())
    }

    /// Ends the pass: closes every running union and resolves the kernel hull.
    pub fn finish(mut self) -> KernelSummary {
        self.feed_done();
        let hull = self.hull;
        let q = &self.queues;
        for scope in &mut self.scopes {
            scope.end_speculation(q, hull);
        }
        if let Some(counts) = self.phase_steps {
            self.has_context = counts[0] > 0;
            self.has_generation = counts[1] > 0;
        }
        if let Some(m) = &mut self.masks {
            m.finish(&mut self.scopes, &self.queues);
        }
        // Deferred kernels left start at or after the hull's end: outside it.
        let devices = self.devices.keys();
        // Masks are remapped to positions in `devices`, which also lists devices that ran only
        // zero-length kernels (no bit of their own): past 64 positions there is no mask either.
        let any_prep = self.tracked_prep.iter().flatten().any(|&t| t);
        let overflow = any_prep
            && self
                .masks
                .as_ref()
                .is_some_and(|m| m.overflow || devices.len() > MAX_MASK_DEVICES);
        let remap = self
            .masks
            .as_ref()
            .filter(|m| !m.overflow)
            .map(|m| m.remapped(&devices))
            .unwrap_or_default();
        let order = self.group_order();
        let end = Ends {
            hull: self.hull,
            order: &order,
            remap: &remap,
        };
        let q = &self.queues;
        let exists = [self.has_context, self.has_generation];
        let mut scopes: Vec<(Option<usize>, ScopeSummary)> = self
            .scopes
            .into_iter()
            .filter(|s| s.phase.is_none_or(|p| exists[p]))
            .map(|s| (s.phase, s.finish(q, &self.sw, &end)))
            .collect();
        let mut take = |phase: Option<usize>| {
            let i = scopes.iter().position(|s| s.0 == phase)?;
            Some(scopes.swap_remove(i).1)
        };
        let aggregate = take(None).unwrap_or_else(|| empty_scope(hull_facts(self.hull)));
        let context = take(Some(0));
        let generation = take(Some(1));
        KernelSummary {
            switches: self.sw,
            skip_m3: self.skip_m3,
            user_window: self.user_window,
            facts: KernelFacts {
                kernels: self.kernels,
                devices,
                processes: self.processes.keys(),
                any_graph_node: self.any_graph_node,
                hull: self.hull,
            },
            aggregate,
            context,
            generation,
            device_masks_overflow: overflow,
        }
    }

    /// How many window and host-prep spans the sweep holds now (what a fed sweep keeps of
    /// them; tests and benchmarks read it).
    pub fn held_spans(&self) -> usize {
        let q = &self.queues;
        let windows = q.windows.iter().flatten().map(SpanQueue::held_count);
        let prep = q.prep.iter().flatten().map(SpanQueue::held_count);
        let pooled = q.pooled.iter().flatten().map(SpanQueue::held_count);
        windows.chain(prep).chain(pooled).sum()
    }

    fn note_facts(&mut self, ev: &KernelEvent) {
        self.kernels += 1;
        self.devices.add(ev.device, 1);
        self.processes.add(ev.process, 1);
        self.any_graph_node |= ev.graph_node != 0;
    }

    /// The group a kernel belongs to: its device's slot, or the one pooled group.
    fn slot(&mut self, device: u32) -> usize {
        if !self.sw.per_device {
            return 0;
        }
        if let Some(i) = self.slots.iter().position(|&d| d == device) {
            return i;
        }
        self.slots.push(device);
        self.slots.len() - 1
    }

    /// `(device, slot)` of every group in output order: ascending device, or the pooled group.
    fn group_order(&self) -> Vec<(Option<u32>, usize)> {
        if !self.sw.per_device {
            return vec![(None, 0)];
        }
        let mut order: Vec<(Option<u32>, usize)> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, &d)| (Some(d), i))
            .collect();
        order.sort_unstable();
        order
    }

    /// Deferred hull kernels that start before the last end so far are inside the hull.
    fn resolve_deferred(&mut self, last_end: Ns) {
        let ready = self.deferred.partition_point(|d| d.start < last_end);
        if ready == 0 {
            return;
        }
        if let Some(scope) = self.scopes.first_mut() {
            for d in self.deferred.drain(..ready) {
                scope.count(d.slot, d.process, d.kernels, d.nccl_ns);
            }
        }
    }

    /// Gives every scope accumulators for the host-prep queues that have ranges (standard).
    fn track_prep(&mut self) {
        for p in 0..self.queues.prep.len() {
            (0..3).for_each(|k| self.track(p, k));
        }
    }

    /// Gives every scope accumulators for process `p`'s host-prep queue of pattern `k`, once it
    /// has a range.
    fn track(&mut self, p: usize, k: usize) {
        let has_ranges = self.queues.prep[p][k].end_index() > 0;
        let tracked = &mut self.tracked_prep[p][k];
        if *tracked || !has_ranges {
            return;
        }
        *tracked = true;
        for scope in &mut self.scopes {
            let window = scope.windowed.then_some(QueueRef::Window(scope.index));
            scope.prep_masks.push(PrepAcc::new(p, k, window));
        }
    }

    /// Measures what waits on the spans behind `now` (no kernel starts before it any more),
    /// then drops every span all readers have passed.
    fn trim(&mut self, now: Ns) {
        let hull_start = self.hull.map_or(now, |h| h.0);
        let last_end = self.hull.map_or(now, |h| h.1);
        let q = &self.queues;
        for scope in &mut self.scopes {
            let from = if scope.windowed { Ns::MIN } else { hull_start };
            scope
                .prep_masks
                .iter_mut()
                .for_each(|m| m.measure_to(q, from, now));
            let bounds = scope.exposure_bounds(q, (hull_start, last_end), self.fed_until);
            if let Some(x) = &mut scope.exposure {
                // Gaps to come start where the open merged interval ends, or later than now.
                let open = scope.groups.first().and_then(|g| g.busy.current);
                x.settle(q, bounds, Some(open.map_or(now, |c| c.1)), now);
            }
        }
        // Every reader asks from here on: the kernels' starts, the mask sweep's clock, and the
        // open merged intervals clipped to a window (they start earlier).
        let clock = self.masks.as_ref().map(|m| m.clock);
        let low = clock.map_or(now, |c| c.min(now));
        let clip = self.sw.clip_to_window;
        for (i, w) in self.queues.windows.iter_mut().enumerate() {
            // A phase span is one span, and still growing while it is fed.
            let span = self.queues.span_phases && i > 0;
            if let (Some(w), Some(scope), false) = (w, self.scopes.get(i), span) {
                w.trim_before(scope.open_since(low, clip));
            }
        }
        for queue in self.queues.prep.iter_mut().flatten() {
            queue.trim_before(low);
        }
        if let Some(pooled) = &mut self.queues.pooled {
            for (k, queue) in pooled.iter_mut().enumerate() {
                let readers = self.scopes.iter().filter_map(|s| s.exposure.as_ref());
                if let Some(low) = readers.map(|x| x.cursor(k)).min() {
                    queue.trim_to(low);
                }
            }
        }
    }
}

/// The queues of a plan held whole: its windows, and its host-prep ranges as per-process unions
/// (standard) or pooled lists in table order (`trtllm-skill`).
fn queues_of(windows: Vec<Option<SpanQueue>>, prep: &[PrepRanges], sw: &Switches) -> Queues {
    if sw.prep_per_process {
        let prep = prep
            .iter()
            .map(|r| {
                r.by_pattern
                    .each_ref()
                    .map(|ranges| SpanQueue::of(IntervalSet::from_ranges(ranges).spans()))
            })
            .collect();
        return Queues {
            windows,
            prep,
            span_phases: sw.phase_window == PhaseWindow::Span,
            ..Queues::default()
        };
    }
    let pooled = prep
        .first()
        .map(|r| r.by_pattern.each_ref().map(|l| SpanQueue::of(l)));
    let pooled_sorted = prep
        .first()
        .is_none_or(|r| r.by_pattern.iter().all(|l| l.is_sorted_by_key(|r| r.0)));
    Queues {
        windows,
        prep: Vec::new(),
        pooled,
        pooled_sorted,
        span_phases: sw.phase_window == PhaseWindow::Span,
    }
}

/// What every scope needs to end: the kernel hull, the group order and the mask remapping.
struct Ends<'a> {
    hull: Option<(Ns, Ns)>,
    order: &'a [(Option<u32>, usize)],
    remap: &'a [u64],
}

/// The facts of the hull window `[first start, last end)`.
fn hull_facts(hull: Option<(Ns, Ns)>) -> WindowFacts {
    hull.map_or_else(WindowFacts::default, |(s, e)| {
        WindowFacts::of(&IntervalSet::single(s, e))
    })
}

/// Adds a deferred kernel, merging it with an entry of the same start, group and process.
fn defer(list: &mut Vec<Deferred>, d: Deferred) {
    let same = list
        .iter_mut()
        .rev()
        .take_while(|x| x.start == d.start)
        .find(|x| x.slot == d.slot && x.process == d.process);
    match same {
        Some(x) => {
            x.kernels += d.kernels;
            x.nccl_ns += d.nccl_ns;
        }
        None => list.push(d),
    }
}

fn empty_scope(window: WindowFacts) -> ScopeSummary {
    ScopeSummary {
        window,
        groups: Vec::new(),
        busy_by_mask: Vec::new(),
        prep_busy: Vec::new(),
        prep_exposure: None,
    }
}

impl ScopeAcc {
    fn new(index: usize, phase: Option<usize>, q: &Queues, sw: &Switches) -> ScopeAcc {
        let windowed = q.window(index).is_some();
        let window = windowed.then_some(QueueRef::Window(index));
        ScopeAcc {
            index,
            phase,
            windowed,
            speculation: None,
            busy_masks: MaskAcc {
                spans: window,
                ..MaskAcc::default()
            },
            select_cursor: 0,
            // The pooled group exists even in a window without kernels.
            groups: if sw.per_device {
                Vec::new()
            } else {
                vec![GroupAcc::default()]
            },
            exposure: q
                .pooled
                .as_ref()
                .map(|pooled| ExposureAcc::new(pooled, q.pooled_sorted)),
            prep_masks: Vec::new(),
        }
    }

    /// The window's queue, when it has one and the profile clips to it.
    fn clip<'q>(&self, q: &'q Queues, sw: &Switches) -> Option<&'q SpanQueue> {
        sw.clip_to_window.then(|| q.window(self.index)).flatten()
    }

    /// A kernel for a window known in advance: selected by the profile's membership rule.
    fn push(&mut self, ev: &KernelEvent, slot: usize, nccl: bool, sw: &Switches, q: &Queues) {
        if self.selects(ev, sw.clip_to_window, q) {
            self.add(ev, slot, nccl, sw, q);
        }
    }

    /// A kernel for the hull window `[first start, last end)`: every kernel with `end > start`
    /// is inside; the others may have to wait for the hull's end (returned to be deferred).
    fn push_to_hull(
        &mut self,
        ev: &KernelEvent,
        (slot, nccl): (usize, bool),
        (sw, q): (&Switches, &Queues),
        (first, last_end): (Ns, Ns),
    ) -> Option<Deferred> {
        self.ensure_group(slot);
        if ev.end > ev.start || ev.start < last_end {
            // Clipped profile: `end > window start` too (a zero-length kernel at the first start is out).
            if !(sw.clip_to_window && ev.end <= first) {
                self.add_clipped(ev, slot, nccl, sw, (None, q));
            }
            return None;
        }
        if sw.clip_to_window && ev.end <= first {
            return None;
        }
        Some(Deferred {
            start: ev.start,
            slot,
            process: ev.process,
            kernels: 1,
            nccl_ns: if nccl { ev.end - ev.start } else { 0 },
        })
    }

    fn ensure_group(&mut self, slot: usize) {
        if self.groups.len() <= slot {
            self.groups.resize_with(slot + 1, GroupAcc::default);
        }
    }

    /// The old `in_window` (unclipped: start in a `[start, end)` span) and `overlaps` (clipped:
    /// `end > window start` and the kernel overlaps a span; zero-length kernels count inside)
    /// rules, with a cursor that only moves forward because starts do.
    fn selects(&mut self, ev: &KernelEvent, clip: bool, q: &Queues) -> bool {
        let Some(w) = q.window(self.index) else {
            return true;
        };
        if q.span_phases && self.phase.is_some() && !clip {
            return self.selects_in_span(ev, w, q);
        }
        let Some((ws, _)) = seek(w, &mut self.select_cursor, ev.start) else {
            return false;
        };
        if !clip {
            return ws <= ev.start;
        }
        let hs = w.facts().hull.map_or(ws, |h| h.0);
        ev.end > hs && (ws < ev.end || (ev.start == ev.end && ws <= ev.start))
    }

    /// The unclipped rule (start in `[first start, last end)`) for a phase span, which may
    /// still grow while it is fed: a kernel past its end so far is taken on speculation.
    fn selects_in_span(&mut self, ev: &KernelEvent, w: &SpanQueue, q: &Queues) -> bool {
        let Some(first) = w.first_start() else {
            // No step of the phase starts by the feed, which is past this kernel's end.
            return false;
        };
        if ev.start < first {
            return false;
        }
        let end = w.facts().hull.map_or(first, |h| h.1);
        if ev.start < end {
            return true;
        }
        if w.complete() {
            return false;
        }
        if self.speculation.is_none() {
            self.speculate(q, end);
        }
        true
    }

    /// Keeps the state before the first kernel past the span's end so far, with the host-prep
    /// ranges still waiting inside the span (they may need gaps this kernel would close).
    fn speculate(&mut self, q: &Queues, end: Ns) {
        let mut aside: [Vec<(Ns, Ns)>; 3] = Default::default();
        if let (Some(x), Some(pooled)) = (&self.exposure, &q.pooled) {
            for (k, queue) in pooled.iter().enumerate() {
                let from = x.patterns[k].next.max(queue.first_held());
                aside[k] = (from..queue.end_index())
                    .filter_map(|i| queue.span(i))
                    .filter(|&(_, e)| e <= end)
                    .collect();
            }
        }
        let before = ScopeAcc {
            speculation: None,
            ..self.clone()
        };
        self.speculation = Some(Box::new(Speculation { before, aside }));
    }

    /// No later step confirmed the kernels taken past the span: back to the state before
    /// them, the ranges waiting inside the span measured against it, none after.
    fn end_speculation(&mut self, q: &Queues, hull: Option<(Ns, Ns)>) {
        let Some(spec) = self.speculation.take() else {
            return;
        };
        let Speculation { before, aside } = *spec;
        *self = before;
        let bounds = self.exposure_bounds(q, hull.unwrap_or((0, 0)), Ns::MAX);
        let (Some(x), Some(pooled)) = (&mut self.exposure, &q.pooled) else {
            return;
        };
        x.settle_aside(&aside, bounds);
        for (k, queue) in pooled.iter().enumerate() {
            x.patterns[k].next = queue.end_index();
        }
    }

    /// Adds a selected kernel to its group.
    fn add(&mut self, ev: &KernelEvent, slot: usize, nccl: bool, sw: &Switches, q: &Queues) {
        let clip = self.clip(q, sw);
        self.add_clipped(ev, slot, nccl, sw, (clip, q));
    }

    /// Adds a kernel to its group, its busy time clipped to `clip` (the hull scope has nothing
    /// to clip to but the hull itself).
    fn add_clipped(
        &mut self,
        ev: &KernelEvent,
        slot: usize,
        nccl: bool,
        sw: &Switches,
        (clip, q): (Option<&SpanQueue>, &Queues),
    ) {
        self.ensure_group(slot);
        let g = &mut self.groups[slot];
        let gap = g.busy.add(ev.start, ev.end, clip);
        if nccl && sw.clip_to_window {
            g.nccl.add(ev.start, ev.end, clip);
        }
        self.count(
            slot,
            ev.process,
            1,
            if nccl { ev.end - ev.start } else { 0 },
        );
        if let (Some(gap), Some(x), Some(pooled)) = (gap, &mut self.exposure, &q.pooled) {
            x.gap(pooled, gap);
        }
    }

    /// Counts kernels of one group and process (their busy time is handled by [`Union`]).
    fn count(&mut self, slot: usize, process: ProcessIdx, kernels: u64, nccl_ns: Ns) {
        self.ensure_group(slot);
        let g = &mut self.groups[slot];
        g.kernels += kernels;
        g.processes.add(process, kernels);
        g.nccl_raw += nccl_ns;
    }

    /// The earliest time this scope's window is still read at: `low`, or the start of an open
    /// merged interval clipped to it.
    fn open_since(&self, low: Ns, clip: bool) -> Ns {
        let open = self
            .groups
            .iter()
            .flat_map(|g| [g.busy.current, g.nccl.current]);
        open.flatten()
            .filter(|_| clip)
            .map(|c| c.0)
            .fold(low, Ns::min)
    }

    /// `(start, end bound, whether the end is final)` of the window the `trtllm-skill` M3
    /// counts ranges inside: the window's hull, or the kernel hull so far.
    fn exposure_bounds(&self, q: &Queues, (first, last_end): (Ns, Ns), fed: Ns) -> ExposureBounds {
        match q.window(self.index) {
            Some(w) => {
                let (start, end) = w.facts().hull.unwrap_or((Ns::MAX, Ns::MIN));
                let first = if q.span_phases {
                    w.first_start()
                } else {
                    w.facts().hull.map(|h| h.0)
                };
                // A window without a span yet starts at or after the feed.
                let start = first.unwrap_or(if w.complete() { start } else { fed });
                ExposureBounds {
                    start,
                    // On speculation the span reaches the feed (a later step ends past it).
                    end: if self.speculation.is_some() { fed } else { end },
                    end_final: w.complete(),
                }
            }
            None => ExposureBounds {
                start: first,
                end: last_end,
                end_final: false,
            },
        }
    }

    fn finish(mut self, q: &Queues, sw: &Switches, end: &Ends<'_>) -> ScopeSummary {
        let clip = self.clip(q, sw);
        let groups = end
            .order
            .iter()
            .map(|&(device, slot)| {
                let mut g = self.groups.get(slot).cloned().unwrap_or_default();
                g.busy.finish(clip);
                g.nccl.finish(clip);
                group_summary(device, g, sw.clip_to_window)
            })
            .collect();
        let window = match q.window(self.index) {
            Some(w) => w.facts(),
            None => hull_facts(end.hull),
        };
        let (first, last_end) = end.hull.unwrap_or((0, 0));
        let (from, to) = if self.windowed {
            (Ns::MIN, Ns::MAX)
        } else {
            (first, last_end)
        };
        let mut prep_busy: Vec<PrepBusy> = self
            .prep_masks
            .iter_mut()
            .map(|m| {
                m.measure_to(q, from, to);
                PrepBusy {
                    process: m.process,
                    pattern: m.pattern,
                    prep_ns: m.inside_ns,
                    by_mask: remap_masks(&m.busy.by_mask, end.remap),
                }
            })
            .collect();
        prep_busy.sort_by_key(|b| (b.process, b.pattern));
        let mut bounds = self.exposure_bounds(q, (first, last_end), Ns::MAX);
        bounds.end_final = true;
        let prep_exposure = self.exposure.take().and_then(|mut x| {
            x.settle(q, bounds, Some(Ns::MAX), Ns::MAX);
            x.finish()
        });
        ScopeSummary {
            window,
            groups,
            busy_by_mask: remap_masks(&self.busy_masks.by_mask, end.remap),
            prep_busy,
            prep_exposure,
        }
    }
}

fn group_summary(device: Option<u32>, g: GroupAcc, clip: bool) -> GroupSummary {
    let (busy_us, nccl_us) = if clip {
        (g.busy.ns as f64 / 1000.0, g.nccl.ns as f64 / 1000.0)
    } else {
        (g.busy.us, g.nccl_raw as f64 / 1000.0)
    };
    GroupSummary {
        device,
        kernels: g.kernels,
        processes: g.processes.keys(),
        busy_ns: g.busy.ns,
        busy_us,
        nccl_us,
    }
}

/// Mask ids → masks over sorted device positions, dropping empty entries.
fn remap_masks(by_id: &[Ns], remap: &[u64]) -> Vec<(u64, Ns)> {
    by_id
        .iter()
        .enumerate()
        .filter(|&(_, &ns)| ns > 0)
        .filter_map(|(id, &ns)| Some((*remap.get(id)?, ns)))
        .collect()
}

/// Where `trtllm-skill` M3 counts a host-prep range: fully inside `[start, end]`, with `end`
/// only a lower bound until `end_final`.
#[derive(Debug, Clone, Copy)]
struct ExposureBounds {
    start: Ns,
    end: Ns,
    end_final: bool,
}

/// The reference M3 of one window, measured as the kernels pass: per pattern, the pooled
/// host-prep ranges inside the window's hull, in table order, and how much of them the gaps
/// between consecutive pooled merged kernel intervals expose. A range is measured once no later
/// gap can reach it (the open merged interval ends after it), in table order so the float sums
/// are the reference's, bit for bit; the gaps are kept only while a range may still need them.
#[derive(Clone)]
struct ExposureAcc {
    near: NearPrep,
    /// The gaps that touch some range, ascending.
    gaps: VecDeque<(Ns, Ns)>,
    /// Ranges come in start order: a gap that ends before the next range starts can go.
    drop_gaps: bool,
    patterns: [PatternExposure; 3],
}

/// One pattern's running reference M3.
#[derive(Debug, Clone, Copy, Default)]
struct PatternExposure {
    /// The next range (table order) not yet measured.
    next: usize,
    /// Whether any range lies inside the window.
    inside: bool,
    prep_us: f64,
    exposed_us: f64,
}

impl PatternExposure {
    /// Adds a range inside the window, exposed by the `gaps` (ascending) it overlaps.
    fn take(&mut self, gaps: &[(Ns, Ns)], (s, e): (Ns, Ns)) {
        self.inside = true;
        self.prep_us += (e - s) as f64 / 1000.0;
        let first = gaps.partition_point(|&(_, ge)| ge <= s);
        for &(gs, ge) in gaps[first..].iter().take_while(|&&(gs, _)| gs < e) {
            self.exposed_us += (e.min(ge) - s.max(gs)).max(0) as f64 / 1000.0;
        }
    }
}

impl ExposureAcc {
    fn new(pooled: &[SpanQueue; 3], sorted: bool) -> ExposureAcc {
        ExposureAcc {
            near: NearPrep::new(pooled, sorted),
            gaps: VecDeque::new(),
            drop_gaps: sorted,
            patterns: [PatternExposure::default(); 3],
        }
    }

    fn cursor(&self, pattern: usize) -> usize {
        self.patterns[pattern].next.min(self.near.next[pattern])
    }

    /// A gap between merged kernel intervals (after every gap before it), kept if it touches
    /// a range (the reference loop visits only gaps overlapping a range: no sum changes).
    fn gap(&mut self, pooled: &[SpanQueue; 3], gap: (Ns, Ns)) {
        if self.near.touches(pooled, gap) {
            self.gaps.push_back(gap);
        }
    }

    /// Measures, in table order, each range no gap to come can reach (it ends by `settled`,
    /// the open merged interval's end) and whose place against the window is decided; `now`:
    /// no range still to arrive starts before it.
    fn settle(&mut self, q: &Queues, b: ExposureBounds, settled: Option<Ns>, now: Ns) {
        let Some(pooled) = &q.pooled else {
            return;
        };
        self.near.pass(pooled, now);
        let settled = settled.unwrap_or(Ns::MIN);
        let gaps = self.gaps.make_contiguous();
        for (k, queue) in pooled.iter().enumerate() {
            let x = &mut self.patterns[k];
            x.next = x.next.max(queue.first_held());
            while let Some((s, e)) = queue.span(x.next) {
                let outside = s < b.start || (b.end_final && e > b.end);
                if !outside && (e > settled || e > b.end) {
                    break;
                }
                x.next += 1;
                if !outside {
                    x.take(gaps, (s, e));
                }
            }
        }
        if self.drop_gaps {
            let next_start = pooled
                .iter()
                .zip(&self.patterns)
                .filter_map(|(queue, x)| queue.span(x.next).map(|r| r.0))
                .fold(now, Ns::min);
            let done = self.gaps.partition_point(|&(_, ge)| ge <= next_start);
            self.gaps.drain(..done);
        }
    }

    /// Measures ranges set aside by a speculation that ended, against the final window.
    fn settle_aside(&mut self, aside: &[Vec<(Ns, Ns)>; 3], b: ExposureBounds) {
        let gaps = self.gaps.make_contiguous();
        for (x, ranges) in self.patterns.iter_mut().zip(aside) {
            for &(s, e) in ranges {
                if s >= b.start && e <= b.end {
                    x.take(gaps, (s, e));
                }
            }
        }
    }

    /// The first pattern with a range inside the window, and its exposure.
    fn finish(self) -> Option<PrepExposure> {
        let (pattern, x) = self.patterns.iter().enumerate().find(|(_, x)| x.inside)?;
        (x.prep_us > 0.0).then_some(PrepExposure {
            pattern,
            prep_us: x.prep_us,
            exposed_us: x.exposed_us,
        })
    }
}

/// Whether gaps between kernels touch a pooled host-prep range, asked in ascending order
/// (the gaps of one union). Without a merged copy of the ranges when each pattern's are in
/// start order (NVTX tables are, in every export seen): per pattern, the latest end among the
/// ranges starting before the current gap's end.
#[derive(Clone)]
struct NearPrep {
    /// Per pattern: the next range not yet started, and the latest end of those before it.
    next: [usize; 3],
    max_end: [Ns; 3],
    /// Ranges out of start order (all held): their union, and a cursor in it.
    merged: Option<(IntervalSet, usize)>,
}

impl NearPrep {
    fn new(pooled: &[SpanQueue; 3], sorted: bool) -> NearPrep {
        let merged = (!sorted).then(|| {
            let all = pooled
                .iter()
                .flat_map(|q| (q.first_held()..q.end_index()).filter_map(|i| q.span(i)))
                .collect();
            (IntervalSet::from_unsorted(all), 0)
        });
        NearPrep {
            next: [0; 3],
            max_end: [Ns::MIN; 3],
            merged,
        }
    }

    /// Takes in the ranges starting before `t`: every gap still to be asked ends after it.
    fn pass(&mut self, pooled: &[SpanQueue; 3], t: Ns) {
        if self.merged.is_some() {
            return;
        }
        for (p, queue) in pooled.iter().enumerate() {
            self.next[p] = self.next[p].max(queue.first_held());
            while let Some((s, e)) = queue.span(self.next[p]).filter(|r| r.0 < t) {
                if e > s {
                    self.max_end[p] = self.max_end[p].max(e);
                }
                self.next[p] += 1;
            }
        }
    }

    /// Whether `(gs, ge)` (positive, after every gap asked before) overlaps a range of
    /// positive length.
    fn touches(&mut self, pooled: &[SpanQueue; 3], (gs, ge): (Ns, Ns)) -> bool {
        if let Some((set, cursor)) = &mut self.merged {
            return seek(set.spans(), cursor, gs).is_some_and(|(s, _)| s < ge);
        }
        self.pass(pooled, ge);
        self.max_end.iter().any(|&end| end > gs)
    }
}

impl MaskSweep {
    fn new() -> MaskSweep {
        MaskSweep {
            bits: Vec::new(),
            busy_until: Vec::new(),
            clock: Ns::MIN,
            masks: Vec::new(),
            mask_ids: HashMap::new(),
            last_mask: None,
            overflow: false,
        }
    }

    fn push(&mut self, ev: &KernelEvent, scopes: &mut [ScopeAcc], q: &Queues) {
        if self.overflow {
            return;
        }
        self.advance(ev.start, scopes, q);
        if ev.end <= ev.start {
            return;
        }
        match self.bit(ev.device) {
            Some(b) => self.busy_until[b] = self.busy_until[b].max(ev.end),
            None => self.overflow = true,
        }
    }

    fn finish(&mut self, scopes: &mut [ScopeAcc], q: &Queues) {
        if self.overflow {
            return;
        }
        let end = self.busy_until.iter().copied().max().unwrap_or(Ns::MIN);
        self.advance(end, scopes, q);
    }

    /// The device's bit; `None` past [`MAX_MASK_DEVICES`] devices.
    fn bit(&mut self, device: u32) -> Option<usize> {
        if let Some(b) = self.bits.iter().position(|&d| d == device) {
            return Some(b);
        }
        if self.bits.len() >= MAX_MASK_DEVICES {
            return None;
        }
        self.bits.push(device);
        self.busy_until.push(Ns::MIN);
        Some(self.bits.len() - 1)
    }

    /// Moves the clock to `to` (no kernel starts before it any more), crediting each stretch
    /// of constant busy-device mask to every window and prep accumulator.
    fn advance(&mut self, to: Ns, scopes: &mut [ScopeAcc], q: &Queues) {
        while self.clock < to {
            let mut next = to;
            let mut mask = 0u64;
            for (b, &until) in self.busy_until.iter().enumerate() {
                if until > self.clock {
                    mask |= 1 << b;
                    next = next.min(until);
                }
            }
            if mask != 0 {
                let id = self.mask_id(mask);
                for s in scopes.iter_mut() {
                    s.busy_masks.add(q, self.clock, next, id);
                    for m in &mut s.prep_masks {
                        m.busy.add(q, self.clock, next, id);
                    }
                }
            }
            self.clock = next;
        }
    }

    fn mask_id(&mut self, mask: u64) -> usize {
        if let Some((m, id)) = self.last_mask
            && m == mask
        {
            return id;
        }
        let next = self.masks.len();
        let id = *self.mask_ids.entry(mask).or_insert(next);
        if id == next {
            self.masks.push(mask);
        }
        self.last_mask = Some((mask, id));
        id
    }

    /// Each mask id's mask over positions in the sorted device list (`facts.devices`).
    fn remapped(&self, sorted: &[u32]) -> Vec<u64> {
        let pos: Vec<u32> = self
            .bits
            .iter()
            .map(|d| sorted.binary_search(d).map_or(0, |i| i as u32))
            .collect();
        self.masks
            .iter()
            .map(|&m| {
                (0..self.bits.len())
                    .filter(|&b| m & (1 << b) != 0)
                    .fold(0u64, |acc, b| acc | 1u64.checked_shl(pos[b]).unwrap_or(0))
            })
            .collect()
    }
}

/// Whether `t` lies in one of the window's `[start, end)` intervals.
#[cfg(test)]
fn in_window(window: &IntervalSet, t: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, e)| e <= t);
    i < spans.len() && spans[i].0 <= t
}

/// Whether `[s, e)` overlaps the window (zero-length intervals count when they lie inside).
#[cfg(test)]
fn overlaps(window: &IntervalSet, s: Ns, e: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, we)| we <= s);
    i < spans.len() && (spans[i].0 < e || (s == e && spans[i].0 <= s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{detect, detect_with_kernels};
    use crate::model::{PresentTables, Strings};
    use crate::profile::Profile;

    const PREP: &str = "[Executor] _prepare_inputs";

    #[test]
    fn window_membership_is_half_open() {
        let w = IntervalSet::from_unsorted(vec![(10, 20), (30, 40)]);
        assert!(in_window(&w, 10) && in_window(&w, 19) && in_window(&w, 30));
        assert!(
            !in_window(&w, 20) && !in_window(&w, 25) && !in_window(&w, 40) && !in_window(&w, 5)
        );
        assert!(
            overlaps(&w, 15, 35)
                && overlaps(&w, 19, 21)
                && !overlaps(&w, 20, 30)
                && !overlaps(&w, 0, 10)
        );
    }

    /// One process (one thread) with kernels `(start, end, device)` and host-prep NVTX ranges.
    fn trace(kernels: &[(Ns, Ns, u32)], prep: &[(Ns, Ns)]) -> Trace {
        let mut t = Trace {
            strings: Strings::from_rows(vec![(0, PREP.into()), (1, "gemm".into())]),
            present: PresentTables {
                kernels: true,
                nvtx: true,
                ..PresentTables::default()
            },
            ..Trace::default()
        };
        let thread = t.threads.intern(0x0100_0000_0000_0001, &mut t.processes);
        for &(s, e) in prep {
            t.nvtx.push_range((s, e), thread, 0);
        }
        let process = t.threads.process[thread as usize];
        for &(s, e, d) in kernels {
            let k = &mut t.kernels;
            k.start.push(s);
            k.end.push(e);
            k.device.push(d);
            k.process.push(process);
            k.short_name.push(1);
        }
        t
    }

    /// Deterministic pseudo-random intervals `[s, s + len)` over `0..span`, in start order.
    fn random_ranges(seed: u64, n: usize, span: Ns) -> Vec<(Ns, Ns)> {
        let mut x = seed;
        let mut next = move |m: Ns| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as Ns
        };
        let mut out: Vec<(Ns, Ns)> = (0..n)
            .map(|_| {
                let s = next(span);
                (s, s + next(40))
            })
            .collect();
        out.sort_by_key(|r| r.0);
        out
    }

    #[test]
    fn busy_time_inside_prep_within_a_window_is_the_intersections_overlap() {
        for seed in 1..40 {
            let prep = IntervalSet::from_unsorted(random_ranges(seed, 30, 400));
            let window = IntervalSet::from_unsorted(random_ranges(seed * 7 + 3, 20, 400));
            let both = prep.intersection(&window);
            let (mut c1, mut c2) = (0, 0);
            let mut a = 0;
            for (i, (_, len)) in random_ranges(seed * 13, 60, 400).into_iter().enumerate() {
                let b = a + len + (i % 3) as Ns;
                let got = overlap_within((prep.spans(), &mut c1), (window.spans(), &mut c2), a, b);
                assert_eq!(got, both.intersection_measure(&IntervalSet::single(a, b)));
                a = b;
            }
        }
    }

    #[test]
    fn a_gap_touches_pooled_prep_ranges_as_their_union_says() {
        for seed in 1..40 {
            let mut by_pattern: [Vec<(Ns, Ns)>; 3] = Default::default();
            for (p, list) in by_pattern.iter_mut().enumerate() {
                // Zero-length and nested ranges included; the third pattern left out of order.
                *list = random_ranges(seed * 5 + p as u64, 12, 500);
                if p == 2 && seed % 2 == 0 {
                    list.reverse();
                }
            }
            let union = IntervalSet::from_unsorted(by_pattern.concat());
            let sorted = by_pattern.iter().all(|l| l.is_sorted_by_key(|r| r.0));
            let queues = by_pattern.each_ref().map(|l| SpanQueue::of(l));
            let mut near = NearPrep::new(&queues, sorted);
            let gaps = IntervalSet::from_unsorted(random_ranges(seed * 11, 40, 500));
            for &(gs, ge) in gaps.interior_gaps().spans() {
                assert_eq!(
                    near.touches(&queues, (gs, ge)),
                    overlaps(&union, gs, ge),
                    "{gs}..{ge}"
                );
            }
        }
    }

    fn config(profile: Profile) -> DetectConfig {
        DetectConfig {
            profile,
            ..DetectConfig::default()
        }
    }

    fn sweep_events(t: &Trace, cfg: &DetectConfig, events: &[KernelEvent]) -> KernelSummary {
        let mut s = KernelSweep::new(t, cfg);
        for &ev in events {
            assert_eq!(s.push(ev), Ok(()));
        }
        s.finish()
    }

    fn sweep(t: &Trace, profile: Profile) -> KernelSummary {
        let events: Vec<KernelEvent> = t.kernels.events_in_start_order().collect();
        sweep_events(t, &config(profile), &events)
    }

    #[test]
    fn a_borrowed_sweep_plan_serialises_as_the_sweep_plan() {
        // Prep ranges (name 0) and two steps (names 2 and 3) of two phases.
        let mut t = trace(&[(0, 10, 0)], &[(0, 5), (20, 25)]);
        t.strings = Strings::from_rows(vec![
            (0, PREP.into()),
            (1, "gemm".into()),
            (
                2,
                "[Executor] _forward_step 1: 2 ctx reqs, 0 gen reqs".into(),
            ),
            (
                3,
                "[Executor] _forward_step 2: 0 ctx reqs, 4 gen reqs".into(),
            ),
        ]);
        for (start, name) in [(0, 2), (20, 3)] {
            t.nvtx.push_range((start, start + 15), 0, name);
        }
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let mut cfg = config(profile);
            cfg.window = Some((1, 30));
            let plan = Plan::new(&t, &cfg);
            let owned = plan.sweep_plan(&cfg);
            assert!(owned.context.is_some() && owned.generation.is_some());
            assert!(owned.prep.iter().any(|p| p.by_pattern[1].len() == 2));
            let bytes = postcard::to_allocvec(&plan.sweep_plan_ref(&cfg)).expect("encode");
            assert_eq!(postcard::from_bytes::<SweepPlan>(&bytes), Ok(owned));
        }
    }

    #[test]
    fn a_kernel_starting_before_its_predecessor_is_refused() {
        let t = trace(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)], &[]);
        let mut s = KernelSweep::new(&t, &config(Profile::Standard));
        let mut events: Vec<KernelEvent> = t.kernels.events_in_start_order().collect();
        events.swap(0, 2);
        assert_eq!(s.push(events[0]), Ok(()));
        assert_eq!(
            s.push(events[1]),
            Err(OutOfOrder {
                row: 1,
                start: 5,
                previous: 30
            })
        );
        // Equal starts are in order.
        let mut s = KernelSweep::new(&t, &config(Profile::Standard));
        let at = |start| KernelEvent { start, ..events[0] };
        assert!(s.push(at(7)).is_ok() && s.push(at(7)).is_ok() && s.push(at(6)).is_err());
    }

    #[test]
    fn one_process_on_two_devices_is_exposed_only_where_both_are_idle() {
        // Device 0: [10,30) [80,90); device 1: [20,50). Hull [10,90); prep [0,100) → [10,90).
        let t = trace(&[(10, 30, 0), (20, 50, 1), (80, 90, 0)], &[(0, 100)]);
        let k = sweep(&t, Profile::Standard);
        assert_eq!(k.facts.devices, vec![0, 1]);
        let mut masks = k.aggregate.busy_by_mask.clone();
        masks.sort_unstable();
        // Device 0 alone: [10,20) + [80,90); both: [20,30); device 1 alone: [30,50).
        assert_eq!(masks, vec![(0b01, 20), (0b10, 20), (0b11, 10)]);
        assert_eq!(ScopeSummary::busy_of(&masks, 0b11), 50);
        let r = detect_with_kernels(&t, &k, &config(Profile::Standard)).expect("report");
        let p = &r.per_process[0];
        assert_eq!(p.devices, vec![0, 1]);
        // Prep 80 ns, union busy 50 ns: 30 ns exposed, 30 ns idle.
        assert_eq!(p.host_prep_us, Some(0.08));
        assert_eq!(p.host_prep_exposed_us, Some(0.03));
        assert_eq!(p.idle_us, Some(0.03));
        assert_eq!(r.per_device[0].busy_us, 0.03);
        assert_eq!(r.per_device[1].busy_us, 0.03);
        let full = detect(&t, &config(Profile::Standard)).expect("report");
        assert_eq!(full, r);
    }

    #[test]
    fn zero_length_kernels_at_the_hull_ends_follow_the_half_open_window() {
        // Hull [0,20). (0,0) sits at the start, (5,5) inside, (20,20) at the end; (10,10) is at
        // the last end when it arrives but (10,20) moves the end past it.
        let kernels = [
            (0, 0, 0),
            (0, 10, 0),
            (5, 5, 0),
            (10, 10, 0),
            (10, 20, 0),
            (20, 20, 0),
        ];
        let t = trace(&kernels, &[]);
        let standard = sweep(&t, Profile::Standard);
        let skill = sweep(&t, Profile::TrtllmSkill);
        assert_eq!(standard.facts.kernels, 6);
        assert_eq!(standard.facts.hull, Some((0, 20)));
        // Clipped: `end > window start` drops (0,0); half-open drops (20,20).
        assert_eq!(standard.aggregate.groups[0].kernels, 4);
        // Start in `[0, 20)`: (0,0) is in, (20,20) is out.
        assert_eq!(skill.aggregate.groups[0].kernels, 5);
        assert_eq!(standard.aggregate.groups[0].busy_ns, 20);
        assert_eq!(skill.aggregate.groups[0].busy_us, 0.02);
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = config(profile);
            let k = sweep(&t, profile);
            let paged = detect_with_kernels(&t, &k, &cfg).expect("report");
            assert_eq!(paged, detect(&t, &cfg).expect("report"));
        }
    }

    #[test]
    fn a_lone_zero_length_kernel_at_the_end_does_not_own_the_device() {
        // The only kernel of device 1 is zero-length at the hull's end: no kernel in the window.
        let t = trace(&[(0, 10, 0), (10, 10, 1)], &[]);
        let k = sweep(&t, Profile::Standard);
        let devices: Vec<(Option<u32>, u64)> = k
            .aggregate
            .groups
            .iter()
            .map(|g| (g.device, g.kernels))
            .collect();
        assert_eq!(devices, vec![(Some(0), 1), (Some(1), 0)]);
        assert!(k.aggregate.groups[1].processes.is_empty());
        assert_eq!(k.facts.devices, vec![0, 1]);
    }

    #[test]
    fn more_than_64_devices_leave_standard_m3_uncomputed_and_say_so() {
        let kernels: Vec<(Ns, Ns, u32)> = (0..65).map(|d| (d as Ns, d as Ns + 100, d)).collect();
        let t = trace(&kernels, &[(0, 50)]);
        let k = sweep(&t, Profile::Standard);
        assert!(k.device_masks_overflow);
        let r = detect_with_kernels(&t, &k, &config(Profile::Standard)).expect("report");
        assert_eq!(r.aggregate_metrics.host_prep_exposed_ratio, None);
        assert!(
            r.coverage
                .iter()
                .any(|n| n.subject == "host_prep" && n.reason.contains("more than 64 devices"))
        );
        assert!(
            r.per_process
                .iter()
                .all(|p| p.host_prep_exposed_us.is_none())
        );
        // 64 busy devices and a 65th, sorted first, with only a zero-length kernel: it has no
        // bit, but it shifts the busy devices' positions past 64, so still no mask.
        let mut kernels: Vec<(Ns, Ns, u32)> = (1..=64).map(|d| (0, 100, d)).collect();
        kernels.push((50, 50, 0));
        let k = sweep(&trace(&kernels, &[(0, 50)]), Profile::Standard);
        assert!(k.device_masks_overflow && k.facts.devices.len() == 65);
    }

    /// The old per-kernel rules, applied kernel by kernel: `(kernels, busy ns)` per device.
    fn brute_force(t: &Trace, w: &IntervalSet, clip: bool, device: u32) -> (u64, Ns) {
        let k = &t.kernels;
        let hs = w.hull().map_or(0, |h| h.0);
        let selected: Vec<(Ns, Ns)> = (0..k.len())
            .filter(|&i| k.device[i] == device)
            .map(|i| (k.start[i], k.end[i]))
            .filter(|&(s, e)| {
                if clip {
                    e > hs && overlaps(w, s, e)
                } else {
                    in_window(w, s)
                }
            })
            .collect();
        let union = IntervalSet::from_unsorted(selected.clone());
        let busy = if clip {
            union.intersection_measure(w)
        } else {
            union.measure()
        };
        (selected.len() as u64, busy)
    }

    /// Busy time of the union of `devices` inside `w`, from every kernel.
    fn union_busy(t: &Trace, w: &IntervalSet, devices: &[u32]) -> Ns {
        let k = &t.kernels;
        let spans = (0..k.len())
            .filter(|&i| devices.contains(&k.device[i]))
            .map(|i| (k.start[i], k.end[i]))
            .collect();
        IntervalSet::from_unsorted(spans).intersection_measure(w)
    }

    #[test]
    fn random_traces_match_the_per_kernel_rules() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) % n) as Ns
        };
        for round in 0..200 {
            let kernels: Vec<(Ns, Ns, u32)> = (0..30)
                .map(|_| {
                    let s = rnd(200);
                    let len = [0, 0, rnd(30), rnd(30), -rnd(5)][rnd(5) as usize];
                    (s, s + len, rnd(3) as u32)
                })
                .collect();
            let t = trace(&kernels, &[(rnd(100), 100 + rnd(100))]);
            let user = (rnd(150), 50 + rnd(200));
            for profile in [Profile::Standard, Profile::TrtllmSkill] {
                let clip = profile.switches().clip_to_window;
                for window in [None, Some(user)] {
                    let cfg = DetectConfig {
                        window,
                        ..config(profile)
                    };
                    let mut events: Vec<KernelEvent> = t.kernels.events_in_start_order().collect();
                    let k = sweep_events(&t, &cfg, &events);
                    // Ties in start may come in any order (table order, when already sorted).
                    events.sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
                    assert_eq!(k, sweep_events(&t, &cfg, &events), "round {round}");
                    let hull = t.kernels.start.iter().min().zip(t.kernels.end.iter().max());
                    let expect_w = window.or(hull.map(|(&s, &e)| (s, e)));
                    let w =
                        &expect_w.map_or_else(IntervalSet::new, |(s, e)| IntervalSet::single(s, e));
                    assert_eq!(k.aggregate.window, WindowFacts::of(w), "round {round}");
                    for g in &k.aggregate.groups {
                        let devices = g.device.map_or_else(|| vec![0, 1, 2], |d| vec![d]);
                        let (n, busy) = devices
                            .iter()
                            .map(|&d| brute_force(&t, w, clip, d))
                            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
                        assert_eq!(g.kernels, n, "round {round} {profile:?} {window:?}");
                        if g.device.is_some() {
                            assert_eq!(g.busy_ns, busy, "round {round} {profile:?}");
                        }
                    }
                    if profile == Profile::Standard && !k.aggregate.prep_busy.is_empty() {
                        for set in [vec![0], vec![1], vec![0, 1], vec![0, 1, 2]] {
                            let mask = set
                                .iter()
                                .filter_map(|d| k.facts.devices.binary_search(d).ok())
                                .fold(0u64, |m, i| m | 1 << i);
                            let got = ScopeSummary::busy_of(&k.aggregate.busy_by_mask, mask);
                            assert_eq!(got, union_busy(&t, w, &set), "round {round} {set:?}");
                        }
                    }
                }
            }
        }
    }
}
