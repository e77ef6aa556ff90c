//! Distributions of durations: count, min, mean, percentiles, max.
//!
//! Percentiles follow the reference scripts (`compute_stats`): the value at index
//! `floor(n × q)` of the sorted values (clamped to the last), found by selection, not sorting.

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

/// Per name id `(count, total ns, max ns)` as named stats, most total time first (ties by id),
/// at most `top`.
pub fn named_stats(strings: &Strings, per_name: &[(u64, Ns, Ns)], top: usize) -> Vec<NamedStats> {
    named_stats_by(per_name, top, |i| strings.get(i as NameId).to_string())
}

/// `named_stats` with the name of index `i` given by `name`.
pub fn named_stats_by(
    per_name: &[(u64, Ns, Ns)],
    top: usize,
    name: impl Fn(usize) -> String,
) -> Vec<NamedStats> {
    let mut ids: Vec<usize> = (0..per_name.len()).filter(|&i| per_name[i].0 > 0).collect();
    ids.sort_by(|&a, &b| per_name[b].1.cmp(&per_name[a].1).then(a.cmp(&b)));
    let us = |ns: Ns| ns as f64 / 1000.0;
    ids.into_iter()
        .take(top)
        .map(|i| {
            let (count, total, max) = per_name[i];
            NamedStats {
                name: name(i),
                count,
                total_us: us(total),
                avg_us: us(total) / count as f64,
                max_us: us(max),
            }
        })
        .collect()
}

/// Index of quantile `q` among `n` sorted values.
pub fn quantile_index(n: usize, q: f64) -> usize {
    ((n as f64 * q) as usize).min(n.saturating_sub(1))
}

/// The values at quantiles `qs` (ascending), reordering `values` in place.
pub fn quantiles<const N: usize>(values: &mut [Ns], qs: [f64; N]) -> [Ns; N] {
    let mut out = [0; N];
    let mut done = 0; // values[..done] are all ≤ values[done..]
    for (slot, q) in out.iter_mut().zip(qs) {
        if values.is_empty() {
            break;
        }
        let idx = quantile_index(values.len(), q).max(done);
        let (_, v, _) = values[done..].select_nth_unstable(idx - done);
        *slot = *v;
        done = idx;
    }
    out
}

/// The distribution of `values` (ns); reorders them.
pub fn distribution(values: &mut [Ns]) -> Distribution {
    if values.is_empty() {
        return Distribution::default();
    }
    let n = values.len();
    let sum: i128 = values.iter().map(|&v| i128::from(v)).sum();
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    let [p50, p90, p99] = quantiles(values, [0.5, 0.9, 0.99]);
    let us = |ns: Ns| ns as f64 / 1000.0;
    Distribution {
        count: n as u64,
        min_us: us(min),
        mean_us: sum as f64 / n as f64 / 1000.0,
        p50_us: us(p50),
        p90_us: us(p90),
        p99_us: us(p99),
        max_us: us(max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_the_reference_indexing() {
        let mut v: Vec<Ns> = (1..=10).rev().map(|x| x * 1000).collect();
        let d = distribution(&mut v);
        // sorted 1..10 µs: p50 = s[5] = 6, p90 = s[9] = 10, p99 = s[9] = 10.
        assert_eq!(
            (d.count, d.min_us, d.p50_us, d.p90_us, d.p99_us, d.max_us),
            (10, 1.0, 6.0, 10.0, 10.0, 10.0)
        );
        assert!((d.mean_us - 5.5).abs() < 1e-12);
        assert_eq!(distribution(&mut []), Distribution::default());
        let mut one = [7_000];
        assert_eq!(distribution(&mut one).p99_us, 7.0);
    }
}
