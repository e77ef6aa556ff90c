//! Span lists read with forward-only cursors: a slice held whole, or a [`SpanQueue`] that a
//! sweep is fed as it advances and that forgets the spans every cursor has passed.
//!
//! A cursor is an absolute index (the number of spans pushed before the one it points at), so it
//! stays valid when a queue drops its front. The sweeps query in ascending time, so no cursor
//! ever goes back, and a queue trimmed to the smallest cursor of its readers loses nothing they
//! will read: what a queue holds is bounded by the spans between its slowest reader and the
//! sweep's clock, not by the trace.

use crate::model::Ns;
use crate::model::intervals::IntervalSet;
use crate::profile::PhaseWindow;

/// Ascending spans by absolute index.
pub trait Spans {
    /// The spans held, and the absolute index of the first (those before it were dropped).
    fn held(&self) -> (&[(Ns, Ns)], usize);

    /// The span at absolute index `i`, if it is held.
    fn span(&self, i: usize) -> Option<(Ns, Ns)> {
        let (held, base) = self.held();
        held.get(i.checked_sub(base)?).copied()
    }

    /// The first index still held.
    fn first_held(&self) -> usize {
        self.held().1
    }
}

impl Spans for [(Ns, Ns)] {
    fn held(&self) -> (&[(Ns, Ns)], usize) {
        (self, 0)
    }
}

/// Spans pushed in ascending order (a union as it is built, or ranges in table order), the
/// front dropped as readers pass it. The last span may still grow ([`SpanQueue::extend_last`]):
/// a union's open piece, exact up to the feed's clock.
#[derive(Debug, Clone, Default)]
pub struct SpanQueue {
    /// Absolute index of `spans[head]`.
    base: usize,
    /// Spans from `head` on are held; those before it wait to be dropped in one go.
    spans: Vec<(Ns, Ns)>,
    head: usize,
    facts: WindowFacts,
    /// Every span has been pushed.
    complete: bool,
    /// The starts of the first and the last range added ([`SpanQueue::add_union`]): ranges
    /// must not go back.
    first_start: Option<Ns>,
    last_start: Option<Ns>,
}

/// A range came before the previous one: a queue fed as it goes needs start order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangesUnordered;

/// What the verdict reads of a whole window, kept as its spans pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WindowFacts {
    /// Summed span lengths.
    pub measure: Ns,
    /// First start and last end.
    pub hull: Option<(Ns, Ns)>,
    /// How many spans.
    pub pieces: usize,
}

impl WindowFacts {
    /// The facts of a whole set.
    pub fn of(set: &IntervalSet) -> WindowFacts {
        WindowFacts {
            measure: set.measure(),
            hull: set.hull(),
            pieces: set.spans().len(),
        }
    }

    /// Counts a span pushed after the others (at or after the previous one's start).
    fn add(&mut self, (s, e): (Ns, Ns)) {
        self.measure += e - s;
        self.pieces += 1;
        self.hull = Some(match self.hull {
            Some((first, last)) => (first, last.max(e)),
            None => (s, e),
        });
    }
}

impl Spans for SpanQueue {
    fn held(&self) -> (&[(Ns, Ns)], usize) {
        (self.live(), self.base)
    }
}

impl SpanQueue {
    /// A queue holding `spans` whole (ascending).
    pub fn of(spans: &[(Ns, Ns)]) -> SpanQueue {
        SpanQueue::from_vec(spans.to_vec())
    }

    /// A complete queue holding `spans` (ascending starts) in their own allocation: a window of
    /// a span per forward step is held once, not copied.
    pub fn from_vec(spans: Vec<(Ns, Ns)>) -> SpanQueue {
        let mut q = SpanQueue::default();
        spans.iter().for_each(|&span| q.facts.add(span));
        q.spans = spans;
        q.complete = true;
        q
    }

    /// Says every span has been pushed.
    pub fn finish(&mut self) {
        self.complete = true;
    }

    /// Whether every span has been pushed.
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Appends a span (at or after the previous one's start).
    pub fn push(&mut self, span: (Ns, Ns)) {
        self.facts.add(span);
        self.spans.push(span);
    }

    /// Adds `[s, e)` to the union the queue holds (zero-length and inverted ranges add
    /// nothing, touching ones merge, as `UnionBuilder` does). Ranges come in start order.
    pub fn add_union(&mut self, s: Ns, e: Ns) -> Result<(), RangesUnordered> {
        self.check_order(s)?;
        if e <= s {
            return Ok(());
        }
        match self.facts.hull {
            // The open piece ends at the hull's end; it may have been dropped already (every
            // reader passed it), yet a range starting by its end still extends it.
            Some((_, end)) if s <= end => self.extend_last(e),
            _ => self.push((s, e)),
        }
        Ok(())
    }

    /// Adds `[s, e)` to the span the queue holds: from the first start to the latest end
    /// (a window that is one span however its ranges lie). Ranges come in start order.
    pub fn add_span(&mut self, s: Ns, e: Ns) -> Result<(), RangesUnordered> {
        self.check_order(s)?;
        let first = self.first_start.unwrap_or(s);
        if self.facts.pieces > 0 {
            self.extend_last(e);
        } else if e > first {
            // Until then the span has no length: nothing to hold.
            self.push((first, e));
        }
        Ok(())
    }

    /// Adds a forward step to a phase window of kind `window` (a union of its steps, or one
    /// span), in start order.
    pub fn add_step(&mut self, window: PhaseWindow, s: Ns, e: Ns) -> Result<(), RangesUnordered> {
        match window {
            PhaseWindow::UnionOfSteps => self.add_union(s, e),
            PhaseWindow::Span => self.add_span(s, e),
        }
    }

    fn check_order(&mut self, s: Ns) -> Result<(), RangesUnordered> {
        if self.last_start.is_some_and(|last| s < last) {
            return Err(RangesUnordered);
        }
        self.last_start = Some(s);
        self.first_start.get_or_insert(s);
        Ok(())
    }

    /// Moves the last span's end to `end` (a union's open piece that grew).
    pub fn extend_last(&mut self, end: Ns) {
        let Some(h) = &mut self.facts.hull else {
            return;
        };
        if end <= h.1 {
            return;
        }
        self.facts.measure += end - h.1;
        h.1 = end;
        if let Some(last) = self.spans.get_mut(self.head..).and_then(|h| h.last_mut()) {
            last.1 = end;
        }
    }

    /// The start of the first range added, if any (a span of no length has no facts yet).
    pub fn first_start(&self) -> Option<Ns> {
        self.first_start.or(self.facts.hull.map(|h| h.0))
    }

    /// The last span pushed, if still held.
    pub fn last(&self) -> Option<(Ns, Ns)> {
        self.live().last().copied()
    }

    /// The absolute index the next span pushed will get.
    pub fn end_index(&self) -> usize {
        self.base + self.live().len()
    }

    /// Drops the spans before absolute index `cursor` (every reader is at or past it).
    pub fn trim_to(&mut self, cursor: usize) {
        let n = cursor.saturating_sub(self.base).min(self.live().len());
        self.drop_front(n);
    }

    /// Drops the spans that end at or before `t` (every reader asks at `t` or later).
    pub fn trim_before(&mut self, t: Ns) {
        let n = self.live().partition_point(|&(_, e)| e <= t);
        self.drop_front(n);
    }

    /// How many spans are held now.
    pub fn held_count(&self) -> usize {
        self.live().len()
    }

    fn live(&self) -> &[(Ns, Ns)] {
        self.spans.get(self.head..).unwrap_or_default()
    }

    /// Drops the first `n` held spans: moves the head, and the memory once half of it is dead.
    fn drop_front(&mut self, n: usize) {
        self.head += n;
        self.base += n;
        if self.head >= 64 && self.head * 2 >= self.spans.len() {
            self.spans.drain(..self.head);
            self.head = 0;
            if self.spans.capacity() > 64 && self.spans.capacity() > 4 * self.spans.len() {
                self.spans.shrink_to(2 * self.spans.len().max(32));
            }
        }
    }

    /// The window's facts over every span pushed so far.
    pub fn facts(&self) -> WindowFacts {
        self.facts
    }
}

/// Moves `cursor` past the spans that end at or before `t` (callers query in ascending `t`) and
/// returns the first span that ends after `t`.
pub fn seek<S: Spans + ?Sized>(spans: &S, cursor: &mut usize, t: Ns) -> Option<(Ns, Ns)> {
    let (held, base) = spans.held();
    let mut j = cursor.saturating_sub(base);
    while held.get(j).is_some_and(|&(_, e)| e <= t) {
        j += 1;
    }
    *cursor = base + j;
    held.get(j).copied()
}

/// The held spans from `cursor` on (after a [`seek`]).
fn from_cursor<S: Spans + ?Sized>(spans: &S, cursor: usize) -> &[(Ns, Ns)] {
    let (held, base) = spans.held();
    held.get(cursor.saturating_sub(base)..).unwrap_or_default()
}

/// Where a query lies against the span at a cursor, when that alone answers it.
enum AtCursor {
    /// In the gap before the span: no overlap, and the cursor stays.
    Before,
    /// Inside the span.
    Inside,
}

/// Nearly every query of a sweep lies inside the span at the cursor or in the gap before it:
/// those are answered without seeking. `None`: seek.
#[inline(always)]
fn at_cursor<S: Spans + ?Sized>(spans: &S, cursor: usize, a: Ns, b: Ns) -> Option<AtCursor> {
    let (held, base) = spans.held();
    let &(s, e) = held.get(cursor.saturating_sub(base))?;
    if a > b {
        None
    } else if b <= s {
        Some(AtCursor::Before)
    } else if s <= a && b <= e {
        Some(AtCursor::Inside)
    } else {
        None
    }
}

/// Overlap of `[a, b)` with ascending disjoint spans, from a cursor that only moves forward
/// (callers query in ascending `a`).
pub fn overlap_at<S: Spans + ?Sized>(spans: &S, cursor: &mut usize, a: Ns, b: Ns) -> Ns {
    match at_cursor(spans, *cursor, a, b) {
        Some(AtCursor::Before) => return 0,
        Some(AtCursor::Inside) => return b - a,
        None => {}
    }
    seek(spans, cursor, a);
    from_cursor(spans, *cursor)
        .iter()
        .take_while(|&&(s, _)| s < b)
        .map(|&(s, e)| b.min(e) - a.max(s))
        .sum()
}

/// Overlap of `[a, b)` with the intersection of two span lists (ascending, disjoint), each with
/// a forward-only cursor (callers query in ascending `a`).
pub fn overlap_within<S: Spans + ?Sized, W: Spans + ?Sized>(
    (spans, cursor): (&S, &mut usize),
    (within, within_cursor): (&W, &mut usize),
    a: Ns,
    b: Ns,
) -> Ns {
    match at_cursor(spans, *cursor, a, b) {
        Some(AtCursor::Before) => return 0,
        Some(AtCursor::Inside) => return overlap_at(within, within_cursor, a, b),
        None => {}
    }
    seek(spans, cursor, a);
    let mut ns = 0;
    for &(s, e) in from_cursor(spans, *cursor)
        .iter()
        .take_while(|&&(s, _)| s < b)
    {
        ns += overlap_at(within, within_cursor, a.max(s), b.min(e));
    }
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trimmed_queue_answers_as_the_whole_list() {
        let spans = [(0, 5), (7, 9), (12, 20), (25, 26), (30, 40)];
        let mut q = SpanQueue::of(&spans);
        let (mut cs, mut cq) = (0, 0);
        for (a, b) in [(1, 8), (8, 13), (13, 31), (31, 50)] {
            assert_eq!(
                overlap_at(&spans[..], &mut cs, a, b),
                overlap_at(&q, &mut cq, a, b)
            );
            q.trim_to(cq);
        }
        assert_eq!(q.held_count(), 1);
        assert_eq!(
            q.facts(),
            WindowFacts {
                measure: 5 + 2 + 8 + 1 + 10,
                hull: Some((0, 40)),
                pieces: 5
            }
        );
    }

    #[test]
    fn a_growing_last_span_counts_in_the_facts() {
        let mut q = SpanQueue::default();
        q.push((0, 4));
        q.push((6, 8));
        q.extend_last(11);
        q.extend_last(10);
        assert_eq!(q.last(), Some((6, 11)));
        assert_eq!(q.facts().measure, 4 + 5);
        let mut c = 0;
        assert_eq!(overlap_at(&q, &mut c, 3, 7), 1 + 1);
        q.trim_to(c);
        assert_eq!(q.end_index(), 2);
        assert_eq!(seek(&q, &mut 0, 20), None);
    }

    /// Ascending disjoint spans in `[0, 400)`, some abutting, drawn from `rng`.
    fn random_spans(rng: &mut impl rand::Rng) -> Vec<(Ns, Ns)> {
        let mut spans = Vec::new();
        let mut t: Ns = rng.random_range(0..10);
        while t < 400 {
            let len = rng.random_range(1..30);
            spans.push((t, t + len));
            t += len + rng.random_range(0..15);
        }
        spans
    }

    /// Nanoseconds of `[a, b)` in every list, counted one by one.
    fn counted(lists: &[&[(Ns, Ns)]], a: Ns, b: Ns) -> Ns {
        let inside = |l: &[(Ns, Ns)], t: Ns| l.iter().any(|&(s, e)| s <= t && t < e);
        (a..b)
            .filter(|&t| lists.iter().all(|l| inside(l, t)))
            .count() as Ns
    }

    #[test]
    fn overlaps_from_forward_cursors_equal_a_count_of_each_nanosecond() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(51);
        for _ in 0..200 {
            let (spans, within) = (random_spans(&mut rng), random_spans(&mut rng));
            let (mut cursor, mut c1, mut c2) = (0, 0, 0);
            let mut a: Ns = 0;
            while a < 420 {
                // Queries ascend; some are empty, some abut, some lie inside one span.
                let b = a + rng.random_range(0..25);
                assert_eq!(
                    overlap_at(&spans[..], &mut cursor, a, b),
                    counted(&[&spans], a, b)
                );
                let both = overlap_within((&spans[..], &mut c1), (&within[..], &mut c2), a, b);
                assert_eq!(both, counted(&[&spans, &within], a, b), "[{a}, {b})");
                a = b + rng.random_range(0..3);
            }
        }
    }
}
