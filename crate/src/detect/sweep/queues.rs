//! The windows and host-prep ranges the kernel sweep reads ([`Queues`]), each held from its
//! slowest reader on: given whole, or fed as the NVTX ranges are read.

use crate::detect::measure::PrepRanges;
use crate::model::intervals::IntervalSet;
use crate::profile::{PhaseWindow, Switches};
use crate::steps::spans::SpanQueue;

/// A queue the sweep reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueRef {
    /// A scope's window, by scope position.
    Window(usize),
    /// One process's host-prep union of one pattern (standard).
    Prep(usize, usize),
}

/// The windows and host-prep ranges the sweep reads, each held from its slowest reader on.
#[derive(Debug, Default)]
pub(super) struct Queues {
    /// Per scope (aggregate, then context and generation when the trace has them); `None` for
    /// the kernel hull.
    pub(super) windows: Vec<Option<SpanQueue>>,
    /// Standard: per process, per pattern, the union of its host-prep ranges.
    pub(super) prep: Vec<[SpanQueue; 3]>,
    /// `trtllm-skill`: per pattern, the pooled host-prep ranges in table order.
    pub(super) pooled: Option<[SpanQueue; 3]>,
    /// Whether each pooled pattern's ranges come in start order (gaps can then be dropped).
    pub(super) pooled_sorted: bool,
    /// The phase windows are spans (first start to last end), not unions.
    pub(super) span_phases: bool,
}

impl Queues {
    pub(super) fn get(&self, r: QueueRef) -> Option<&SpanQueue> {
        match r {
            QueueRef::Window(i) => self.windows.get(i)?.as_ref(),
            QueueRef::Prep(p, k) => self.prep.get(p)?.get(k),
        }
    }

    pub(super) fn window(&self, scope: usize) -> Option<&SpanQueue> {
        self.get(QueueRef::Window(scope))
    }
}

/// The queues of inputs held whole: its windows, and its host-prep ranges as per-process unions
/// (standard) or pooled lists in table order (`trtllm-skill`).
pub(super) fn queues_of(
    windows: Vec<Option<SpanQueue>>,
    prep: Vec<PrepRanges>,
    sw: &Switches,
) -> Queues {
    if sw.prep_per_process {
        // Each pattern's ranges are dropped once their union is built: a range per forward
        // step is held twice at most, never three times.
        let prep = prep
            .into_iter()
            .map(|r| {
                r.by_pattern.map(|ranges| {
                    SpanQueue::from_vec(IntervalSet::from_ranges(&ranges).into_spans())
                })
            })
            .collect();
        return Queues {
            windows,
            prep,
            span_phases: sw.phase_window == PhaseWindow::Span,
            ..Queues::default()
        };
    }
    let pooled_sorted = prep
        .first()
        .is_none_or(|r| r.by_pattern.iter().all(|l| l.is_sorted_by_key(|r| r.0)));
    let pooled = prep
        .into_iter()
        .next()
        .map(|r| r.by_pattern.map(SpanQueue::from_vec));
    Queues {
        windows,
        prep: Vec::new(),
        pooled,
        pooled_sorted,
        span_phases: sw.phase_window == PhaseWindow::Span,
    }
}
