//! GPU-idle gaps: the time between consecutive kernels of a device (any stream), bucketed into
//! the reference's nine buckets (`[lo, hi)` µs), each with its typical cause (reference §9.1).

use serde::{Deserialize, Serialize};

use crate::model::intervals::MergeSorted;
use crate::model::{Ns, Trace};

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
    let mut buckets = Buckets::default();
    let devices = trace.kernels.devices();
    for &d in &devices {
        for (s, e) in device_gaps(trace, d) {
            if window.is_some_and(|(ws, we)| s < ws || e > we) {
                continue;
            }
            buckets.add(e - s);
        }
    }
    GapHistogram {
        buckets: buckets.list(),
        gaps: buckets.gaps(),
        total_us: buckets.total() as f64 / 1000.0,
        devices,
    }
}

/// The bucket of a gap of `ns` nanoseconds (half-open `[lo, hi)`).
pub fn bucket_of(ns: Ns) -> usize {
    BUCKETS
        .iter()
        .position(|&(hi, _, _)| ns < hi)
        .unwrap_or(BUCKETS.len() - 1)
}

/// Idle gaps `(end of one busy interval, start of the next)` of one device.
fn device_gaps(trace: &Trace, device: u32) -> Vec<(Ns, Ns)> {
    let k = &trace.kernels;
    let mut idx: Vec<u32> = (0..k.len() as u32)
        .filter(|&i| k.device[i as usize] == device)
        .collect();
    idx.sort_unstable_by_key(|&i| (k.start[i as usize], k.end[i as usize]));
    let merged = MergeSorted::new(
        idx.iter()
            .map(|&i| (k.start[i as usize], k.end[i as usize])),
    );
    let mut gaps = Vec::new();
    let mut prev: Option<Ns> = None;
    for (s, e) in merged {
        if let Some(p) = prev
            && s > p
        {
            gaps.push((p, s));
        }
        prev = Some(e);
    }
    gaps
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
