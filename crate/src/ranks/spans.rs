//! The map's part of why a rank was late ([`super::cause`]): what every span of every rank of
//! one file holds, written into its summary so that the reduce needs no host rows.
//!
//! A span is the time from a collective kernel's end to the next collective kernel's start on
//! the same rank, on the file's own clock: the time before that arrival. The reduce picks the
//! spans before the straggler's late arrivals and the other ranks' spans before the same
//! collectives, and sums what they hold — so the map measures every span, not knowing which
//! rank will be late. One-shot `ranks` runs this map too: one code path.
//!
//! Why the sums over a chosen set equal a measure over its union: a rank's kernels come in
//! start order, so its non-empty spans never overlap (span `j` ends at kernel `j`'s start, no
//! later than kernel `j' − 1`'s end, where span `j' > j` begins) and an empty one (the previous
//! kernel still running) holds nothing. Both measures are additive over disjoint spans: the
//! host sweep gives each ns of a span to one cause, whatever other spans were swept before it
//! (an interval ending before one span's start covers no later span), and the device's busy
//! time is a union of its work cut by each span.
//!
//! Per span: the device busy with compute, copies and other collectives ([`GPU`]), and the
//! host's time per (cause, label) as the idle attribution's sweep gives it, the pair a place
//! in the rank's list of the pairs its spans hold. Size: a few numbers per collective kernel
//! and per distinct pair in its span, never a row per ordinary kernel.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::drill::idle::{CauseKind, HostCauses};
use crate::drill::stragglers::Rank;
use crate::index::Fold;
use crate::index::kernel_pass::kernel_pass;
use crate::index::rows::RowIndex;
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{Ns, Work};

/// The GPU causes, in their order in [`SpanCauses::gpu`].
pub const GPU: [&str; 3] = ["compute", "copies", "collectives"];

/// What one span holds. Written as `[[compute, copies, collectives], [[pair, ns], …]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SpanTuple", into = "SpanTuple")]
pub struct SpanCauses {
    /// The device's busy time inside the span per [`GPU`] cause (ns; each a union of its work,
    /// so they may overlap each other and the host's causes).
    pub gpu: [Ns; 3],
    /// The host's time per (cause, label): a place in the rank's `causes`, and its ns (they add
    /// up to the span).
    pub host: Vec<(u32, Ns)>,
}

/// [`SpanCauses`] as its JSON array.
type SpanTuple = ([Ns; 3], Vec<(u32, Ns)>);

impl From<SpanTuple> for SpanCauses {
    fn from((gpu, host): SpanTuple) -> SpanCauses {
        SpanCauses { gpu, host }
    }
}

impl From<SpanCauses> for SpanTuple {
    fn from(s: SpanCauses) -> SpanTuple {
        (s.gpu, s.host)
    }
}

/// What one rank's spans hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankSpans {
    /// The (cause, label) pairs its spans' host time falls in, in order of first use.
    pub causes: Vec<(CauseKind, String)>,
    /// One per collective kernel: the span before it (the first kernel's is empty: no
    /// collective before it).
    pub spans: Vec<SpanCauses>,
}

/// The span before each of `kernels` (`(start, end)` in start order) that is not empty, as
/// `(kernel, (from, to))`: sorted and disjoint.
fn open_spans(kernels: &[(Ns, Ns)]) -> Vec<(usize, (Ns, Ns))> {
    kernels
        .windows(2)
        .enumerate()
        .filter_map(|(i, w)| {
            let (from, to) = (w.first()?.1, w.get(1)?.0);
            (to > from).then_some((i + 1, (from, to)))
        })
        .collect()
}

/// Which spans of one rank of a trace to measure: its device, its collective kernels'
/// `(start, end)` in start order, and the places of the kernels whose spans are asked for
/// (ascending; `None`: every one).
pub(crate) struct SpanAsk<'a> {
    pub device: u32,
    pub kernels: &'a [(Ns, Ns)],
    pub only: Option<&'a [usize]>,
}

impl<'a> SpanAsk<'a> {
    /// Every span of `rank`.
    pub(crate) fn every(rank: &'a Rank) -> SpanAsk<'a> {
        SpanAsk {
            device: rank.id.device,
            kernels: &rank.kernels,
            only: None,
        }
    }

    /// Its non-empty spans asked for, as `(kernel, (from, to))`: sorted and disjoint.
    fn spans(&self) -> Vec<(usize, (Ns, Ns))> {
        let mut spans = open_spans(self.kernels);
        if let Some(only) = self.only {
            spans.retain(|(j, _)| only.binary_search(j).is_ok());
        }
        spans
    }
}

/// What the spans `asks` name (ranks of `ix`) hold: one pass over its kernels for the devices'
/// busy time, one sweep of its host intervals per rank. A span not asked for is left empty.
pub(crate) fn measure(ix: &RowIndex<'_>, asks: &[SpanAsk<'_>]) -> Vec<RankSpans> {
    let mut fold = GpuFold {
        ix,
        lanes: asks
            .iter()
            .map(|a| Lane::new(a.device, a.spans()))
            .collect(),
    };
    kernel_pass(ix, &mut [&mut fold]);
    let host = HostCauses::new(ix);
    asks.iter()
        .zip(&fold.lanes)
        .map(|(ask, lane)| {
            let mut out = RankSpans {
                causes: Vec::new(),
                spans: vec![SpanCauses::default(); ask.kernels.len()],
            };
            for (&(j, _), gpu) in lane.spans.iter().zip(&lane.ns) {
                if let Some(s) = out.spans.get_mut(j) {
                    s.gpu = *gpu;
                }
            }
            if let Some(facts) = ix.devices.iter().find(|d| d.device == lane.device) {
                sweep_host(&mut out, &host, facts, &lane.spans);
            }
            out
        })
        .collect()
}

/// Each span's host time per (cause, label), by the idle attribution's sweep of `facts`'s
/// device; the pairs in each span sorted, so a summary is written the same every time.
fn sweep_host(
    out: &mut RankSpans,
    host: &HostCauses<'_, '_>,
    facts: &crate::index::rows::DeviceFacts,
    spans: &[(usize, (Ns, Ns))],
) {
    let mut sweep = host.device(facts);
    let mut places: BTreeMap<(CauseKind, String), u32> = BTreeMap::new();
    for &(j, span) in spans {
        let mut got: Vec<(CauseKind, &str, Ns)> = sweep.gap(span).iter().collect();
        got.sort_unstable();
        let mut held = Vec::with_capacity(got.len());
        for (kind, label, ns) in got {
            let key = (kind, label.to_string());
            let next = out.causes.len() as u32;
            let at = *places.entry(key.clone()).or_insert_with(|| {
                out.causes.push(key);
                next
            });
            held.push((at, ns));
        }
        if let Some(s) = out.spans.get_mut(j) {
            s.host = held;
        }
    }
}

/// Each rank's device's busy time inside its spans, per [`GPU`] cause.
struct GpuFold<'a, 't> {
    ix: &'a RowIndex<'t>,
    lanes: Vec<Lane>,
}

struct Lane {
    device: u32,
    /// Its non-empty spans as `(kernel, (from, to))`, sorted and disjoint.
    spans: Vec<(usize, (Ns, Ns))>,
    /// Per GPU cause: the end of its work so far, and the first span not yet passed.
    busy: [(Ns, usize); 3],
    /// Per span: its busy time per GPU cause.
    ns: Vec<[Ns; 3]>,
}

impl Lane {
    fn new(device: u32, spans: Vec<(usize, (Ns, Ns))>) -> Lane {
        Lane {
            device,
            ns: vec![[0; 3]; spans.len()],
            spans,
            busy: [(Ns::MIN, 0); 3],
        }
    }

    /// Work of cause `c` over `[start, end)`: its part not counted yet, to each span it falls
    /// in.
    fn add(&mut self, c: usize, (start, end): (Ns, Ns)) {
        let Some((until, cursor)) = self.busy.get_mut(c) else {
            return;
        };
        let from = start.max(*until);
        *until = (*until).max(end);
        if end <= from {
            return;
        }
        while self.spans.get(*cursor).is_some_and(|s| s.1.1 <= from) {
            *cursor += 1;
        }
        let at = *cursor;
        for (&(_, (s, e)), ns) in self.spans.iter().zip(&mut self.ns).skip(at) {
            if s >= end {
                break;
            }
            if let Some(n) = ns.get_mut(c) {
                *n = n.saturating_add((end.min(e) - from.max(s)).max(0));
            }
        }
    }
}

impl Fold for GpuFold<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, _: Option<&CallRow>) {
        let c = match k.work {
            Work::Copy { .. } | Work::Memset => 1,
            _ if self.ix.names.is_collective(k.short_name) => 2,
            _ => 0,
        };
        for lane in self.lanes.iter_mut().filter(|l| l.device == k.device) {
            lane.add(c, (k.start, k.end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_run_from_each_kernel_s_end_to_the_next_one_s_start_empty_ones_left_out() {
        // The second kernel still runs when the third starts: no span before the third.
        let kernels = [(0, 10), (20, 50), (40, 60), (70, 80)];
        assert_eq!(open_spans(&kernels), vec![(1, (10, 20)), (3, (60, 70))]);
        assert_eq!(open_spans(&[]), vec![]);
    }

    #[test]
    fn busy_time_goes_to_the_span_it_falls_in_each_ns_once() {
        let mut lane = Lane::new(0, vec![(1, (100, 200)), (2, (300, 400))]);
        // 50..150 → 50 in the first span; 120..320 overlaps: 150..200 and 300..320.
        lane.add(0, (50, 150));
        lane.add(0, (120, 320));
        // A copy inside the second span, and one after every span.
        lane.add(1, (350, 360));
        lane.add(1, (500, 600));
        assert_eq!(lane.ns, vec![[50 + 50, 0, 0], [20, 10, 0]]);
    }

    #[test]
    fn a_span_is_written_as_a_small_array() {
        let s = SpanCauses {
            gpu: [1, 2, 3],
            host: vec![(0, 40)],
        };
        let text = serde_json::to_string(&s).expect("json");
        assert_eq!(text, "[[1,2,3],[[0,40]]]");
        assert_eq!(serde_json::from_str::<SpanCauses>(&text).expect("read"), s);
    }
}
