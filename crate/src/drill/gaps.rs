//! GPU-idle gaps: the time between consecutive kernels of a device (any stream), bucketed into
//! the reference's nine buckets (`[lo, hi)` µs), each with its typical cause (reference §9.1).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::model::{KernelEvent, Ns, OutOfOrder, StartOrder, Trace};

/// The nine buckets: upper bounds in ns (the last is open), label, typical cause.
const BUCKETS: [(Ns, &str, &str); 9] = [
    (1_000, "< 1 µs", "normal dispatch pipeline"),
    (5_000, "1–5 µs", "CUDA-graph segment replay overhead"),
    (10_000, "5–10 µs", "cudaGraphLaunch dispatch"),
    (
        50_000,
        "10–50 µs",
        "light Python dispatch between graph segments",
    ),
    (
        100_000,
        "50–100 µs",
        "gap between piecewise graph replays (Python dispatch loop)",
    ),
    (
        500_000,
        "100–500 µs",
        "Python interpreter overhead between launches",
    ),
    (
        1_000_000,
        "500 µs–1 ms",
        "heavy Python (tensor view chains, metadata prep)",
    ),
    (5_000_000, "1–5 ms", "Python overhead in eager code paths"),
    (
        Ns::MAX,
        "> 5 ms",
        "host-device sync (.item()) or runtime object creation (cudaEventCreate)",
    ),
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
    pub cause: String,
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
        self.totals[b] += gap;
    }

    pub fn gaps(&self) -> u64 {
        self.counts.iter().sum()
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

    /// The nine buckets with counts, totals, shares of all gap time and causes.
    pub fn list(&self) -> Vec<GapBucket> {
        let all = self.total();
        let mut lo = 0;
        BUCKETS
            .iter()
            .enumerate()
            .map(|(i, &(hi, label, cause))| {
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
                    cause: cause.to_string(),
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

/// A bucket's typical cause (reference §9.1).
pub fn bucket_cause(bucket: usize) -> &'static str {
    BUCKETS.get(bucket).map_or("", |b| b.2)
}

/// Positive gaps between a device's merged kernel intervals (idle between any kernels), over
/// all devices, optionally only those inside `window` (`[start, end)` ns).
pub fn idle_gap_histogram(trace: &Trace, window: Option<(Ns, Ns)>) -> GapHistogram {
    let mut sweep = GapSweep::new(window);
    for ev in trace.kernels.events_in_start_order() {
        // In start order by construction, so no push is refused.
        if sweep.push(&ev).is_err() {
            break;
        }
    }
    sweep.finish()
}

/// The idle-gap histogram in one pass over kernels in start order, keeping per device only the
/// busy interval still open: the page streams kernels into it without holding the table.
#[derive(Debug, Clone, Default)]
pub struct GapSweep {
    window: Option<(Ns, Ns)>,
    /// Per device (ascending): the union of its kernels not yet closed by a gap, if any kernel
    /// with a positive duration was seen.
    devices: BTreeMap<u32, Option<(Ns, Ns)>>,
    buckets: Buckets,
    order: StartOrder,
}

impl GapSweep {
    /// A sweep keeping only gaps inside `window` (`[start, end)` ns), or all of them.
    pub fn new(window: Option<(Ns, Ns)>) -> GapSweep {
        GapSweep {
            window,
            ..GapSweep::default()
        }
    }

    /// Adds the next kernel; one starting before the previous one is refused (the caller falls
    /// back to loading the table) and leaves the sweep unchanged.
    pub fn push(&mut self, ev: &KernelEvent) -> Result<(), OutOfOrder> {
        self.order.check(ev)?;
        let open = self.devices.entry(ev.device).or_default();
        if ev.end <= ev.start {
            return Ok(());
        }
        match open {
            Some(busy) if ev.start <= busy.1 => busy.1 = busy.1.max(ev.end),
            _ => {
                if let Some((_, idle_from)) = open.replace((ev.start, ev.end)) {
                    let (s, e) = (idle_from, ev.start);
                    if !self.window.is_some_and(|(ws, we)| s < ws || e > we) {
                        self.buckets.add(e - s);
                    }
                }
            }
        }
        Ok(())
    }

    /// The histogram of every gap seen.
    pub fn finish(self) -> GapHistogram {
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
        .position(|&(hi, _, _)| ns < hi)
        .unwrap_or(BUCKETS.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
