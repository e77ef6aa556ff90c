//! Distributions of durations: count, min, mean, percentiles, max.
//!
//! Percentiles follow the reference scripts (`compute_stats`): the value at index
//! `floor(n × q)` of the sorted values (clamped to the last). The values are held as a count
//! per distinct value ([`Durations`]), so a fold over millions of kernels holds what distinct
//! durations there are, never one entry per kernel, and the percentile is still exact.

use std::collections::BTreeMap;

use hashbrown::HashMap;
use serde::Serialize;

use crate::model::{NameId, Ns, Strings};

/// A distribution of durations in µs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Distribution {
    pub count: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// Events of one name: count and durations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedStats {
    pub name: String,
    pub count: u64,
    pub total_us: f64,
    pub avg_us: f64,
    pub max_us: f64,
}

/// `(count, total ns, max ns)` per name id met, added to one event at a time.
#[derive(Debug, Clone, Default)]
pub struct PerName(pub HashMap<usize, (u64, Ns, Ns)>);

impl PerName {
    pub fn add(&mut self, name: usize, d: Ns) {
        let a = self.0.entry(name).or_insert((0, 0, 0));
        *a = (a.0 + 1, a.1 + d, a.2.max(d));
    }

    /// Events counted.
    pub fn count(&self) -> u64 {
        self.0.values().map(|a| a.0).sum()
    }

    /// Summed in ns, so that no events make 0 µs (a sum of no `f64` is −0).
    pub fn total_ns(&self) -> Ns {
        self.0.values().map(|a| a.1).sum()
    }
}

/// Per name id `(count, total ns, max ns)` as named stats, most total time first (ties by id),
/// at most `top`.
pub fn named_stats(strings: &Strings, per_name: &PerName, top: usize) -> Vec<NamedStats> {
    named_stats_by(per_name, top, |i| strings.get(i as NameId).to_string())
}

/// `named_stats` with the name of id `i` given by `name`.
pub fn named_stats_by(
    per_name: &PerName,
    top: usize,
    name: impl Fn(usize) -> String,
) -> Vec<NamedStats> {
    let us = |ns: Ns| ns as f64 / 1000.0;
    most_first(&per_name.0, |a| a.0 > 0, |a| a.1)
        .into_iter()
        .take(top)
        .map(|(i, (count, total, max))| NamedStats {
            name: name(i),
            count,
            total_us: us(total),
            avg_us: us(total) / count as f64,
            max_us: us(max),
        })
        .collect()
}

/// The entries `keep` accepts, largest `key` first, ties by id.
pub fn most_first<T: Copy>(
    per_id: &HashMap<usize, T>,
    keep: impl Fn(&T) -> bool,
    key: impl Fn(&T) -> Ns,
) -> Vec<(usize, T)> {
    let mut out: Vec<(usize, T)> = per_id
        .iter()
        .filter(|(_, v)| keep(v))
        .map(|(&i, &v)| (i, v))
        .collect();
    out.sort_by(|a, b| key(&b.1).cmp(&key(&a.1)).then(a.0.cmp(&b.0)));
    out
}

/// Index of quantile `q` among `n` sorted values.
pub fn quantile_index(n: usize, q: f64) -> usize {
    ((n as f64 * q) as usize).min(n.saturating_sub(1))
}

/// Durations held as a count per distinct value: the exact distribution of any number of
/// events in memory bounded by how many distinct durations there are.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    counts: BTreeMap<Ns, u64>,
    n: u64,
    sum: i128,
}

impl Durations {
    pub fn add(&mut self, d: Ns) {
        *self.counts.entry(d).or_insert(0) += 1;
        self.n += 1;
        self.sum += i128::from(d);
    }

    /// How many durations were added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// How many distinct durations are held.
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// The values at quantiles `qs` (ascending) of the sorted durations (0 when none).
    pub fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [Ns; N] {
        let mut out = [0; N];
        if self.n == 0 {
            return out;
        }
        let mut values = self.counts.iter();
        let (mut value, mut below) = (0, 0u64); // `below`: values before and at `value`
        let mut done = 0;
        for (slot, q) in out.iter_mut().zip(qs) {
            let idx = quantile_index(self.n as usize, q).max(done);
            while below <= idx as u64 {
                let Some((&v, &c)) = values.next() else { break };
                (value, below) = (v, below + c);
            }
            *slot = value;
            done = idx;
        }
        out
    }

    /// The distribution of the durations (ns).
    pub fn distribution(&self) -> Distribution {
        let (Some((&min, _)), Some((&max, _))) =
            (self.counts.first_key_value(), self.counts.last_key_value())
        else {
            return Distribution::default();
        };
        let [p50, p90, p99] = self.quantiles([0.5, 0.9, 0.99]);
        let us = |ns: Ns| ns as f64 / 1000.0;
        Distribution {
            count: self.n,
            min_us: us(min),
            mean_us: self.sum as f64 / self.n as f64 / 1000.0,
            p50_us: us(p50),
            p90_us: us(p90),
            p99_us: us(p99),
            max_us: us(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn durations(values: &[Ns]) -> Durations {
        let mut d = Durations::default();
        values.iter().for_each(|&v| d.add(v));
        d
    }

    #[test]
    fn percentiles_follow_the_reference_indexing() {
        let v: Vec<Ns> = (1..=10).rev().map(|x| x * 1000).collect();
        let d = durations(&v).distribution();
        // sorted 1..10 µs: p50 = s[5] = 6, p90 = s[9] = 10, p99 = s[9] = 10.
        assert_eq!(
            (d.count, d.min_us, d.p50_us, d.p90_us, d.p99_us, d.max_us),
            (10, 1.0, 6.0, 10.0, 10.0, 10.0)
        );
        assert!((d.mean_us - 5.5).abs() < 1e-12);
        assert_eq!(durations(&[]).distribution(), Distribution::default());
        assert_eq!(durations(&[7_000]).distribution().p99_us, 7.0);
    }

    /// The value at `floor(n × q)` of the sorted values, found by sorting a copy.
    fn by_sorting(values: &[Ns], q: f64) -> Ns {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        sorted[quantile_index(sorted.len(), q)]
    }

    #[test]
    fn repeated_durations_give_the_percentiles_of_the_sorted_values() {
        // 7 × 5, 1 × 9, 3 × 2, 1 × 100 in scrambled order: sorted 2 2 2 5 5 5 5 5 5 5 9 100.
        let values = [5, 9, 5, 2, 5, 100, 5, 2, 5, 5, 2, 5];
        let d = durations(&values);
        assert_eq!(d.distinct(), 4);
        let qs = [0.0, 0.25, 0.5, 0.9, 0.99, 1.0];
        let got = d.quantiles(qs);
        let want = qs.map(|q| by_sorting(&values, q));
        assert_eq!(got, want);
        assert_eq!(got, [2, 5, 5, 9, 100, 100]);
    }
}
