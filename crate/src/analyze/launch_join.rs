//! When each kernel was launched: the start of its runtime launch call, joined on correlation id
//! within the process (ids collide across processes).
//!
//! CUPTI hands out correlation ids from a per-process counter, so per process they are dense:
//! a plain vector indexed by id (8 bytes per id) replaces a hash map of millions of entries.
//! Sparse ids (a hand-made or filtered export) fall back to a map.

use std::collections::HashMap;

use crate::model::{Ns, ProcessIdx, Trace, flag};
use crate::names::launch::LaunchApis;
use crate::names::launch::is_launch_api;

/// Marks an id without a launch call in a dense table.
const NONE: Ns = Ns::MIN;

enum Table {
    Dense(Vec<Ns>),
    Sparse(HashMap<u32, Ns>),
}

/// The kernel → launch-call join: a launch call's start by `(process, correlation id)`.
pub struct LaunchJoin {
    per_process: Vec<Table>,
}

impl LaunchJoin {
    /// Tables every kernel-launch API call (any launch API, any version) that has an id.
    pub fn new(trace: &Trace) -> LaunchJoin {
        let r = &trace.runtime;
        let mut calls: Vec<Vec<(u32, Ns)>> =
            (0..trace.processes.len()).map(|_| Vec::new()).collect();
        if r.correlation.len() == r.len() {
            let is_launch = trace
                .strings
                .classify(|s| is_launch_api(s, LaunchApis::AllVersioned));
            for i in (0..r.len()).filter(|&i| flag(&is_launch, r.name[i]) && r.correlation[i] != 0)
            {
                let process = trace.threads.process.get(r.thread[i] as usize).copied();
                if let Some(list) = process.and_then(|p| calls.get_mut(p as usize)) {
                    list.push((r.correlation[i], r.start[i]));
                }
            }
        }
        LaunchJoin {
            per_process: calls.into_iter().map(table).collect(),
        }
    }

    /// The launch call's start for a kernel of `process` with `correlation`, if tabled.
    pub fn launched_at(&self, process: ProcessIdx, correlation: u32) -> Option<Ns> {
        let at = match self.per_process.get(process as usize)? {
            Table::Dense(v) => v.get(correlation as usize).copied()?,
            Table::Sparse(m) => m.get(&correlation).copied()?,
        };
        (at != NONE).then_some(at)
    }
}

fn table(calls: Vec<(u32, Ns)>) -> Table {
    let max = calls.iter().map(|c| c.0 as usize).max().unwrap_or(0);
    if max < calls.len().saturating_mul(2) + 1024 {
        let mut v = vec![NONE; max + 1];
        for (id, start) in calls {
            v[id as usize] = start;
        }
        Table::Dense(v)
    } else {
        Table::Sparse(calls.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_tables_answer_alike() {
        let calls = vec![(3, 30), (1, 10), (7, 70)];
        for t in [
            table(calls.clone()),
            Table::Sparse(calls.into_iter().collect()),
        ] {
            let join = LaunchJoin {
                per_process: vec![t],
            };
            assert_eq!(join.launched_at(0, 3), Some(30));
            assert_eq!(join.launched_at(0, 2), None);
            assert_eq!(join.launched_at(0, 1_000_000), None);
            assert_eq!(join.launched_at(1, 3), None, "unknown process");
        }
        assert!(matches!(table(vec![(5_000_000, 1)]), Table::Sparse(_)));
    }
}
