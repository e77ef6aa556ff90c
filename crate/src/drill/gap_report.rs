//! Inter-kernel gaps ("bubble profiling", reference §9.1, spec §4): per (device, stream) and per
//! device (idle between any kernels), bucketed, per phase, and the largest gaps attributed to
//! the kernels on either side and to what the host was doing meanwhile.
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
    /// The bucket's typical cause.
    pub reading: String,
    pub file: String,
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
}

/// The `gaps` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapReport {
    /// Per (device, stream) gaps (the reference's definition).
    pub buckets: Vec<GapBucket>,
    pub top: Vec<TopGap>,
    pub gaps: u64,
    pub total_us: f64,
    /// What the dominant bucket says (reference §9.1 "reading the distribution").
    pub reading: Option<String>,
    pub window: Option<(Ns, Ns)>,
    pub device_idle: IdleGaps,
    pub phases: Vec<PhaseGaps>,
}

/// The reading of a distribution dominated by `bucket` (reference §9.1).
pub fn reading(bucket: usize) -> String {
    let label = bucket_label(bucket);
    match bucket {
        4 => format!("dominated by {label}: piecewise CUDA-graph replay dispatch"),
        5..=7 => format!("dominated by {label}: Python interpreter overhead between launches"),
        8 => format!(
            "dominated by {label}: host-device syncs (.item()) or runtime object creation (cudaEventCreate)"
        ),
        _ => format!("dominated by {label}: {}", bucket_cause(bucket)),
    }
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
    let mut streams = Collector::new(top);
    let mut devices = Collector::new(top);
    let mut device_time: Ns = 0;
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
            scan_device((ix, input, d), window, |c, is_stream| {
                let sink = if is_stream {
                    &mut streams
                } else {
                    &mut devices
                };
                sink.add(c, &mut cursors);
            });
        }
    }
    let phases = phase_gaps(inputs, &streams);
    let (stream_top, device_top) = finish_top(inputs, streams.top, devices.top);
    GapReport {
        buckets: streams.buckets.list(),
        top: stream_top,
        gaps: streams.buckets.gaps(),
        total_us: us(streams.buckets.total()),
        reading: streams.buckets.dominant().map(reading),
        window,
        device_idle: IdleGaps {
            buckets: devices.buckets.list(),
            top: device_top,
            gaps: devices.buckets.gaps(),
            total_us: us(devices.buckets.total()),
            device_time_us: us(device_time),
            idle_share: ratio(devices.buckets.total() as f64, device_time as f64),
            reading: devices.buckets.dominant().map(reading),
        },
        phases,
    }
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

/// Names and host activity of the kept stream and device gaps (largest first), attributed
/// together: one pass over each input's NVTX and runtime tables.
fn finish_top(
    inputs: &[TraceIndex<'_>],
    streams: TopK<Candidate>,
    devices: TopK<Candidate>,
) -> (Vec<TopGap>, Vec<TopGap>) {
    let streams = streams.into_sorted_desc();
    let split = streams.len();
    let kept: Vec<Candidate> = streams
        .into_iter()
        .chain(devices.into_sorted_desc())
        .collect();
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
    let mut gaps: Vec<TopGap> = kept
        .into_iter()
        .zip(activity)
        .filter_map(|(c, a)| top_gap(inputs.get(c.input)?, &c, a))
        .collect();
    let devices = gaps.split_off(split.min(gaps.len()));
    (gaps, devices)
}

fn top_gap(ix: &TraceIndex<'_>, c: &Candidate, a: attribution::HostActivity) -> Option<TopGap> {
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
        reading: bucket_cause(b).to_string(),
        file: ix.label.clone(),
    })
}
