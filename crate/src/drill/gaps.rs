//! GPU-idle gaps: the time between consecutive kernels of a device (any stream), bucketed into
//! the reference's nine buckets (`[lo, hi)` µs). The reference (§9.1) names a typical cause per
//! bucket; nsys-lens shows none it did not measure: the drill-down gives each bucket the causes
//! its gaps' time was attributed to (`causes`), the verdict's histogram none.
//!
//! [`IdleLane`] finds a lane's gaps; [`WindowIdle`] cuts a device's idle time in the window
//! into stretches (its gaps, and the window's time before its first and after its last
//! operation) for every device-idle histogram: the verdict's ([`GapSweep`]) and the
//! drill-down's ([`super::gap_report`]), so they cannot disagree, nor with the verdict's idle
//! time. Per-stream lanes keep the gaps wholly inside the window ([`IdleGap::inside`]).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::idle::CauseShare;
use crate::model::rows::EventRows;
use crate::model::{KernelRow, Ns, OutOfOrder, StartOrder};

/// The nine buckets: upper bounds in ns (the last is open) and labels.
const BUCKETS: [(Ns, &str); 9] = [
    (1_000, "< 1 µs"),
    (5_000, "1–5 µs"),
    (10_000, "5–10 µs"),
    (50_000, "10–50 µs"),
    (100_000, "50–100 µs"),
    (500_000, "100–500 µs"),
    (1_000_000, "500 µs–1 ms"),
    (5_000_000, "1–5 ms"),
    (Ns::MAX, "> 5 ms"),
];

/// One bucket of the histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapBucket {
    pub label: String,
    pub lo_us: f64,
    /// `None` for the open last bucket.
    pub hi_us: Option<f64>,
    pub count: u64,
    pub total_us: f64,
    /// Share of all idle-gap time.
    pub share: f64,
    /// What held its gaps' time, as the drill-down measures it (each cause's share of the
    /// bucket's gap time, largest first); empty where nothing was attributed (the verdict's
    /// histogram, a bucket without gaps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<CauseShare>,
}

/// Idle gaps of every device, bucketed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapHistogram {
    pub buckets: Vec<GapBucket>,
    pub gaps: u64,
    pub total_us: f64,
    pub devices: Vec<u32>,
}

/// Gap counts and totals per bucket, filled one gap at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Buckets {
    counts: [u64; 9],
    totals: [Ns; 9],
}

impl Buckets {
    pub fn add(&mut self, gap: Ns) {
        let b = bucket_of(gap);
        self.counts[b] += 1;
        self.totals[b] = self.totals[b].saturating_add(gap);
    }

    pub fn gaps(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Gap time in bucket `b`, ns.
    pub fn bucket_total(&self, b: usize) -> Ns {
        self.totals.get(b).copied().unwrap_or(0)
    }

    /// Total gap time in ns.
    pub fn total(&self) -> Ns {
        self.totals.iter().sum()
    }

    /// The bucket holding the most gap time, if any gap was added.
    pub fn dominant(&self) -> Option<usize> {
        (self.gaps() > 0).then(|| {
            (0..BUCKETS.len())
                .max_by_key(|&i| (self.totals[i], std::cmp::Reverse(i)))
                .unwrap_or(0)
        })
    }

    /// The nine buckets with counts, totals and shares of all gap time.
    pub fn list(&self) -> Vec<GapBucket> {
        let all = self.total();
        let mut lo = 0;
        BUCKETS
            .iter()
            .enumerate()
            .map(|(i, &(hi, label))| {
                let bucket = GapBucket {
                    label: label.to_string(),
                    lo_us: lo as f64 / 1000.0,
                    hi_us: (hi != Ns::MAX).then_some(hi as f64 / 1000.0),
                    count: self.counts[i],
                    total_us: self.totals[i] as f64 / 1000.0,
                    share: if all > 0 {
                        self.totals[i] as f64 / all as f64
                    } else {
                        0.0
                    },
                    causes: Vec::new(),
                };
                lo = hi;
                bucket
            })
            .collect()
    }
}

/// A bucket's label (`"50–100 µs"`).
pub fn bucket_label(bucket: usize) -> &'static str {
    BUCKETS.get(bucket).map_or("", |b| b.1)
}

/// One lane's busy union (a device, or one stream of it) as its kernels arrive in start order:
/// the idle gaps are the positive holes between its merged intervals, so overlapping kernels
/// (concurrent streams) never yield a negative or double-counted gap, and touching ones none.
///
/// A kernel that takes no time (zero-length, or a damaged row ending before it starts) is
/// skipped: it occupies no time, so the GPU stays idle across it and the gap stays whole. The
/// reference's documentation-only SQL (§9.1) pairs consecutive rows of a lane in start order,
/// which would cut a gap in two at such a row; but the histogram is read for how long the GPU
/// waited for the host between pieces of work, and a kernel of no duration is no work: cut in
/// two, a 120 µs wait (Python overhead, 100–500 µs) would read as two 60 µs ones (graph-replay
/// dispatch, 50–100 µs). `K` names a kernel: the one whose end opened a gap is reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdleLane<K> {
    /// The open busy interval's end and the kernel that ends it.
    busy: Option<(Ns, K)>,
}

/// A gap between two merged busy intervals of a lane: `[start, end)` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleGap<K> {
    pub start: Ns,
    pub end: Ns,
    /// The kernel whose end closed the busy interval before the gap.
    pub prev: K,
}

impl<K: Copy> IdleLane<K> {
    /// Where its busy time so far ends (its later gaps start there or after), once it has
    /// had work.
    pub fn busy_until(&self) -> Option<Ns> {
        self.busy.as_ref().map(|b| b.0)
    }

    /// Adds kernel `k` running `[start, end)` (a lane's kernels come in non-decreasing start);
    /// returns the gap it closes, if any.
    pub fn push(&mut self, k: K, start: Ns, end: Ns) -> Option<IdleGap<K>> {
        if end <= start {
            return None;
        }
        let Some((busy_until, last)) = &mut self.busy else {
            self.busy = Some((end, k));
            return None;
        };
        let gap = (start > *busy_until).then_some(IdleGap {
            start: *busy_until,
            end: start,
            prev: *last,
        });
        // After a gap `end > start > busy_until`, so this also restarts the busy interval.
        if end >= *busy_until {
            *busy_until = end;
            *last = k;
        }
        gap
    }
}

impl<K: Copy> IdleLane<K> {
    /// The operation whose end closes its busy time so far, once it has had work.
    pub fn last(&self) -> Option<K> {
        self.busy.as_ref().map(|b| b.1)
    }
}

/// A stretch of a device's idle time inside a window: `[start, end)`, with the operations of
/// the device on either side (`None`: none on that side, the window's start or end bounds it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleStretch<K> {
    pub start: Ns,
    pub end: Ns,
    pub prev: Option<K>,
    pub next: Option<K>,
    /// The stretch is a whole gap between two operations (not cut by the window, nor before
    /// the device's first operation or after its last): what a per-stream lane can see too.
    pub between: bool,
}

impl<K> IdleStretch<K> {
    /// The stretch's length in ns.
    pub fn ns(&self) -> Ns {
        self.end - self.start
    }
}

/// One device's idle time in a window (spec §2: `[first GPU operation's start, last one's end]`
/// over all devices, or the user's), as its GPU work arrives in start order: the window minus
/// its busy time, in stretches cut at its operations. Between two operations a stretch is the
/// gap of its [`IdleLane`]; before the device's first operation the window's start opens one,
/// after its last the window's end closes one (a device that starts late or ends early in a
/// multi-GPU trace idles there); a gap the window cuts counts the part inside it. So a device's
/// stretches add up to its idle time as the verdict measures it (M1's numerator), which the
/// drill-down's attribution, its histogram and the verdict's histogram all count.
#[derive(Debug, Clone, Copy, Default)]
pub struct WindowIdle<K> {
    lane: IdleLane<K>,
}

impl<K: Copy> WindowIdle<K> {
    /// Where its busy time so far ends, once it has had work.
    pub fn busy_until(&self) -> Option<Ns> {
        self.lane.busy_until()
    }

    /// Adds operation `k` running `[start, end)` (in non-decreasing start); returns the idle
    /// stretch of `window` it ends, if any.
    pub fn push(
        &mut self,
        k: K,
        (start, end): (Ns, Ns),
        window: (Ns, Ns),
    ) -> Option<IdleStretch<K>> {
        if end <= start {
            return None;
        }
        if self.lane.busy_until().is_none() {
            self.lane.push(k, start, end);
            return stretch((window.0, start), (None, Some(k)), window);
        }
        let gap = self.lane.push(k, start, end)?;
        stretch((gap.start, gap.end), (Some(gap.prev), Some(k)), window)
    }

    /// The stretch from its last operation (the window's start without any) to the window's
    /// end, once every operation was pushed.
    pub fn finish(&self, window: (Ns, Ns)) -> Option<IdleStretch<K>> {
        let from = self.lane.busy_until().unwrap_or(window.0);
        stretch((from, window.1), (self.lane.last(), None), window)
    }
}

/// `[start, end)` clipped to `window`, if anything of it is left.
fn stretch<K>(
    (start, end): (Ns, Ns),
    (prev, next): (Option<K>, Option<K>),
    (ws, we): (Ns, Ns),
) -> Option<IdleStretch<K>> {
    let (a, b) = (start.max(ws), end.min(we));
    let between = prev.is_some() && next.is_some() && (a, b) == (start, end);
    (b > a).then_some(IdleStretch {
        start: a,
        end: b,
        prev,
        next,
        between,
    })
}

impl<K> IdleGap<K> {
    /// The gap's length in ns.
    pub fn ns(&self) -> Ns {
        self.end - self.start
    }

    /// Whether the gap lies wholly inside `window` (`[start, end)` ns), or there is none.
    pub fn inside(&self, window: Option<(Ns, Ns)>) -> bool {
        window.is_none_or(|(ws, we)| self.start >= ws && self.end <= we)
    }
}

/// Every device's idle stretches in the window ([`WindowIdle`]: the gaps between its merged
/// GPU-work intervals — kernels, graph replays, copies, memsets — and the window's time before
/// its first and after its last operation), bucketed; the window is `window` (`[start, end)`
/// ns), else the first GPU operation's start to the last one's end.
pub fn idle_gap_histogram(rows: &dyn EventRows, window: Option<(Ns, Ns)>) -> GapHistogram {
    let mut sweep = GapSweep::new(window);
    for ev in rows.gpu_work() {
        // In start order by construction, so no push is refused.
        if sweep.push(&ev).is_err() {
            break;
        }
    }
    sweep.finish()
}

/// The idle-stretch histogram in one pass over GPU work in start order, keeping per device
/// only the busy interval still open: the page streams the rows into it without holding the
/// table.
#[derive(Debug, Clone, Default)]
pub struct GapSweep {
    window: Option<(Ns, Ns)>,
    /// The first operation's start and the last end so far (the window when none is given).
    extent: Option<(Ns, Ns)>,
    /// Per device (ascending, every device that ran GPU work): its idle time in the window.
    devices: BTreeMap<u32, WindowIdle<()>>,
    buckets: Buckets,
    order: StartOrder,
}

impl GapSweep {
    /// A sweep over `window` (`[start, end)` ns), or over the rows' extent.
    pub fn new(window: Option<(Ns, Ns)>) -> GapSweep {
        GapSweep {
            window,
            ..GapSweep::default()
        }
    }

    /// Adds the next row; one starting before the previous one is refused (the caller falls
    /// back to loading the table) and leaves the sweep unchanged.
    pub fn push(&mut self, ev: &KernelRow) -> Result<(), OutOfOrder> {
        self.order.check(ev)?;
        let extent = match self.extent {
            Some((first, last)) => (first, last.max(ev.end)),
            None => (ev.start, ev.end),
        };
        self.extent = Some(extent);
        // Rows come in start order: the extent's start is known, its end not yet (no gap
        // reaches past the last end).
        let window = self.window.unwrap_or((extent.0, Ns::MAX));
        let lane = self.devices.entry(ev.device).or_default();
        if let Some(s) = lane.push((), (ev.start, ev.end), window) {
            self.buckets.add(s.ns());
        }
        Ok(())
    }

    /// The histogram of every stretch, the last ones (to the window's end) included.
    pub fn finish(mut self) -> GapHistogram {
        if let Some(window) = self.window.or(self.extent) {
            for lane in self.devices.values() {
                if let Some(s) = lane.finish(window) {
                    self.buckets.add(s.ns());
                }
            }
        }
        GapHistogram {
            buckets: self.buckets.list(),
            gaps: self.buckets.gaps(),
            total_us: self.buckets.total() as f64 / 1000.0,
            devices: self.devices.into_keys().collect(),
        }
    }
}

/// The bucket of a gap of `ns` nanoseconds (half-open `[lo, hi)`).
pub fn bucket_of(ns: Ns) -> usize {
    BUCKETS
        .iter()
        .position(|&(hi, _)| ns < hi)
        .unwrap_or(BUCKETS.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapping and touching kernels make one busy interval; a zero-length and an
    /// end-before-start kernel leave the lane idle; the kernel before a gap is the one whose
    /// end closed the interval, not the last to start.
    #[test]
    fn a_lane_gaps_between_its_merged_intervals_and_across_timeless_kernels() {
        let kernels = [
            ('a', 0, 100),
            ('b', 50, 120),
            ('c', 120, 130),
            ('z', 200, 200),
            ('d', 300, 250),
            ('e', 400, 500),
            ('f', 450, 460),
            ('g', 600, 700),
        ];
        let mut lane = IdleLane::default();
        let gaps: Vec<IdleGap<char>> = kernels
            .iter()
            .filter_map(|&(k, s, e)| lane.push(k, s, e))
            .collect();
        let want = [(130, 400, 'c'), (500, 600, 'e')].map(|(start, end, prev)| IdleGap {
            start,
            end,
            prev,
        });
        assert_eq!(gaps, want);
        assert_eq!(gaps.iter().map(IdleGap::ns).collect::<Vec<_>>(), [270, 100]);
        assert!(gaps[0].inside(Some((130, 400))) && gaps[0].inside(None));
        assert!(!gaps[0].inside(Some((131, 1000))) && !gaps[0].inside(Some((0, 399))));
    }

    #[test]
    fn buckets_are_half_open() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(999), 0);
        assert_eq!(bucket_of(1_000), 1);
        assert_eq!(bucket_of(4_999), 1);
        assert_eq!(bucket_of(5_000), 2);
        assert_eq!(bucket_of(999_999), 6);
        assert_eq!(bucket_of(1_000_000), 7);
        assert_eq!(bucket_of(5_000_000), 8);
        assert_eq!(bucket_of(Ns::MAX - 1), 8);
    }
}
