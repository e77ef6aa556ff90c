//! Inter-kernel gaps ("bubble profiling", reference §9.1, spec §4): per (device, stream) and per
//! device (idle between any GPU work, over the verdict's window), bucketed, per phase, and the
//! largest gaps attributed to the kernels on either side and to what the host was doing
//! meanwhile.
//!
//! One pass over each trace's kernels in start order finds every gap, all devices at once: each
//! device keeps its busy interval, its streams' and its idle sweep. Every device-idle stretch's
//! time is attributed to its causes by [`super::idle`] (one sweep per device) as the pass finds
//! it: the device's `idle` section, each top gap's `cause`, and the readings come from it.
//! A device-idle gap lies whole inside a gap of every stream of the device that ran kernels
//! before and after it, so a stream gap's causes are those of the device-idle gaps inside it
//! (the time other streams kept the GPU busy has no cause).
//!
//! A stream's gaps are those of [`IdleLane`]: the positive holes between its merged GPU-work
//! intervals (kernels, graph replays, copies, memsets: the kernel pass reads
//! `EventRows::gpu_work`), rows that take no time skipped, wholly inside the user's window. A
//! device's idle time is [`WindowIdle`]'s, which the verdict's histogram reads too: the window
//! (the user's, else the trace's first GPU operation to its last, as the verdict's) minus its
//! busy time, in stretches: its lane's gaps, the time before its first operation and after its
//! last, cut to the window. The row before a gap is the one whose end closed the busy interval;
//! the row after is the first to start once the lane is idle.

use std::cmp::Reverse;

use serde::Serialize;

use crate::drill::attribution::{GapSpan, Overlap};
use crate::drill::gaps::{
    Buckets, GapBucket, IdleGap, IdleLane, IdleStretch, WindowIdle, bucket_label, bucket_of,
};
use crate::drill::idle::{
    AheadWatch, CauseLedger, DeviceIdle, DeviceSweep, GapCause, HostCauses, IdleAttribution, Tally,
    cause_sentence,
};
use crate::drill::topk::TopK;
use crate::drill::{attribution, phase_steps};
use crate::index::Fold;
use crate::index::SpanCursor;
use crate::index::kernel_pass::{kernel_pass, kernel_pass_visiting};
use crate::index::rows::RowIndex;
use crate::index::units::{ratio, us};
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{NameId, Ns, ProcessIdx, ThreadIdx};

/// One of the largest gaps, with what surrounds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopGap {
    pub device: u32,
    /// `None` for device-idle gaps (idle between any kernels of the device).
    pub stream: Option<u32>,
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub gap_us: f64,
    /// The GPU operation before it (`None`: a device-idle stretch from the window's start,
    /// before the device's first operation).
    pub prev_kernel: Option<String>,
    /// The GPU operation after it (`None`: a device-idle stretch to the window's end, after
    /// the device's last operation).
    pub next_kernel: Option<String>,
    /// NVTX ranges on the launching thread(s) overlapping the gap, largest overlap first.
    pub nvtx: Vec<Overlap>,
    /// CUDA API calls of the launching process(es) overlapping the gap, largest overlap first.
    pub api: Vec<Overlap>,
    pub bucket: String,
    /// What its measured causes say ([`cause_sentence`]): the dominant cause and its share, or
    /// that no host activity was recorded.
    pub reading: String,
    pub file: String,
    /// The cause holding most of the gap's time, as a share of the gap; `None` for a stream
    /// gap during which other streams kept the GPU busy throughout.
    pub cause: Option<GapCause>,
}

impl TopGap {
    /// The names of what is on either side, as a reader sees them: the operations, or `window
    /// start` / `window end` for a device-idle stretch at the window's edge.
    pub fn sides(&self) -> (&str, &str) {
        (
            self.prev_kernel.as_deref().unwrap_or(WINDOW_START),
            self.next_kernel.as_deref().unwrap_or(WINDOW_END),
        )
    }
}

/// What a reader sees on the side of a stretch that starts at the window's start.
pub const WINDOW_START: &str = "(window start)";
/// What a reader sees on the side of a stretch that ends at the window's end.
pub const WINDOW_END: &str = "(window end)";

/// Bucketed gaps of one phase (context or generation), counted when fully inside its steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseGaps {
    pub phase: String,
    pub steps: u64,
    pub gaps: u64,
    pub total_us: f64,
    pub buckets: Vec<GapBucket>,
}

/// Device-idle stretches of the window (no GPU work — kernel, graph replay, copy, memset — on
/// any stream of the device): the gaps between its operations, and the window's time before its
/// first and after its last ([`WindowIdle`]); their total is the verdict's idle time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleGaps {
    pub buckets: Vec<GapBucket>,
    pub top: Vec<TopGap>,
    pub gaps: u64,
    pub total_us: f64,
    /// Window length × devices: the device time the idle gaps are a share of.
    pub device_time_us: f64,
    pub idle_share: f64,
    pub reading: Option<String>,
    /// Per bucket (as `buckets`), the cause holding most of its gap time; `None` when it has no
    /// gap.
    pub bucket_causes: Vec<Option<GapCause>>,
}

/// The `gaps` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapReport {
    /// Per (device, stream) gaps (the reference's definition).
    pub buckets: Vec<GapBucket>,
    pub top: Vec<TopGap>,
    pub gaps: u64,
    pub total_us: f64,
    /// The dominant bucket and what its measured causes say (reference §9.1 "reading the
    /// distribution", with the cause measured rather than assumed).
    pub reading: Option<String>,
    pub window: Option<(Ns, Ns)>,
    pub device_idle: IdleGaps,
    pub phases: Vec<PhaseGaps>,
    /// Per bucket (as `buckets`), the cause holding most of its gap time (a share of the
    /// stream gaps' time: the time other streams kept the GPU busy has no cause); `None` when
    /// its gaps hold no device-idle time (no gap, or other streams busy throughout).
    pub bucket_causes: Vec<Option<GapCause>>,
}

/// The reading of a distribution dominated by `bucket`: what the causes measured in that
/// bucket's gaps (`causes`, over `gap_ns` of gap time) say.
pub fn reading(bucket: usize, causes: &Tally<'_>, gap_ns: Ns) -> String {
    format!(
        "dominated by {}: {}",
        bucket_label(bucket),
        cause_sentence(causes, gap_ns)
    )
}

/// A gap before attribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    gap: Ns,
    start: Ns,
    end: Ns,
    input: usize,
    device: u32,
    stream: Option<u32>,
    /// `None` at the window's start or end (a device-idle stretch before the device's first
    /// operation or after its last).
    prev: Option<KernelRef>,
    next: Option<KernelRef>,
}

/// What a gap keeps of the kernel on either side: its names, its process and the thread of its
/// launch call (when joined).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelRef {
    pub short_name: NameId,
    pub demangled_name: NameId,
    pub process: ProcessIdx,
    pub thread: Option<ThreadIdx>,
}

/// The order in which gaps are kept: the longer gap, then the earlier, then the lower lane.
type Rank = (Ns, Reverse<(Ns, usize, u32, Option<u32>)>);

impl Candidate {
    fn rank(&self) -> Rank {
        (
            self.gap,
            Reverse((self.start, self.input, self.device, self.stream)),
        )
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Candidate) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Candidate) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A kept gap and its causes (those of the device-idle time inside it), ordered as its gap.
struct Kept<'t> {
    gap: Candidate,
    causes: Tally<'t>,
}

impl Ord for Kept<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.gap.cmp(&other.gap)
    }
}

impl PartialOrd for Kept<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Kept<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.gap == other.gap
    }
}

impl Eq for Kept<'_> {}

/// Accumulates gaps of one kind (stream or device) over every input.
struct Collector<'t> {
    buckets: Buckets,
    top: TopK<Kept<'t>>,
    phases: [Buckets; 2],
}

impl<'t> Collector<'t> {
    fn new(top: usize) -> Collector<'t> {
        Collector {
            buckets: Buckets::default(),
            top: TopK::new(top),
            phases: [Buckets::default(); 2],
        }
    }

    /// Counts gap `c` (whose causes are `causes`), also in each phase whose steps contain it.
    fn add(&mut self, c: Candidate, causes: &Tally<'t>, phases: &mut [SpanCursor<'_>; 2]) {
        self.buckets.add(c.gap);
        for (b, cursor) in self.phases.iter_mut().zip(phases.iter_mut()) {
            if cursor.covers(c.start, c.end) {
                b.add(c.gap);
            }
        }
        let mut kept = Kept {
            gap: c,
            causes: Tally::default(),
        };
        if self.top.admits(&kept) {
            kept.causes = causes.clone();
            self.top.push(kept);
        }
    }
}

/// Gaps of every input; `window` (`[start, end)`, each file's clock) replaces the trace's: the
/// device-idle stretches are cut to it, per-stream gaps kept when wholly inside it.
pub fn gap_report(inputs: &[RowIndex<'_>], top: usize, window: Option<(Ns, Ns)>) -> GapReport {
    fold_gaps(inputs, top, window).0
}

/// The causes gathered over every device: per device, and per bucket of device and of stream
/// gaps.
#[derive(Default)]
struct Causes<'t> {
    idle: IdleAttribution,
    /// Per bucket, the causes of the device-idle stretches that are whole gaps between two
    /// operations ([`IdleStretch::between`]).
    device_buckets: [Tally<'t>; 9],
    /// Per bucket, the causes of the other stretches (at the window's edges, or cut by it): no
    /// stream gap holds them.
    edge_buckets: [Tally<'t>; 9],
    stream_buckets: [Tally<'t>; 9],
}

/// Both collectors and the causes, filled as every device's scan finds gaps.
struct Found<'t> {
    streams: Collector<'t>,
    devices: Collector<'t>,
    causes: Causes<'t>,
    /// With one stream per device everywhere, each stream gap is its device's gap: the stream
    /// buckets' causes are the device buckets', gathered once.
    one_stream: bool,
}

/// [`gap_report`] and the attribution of every device's idle time ([`super::idle`]), from one
/// pass over each input's kernels in start order: each device keeps its busy interval, its
/// streams' and its idle sweep, and each device-idle gap is attributed as the pass finds it.
pub fn fold_gaps<'t>(
    inputs: &[RowIndex<'t>],
    top: usize,
    window: Option<(Ns, Ns)>,
) -> (GapReport, IdleAttribution) {
    let mut folds = GapFolds::new(inputs, top, window);
    for (input, ix) in inputs.iter().enumerate() {
        let host = HostCauses::new(ix);
        let mut gaps = folds.input((ix, input), &host);
        kernel_pass(ix, &mut [&mut gaps]);
        gaps.finish();
    }
    folds.finish(inputs)
}

/// One trace's gaps and idle time by cause as the drill-down's first pass finds them, under
/// its default options: what an analysis sweeping the same gaps leaves for the drill-down of
/// the same trace after it (Root cause's window pass, for the page's Drill-down).
#[derive(Debug, Clone)]
pub struct SweptGaps {
    /// The largest gaps kept, and no window.
    pub top: usize,
    pub gaps: GapReport,
    pub idle: IdleAttribution,
}

impl SweptGaps {
    /// The gaps and idle time, each row naming the trace `label`.
    pub fn labeled(&self, label: &str) -> (GapReport, IdleAttribution) {
        let (mut gaps, mut idle) = (self.gaps.clone(), self.idle.clone());
        let tops = gaps.top.iter_mut().chain(gaps.device_idle.top.iter_mut());
        tops.for_each(|g| g.file = label.to_string());
        idle.per_device
            .iter_mut()
            .for_each(|d| d.file = label.to_string());
        (gaps, idle)
    }
}

/// One trace's gaps and idle time by cause ([`fold_gaps`] keeping the drill-down's default
/// number of gaps, no window), with `also` folded over its kernel pass and every call handed
/// to `visit`: for an analysis that reads the kernels joined to their launches, or every
/// call, anyway.
pub(crate) fn swept_visiting(
    ix: &RowIndex<'_>,
    also: &mut [&mut dyn Fold],
    visit: Option<&mut dyn FnMut(&CallRow)>,
) -> SweptGaps {
    let inputs = std::slice::from_ref(ix);
    let top = super::DEFAULT_TOP;
    let mut folds = GapFolds::new(inputs, top, None);
    let host = HostCauses::new(ix);
    let mut gaps = folds.input((ix, 0), &host);
    let mut all: Vec<&mut dyn Fold> = Vec::with_capacity(also.len() + 1);
    all.push(&mut gaps);
    for f in also.iter_mut() {
        all.push(*f);
    }
    kernel_pass_visiting(ix, &mut all, visit);
    gaps.finish();
    let (gaps, idle) = folds.finish(inputs);
    SweptGaps { top, gaps, idle }
}

/// The gaps of every input, gathered as each input's pass finds them ([`GapFolds::input`]).
pub(crate) struct GapFolds<'t> {
    found: Found<'t>,
    window: Option<(Ns, Ns)>,
    /// Window length × devices, summed over inputs.
    device_time: Ns,
}

impl<'t> GapFolds<'t> {
    /// Keeps the `top` largest gaps of each kind, only gaps inside `window` when given.
    pub(crate) fn new(inputs: &[RowIndex<'t>], top: usize, window: Option<(Ns, Ns)>) -> Self {
        let device_time = inputs
            .iter()
            .map(|ix| {
                let (ws, we) = window.unwrap_or(ix.extent);
                we.saturating_sub(ws)
                    .max(0)
                    .saturating_mul(ix.devices.len() as Ns)
            })
            .sum();
        let one_stream = inputs
            .iter()
            .all(|ix| ix.devices.iter().all(|d| d.one_stream));
        GapFolds {
            found: Found {
                streams: Collector::new(top),
                devices: Collector::new(top),
                causes: Causes::default(),
                one_stream,
            },
            window,
            device_time,
        }
    }

    /// The fold of input `input`'s kernels, its idle time attributed over `host`'s intervals.
    pub(crate) fn input<'f, 'h>(
        &'f mut self,
        (ix, input): (&'h RowIndex<'t>, usize),
        host: &'h HostCauses<'h, 't>,
    ) -> InputGaps<'f, 'h, 't> {
        let spans = ix.phase_spans();
        let others = ix.devices.len().saturating_sub(1) as u32;
        let scans: Vec<DeviceScan<'h, 't>> = ix
            .devices
            .iter()
            .map(|d| DeviceScan {
                device: d.device,
                lane: WindowIdle::default(),
                streams: Vec::new(),
                last: 0,
                causes: LaneCauses::new(host.device(d), host.ahead_watch(d, others)),
                cursors: spans.map(SpanCursor::new),
            })
            .collect();
        let watching = scans.iter().any(|d| d.causes.watch.is_some());
        InputGaps {
            found: &mut self.found,
            ix,
            input,
            window: self.window,
            span: self.window.unwrap_or(ix.extent),
            scans,
            watching,
        }
    }

    /// The report and the attribution, once every input's pass is done.
    pub(crate) fn finish(self, inputs: &[RowIndex<'t>]) -> (GapReport, IdleAttribution) {
        let (found, window, device_time) = (self.found, self.window, self.device_time);
        let Found {
            streams,
            devices,
            causes,
            one_stream,
        } = found;
        let phases = phase_gaps(inputs, &streams);
        let stream_top = streams.top.into_sorted_desc();
        let split = stream_top.len();
        let (kept, top_causes): (Vec<Candidate>, Vec<Tally<'t>>) = stream_top
            .into_iter()
            .chain(devices.top.into_sorted_desc())
            .map(|k| (k.gap, k.causes))
            .unzip();
        let (stream_top, device_top) = finish_top(inputs, kept, split, &top_causes);
        let Causes {
            idle,
            device_buckets: between,
            edge_buckets,
            stream_buckets,
        } = causes;
        // With one stream per device, the stream gaps are the device stretches between two
        // operations; the device's buckets add the stretches at the window's edges.
        let stream_buckets = match one_stream {
            true => between.clone(),
            false => stream_buckets,
        };
        let mut device_buckets = between;
        for (all, edge) in device_buckets.iter_mut().zip(&edge_buckets) {
            all.merge(edge);
        }
        let bucket_causes = |b: &Buckets, tallies: &[Tally<'_>; 9]| -> Vec<Option<GapCause>> {
            (0..tallies.len())
                .map(|i| tallies[i].gap_cause(b.bucket_total(i)))
                .collect()
        };
        let read = |b: &Buckets, tallies: &[Tally<'_>; 9]| {
            b.dominant()
                .map(|i| reading(i, &tallies[i], b.bucket_total(i)))
        };
        // Each bucket with the mix of causes measured in its gaps.
        let measured = |b: &Buckets, tallies: &[Tally<'_>; 9]| -> Vec<GapBucket> {
            let mut list = b.list();
            for (i, bucket) in list.iter_mut().enumerate() {
                bucket.causes = tallies[i].mix(b.bucket_total(i));
            }
            list
        };
        let report = GapReport {
            buckets: measured(&streams.buckets, &stream_buckets),
            top: stream_top,
            gaps: streams.buckets.gaps(),
            total_us: us(streams.buckets.total()),
            reading: read(&streams.buckets, &stream_buckets),
            window,
            device_idle: IdleGaps {
                buckets: measured(&devices.buckets, &device_buckets),
                top: device_top,
                gaps: devices.buckets.gaps(),
                total_us: us(devices.buckets.total()),
                device_time_us: us(device_time),
                idle_share: ratio(devices.buckets.total() as f64, device_time as f64),
                reading: read(&devices.buckets, &device_buckets),
                bucket_causes: bucket_causes(&devices.buckets, &device_buckets),
            },
            phases,
            bucket_causes: bucket_causes(&streams.buckets, &stream_buckets),
        };
        (report, idle)
    }
}

/// One device during the pass: its busy interval, its streams' (few per device: a list,
/// searched from the last one used), its idle sweep and its phase cursors.
struct DeviceScan<'h, 't> {
    device: u32,
    lane: WindowIdle<KernelRef>,
    streams: Vec<(u32, IdleLane<KernelRef>)>,
    last: usize,
    causes: LaneCauses<'h, 't>,
    /// Gaps end where a kernel starts: in device order their ends only grow.
    cursors: [SpanCursor<'h>; 2],
}

/// The fold of one input's kernels, every device at once: each device-idle gap inside the
/// window is attributed and counted, each stream gap counted with the causes of the
/// device-idle gaps inside it.
pub(crate) struct InputGaps<'f, 'h, 't> {
    found: &'f mut Found<'t>,
    ix: &'h RowIndex<'t>,
    input: usize,
    /// The user's window: per-stream gaps count wholly inside it.
    window: Option<(Ns, Ns)>,
    /// The window device idle time is counted over: the user's, else the trace's GPU work.
    span: (Ns, Ns),
    scans: Vec<DeviceScan<'h, 't>>,
    /// Some device watches the others' work during its command-buffer-full records.
    watching: bool,
}

impl Fold for InputGaps<'_, '_, '_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        if self.watching {
            // Before this row's own device attributes the gap it closes (the row starts where
            // that gap ends, so it overlaps none of it).
            for d in self.scans.iter_mut().filter(|d| d.device != k.device) {
                if let Some(w) = d.causes.watch.as_mut() {
                    w.offer(k, d.lane.busy_until());
                }
            }
        }
        let Ok(slot) = self.scans.binary_search_by_key(&k.device, |d| d.device) else {
            return;
        };
        let me = KernelRef {
            short_name: k.short_name,
            demangled_name: k.demangled_name,
            process: k.process,
            thread: call.map(|c| c.thread),
        };
        let d = &mut self.scans[slot];
        if scan_kernel(d, (self.input, k, me), (self.window, self.span), self.found) {
            self.ix.peak.intervals(d.causes.sweep.open_intervals());
        }
        if let (Some(w), Some(busy)) = (d.causes.watch.as_mut(), d.lane.busy_until()) {
            w.prune(busy);
        }
    }
}

impl InputGaps<'_, '_, '_> {
    /// Attributes each device's last stretch (to the window's end) and hands its idle time and
    /// causes over, once the pass is done.
    pub(crate) fn finish(self) {
        for mut d in self.scans {
            if let Some(last) = d.lane.finish(self.span) {
                device_stretch(&mut d, self.input, last, self.found);
            }
            let idle = d.causes.finish(d.device, self.ix.label.clone());
            self.found.causes.idle.per_device.push(idle);
        }
    }
}

/// Attributes and counts one idle stretch of device `d`'s window.
fn device_stretch<'t>(
    d: &mut DeviceScan<'_, 't>,
    input: usize,
    s: IdleStretch<KernelRef>,
    found: &mut Found<'t>,
) {
    let c = Candidate {
        gap: s.ns(),
        start: s.start,
        end: s.end,
        input,
        device: d.device,
        stream: None,
        prev: s.prev,
        next: s.next,
    };
    let buckets = match s.between {
        true => &mut found.causes.device_buckets,
        false => &mut found.causes.edge_buckets,
    };
    let tally = d.causes.device_gap((c.start, c.end), buckets);
    found.devices.add(c, tally, &mut d.cursors);
}

/// Adds kernel `k` to its device's scan: the device-idle stretch it ends (in the window, the
/// user's `window` or else the trace's `span`) is attributed and counted; when it takes time,
/// its stream's gap (wholly inside the user's window) is counted with the causes pending on the
/// stream. Whether a device stretch was attributed (the sweep moved).
fn scan_kernel<'t>(
    d: &mut DeviceScan<'_, 't>,
    (input, k, me): (usize, &KernelRow, KernelRef),
    (window, span): (Option<(Ns, Ns)>, (Ns, Ns)),
    found: &mut Found<'t>,
) -> bool {
    let (s, e) = (k.start, k.end);
    let device_stretch_found = d.lane.push(me, (s, e), span);
    let swept = device_stretch_found.is_some();
    if let Some(stretch) = device_stretch_found {
        device_stretch(d, input, stretch, found);
    }
    let stream = k.stream;
    if d.streams.get(d.last).is_none_or(|l| l.0 != stream) {
        d.last = match d.streams.iter().position(|l| l.0 == stream) {
            Some(p) => p,
            None => {
                d.streams.push((stream, IdleLane::default()));
                d.streams.len() - 1
            }
        };
    }
    let gap = d.streams[d.last]
        .1
        .push(me, s, e)
        .filter(|g| g.inside(window));
    let candidate = |gap: IdleGap<KernelRef>, stream: Option<u32>| Candidate {
        gap: gap.ns(),
        start: gap.start,
        input,
        device: d.device,
        stream,
        end: gap.end,
        prev: Some(gap.prev),
        next: Some(me),
    };
    // A kernel that takes no time leaves its lane as it was (`IdleLane::push`).
    if e <= s {
        return swept;
    }
    let pending = d.causes.pending(d.last);
    if let Some(g) = gap {
        let c = candidate(g, Some(stream));
        if !found.one_stream {
            found.causes.stream_buckets[bucket_of(c.gap)].merge(pending);
        }
        found.streams.add(c, pending, &mut d.cursors);
    }
    pending.clear();
    swept
}

/// One device's idle time attributed gap by gap, as its kernel scan finds the gaps.
///
/// A device-idle gap lies in the current gap of every stream that has run a kernel (all are
/// idle during it), and a stream's gap holds exactly the device-idle gaps found since its last
/// kernel: so each stream keeps the causes of those (`pending`) until its next kernel, which
/// either closes a gap holding them or (overlapping the stream's busy time) finds none pending.
struct LaneCauses<'h, 't> {
    sweep: DeviceSweep<'h, 't>,
    /// The other devices' work during this device's command-buffer-full records, if it has any.
    watch: Option<AheadWatch>,
    /// The device's causes, per label, with their evidence.
    ledger: CauseLedger<'t>,
    idle_ns: Ns,
    /// Per stream slot of the scan, the causes of the device-idle gaps since its last kernel.
    pending: Vec<Tally<'t>>,
}

impl<'h, 't> LaneCauses<'h, 't> {
    fn new(sweep: DeviceSweep<'h, 't>, watch: Option<AheadWatch>) -> LaneCauses<'h, 't> {
        LaneCauses {
            sweep,
            watch,
            ledger: CauseLedger::default(),
            idle_ns: 0,
            pending: Vec::new(),
        }
    }

    /// Attributes the next device-idle gap and adds its causes to the device, its bucket (of
    /// `buckets`) and every stream's pending causes; returns them.
    fn device_gap(&mut self, (start, end): (Ns, Ns), buckets: &mut [Tally<'t>; 9]) -> &Tally<'t> {
        self.sweep.gap((start, end));
        let (ahead, causes) = self.sweep.last_gap();
        if let Some(w) = self.watch.as_ref().filter(|_| !ahead.is_empty()) {
            w.measure(ahead, &mut causes.meanwhile);
        }
        let causes = &*causes;
        self.idle_ns = self.idle_ns.saturating_add(end - start);
        self.ledger.add_gap((start, end), causes);
        buckets[bucket_of(end - start)].merge(causes);
        for p in &mut self.pending {
            p.merge(causes);
        }
        causes
    }

    /// The pending causes of stream slot `slot`.
    fn pending(&mut self, slot: usize) -> &mut Tally<'t> {
        if slot >= self.pending.len() {
            self.pending.resize_with(slot + 1, Tally::default);
        }
        &mut self.pending[slot]
    }

    fn finish(self, device: u32, file: String) -> DeviceIdle {
        DeviceIdle {
            device,
            idle_ns: self.idle_ns,
            causes: self.ledger.causes(self.idle_ns),
            file,
            cpu_records: self.sweep.cpu_records(),
        }
    }
}

fn phase_gaps(inputs: &[RowIndex<'_>], streams: &Collector) -> Vec<PhaseGaps> {
    ["context", "generation"]
        .iter()
        .zip(&streams.phases)
        .zip(phase_steps(inputs))
        .filter(|&(_, steps)| steps > 0)
        .map(|((name, b), steps)| PhaseGaps {
            phase: name.to_string(),
            steps,
            gaps: b.gaps(),
            total_us: us(b.total()),
            buckets: b.list(),
        })
        .collect()
}

/// Names, host activity and causes of the kept stream and device gaps (`kept[..split]` are
/// the stream gaps, largest first), host activity attributed together: one pass over each
/// input's NVTX and runtime tables.
fn finish_top(
    inputs: &[RowIndex<'_>],
    kept: Vec<Candidate>,
    split: usize,
    causes: &[Tally<'_>],
) -> (Vec<TopGap>, Vec<TopGap>) {
    let mut activity = vec![attribution::HostActivity::default(); kept.len()];
    for (input, ix) in inputs.iter().enumerate() {
        // A stretch at the window's edge has an operation on one side only (a device that ran
        // only rows taking no time, none: nothing says whose host time it is).
        let (mine, spans): (Vec<usize>, Vec<GapSpan>) = (0..kept.len())
            .filter(|&i| kept[i].input == input)
            .filter_map(|i| {
                let (prev, next) = (kept[i].prev, kept[i].next);
                let span = GapSpan {
                    start: kept[i].start,
                    end: kept[i].end,
                    kernels: [prev.or(next)?, next.or(prev)?],
                };
                Some((i, span))
            })
            .unzip();
        for (i, a) in mine.into_iter().zip(attribution::attribute(ix, &spans)) {
            activity[i] = a;
        }
    }
    let empty = Tally::default();
    let mut gaps: Vec<TopGap> = kept
        .into_iter()
        .zip(activity)
        .enumerate()
        .filter_map(|(i, (c, a))| {
            top_gap(inputs.get(c.input)?, &c, a, causes.get(i).unwrap_or(&empty))
        })
        .collect();
    let devices = gaps.split_off(split.min(gaps.len()));
    (gaps, devices)
}

fn top_gap(
    ix: &RowIndex<'_>,
    c: &Candidate,
    a: attribution::HostActivity,
    causes: &Tally<'_>,
) -> Option<TopGap> {
    let b = bucket_of(c.gap);
    Some(TopGap {
        device: c.device,
        stream: c.stream,
        start_ns: c.start,
        end_ns: c.end,
        gap_us: us(c.gap),
        prev_kernel: c.prev.map(|k| kernel_name(ix, &k).to_string()),
        next_kernel: c.next.map(|k| kernel_name(ix, &k).to_string()),
        nvtx: a.nvtx,
        api: a.api,
        bucket: bucket_label(b).to_string(),
        reading: cause_sentence(causes, c.gap),
        file: ix.label.clone(),
        cause: causes.gap_cause(c.gap),
    })
}

fn kernel_name<'t>(ix: &RowIndex<'t>, k: &KernelRef) -> &'t str {
    ix.kernel_name(k.short_name, k.demangled_name)
}
