//! The explainer's joins of kernels to the calls that launched them.
//!
//! The host join ([`HostJoin`]) is handed the calls in start order and each kernel once the
//! calls that may have launched it were: it tallies every call and NVTX range once, holds each
//! launch call with the innermost range open on its thread when it was made, and counts each
//! kernel's GPU time under that range with the first read of the percentiles; the copies and
//! memsets are joined to the calls it is handed. What hands it the rows is the drill-down's
//! first pass when the explainer rides on it, else the explainer's own pass ([`own_pass`]).
//! The exact pass ([`exact_pass`]) reads the kernels again with their eager launch calls, for
//! the percentiles' exact values, when they held too many distinct values to know them then.

use std::cell::RefCell;

use hashbrown::HashMap;

use super::stats::Percentiles;
use super::{ApiKinds, Held, Window, api, call_process, kernels, memory, nvtx, processes};
use crate::index::call_facts::CallFacts;
use crate::index::call_join::{CallJoin, Hold, launch_hold};
use crate::index::kernel_pass::CallNote;
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{NO_NAME, NameId, Ns, NvtxRow, Trace};
use crate::names::api::ApiKind;

/// What a kernel's launch call was, joined: the call, its kind, and the innermost NVTX range
/// open on its thread when it was made (`NO_NAME`: none, or ranges not read).
pub(super) type Launch = (CallRow, (ApiKind, NameId));

/// What [`HostJoin`] found of the calls, the ranges and the kernels joined to them.
pub(super) struct HostJoined<'r> {
    pub window: Window,
    pub kinds: ApiKinds,
    pub summaries: api::CallSummaries,
    pub launches: kernels::LaunchCalls,
    pub facts: CallFacts,
    pub ranges: nvtx::RangeTally<'r>,
    pub kernels: Joined<'r>,
    pub copies: memory::CopyJoin<'r>,
}

/// The host join, fed the calls and kernels by a pass (see the module's doc) that joins each
/// kernel to its launch call: the pass holds the launch calls (graph launches to the end),
/// each with what [`HostJoin::call`] noted of it.
pub(super) struct HostJoin<'r> {
    meta: &'r Trace,
    window: Window,
    host: HostTally<'r>,
    open: nvtx::OpenRanges<'r>,
    kernels: Joined<'r>,
    copies: memory::CopyJoin<'r>,
}

impl<'r> HostJoin<'r> {
    /// Over `rows`' calls and ranges inside `window`, the steady steps' spans `steady`; the
    /// durations of the kernel names `top` (keys of [`kernels::name_key`]) get percentiles.
    pub fn new(
        rows: &'r dyn EventRows,
        window: Window,
        steady: &'r [(Ns, Ns)],
        top: Vec<usize>,
    ) -> HostJoin<'r> {
        let meta = rows.meta();
        let (strings, threads) = (meta.strings.len(), meta.threads.len());
        HostJoin {
            meta,
            window,
            host: HostTally {
                kinds: ApiKinds::default(),
                calls: api::CallTally::new(window, steady, strings),
                launches: kernels::LaunchCalls::new(meta.processes.len()),
                facts: CallFacts::default(),
                ranges: nvtx::RangeTally::new(threads, &meta.strings),
            },
            open: nvtx::OpenRanges::new(rows.ranges(), threads),
            kernels: Joined {
                gpu: nvtx::GpuTally::new(&meta.strings),
                latency: Percentiles::new(&api::LATENCY_QUANTILES),
                durations: top
                    .into_iter()
                    .map(|name| (name, Percentiles::new(&kernels::KERNEL_QUANTILES)))
                    .collect(),
                held_entries: 0,
            },
            copies: memory::CopyJoin::new(rows, window),
        }
    }

    /// The next call in start order, tallied and handed to the copies' join: whether a join of
    /// kernels to their launch calls holds it, with its kind and (for a launch) the innermost
    /// range open on its thread.
    pub fn call(&mut self, c: &CallRow, procs: &mut processes::ProcessTally) -> (Hold, CallNote) {
        let (meta, host) = (self.meta, &mut self.host);
        let kind = host.call(meta, c, procs);
        self.copies.call(c, kind, procs);
        let hold = launch_hold(kind);
        if hold == Hold::No {
            return (hold, (kind, NO_NAME));
        }
        let range = self
            .open
            .innermost_reading(c.thread, c.start, &mut |r| host.range(meta, r, procs));
        (hold, (kind, range))
    }

    /// The next kernel in start order, with its launch call and that call's note when joined.
    pub fn kernel(&mut self, k: &KernelRow, launch: Option<Launch>) {
        let strings = self.meta.strings.len();
        self.kernels
            .first(k, launch, kernels::name_key(k.short_name, strings));
    }

    /// What the join found, once every kernel and call was handed: the ranges not read yet are
    /// read and tallied.
    pub fn finish(
        mut self,
        procs: &mut processes::ProcessTally,
        held: &mut Held,
    ) -> HostJoined<'r> {
        held.open_ranges = held.open_ranges.max(self.open.peak());
        let (meta, host) = (self.meta, &mut self.host);
        self.open
            .read_to_end_reading(&mut |r| host.range(meta, r, procs));
        let mut joined = self.kernels;
        joined.latency.end_first();
        joined
            .durations
            .values_mut()
            .for_each(Percentiles::end_first);
        let host = self.host;
        HostJoined {
            window: self.window,
            kinds: host.kinds,
            summaries: host.calls.finish(&meta.strings),
            launches: host.launches,
            facts: host.facts,
            ranges: host.ranges,
            kernels: joined,
            copies: self.copies,
        }
    }
}

/// The explainer's own pass handing `rows`' kernels and calls to `join` (when no other pass
/// did): each kernel after the calls that may have launched it.
pub(super) fn own_pass<'r>(
    rows: &dyn EventRows,
    join: HostJoin<'r>,
    procs: &mut processes::ProcessTally,
    held: &mut Held,
) -> HostJoined<'r> {
    let join = RefCell::new(join);
    let mut calls = CallJoin::with_payload(rows.calls(), |c| join.borrow_mut().call(c, procs));
    for k in rows.kernels() {
        let launch = calls.find_with(k.start, k.process, k.correlation);
        join.borrow_mut().kernel(&k, launch);
    }
    held.pending_calls = held.pending_calls.max(calls.peak());
    calls.read_to_end();
    drop(calls);
    join.into_inner().finish(procs, held)
}

/// Every kernel read again with its eager launch call (the percentiles' exact values, when no
/// other pass handed the kernels again).
pub(super) fn exact_pass(
    rows: &dyn EventRows,
    host: &mut HostJoined<'_>,
    tally: &kernels::KernelTally,
    held: &mut Held,
) {
    let kinds = &host.kinds;
    let mut join = CallJoin::with_payload(rows.calls(), |c| {
        let kind = kinds.get(c.name);
        let hold = match kind {
            ApiKind::Launch => Hold::Once,
            _ => Hold::No,
        };
        (hold, (kind, NO_NAME))
    });
    for k in rows.kernels() {
        let launch = join.find_with(k.start, k.process, k.correlation);
        host.kernels.second(&k, launch, tally);
    }
    held.pending_calls = held.pending_calls.max(join.peak());
}

/// What the host join tallies of the calls and ranges (each once), and the API kinds it
/// classifies.
struct HostTally<'w> {
    kinds: ApiKinds,
    calls: api::CallTally<'w>,
    launches: kernels::LaunchCalls,
    facts: CallFacts,
    ranges: nvtx::RangeTally<'w>,
}

impl HostTally<'_> {
    /// Tallies call `c` of a trace of `meta`; its API kind.
    fn call(&mut self, meta: &Trace, c: &CallRow, procs: &mut processes::ProcessTally) -> ApiKind {
        let kind = self.kinds.classify(&meta.strings, c.name);
        let process = call_process(meta, c);
        self.calls.add(c, kind, process);
        self.launches.add(kind, process);
        procs.call(c, kind, process);
        self.facts.add(kind, c.correlation, process);
        kind
    }

    fn range(&mut self, meta: &Trace, r: &NvtxRow, procs: &mut processes::ProcessTally) {
        self.ranges.add(r);
        procs.range(meta, r);
    }
}

/// Kernel start − launch call end, for a kernel launched eagerly (graph replays queue).
fn eager_latency(k: &KernelRow, launch: Option<Launch>) -> Option<Ns> {
    match launch? {
        (call, (ApiKind::Launch, _)) => Some(k.start - call.end),
        _ => None,
    }
}

fn duration(k: &KernelRow) -> Ns {
    (k.end - k.start).max(0)
}

/// The most entries the percentiles of one trace hold (`stats::Percentiles::first`: 16 MiB
/// of counts at most), so that their exact values are known without reading the kernels again;
/// past it, the kernels are read again.
const HELD_ENTRIES: usize = 1 << 22;

/// What the kernels say once joined to their launch calls.
pub(super) struct Joined<'t> {
    /// GPU time per innermost launching range.
    pub gpu: nvtx::GpuTally<'t>,
    /// Kernel start − launch call end of eagerly launched kernels.
    pub latency: Percentiles,
    /// The durations of the top kernel names, by [`kernels::name_key`].
    pub durations: HashMap<usize, Percentiles>,
    /// Entries the percentiles hold, all told (bounded by [`HELD_ENTRIES`]).
    held_entries: usize,
}

impl Joined<'_> {
    /// Kernel `k` (name key `name`) read first, with its launch.
    fn first(&mut self, k: &KernelRow, launch: Option<Launch>, name: usize) {
        let range = launch.map_or(NO_NAME, |(_, (_, range))| range);
        self.gpu.add(range, duration(k));
        let mut added = 0;
        if let Some(latency) = eager_latency(k, launch) {
            added += self.latency.first(latency);
        }
        if let Some(p) = self.durations.get_mut(&name) {
            added += p.first(duration(k));
        }
        self.held_entries += added;
        if added > 0 && self.held_entries > HELD_ENTRIES {
            self.latency.release_values();
            self.durations
                .values_mut()
                .for_each(Percentiles::release_values);
        }
    }

    /// Whether the percentiles' exact values need the kernels read again.
    pub fn needs_second(&self) -> bool {
        self.latency.needs_second() || self.durations.values().any(Percentiles::needs_second)
    }

    /// Kernel `k` read again, with its launch: the percentiles' exact values.
    pub fn second(&mut self, k: &KernelRow, launch: Option<Launch>, tally: &kernels::KernelTally) {
        if let Some(latency) = eager_latency(k, launch) {
            self.latency.second(latency);
        }
        if let Some(p) = self.durations.get_mut(&tally.name_key(k.short_name)) {
            p.second(duration(k));
        }
    }
}
