//! Where the steady cycles' bounds lie, built once for every replay of one read: the NVTX rows
//! that bound them and the times of those that are GPU iterations' starts. Why shared: a run
//! has a cycle per step (hundreds of thousands in a minute of decode), and each replay held a
//! map of its own, five replays at once.

use hashbrown::HashMap;

use crate::analyze::breakdown::CycleBounds;
use crate::model::Ns;

/// A bound's id: cycle `i` starts at bound `2i` and ends at bound `2i + 1`.
pub(super) type BoundId = usize;

#[derive(Debug, Default)]
pub(super) struct CycleIndex {
    /// (NVTX row, bound), by row: a step's row is the end of one cycle and the start of the next.
    by_row: Vec<(i64, BoundId)>,
    /// Where each row's bounds begin in `by_row`.
    first: HashMap<i64, usize>,
    /// The bounds met at a GPU operation's start (steps that are GPU iterations), in time order.
    pub(super) by_time: Vec<(Ns, BoundId)>,
    /// The cycles' measured spans, in order.
    pub(super) spans: Vec<(Ns, Ns)>,
}

impl CycleIndex {
    pub(super) fn new(cycles: &[CycleBounds]) -> CycleIndex {
        let mut by_row = Vec::new();
        let mut by_time = Vec::new();
        for (i, c) in cycles.iter().enumerate() {
            for (j, (row, t)) in [(c.start_row, c.start), (c.next_row, c.next)]
                .into_iter()
                .enumerate()
            {
                match row {
                    Some(row) => by_row.push((row, 2 * i + j)),
                    None => by_time.push((t, 2 * i + j)),
                }
            }
        }
        by_row.sort_unstable();
        by_time.sort_unstable();
        let mut first = HashMap::with_capacity(by_row.len() / 2 + 1);
        for (k, &(row, _)) in by_row.iter().enumerate() {
            first.entry(row).or_insert(k);
        }
        CycleIndex {
            by_row,
            first,
            by_time,
            spans: cycles.iter().map(|c| (c.start, c.next)).collect(),
        }
    }

    /// The bounds NVTX row `row` is, in bound order.
    pub(super) fn at_row(&self, row: i64) -> impl Iterator<Item = BoundId> + '_ {
        let from = self.first.get(&row).copied().unwrap_or(self.by_row.len());
        self.by_row[from..]
            .iter()
            .take_while(move |&&(r, _)| r == row)
            .map(|&(_, b)| b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bound is found at its row (a row ending one cycle and starting the next holds
    /// both), or in time order when it has none; a row that bounds nothing gives nothing.
    #[test]
    fn each_bound_is_found_at_its_row_or_time() {
        let c = |start, start_row, next, next_row| CycleBounds {
            start,
            start_row,
            next,
            next_row,
        };
        let index = CycleIndex::new(&[
            c(10, Some(7), 20, Some(3)),
            c(20, Some(3), 30, Some(9)),
            c(40, None, 35, None),
        ]);
        assert_eq!(index.at_row(7).collect::<Vec<_>>(), vec![0]);
        assert_eq!(index.at_row(3).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(index.at_row(9).collect::<Vec<_>>(), vec![3]);
        assert_eq!(index.at_row(4).count(), 0);
        assert_eq!(index.by_time, vec![(35, 5), (40, 4)]);
        assert_eq!(index.spans, vec![(10, 20), (20, 30), (40, 35)]);
    }
}
