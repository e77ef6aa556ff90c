//! One window's running state in the kernel sweep ([`ScopeAcc`]): which kernels it selects (the
//! profile's membership rule, the hull's zero-length kernels deferred), each group's busy union,
//! counts and NCCL time, and its [`ScopeSummary`] at the end.

use crate::model::intervals::IntervalSet;
use crate::model::{KernelRow, Ns, ProcessIdx, Work};
use crate::profile::Switches;
use crate::steps::spans::{SpanQueue, WindowFacts, overlap_at, seek};

use super::exposure::{ExposureAcc, ExposureBounds};
use super::masks::{MaskAcc, PrepAcc, remap_masks};
use super::queues::{QueueRef, Queues};
use super::summary::{GroupSummary, PrepBusy, ScopeSummary};
use super::work::WorkTally;

/// A running union of intervals arriving in start order, measured as each merged interval closes.
#[derive(Debug, Clone, Default)]
pub(super) struct Union {
    pub(super) current: Option<(Ns, Ns)>,
    /// Monotone position in the clipping window.
    cursor: usize,
    ns: Ns,
    us: f64,
}

impl Union {
    /// Adds `[s, e)`; returns the gap it opens after the previous merged interval, if any.
    fn add(&mut self, s: Ns, e: Ns, clip: Option<&SpanQueue>) -> Option<(Ns, Ns)> {
        if e <= s {
            return None;
        }
        match &mut self.current {
            Some(cur) if s <= cur.1 => {
                // The union covers `[cur.0, s)` whatever comes next: clipped now, so the window
                // spans behind it can go (a device busy for the whole trace is one interval).
                if let Some(w) = clip
                    && s > cur.0
                {
                    self.ns = self
                        .ns
                        .saturating_add(overlap_at(w, &mut self.cursor, cur.0, s));
                    cur.0 = s;
                }
                cur.1 = cur.1.max(e);
                None
            }
            Some(cur) => {
                let done = *cur;
                *cur = (s, e);
                self.close(done, clip);
                Some((done.1, s))
            }
            None => {
                self.current = Some((s, e));
                None
            }
        }
    }

    fn close(&mut self, (s, e): (Ns, Ns), clip: Option<&SpanQueue>) {
        match clip {
            Some(w) => self.ns += overlap_at(w, &mut self.cursor, s, e),
            None => {
                self.ns = self.ns.saturating_add(e - s);
                self.us += (e - s) as f64 / 1000.0;
            }
        }
    }

    fn finish(&mut self, clip: Option<&SpanQueue>) {
        if let Some(done) = self.current.take() {
            self.close(done, clip);
        }
    }
}

/// Small `key → count` table (few distinct keys: processes per device, devices per trace).
#[derive(Debug, Clone, Default)]
pub(super) struct Counts {
    entries: Vec<(u32, u64)>,
}

impl Counts {
    pub(super) fn add(&mut self, key: u32, n: u64) {
        match self.entries.iter_mut().rev().find(|(k, _)| *k == key) {
            Some((_, c)) => *c += n,
            None => self.entries.push((key, n)),
        }
    }

    /// Keys with a non-zero count, ascending.
    pub(super) fn keys(&self) -> Vec<u32> {
        let mut keys: Vec<u32> = self
            .entries
            .iter()
            .filter(|&&(_, c)| c > 0)
            .map(|&(k, _)| k)
            .collect();
        keys.sort_unstable();
        keys
    }
}

/// One group's running figures in one scope.
#[derive(Debug, Clone, Default)]
pub(super) struct GroupAcc {
    kernels: u64,
    processes: Counts,
    pub(super) busy: Union,
    nccl_raw: Ns,
    nccl: Union,
}

/// One window's running state.
#[derive(Clone)]
pub(super) struct ScopeAcc {
    /// Position in the scope list, which is also its window's queue.
    pub(super) index: usize,
    /// The phase (0 context, 1 generation) whose window this is; `None`: the aggregate.
    pub(super) phase: Option<usize>,
    /// `false`: the kernel hull, known only at the end.
    pub(super) windowed: bool,
    select_cursor: usize,
    pub(super) groups: Vec<GroupAcc>,
    /// `trtllm-skill` M3, measured as the kernel gaps pass.
    pub(super) exposure: Option<ExposureAcc>,
    pub(super) busy_masks: MaskAcc,
    pub(super) prep_masks: Vec<PrepAcc>,
    /// A phase's GPU work by kind within its window (profiles counting every GPU operation).
    work: Option<WorkTally>,
}

/// Kernels of the hull scope whose membership waits for the hull's end: a zero-length (or
/// damaged, end-before-start) kernel at or after the last end seen so far lies in the half-open
/// hull `[first start, last end)` only if a later kernel ends after its start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deferred {
    pub(super) start: Ns,
    pub(super) slot: usize,
    pub(super) process: ProcessIdx,
    pub(super) kernels: u64,
    pub(super) nccl_ns: Ns,
}

/// What every scope needs to end: the kernel hull, the group order and the mask remapping.
pub(super) struct Ends<'a> {
    pub(super) hull: Option<(Ns, Ns)>,
    pub(super) order: &'a [(Option<u32>, usize)],
    pub(super) remap: &'a [u64],
}

/// The facts of the hull window `[first start, last end)`.
pub(super) fn hull_facts(hull: Option<(Ns, Ns)>) -> WindowFacts {
    hull.map_or_else(WindowFacts::default, |(s, e)| {
        WindowFacts::of(&IntervalSet::single(s, e))
    })
}

/// Adds a deferred kernel, merging it with an entry of the same start, group and process.
pub(super) fn defer(list: &mut Vec<Deferred>, d: Deferred) {
    let same = list
        .iter_mut()
        .rev()
        .take_while(|x| x.start == d.start)
        .find(|x| x.slot == d.slot && x.process == d.process);
    match same {
        Some(x) => {
            x.kernels = x.kernels.saturating_add(d.kernels);
            x.nccl_ns = x.nccl_ns.saturating_add(d.nccl_ns);
        }
        None => list.push(d),
    }
}

pub(super) fn empty_scope(window: WindowFacts) -> ScopeSummary {
    ScopeSummary {
        window,
        groups: Vec::new(),
        busy_by_mask: Vec::new(),
        prep_busy: Vec::new(),
        prep_exposure: None,
        work: None,
    }
}

impl ScopeAcc {
    pub(super) fn new(index: usize, phase: Option<usize>, q: &Queues, sw: &Switches) -> ScopeAcc {
        let windowed = q.window(index).is_some();
        let window = windowed.then_some(QueueRef::Window(index));
        ScopeAcc {
            index,
            phase,
            windowed,
            busy_masks: MaskAcc {
                spans: window,
                ..MaskAcc::default()
            },
            select_cursor: 0,
            // The pooled group exists even in a window without kernels.
            groups: if sw.per_device {
                Vec::new()
            } else {
                vec![GroupAcc::default()]
            },
            exposure: q
                .pooled
                .as_ref()
                .map(|pooled| ExposureAcc::new(pooled, q.pooled_sorted)),
            prep_masks: Vec::new(),
            work: (sw.gpu_work && phase.is_some() && windowed).then(|| WorkTally::new(None)),
        }
    }

    /// The window's queue, when it has one and the profile clips to it.
    fn clip<'q>(&self, q: &'q Queues, sw: &Switches) -> Option<&'q SpanQueue> {
        sw.clip_to_window.then(|| q.window(self.index)).flatten()
    }

    /// A kernel for a window known in advance: selected by the profile's membership rule.
    pub(super) fn push(
        &mut self,
        ev: &KernelRow,
        slot: usize,
        nccl: bool,
        sw: &Switches,
        q: &Queues,
    ) {
        if self.selects(ev, sw.clip_to_window, q) {
            self.add(ev, slot, nccl, sw, q);
        }
    }

    /// A kernel for the hull window `[first start, last end)`: every kernel with `end > start`
    /// is inside; the others may have to wait for the hull's end (returned to be deferred).
    pub(super) fn push_to_hull(
        &mut self,
        ev: &KernelRow,
        (slot, nccl): (usize, bool),
        (sw, q): (&Switches, &Queues),
        (first, last_end): (Ns, Ns),
    ) -> Option<Deferred> {
        self.ensure_group(slot);
        if ev.end > ev.start || ev.start < last_end {
            // Clipped profile: `end > window start` too (a zero-length kernel at the first start is out).
            if !(sw.clip_to_window && ev.end <= first) {
                self.add_clipped(ev, slot, nccl, sw, (None, q));
            }
            return None;
        }
        if sw.clip_to_window && ev.end <= first {
            return None;
        }
        Some(Deferred {
            start: ev.start,
            slot,
            process: ev.process,
            kernels: u64::from(ev.work == Work::Kernel),
            nccl_ns: if nccl { ev.end - ev.start } else { 0 },
        })
    }

    fn ensure_group(&mut self, slot: usize) {
        if self.groups.len() <= slot {
            self.groups.resize_with(slot + 1, GroupAcc::default);
        }
    }

    /// The old `in_window` (unclipped: start in a `[start, end)` span) and `overlaps` (clipped:
    /// `end > window start` and the kernel overlaps a span; zero-length kernels count inside)
    /// rules, with a cursor that only moves forward because starts do.
    fn selects(&mut self, ev: &KernelRow, clip: bool, q: &Queues) -> bool {
        let Some(w) = q.window(self.index) else {
            return true;
        };
        if q.span_phases && self.phase.is_some() && !clip {
            return Self::selects_in_span(ev, w);
        }
        let Some((ws, _)) = seek(w, &mut self.select_cursor, ev.start) else {
            return false;
        };
        if !clip {
            return ws <= ev.start;
        }
        let hs = w.facts().hull.map_or(ws, |h| h.0);
        ev.end > hs && (ws < ev.end || (ev.start == ev.end && ws <= ev.start))
    }

    /// The unclipped rule (start in `[first start, last end)`) for a phase span.
    fn selects_in_span(ev: &KernelRow, w: &SpanQueue) -> bool {
        let Some(first) = w.first_start() else {
            return false;
        };
        let end = w.facts().hull.map_or(first, |h| h.1);
        first <= ev.start && ev.start < end
    }

    /// Adds a selected kernel to its group.
    fn add(&mut self, ev: &KernelRow, slot: usize, nccl: bool, sw: &Switches, q: &Queues) {
        let clip = self.clip(q, sw);
        self.add_clipped(ev, slot, nccl, sw, (clip, q));
        if let (Some(work), Some(window)) = (&mut self.work, q.window(self.index)) {
            work.push_within(ev, nccl, window);
        }
    }

    /// Adds a kernel to its group, its busy time clipped to `clip` (the hull scope has nothing
    /// to clip to but the hull itself).
    fn add_clipped(
        &mut self,
        ev: &KernelRow,
        slot: usize,
        nccl: bool,
        sw: &Switches,
        (clip, q): (Option<&SpanQueue>, &Queues),
    ) {
        self.ensure_group(slot);
        let g = &mut self.groups[slot];
        let gap = g.busy.add(ev.start, ev.end, clip);
        if nccl && sw.clip_to_window {
            g.nccl.add(ev.start, ev.end, clip);
        }
        self.count(
            slot,
            ev.process,
            u64::from(ev.work == Work::Kernel),
            if nccl { ev.end - ev.start } else { 0 },
        );
        if let (Some(gap), Some(x), Some(pooled)) = (gap, &mut self.exposure, &q.pooled) {
            x.gap(pooled, gap);
        }
    }

    /// Counts kernels of one group and process (their busy time is handled by [`Union`]).
    pub(super) fn count(&mut self, slot: usize, process: ProcessIdx, kernels: u64, nccl_ns: Ns) {
        self.ensure_group(slot);
        let g = &mut self.groups[slot];
        g.kernels += kernels;
        // A process owns the scope's GPU work of any kind (a copy-only phase still has its launches).
        g.processes.add(process, 1);
        g.nccl_raw += nccl_ns;
    }

    /// The earliest time this scope's window is still read at: `low`, or the start of an open
    /// merged interval clipped to it.
    pub(super) fn open_since(&self, low: Ns, clip: bool) -> Ns {
        let open = self
            .groups
            .iter()
            .flat_map(|g| [g.busy.current, g.nccl.current]);
        let work = self.work.as_ref().and_then(WorkTally::reading_from);
        open.flatten()
            .filter(|_| clip)
            .map(|c| c.0)
            .chain(work)
            .fold(low, Ns::min)
    }

    /// `(start, end bound, whether the end is final)` of the window the `trtllm-skill` M3
    /// counts ranges inside: the window's hull, or the kernel hull so far.
    pub(super) fn exposure_bounds(
        &self,
        q: &Queues,
        (first, last_end): (Ns, Ns),
    ) -> ExposureBounds {
        match q.window(self.index) {
            Some(w) => {
                let (start, end) = w.facts().hull.unwrap_or((Ns::MAX, Ns::MIN));
                let first = if q.span_phases {
                    w.first_start()
                } else {
                    w.facts().hull.map(|h| h.0)
                };
                ExposureBounds {
                    start: first.unwrap_or(start),
                    end,
                    end_final: w.complete(),
                }
            }
            None => ExposureBounds {
                start: first,
                end: last_end,
                end_final: false,
            },
        }
    }

    pub(super) fn finish(mut self, q: &Queues, sw: &Switches, end: &Ends<'_>) -> ScopeSummary {
        let clip = self.clip(q, sw);
        let groups = end
            .order
            .iter()
            .map(|&(device, slot)| {
                let mut g = self.groups.get(slot).cloned().unwrap_or_default();
                g.busy.finish(clip);
                g.nccl.finish(clip);
                group_summary(device, g, sw.clip_to_window)
            })
            .collect();
        let window = match q.window(self.index) {
            Some(w) => w.facts(),
            None => hull_facts(end.hull),
        };
        let work = match (self.work.take(), q.window(self.index)) {
            (Some(tally), Some(spans)) => Some(tally.finish_within(spans)),
            (tally, None) => tally.map(WorkTally::finish),
            (None, Some(_)) => None,
        };
        let (first, last_end) = end.hull.unwrap_or((0, 0));
        let (from, to) = if self.windowed {
            (Ns::MIN, Ns::MAX)
        } else {
            (first, last_end)
        };
        let mut prep_busy: Vec<PrepBusy> = self
            .prep_masks
            .iter_mut()
            .map(|m| {
                m.measure_to(q, from, to);
                PrepBusy {
                    process: m.process,
                    pattern: m.pattern,
                    prep_ns: m.inside_ns,
                    by_mask: remap_masks(&m.busy.by_mask, end.remap),
                }
            })
            .collect();
        prep_busy.sort_by_key(|b| (b.process, b.pattern));
        let mut bounds = self.exposure_bounds(q, (first, last_end));
        bounds.end_final = true;
        let prep_exposure = self.exposure.take().and_then(|mut x| {
            x.settle(q, bounds, Some(Ns::MAX), Ns::MAX);
            x.finish()
        });
        ScopeSummary {
            window,
            groups,
            busy_by_mask: remap_masks(&self.busy_masks.by_mask, end.remap),
            prep_busy,
            prep_exposure,
            work,
        }
    }
}

fn group_summary(device: Option<u32>, g: GroupAcc, clip: bool) -> GroupSummary {
    let (busy_us, nccl_us) = if clip {
        (g.busy.ns as f64 / 1000.0, g.nccl.ns as f64 / 1000.0)
    } else {
        (g.busy.us, g.nccl_raw as f64 / 1000.0)
    };
    GroupSummary {
        device,
        kernels: g.kernels,
        processes: g.processes.keys(),
        busy_ns: g.busy.ns,
        busy_us,
        nccl_us,
    }
}
