//! Where each device's GPU-idle time went: every nanosecond of its idle gaps in the window gets
//! exactly one cause, read from what the trace recorded on the threads of the processes that
//! launch kernels on the device (CUDA API calls, NVTX ranges) during that time.
//!
//! Per device, the idle gaps ([`super::gaps::IdleLane`], as the gap report finds them) and the
//! host intervals that overlap them, each with its cause (the catalogue's [`ApiKind`] of a call,
//! [`RangeClass`] of a range), are swept in time order; each stretch of idle time goes to the
//! highest-ranked cause in [`PRECEDENCE`] with an interval open over it, and to that cause's
//! innermost interval (the latest to start) for its label. What no interval covers is
//! [`CauseKind::Untraced`]. So the causes of a device add up to its idle time exactly, and the
//! causes of one gap are the same sweep restricted to it.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::index::TraceIndex;
use crate::model::{NameId, Ns};
use crate::names::api::{ApiKind, api_base_name};
use crate::names::ranges::{RangeClass, range_class, range_label};
use crate::profile::Profile;
use crate::steps::visible_name;

/// What kept the GPU idle, as far as the host's recorded activity says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// Blocking synchronization (`cudaStreamSynchronize`, `cudaDeviceSynchronize` …) and
    /// synchronous copies: `cudaMemcpy` without `Async`, and async copies with a pageable host
    /// side (the driver stages them synchronously; labelled by their API, `cudaMemcpyAsync`).
    Sync,
    /// Kernel and graph launch calls, slow first launches (lazy module loading) included.
    Launch,
    /// Loading device code: `cuModuleLoad*`, `cuLibraryLoad*`, lazy-loading lookups.
    ModuleLoad,
    /// Run-time compilation: NVRTC, `cuLink*`, or NVTX ranges naming a compile or autotuning.
    Jit,
    /// Device or pinned memory allocation and release, runtime object creation (events,
    /// streams).
    Alloc,
    /// Asynchronous copy and memset calls (host time spent issuing them).
    Memop,
    /// A Python garbage collection (`Python GC` ranges).
    Gc,
    /// Waiting for the Python GIL (`Waiting for GIL` ranges).
    Gil,
    /// Blocking OS runtime calls. The loader does not read `OSRT_API`, so no time is given to
    /// this cause yet (the drill-down's coverage says so).
    Osrt,
    /// A collective or its wait (NCCL and `c10d` ranges, all-reduce, barrier …).
    Comm,
    /// Any other traced CUDA API call (queries, event records, attributes …).
    Api,
    /// Host work inside a named NVTX range with no traced call: labelled by the innermost range.
    Nvtx,
    /// No recorded activity on the launching processes' threads.
    Untraced,
}

use CauseKind::*;

/// The order in which causes claim idle time that several of them cover (first wins). Written
/// once, read by every attribution (per device, per gap, per bucket):
///
/// 1. `gc`, `gil`, `jit`, `comm`: ranges that name what the host was doing *for*. A call inside
///    one is part of it: the module load or `cudaMalloc` of a compile is the compile, the
///    `cudaStreamSynchronize` inside a collective's range is the wait for the collective. A GC
///    pause or a GIL wait interrupts whatever code was running, so they come first, then
///    compilation (which may run collectives' set-up, not the reverse), then collectives.
/// 2. CUDA API calls, the thread's own leaf activity, the most direct stall first: `sync` (the
///    host waits for the device), `module_load` and `alloc` (one-off or avoidable costs that
///    block the launch stream), `memop` (issuing copies), `launch` (the launches themselves,
///    slow first launches included), `api` (anything else traced). Calls of one thread do not
///    overlap; this order only decides between threads.
/// 3. `osrt`: blocking OS calls are leaf activity too, but generic: a `read` inside a compile is
///    the compile, a `poll` inside a collective is the collective, and a CUDA call says more.
/// 4. `nvtx`: a named range with nothing more specific inside it (labelled by the innermost).
/// 5. `untraced`: nothing recorded.
pub const PRECEDENCE: [CauseKind; 13] = [
    Gc, Gil, Jit, Comm, Sync, ModuleLoad, Alloc, Memop, Launch, Api, Osrt, Nvtx, Untraced,
];

impl CauseKind {
    /// The JSON name (`module_load`).
    pub fn name(self) -> &'static str {
        match self {
            Sync => "sync",
            Launch => "launch",
            ModuleLoad => "module_load",
            Jit => "jit",
            Alloc => "alloc",
            Memop => "memop",
            Gc => "gc",
            Gil => "gil",
            Osrt => "osrt",
            Comm => "comm",
            Api => "api",
            Nvtx => "nvtx",
            Untraced => "untraced",
        }
    }

    /// Its place in [`PRECEDENCE`] (0 first).
    pub fn rank(self) -> usize {
        PRECEDENCE
            .iter()
            .position(|&k| k == self)
            .unwrap_or(PRECEDENCE.len())
    }

    /// The cause of time spent in a CUDA API call of this kind.
    pub fn of_api(kind: ApiKind) -> CauseKind {
        match kind {
            ApiKind::BlockingSync | ApiKind::Memcpy { is_async: false } => Sync,
            ApiKind::Memcpy { is_async: true } | ApiKind::Memset { .. } => Memop,
            ApiKind::Launch | ApiKind::GraphLaunch => Launch,
            ApiKind::ObjectCreate | ApiKind::Alloc => Alloc,
            ApiKind::ModuleLoad => ModuleLoad,
            ApiKind::Jit => Jit,
            ApiKind::Other => Api,
        }
    }

    /// The cause of time inside an NVTX range of this class.
    pub fn of_range(class: RangeClass) -> CauseKind {
        match class {
            RangeClass::Gc => Gc,
            RangeClass::GilWait => Gil,
            RangeClass::Jit => Jit,
            RangeClass::Comm => Comm,
            RangeClass::GilHeld | RangeClass::Other => Nvtx,
        }
    }
}

/// One cause of a device's idle time: its kind, the API or NVTX name holding most of its time
/// (`""` for `untraced`), its time and its share of the device's idle time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleCause {
    pub kind: CauseKind,
    pub label: String,
    pub ns: Ns,
    pub share: f64,
    /// The API calls or NVTX ranges holding this cause's time, largest first (at most
    /// [`DETAIL`]): the evidence a finding shows.
    #[serde(default)]
    pub labels: Vec<LabelTime>,
    /// The gaps in which this cause holds the most time, largest share of the cause first (at
    /// most [`DETAIL`]): where the page's timeline goes when the cause is clicked.
    #[serde(default)]
    pub gaps: Vec<CauseGap>,
    /// Its time per gap-size bucket (the nine of spec §4, in order).
    #[serde(default)]
    pub by_bucket: Vec<Ns>,
}

/// How many labels and gaps a cause keeps as evidence.
pub const DETAIL: usize = 5;

/// One label's time inside a cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelTime {
    pub label: String,
    pub ns: Ns,
}

/// One idle gap and the time a cause holds in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseGap {
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// The cause's time inside the gap.
    pub ns: Ns,
}

/// Per cause, what [`IdleCause`] shows beyond its total: the time per label, the gaps holding
/// most of it and its time per bucket, gathered gap by gap as the sweep hands them over.
#[derive(Debug, Clone, Default)]
pub struct CauseLedger<'t> {
    per: HashMap<CauseKind, Ledger<'t>>,
}

#[derive(Debug, Clone, Default)]
struct Ledger<'t> {
    labels: HashMap<&'t str, Ns>,
    /// Min-heap of the kept gaps by the cause's time in them.
    gaps: std::collections::BinaryHeap<Reverse<(Ns, Reverse<Ns>, Ns)>>,
    by_bucket: [Ns; 9],
}

impl<'t> CauseLedger<'t> {
    /// Adds one gap `[start, end)` and its causes.
    pub fn add_gap(&mut self, (start, end): (Ns, Ns), causes: &Tally<'t>) {
        let bucket = super::gaps::bucket_of(end - start);
        let mut in_gap: HashMap<CauseKind, Ns> = HashMap::new();
        for (&(kind, label), &ns) in &causes.ns {
            let l = self.per.entry(kind).or_default();
            *l.labels.entry(label).or_default() += ns;
            l.by_bucket[bucket] += ns;
            *in_gap.entry(kind).or_default() += ns;
        }
        for (kind, ns) in in_gap {
            if let Some(l) = self.per.get_mut(&kind) {
                l.gaps.push(Reverse((ns, Reverse(start), end)));
                if l.gaps.len() > DETAIL {
                    l.gaps.pop();
                }
            }
        }
    }

    /// Every cause of `tally` (a device's total) as a share of `idle_ns`, with its evidence.
    pub fn causes(&self, tally: &Tally<'t>, idle_ns: Ns) -> Vec<IdleCause> {
        let mut out = tally.causes(idle_ns);
        for c in &mut out {
            let Some(l) = self.per.get(&c.kind) else {
                continue;
            };
            let mut labels: Vec<(&str, Ns)> = l.labels.iter().map(|(&k, &v)| (k, v)).collect();
            labels.sort_by_key(|&(label, ns)| (Reverse(ns), label));
            c.labels = labels
                .into_iter()
                .take(DETAIL)
                .map(|(label, ns)| LabelTime {
                    label: label.to_string(),
                    ns,
                })
                .collect();
            let mut gaps: Vec<CauseGap> = l
                .gaps
                .iter()
                .map(|&Reverse((ns, Reverse(start_ns), end_ns))| CauseGap {
                    start_ns,
                    end_ns,
                    ns,
                })
                .collect();
            gaps.sort_by_key(|g| (Reverse(g.ns), g.start_ns));
            c.gaps = gaps;
            c.by_bucket = l.by_bucket.to_vec();
        }
        out
    }
}

/// One device's idle time and its causes, largest first (they add up to `idle_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceIdle {
    pub device: u32,
    /// Time in the device's idle gaps inside the window (the device-idle gaps' total).
    pub idle_ns: Ns,
    pub causes: Vec<IdleCause>,
    pub file: String,
}

/// The `idle` section of the drill-down: per device (per file), where its idle time went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleAttribution {
    pub per_device: Vec<DeviceIdle>,
}

/// The cause holding most of one gap's time, and its share of the gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapCause {
    pub kind: CauseKind,
    pub label: String,
    pub share: f64,
}

/// Idle time per (cause, label): a gap's, a bucket's or a device's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally<'t> {
    ns: HashMap<(CauseKind, &'t str), Ns>,
}

/// One cause's total in a [`Tally`], with the label holding most of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindTotal<'t> {
    pub kind: CauseKind,
    pub ns: Ns,
    pub label: &'t str,
}

impl<'t> Tally<'t> {
    pub fn add(&mut self, kind: CauseKind, label: &'t str, ns: Ns) {
        if ns > 0 {
            *self.ns.entry((kind, label)).or_default() += ns;
        }
    }

    pub fn merge(&mut self, other: &Tally<'t>) {
        for (&(kind, label), &ns) in &other.ns {
            self.add(kind, label, ns);
        }
    }

    pub fn total(&self) -> Ns {
        self.ns.values().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.ns.is_empty()
    }

    /// Per cause: its time and its largest label (ties: the first name), largest cause first
    /// (ties: precedence order).
    pub fn kinds(&self) -> Vec<KindTotal<'t>> {
        let mut per: HashMap<CauseKind, (Ns, Ns, &'t str)> = HashMap::new();
        for (&(kind, label), &ns) in &self.ns {
            let e = per.entry(kind).or_insert((0, 0, label));
            e.0 += ns;
            if (ns, Reverse(label)) > (e.1, Reverse(e.2)) {
                (e.1, e.2) = (ns, label);
            }
        }
        let mut out: Vec<KindTotal<'t>> = per
            .into_iter()
            .map(|(kind, (ns, _, label))| KindTotal { kind, ns, label })
            .collect();
        out.sort_by_key(|k| (Reverse(k.ns), k.kind.rank()));
        out
    }

    /// The cause holding most of the time, if any.
    pub fn dominant(&self) -> Option<KindTotal<'t>> {
        self.kinds().into_iter().next()
    }

    /// The dominant cause as a share of `of_ns` (a gap's length).
    pub fn gap_cause(&self, of_ns: Ns) -> Option<GapCause> {
        self.dominant().map(|k| GapCause {
            kind: k.kind,
            label: k.label.to_string(),
            share: share(k.ns, of_ns),
        })
    }

    /// Every cause as a share of `idle_ns` (the tally's total for a device).
    pub fn causes(&self, idle_ns: Ns) -> Vec<IdleCause> {
        self.kinds()
            .into_iter()
            .map(|k| IdleCause {
                kind: k.kind,
                label: k.label.to_string(),
                ns: k.ns,
                share: share(k.ns, idle_ns),
                labels: Vec::new(),
                gaps: Vec::new(),
                by_bucket: Vec::new(),
            })
            .collect()
    }
}

fn share(ns: Ns, of: Ns) -> f64 {
    if of > 0 {
        (ns as f64 / of as f64).min(1.0)
    } else {
        0.0
    }
}

/// What the measured causes of some gap time say, for a reading: the dominant cause and its
/// share of `of_ns` when the host recorded something; else that nothing was recorded, with the
/// `typical` cause of such gaps (reference §9.1) as a hint only.
pub fn cause_sentence(tally: &Tally<'_>, of_ns: Ns, typical: &str) -> String {
    let kinds = tally.kinds();
    let pct = |ns: Ns| crate::format::percent(share(ns, of_ns));
    match kinds.first() {
        None if of_ns > 0 => {
            format!("the GPU ran other streams' kernels throughout; typical: {typical}")
        }
        Some(k) if k.kind != Untraced => format!(
            "{} ({}) holds {} of the gap time",
            k.kind.name(),
            k.label,
            pct(k.ns)
        ),
        Some(k) => {
            let next = kinds
                .get(1)
                .map(|n| format!(", then {} ({}) {}", n.kind.name(), n.label, pct(n.ns)))
                .unwrap_or_default();
            format!(
                "no host activity recorded for {}{next}; typical: {typical}",
                pct(k.ns)
            )
        }
        None => format!("no host activity recorded; typical: {typical}"),
    }
}

/// A host interval with its cause: a call or an NVTX range on a launching process's thread.
#[derive(Debug, Clone, Copy)]
struct Span<'t> {
    start: Ns,
    end: Ns,
    kind: CauseKind,
    label: &'t str,
    /// A range that names no work of its own (`Holding GIL`): the innermost range only when no
    /// other is open.
    weak: bool,
}

/// The causes of one trace's host intervals, by name, each name classified once.
pub struct HostCauses<'a, 't> {
    ix: &'a TraceIndex<'t>,
    calls: HashMap<NameId, (CauseKind, &'t str)>,
    ranges: HashMap<NameId, (CauseKind, &'t str, bool)>,
    /// Runtime rows of async copies with a pageable host side: synchronous in effect.
    pageable_async: HashSet<usize>,
}

impl<'a, 't> HostCauses<'a, 't> {
    pub fn new(ix: &'a TraceIndex<'t>) -> HostCauses<'a, 't> {
        let copies = &ix.trace.memcpy;
        let pageable_async = (0..copies.len())
            .filter(|&i| copies.pageable_host(i))
            .filter_map(|i| ix.issuing_call(copies, i))
            .filter(|&row| ix.call_kind(row) == ApiKind::Memcpy { is_async: true })
            .collect();
        HostCauses {
            ix,
            calls: HashMap::new(),
            ranges: HashMap::new(),
            pageable_async,
        }
    }

    fn call(&mut self, name: NameId) -> (CauseKind, &'t str) {
        let (ix, trace) = (self.ix, self.ix.trace);
        *self.calls.entry(name).or_insert_with(|| {
            (
                CauseKind::of_api(ix.names.api(name)),
                api_base_name(trace.strings.get(name)),
            )
        })
    }

    fn range(&mut self, name: NameId) -> (CauseKind, &'t str, bool) {
        let trace = self.ix.trace;
        *self.ranges.entry(name).or_insert_with(|| {
            let s = trace.strings.get(name);
            let class = range_class(s);
            (
                CauseKind::of_range(class),
                range_label(s),
                class == RangeClass::GilHeld,
            )
        })
    }

    /// The calls and NVTX ranges of the processes flagged in `processes` (by index) that
    /// overlap one of `gaps` (sorted, disjoint), in start order (an enclosing interval first).
    fn spans(&mut self, processes: &[bool], gaps: &[(Ns, Ns)]) -> Vec<Span<'t>> {
        let trace = self.ix.trace;
        let ours = |p: Option<u32>| p.is_some_and(|p| processes.get(p as usize) == Some(&true));
        let mut spans = Vec::new();
        let rt = &trace.runtime;
        for r in 0..rt.len() {
            let (start, end) = (rt.start[r], rt.end[r]);
            if end > start && ours(self.ix.call_process(r)) && overlaps_any(gaps, start, end) {
                let (mut kind, label) = self.call(rt.name[r]);
                if self.pageable_async.contains(&r) {
                    kind = Sync;
                }
                spans.push(Span {
                    start,
                    end,
                    kind,
                    label,
                    weak: false,
                });
            }
        }
        let nvtx = &trace.nvtx;
        let sw = Profile::Standard.switches();
        for r in 0..nvtx.len() {
            let (start, end) = (nvtx.start[r], nvtx.end[r]);
            let process = trace.threads.process.get(nvtx.thread[r] as usize).copied();
            if end <= start || !ours(process) || !overlaps_any(gaps, start, end) {
                continue;
            }
            if let Some(name) = visible_name(nvtx, r, &sw) {
                let (kind, label, weak) = self.range(name);
                spans.push(Span {
                    start,
                    end,
                    kind,
                    label,
                    weak,
                });
            }
        }
        spans.sort_by_key(|s| (s.start, Reverse(s.end)));
        spans
    }

    /// Attributes every ns of `gaps` (one device's idle gaps: sorted, disjoint) to one cause,
    /// from the host intervals of the processes that launch kernels on `device`. Hands each
    /// gap's causes to `on_gap` (by gap index, in order) and returns the device's.
    pub fn attribute(
        &mut self,
        device: u32,
        gaps: &[(Ns, Ns)],
        mut on_gap: impl FnMut(usize, &Tally<'t>),
    ) -> (Ns, Tally<'t>) {
        let processes = self.launching_processes(device);
        let spans = self.spans(&processes, gaps);
        let mut total = Tally::default();
        let mut idle: Ns = 0;
        sweep(gaps, &spans, |i, tally| {
            idle += gaps[i].1 - gaps[i].0;
            total.merge(tally);
            on_gap(i, tally);
        });
        (idle, total)
    }

    /// Which processes launch kernels on `device`, flagged by process index.
    fn launching_processes(&self, device: u32) -> Vec<bool> {
        let trace = self.ix.trace;
        let mut flags = vec![false; trace.processes.len()];
        let kernels = self.ix.devices.iter().filter(|d| d.device == device);
        for &k in kernels.flat_map(|d| &d.kernels) {
            if let Some(f) = trace
                .kernels
                .process
                .get(k as usize)
                .and_then(|&p| flags.get_mut(p as usize))
            {
                *f = true;
            }
        }
        flags
    }
}

/// Whether `[start, end)` overlaps one of `gaps` (sorted, disjoint).
fn overlaps_any(gaps: &[(Ns, Ns)], start: Ns, end: Ns) -> bool {
    let i = gaps.partition_point(|g| g.1 <= start);
    gaps.get(i).is_some_and(|g| g.0 < end)
}

/// The sweep: `spans` in start order, `gaps` sorted and disjoint; `on_gap(i, causes)` once per
/// gap, in order, with every ns of gap `i` given to the first cause of [`PRECEDENCE`] that has
/// a span open over it (labelled by its innermost open span), or to `untraced`.
fn sweep<'t>(gaps: &[(Ns, Ns)], spans: &[Span<'t>], mut on_gap: impl FnMut(usize, &Tally<'t>)) {
    // Span boundaries in time order: (time, opens, span).
    let mut events: Vec<(Ns, bool, u32)> = Vec::with_capacity(2 * spans.len());
    for (i, s) in spans.iter().enumerate() {
        events.push((s.start, true, i as u32));
        events.push((s.end, false, i as u32));
    }
    events.sort_unstable();
    // Per cause (by precedence rank): its open spans, innermost last (strong before weak,
    // then by start, then by order in `spans`, where an enclosing span comes first).
    let mut open: Vec<BTreeSet<(bool, Ns, u32)>> = vec![BTreeSet::new(); PRECEDENCE.len()];
    let key = |i: u32| {
        let s = &spans[i as usize];
        (s.kind.rank(), (!s.weak, s.start, i))
    };
    let apply = |(_, opens, i): (Ns, bool, u32), open: &mut Vec<BTreeSet<(bool, Ns, u32)>>| {
        let (rank, k) = key(i);
        if let Some(set) = open.get_mut(rank) {
            if opens {
                set.insert(k);
            } else {
                set.remove(&k);
            }
        }
    };
    let winner = |open: &[BTreeSet<(bool, Ns, u32)>]| -> (CauseKind, &'t str) {
        open.iter()
            .zip(PRECEDENCE)
            .find_map(|(set, kind)| set.last().map(|&(_, _, i)| (kind, spans[i as usize].label)))
            .unwrap_or((Untraced, ""))
    };
    let mut tally = Tally::default();
    let mut e = 0;
    for (g, &(gs, ge)) in gaps.iter().enumerate() {
        while let Some(&ev) = events.get(e).filter(|ev| ev.0 <= gs) {
            apply(ev, &mut open);
            e += 1;
        }
        tally.ns.clear();
        let mut t = gs;
        while let Some(&ev) = events.get(e).filter(|ev| ev.0 < ge) {
            if ev.0 > t {
                let (kind, label) = winner(&open);
                tally.add(kind, label, ev.0 - t);
                t = ev.0;
            }
            apply(ev, &mut open);
            e += 1;
        }
        let (kind, label) = winner(&open);
        tally.add(kind, label, ge - t);
        on_gap(g, &tally);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drill::{DrillOptions, DrillReport, drill_indexed};
    use crate::index::testing::TraceBuilder;

    fn drilled(b: &TraceBuilder) -> DrillReport {
        let ix = TraceIndex::new(&b.trace, "t");
        drill_indexed(&[ix], &DrillOptions::default())
    }

    /// `(kind, label, ns)` of a device's causes, largest first.
    fn causes(d: &DeviceIdle) -> Vec<(CauseKind, &str, Ns)> {
        d.causes
            .iter()
            .map(|c| (c.kind, c.label.as_str(), c.ns))
            .collect()
    }

    /// Planted causes, each ns worked out by hand. Device 0 (process 7) idles in three 900 ns
    /// gaps between kernels at 0, 1000, 2000 and 3000 (each 100 ns long):
    /// - [100, 1000): a sync 200..500 (300) inside an `aten::item, op_id = 5` range 180..520
    ///   (sync wins; nvtx 40), an `IO 1` range 600..850 (250, nvtx), the launch of the next
    ///   kernel 900..1000 (100), nothing at 100..180, 520..600, 850..900 (210);
    /// - [1100, 2000): a compile range 1000..1900 holding a module load 1200..1300 (jit wins)
    ///   and a GC pause 1400..1500 (gc wins: 100), so jit 700, all inside a `forward 2` range
    ///   1050..1950 (jit wins); a cudaMalloc 1850..1950 of which 1900..1950 is outside the
    ///   compile (alloc 50), a launch 1950..2000 (50);
    /// - [2100, 3000): an `outer` range 2000..3000 with `inner 5` 2500..2600 inside (nvtx 900,
    ///   `outer` holding 800 of it) and a `Holding GIL` range 2100..2300 that names nothing
    ///   while `outer` is open; process 9, which launches only on device 1, syncs 2100..3000.
    ///
    /// Device 1 (process 9) idles 100..3000: its sync 2100..3000 (900), untraced 2000.
    #[test]
    fn planted_causes_get_their_exact_time_and_sum_to_the_idle_time() {
        let mut b = TraceBuilder::new();
        let launch = |b: &mut TraceBuilder, at: Ns| b.call("cudaLaunchKernel", at, at + 5);
        let c = launch(&mut b, 0);
        b.kernel("k1", 0, 100, c);
        b.range("aten::item, op_id = 5", 180, 520);
        b.call("cudaStreamSynchronize_v3020", 200, 500);
        b.range("IO 1", 600, 850);
        let c = b.call("cudaLaunchKernel_v7000", 900, 1000);
        b.kernel("k2", 1000, 1100, c);
        b.range("KernelExecutor::compileFusion", 1000, 1900);
        b.range("forward 2", 1050, 1950);
        b.call("cuModuleLoadDataEx", 1200, 1300);
        b.range("Python GC", 1400, 1500);
        b.call("cudaMalloc_v3020", 1850, 1950);
        let c = b.call("cudaLaunchKernel_v7000", 1950, 2000);
        b.kernel("k3", 2000, 2100, c);
        b.range("outer", 2000, 3000);
        b.range("Holding GIL", 2100, 2300);
        b.range("inner 5", 2500, 2600);
        // Launched while k3 runs: no idle time.
        let c = launch(&mut b, 2000);
        b.kernel("k4", 3000, 3100, c);
        b.thread(9, 9);
        let c = launch(&mut b, 0);
        b.kernel_on((1, 3), "k5", (0, 100), c);
        b.call("cudaStreamSynchronize_v3020", 2100, 3000);
        let c = launch(&mut b, 50);
        b.kernel_on((1, 3), "k6", (3000, 3100), c);

        let d = drilled(&b);
        let [d0, d1] = &d.idle.per_device[..] else {
            panic!("two devices: {:?}", d.idle);
        };
        assert_eq!((d0.device, d0.idle_ns), (0, 2700));
        assert_eq!(
            causes(d0),
            vec![
                (Nvtx, "outer", 1190),
                (Jit, "KernelExecutor::compileFusion", 700),
                (Sync, "cudaStreamSynchronize", 300),
                (Untraced, "", 210),
                (Launch, "cudaLaunchKernel", 150),
                (Gc, "Python GC", 100),
                (Alloc, "cudaMalloc", 50),
            ]
        );
        assert_eq!((d1.device, d1.idle_ns), (1, 2900));
        assert_eq!(
            causes(d1),
            vec![(Untraced, "", 2000), (Sync, "cudaStreamSynchronize", 900)]
        );
        for dev in [d0, d1] {
            assert_eq!(dev.causes.iter().map(|c| c.ns).sum::<Ns>(), dev.idle_ns);
            let shares: f64 = dev.causes.iter().map(|c| c.share).sum();
            assert!((shares - 1.0).abs() < 1e-12, "{shares}");
        }
        // The device-idle total is the gap report's.
        assert_eq!(d.gaps.device_idle.total_us, 5.6);
        // Each gap's cause is the same attribution restricted to it.
        let cause = |start: Ns| {
            let top = &d.gaps.device_idle.top;
            let g = top.iter().find(|g| g.device == 0 && g.start_ns == start);
            let c = g.and_then(|g| g.cause.clone()).expect("a cause");
            (c.kind, c.label, (c.share * 900.0).round() as Ns)
        };
        assert_eq!(cause(100), (Sync, "cudaStreamSynchronize".into(), 300));
        assert_eq!(
            cause(1100),
            (Jit, "KernelExecutor::compileFusion".into(), 700)
        );
        assert_eq!(cause(2100), (Nvtx, "outer".into(), 900));
    }

    /// Stream gaps take the causes of the device-idle time inside them. Device 0: stream 1
    /// runs 0..100 and 1000..1100, stream 2 runs 300..500, stream 3 runs 290..310 and
    /// 490..510, so the device idles 100..290 and 510..1000 (680 ns). Stream 1's 900 ns gap
    /// holds both (a sync 150..250, a launch 900..1000, 480 ns untraced); stream 3's gap
    /// 310..490 lies inside stream 2's kernel: the GPU was busy, it has no cause.
    #[test]
    fn a_stream_gap_has_the_causes_of_the_idle_time_inside_it() {
        let mut b = TraceBuilder::new();
        b.kernel_on((0, 1), "a", (0, 100), 0);
        b.call("cudaStreamSynchronize", 150, 250);
        b.kernel_on((0, 3), "c", (290, 310), 0);
        b.kernel_on((0, 2), "b", (300, 500), 0);
        b.kernel_on((0, 3), "c", (490, 510), 0);
        let c = b.call("cudaLaunchKernel", 900, 1000);
        b.kernel_on((0, 1), "a", (1000, 1100), c);
        let d = drilled(&b);
        assert_eq!(
            causes(&d.idle.per_device[0]),
            vec![
                (Untraced, "", 480),
                (Sync, "cudaStreamSynchronize", 100),
                (Launch, "cudaLaunchKernel", 100)
            ]
        );
        let stream = |s: u32| {
            let g = d
                .gaps
                .top
                .iter()
                .find(|g| g.stream == Some(s))
                .expect("gap");
            (
                g.gap_us,
                g.cause.clone().map(|c| (c.kind, (c.share * 900.0).round())),
            )
        };
        assert_eq!(stream(1), (0.9, Some((Untraced, 480.0))));
        assert_eq!(stream(3), (0.18, None));
        assert!(
            d.gaps
                .top
                .iter()
                .find(|g| g.stream == Some(3))
                .is_some_and(|g| g.reading.starts_with("the GPU ran other streams' kernels")),
            "{:?}",
            d.gaps.top
        );
        // Both stream gaps are < 1 µs: 1080 ns, of which 480 untraced.
        let bucket = d.gaps.bucket_causes[0].clone().expect("a cause");
        assert_eq!(
            (bucket.kind, (bucket.share * 1080.0).round()),
            (Untraced, 480.0)
        );
        let idle = d.gaps.device_idle.bucket_causes[0]
            .clone()
            .expect("a cause");
        assert_eq!((idle.kind, (idle.share * 680.0).round()), (Untraced, 480.0));
        assert!(
            d.gaps.device_idle.bucket_causes[1..]
                .iter()
                .all(Option::is_none)
        );
    }

    fn span(start: Ns, end: Ns, kind: CauseKind, label: &str) -> Span<'_> {
        Span {
            start,
            end,
            kind,
            label,
            weak: false,
        }
    }

    fn swept<'t>(gaps: &[(Ns, Ns)], spans: &mut [Span<'t>]) -> Vec<Vec<(CauseKind, &'t str, Ns)>> {
        spans.sort_by_key(|s| (s.start, Reverse(s.end)));
        let mut out = Vec::new();
        sweep(gaps, spans, |i, t| {
            assert_eq!(i, out.len());
            let mut v: Vec<_> = t.ns.iter().map(|(&(k, l), &ns)| (k, l, ns)).collect();
            v.sort();
            out.push(v);
        });
        out
    }

    /// Two gaps; a nvtx range over both, a launch inside the first, a sync and a GC pause
    /// overlapping in the second (GC first), a weak range losing to a strong one for the label.
    #[test]
    fn every_ns_goes_to_the_first_cause_open_over_it() {
        let gaps = [(100, 200), (300, 400)];
        let mut spans = [
            span(0, 1000, Nvtx, "loop"),
            span(120, 150, Launch, "cudaLaunchKernel"),
            span(310, 390, Sync, "cudaStreamSynchronize"),
            span(350, 420, Gc, "Python GC"),
            Span {
                weak: true,
                ..span(330, 340, Nvtx, "Holding GIL")
            },
            span(250, 305, Nvtx, "inner"),
        ];
        let got = swept(&gaps, &mut spans);
        assert_eq!(
            got[0],
            vec![(Launch, "cudaLaunchKernel", 30), (Nvtx, "loop", 70)]
        );
        // 300..305 inner (innermost nvtx), 305..310 loop, 310..350 sync, 350..400 gc.
        assert_eq!(
            got[1],
            vec![
                (Sync, "cudaStreamSynchronize", 40),
                (Gc, "Python GC", 50),
                (Nvtx, "inner", 5),
                (Nvtx, "loop", 5)
            ]
        );
    }

    #[test]
    fn uncovered_time_is_untraced_and_a_weak_range_labels_only_alone() {
        let gaps = [(0, 10), (20, 30)];
        let mut spans = [
            Span {
                weak: true,
                ..span(22, 28, Nvtx, "Holding GIL")
            },
            span(24, 26, Nvtx, "user"),
        ];
        let got = swept(&gaps, &mut spans);
        assert_eq!(got[0], vec![(Untraced, "", 10)]);
        assert_eq!(
            got[1],
            vec![
                (Nvtx, "Holding GIL", 4),
                (Nvtx, "user", 2),
                (Untraced, "", 4)
            ]
        );
    }

    #[test]
    fn the_precedence_lists_every_cause_once() {
        let all = [
            Sync, Launch, ModuleLoad, Jit, Alloc, Memop, Gc, Gil, Osrt, Comm, Api, Nvtx, Untraced,
        ];
        for k in all {
            assert_eq!(PRECEDENCE.iter().filter(|&&p| p == k).count(), 1, "{k:?}");
            assert_eq!(
                serde_json::to_value(k).ok(),
                Some(serde_json::Value::from(k.name()))
            );
        }
        assert_eq!(PRECEDENCE.last(), Some(&Untraced));
    }

    #[test]
    fn sentences_say_what_was_measured_or_that_nothing_was() {
        let mut t = Tally::default();
        assert_eq!(
            cause_sentence(&t, 0, "sync"),
            "no host activity recorded; typical: sync"
        );
        t.add(Untraced, "", 60);
        t.add(ModuleLoad, "cuLibraryLoadData", 40);
        assert_eq!(
            cause_sentence(&t, 100, "sync"),
            "no host activity recorded for 60.0%, then module_load (cuLibraryLoadData) 40.0%; typical: sync"
        );
        t.add(Launch, "cudaLaunchKernel", 100);
        assert_eq!(
            cause_sentence(&t, 200, "sync"),
            "launch (cudaLaunchKernel) holds 50.0% of the gap time"
        );
    }
}
