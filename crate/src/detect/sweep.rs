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

use std::collections::HashMap;
use std::sync::Arc;

use super::config::{DetectConfig, NameMatch, Switches};
use super::measure::{LaunchIndex, Launches, PrepCollector, PrepRanges};
use super::names::{NameTables, StepParser};
use super::steps::{
    PhaseCounts, StepCounts, StepFold, StepReader, StepSink, StepSummarizer, StepSummary,
    StepsUnordered, step_of_row,
};
use crate::model::intervals::IntervalSet;
use crate::model::{
    KernelEvent, NameFlags, Ns, NvtxRow, OutOfOrder, ProcessIdx, StartOrder, Strings, Threads,
    Trace, flag,
};
use crate::pyfmt::naive_sum;

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
    /// M2's source when prepared ahead of the verdict ([`Plan::index_launches`],
    /// [`Plan::set_swept_launches`]).
    pub(super) launches: Option<Launches>,
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

    /// Indexes `host`'s kernel-launch API calls now rather than at each verdict (the page does
    /// it while the kernel table is still streaming). The plan must then be used with `host`
    /// only: the index holds its runtime row numbers.
    pub fn index_launches(&mut self, host: &Trace) {
        self.launches = Some(Launches::Indexed(LaunchIndex::new(
            host,
            &self.names,
            &self.sw,
        )));
    }

    /// Whether M2 comes from swept launch calls (the host holds none).
    pub fn launches_swept(&self) -> bool {
        matches!(self.launches, Some(Launches::Swept(_)))
    }

    /// M2 from launch calls swept in start order ([`super::launches::LaunchSweep`] on this plan)
    /// instead of the host's loaded calls.
    pub fn set_swept_launches(&mut self, swept: super::launches::LaunchSweepResult) {
        self.launches = Some(Launches::Swept(swept));
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
            context: self.context.as_ref().map(|p| &p.window),
            generation: self.generation.as_ref().map(|p| &p.window),
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
    pub by_mask: Vec<(u64, Ns)>,
}

/// Everything kernel-derived about one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeSummary {
    pub window: IntervalSet,
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

impl PrepExposure {
    /// The exposure of `prep`'s ranges inside `window`'s hull over `gaps` (ascending),
    /// accumulated in the reference's nested order (ranges in table order, then gaps) so the
    /// float sums match it bit for bit.
    ///
    /// `gaps` are those that touch some pooled range ([`NearPrep`]); the loop visits only the
    /// gaps overlapping each range, so no further filter changes the sum.
    fn of(prep: &PrepRanges, window: &IntervalSet, gaps: &[(Ns, Ns)]) -> Option<PrepExposure> {
        let hull = window.hull()?;
        let (pattern, ranges) = prep
            .by_pattern
            .iter()
            .enumerate()
            .find(|(_, ranges)| inside(ranges, hull).next().is_some())?;
        let prep_us = naive_sum(inside(ranges, hull).map(|(s, e)| (e - s) as f64 / 1000.0));
        if prep_us <= 0.0 {
            return None;
        }
        let mut exposed_us = 0.0;
        for (s, e) in inside(ranges, hull) {
            let first = gaps.partition_point(|&(_, ge)| ge <= s);
            for &(gs, ge) in gaps[first..].iter().take_while(|&&(gs, _)| gs < e) {
                exposed_us += (e.min(ge) - s.max(gs)).max(0) as f64 / 1000.0;
            }
        }
        Some(PrepExposure {
            pattern,
            prep_us,
            exposed_us,
        })
    }
}

/// The ranges lying inside `[ws, we]`, in table order.
fn inside(ranges: &[(Ns, Ns)], (ws, we): (Ns, Ns)) -> impl Iterator<Item = (Ns, Ns)> + '_ {
    ranges
        .iter()
        .copied()
        .filter(move |&(s, e)| s >= ws && e <= we)
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
    fn add(&mut self, s: Ns, e: Ns, clip: Option<&IntervalSet>) -> Option<(Ns, Ns)> {
        if e <= s {
            return None;
        }
        match &mut self.current {
            Some(cur) if s <= cur.1 => {
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

    fn close(&mut self, (s, e): (Ns, Ns), clip: Option<&IntervalSet>) {
        match clip {
            Some(w) => self.ns += overlap_at(w.spans(), &mut self.cursor, s, e),
            None => {
                self.ns += e - s;
                self.us += (e - s) as f64 / 1000.0;
            }
        }
    }

    fn finish(&mut self, clip: Option<&IntervalSet>) {
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

/// Per-mask time accumulators of one window (standard M3), or of host-prep ranges inside it.
///
/// The sets are shared (a window by its scope, a process's host-prep ranges by every scope):
/// each holds a span per forward step, so a copy per accumulator would grow with the trace.
#[derive(Debug, Clone, Default)]
struct MaskAcc {
    /// Where time counts: these spans, or `None` for the kernel hull (every busy instant lies
    /// inside it) ...
    spans: Option<Arc<IntervalSet>>,
    /// ... intersected with these, when set (host-prep ranges inside a window).
    within: Option<Arc<IntervalSet>>,
    cursor: usize,
    within_cursor: usize,
    by_mask: Vec<Ns>,
}

impl MaskAcc {
    fn add(&mut self, a: Ns, b: Ns, mask_id: usize) {
        let ns = match (&self.spans, &self.within) {
            (Some(s), Some(w)) => overlap_within(
                (s.spans(), &mut self.cursor),
                (w.spans(), &mut self.within_cursor),
                a,
                b,
            ),
            (Some(s), None) => overlap_at(s.spans(), &mut self.cursor, a, b),
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

/// One window's running state.
struct ScopeAcc {
    /// `None`: the kernel hull, known only at the end.
    window: Option<Arc<IntervalSet>>,
    select_cursor: usize,
    groups: Vec<GroupAcc>,
    /// `trtllm-skill` M3: the pooled host-prep ranges, to keep only gaps that can matter.
    gap_near: Option<NearPrep>,
    prep_gaps: Vec<(Ns, Ns)>,
    busy_masks: MaskAcc,
    /// `(process, pattern, busy per mask inside that process's ranges ∩ window)`.
    prep_masks: Vec<(ProcessIdx, usize, MaskAcc)>,
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
    has_context: bool,
    has_generation: bool,
    masks: Option<MaskSweep>,
    /// `trtllm-skill` M3: the pooled host-prep ranges, measured against the gaps at the end.
    pooled_prep: Option<Arc<PrepRanges>>,
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
    pub fn of(plan: SweepPlan) -> KernelSweep {
        let sw = plan.sw;
        let aggregate = plan.window.map(|(s, e)| IntervalSet::single(s, e));
        let has_context = plan.context.is_some();
        let has_generation = plan.generation.is_some();
        let prep_sets = if sw.prep_per_process {
            prep_sets(&plan.prep)
        } else {
            Vec::new()
        };
        // Shared by every scope: a range per step and rank.
        let pooled_prep = (!sw.prep_per_process)
            .then(|| plan.prep.into_iter().next())
            .flatten()
            .map(Arc::new);
        let scopes: Vec<ScopeAcc> = [aggregate, plan.context, plan.generation]
            .into_iter()
            .enumerate()
            .filter(|(i, w)| *i == 0 || w.is_some())
            .map(|(_, w)| ScopeAcc::new(w.map(Arc::new), &sw, &prep_sets, pooled_prep.as_ref()))
            .collect();
        let needs_masks = scopes.iter().any(|s| !s.prep_masks.is_empty());
        KernelSweep {
            sw,
            skip_m3: plan.skip_m3,
            user_window: plan.window.is_some(),
            nccl: plan.nccl,
            slots: Vec::new(),
            scopes,
            has_context,
            has_generation,
            masks: needs_masks.then(MaskSweep::new),
            pooled_prep,
            deferred: Vec::new(),
            order: StartOrder::default(),
            kernels: 0,
            devices: Counts::default(),
            processes: Counts::default(),
            any_graph_node: false,
            hull: None,
        }
    }

    /// Adds one kernel. Kernels must come in non-decreasing `start`: one that starts before its
    /// predecessor is refused with [`OutOfOrder`], and the sweep is then unusable (the caller
    /// falls back to loading and sorting the table).
    pub fn push(&mut self, ev: KernelEvent) -> Result<(), OutOfOrder> {
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
        for (i, scope) in self.scopes.iter_mut().enumerate() {
            if i == 0 && scope.window.is_none() {
                let pending = scope.push_to_hull(&ev, slot, nccl, &self.sw, (first, last_end));
                if let Some(d) = pending {
                    defer(&mut self.deferred, d);
                }
            } else {
                scope.push(&ev, slot, nccl, &self.sw);
            }
        }
        if let Some(m) = &mut self.masks {
            m.push(&ev, &mut self.scopes);
        }
        Ok(())
    }

    /// Ends the pass: closes every running union and resolves the kernel hull.
    pub fn finish(mut self) -> KernelSummary {
        if let Some(m) = &mut self.masks {
            m.finish(&mut self.scopes);
        }
        // Deferred kernels left start at or after the hull's end: outside it.
        let devices = self.devices.keys();
        // Masks are remapped to positions in `devices`, which also lists devices that ran only
        // zero-length kernels (no bit of their own): past 64 positions there is no mask either.
        let overflow = self
            .masks
            .as_ref()
            .is_some_and(|m| m.overflow || devices.len() > MAX_MASK_DEVICES);
        let remap = self
            .masks
            .as_ref()
            .filter(|m| !m.overflow)
            .map(|m| m.remapped(&devices))
            .unwrap_or_default();
        let hull_window = self
            .hull
            .map_or_else(IntervalSet::new, |(s, e)| IntervalSet::single(s, e));
        let order = self.group_order();
        let pooled_prep = self.pooled_prep.as_deref();
        let mut scopes = self
            .scopes
            .into_iter()
            .map(|s| s.finish(hull_window.clone(), &order, &self.sw, &remap, pooled_prep));
        let aggregate = scopes
            .next()
            .unwrap_or_else(|| empty_scope(hull_window.clone()));
        let context = self.has_context.then(|| scopes.next()).flatten();
        let generation = self.has_generation.then(|| scopes.next()).flatten();
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

fn empty_scope(window: IntervalSet) -> ScopeSummary {
    ScopeSummary {
        window,
        groups: Vec::new(),
        busy_by_mask: Vec::new(),
        prep_busy: Vec::new(),
        prep_exposure: None,
    }
}

impl ScopeAcc {
    fn new(
        window: Option<Arc<IntervalSet>>,
        sw: &Switches,
        prep_sets: &[ProcessPrep],
        pooled_prep: Option<&Arc<PrepRanges>>,
    ) -> ScopeAcc {
        let prep_masks = prep_mask_accs(window.as_ref(), prep_sets);
        ScopeAcc {
            busy_masks: MaskAcc {
                spans: window.clone(),
                ..MaskAcc::default()
            },
            window,
            select_cursor: 0,
            // The pooled group exists even in a window without kernels.
            groups: if sw.per_device {
                Vec::new()
            } else {
                vec![GroupAcc::default()]
            },
            gap_near: pooled_prep.and_then(NearPrep::new),
            prep_gaps: Vec::new(),
            prep_masks,
        }
    }

    /// A kernel for a window known in advance: selected by the profile's membership rule.
    fn push(&mut self, ev: &KernelEvent, slot: usize, nccl: bool, sw: &Switches) {
        if self.selects(ev, sw.clip_to_window) {
            self.add(ev, slot, nccl, sw);
        }
    }

    /// A kernel for the hull window `[first start, last end)`: every kernel with `end > start`
    /// is inside; the others may have to wait for the hull's end (returned to be deferred).
    fn push_to_hull(
        &mut self,
        ev: &KernelEvent,
        slot: usize,
        nccl: bool,
        sw: &Switches,
        (first, last_end): (Ns, Ns),
    ) -> Option<Deferred> {
        self.ensure_group(slot);
        if ev.end > ev.start || ev.start < last_end {
            // Clipped profile: `end > window start` too (a zero-length kernel at the first start is out).
            if !(sw.clip_to_window && ev.end <= first) {
                self.add(ev, slot, nccl, sw);
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
    fn selects(&mut self, ev: &KernelEvent, clip: bool) -> bool {
        let Some(w) = &self.window else {
            return true;
        };
        let spans = w.spans();
        let Some((ws, _)) = seek(spans, &mut self.select_cursor, ev.start) else {
            return false;
        };
        if !clip {
            return ws <= ev.start;
        }
        let hs = spans.first().map_or(ws, |f| f.0);
        ev.end > hs && (ws < ev.end || (ev.start == ev.end && ws <= ev.start))
    }

    /// Adds a selected kernel to its group.
    fn add(&mut self, ev: &KernelEvent, slot: usize, nccl: bool, sw: &Switches) {
        self.ensure_group(slot);
        let clip = if sw.clip_to_window {
            self.window.as_deref()
        } else {
            None
        };
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
        if let (Some(gap), Some(near)) = (gap, &mut self.gap_near)
            && near.touches(gap)
        {
            self.prep_gaps.push(gap);
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

    fn finish(
        mut self,
        hull: IntervalSet,
        order: &[(Option<u32>, usize)],
        sw: &Switches,
        remap: &[u64],
        pooled_prep: Option<&PrepRanges>,
    ) -> ScopeSummary {
        let clip = sw
            .clip_to_window
            .then_some(self.window.as_deref())
            .flatten();
        let groups = order
            .iter()
            .map(|&(device, slot)| {
                let mut g = self.groups.get(slot).cloned().unwrap_or_default();
                g.busy.finish(clip);
                g.nccl.finish(clip);
                group_summary(device, g, sw.clip_to_window)
            })
            .collect();
        let prep_busy = self
            .prep_masks
            .iter_mut()
            .map(|(process, pattern, m)| PrepBusy {
                process: *process,
                pattern: *pattern,
                by_mask: remap_masks(&m.by_mask, remap),
            })
            .collect();
        let window = self.take_window().unwrap_or(hull);
        let prep_exposure = pooled_prep.and_then(|r| PrepExposure::of(r, &window, &self.prep_gaps));
        ScopeSummary {
            window,
            groups,
            busy_by_mask: remap_masks(&self.busy_masks.by_mask, remap),
            prep_busy,
            prep_exposure,
        }
    }

    /// The window, once nothing measures in it any more: moved out rather than copied when
    /// this scope's accumulators were its only other holders.
    fn take_window(&mut self) -> Option<IntervalSet> {
        let window = self.window.take()?;
        self.busy_masks.spans = None;
        self.prep_masks
            .iter_mut()
            .for_each(|(_, _, m)| m.within = None);
        Some(Arc::try_unwrap(window).unwrap_or_else(|shared| (*shared).clone()))
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

/// One process's host-prep ranges per pattern, as unions (empty patterns left out).
type ProcessPrep = (ProcessIdx, Vec<(usize, Arc<IntervalSet>)>);

/// The standard profile's host-prep unions, built once for every scope.
fn prep_sets(prep: &[PrepRanges]) -> Vec<ProcessPrep> {
    prep.iter()
        .enumerate()
        .map(|(p, r)| {
            let sets = r.by_pattern.iter().enumerate().filter_map(|(i, ranges)| {
                let set = IntervalSet::from_ranges(ranges);
                (!set.is_empty()).then(|| (i, Arc::new(set)))
            });
            (p as ProcessIdx, sets.collect())
        })
        .collect()
}

/// Standard M3 accumulators of one window: per process, the prep ranges of the first pattern
/// that meets the window (all non-empty patterns for the hull, which is not known yet: busy
/// time lies inside the hull anyway, so the unclipped ranges measure the same).
fn prep_mask_accs(
    window: Option<&Arc<IntervalSet>>,
    prep_sets: &[ProcessPrep],
) -> Vec<(ProcessIdx, usize, MaskAcc)> {
    let mut out = Vec::new();
    for (process, sets) in prep_sets {
        let meeting = sets
            .iter()
            .filter(|(_, set)| window.is_none_or(|w| set.intersection_measure(w) > 0));
        let keep: Vec<&(usize, Arc<IntervalSet>)> = if window.is_some() {
            meeting.take(1).collect()
        } else {
            meeting.collect()
        };
        for (pattern, set) in keep {
            let acc = MaskAcc {
                spans: Some(set.clone()),
                within: window.cloned(),
                ..MaskAcc::default()
            };
            out.push((*process, *pattern, acc));
        }
    }
    out
}

/// Whether gaps between kernels touch a pooled host-prep range, asked in ascending order
/// (the gaps of one union). Without a merged copy of the ranges when each pattern's are in
/// start order (NVTX tables are, in every export seen): per pattern, the latest end among the
/// ranges starting before the current gap's end.
struct NearPrep {
    ranges: Arc<PrepRanges>,
    /// Per pattern: the next range not yet started, and the latest end of those before it.
    next: [usize; 3],
    max_end: [Ns; 3],
    /// Ranges out of start order: their union, and a cursor in it.
    merged: Option<(IntervalSet, usize)>,
}

impl NearPrep {
    /// `None` without a range of positive length.
    fn new(ranges: &Arc<PrepRanges>) -> Option<NearPrep> {
        let lists = &ranges.by_pattern;
        if !lists.iter().flatten().any(|&(s, e)| e > s) {
            return None;
        }
        let sorted = lists.iter().all(|l| l.is_sorted_by_key(|r| r.0));
        Some(NearPrep {
            ranges: ranges.clone(),
            next: [0; 3],
            max_end: [Ns::MIN; 3],
            merged: (!sorted).then(|| (IntervalSet::from_unsorted(lists.concat()), 0)),
        })
    }

    /// Whether `(gs, ge)` (positive, after every gap asked before) overlaps a range of
    /// positive length.
    fn touches(&mut self, (gs, ge): (Ns, Ns)) -> bool {
        if let Some((set, cursor)) = &mut self.merged {
            return seek(set.spans(), cursor, gs).is_some_and(|(s, _)| s < ge);
        }
        let mut touches = false;
        for (p, list) in self.ranges.by_pattern.iter().enumerate() {
            while let Some(&(s, e)) = list.get(self.next[p]).filter(|r| r.0 < ge) {
                if e > s {
                    self.max_end[p] = self.max_end[p].max(e);
                }
                self.next[p] += 1;
            }
            touches |= self.max_end[p] > gs;
        }
        touches
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

    fn push(&mut self, ev: &KernelEvent, scopes: &mut [ScopeAcc]) {
        if self.overflow {
            return;
        }
        self.advance(ev.start, scopes);
        if ev.end <= ev.start {
            return;
        }
        match self.bit(ev.device) {
            Some(b) => self.busy_until[b] = self.busy_until[b].max(ev.end),
            None => self.overflow = true,
        }
    }

    fn finish(&mut self, scopes: &mut [ScopeAcc]) {
        if self.overflow {
            return;
        }
        let end = self.busy_until.iter().copied().max().unwrap_or(Ns::MIN);
        self.advance(end, scopes);
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
    fn advance(&mut self, to: Ns, scopes: &mut [ScopeAcc]) {
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
                    s.busy_masks.add(self.clock, next, id);
                    for (_, _, m) in &mut s.prep_masks {
                        m.add(self.clock, next, id);
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

/// Overlap of `[a, b)` with ascending disjoint spans, from a cursor that only moves forward
/// (callers query in ascending `a`).
pub(super) fn overlap_at(spans: &[(Ns, Ns)], cursor: &mut usize, a: Ns, b: Ns) -> Ns {
    seek(spans, cursor, a);
    spans[(*cursor).min(spans.len())..]
        .iter()
        .take_while(|&&(s, _)| s < b)
        .map(|&(s, e)| b.min(e) - a.max(s))
        .sum()
}

/// Overlap of `[a, b)` with the intersection of two span lists (ascending, disjoint), each with
/// a forward-only cursor (callers query in ascending `a`).
fn overlap_within(
    (spans, cursor): (&[(Ns, Ns)], &mut usize),
    (within, within_cursor): (&[(Ns, Ns)], &mut usize),
    a: Ns,
    b: Ns,
) -> Ns {
    seek(spans, cursor, a);
    let mut ns = 0;
    for &(s, e) in spans[(*cursor).min(spans.len())..]
        .iter()
        .take_while(|&&(s, _)| s < b)
    {
        ns += overlap_at(within, within_cursor, a.max(s), b.min(e));
    }
    ns
}

/// Moves `cursor` past the spans that end at or before `t` (callers query in ascending `t`) and
/// returns the first span that ends after `t`.
pub(super) fn seek(spans: &[(Ns, Ns)], cursor: &mut usize, t: Ns) -> Option<(Ns, Ns)> {
    while spans.get(*cursor).is_some_and(|&(_, e)| e <= t) {
        *cursor += 1;
    }
    spans.get(*cursor).copied()
}

/// Whether `t` lies in one of the window's `[start, end)` intervals.
pub(super) fn in_window(window: &IntervalSet, t: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, e)| e <= t);
    i < spans.len() && spans[i].0 <= t
}

/// Whether `[s, e)` overlaps the window (zero-length intervals count when they lie inside).
#[cfg(test)]
pub(super) fn overlaps(window: &IntervalSet, s: Ns, e: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, we)| we <= s);
    i < spans.len() && (spans[i].0 < e || (s == e && spans[i].0 <= s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Profile, detect, detect_with_kernels};
    use crate::model::{PresentTables, Strings};

    const PREP: &str = "[Executor] _prepare_inputs";

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
            let ranges = Arc::new(PrepRanges { by_pattern });
            let mut near = NearPrep::new(&ranges).expect("positive ranges");
            let gaps = IntervalSet::from_unsorted(random_ranges(seed * 11, 40, 500));
            for &(gs, ge) in gaps.interior_gaps().spans() {
                assert_eq!(
                    near.touches((gs, ge)),
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
                    let w = &k.aggregate.window;
                    let hull = t.kernels.start.iter().min().zip(t.kernels.end.iter().max());
                    let expect_w = window.or(hull.map(|(&s, &e)| (s, e)));
                    let expect_w =
                        expect_w.map_or_else(IntervalSet::new, |(s, e)| IntervalSet::single(s, e));
                    assert_eq!(w, &expect_w, "round {round}");
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
