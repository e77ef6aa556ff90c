//! Whether each kernel was launched inside a set of spans: the start of its runtime launch call,
//! joined on correlation id within the process (ids collide across processes).
//!
//! Only one bit of the launch call matters per kernel (is its start inside the spans?), so the
//! join keeps two bits per correlation id — tabled, inside — not the call's start: CUPTI hands
//! out ids from a per-process counter, so per process they are dense and a bit table from the
//! smallest id to the largest holds them (about 2 MiB for 8 M calls, where a table of starts
//! took 8 bytes per id and a list of the calls 16 bytes per call while it was built). Sparse
//! ids (a hand-made or filtered export) fall back to a map.

use std::collections::HashMap;

use super::ops::contains;
use crate::model::{Ns, ProcessIdx, Trace, flag};
use crate::names::launch::LaunchApis;
use crate::names::launch::is_launch_api;

/// Ids further apart than this many per launch call (plus a margin) make a process's table a map.
const DENSE_IDS_PER_CALL: u64 = 64;
const DENSE_MARGIN: u64 = 1 << 16;

/// One process's launch calls by correlation id.
#[derive(Debug, Default)]
enum Table {
    #[default]
    Empty,
    /// Two bits per id from `base`: bit `2·(id − base)` tabled, the next one inside.
    Dense {
        base: u32,
        bits: Vec<u64>,
    },
    Sparse(HashMap<u32, bool>),
}

impl Table {
    /// Records the call with id `id`: a later call with the same id replaces an earlier one.
    fn set(&mut self, id: u32, inside: bool) {
        match self {
            Table::Empty => {}
            Table::Dense { base, bits } => {
                let bit = 2 * u64::from(id - *base);
                if let Some(word) = bits.get_mut((bit / 64) as usize) {
                    let shift = bit % 64;
                    *word = (*word & !(0b11 << shift)) | ((0b01 | u64::from(inside) << 1) << shift);
                }
            }
            Table::Sparse(m) => {
                m.insert(id, inside);
            }
        }
    }

    fn get(&self, id: u32) -> Option<bool> {
        match self {
            Table::Empty => None,
            Table::Dense { base, bits } => {
                let bit = 2 * u64::from(id.checked_sub(*base)?);
                let pair = bits.get((bit / 64) as usize)? >> (bit % 64);
                (pair & 0b01 != 0).then_some(pair & 0b10 != 0)
            }
            Table::Sparse(m) => m.get(&id).copied(),
        }
    }
}

/// The kernel → launch-call join, reduced to whether the call started inside the spans.
pub struct LaunchJoin {
    per_process: Vec<Table>,
}

impl LaunchJoin {
    /// Tables every kernel-launch API call (any launch API, any version) that has an id: whether
    /// it starts inside `spans` (sorted, disjoint `[start, end)`).
    pub fn new(trace: &Trace, spans: &[(Ns, Ns)]) -> LaunchJoin {
        let r = &trace.runtime;
        let mut per_process: Vec<Table> = Vec::new();
        per_process.resize_with(trace.processes.len(), Table::default);
        if r.correlation.len() != r.len() {
            return LaunchJoin { per_process };
        }
        let is_launch = trace
            .strings
            .classify(|s| is_launch_api(s, LaunchApis::AllVersioned));
        // The launch calls that have an id, with their process.
        let calls = || {
            (0..r.len()).filter_map(|i| {
                if !flag(&is_launch, r.name[i]) || r.correlation[i] == 0 {
                    return None;
                }
                let process = *trace.threads.process.get(r.thread[i] as usize)?;
                Some((process as usize, i))
            })
        };
        // First pass: each process's id range and call count, to size its table.
        let mut ranges = vec![(u32::MAX, 0u32, 0u64); per_process.len()];
        for (p, i) in calls() {
            if let Some(s) = ranges.get_mut(p) {
                let id = r.correlation[i];
                *s = (s.0.min(id), s.1.max(id), s.2 + 1);
            }
        }
        for (table, &(lo, hi, count)) in per_process.iter_mut().zip(&ranges) {
            *table = match count {
                0 => Table::Empty,
                _ if u64::from(hi - lo) < DENSE_IDS_PER_CALL * count + DENSE_MARGIN => {
                    Table::Dense {
                        base: lo,
                        bits: vec![0; (2 * (u64::from(hi - lo) + 1)).div_ceil(64) as usize],
                    }
                }
                _ => Table::Sparse(HashMap::with_capacity(count as usize)),
            };
        }
        for (p, i) in calls() {
            if let Some(table) = per_process.get_mut(p) {
                table.set(r.correlation[i], contains(spans, r.start[i]));
            }
        }
        LaunchJoin { per_process }
    }

    /// Whether the launch call of a kernel of `process` with `correlation` started inside the
    /// spans; `None` when no launch call has that id.
    pub fn launched_inside(&self, process: ProcessIdx, correlation: u32) -> Option<bool> {
        self.per_process.get(process as usize)?.get(correlation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_tables_answer_alike_and_the_last_call_of_an_id_wins() {
        for mut t in [
            Table::Dense {
                base: 1,
                bits: vec![0; 1],
            },
            Table::Sparse(HashMap::new()),
        ] {
            t.set(3, true);
            t.set(1, false);
            t.set(7, true);
            t.set(7, false);
            assert_eq!(t.get(3), Some(true));
            assert_eq!(t.get(1), Some(false));
            assert_eq!(t.get(7), Some(false), "a later call with the same id wins");
            assert_eq!(t.get(2), None);
            assert_eq!(t.get(0), None, "below the table's base");
            assert_eq!(t.get(1_000_000), None);
        }
        assert_eq!(Table::Empty.get(3), None);
    }
}
