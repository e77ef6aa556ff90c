//! Inter-kernel gaps ("bubble profiling", reference §9.1, spec §4): per (device, stream) and per
//! device (idle between any kernels), bucketed, per phase, and the largest gaps attributed to
//! the kernels on either side and to what the host was doing meanwhile.
//!
//! Every device-idle gap's time is attributed to its causes by [`super::idle`] (one sweep per
//! device): the device's `idle` section, each top gap's `cause`, and the readings come from it.
//! A device-idle gap lies whole inside a gap of every stream of the device that ran kernels
//! before and after it, so a stream gap's causes are those of the device-idle gaps inside it
//! (the time other streams kept the GPU busy has no cause).
//!
//! A lane's gaps are those of [`IdleLane`], which the verdict's histogram reads too: the positive
//! holes between its merged kernel intervals, kernels that take no time skipped. The kernel
//! before a gap is the one whose end closed the busy interval; the kernel after is the first to
//! start once the lane is idle.

use std::cmp::Reverse;

use serde::Serialize;

use crate::drill::attribution::{GapSpan, Overlap};
use crate::drill::gaps::{
    Buckets, GapBucket, IdleGap, IdleLane, bucket_cause, bucket_label, bucket_of,
};
use crate::drill::idle::{
    CauseLedger, DeviceIdle, GapCause, HostCauses, IdleAttribution, Tally, cause_sentence,
};
use crate::drill::topk::TopK;
use crate::drill::{attribution, phase_steps};
use crate::index::units::{ratio, us};
use crate::index::{SpanCursor, TraceIndex};
use crate::model::Ns;

/// One of the largest gaps, with what surrounds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopGap {
    pub device: u32,
    /// `None` for device-idle gaps (idle between any kernels of the device).
    pub stream: Option<u32>,
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub gap_us: f64,
    pub prev_kernel: String,
    pub next_kernel: String,
    /// NVTX ranges on the launching thread(s) overlapping the gap, largest overlap first.
    pub nvtx: Vec<Overlap>,
    /// CUDA API calls of the launching process(es) overlapping the gap, largest overlap first.
    pub api: Vec<Overlap>,
    pub bucket: String,
    /// What its measured causes say ([`cause_sentence`]): the dominant cause and its share, or
    /// that no host activity was recorded, with the bucket's typical cause.
    pub reading: String,
    pub file: String,
    /// The cause holding most of the gap's time, as a share of the gap; `None` for a stream
    /// gap during which other streams kept the GPU busy throughout.
    pub cause: Option<GapCause>,
}

/// Bucketed gaps of one phase (context or generation), counted when fully inside its steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseGaps {
    pub phase: String,
    pub steps: u64,
    pub gaps: u64,
    pub total_us: f64,
    pub buckets: Vec<GapBucket>,
}

/// Device-idle gaps (no kernel on any stream of the device).
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
/// bucket's gaps (`causes`, over `gap_ns` of gap time) say, else its typical cause, saying so.
pub fn reading(bucket: usize, causes: &Tally<'_>, gap_ns: Ns) -> String {
    format!(
        "dominated by {}: {}",
        bucket_label(bucket),
        cause_sentence(causes, gap_ns, bucket_cause(bucket))
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
    prev: u32,
    next: u32,
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

/// Accumulates gaps of one kind (stream or device) over every input.
struct Collector {
    buckets: Buckets,
    top: TopK<Candidate>,
    phases: [Buckets; 2],
}

impl Collector {
    fn new(top: usize) -> Collector {
        Collector {
            buckets: Buckets::default(),
            top: TopK::new(top),
            phases: [Buckets::default(); 2],
        }
    }

    /// Counts gap `c`, also in each phase whose steps contain it.
    fn add(&mut self, c: Candidate, phases: &mut [SpanCursor<'_>; 2]) {
        self.buckets.add(c.gap);
        for (b, cursor) in self.phases.iter_mut().zip(phases.iter_mut()) {
            if cursor.covers(c.start, c.end) {
                b.add(c.gap);
            }
        }
        self.top.push(c);
    }
}

/// Gaps of every input; `window` keeps only gaps fully inside `[start, end)` (each file's clock).
pub fn gap_report(inputs: &[TraceIndex<'_>], top: usize, window: Option<(Ns, Ns)>) -> GapReport {
    gaps_and_idle(inputs, top, window).0
}

/// One device of one input: its device-idle gaps inside the window, in time order, and the
/// stream gaps around them.
struct DeviceLane {
    input: usize,
    device: u32,
    gaps: Vec<(Ns, Ns)>,
    covers: Vec<Cover>,
}

/// A stream gap as the device-idle gaps inside it (`gaps[from..to]` of its lane), with its
/// bucket.
struct Cover {
    from: usize,
    to: usize,
    bucket: usize,
}

/// [`gap_report`] and the attribution of every device's idle time ([`super::idle`]), from one
/// scan of the kernels and one attribution sweep per device.
pub fn gaps_and_idle(
    inputs: &[TraceIndex<'_>],
    top: usize,
    window: Option<(Ns, Ns)>,
) -> (GapReport, IdleAttribution) {
    let mut streams = Collector::new(top);
    let mut devices = Collector::new(top);
    let mut device_time: Ns = 0;
    let mut lanes = Vec::new();
    for (input, ix) in inputs.iter().enumerate() {
        let phase_spans = phase_spans(ix);
        let (ws, we) = window.unwrap_or_else(|| ix.kernel_extent());
        device_time += (we - ws).max(0) * ix.devices.len() as Ns;
        for d in &ix.devices {
            // Gaps end where a kernel starts: in device order their ends only grow.
            let mut cursors = [
                SpanCursor::new(&phase_spans[0]),
                SpanCursor::new(&phase_spans[1]),
            ];
            let mut lane = DeviceLane {
                input,
                device: d.device,
                gaps: Vec::new(),
                covers: Vec::new(),
            };
            scan_device((ix, input, d), window, |c, is_stream| {
                if is_stream {
                    // The device gaps found so far end by this one's end (device gaps are
                    // reported first); those starting inside it lie in it.
                    let from = lane.gaps.partition_point(|g| g.0 < c.start);
                    if from < lane.gaps.len() {
                        lane.covers.push(Cover {
                            from,
                            to: lane.gaps.len(),
                            bucket: bucket_of(c.gap),
                        });
                    }
                    streams.add(c, &mut cursors);
                } else {
                    lane.gaps.push((c.start, c.end));
                    devices.add(c, &mut cursors);
                }
            });
            lanes.push(lane);
        }
    }
    let phases = phase_gaps(inputs, &streams);
    let stream_top = streams.top.into_sorted_desc();
    let split = stream_top.len();
    let kept: Vec<Candidate> = stream_top
        .into_iter()
        .chain(devices.top.into_sorted_desc())
        .collect();
    let causes = attribute(inputs, &lanes, &kept);
    let (stream_top, device_top) = finish_top(inputs, kept, split, &causes.top);
    let bucket_causes = |b: &Buckets, tallies: &[Tally<'_>; 9]| -> Vec<Option<GapCause>> {
        (0..tallies.len())
            .map(|i| tallies[i].gap_cause(b.bucket_total(i)))
            .collect()
    };
    let read = |b: &Buckets, tallies: &[Tally<'_>; 9]| {
        b.dominant()
            .map(|i| reading(i, &tallies[i], b.bucket_total(i)))
    };
    let report = GapReport {
        buckets: streams.buckets.list(),
        top: stream_top,
        gaps: streams.buckets.gaps(),
        total_us: us(streams.buckets.total()),
        reading: read(&streams.buckets, &causes.stream_buckets),
        window,
        device_idle: IdleGaps {
            buckets: devices.buckets.list(),
            top: device_top,
            gaps: devices.buckets.gaps(),
            total_us: us(devices.buckets.total()),
            device_time_us: us(device_time),
            idle_share: ratio(devices.buckets.total() as f64, device_time as f64),
            reading: read(&devices.buckets, &causes.device_buckets),
            bucket_causes: bucket_causes(&devices.buckets, &causes.device_buckets),
        },
        phases,
        bucket_causes: bucket_causes(&streams.buckets, &causes.stream_buckets),
    };
    (report, causes.idle)
}

/// What the attribution sweeps gave: per device, per bucket of device and of stream gaps, and
/// per kept top gap.
struct Attributed<'t> {
    idle: IdleAttribution,
    device_buckets: [Tally<'t>; 9],
    stream_buckets: [Tally<'t>; 9],
    top: Vec<Tally<'t>>,
}

/// Attributes every lane's device-idle gaps (one sweep per lane) and adds each gap's causes to
/// its device, its bucket, the buckets of the stream gaps around it and the kept top gaps
/// containing it.
fn attribute<'t>(
    inputs: &[TraceIndex<'t>],
    lanes: &[DeviceLane],
    kept: &[Candidate],
) -> Attributed<'t> {
    let mut out = Attributed {
        idle: IdleAttribution::default(),
        device_buckets: Default::default(),
        stream_buckets: Default::default(),
        top: vec![Tally::default(); kept.len()],
    };
    let mut hosts: Vec<HostCauses<'_, 't>> = inputs.iter().map(HostCauses::new).collect();
    for lane in lanes {
        let Some(host) = hosts.get_mut(lane.input) else {
            continue;
        };
        // Kept gaps of this lane as ranges of its device gaps.
        let tops: Vec<(usize, usize, usize)> = kept
            .iter()
            .enumerate()
            .filter(|(_, c)| c.input == lane.input && c.device == lane.device)
            .map(|(i, c)| {
                let from = lane.gaps.partition_point(|g| g.0 < c.start);
                let to = lane.gaps.partition_point(|g| g.1 <= c.end);
                (i, from, to)
            })
            .collect();
        let mut covers: Vec<&Cover> = lane.covers.iter().collect();
        covers.sort_by_key(|c| c.from);
        let mut covers = covers.into_iter().peekable();
        let mut open: Vec<&Cover> = Vec::new();
        let (device_buckets, stream_buckets, top) = (
            &mut out.device_buckets,
            &mut out.stream_buckets,
            &mut out.top,
        );
        let mut ledger = CauseLedger::default();
        let (idle_ns, total) = host.attribute(lane.device, &lane.gaps, |j, causes| {
            let (start, end) = lane.gaps[j];
            ledger.add_gap((start, end), causes);
            device_buckets[bucket_of(end - start)].merge(causes);
            while let Some(c) = covers.next_if(|c| c.from <= j) {
                open.push(c);
            }
            open.retain(|c| c.to > j);
            for c in &open {
                stream_buckets[c.bucket].merge(causes);
            }
            for &(i, from, to) in &tops {
                if (from..to).contains(&j) {
                    top[i].merge(causes);
                }
            }
        });
        out.idle.per_device.push(DeviceIdle {
            device: lane.device,
            idle_ns,
            causes: ledger.causes(&total, idle_ns),
            file: inputs[lane.input].label.clone(),
        });
    }
    out
}

/// Walks one device's kernels in time order, reporting every stream gap (`true`) and device
/// gap (`false`) inside `window`.
fn scan_device(
    (ix, input, d): (&TraceIndex<'_>, usize, &crate::index::DeviceKernels),
    window: Option<(Ns, Ns)>,
    mut emit: impl FnMut(Candidate, bool),
) {
    let k = &ix.trace.kernels;
    let mut device = IdleLane::default();
    // Few streams per device: a list, searched from the last one used.
    let mut streams: Vec<(u32, IdleLane<u32>)> = Vec::new();
    let mut last = 0;
    for &i in &d.kernels {
        let (s, e) = (k.start[i as usize], k.end[i as usize]);
        let stream = k.stream.get(i as usize).copied().unwrap_or(0);
        let candidate = |gap: IdleGap<u32>, stream: Option<u32>| Candidate {
            gap: gap.ns(),
            start: gap.start,
            input,
            device: d.device,
            stream,
            end: gap.end,
            prev: gap.prev,
            next: i,
        };
        if let Some(g) = device.push(i, s, e).filter(|g| g.inside(window)) {
            emit(candidate(g, None), false);
        }
        if streams.get(last).is_none_or(|l| l.0 != stream) {
            last = match streams.iter().position(|l| l.0 == stream) {
                Some(p) => p,
                None => {
                    streams.push((stream, IdleLane::default()));
                    streams.len() - 1
                }
            };
        }
        if let Some(g) = streams[last].1.push(i, s, e).filter(|g| g.inside(window)) {
            emit(candidate(g, Some(stream)), true);
        }
    }
}

/// Context and generation step windows of one trace, as sorted disjoint spans.
fn phase_spans(ix: &TraceIndex<'_>) -> [Vec<(Ns, Ns)>; 2] {
    let spans = |p: &Option<crate::steps::PhaseSteps>| {
        p.as_ref()
            .map(|p| p.window.spans().to_vec())
            .unwrap_or_default()
    };
    [spans(&ix.steps.context), spans(&ix.steps.generation)]
}

fn phase_gaps(inputs: &[TraceIndex<'_>], streams: &Collector) -> Vec<PhaseGaps> {
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
    inputs: &[TraceIndex<'_>],
    kept: Vec<Candidate>,
    split: usize,
    causes: &[Tally<'_>],
) -> (Vec<TopGap>, Vec<TopGap>) {
    let mut activity = vec![attribution::HostActivity::default(); kept.len()];
    for (input, ix) in inputs.iter().enumerate() {
        let mine: Vec<usize> = (0..kept.len())
            .filter(|&i| kept[i].input == input)
            .collect();
        let spans: Vec<GapSpan> = mine
            .iter()
            .map(|&i| GapSpan {
                start: kept[i].start,
                end: kept[i].end,
                prev: kept[i].prev,
                next: kept[i].next,
            })
            .collect();
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
    ix: &TraceIndex<'_>,
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
        prev_kernel: ix.kernel_name(c.prev as usize).to_string(),
        next_kernel: ix.kernel_name(c.next as usize).to_string(),
        nvtx: a.nvtx,
        api: a.api,
        bucket: bucket_label(b).to_string(),
        reading: cause_sentence(causes, c.gap, bucket_cause(b)),
        file: ix.label.clone(),
        cause: causes.gap_cause(c.gap),
    })
}
