//! Summary statistics as the reference's `compute_stats`: upper median, nearest-rank p90.

use serde::Serialize;

use crate::pyfmt;

/// `{avg, min, max, p50, p90, count}` of a list of µs values; all zero when empty.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Stats {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub count: usize,
}

/// p50 and p90 only (the `T.inter_step_gap_us` shape).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
}

impl Stats {
    /// Sorted ascending: `avg = sum/n` (left-to-right, as Python ≤ 3.11), `p50 = s[n/2]`,
    /// `p90 = s[int(n·0.9)]` with the float product, as the reference computes it.
    pub fn of(values: &[f64]) -> Stats {
        Stats::of_owned(values.to_vec())
    }

    /// [`Stats::of`] a list it may sort in place.
    pub fn of_owned(mut sorted: Vec<f64>) -> Stats {
        if sorted.is_empty() {
            return Stats::default();
        }
        let n = sorted.len();
        let avg = pyfmt::naive_sum(sorted.iter().copied()) / n as f64;
        sorted.sort_by(f64::total_cmp);
        let at = |i: usize| sorted[i.min(n - 1)];
        Stats {
            avg,
            min: sorted[0],
            max: sorted[n - 1],
            p50: at(n / 2),
            p90: at((n as f64 * 0.9) as usize),
            count: n,
        }
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.p50,
            p90: self.p90,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_median_and_nearest_rank_p90() {
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (s.p50, s.p90, s.min, s.max, s.count),
            (3.0, 4.0, 1.0, 4.0, 4)
        );
        assert_eq!(s.avg, 2.5);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Stats::of(&ten);
        assert_eq!((s.p50, s.p90), (6.0, 10.0));
        // int(29 * 0.9) = int(26.1) = 26 → the 27th value.
        let v: Vec<f64> = (0..29).map(f64::from).collect();
        assert_eq!(Stats::of(&v).p90, 26.0);
        assert_eq!(Stats::of(&[]), Stats::default());
    }
}
