//! One trace indexed once for every drill-down and the explainer: kernels per device in time
//! order, the runtime call behind each kernel or memory operation, name classes and steps.
//!
//! The call join is on (process, correlation id): ids collide across processes (spec §1). It is
//! a dense table per process (ids are handed out by a counter, so they are nearly contiguous),
//! falling back to a sorted list when a process's ids are sparse.

pub mod call_facts;
pub mod call_join;
pub mod kernel_pass;
pub mod names;
pub mod rows;
#[cfg(test)]
pub(crate) mod testing;
pub mod units;

use crate::model::intervals::IntervalSet;
use crate::model::{CoverageNote, MemOps, Ns, ProcessIdx, Trace};
use crate::names::api::ApiKind;
use crate::profile::Profile;
use crate::steps;
use crate::steps::Step;
use crate::steps::names::StepNames;
use names::Names;

/// Kernels of one device, sorted by (start, end).
#[derive(Debug, Clone)]
pub struct DeviceKernels {
    pub device: u32,
    kernels: KernelOrder,
}

/// Kernel rows in (start, end) order.
#[derive(Debug, Clone)]
enum KernelOrder {
    /// Every row of the table, in row order: the trace has one device and its table is in that
    /// order already (as nsys writes it), so no list is held.
    All(u32),
    Rows(Vec<u32>),
}

impl DeviceKernels {
    /// The device's kernel rows in (start, end) order.
    pub fn kernels(&self) -> DeviceRows<'_> {
        match &self.kernels {
            KernelOrder::All(n) => DeviceRows::All(0..*n),
            KernelOrder::Rows(rows) => DeviceRows::Rows(rows.iter()),
        }
    }

    /// How many kernels ran on the device.
    pub fn len(&self) -> usize {
        match &self.kernels {
            KernelOrder::All(n) => *n as usize,
            KernelOrder::Rows(rows) => rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The iterator of [`DeviceKernels::kernels`].
pub enum DeviceRows<'a> {
    All(std::ops::Range<u32>),
    Rows(std::slice::Iter<'a, u32>),
}

impl Iterator for DeviceRows<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self {
            DeviceRows::All(r) => r.next(),
            DeviceRows::Rows(r) => r.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            DeviceRows::All(r) => r.size_hint(),
            DeviceRows::Rows(r) => r.size_hint(),
        }
    }
}

impl ExactSizeIterator for DeviceRows<'_> {}

/// (process, correlation id) → runtime row.
#[derive(Debug, Default)]
pub struct CallIndex {
    per_process: Vec<ProcessCalls>,
}

#[derive(Debug, Default)]
enum ProcessCalls {
    #[default]
    Empty,
    Dense {
        base: u32,
        rows: Vec<u32>,
    },
    Sparse(Vec<(u32, u32)>),
}

const NO_ROW: u32 = u32::MAX;

impl CallIndex {
    /// Indexes every runtime row that has a correlation id (0 reads as none).
    pub fn build(trace: &Trace) -> CallIndex {
        let rt = &trace.runtime;
        if rt.correlation.len() != rt.len() {
            return CallIndex::default();
        }
        let n = trace.processes.len();
        let mut span = vec![(u32::MAX, 0u32, 0u64); n];
        let process_of = |row: usize| -> Option<usize> {
            let t = *rt.thread.get(row)? as usize;
            trace.threads.process.get(t).map(|&p| p as usize)
        };
        for (row, &corr) in rt.correlation.iter().enumerate() {
            if let (Some(p), true) = (process_of(row), corr != 0)
                && let Some(s) = span.get_mut(p)
            {
                *s = (s.0.min(corr), s.1.max(corr), s.2 + 1);
            }
        }
        let mut per_process: Vec<ProcessCalls> = span
            .iter()
            .map(|&(lo, hi, count)| match count {
                0 => ProcessCalls::Empty,
                _ if u64::from(hi - lo) < 4 * count + 1024 => ProcessCalls::Dense {
                    base: lo,
                    rows: vec![NO_ROW; (hi - lo) as usize + 1],
                },
                _ => ProcessCalls::Sparse(Vec::with_capacity(count as usize)),
            })
            .collect();
        for (row, &corr) in rt.correlation.iter().enumerate() {
            let Some(p) = process_of(row).filter(|_| corr != 0) else {
                continue;
            };
            match per_process.get_mut(p) {
                Some(ProcessCalls::Dense { base, rows }) => {
                    if let Some(slot) = rows.get_mut((corr - *base) as usize)
                        && *slot == NO_ROW
                    {
                        *slot = row as u32;
                    }
                }
                Some(ProcessCalls::Sparse(v)) => v.push((corr, row as u32)),
                _ => {}
            }
        }
        for calls in &mut per_process {
            if let ProcessCalls::Sparse(v) = calls {
                v.sort_unstable();
                v.dedup_by_key(|e| e.0);
            }
        }
        CallIndex { per_process }
    }

    /// The runtime row with `corr` in `process`.
    pub fn find(&self, process: ProcessIdx, corr: u32) -> Option<usize> {
        if corr == 0 {
            return None;
        }
        match self.per_process.get(process as usize)? {
            ProcessCalls::Empty => None,
            ProcessCalls::Dense { base, rows } => {
                let row = *rows.get(corr.checked_sub(*base)? as usize)?;
                (row != NO_ROW).then_some(row as usize)
            }
            ProcessCalls::Sparse(v) => v
                .binary_search_by_key(&corr, |e| e.0)
                .ok()
                .map(|i| v[i].1 as usize),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.per_process
            .iter()
            .all(|p| matches!(p, ProcessCalls::Empty))
    }
}

/// One phase (context or generation): how many forward steps it has and its window.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    pub steps: u64,
    pub window: IntervalSet,
}

/// Forward steps and phases as `detect` sees them in the standard profile.
#[derive(Debug, Clone, Default)]
pub struct StepInfo {
    pub steps: Vec<Step>,
    pub context: Option<Phase>,
    pub generation: Option<Phase>,
    /// The step marker they were read under (`None`: no range was a step).
    pub marker: Option<crate::names::steps::StepMarkerReport>,
}

impl StepInfo {
    /// The forward steps of `raw` (read under `sw`, by start) with TP ranks' copies merged, and
    /// each phase's steps and window.
    pub(crate) fn of(
        mut raw: Vec<Step>,
        sw: &crate::profile::Switches,
        marker: Option<crate::names::steps::StepMarkerReport>,
    ) -> StepInfo {
        steps::dedup_tp_steps_in_place(&mut raw);
        raw.shrink_to_fit();
        let (context, generation) = steps::phases(&raw, sw);
        let phase = |p: Option<steps::PhaseCounts>| {
            p.map(|p| Phase {
                steps: p.steps,
                window: p.window.unwrap_or_default(),
            })
        };
        StepInfo {
            steps: raw,
            context: phase(context),
            generation: phase(generation),
            marker,
        }
    }
}

/// A trace with everything the drill-down looks up repeatedly.
pub struct TraceIndex<'t> {
    pub trace: &'t Trace,
    /// The file name shown in results.
    pub label: String,
    pub devices: Vec<DeviceKernels>,
    pub calls: CallIndex,
    pub names: Names,
    pub steps: StepInfo,
}

impl<'t> TraceIndex<'t> {
    pub fn new(trace: &'t Trace, label: &str) -> TraceIndex<'t> {
        TraceIndex::with_marker(trace, label, None)
    }

    /// The index with steps read under the user's marker (`None`: the first built-in one met).
    pub fn with_marker(
        trace: &'t Trace,
        label: &str,
        marker: Option<&crate::names::steps::StepSource>,
    ) -> TraceIndex<'t> {
        TraceIndex {
            trace,
            label: label.to_string(),
            devices: kernels_by_device(trace),
            calls: CallIndex::build(trace),
            names: Names::build(trace),
            steps: step_info(trace, marker),
        }
    }

    /// The runtime call that launched kernel `k`.
    pub fn launch_call(&self, k: usize) -> Option<usize> {
        let kern = &self.trace.kernels;
        let corr = *kern.correlation.get(k)?;
        self.calls.find(*kern.process.get(k)?, corr)
    }

    /// The runtime call that issued memory operation `i` of `ops` (a copy or memset table).
    pub fn issuing_call(&self, ops: &MemOps, i: usize) -> Option<usize> {
        self.calls
            .find(*ops.process.get(i)?, *ops.correlation.get(i)?)
    }

    /// When kernel `k` was launched on the host: its call's start, else its own start.
    pub fn launch_time(&self, k: usize) -> Ns {
        match self.launch_call(k) {
            Some(row) => self.trace.runtime.start[row],
            None => self.trace.kernels.start[k],
        }
    }

    /// The API kind of runtime row `row`.
    pub fn call_kind(&self, row: usize) -> ApiKind {
        self.trace
            .runtime
            .name
            .get(row)
            .map_or(ApiKind::Other, |&n| self.names.api(n))
    }

    /// Whether every runtime call launches kernels: the capture or the loader (the page's
    /// lean load) kept no other call, so syncs and copies during gaps are invisible.
    pub fn launch_calls_only(&self) -> bool {
        let rt = &self.trace.runtime;
        !rt.is_empty() && (0..rt.len()).all(|r| self.call_kind(r).launches_kernels())
    }

    /// What the loaded runtime calls cannot show, once for the explainer and the drill-down
    /// (the report lists their notes together): the correlation ids were not loaded, or every
    /// call launches kernels. A missing runtime table is the loader's note.
    pub fn call_coverage(&self) -> Option<CoverageNote> {
        call_facts::coverage_note(
            self.trace.present.runtime,
            !self.calls.is_empty(),
            self.launch_calls_only(),
        )
    }

    /// The process of runtime row `row`.
    pub fn call_process(&self, row: usize) -> Option<ProcessIdx> {
        let t = *self.trace.runtime.thread.get(row)? as usize;
        self.trace.threads.process.get(t).copied()
    }

    /// A kernel's short name (its demangled name when the short one is missing).
    pub fn kernel_name(&self, k: usize) -> &str {
        let kern = &self.trace.kernels;
        let short = kern
            .short_name
            .get(k)
            .copied()
            .unwrap_or(crate::model::NO_NAME);
        match self.trace.strings.get(short) {
            "" => kern
                .demangled_name
                .get(k)
                .map_or("", |&d| self.trace.strings.get(d)),
            s => s,
        }
    }

    /// `[first kernel start, last kernel end]`.
    pub fn kernel_extent(&self) -> (Ns, Ns) {
        let k = &self.trace.kernels;
        let start = k.start.iter().copied().min().unwrap_or(0);
        let end = k.end.iter().copied().max().unwrap_or(0);
        (start, end)
    }
}

/// Kernel rows per device sorted by (start, end): one sort shared by every analysis.
fn kernels_by_device(trace: &Trace) -> Vec<DeviceKernels> {
    let k = &trace.kernels;
    let devices = k.devices();
    let key = |i: usize| (k.start[i], k.end[i]);
    if let [device] = devices[..]
        && k.device.len() == k.len()
        && (1..k.len()).all(|i| key(i - 1) <= key(i))
    {
        return vec![DeviceKernels {
            device,
            kernels: KernelOrder::All(k.len() as u32),
        }];
    }
    // Counted first, so each list is allocated once at its size.
    let mut counts = vec![0usize; devices.len()];
    for d in &k.device {
        if let Ok(slot) = devices.binary_search(d) {
            counts[slot] += 1;
        }
    }
    let mut lists: Vec<Vec<u32>> = counts.into_iter().map(Vec::with_capacity).collect();
    for (i, d) in k.device.iter().enumerate() {
        if let Ok(slot) = devices.binary_search(d) {
            lists[slot].push(i as u32);
        }
    }
    devices
        .into_iter()
        .zip(lists)
        .map(|(device, mut kernels)| {
            let key = |&i: &u32| key(i as usize);
            if !kernels.is_sorted_by_key(key) {
                kernels.sort_by_key(key);
            }
            DeviceKernels {
                device,
                kernels: KernelOrder::Rows(kernels),
            }
        })
        .collect()
}

fn step_info(trace: &Trace, marker: Option<&crate::names::steps::StepSource>) -> StepInfo {
    let sw = Profile::Standard.switches();
    let reader = steps::StepReader::new(
        &trace.nvtx,
        StepNames::parser(&trace.strings, &sw, marker),
        &sw,
    );
    StepInfo::of(reader.raw(), &sw, reader.lookup().parser.used())
}

/// Steady-state steps (reference §7: ctx = 0 and gen = the maximum gen count), else every
/// generation step, else every step.
pub fn steady_steps(steps: &[Step]) -> (Vec<Step>, &'static str) {
    let (rule, what) = SteadyRule::of(steps);
    (
        steps.iter().copied().filter(|s| rule.keeps(s)).collect(),
        what,
    )
}

/// [`steady_steps`] as their `(start, end)` only, without a copy of each step.
pub fn steady_spans(steps: &[Step]) -> (Vec<(Ns, Ns)>, &'static str) {
    let (rule, what) = SteadyRule::of(steps);
    let spans = steps.iter().filter(|s| rule.keeps(s));
    (spans.map(|s| (s.start, s.end)).collect(), what)
}

/// Which steps [`steady_steps`] keeps.
#[derive(Clone, Copy)]
enum SteadyRule {
    /// ctx = 0 and gen = this maximum gen count.
    Steady(u64),
    Generation,
    All,
}

impl SteadyRule {
    /// The first rule that keeps a step, and what it keeps.
    fn of(steps: &[Step]) -> (SteadyRule, &'static str) {
        let max_gen = steps.iter().map(|s| s.name.gen_reqs).max().unwrap_or(0);
        let rules = [
            (
                SteadyRule::Steady(max_gen),
                "steady-state steps (0 ctx reqs, max gen reqs)",
            ),
            (SteadyRule::Generation, "generation steps"),
        ];
        rules
            .into_iter()
            .find(|(rule, _)| steps.iter().any(|s| rule.keeps(s)))
            .unwrap_or((SteadyRule::All, "all forward steps"))
    }

    fn keeps(self, s: &Step) -> bool {
        match self {
            SteadyRule::Steady(max_gen) => {
                s.name.ctx == 0 && s.name.gen_reqs == max_gen && max_gen > 0
            }
            SteadyRule::Generation => s.name.ctx == 0,
            SteadyRule::All => true,
        }
    }
}

/// Looks up times in sorted disjoint spans, moving forward: O(1) amortized per lookup when the
/// times mostly increase (kernels in device order); a time behind the cursor falls back to a
/// binary search.
#[derive(Debug, Clone, Copy)]
pub struct SpanCursor<'a> {
    spans: &'a [(Ns, Ns)],
    next: usize,
}

impl<'a> SpanCursor<'a> {
    pub fn new(spans: &'a [(Ns, Ns)]) -> SpanCursor<'a> {
        SpanCursor { spans, next: 0 }
    }

    /// The span containing `t` (`start <= t < end`).
    pub fn find(&mut self, t: Ns) -> Option<usize> {
        if self.next > 0 && self.spans.get(self.next - 1).is_some_and(|s| t < s.1) {
            return span_containing(self.spans, t);
        }
        while self.spans.get(self.next).is_some_and(|s| s.1 <= t) {
            self.next += 1;
        }
        let s = self.spans.get(self.next)?;
        (s.0 <= t).then_some(self.next)
    }

    /// Whether `[start, end)` lies inside one span; `end` should mostly increase.
    pub fn covers(&mut self, start: Ns, end: Ns) -> bool {
        if self.next > 0 && self.spans.get(self.next - 1).is_some_and(|s| end <= s.1) {
            return span_containing(self.spans, start).is_some_and(|i| end <= self.spans[i].1);
        }
        while self.spans.get(self.next).is_some_and(|s| s.1 < end) {
            self.next += 1;
        }
        self.spans
            .get(self.next)
            .is_some_and(|s| s.0 <= start && end <= s.1)
    }
}

/// Index of the span of sorted disjoint `spans` containing `t`.
pub fn span_containing(spans: &[(Ns, Ns)], t: Ns) -> Option<usize> {
    let i = spans.partition_point(|s| s.0 <= t).checked_sub(1)?;
    (t < spans[i].1).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_agrees_with_binary_search() {
        let spans = [(10, 20), (30, 40), (40, 45), (60, 70)];
        let mut c = SpanCursor::new(&spans);
        for t in [0, 10, 19, 20, 35, 40, 44, 45, 12, 61, 70, 100, 65] {
            assert_eq!(c.find(t), span_containing(&spans, t), "t = {t}");
        }
        let mut c = SpanCursor::new(&spans);
        for (s, e) in [
            (11, 20),
            (12, 21),
            (30, 41),
            (41, 45),
            (15, 18),
            (60, 70),
            (59, 70),
        ] {
            let want = span_containing(&spans, s).is_some_and(|i| e <= spans[i].1);
            assert_eq!(c.covers(s, e), want, "[{s}, {e})");
        }
    }
}
