//! One pass over the GPU work rows, in start order, for every kernel-derived figure `detect` reads.
//!
//! A [`KernelSweep`] built from the host facts (phase windows, host-prep ranges, NCCL names)
//! consumes [`KernelRow`]s in non-decreasing `start` and folds them into a [`KernelSummary`];
//! `detect` then assembles the report from the host facts and the summary.
//!
//! Memory: the sweep's state and the summary are bounded by scopes (≤ 3 windows) × groups
//! (devices, or one pooled group) × processes, plus
//! - standard M3: per scope, one counter per distinct set of simultaneously busy devices (at
//!   most 2^devices, in practice a few dozen) × (1 + processes with host-prep ranges × ≤ 3
//!   patterns); more than [`MAX_MASK_DEVICES`] devices stops this part (reported, not guessed);
//! - `trtllm-skill` M3: the pooled idle gaps that touch a host-prep range, kept because the
//!   reference sums them range by range in table order (bounded by the host-prep ranges and the
//!   gaps inside them: one per forward step on a TensorRT-LLM trace, none elsewhere);
//! - zero-length kernels at the current last end, merged per group and process, waiting for
//!   the hull's end (only damaged end-before-start kernels past the last end could pile up).
//!
//! - the first `iterations::inferred::MAX_SEARCHED` kernels of each device (name and times), for
//!   the repeating unit a trace without step marker shows.
//!
//! Nothing grows with the number of kernels elsewhere.
//!
//! Thresholds play no part here: they only act when the report is assembled.
//!
//! Rooms: [`KernelSweep`] here; what the sweep is given (`inputs`), what it
//! leaves (`summary`), the span queues it reads (`queues`), one window's running state
//! (`scope`), the standard M3's busy-device masks (`masks`) and the reference M3's exposure
//! (`exposure`).

mod exposure;
mod inputs;
mod masks;
mod queues;
mod scope;
mod summary;
#[cfg(test)]
mod tests;
pub mod work;

pub use inputs::SweepInputs;
pub use masks::MAX_MASK_DEVICES;
pub use summary::{GroupSummary, KernelFacts, KernelSummary, PrepBusy, PrepExposure, ScopeSummary};

use crate::detect::capture::IdleSweep;
use crate::detect::config::DetectConfig;
use crate::detect::host_facts::HostFacts;
use crate::iterations::inferred::KernelTape;
use crate::model::intervals::IntervalSet;
use crate::model::{KernelRow, NameFlags, Ns, OutOfOrder, StartOrder, Trace, Work, flag};
use crate::profile::Switches;
use crate::steps::spans::SpanQueue;
use masks::{MaskSweep, PrepAcc};
use queues::{QueueRef, Queues, queues_of};
use scope::{Counts, Deferred, Ends, ScopeAcc, defer, empty_scope, hull_facts};

/// Kernels between two trims of the queues: what they hold is what lies between the slowest
/// reader and the clock, read again this often.
const TRIM_EVERY: u64 = 1 << 10;

/// Folds kernels, in start order, into a [`KernelSummary`].
pub struct KernelSweep {
    sw: Switches,
    skip_m3: bool,
    user_window: bool,
    nccl: NameFlags,
    /// Group slot → device, in order of first appearance (standard); unused when pooled.
    slots: Vec<u32>,
    /// Aggregate first, then context and generation when the trace has them.
    scopes: Vec<ScopeAcc>,
    queues: Queues,
    /// Standard: which prep queues have accumulators in every scope.
    tracked_prep: Vec<[bool; 3]>,
    has_context: bool,
    has_generation: bool,
    masks: Option<MaskSweep>,
    deferred: Vec<Deferred>,
    order: StartOrder,
    kernels: u64,
    devices: Counts,
    processes: Counts,
    any_graph_node: bool,
    hull: Option<(Ns, Ns)>,
    /// Each device's idle time and largest gaps, for the capture checks.
    idle: IdleSweep,
    /// Each device's first kernels, for the repeating unit reported when no marker names steps.
    tape: KernelTape,
    /// Each device's busy time by kind (profiles that count every GPU operation).
    work: Option<work::WorkTally>,
    /// GPU operations of any kind (kernels are `kernels`).
    ops: u64,
}

impl KernelSweep {
    /// Derives every window known before the pass from the host part of `host` (its kernel
    /// table is not read) under `cfg`'s profile, window, step marker and `skip_m3`; thresholds
    /// are not read.
    pub fn new(host: &Trace, cfg: &DetectConfig) -> KernelSweep {
        KernelSweep::of(HostFacts::new(host, cfg).sweep_inputs(cfg))
    }

    /// The sweep of inputs already taken (`detect` builds its host facts once for sweep and
    /// assembly; the page's kernel pass receives them from the other worker).
    pub fn of(mut inputs: SweepInputs) -> KernelSweep {
        let sw = inputs.sw;
        let aggregate = inputs.window.map(|(s, e)| IntervalSet::single(s, e));
        let has_context = inputs.context.is_some();
        let has_generation = inputs.generation.is_some();
        let windows: Vec<(Option<usize>, Option<SpanQueue>)> =
            [aggregate, inputs.context.take(), inputs.generation.take()]
                .into_iter()
                .enumerate()
                .filter(|(i, w)| *i == 0 || w.is_some())
                .map(|(i, w)| {
                    (
                        i.checked_sub(1),
                        w.map(|w| SpanQueue::from_vec(w.into_spans())),
                    )
                })
                .collect();
        let phases: Vec<Option<usize>> = windows.iter().map(|w| w.0).collect();
        let windows = windows.into_iter().map(|w| w.1).collect();
        let queues = queues_of(windows, std::mem::take(&mut inputs.prep), &sw);
        let needs_masks = queues.prep.iter().flatten().any(|q| q.end_index() > 0);
        let mut sweep = KernelSweep::with(inputs, queues, &phases, needs_masks);
        sweep.has_context = has_context;
        sweep.has_generation = has_generation;
        sweep.track_prep();
        sweep
    }

    /// A sweep over `queues`, one scope per entry of `phases` (`None`: the aggregate).
    fn with(
        inputs: SweepInputs,
        queues: Queues,
        phases: &[Option<usize>],
        needs_masks: bool,
    ) -> KernelSweep {
        let sw = inputs.sw;
        let work = sw.gpu_work.then(|| work::WorkTally::new(inputs.window));
        let scopes: Vec<ScopeAcc> = phases
            .iter()
            .enumerate()
            .map(|(i, &phase)| ScopeAcc::new(i, phase, &queues, &sw))
            .collect();
        KernelSweep {
            sw,
            skip_m3: inputs.skip_m3,
            user_window: inputs.window.is_some(),
            nccl: inputs.nccl,
            slots: Vec::new(),
            scopes,
            tracked_prep: vec![[false; 3]; queues.prep.len()],
            queues,
            has_context: false,
            has_generation: false,
            masks: needs_masks.then(MaskSweep::new),
            deferred: Vec::new(),
            order: StartOrder::default(),
            kernels: 0,
            devices: Counts::default(),
            processes: Counts::default(),
            any_graph_node: false,
            hull: None,
            idle: IdleSweep::default(),
            tape: KernelTape::default(),
            work,
            ops: 0,
        }
    }

    /// Adds one kernel. Kernels must come in non-decreasing `start`: one that starts before its
    /// predecessor is refused with [`OutOfOrder`], and the sweep is then unusable.
    pub fn push(&mut self, ev: KernelRow) -> Result<(), OutOfOrder> {
        self.order.check(&ev)?;
        let (first, last_end) = match self.hull {
            Some((first, last_end)) => (first, last_end.max(ev.end)),
            None => (ev.start, ev.end),
        };
        self.hull = Some((first, last_end));
        self.note_facts(&ev);
        self.idle.push(&ev);
        if ev.work.is_compute() {
            self.tape.push(ev.device, ev.short_name, ev.start, ev.end);
        }
        let slot = self.slot(ev.device);
        let nccl = ev.work == Work::Kernel && flag(&self.nccl, ev.short_name);
        if let Some(w) = &mut self.work {
            w.push(&ev, nccl);
        }
        self.resolve_deferred(last_end);
        let q = &self.queues;
        for scope in self.scopes.iter_mut() {
            if scope.windowed {
                scope.push(&ev, slot, nccl, &self.sw, q);
            } else {
                let pending =
                    scope.push_to_hull(&ev, (slot, nccl), (&self.sw, q), (first, last_end));
                if let Some(d) = pending {
                    defer(&mut self.deferred, d);
                }
            }
        }
        if let Some(m) = &mut self.masks {
            m.push(&ev, &mut self.scopes, q);
        }
        if self.kernels.is_multiple_of(TRIM_EVERY) {
            self.trim(ev.start);
        }
        Ok(())
    }

    /// Ends the pass: closes every running union and resolves the kernel hull.
    pub fn finish(mut self) -> KernelSummary {
        if let Some(m) = &mut self.masks {
            m.finish(&mut self.scopes, &self.queues);
        }
        // Deferred kernels left start at or after the hull's end: outside it.
        let devices = self.devices.keys();
        // Masks are remapped to positions in `devices`, which also lists devices that ran only
        // zero-length kernels (no bit of their own): past 64 positions there is no mask either.
        let any_prep = self.tracked_prep.iter().flatten().any(|&t| t);
        let overflow = any_prep
            && self
                .masks
                .as_ref()
                .is_some_and(|m| m.overflow || devices.len() > MAX_MASK_DEVICES);
        let remap = self
            .masks
            .as_ref()
            .filter(|m| !m.overflow)
            .map(|m| m.remapped(&devices))
            .unwrap_or_default();
        let order = self.group_order();
        let end = Ends {
            hull: self.hull,
            order: &order,
            remap: &remap,
        };
        let q = &self.queues;
        let exists = [self.has_context, self.has_generation];
        let mut scopes: Vec<(Option<usize>, ScopeSummary)> = self
            .scopes
            .into_iter()
            .filter(|s| s.phase.is_none_or(|p| exists[p]))
            .map(|s| (s.phase, s.finish(q, &self.sw, &end)))
            .collect();
        let mut take = |phase: Option<usize>| {
            let i = scopes.iter().position(|s| s.0 == phase)?;
            Some(scopes.swap_remove(i).1)
        };
        let aggregate = take(None).unwrap_or_else(|| empty_scope(hull_facts(self.hull)));
        let context = take(Some(0));
        let generation = take(Some(1));
        KernelSummary {
            switches: self.sw,
            skip_m3: self.skip_m3,
            user_window: self.user_window,
            facts: KernelFacts {
                kernels: self.kernels,
                gpu_ops: self.ops,
                devices,
                processes: self.processes.keys(),
                any_graph_node: self.any_graph_node,
                hull: self.hull,
            },
            aggregate,
            context,
            generation,
            device_masks_overflow: overflow,
            idle: Some(self.idle.finish()),
            inferred: self.tape.find_unit(),
            work: self.work.map(work::WorkTally::finish),
        }
    }

    /// How many window and host-prep spans the sweep holds now (what a fed sweep keeps of
    /// them; tests and benchmarks read it).
    pub fn held_spans(&self) -> usize {
        let q = &self.queues;
        let windows = q.windows.iter().flatten().map(SpanQueue::held_count);
        let prep = q.prep.iter().flatten().map(SpanQueue::held_count);
        let pooled = q.pooled.iter().flatten().map(SpanQueue::held_count);
        windows.chain(prep).chain(pooled).sum()
    }

    fn note_facts(&mut self, ev: &KernelRow) {
        self.ops += 1;
        self.kernels += u64::from(ev.work == Work::Kernel);
        self.devices.add(ev.device, 1);
        self.processes.add(ev.process, 1);
        self.any_graph_node |= ev.graph_node != 0;
    }

    /// The group a kernel belongs to: its device's slot, or the one pooled group.
    fn slot(&mut self, device: u32) -> usize {
        if !self.sw.per_device {
            return 0;
        }
        if let Some(i) = self.slots.iter().position(|&d| d == device) {
            return i;
        }
        self.slots.push(device);
        self.slots.len() - 1
    }

    /// `(device, slot)` of every group in output order: ascending device, or the pooled group.
    fn group_order(&self) -> Vec<(Option<u32>, usize)> {
        if !self.sw.per_device {
            return vec![(None, 0)];
        }
        let mut order: Vec<(Option<u32>, usize)> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, &d)| (Some(d), i))
            .collect();
        order.sort_unstable();
        order
    }

    /// Deferred hull kernels that start before the last end so far are inside the hull.
    fn resolve_deferred(&mut self, last_end: Ns) {
        let ready = self.deferred.partition_point(|d| d.start < last_end);
        if ready == 0 {
            return;
        }
        if let Some(scope) = self.scopes.first_mut() {
            for d in self.deferred.drain(..ready) {
                scope.count(d.slot, d.process, d.kernels, d.nccl_ns);
            }
        }
    }

    /// Gives every scope accumulators for the host-prep queues that have ranges (standard).
    fn track_prep(&mut self) {
        for p in 0..self.queues.prep.len() {
            (0..3).for_each(|k| self.track(p, k));
        }
    }

    /// Gives every scope accumulators for process `p`'s host-prep queue of pattern `k`, once it
    /// has a range.
    fn track(&mut self, p: usize, k: usize) {
        let has_ranges = self.queues.prep[p][k].end_index() > 0;
        let tracked = &mut self.tracked_prep[p][k];
        if *tracked || !has_ranges {
            return;
        }
        *tracked = true;
        for scope in &mut self.scopes {
            let window = scope.windowed.then_some(QueueRef::Window(scope.index));
            scope.prep_masks.push(PrepAcc::new(p, k, window));
        }
    }

    /// Measures what waits on the spans behind `now` (no kernel starts before it any more),
    /// then drops every span all readers have passed.
    fn trim(&mut self, now: Ns) {
        // The stretches the mask sweep holds read the spans from before its clock.
        if let Some(m) = &mut self.masks {
            m.credit(&mut self.scopes, &self.queues);
        }
        let hull_start = self.hull.map_or(now, |h| h.0);
        let last_end = self.hull.map_or(now, |h| h.1);
        let q = &self.queues;
        for scope in &mut self.scopes {
            let from = if scope.windowed { Ns::MIN } else { hull_start };
            scope
                .prep_masks
                .iter_mut()
                .for_each(|m| m.measure_to(q, from, now));
            let bounds = scope.exposure_bounds(q, (hull_start, last_end));
            if let Some(x) = &mut scope.exposure {
                // Gaps to come start where the open merged interval ends, or later than now.
                let open = scope.groups.first().and_then(|g| g.busy.current);
                x.settle(q, bounds, Some(open.map_or(now, |c| c.1)), now);
            }
        }
        // Every reader asks from here on: the kernels' starts, the mask sweep's clock, and the
        // open merged intervals clipped to a window (they start earlier).
        let clock = self.masks.as_ref().map(|m| m.clock);
        let low = clock.map_or(now, |c| c.min(now));
        let clip = self.sw.clip_to_window;
        for (i, w) in self.queues.windows.iter_mut().enumerate() {
            // A phase span is one span, and still growing while it is fed.
            let span = self.queues.span_phases && i > 0;
            if let (Some(w), Some(scope), false) = (w, self.scopes.get(i), span) {
                w.trim_before(scope.open_since(low, clip));
            }
        }
        for queue in self.queues.prep.iter_mut().flatten() {
            queue.trim_before(low);
        }
        if let Some(pooled) = &mut self.queues.pooled {
            for (k, queue) in pooled.iter_mut().enumerate() {
                let readers = self.scopes.iter().filter_map(|s| s.exposure.as_ref());
                if let Some(low) = readers.map(|x| x.cursor(k)).min() {
                    queue.trim_to(low);
                }
            }
        }
    }
}
