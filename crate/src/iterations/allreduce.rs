//! Technique 1: allreduce grouping (reference §7.1 steps 1–2).
//!
//! Every forward step of a tensor-parallel model launches the same allreduce kernels (2–4 per
//! layer); between steps the host works for a millisecond or more, so a gap longer than 1 ms
//! between consecutive allreduce kernels (all devices pooled) closes an iteration.

use super::{ITERATION_GAP_NS, Iteration};
use crate::model::rows::KernelRow;
use crate::model::{NameFlags, Ns, Strings, flag};
use crate::sqlike::Like;

/// The allreduce kernels of a trace grouped into iterations, as they pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllreduceIterations {
    /// Allreduce kernels met (all devices pooled).
    pub kernels: usize,
    pub iterations: Vec<Iteration>,
}

/// Every kernel whose short name contains `allreduce` (SQLite `LIKE '%allreduce%'`: ASCII
/// case-insensitive), all devices pooled, grouped in start order ([`Grouper`]), fed one kernel
/// at a time by a pass over the kernels that folds other things too: what is held is the
/// iterations, not the kernels.
#[derive(Debug, Clone)]
pub struct AllreduceFold {
    is_allreduce: NameFlags,
    grouper: Grouper,
}

impl AllreduceFold {
    /// For kernels whose names are in `strings`.
    pub fn new(strings: &Strings) -> AllreduceFold {
        let pattern = Like::new("%allreduce%");
        AllreduceFold {
            is_allreduce: strings.classify(|s| pattern.matches(s)),
            grouper: Grouper::new(ITERATION_GAP_NS),
        }
    }

    pub fn push(&mut self, k: &KernelRow) {
        if flag(&self.is_allreduce, k.short_name) {
            self.grouper.push(k.start, k.end);
        }
    }

    pub fn finish(self) -> AllreduceIterations {
        AllreduceIterations {
            kernels: self.grouper.events,
            iterations: self.grouper.iterations,
        }
    }
}

/// Groups events fed by start: a gap (this start − the previous event's end, not the group's
/// running end) strictly longer than `gap_ns` starts a new iteration.
#[derive(Debug, Clone)]
pub struct Grouper {
    gap_ns: Ns,
    prev_end: Option<Ns>,
    events: usize,
    iterations: Vec<Iteration>,
}

impl Grouper {
    pub fn new(gap_ns: Ns) -> Grouper {
        Grouper {
            gap_ns,
            prev_end: None,
            events: 0,
            iterations: Vec::new(),
        }
    }

    /// Adds the next event by start.
    pub fn push(&mut self, start: Ns, end: Ns) {
        let extend = self.prev_end.is_some_and(|p| start - p <= self.gap_ns);
        match self.iterations.last_mut() {
            Some(it) if extend => {
                it.end = it.end.max(end);
                it.kernel_count += 1;
                it.wall_ns = it.end - it.start;
            }
            _ => self.iterations.push(Iteration {
                start,
                end,
                kernel_count: 1,
                wall_ns: end - start,
            }),
        }
        self.prev_end = Some(end);
        self.events += 1;
    }
}

/// [`Grouper`] over a list of events sorted by start.
pub fn group(events: &[(Ns, Ns)], gap_ns: Ns) -> Vec<Iteration> {
    let mut g = Grouper::new(gap_ns);
    for &(start, end) in events {
        g.push(start, end);
    }
    g.iterations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterations::ITERATION_GAP_NS;

    #[test]
    fn a_gap_of_exactly_1ms_extends_one_more_starts_a_new_iteration() {
        let ms = ITERATION_GAP_NS;
        let events = [
            (0, 10),
            (10 + ms, 20 + ms),              // gap == 1 ms: same iteration
            (20 + ms + ms + 1, 30 + 2 * ms), // gap 1 ms + 1 ns: new iteration
        ];
        let its = group(&events, ms);
        assert_eq!(its.len(), 2);
        assert_eq!(
            (its[0].start, its[0].end, its[0].kernel_count),
            (0, 20 + ms, 2)
        );
        assert_eq!(its[0].wall_ns, 20 + ms);
        assert_eq!(its[1].kernel_count, 1);
    }

    #[test]
    fn the_gap_is_measured_from_the_previous_event_not_the_running_end() {
        // A long kernel, then a short one inside it, then one 1.5 ms after the short one ends
        // but only 0.5 ms after the long one ends: the reference compares with the short one.
        let events = [(0, 3_000_000), (100, 200), (1_500_200, 1_600_000)];
        let its = group(&events, ITERATION_GAP_NS);
        assert_eq!(its.len(), 2);
        assert_eq!(its[0].end, 3_000_000, "running max end");
        assert_eq!(its[1].start, 1_500_200);
    }

    #[test]
    fn overlapping_kernels_of_two_ranks_stay_in_one_iteration() {
        let events = [(0, 50), (30, 60), (100, 140), (120, 150)];
        let its = group(&events, ITERATION_GAP_NS);
        assert_eq!(its.len(), 1);
        assert_eq!(its[0].kernel_count, 4);
    }

    #[test]
    fn no_events_no_iterations() {
        assert!(group(&[], ITERATION_GAP_NS).is_empty());
    }
}
