//! The reference's (`trtllm-skill`) M3, measured as the kernels pass ([`ExposureAcc`]): the pooled
//! host-prep ranges inside a window, and how much of them the gaps between pooled merged kernel
//! intervals expose, summed range by range in table order as the reference does.

use std::collections::VecDeque;

use crate::model::Ns;
use crate::model::intervals::IntervalSet;
use crate::steps::spans::{SpanQueue, Spans, seek};

use super::queues::Queues;
use super::summary::PrepExposure;

/// Where `trtllm-skill` M3 counts a host-prep range: fully inside `[start, end]`, with `end`
/// only a lower bound until `end_final`.
#[derive(Debug, Clone, Copy)]
pub(super) struct ExposureBounds {
    pub(super) start: Ns,
    pub(super) end: Ns,
    pub(super) end_final: bool,
}

/// The reference M3 of one window, measured as the kernels pass: per pattern, the pooled
/// host-prep ranges inside the window's hull, in table order, and how much of them the gaps
/// between consecutive pooled merged kernel intervals expose. A range is measured once no later
/// gap can reach it (the open merged interval ends after it), in table order so the float sums
/// are the reference's, bit for bit; the gaps are kept only while a range may still need them.
#[derive(Clone)]
pub(super) struct ExposureAcc {
    near: NearPrep,
    /// The gaps that touch some range, ascending.
    gaps: VecDeque<(Ns, Ns)>,
    /// Ranges come in start order: a gap that ends before the next range starts can go.
    drop_gaps: bool,
    pub(super) patterns: [PatternExposure; 3],
}

/// One pattern's running reference M3.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PatternExposure {
    /// The next range (table order) not yet measured.
    pub(super) next: usize,
    /// Whether any range lies inside the window.
    inside: bool,
    prep_us: f64,
    exposed_us: f64,
}

impl PatternExposure {
    /// Adds a range inside the window, exposed by the `gaps` (ascending) it overlaps.
    fn take(&mut self, gaps: &[(Ns, Ns)], (s, e): (Ns, Ns)) {
        self.inside = true;
        self.prep_us += (e - s) as f64 / 1000.0;
        let first = gaps.partition_point(|&(_, ge)| ge <= s);
        for &(gs, ge) in gaps[first..].iter().take_while(|&&(gs, _)| gs < e) {
            self.exposed_us += (e.min(ge) - s.max(gs)).max(0) as f64 / 1000.0;
        }
    }
}

impl ExposureAcc {
    pub(super) fn new(pooled: &[SpanQueue; 3], sorted: bool) -> ExposureAcc {
        ExposureAcc {
            near: NearPrep::new(pooled, sorted),
            gaps: VecDeque::new(),
            drop_gaps: sorted,
            patterns: [PatternExposure::default(); 3],
        }
    }

    pub(super) fn cursor(&self, pattern: usize) -> usize {
        self.patterns[pattern].next.min(self.near.next[pattern])
    }

    /// A gap between merged kernel intervals (after every gap before it), kept if it touches
    /// a range (the reference loop visits only gaps overlapping a range: no sum changes).
    pub(super) fn gap(&mut self, pooled: &[SpanQueue; 3], gap: (Ns, Ns)) {
        if self.near.touches(pooled, gap) {
            self.gaps.push_back(gap);
        }
    }

    /// Measures, in table order, each range no gap to come can reach (it ends by `settled`,
    /// the open merged interval's end) and whose place against the window is decided; `now`:
    /// no range still to arrive starts before it.
    pub(super) fn settle(&mut self, q: &Queues, b: ExposureBounds, settled: Option<Ns>, now: Ns) {
        let Some(pooled) = &q.pooled else {
            return;
        };
        self.near.pass(pooled, now);
        let settled = settled.unwrap_or(Ns::MIN);
        let gaps = self.gaps.make_contiguous();
        for (k, queue) in pooled.iter().enumerate() {
            let x = &mut self.patterns[k];
            x.next = x.next.max(queue.first_held());
            while let Some((s, e)) = queue.span(x.next) {
                let outside = s < b.start || (b.end_final && e > b.end);
                if !outside && (e > settled || e > b.end) {
                    break;
                }
                x.next += 1;
                if !outside {
                    x.take(gaps, (s, e));
                }
            }
        }
        if self.drop_gaps {
            let next_start = pooled
                .iter()
                .zip(&self.patterns)
                .filter_map(|(queue, x)| queue.span(x.next).map(|r| r.0))
                .fold(now, Ns::min);
            let done = self.gaps.partition_point(|&(_, ge)| ge <= next_start);
            self.gaps.drain(..done);
        }
    }

    /// The first pattern with a range inside the window, and its exposure.
    pub(super) fn finish(self) -> Option<PrepExposure> {
        let (pattern, x) = self.patterns.iter().enumerate().find(|(_, x)| x.inside)?;
        (x.prep_us > 0.0).then_some(PrepExposure {
            pattern,
            prep_us: x.prep_us,
            exposed_us: x.exposed_us,
        })
    }
}

/// Whether gaps between kernels touch a pooled host-prep range, asked in ascending order
/// (the gaps of one union). Without a merged copy of the ranges when each pattern's are in
/// start order (NVTX tables are, in every export seen): per pattern, the latest end among the
/// ranges starting before the current gap's end.
#[derive(Clone)]
pub(super) struct NearPrep {
    /// Per pattern: the next range not yet started, and the latest end of those before it.
    next: [usize; 3],
    max_end: [Ns; 3],
    /// Ranges out of start order (all held): their union, and a cursor in it.
    merged: Option<(IntervalSet, usize)>,
}

impl NearPrep {
    pub(super) fn new(pooled: &[SpanQueue; 3], sorted: bool) -> NearPrep {
        let merged = (!sorted).then(|| {
            let all = pooled
                .iter()
                .flat_map(|q| (q.first_held()..q.end_index()).filter_map(|i| q.span(i)))
                .collect();
            (IntervalSet::from_unsorted(all), 0)
        });
        NearPrep {
            next: [0; 3],
            max_end: [Ns::MIN; 3],
            merged,
        }
    }

    /// Takes in the ranges starting before `t`: every gap still to be asked ends after it.
    fn pass(&mut self, pooled: &[SpanQueue; 3], t: Ns) {
        if self.merged.is_some() {
            return;
        }
        for (p, queue) in pooled.iter().enumerate() {
            self.next[p] = self.next[p].max(queue.first_held());
            while let Some((s, e)) = queue.span(self.next[p]).filter(|r| r.0 < t) {
                if e > s {
                    self.max_end[p] = self.max_end[p].max(e);
                }
                self.next[p] += 1;
            }
        }
    }

    /// Whether `(gs, ge)` (positive, after every gap asked before) overlaps a range of
    /// positive length.
    pub(super) fn touches(&mut self, pooled: &[SpanQueue; 3], (gs, ge): (Ns, Ns)) -> bool {
        if let Some((set, cursor)) = &mut self.merged {
            return seek(set.spans(), cursor, gs).is_some_and(|(s, _)| s < ge);
        }
        self.pass(pooled, ge);
        self.max_end.iter().any(|&end| end > gs)
    }
}
