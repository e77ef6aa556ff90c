//! M2 (launch overhead), the one implementation: kernel-launch API calls swept in start order
//! from the rows ([`sweep_loaded`]), none held.
//!
//! Per profile: `standard` — per process, the time its launch calls' union covers in each
//! window, and its launch-call count; `trtllm-skill` — count and summed duration of the calls
//! starting in each window (the reference's `SUM(end-start)`: integer ns, so the order of the sum
//! does not matter). The phase windows and the aggregate window (the user's, or the kernel hull)
//! are known before the pass.

use crate::detect::host_facts::HostFacts;
use crate::detect::name_tables::NameTables;
use crate::iterations::inferred::{GraphLaunchTape, UnitFound};
use crate::model::rows::{CallRow, EventRows};
use crate::model::{NameFlags, NameId, Ns, ProcessIdx, Strings, flag};
use crate::names::launch::{LaunchApis, is_launch_api};
use crate::profile::{PhaseWindow, Switches};
use crate::steps::spans::{SpanQueue, Spans, overlap_at, seek};

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

/// Folds launch calls, in non-decreasing start, into per-scope M2 figures. It reads its host facts'
/// name table in place, and the phase windows through queues copied from the facts, trimmed as
/// the calls pass them.
#[derive(Debug, Clone)]
pub struct LaunchSweep {
    sw: Switches,
    launch: NameFlags,
    graph_launch: NameFlags,
    /// Context and generation windows.
    phases: [SpanQueue; 2],
    counts: LaunchCounts,
}

/// Calls between two trims of the window queues.
const TRIM_EVERY: u64 = 1 << 10;

/// What a [`LaunchSweep`] has counted.
#[derive(Debug, Clone)]
struct LaunchCounts {
    /// The aggregate window's start.
    aggregate_start: Ns,
    /// No later than the aggregate window's end.
    settled_until: Ns,
    processes: Vec<ProcessAcc>,
    pooled: PooledAcc,
    calls: u64,
    names_seen: Vec<NameId>,
    /// Each process's CUDA-graph launches, for the steps they mark when no marker does.
    graphs: GraphLaunchTape,
}

/// One process's running union of launch calls (standard).
#[derive(Debug, Clone)]
struct ProcessAcc {
    calls: u64,
    current: Option<(Ns, Ns)>,
    /// Where the phases' share of the current piece is measured up to.
    phases_from: Ns,
    cursors: [usize; 2],
    /// Covered ns per scope (the aggregate's from pieces ending by `settled_until`).
    covered: [Ns; 3],
    /// Union pieces ending after `settled_until`.
    tail: Vec<(Ns, Ns)>,
}

impl Default for ProcessAcc {
    fn default() -> ProcessAcc {
        ProcessAcc {
            calls: 0,
            current: None,
            phases_from: Ns::MIN,
            cursors: [0; 2],
            covered: [0; 3],
            tail: Vec::new(),
        }
    }
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

/// What the sweep found, before the aggregate window's end is known.
#[derive(Debug, Clone)]
pub struct LaunchSweepResult {
    sweep: LaunchCounts,
}

/// M2 figures per scope, the aggregate window known.
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
    /// The steps one process's regular CUDA-graph launches mark.
    pub graph_steps: Option<UnitFound>,
}

impl LaunchSweep {
    /// A sweep for the profile and phase windows of `host_facts`; the aggregate window starts at
    /// `aggregate_start` (the first kernel's start, or the user window's) and ends no earlier
    /// than `settled_until` (the last kernel row's end, or the window's end when known).
    pub fn new(host_facts: &HostFacts, aggregate_start: Ns, settled_until: Ns) -> LaunchSweep {
        let whole = |p: &Option<crate::steps::PhaseCounts>| {
            let spans = p.as_ref().map(|p| &p.window);
            SpanQueue::of(spans.map_or(&[][..], |w| w.spans()))
        };
        let names: &NameTables = &host_facts.names;
        LaunchSweep {
            sw: host_facts.sw,
            launch: names.launch.clone(),
            graph_launch: names.graph_launch.clone(),
            phases: [whole(&host_facts.context), whole(&host_facts.generation)],
            counts: LaunchCounts {
                aggregate_start,
                settled_until,
                processes: Vec::new(),
                pooled: PooledAcc::default(),
                calls: 0,
                names_seen: Vec::new(),
                graphs: GraphLaunchTape::default(),
            },
        }
    }

    pub fn push(&mut self, call: CallRow) {
        if self.counts.calls.is_multiple_of(TRIM_EVERY) {
            self.trim(call.start);
        }
        let counts = &mut self.counts;
        counts.calls += 1;
        if !counts.names_seen.contains(&call.name) {
            counts.names_seen.push(call.name);
        }
        if flag(&self.graph_launch, call.name) {
            counts.graphs.push(call.process, call.start);
        }
        if !flag(&self.launch, call.name) {
            return;
        }
        if self.sw.launch_union_per_process {
            self.push_to_process(call);
        } else {
            self.push_pooled(call);
        }
    }

    fn push_to_process(&mut self, call: CallRow) {
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
        match acc.current {
            Some(cur) if s <= cur.1 => {
                // The union covers up to `s` whatever comes: measured now, so the window
                // spans behind it can go.
                measure_phases(acc, (cur.0, s), &self.phases);
                acc.current = Some((cur.0, cur.1.max(e)));
            }
            Some(done) => {
                acc.current = Some((s, e));
                close_piece(acc, done, &self.phases, c.aggregate_start, c.settled_until);
            }
            None => acc.current = Some((s, e)),
        }
    }

    /// Lets the aggregate window end no earlier than `t` (a sweep beside the GPU work's reader
    /// learns it as the kernels are read): pieces ending by then are counted as they close.
    /// The pieces and calls held past the old end that `t` settles are counted now, as
    /// [`LaunchSweepResult::totals`] would count them.
    pub fn settle_until(&mut self, t: Ns) {
        let c = &mut self.counts;
        c.settled_until = c.settled_until.max(t);
        let (start, until) = (c.aggregate_start, c.settled_until);
        for acc in &mut c.processes {
            // A union's pieces close in time order.
            let n = acc.tail.partition_point(|&(_, e)| e <= until);
            let settled: Ns = acc
                .tail
                .drain(..n)
                .map(|(s, e)| (e - s.max(start)).max(0))
                .sum();
            acc.covered[0] += settled;
        }
        let pooled = &mut c.pooled;
        let n = pooled.tail.partition_point(|&(s, _)| s < until);
        for (s, duration) in pooled.tail.drain(..n) {
            if s >= start {
                pooled.count[0] += 1;
                pooled.sum[0] += duration;
            }
        }
    }

    /// Pieces and calls held until the aggregate window's end is known to lie past them.
    pub fn held(&self) -> usize {
        let c = &self.counts;
        c.pooled.tail.len() + c.processes.iter().map(|a| a.tail.len()).sum::<usize>()
    }

    /// Drops the window spans every process's union and call has passed (`now`: no call
    /// starts before it any more).
    pub fn trim(&mut self, now: Ns) {
        let open = self.counts.processes.iter().filter_map(|a| {
            let (s, _) = a.current?;
            Some(s.max(a.phases_from))
        });
        let low = open.fold(now, Ns::min);
        if self.sw.phase_window != PhaseWindow::Span {
            self.phases.iter_mut().for_each(|q| q.trim_before(low));
        }
    }

    fn push_pooled(&mut self, call: CallRow) {
        let c = &mut self.counts;
        let acc = &mut c.pooled;
        let duration = call.end - call.start;
        for (w, window) in self.phases.iter().enumerate() {
            if starts_in(window, &mut acc.cursors[w], call.start) {
                acc.count[w + 1] += 1;
                acc.sum[w + 1] += duration;
            }
        }
        if call.start >= c.settled_until {
            acc.tail.push((call.start, duration));
        } else if call.start >= c.aggregate_start {
            acc.count[0] += 1;
            acc.sum[0] += duration;
        }
    }

    /// Ends the pass (the aggregate window's end is applied later, [`LaunchSweepResult::totals`]).
    pub fn finish(mut self) -> LaunchSweepResult {
        let c = &mut self.counts;
        let (start, until) = (c.aggregate_start, c.settled_until);
        for acc in &mut c.processes {
            if let Some(piece) = acc.current.take() {
                close_piece(acc, piece, &self.phases, start, until);
            }
        }
        LaunchSweepResult { sweep: self.counts }
    }
}

impl LaunchSweepResult {
    /// Whether the sweep assumed what `[start, end)`, the aggregate window, holds: its start,
    /// and an end no earlier than the one it counted pieces up to as they closed.
    pub fn fits(&self, (start, end): (Ns, Ns)) -> bool {
        self.sweep.aggregate_start == start && self.sweep.settled_until <= end
    }

    /// Launch calls swept (whole trace).
    pub fn calls(&self) -> u64 {
        self.sweep.calls
    }

    /// The totals with `[start, end)` as the aggregate window (`start` as the sweep assumed).
    pub fn totals(&self, (start, end): (Ns, Ns)) -> LaunchTotals {
        let s = &self.sweep;
        debug_assert_eq!(start, s.aggregate_start);
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
            graph_steps: s.graphs.find_unit(),
        }
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

/// Calls (16 bytes each) a launch sweep folded while a scan reads may hold past the end it
/// knows the GPU work reaches, before it waits (the CLI's, for the kernel table's reader) or
/// gives up (the page's, which hears of no reader).
pub const MOST_HELD: usize = 1 << 18;

/// A launch sweep over the calls as a scan reads them: the CLI's `detect`, beside the kernel
/// table's reader (`folded.rs`), and the page's host side, before the reader worker's kernels
/// (`beside.rs`).
#[derive(Debug)]
pub enum Launches {
    /// No launch call yet.
    Waiting,
    /// The sweep, and the calls it took.
    Sweeping(Box<LaunchSweep>, u64),
    Done(LaunchSweepResult),
    /// A call came out of order, the sweep held too many, or its window was not to be had:
    /// the verdict's pass sweeps the calls.
    Void,
}

impl Launches {
    /// A sweep over the window `[start, until…)` ([`LaunchSweep::new`]), or void without one.
    pub fn over(host_facts: &HostFacts, window: Option<(Ns, Ns)>) -> Launches {
        match window {
            Some((start, until)) => {
                Launches::Sweeping(Box::new(LaunchSweep::new(host_facts, start, until)), 0)
            }
            None => Launches::Void,
        }
    }

    /// After the last call: done when `complete` (every call came in start order and was
    /// taken), else void.
    pub fn calls_read(&mut self, complete: bool) {
        *self = match (std::mem::replace(self, Launches::Void), complete) {
            (Launches::Sweeping(sweep, _), true) => Launches::Done(sweep.finish()),
            _ => Launches::Void,
        };
    }

    /// What the sweep found, when it came through.
    pub fn result(self) -> Option<LaunchSweepResult> {
        match self {
            Launches::Done(swept) => Some(swept),
            _ => None,
        }
    }
}

/// Sweeps the launch calls of `rows` for `host_facts` (built on its trace), the aggregate window
/// starting at `aggregate_start` and ending no earlier than `settled_until`
/// ([`LaunchSweep::new`]).
pub fn sweep_loaded(
    rows: &dyn EventRows,
    host_facts: &HostFacts,
    (aggregate_start, settled_until): (Ns, Ns),
) -> LaunchSweepResult {
    let mut sweep = LaunchSweep::new(host_facts, aggregate_start, settled_until);
    launch_calls(rows, host_facts).for_each(|call| sweep.push(call));
    sweep.finish()
}

/// The kernel-launch API calls of `rows` under any profile's rule (what the file sweep selects:
/// a load may hold every runtime call) in non-decreasing start, ties in table order as the file
/// sweep merges them.
fn launch_calls<'t>(
    rows: &'t dyn EventRows,
    host_facts: &HostFacts,
) -> impl Iterator<Item = CallRow> + 't {
    let any_launch = swept_calls(host_facts, &rows.meta().strings);
    rows.calls().filter(move |c| flag(&any_launch, c.name))
}

/// The names of the CUDA API calls [`sweep_loaded`] hands the sweep: kernel-launch APIs under
/// any profile's rule.
pub fn swept_calls(host_facts: &HostFacts, strings: &Strings) -> NameFlags {
    match host_facts.sw.launch_apis {
        LaunchApis::AllVersioned => host_facts.names.launch.clone(),
        LaunchApis::ExactCudaLaunchKernel => {
            strings.classify(|s| is_launch_api(s, LaunchApis::AllVersioned))
        }
    }
}

/// Credits a closed union piece to each scope.
fn close_piece(
    acc: &mut ProcessAcc,
    (s, e): (Ns, Ns),
    phases: &[SpanQueue; 2],
    aggregate_start: Ns,
    settled_until: Ns,
) {
    measure_phases(acc, (s, e), phases);
    if e <= settled_until {
        acc.covered[0] += (e - s.max(aggregate_start)).max(0);
    } else {
        acc.tail.push((s, e));
    }
}

/// Credits `[s, e)` of the current piece (from where it was measured up to) to each phase.
fn measure_phases(acc: &mut ProcessAcc, (s, e): (Ns, Ns), phases: &[SpanQueue; 2]) {
    let from = s.max(acc.phases_from);
    if e > from {
        for (w, window) in phases.iter().enumerate() {
            acc.covered[w + 1] += overlap_at(window, &mut acc.cursors[w], from, e);
        }
    }
    acc.phases_from = acc.phases_from.max(e);
}

/// Whether `t` lies in the window, for `t` non-decreasing across calls (forward-only cursor).
fn starts_in<S: Spans + ?Sized>(window: &S, cursor: &mut usize, t: Ns) -> bool {
    seek(window, cursor, t).is_some_and(|(s, _)| s <= t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::DetectConfig;
    use crate::model::Trace;
    use crate::profile::Profile;

    /// Settling the window's end as the kernels come counts the calls held past the old end at
    /// once, and the totals are those of a sweep that held every call to the end.
    #[test]
    fn calls_held_past_the_settled_end_count_as_they_settle() {
        let mut trace = Trace::default();
        let launch = trace.strings.intern("cudaLaunchKernel");
        // Two processes' launch calls, some overlapping, some apart.
        let calls: Vec<CallRow> = (0..5000i64)
            .map(|i| CallRow {
                row: i,
                start: i * 10,
                end: i * 10 + if i % 3 == 0 { 15 } else { 4 },
                thread: (i % 2) as u32,
                process: (i % 2) as u32,
                correlation: i as u32,
                name: launch,
            })
            .collect();
        let window = (95, 49_000);
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = DetectConfig {
                profile,
                ..DetectConfig::default()
            };
            let facts = HostFacts::new(&trace, &cfg);
            let mut held_all = LaunchSweep::new(&facts, window.0, Ns::MIN);
            calls.iter().for_each(|&c| held_all.push(c));
            assert!(held_all.held() > 4000, "{profile:?}: {}", held_all.held());
            let mut settling = LaunchSweep::new(&facts, window.0, Ns::MIN);
            for (i, &c) in calls.iter().enumerate() {
                if i % 100 == 0 {
                    settling.settle_until((c.start - 30).min(window.1));
                }
                settling.push(c);
            }
            assert!(settling.held() < 200, "{profile:?}: {}", settling.held());
            let (all, settled) = (held_all.finish(), settling.finish());
            assert!(settled.fits(window));
            let (all, settled) = (all.totals(window), settled.totals(window));
            for scope in [Scope::Aggregate, Scope::Context, Scope::Generation] {
                assert_eq!(settled.pooled(scope), all.pooled(scope), "{profile:?}");
                for p in 0..2 {
                    assert_eq!(
                        settled.covered(p, scope),
                        all.covered(p, scope),
                        "{profile:?}"
                    );
                }
            }
            let counted = match profile {
                Profile::Standard => all.covered(0, Scope::Aggregate) > 0,
                _ => all.pooled(Scope::Aggregate).0 > 0,
            };
            assert!(counted, "{profile:?}: nothing counted");
        }
    }
}
