//! Per-name totals (NVTX ops, kernels, CUDA APIs) and the steady-state window tests they use.

use hashbrown::HashMap;

use super::breakdown::{OpRow, WindowNs};
use crate::model::{NameId, Ns, Strings};

/// Time and calls of one name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub total_ns: i64,
    pub calls: u64,
    /// The longest instance noted ([`Tallies::instance`]), `(start, end)`.
    pub longest: Option<(Ns, Ns)>,
}

/// Totals keyed by the name string (two string ids with one value are one name, as `GROUP BY
/// s.value` does).
#[derive(Debug, Default)]
pub struct Tallies<'a> {
    by_name: HashMap<&'a str, Tally>,
}

impl<'a> Tallies<'a> {
    /// Totals of `(name, start, end)` events, keyed by the name's string in `strings`.
    pub fn of(strings: &'a Strings, events: impl Iterator<Item = (NameId, Ns, Ns)>) -> Tallies<'a> {
        let mut t = Tallies::default();
        for (name, start, end) in events {
            t.add(strings.get(name), end - start);
        }
        t
    }

    pub fn add(&mut self, name: &'a str, dur_ns: Ns) {
        let t = self.by_name.entry(name).or_default();
        t.total_ns = t.total_ns.saturating_add(dur_ns);
        t.calls += 1;
    }

    /// Notes an instance of `name` at `[start, end)`: its row names the longest one, where the
    /// page opens the timeline.
    pub fn instance(&mut self, name: &'a str, (start, end): (Ns, Ns)) {
        let t = self.by_name.entry(name).or_default();
        if t.longest.is_none_or(|(s, e)| end - start > e - s) {
            t.longest = Some((start, end));
        }
    }

    /// Rows by total time (desc, then name asc), at most `limit`; `per_step` turns a total
    /// (µs or calls) into a per-step value.
    pub fn rows(self, limit: Option<usize>, per_step: impl Fn(f64) -> f64) -> Vec<OpRow> {
        let mut v: Vec<(&str, Tally)> = self.by_name.into_iter().collect();
        v.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(b.0)));
        v.truncate(limit.unwrap_or(usize::MAX));
        v.into_iter()
            .map(|(name, t)| {
                let total_us = t.total_ns as f64 / 1000.0;
                OpRow {
                    name: name.to_string(),
                    us_per_step: per_step(total_us),
                    calls_per_step: per_step(t.calls as f64),
                    total_us,
                    calls: t.calls,
                    longest: t
                        .longest
                        .map(|(start_ns, end_ns)| WindowNs { start_ns, end_ns }),
                    ..OpRow::default()
                }
            })
            .collect()
    }
}

/// Whether `t` lies in one of the sorted, disjoint `[start, end)` spans.
pub fn contains(spans: &[(Ns, Ns)], t: Ns) -> bool {
    let i = spans.partition_point(|&(_, e)| e <= t);
    spans.get(i).is_some_and(|&(s, _)| s <= t)
}

/// Time `[start, end)` spends inside the sorted, disjoint spans.
pub fn overlap(spans: &[(Ns, Ns)], start: Ns, end: Ns) -> Ns {
    let first = spans.partition_point(|&(_, e)| e <= start);
    spans[first..]
        .iter()
        .take_while(|&&(s, _)| s < end)
        .map(|&(s, e)| e.min(end) - s.max(start))
        .filter(|&d| d > 0)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sort_by_total_then_name_and_divide() {
        let mut t = Tallies::default();
        t.add("b", 3000);
        t.add("a", 3000);
        t.add("c", 1000);
        t.add("c", 1000);
        t.add("c", 2000);
        let rows = t.rows(Some(2), |v| v / 2.0);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["c", "a"]);
        assert_eq!((rows[0].total_us, rows[0].calls), (4.0, 3));
        assert_eq!((rows[0].us_per_step, rows[0].calls_per_step), (2.0, 1.5));
    }

    #[test]
    fn window_membership_and_overlap() {
        let spans = [(10, 20), (30, 40)];
        assert!(contains(&spans, 10) && contains(&spans, 19) && contains(&spans, 30));
        assert!(!contains(&spans, 20) && !contains(&spans, 5) && !contains(&spans, 40));
        assert_eq!(overlap(&spans, 0, 100), 20);
        assert_eq!(overlap(&spans, 15, 35), 10);
        assert_eq!(overlap(&spans, 20, 30), 0);
        assert_eq!(overlap(&[], 0, 10), 0);
    }
}
