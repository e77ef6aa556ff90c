//! Distributions of durations: count, min, mean, percentiles, max.
//!
//! Percentiles follow the reference scripts (`compute_stats`): the value at index
//! `floor(n × q)` of the sorted values (clamped to the last). They are exact without the values
//! held ([`Percentiles`]): each distinct value is counted while the counts take little room
//! (the percentiles are then known after one read); past that, the values are counted in
//! coarse buckets (a few thousand at most), then read again and counted exactly only inside
//! the bucket each percentile falls in — memory bounded by the buckets' widths, however many
//! values there are.

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
        *a = (a.0 + 1, a.1.saturating_add(d), a.2.max(d));
    }

    /// Events counted.
    pub fn count(&self) -> u64 {
        self.0.values().map(|a| a.0).sum()
    }

    /// Summed in ns, so that no events make 0 µs (a sum of no `f64` is −0).
    pub fn total_ns(&self) -> Ns {
        self.0
            .values()
            .fold(0, |sum: Ns, a| sum.saturating_add(a.1))
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

/// The coarse bucket of a value: non-decreasing in the value, exact below 256 and at most
/// `|v| / 128` wide above (8 significant bits), so at most 14 848 buckets cover every `i64`.
fn bucket(v: Ns) -> i64 {
    let u = v.unsigned_abs();
    let b = if u < 256 {
        u as i64
    } else {
        let e = 63 - i64::from(u.leading_zeros());
        256 + (e - 8) * 128 + ((u >> (e - 7)) & 0x7F) as i64
    };
    if v < 0 { -b - 1 } else { b }
}

/// Exact percentiles of values read once ([`Percentiles::first`] for each) or, when
/// [`Percentiles::needs_second`] says so, twice ([`Percentiles::second`] for each again, in any
/// order): count, sum, min and max, and a count per distinct value while the caller lets them
/// be held; once it does not ([`Percentiles::release_values`]), a count per coarse bucket
/// (8 significant bits) and, on the second read, a count per distinct value only in the
/// buckets the percentiles fall in.
#[derive(Debug, Clone, Default)]
pub struct Percentiles {
    qs: Vec<f64>,
    n: u64,
    sum: i128,
    min: Ns,
    max: Ns,
    /// Every value with its count, until released (`None` after).
    held: Option<HeldValues>,
    /// Counted once the values are released (those held then included).
    buckets: Buckets,
    /// Per quantile, after the first read: its bucket and its index among the bucket's values.
    targets: Vec<(i64, u64)>,
    /// The values of the target buckets, counted per distinct value on the second read.
    exact: HashMap<i64, BTreeMap<Ns, u64>>,
    most_held: usize,
}

impl Percentiles {
    /// For the quantiles `qs` (ascending).
    pub fn new(qs: &[f64]) -> Percentiles {
        Percentiles {
            qs: qs.to_vec(),
            min: Ns::MAX,
            max: Ns::MIN,
            held: Some(HeldValues::default()),
            ..Percentiles::default()
        }
    }

    /// A value, first read; the entries it added to those held (what a caller holding several
    /// distributions counts against its bound).
    pub fn first(&mut self, v: Ns) -> usize {
        self.n += 1;
        self.sum += i128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match self.held.as_mut().map(|h| h.add(v)) {
            Some(Some(added)) => added,
            Some(None) => {
                // A count past a `u32`: counted in its bucket with the rest.
                self.release_values();
                self.buckets.add(bucket(v), 1);
                0
            }
            None => {
                self.buckets.add(bucket(v), 1);
                0
            }
        }
    }

    /// Stops holding every value (too many are held): they are counted in their buckets, and
    /// the exact values then need the second read.
    pub fn release_values(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        self.most_held = self.most_held.max(held.entries());
        for (v, c) in held.sorted() {
            self.buckets.add(bucket(v), c);
        }
    }

    /// Whether the exact values need the second read: values were read, and not all were held.
    pub fn needs_second(&self) -> bool {
        self.n > 0 && self.held.is_none()
    }

    /// Ends the first read: finds the bucket of each quantile, the only ones the second read
    /// counts exactly (none when every value was held).
    pub fn end_first(&mut self) {
        if self.held.is_some() {
            return;
        }
        let mut buckets = self.buckets.occupied();
        let (mut at, mut below, mut upto) = (0, 0u64, 0u64); // values before `at`, up to it
        let mut done = 0;
        self.targets.clear();
        for &q in &self.qs {
            if self.n == 0 {
                break;
            }
            let idx = quantile_index(self.n as usize, q).max(done) as u64;
            while upto <= idx {
                let Some((b, c)) = buckets.next() else {
                    break;
                };
                (at, below, upto) = (b, upto, upto + c);
            }
            self.targets.push((at, idx - below));
            self.exact.entry(at).or_default();
            done = idx as usize;
        }
        self.most_held = self.most_held.max(self.buckets.occupied().count());
    }

    /// The same value, read again (after [`Percentiles::end_first`]).
    pub fn second(&mut self, v: Ns) {
        if let Some(values) = self.exact.get_mut(&bucket(v)) {
            *values.entry(v).or_insert(0) += 1;
        }
    }

    /// How many values were read.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The most entries held at once: the values held (counts and distinct values), or the
    /// buckets and the target buckets' distinct values.
    pub fn held(&self) -> usize {
        let exact: usize = self.exact.values().map(BTreeMap::len).sum();
        let now = match &self.held {
            Some(held) => held.entries(),
            None => self.buckets.occupied().count() + exact,
        };
        self.most_held.max(now)
    }

    /// The values at the quantiles (0 when none was read).
    pub fn values(&self) -> Vec<Ns> {
        match &self.held {
            Some(held) => self.values_held(held),
            None => self.values_counted(),
        }
    }

    /// [`Percentiles::values`] from every value held.
    fn values_held(&self, held: &HeldValues) -> Vec<Ns> {
        let mut sorted = held.sorted();
        let (mut upto, mut at) = (0u64, 0); // values up to `at`
        let mut out = vec![0; self.qs.len()];
        for (slot, &q) in out.iter_mut().zip(&self.qs) {
            let idx = quantile_index(self.n as usize, q) as u64;
            while upto <= idx {
                let Some((v, c)) = sorted.next() else {
                    break;
                };
                (upto, at) = (upto + c, v);
            }
            *slot = at;
        }
        out
    }

    /// [`Percentiles::values`] from the target buckets counted on the second read.
    fn values_counted(&self) -> Vec<Ns> {
        let mut out = vec![0; self.qs.len()];
        for (slot, &(b, rank)) in out.iter_mut().zip(&self.targets) {
            let mut seen = 0u64;
            let values = self.exact.get(&b).into_iter().flatten();
            for (&v, &c) in values {
                seen += c;
                if seen > rank {
                    *slot = v;
                    break;
                }
            }
        }
        out
    }

    /// The distribution of the values (ns), with p50, p90 and p99 (the quantiles this was
    /// made for: `[0.5, 0.9, 0.99]`).
    pub fn distribution(&self) -> Distribution {
        if self.n == 0 {
            return Distribution::default();
        }
        let q = self.values();
        let at = |i: usize| q.get(i).copied().unwrap_or(0);
        let us = |ns: Ns| ns as f64 / 1000.0;
        Distribution {
            count: self.n,
            min_us: us(self.min),
            mean_us: self.sum as f64 / self.n as f64 / 1000.0,
            p50_us: us(at(0)),
            p90_us: us(at(1)),
            p99_us: us(at(2)),
            max_us: us(self.max),
        }
    }
}

/// Most counts in a [`HeldValues`]' dense run (4 MiB).
const DENSE_VALUES: usize = 1 << 20;
/// What a value outside the dense run counts as against a caller's bound, in dense counts (its
/// map entry, with the map's spare room, takes up to eight times the room).
const SPARSE_ENTRY: usize = 8;

/// Every value read with its count: dense counts over one run of values (a kernel's durations
/// and launch latency cluster), a map for the values outside it.
#[derive(Debug, Clone, Default)]
struct HeldValues {
    /// The value of `dense[0]`.
    lo: Ns,
    dense: Vec<u32>,
    /// Values the dense run could not take; never one inside it (the run only widens, and
    /// a value it could not take makes it too wide).
    sparse: HashMap<Ns, u32>,
}

impl HeldValues {
    /// Counts `v`: the entries it added ([`HeldValues::entries`]), or `None` when its count
    /// would pass a `u32` (then not counted).
    fn add(&mut self, v: Ns) -> Option<usize> {
        if let Some(c) = self.slot(v) {
            *c = c.checked_add(1)?;
            return Some(0);
        }
        let before = self.dense.len();
        if self.widen_to(v) {
            *self.slot(v)? = 1;
            return Some(self.dense.len() - before);
        }
        let c = self.sparse.entry(v).or_insert(0);
        let new = *c == 0;
        *c = c.checked_add(1)?;
        Some(if new { SPARSE_ENTRY } else { 0 })
    }

    fn slot(&mut self, v: Ns) -> Option<&mut u32> {
        let at = usize::try_from(v.checked_sub(self.lo)?).ok()?;
        self.dense.get_mut(at)
    }

    /// Widens the dense run to take `v`, with room for as many values again on `v`'s side,
    /// when it stays within [`DENSE_VALUES`]; whether it did.
    fn widen_to(&mut self, v: Ns) -> bool {
        let len = self.dense.len();
        if len == 0 {
            (self.lo, self.dense) = (v, vec![0; 1]);
            return true;
        }
        let (lo, hi) = (i128::from(self.lo), i128::from(self.lo) + len as i128);
        let span = i128::from(v).max(hi - 1) - i128::from(v).min(lo) + 1;
        if span > DENSE_VALUES as i128 {
            return false;
        }
        let wide = (span + len as i128).min(DENSE_VALUES as i128);
        if i128::from(v) < lo {
            let below = (wide - len as i128).min(lo - i128::from(Ns::MIN));
            let mut dense = vec![0; below as usize];
            dense.append(&mut self.dense);
            (self.lo, self.dense) = ((lo - below) as Ns, dense);
        } else {
            let wide = wide.min(i128::from(Ns::MAX) - lo + 1);
            self.dense.resize(wide as usize, 0);
        }
        true
    }

    /// Entries held: a dense count each, [`SPARSE_ENTRY`] per value outside the run.
    fn entries(&self) -> usize {
        self.dense.len() + SPARSE_ENTRY * self.sparse.len()
    }

    /// `(value, count)` of every value held, ascending.
    fn sorted(&self) -> impl Iterator<Item = (Ns, u64)> + '_ {
        let mut sparse: Vec<(Ns, u32)> = self.sparse.iter().map(|(&v, &c)| (v, c)).collect();
        sparse.sort_unstable();
        let mut sparse = sparse
            .into_iter()
            .map(|(v, c)| (v, u64::from(c)))
            .peekable();
        let mut dense = (0..self.dense.len())
            .zip(&self.dense)
            .filter(|&(_, &c)| c > 0)
            .map(|(at, &c)| (self.lo + at as Ns, u64::from(c)))
            .peekable();
        std::iter::from_fn(move || match (dense.peek(), sparse.peek()) {
            (Some(d), Some(s)) if s.0 < d.0 => sparse.next(),
            (Some(_), _) => dense.next(),
            (None, _) => sparse.next(),
        })
    }
}

/// A count per coarse bucket, dense between the lowest and highest bucket met (values cluster,
/// so the span stays small; it never exceeds the 29 697 buckets of every `i64`).
#[derive(Debug, Clone, Default)]
struct Buckets {
    /// The bucket of `counts[0]`.
    lo: i64,
    counts: Vec<u64>,
}

impl Buckets {
    /// Counts `n` values in bucket `b`.
    fn add(&mut self, b: i64, n: u64) {
        if self.counts.is_empty() {
            self.lo = b;
        }
        if b < self.lo {
            // Room below for as many again, so a falling run of buckets moves the counts
            // a few times only.
            let room = (self.lo - b) as usize + self.counts.len();
            let lo = (self.lo - room as i64).max(bucket(Ns::MIN));
            let mut counts = vec![0; (self.lo - lo) as usize];
            counts.append(&mut self.counts);
            (self.lo, self.counts) = (lo, counts);
        }
        let at = (b - self.lo) as usize;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += n;
    }

    /// `(bucket, count)` of the buckets met, ascending.
    fn occupied(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        let lo = self.lo;
        (lo..)
            .zip(self.counts.iter().copied())
            .filter(|&(_, c)| c > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` read once, every distinct value held.
    fn read_once(qs: &[f64], values: &[Ns]) -> Percentiles {
        let mut p = Percentiles::new(qs);
        values.iter().for_each(|&v| {
            p.first(v);
        });
        p.end_first();
        assert!(!p.needs_second());
        p
    }

    /// `values` read twice, the values held released before value `release_at` of the
    /// first read.
    fn read_twice(qs: &[f64], values: &[Ns], release_at: usize) -> Percentiles {
        let mut p = Percentiles::new(qs);
        for (i, &v) in values.iter().enumerate() {
            if i == release_at {
                p.release_values();
            }
            p.first(v);
        }
        p.release_values();
        p.end_first();
        assert_eq!(p.needs_second(), !values.is_empty());
        values.iter().for_each(|&v| p.second(v));
        p
    }

    /// Both ways of reading `values` (released halfway when read twice), which must agree.
    fn both(qs: &[f64], values: &[Ns]) -> [Percentiles; 2] {
        [
            read_once(qs, values),
            read_twice(qs, values, values.len() / 2),
        ]
    }

    const DISTRIBUTION: [f64; 3] = [0.5, 0.9, 0.99];

    #[test]
    fn percentiles_follow_the_reference_indexing() {
        let v: Vec<Ns> = (1..=10).rev().map(|x| x * 1000).collect();
        for p in both(&DISTRIBUTION, &v) {
            let d = p.distribution();
            // sorted 1..10 µs: p50 = s[5] = 6, p90 = s[9] = 10, p99 = s[9] = 10.
            assert_eq!(
                (d.count, d.min_us, d.p50_us, d.p90_us, d.p99_us, d.max_us),
                (10, 1.0, 6.0, 10.0, 10.0, 10.0)
            );
            assert!((d.mean_us - 5.5).abs() < 1e-12);
        }
        for p in both(&DISTRIBUTION, &[]) {
            assert_eq!(p.distribution(), Distribution::default());
        }
        for p in both(&DISTRIBUTION, &[7_000]) {
            assert_eq!(p.distribution().p99_us, 7.0);
        }
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
        let qs = [0.0, 0.25, 0.5, 0.9, 0.99, 1.0];
        let want = qs.map(|q| by_sorting(&values, q));
        assert_eq!(want, [2, 5, 5, 9, 100, 100]);
        for p in both(&qs, &values) {
            assert_eq!(p.values(), want);
        }
    }

    /// Pseudo-random values from −2 ms to 50 ms, many to a bucket above 32 µs.
    fn scattered(n: usize) -> Vec<Ns> {
        let mut x: u64 = 7;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                ((x >> 33) % 52_000_000) as Ns - 2_000_000
            })
            .collect()
    }

    #[test]
    fn values_sharing_a_bucket_are_told_apart_on_the_second_read() {
        let values = scattered(20_000);
        let qs = [0.0, 0.1, 0.5, 0.9, 0.99, 1.0];
        let want = qs.map(|q| by_sorting(&values, q));
        let [once, twice] = both(&qs, &values);
        assert_eq!(once.values(), want);
        assert_eq!(twice.values(), want);
        let bucketed = read_twice(&qs, &values, 0);
        assert_eq!(bucketed.values(), want);
        assert!(bucketed.held() < 15_000, "{} entries held", bucketed.held());
    }

    /// Values clustered in a run, with outliers far from it (up to both ends of `i64`): the
    /// run is counted densely, the outliers one entry each, and one read gives the exact values.
    #[test]
    fn outliers_far_from_the_values_run_are_held_apart() {
        let mut values: Vec<Ns> = scattered(5_000).iter().map(|v| v / 100 + 30_000).collect();
        values.extend([
            Ns::MIN,
            Ns::MAX,
            -2_000_000,
            40_000_000_000,
            40_000_000_000,
            1 << 50,
        ]);
        values.rotate_left(2_500);
        let qs = [0.0, 0.001, 0.5, 0.999, 1.0];
        let want = qs.map(|q| by_sorting(&values, q));
        let mut p = Percentiles::new(&qs);
        let added: usize = values.iter().map(|&v| p.first(v)).sum();
        p.end_first();
        assert!(!p.needs_second());
        assert_eq!(p.values(), want);
        assert_eq!(added, p.held(), "the entries added are those held");
        let held = p.held.as_ref().expect("held");
        assert_eq!(
            held.sparse.len(),
            5,
            "the five outliers (one repeated) are apart"
        );
        assert!(held.dense.len() <= DENSE_VALUES);
        let [_, twice] = both(&qs, &values);
        assert_eq!(twice.values(), want);
    }

    #[test]
    fn buckets_keep_the_order_of_the_values() {
        let mut v: Vec<Ns> = vec![Ns::MIN, -1 << 40, -70_000, -257, -256, -255, -1, 0, 1, 255];
        v.extend([256, 257, 511, 512, 70_000, 1 << 40, Ns::MAX]);
        assert!(v.windows(2).all(|w| bucket(w[0]) <= bucket(w[1])), "{v:?}");
        assert_eq!((bucket(-1), bucket(0), bucket(255)), (-2, 0, 255));
        assert!(bucket(Ns::MAX) - bucket(Ns::MIN) < 14_848 + 1);
    }
}
