//! The typical delay of a device: the median of the last ones measured.

use std::collections::VecDeque;

use crate::model::Ns;

/// Delays measured on a device: the last few, whose median is the typical one. The window is
/// also kept sorted, so the median (asked for at every operation of every replay) is a lookup,
/// not a sort.
#[derive(Debug, Default)]
pub(super) struct Typical {
    /// The window in the order measured.
    samples: VecDeque<Ns>,
    /// The same values, ascending.
    sorted: Vec<Ns>,
}

const TYPICAL_SAMPLES: usize = 31;

impl Typical {
    pub(super) fn push(&mut self, d: Ns) {
        if d < 0 {
            return;
        }
        if self.samples.len() == TYPICAL_SAMPLES
            && let Some(old) = self.samples.pop_front()
            && let Ok(at) = self.sorted.binary_search(&old)
        {
            self.sorted.remove(at);
        }
        self.samples.push_back(d);
        let at = self.sorted.partition_point(|&s| s < d);
        self.sorted.insert(at, d);
    }

    pub(super) fn median(&self, default: Ns) -> Ns {
        self.sorted
            .get(self.sorted.len() / 2)
            .copied()
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median kept as samples come is the middle of the last [`TYPICAL_SAMPLES`] sorted
    /// afresh, whatever the values (repeats, negatives skipped, the window full and sliding).
    #[test]
    fn the_median_is_that_of_the_last_samples_sorted() {
        let mut typical = Typical::default();
        let mut kept: Vec<Ns> = Vec::new();
        assert_eq!(typical.median(7), 7, "no sample: the default");
        // A fixed pseudo-random sequence with repeats and negatives (xorshift).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = (x % 50) as Ns - 5;
            typical.push(d);
            if d >= 0 {
                kept.push(d);
            }
            let mut last: Vec<Ns> = kept.iter().rev().take(TYPICAL_SAMPLES).copied().collect();
            last.sort_unstable();
            assert_eq!(typical.median(-1), last[last.len() / 2]);
        }
    }
}
