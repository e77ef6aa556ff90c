//! Interval unions: the one geometric primitive every metric is built on.
//!
//! An [`IntervalSet`] is a sorted list of disjoint, non-touching half-open `[start, end)` ns
//! intervals. Building one sorts and merges (touching intervals merge, as in the reference
//! scripts); set operations are linear merges of two sorted lists.

use serde::{Deserialize, Serialize};

use super::Ns;

/// Builds an [`IntervalSet`] from intervals pushed one by one, growing by an eighth at a time:
/// a forward-step window has a span per step, and a doubled vector would hold up to twice that
/// while the page's wasm memory keeps its high-water mark. Intervals come in start order (merged
/// as they come); one out of order makes the builder sort and merge at the end instead.
#[derive(Debug)]
pub struct UnionBuilder {
    spans: Vec<(Ns, Ns)>,
    last_start: Ns,
    in_order: bool,
}

impl Default for UnionBuilder {
    fn default() -> UnionBuilder {
        UnionBuilder {
            spans: Vec::new(),
            last_start: Ns::MIN,
            in_order: true,
        }
    }
}

impl UnionBuilder {
    /// Adds `[s, e)` (zero-length and inverted intervals are dropped).
    pub fn push(&mut self, s: Ns, e: Ns) {
        if e <= s {
            return;
        }
        self.in_order &= s >= self.last_start;
        self.last_start = s;
        match self.spans.last_mut() {
            Some(last) if self.in_order && s <= last.1 => last.1 = last.1.max(e),
            _ => push_gently(&mut self.spans, (s, e)),
        }
    }

    /// The spans held so far.
    pub fn spans_held(&self) -> usize {
        self.spans.len()
    }

    pub fn finish(self) -> IntervalSet {
        if self.in_order {
            IntervalSet { spans: self.spans }
        } else {
            IntervalSet::from_unsorted(self.spans)
        }
    }
}

/// The length of the union of intervals pushed in start order (touching ones merge), without
/// the intervals held.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnionLength {
    current: Option<(Ns, Ns)>,
    closed: Ns,
}

impl UnionLength {
    /// Adds `[s, e)` (zero-length and inverted intervals add nothing), `s` not before the
    /// previous interval's start.
    pub fn push(&mut self, s: Ns, e: Ns) {
        if e <= s {
            return;
        }
        match &mut self.current {
            Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
            Some(cur) => {
                self.closed += cur.1 - cur.0;
                *cur = (s, e);
            }
            None => self.current = Some((s, e)),
        }
    }

    pub fn total(&self) -> Ns {
        self.closed + self.current.map_or(0, |(s, e)| e - s)
    }
}

/// Pushes onto `v`, growing it by an eighth of its length when full rather than doubling it:
/// for lists that grow with the number of forward steps (the page's wasm memory keeps its
/// high-water mark).
pub fn push_gently<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 8).max(64));
    }
    v.push(x);
}

/// Sorted, disjoint, non-touching `[start, end)` intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalSet {
    #[serde(with = "delta")]
    spans: Vec<(Ns, Ns)>,
}

/// Serde for lists of ranges as differences, `(start − previous start, end − start)`: the page's
/// workers exchange a range per forward step, where absolute ns times take 5–6 varint bytes
/// each and differences 2–4 (use with `#[serde(with = "delta")]`).
pub mod delta {
    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Ns;

    pub fn serialize<S: Serializer>(ranges: &[(Ns, Ns)], s: S) -> Result<S::Ok, S::Error> {
        DeltaRef(ranges).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(Ns, Ns)>, D::Error> {
        Delta::deserialize(d).map(|r| r.0)
    }

    /// Ranges to serialise as differences.
    pub struct DeltaRef<'a>(pub &'a [(Ns, Ns)]);

    impl Serialize for DeltaRef<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut previous: Ns = 0;
            s.collect_seq(self.0.iter().map(|&(start, end)| {
                let d = (start.wrapping_sub(previous), end.wrapping_sub(start));
                previous = start;
                d
            }))
        }
    }

    /// Ranges deserialised from differences.
    pub struct Delta(pub Vec<(Ns, Ns)>);

    impl<'de> Deserialize<'de> for Delta {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Delta, D::Error> {
            d.deserialize_seq(DeltaVisitor)
        }
    }

    /// At most this many ranges (64 MiB, a list of 4 Mi forward steps) are allocated ahead of
    /// reading them: damaged bytes may announce any length.
    const MAX_AHEAD: usize = 1 << 22;

    struct DeltaVisitor;

    impl<'de> Visitor<'de> for DeltaVisitor {
        type Value = Delta;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of range differences")
        }

        /// Allocates the list at the length the bytes give, up to [`MAX_AHEAD`], then grows
        /// it by an eighth (serde's own `Vec` allocates at most 1 MiB ahead, then doubles: up
        /// to twice a list of a range per step).
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Delta, A::Error> {
            let ahead = seq.size_hint().unwrap_or(0).min(MAX_AHEAD);
            let mut ranges = Vec::with_capacity(ahead);
            let mut previous: Ns = 0;
            while let Some((from_previous, len)) = seq.next_element::<(Ns, Ns)>()? {
                let start = previous.wrapping_add(from_previous);
                super::push_gently(&mut ranges, (start, start.wrapping_add(len)));
                previous = start;
            }
            Ok(Delta(ranges))
        }
    }
}

impl IntervalSet {
    pub fn new() -> IntervalSet {
        IntervalSet::default()
    }

    /// One interval (empty when `end <= start`).
    pub fn single(start: Ns, end: Ns) -> IntervalSet {
        if end > start {
            IntervalSet {
                spans: vec![(start, end)],
            }
        } else {
            IntervalSet::default()
        }
    }

    /// The union of arbitrary intervals. Zero-length and inverted intervals are dropped.
    pub fn from_unsorted(mut spans: Vec<(Ns, Ns)>) -> IntervalSet {
        spans.retain(|&(s, e)| e > s);
        spans.sort_unstable();
        // Merged in place: no second list of spans.
        let mut kept: usize = 0;
        for i in 0..spans.len() {
            let (s, e) = spans[i];
            match kept.checked_sub(1).map(|k| &mut spans[k]) {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => {
                    spans[kept] = (s, e);
                    kept += 1;
                }
            }
        }
        spans.truncate(kept);
        spans.shrink_to_fit();
        IntervalSet { spans }
    }

    /// The union of intervals already sorted by start (ties in any order).
    pub fn from_sorted_iter(spans: impl IntoIterator<Item = (Ns, Ns)>) -> IntervalSet {
        let spans = spans.into_iter();
        // A slice's exact length, at most one span per interval (none for a filter).
        let mut out: Vec<(Ns, Ns)> = Vec::with_capacity(spans.size_hint().0);
        out.extend(MergeSorted::new(spans));
        // Sets of one span per forward step are kept for the whole analysis: not up to twice
        // their size, as a grown vector can be.
        out.shrink_to_fit();
        IntervalSet { spans: out }
    }

    /// The union of `ranges`, without copying them first when they are in start order.
    pub fn from_ranges(ranges: &[(Ns, Ns)]) -> IntervalSet {
        if ranges.is_sorted_by_key(|r| r.0) {
            IntervalSet::from_sorted_iter(ranges.iter().copied())
        } else {
            IntervalSet::from_unsorted(ranges.to_vec())
        }
    }

    pub fn spans(&self) -> &[(Ns, Ns)] {
        &self.spans
    }

    /// The disjoint spans, ascending, without a copy.
    pub fn into_spans(self) -> Vec<(Ns, Ns)> {
        self.spans
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Total covered time in ns.
    pub fn measure(&self) -> Ns {
        self.spans.iter().map(|&(s, e)| e - s).sum()
    }

    /// `[first start, last end]`, if any.
    pub fn hull(&self) -> Option<(Ns, Ns)> {
        Some((self.spans.first()?.0, self.spans.last()?.1))
    }

    /// Time covered by both sets.
    pub fn intersection(&self, other: &IntervalSet) -> IntervalSet {
        let (a, b) = (&self.spans, &other.spans);
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < a.len() && j < b.len() {
            let s = a[i].0.max(b[j].0);
            let e = a[i].1.min(b[j].1);
            if e > s {
                out.push((s, e));
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { spans: out }
    }

    /// Measure of the intersection, without building it.
    pub fn intersection_measure(&self, other: &IntervalSet) -> Ns {
        let (a, b) = (&self.spans, &other.spans);
        let (mut i, mut j, mut total) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let s = a[i].0.max(b[j].0);
            let e = a[i].1.min(b[j].1);
            if e > s {
                total += e - s;
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        total
    }

    /// Time in `self` not covered by `other`.
    pub fn difference(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = Vec::new();
        let mut j = 0;
        for &(s0, e0) in &self.spans {
            let mut s = s0;
            while j < other.spans.len() && other.spans[j].1 <= s {
                j += 1;
            }
            let mut k = j;
            while k < other.spans.len() && other.spans[k].0 < e0 {
                let (os, oe) = other.spans[k];
                if os > s {
                    out.push((s, os));
                }
                s = s.max(oe);
                if s >= e0 {
                    break;
                }
                k += 1;
            }
            if s < e0 {
                out.push((s, e0));
            }
        }
        IntervalSet { spans: out }
    }

    /// The union of two sets.
    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        let mut merged = Vec::with_capacity(self.spans.len() + other.spans.len());
        let (mut i, mut j) = (0, 0);
        while i < self.spans.len() || j < other.spans.len() {
            let take_a = j >= other.spans.len()
                || (i < self.spans.len() && self.spans[i].0 <= other.spans[j].0);
            if take_a {
                merged.push(self.spans[i]);
                i += 1;
            } else {
                merged.push(other.spans[j]);
                j += 1;
            }
        }
        IntervalSet::from_sorted_iter(merged)
    }

    /// Strictly positive gaps between consecutive intervals (not before the first or after the last).
    pub fn interior_gaps(&self) -> IntervalSet {
        IntervalSet {
            spans: self.spans.windows(2).map(|w| (w[0].1, w[1].0)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_length_merges_overlapping_and_touching_intervals_and_drops_empty_ones() {
        let mut u = UnionLength::default();
        for (s, e) in [(0, 10), (5, 15), (15, 20), (30, 40), (35, 35), (38, 36)] {
            u.push(s, e);
        }
        // [0, 20) and [30, 40).
        assert_eq!(u.total(), 30);
        assert_eq!(UnionLength::default().total(), 0);
    }

    fn set(v: &[(Ns, Ns)]) -> IntervalSet {
        IntervalSet::from_unsorted(v.to_vec())
    }

    #[test]
    fn union_merges_overlapping_and_touching() {
        let s = set(&[(5, 7), (0, 2), (2, 3), (6, 10), (20, 20)]);
        assert_eq!(s.spans(), &[(0, 3), (5, 10)]);
        assert_eq!(s.measure(), 8);
        assert_eq!(s.interior_gaps().spans(), &[(3, 5)]);
    }

    #[test]
    fn intersection_and_difference_partition_the_set() {
        let a = set(&[(0, 10), (20, 30), (40, 50)]);
        let b = set(&[(5, 25), (28, 45), (60, 70)]);
        assert_eq!(
            a.intersection(&b).spans(),
            &[(5, 10), (20, 25), (28, 30), (40, 45)]
        );
        assert_eq!(a.intersection_measure(&b), 17);
        assert_eq!(a.difference(&b).spans(), &[(0, 5), (25, 28), (45, 50)]);
        assert_eq!(
            a.intersection_measure(&b) + a.difference(&b).measure(),
            a.measure()
        );
        assert_eq!(a.union(&b).spans(), &[(0, 50), (60, 70)]);
    }

    #[test]
    fn difference_with_other_covering_everything_is_empty() {
        let a = set(&[(3, 4), (6, 9)]);
        assert!(a.difference(&set(&[(0, 100)])).is_empty());
        assert_eq!(a.difference(&IntervalSet::new()), a);
    }
}

/// Merges intervals sorted by start into disjoint unions on the fly (touching intervals merge),
/// so a union's measure can be taken without storing it.
pub struct MergeSorted<I: Iterator<Item = (Ns, Ns)>> {
    inner: I,
    current: Option<(Ns, Ns)>,
}

impl<I: Iterator<Item = (Ns, Ns)>> MergeSorted<I> {
    pub fn new(inner: I) -> MergeSorted<I> {
        MergeSorted {
            inner,
            current: None,
        }
    }
}

impl<I: Iterator<Item = (Ns, Ns)>> Iterator for MergeSorted<I> {
    type Item = (Ns, Ns);

    fn next(&mut self) -> Option<(Ns, Ns)> {
        for (s, e) in self.inner.by_ref() {
            if e <= s {
                continue;
            }
            match &mut self.current {
                Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
                Some(cur) => {
                    let done = *cur;
                    *cur = (s, e);
                    return Some(done);
                }
                None => self.current = Some((s, e)),
            }
        }
        self.current.take()
    }
}

/// Total overlap of ascending disjoint intervals with `window`, in one forward pass.
pub fn overlap_with(merged: impl Iterator<Item = (Ns, Ns)>, window: &IntervalSet) -> Ns {
    let w = window.spans();
    let mut j = 0;
    let mut total = 0;
    for (s, e) in merged {
        while j < w.len() && w[j].1 <= s {
            j += 1;
        }
        let mut k = j;
        while k < w.len() && w[k].0 < e {
            total += e.min(w[k].1) - s.max(w[k].0);
            k += 1;
        }
    }
    total
}

#[cfg(test)]
mod streaming_tests {
    use super::*;

    #[test]
    fn merge_sorted_matches_the_materialized_union() {
        let spans = vec![(0, 2), (1, 3), (3, 4), (6, 6), (7, 9), (8, 12), (20, 21)];
        let merged: Vec<_> = MergeSorted::new(spans.iter().copied()).collect();
        assert_eq!(merged, IntervalSet::from_unsorted(spans.clone()).spans());
        let window = IntervalSet::from_unsorted(vec![(1, 8), (10, 30)]);
        let expected = IntervalSet::from_unsorted(spans).intersection_measure(&window);
        assert_eq!(overlap_with(merged.into_iter(), &window), expected);
        assert_eq!(expected, 3 + 1 + 2 + 1);
    }

    #[test]
    fn ranges_cross_as_differences_and_come_back_unchanged() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Ranges(#[serde(with = "delta")] Vec<(Ns, Ns)>);
        // Out of order, overlapping, inverted and extreme ranges all come back as they were.
        let ranges = Ranges(vec![
            (15_000_436_063, 15_001_593_044),
            (15_002_516_770, 15_003_646_210),
            (15_000_000_000, 15_000_000_000),
            (7, 3),
            (Ns::MIN, Ns::MAX),
            (Ns::MAX, Ns::MIN),
            (-5, 0),
        ]);
        let bytes = postcard::to_allocvec(&ranges).expect("encode");
        assert_eq!(
            postcard::from_bytes::<Ranges>(&bytes).expect("decode"),
            ranges
        );
        let json = serde_json::to_string(&ranges).expect("json");
        assert_eq!(
            serde_json::from_str::<Ranges>(&json).expect("json back"),
            ranges
        );
        // A range per step close to the previous one takes a few bytes, not two full times.
        let steps = Ranges(
            (0..1000)
                .map(|i| {
                    (
                        15_000_000_000 + i * 900_000,
                        15_000_000_000 + i * 900_000 + 700_000,
                    )
                })
                .collect(),
        );
        let plain = postcard::to_allocvec(&steps.0).expect("plain").len();
        let delta = postcard::to_allocvec(&steps).expect("delta").len();
        assert!(
            delta * 3 <= plain * 2,
            "{delta} bytes as differences, {plain} plain"
        );
        assert_eq!(
            postcard::from_bytes::<Ranges>(&postcard::to_allocvec(&steps).expect("e")).expect("d"),
            steps
        );
    }

    #[test]
    fn a_union_builder_gives_the_union_in_any_order() {
        let spans = [
            (0, 2),
            (1, 3),
            (3, 4),
            (6, 6),
            (7, 9),
            (8, 12),
            (5, 4),
            (20, 21),
        ];
        let expected = [(0, 4), (7, 12), (20, 21)];
        let mut in_order = UnionBuilder::default();
        spans.iter().for_each(|&(s, e)| in_order.push(s, e));
        assert_eq!(in_order.finish().spans(), &expected);
        // Out of order after merging has begun: the merged prefix and the rest still unite.
        let mut shuffled = UnionBuilder::default();
        for &(s, e) in [(7, 9), (8, 12), (20, 21), (0, 2), (3, 4), (1, 3)].iter() {
            shuffled.push(s, e);
        }
        assert_eq!(shuffled.finish().spans(), &expected);
        assert_eq!(
            IntervalSet::from_unsorted(spans.to_vec()).spans(),
            &expected
        );
        assert_eq!(IntervalSet::from_ranges(&spans).spans(), &expected);
    }
}
