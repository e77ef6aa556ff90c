//! M2 (launch overhead) from kernel-launch API calls streamed in start order, not held: the
//! page's bounded open (`trace::LaunchRuns` merges the runtime table's sorted runs).
//!
//! Per profile, the same figures `measure` takes from loaded calls: `standard` — per process,
//! the time its launch calls' union covers in each window, and its launch-call count;
//! `trtllm-skill` — count and summed duration of the calls starting in each window. The phase
//! windows are known before the pass; the aggregate window is the kernel hull, whose end is known
//! only after the kernel pass, so a call or union piece ending after the last kernel row's end
//! (a lower bound of the hull's end) is kept until then: few, since a kernel's launch precedes it.

use super::config::Switches;
use super::names::NameTables;
use super::sweep::Plan;
use crate::model::intervals::IntervalSet;
use crate::model::{NameFlags, NameId, Ns, ProcessIdx, flag};
use crate::trace::LaunchCall;

/// Scopes in the order the totals keep them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Aggregate,
    Context,
    Generation,
}

impl Scope {
    fn index(self) -> usize {
        self as usize
    }
}

/// Folds launch calls, in non-decreasing start, into per-scope M2 figures. It reads its plan's
/// name table and phase windows in place (a span per forward step: not copied).
#[derive(Debug, Clone)]
pub struct LaunchSweep<'p> {
    sw: Switches,
    launch: &'p NameFlags,
    /// Context and generation windows.
    phases: [Option<&'p IntervalSet>; 2],
    counts: LaunchCounts,
}

/// What a [`LaunchSweep`] has counted.
#[derive(Debug, Clone)]
struct LaunchCounts {
    hull_start: Ns,
    /// The last kernel row's end: no later than the hull's end.
    settled_until: Ns,
    processes: Vec<ProcessAcc>,
    pooled: PooledAcc,
    calls: u64,
    names_seen: Vec<NameId>,
}

/// One process's running union of launch calls (standard).
#[derive(Debug, Clone, Default)]
struct ProcessAcc {
    calls: u64,
    current: Option<(Ns, Ns)>,
    cursors: [usize; 2],
    /// Covered ns per scope (the aggregate's from pieces ending by `settled_until`).
    covered: [Ns; 3],
    /// Union pieces ending after `settled_until`.
    tail: Vec<(Ns, Ns)>,
}

/// Calls starting in each window (`trtllm-skill`).
#[derive(Debug, Clone, Default)]
struct PooledAcc {
    cursors: [usize; 2],
    count: [u64; 3],
    sum: [Ns; 3],
    /// `(start, duration)` of calls starting after `settled_until`.
    tail: Vec<(Ns, Ns)>,
}

/// What the sweep found, before the hull's end is known.
#[derive(Debug, Clone)]
pub struct LaunchSweepResult {
    sweep: LaunchCounts,
}

/// M2 figures per scope, the kernel hull known.
#[derive(Debug, Clone, Default)]
pub struct LaunchTotals {
    /// Per process: its launch calls (whole trace) and covered ns per scope (standard).
    pub per_process: Vec<(u64, [Ns; 3])>,
    /// Calls starting in each scope and their summed duration (`trtllm-skill`).
    pub pooled: [(u64, Ns); 3],
    /// Launch calls in the trace.
    pub calls: u64,
    /// Distinct names of the launch calls.
    pub names_seen: Vec<NameId>,
}

impl<'p> LaunchSweep<'p> {
    /// A sweep for `plan`'s profile and phase windows; `hull_start` is the first kernel's start
    /// and `settled_until` the last kernel row's end.
    pub fn new(plan: &'p Plan, hull_start: Ns, settled_until: Ns) -> LaunchSweep<'p> {
        let names: &NameTables = &plan.names;
        LaunchSweep {
            sw: plan.sw,
            launch: &names.launch,
            phases: [
                plan.context.as_ref().map(|p| &p.window),
                plan.generation.as_ref().map(|p| &p.window),
            ],
            counts: LaunchCounts {
                hull_start,
                settled_until,
                processes: Vec::new(),
                pooled: PooledAcc::default(),
                calls: 0,
                names_seen: Vec::new(),
            },
        }
    }

    pub fn push(&mut self, call: LaunchCall) {
        let counts = &mut self.counts;
        counts.calls += 1;
        if !counts.names_seen.contains(&call.name) {
            counts.names_seen.push(call.name);
        }
        if !flag(self.launch, call.name) {
            return;
        }
        if self.sw.launch_union_per_process {
            self.push_to_process(call);
        } else {
            self.push_pooled(call);
        }
    }

    fn push_to_process(&mut self, call: LaunchCall) {
        let c = &mut self.counts;
        let p = call.process as usize;
        if c.processes.len() <= p {
            c.processes.resize_with(p + 1, ProcessAcc::default);
        }
        let acc = &mut c.processes[p];
        acc.calls += 1;
        let (s, e) = (call.start, call.end);
        if e <= s {
            return;
        }
        match &mut acc.current {
            Some(cur) if s <= cur.1 => cur.1 = cur.1.max(e),
            Some(cur) => {
                let done = std::mem::replace(cur, (s, e));
                close_piece(acc, done, &self.phases, c.hull_start, c.settled_until);
            }
            None => acc.current = Some((s, e)),
        }
    }

    fn push_pooled(&mut self, call: LaunchCall) {
        let c = &mut self.counts;
        let acc = &mut c.pooled;
        let duration = call.end - call.start;
        for (w, window) in self.phases.iter().enumerate() {
            if let Some(window) = window
                && starts_in(window, &mut acc.cursors[w], call.start)
            {
                acc.count[w + 1] += 1;
                acc.sum[w + 1] += duration;
            }
        }
        if call.start >= c.settled_until {
            acc.tail.push((call.start, duration));
        } else if call.start >= c.hull_start {
            acc.count[0] += 1;
            acc.sum[0] += duration;
        }
    }

    /// Ends the pass (the hull's end is applied later, [`LaunchSweepResult::totals`]).
    pub fn finish(mut self) -> LaunchSweepResult {
        let c = &mut self.counts;
        let (start, until) = (c.hull_start, c.settled_until);
        for acc in &mut c.processes {
            if let Some(piece) = acc.current.take() {
                close_piece(acc, piece, &self.phases, start, until);
            }
        }
        LaunchSweepResult { sweep: self.counts }
    }
}

impl LaunchSweepResult {
    /// The totals with the kernel hull `[start, end)` as the aggregate window.
    pub fn totals(&self, (start, end): (Ns, Ns)) -> LaunchTotals {
        let s = &self.sweep;
        debug_assert_eq!(start, s.hull_start);
        let in_hull = |a: Ns, b: Ns| (b.min(end) - a.max(start)).max(0);
        let per_process = s
            .processes
            .iter()
            .map(|acc| {
                let mut covered = acc.covered;
                covered[0] += acc.tail.iter().map(|&(a, b)| in_hull(a, b)).sum::<Ns>();
                (acc.calls, covered)
            })
            .collect();
        let mut pooled = [0, 1, 2].map(|i| (s.pooled.count[i], s.pooled.sum[i]));
        for &(t, duration) in &s.pooled.tail {
            if t >= start && t < end {
                pooled[0].0 += 1;
                pooled[0].1 += duration;
            }
        }
        LaunchTotals {
            per_process,
            pooled,
            calls: s.calls,
            names_seen: s.names_seen.clone(),
        }
    }

    /// The first kernel's start the sweep assumed.
    pub fn hull_start(&self) -> Ns {
        self.sweep.hull_start
    }
}

impl LaunchTotals {
    /// The time a process's launch calls cover in `scope` (standard).
    pub fn covered(&self, p: ProcessIdx, scope: Scope) -> Ns {
        self.per_process
            .get(p as usize)
            .map_or(0, |(_, c)| c[scope.index()])
    }

    /// A process's launch calls in the whole trace (standard).
    pub fn calls_of(&self, p: ProcessIdx) -> u64 {
        self.per_process.get(p as usize).map_or(0, |(n, _)| *n)
    }

    /// Calls starting in `scope` and their summed duration (`trtllm-skill`).
    pub fn pooled(&self, scope: Scope) -> (u64, Ns) {
        self.pooled[scope.index()]
    }
}

/// Credits a closed union piece to each scope.
fn close_piece(
    acc: &mut ProcessAcc,
    (s, e): (Ns, Ns),
    phases: &[Option<&IntervalSet>; 2],
    hull_start: Ns,
    settled_until: Ns,
) {
    for (w, window) in phases.iter().enumerate() {
        if let Some(window) = window {
            acc.covered[w + 1] +=
                super::spans::overlap_at(window.spans(), &mut acc.cursors[w], s, e);
        }
    }
    if e <= settled_until {
        acc.covered[0] += (e - s.max(hull_start)).max(0);
    } else {
        acc.tail.push((s, e));
    }
}

/// Whether `t` lies in the window, for `t` non-decreasing across calls (forward-only cursor).
fn starts_in(window: &IntervalSet, cursor: &mut usize, t: Ns) -> bool {
    super::spans::seek(window.spans(), cursor, t).is_some_and(|(s, _)| s <= t)
}
