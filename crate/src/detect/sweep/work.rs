//! What the GPU did, by kind: each device's busy time split exclusively into compute, the
//! communication compute did not hide and the transfers neither hid, and its copies by direction.
//!
//! Why exclusive: a copy overlapping a kernel costs nothing the kernel did not already take, so
//! a run is transfer-bound only by the copy time left once compute and communication are taken
//! out (`docs/gpu-work.md`). The shares sum to the busy time; the run's `bound` reads them.
//!
//! Memory: per device, each class's merged intervals not yet settled (those ending after the
//! latest start), three small lists; rows come in start order, so time before the latest start
//! is final and is tallied then.

use serde::{Deserialize, Serialize};

use crate::model::{Direction, KernelRow, Ns, Work};
use crate::steps::spans::{SpanQueue, overlap_at};

/// The class a row's time counts under, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Kernels (not NCCL) and graph replays.
    Compute = 0,
    /// NCCL kernels.
    Communication = 1,
    /// Copies and memsets.
    Transfer = 2,
}

impl Class {
    pub fn of(work: Work, nccl: bool) -> Class {
        match work {
            Work::Kernel if nccl => Class::Communication,
            Work::Kernel | Work::Replay => Class::Compute,
            Work::Copy { .. } | Work::Memset => Class::Transfer,
        }
    }
}

/// One direction's copies on a device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CopyTally {
    pub direction: String,
    pub count: u64,
    pub bytes: u64,
    /// Summed durations (inside the window).
    pub ns: Ns,
    /// Copies with a side in pageable host memory (staged by the driver, and synchronous).
    pub pageable: u64,
    pub pageable_bytes: u64,
    /// Streams the copies ran on, ascending (at most [`MAX_STREAMS`]).
    pub streams: Vec<u32>,
}

impl CopyTally {
    /// Achieved bandwidth, GB/s (bytes over summed duration).
    pub fn gb_per_s(&self) -> Option<f64> {
        (self.ns > 0).then(|| self.bytes as f64 / self.ns as f64)
    }
}

/// Streams listed per copy direction.
pub const MAX_STREAMS: usize = 16;

/// One device's GPU work inside the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceWork {
    pub device: u32,
    /// Union of every row.
    pub busy_ns: Ns,
    /// Union of kernels (not NCCL) and graph replays.
    pub compute_ns: Ns,
    /// NCCL kernels' time outside compute.
    pub communication_ns: Ns,
    /// Copies' and memsets' time outside compute and communication.
    pub transfer_ns: Ns,
    /// Union of copies and memsets, hidden or not.
    pub transfer_union_ns: Ns,
    pub kernels: u64,
    pub replays: u64,
    /// Union of graph replays.
    pub replay_ns: Ns,
    pub memsets: u64,
    pub memset_bytes: u64,
    /// Per direction, in [`Direction::ALL`] order, only those seen.
    pub copies: Vec<CopyTally>,
}

/// Every device's [`DeviceWork`], ascending by device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkSummary {
    pub devices: Vec<DeviceWork>,
}

impl WorkSummary {
    pub fn busy_ns(&self) -> Ns {
        self.devices.iter().map(|d| d.busy_ns).sum()
    }
}

/// Folds GPU-work rows in start order into a [`WorkSummary`], clipped to `window` when given,
/// or measured within a list of spans ([`WorkTally::push_within`]: a phase's steps).
#[derive(Debug, Default, Clone)]
pub struct WorkTally {
    window: Option<(Ns, Ns)>,
    devices: Vec<DeviceAcc>,
}

#[derive(Debug, Default, Clone)]
struct DeviceAcc {
    out: DeviceWork,
    /// Position in the spans the time is measured within ([`WorkTally::push_within`]).
    clip_cursor: usize,
    /// Per class, merged intervals ending after `settled`, in order.
    open: [Vec<(Ns, Ns)>; 3],
    replays_open: Option<(Ns, Ns)>,
    settled: Ns,
    started: bool,
}

impl WorkTally {
    pub fn new(window: Option<(Ns, Ns)>) -> WorkTally {
        WorkTally {
            window,
            devices: Vec::new(),
        }
    }

    /// One row, after every row starting earlier.
    pub fn push(&mut self, ev: &KernelRow, nccl: bool) {
        self.push_clipped(ev, nccl, None);
    }

    /// One row, after every row starting earlier, its time measured only within `spans`
    /// (ascending, disjoint; those before the row's start still held). Its copy counts and
    /// durations are the whole row's.
    pub fn push_within(&mut self, ev: &KernelRow, nccl: bool, spans: &SpanQueue) {
        self.push_clipped(ev, nccl, Some(spans));
    }

    /// The earliest time a later row or [`WorkTally::finish_within`] measures: the start of the
    /// intervals not yet tallied (`None` when none is open).
    pub fn reading_from(&self) -> Option<Ns> {
        self.devices
            .iter()
            .filter_map(|d| {
                let open = d.open.iter().flatten().map(|iv| iv.0).min()?;
                Some(if d.started { open.max(d.settled) } else { open })
            })
            .min()
    }

    fn push_clipped(&mut self, ev: &KernelRow, nccl: bool, clip: Option<&SpanQueue>) {
        let (mut start, mut end) = (ev.start, ev.end.max(ev.start));
        if let Some((ws, we)) = self.window {
            start = start.max(ws);
            end = end.min(we);
            if end <= start && !(ev.start == ev.end && ws <= ev.start && ev.start < we) {
                return;
            }
        }
        let dev = self.device(ev.device);
        dev.count(ev, end - start);
        let class = Class::of(ev.work, nccl) as usize;
        if !dev.add_alone(class, (start, end), clip) {
            dev.settle(start, clip);
            merge_into(&mut dev.open[class], start, end);
        }
        if ev.work == Work::Replay {
            dev.replay(start, end);
        }
    }

    pub fn finish(self) -> WorkSummary {
        self.finish_clipped(None)
    }

    /// The summary of rows pushed by [`WorkTally::push_within`] the same `spans`.
    pub fn finish_within(self, spans: &SpanQueue) -> WorkSummary {
        self.finish_clipped(Some(spans))
    }

    fn finish_clipped(mut self, clip: Option<&SpanQueue>) -> WorkSummary {
        self.devices.sort_by_key(|d| d.out.device);
        let devices = self
            .devices
            .into_iter()
            .map(|mut d| {
                d.settle(Ns::MAX, clip);
                if let Some((s, e)) = d.replays_open.take() {
                    d.out.replay_ns = d.out.replay_ns.saturating_add(e - s);
                }
                d.out
            })
            .collect();
        WorkSummary { devices }
    }

    fn device(&mut self, device: u32) -> &mut DeviceAcc {
        let i = match self.devices.iter().position(|d| d.out.device == device) {
            Some(i) => i,
            None => {
                self.devices.push(DeviceAcc {
                    out: DeviceWork {
                        device,
                        ..DeviceWork::default()
                    },
                    ..DeviceAcc::default()
                });
                self.devices.len() - 1
            }
        };
        &mut self.devices[i]
    }
}

/// Adds `[start, end)` to a merged list whose starts do not decrease.
fn merge_into(list: &mut Vec<(Ns, Ns)>, start: Ns, end: Ns) {
    match list.last_mut() {
        Some(last) if start <= last.1 => last.1 = last.1.max(end),
        _ => list.push((start, end)),
    }
}

impl DeviceAcc {
    fn count(&mut self, ev: &KernelRow, ns: Ns) {
        let out = &mut self.out;
        match ev.work {
            Work::Kernel => out.kernels += 1,
            Work::Replay => out.replays += 1,
            Work::Memset => {
                out.memsets += 1;
                out.memset_bytes = out.memset_bytes.saturating_add(ev.bytes);
            }
            Work::Copy { kind, pageable } => {
                let direction = Direction::of(kind);
                let label = direction.label();
                let i = match out.copies.iter().position(|c| c.direction == label) {
                    Some(i) => i,
                    None => {
                        out.copies.push(CopyTally {
                            direction: label.to_string(),
                            ..CopyTally::default()
                        });
                        let order = |c: &CopyTally| {
                            Direction::ALL.iter().position(|d| d.label() == c.direction)
                        };
                        out.copies.sort_by_key(order);
                        out.copies
                            .iter()
                            .position(|c| c.direction == label)
                            .unwrap_or(0)
                    }
                };
                let c = &mut out.copies[i];
                c.count += 1;
                c.bytes = c.bytes.saturating_add(ev.bytes);
                c.ns = c.ns.saturating_add(ns);
                if pageable {
                    c.pageable += 1;
                    c.pageable_bytes = c.pageable_bytes.saturating_add(ev.bytes);
                }
                if let Err(at) = c.streams.binary_search(&ev.stream)
                    && c.streams.len() < MAX_STREAMS
                {
                    c.streams.insert(at, ev.stream);
                }
            }
        }
    }

    fn replay(&mut self, start: Ns, end: Ns) {
        match &mut self.replays_open {
            Some(open) if start <= open.1 => open.1 = open.1.max(end),
            open => {
                if let Some((s, e)) = open.replace((start, end)) {
                    self.out.replay_ns = self.out.replay_ns.saturating_add(e - s);
                }
            }
        }
    }

    /// Tallies the time before `t` (within `clip` when given): no row starting later can
    /// cover it.
    fn settle(&mut self, t: Ns, clip: Option<&SpanQueue>) {
        if !self.started {
            self.started = true;
            self.settled = self.open.iter().flatten().map(|iv| iv.0).min().unwrap_or(t);
        }
        let lo = self.settled;
        if t <= lo {
            return;
        }
        let mut busy = self.open.iter().enumerate().filter(|(_, l)| !l.is_empty());
        if let (Some((class, _)), None) = (busy.next(), busy.next()) {
            self.settle_one(class, (lo, t), clip);
            return;
        }
        // Each class holds at most the interval open at the last settle and one begun since,
        // so the cut points fit on the stack; more (never seen) go to the heap.
        let mut stack = [0 as Ns; 16];
        let mut heap: Vec<Ns> = Vec::new();
        let mut n = 0;
        let cuts = self
            .open
            .iter()
            .flatten()
            .flat_map(|iv| [iv.0, iv.1])
            .filter(|&p| lo < p && p < t)
            .chain([lo, t]);
        for p in cuts {
            match stack.get_mut(n) {
                Some(slot) => *slot = p,
                None => heap.push(p),
            }
            n += 1;
        }
        let points: &mut [Ns] = if heap.is_empty() {
            &mut stack[..n]
        } else {
            heap.extend_from_slice(&stack);
            &mut heap
        };
        points.sort_unstable();
        let mut kept = 0;
        for i in 0..points.len() {
            if i == 0 || points[i] != points[kept - 1] {
                points[kept] = points[i];
                kept += 1;
            }
        }
        for w in points[..kept].windows(2) {
            let (a, b) = (w[0], w[1]);
            let covers = |c: usize| self.open[c].iter().any(|iv| iv.0 <= a && b <= iv.1);
            let [compute, comm, transfer] = [0, 1, 2].map(covers);
            if !(compute || comm || transfer) {
                continue;
            }
            let len = clipped(clip, &mut self.clip_cursor, a, b);
            let out = &mut self.out;
            out.busy_ns = out.busy_ns.saturating_add(len);
            if transfer {
                out.transfer_union_ns = out.transfer_union_ns.saturating_add(len);
            }
            if compute {
                out.compute_ns = out.compute_ns.saturating_add(len);
            } else if comm {
                out.communication_ns = out.communication_ns.saturating_add(len);
            } else if transfer {
                out.transfer_ns = out.transfer_ns.saturating_add(len);
            }
        }
        self.settled_to(t);
    }

    /// [`DeviceAcc::settle`] while only `class` has work open (the common case: kernels one
    /// after another). Its intervals are merged, so each one clipped to `[lo, t)` is one of
    /// the pieces the general case would cut.
    fn settle_one(&mut self, class: usize, (lo, t): (Ns, Ns), clip: Option<&SpanQueue>) {
        let mut total: Ns = 0;
        for &(start, end) in &self.open[class] {
            let (a, b) = (start.max(lo), end.min(t));
            if a < b {
                total = total.saturating_add(clipped(clip, &mut self.clip_cursor, a, b));
            }
        }
        self.credit(class, total);
        self.settled_to(t);
    }

    /// [`DeviceAcc::settle`] to `start`, then the row's merge, while `class` alone has work
    /// open, in one merged interval at most (kernels one after another: nearly every row).
    /// What lies before `start` is tallied at once, so the spans behind it can go. `false`:
    /// not that case, nothing done.
    fn add_alone(
        &mut self,
        class: usize,
        (start, end): (Ns, Ns),
        clip: Option<&SpanQueue>,
    ) -> bool {
        let others_idle = (0..3).all(|c| c == class || self.open[c].is_empty());
        if !self.started || !others_idle || self.open[class].len() > 1 || start < self.settled {
            return false;
        }
        if let Some(&(s, e)) = self.open[class].first() {
            let (a, b) = (s.max(self.settled), e.min(start));
            if a < b {
                let ns = clipped(clip, &mut self.clip_cursor, a, b);
                self.credit(class, ns);
            }
        }
        let list = &mut self.open[class];
        match list.first_mut() {
            Some(open) if start <= open.1 => open.1 = open.1.max(end),
            _ => {
                list.clear();
                list.push((start, end));
            }
        }
        self.settled = start;
        true
    }

    /// `ns` of busy time while only `class` was busy.
    fn credit(&mut self, class: usize, ns: Ns) {
        let out = &mut self.out;
        out.busy_ns = out.busy_ns.saturating_add(ns);
        match class {
            0 => out.compute_ns = out.compute_ns.saturating_add(ns),
            1 => out.communication_ns = out.communication_ns.saturating_add(ns),
            _ => {
                out.transfer_ns = out.transfer_ns.saturating_add(ns);
                out.transfer_union_ns = out.transfer_union_ns.saturating_add(ns);
            }
        }
    }

    /// Forgets the work that ended by `t`.
    fn settled_to(&mut self, t: Ns) {
        for list in &mut self.open {
            list.retain(|iv| iv.1 > t);
        }
        self.settled = t;
    }
}

/// The nanoseconds of `[a, b)` within `clip` (all of them without), from the forward `cursor`.
#[inline(always)]
fn clipped(clip: Option<&SpanQueue>, cursor: &mut usize, a: Ns, b: Ns) -> Ns {
    match clip {
        Some(spans) => overlap_at(spans, cursor, a, b),
        None => b - a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(start: Ns, end: Ns, work: Work) -> KernelRow {
        KernelRow {
            row: 0,
            start,
            end,
            device: 0,
            stream: 7,
            process: 0,
            short_name: 0,
            graph_node: 0,
            work,
            bytes: 1000,
            ..KernelRow::default()
        }
    }

    const H2D: Work = Work::Copy {
        kind: 1,
        pageable: false,
    };

    #[test]
    fn copies_hidden_by_kernels_count_as_compute_and_the_rest_as_transfer() {
        let mut t = WorkTally::new(None);
        t.push(&ev(0, 100, H2D), false);
        t.push(&ev(20, 50, Work::Kernel), false);
        t.push(&ev(40, 60, Work::Kernel), true);
        t.push(&ev(150, 170, Work::Replay), false);
        let s = t.finish();
        let d = &s.devices[0];
        // compute [20,50) ∪ [150,170) = 50; NCCL [50,60) outside compute = 10; copy 100 − 40 = 60.
        assert_eq!(
            (d.compute_ns, d.communication_ns, d.transfer_ns),
            (50, 10, 60)
        );
        assert_eq!(
            (d.busy_ns, d.transfer_union_ns, d.replay_ns),
            (120, 100, 20)
        );
        assert_eq!(d.copies[0].direction, "H2D");
        assert_eq!((d.copies[0].count, d.copies[0].bytes), (1, 1000));
        assert_eq!(d.copies[0].gb_per_s(), Some(10.0));
    }

    #[test]
    fn time_within_spans_is_split_as_the_whole_is() {
        let spans = crate::steps::spans::SpanQueue::of(&[(10, 30), (60, 80)]);
        let mut t = WorkTally::new(None);
        t.push_within(&ev(0, 100, H2D), false, &spans);
        t.push_within(&ev(20, 70, Work::Kernel), false, &spans);
        assert_eq!(
            t.reading_from(),
            Some(20),
            "the copy is tallied up to the kernel"
        );
        t.push_within(&ev(200, 210, Work::Memset), false, &spans);
        let d = &t.finish_within(&spans).devices[0];
        // Compute [20,30) + [60,70); the copy outside it [10,20) + [70,80); the memset outside.
        assert_eq!((d.compute_ns, d.transfer_ns, d.busy_ns), (20, 20, 40));
        assert_eq!((d.copies[0].count, d.copies[0].ns, d.memsets), (1, 100, 1));
    }

    #[test]
    fn a_window_clips_every_class() {
        let mut t = WorkTally::new(Some((50, 120)));
        t.push(&ev(0, 100, H2D), false);
        t.push(&ev(90, 200, Work::Kernel), false);
        let d = &t.finish().devices[0];
        assert_eq!((d.compute_ns, d.transfer_ns, d.busy_ns), (30, 40, 70));
    }

    /// Busy, compute, communication and transfer nanoseconds of `rows` inside `spans` (all time
    /// when `None`), each instant classed one by one.
    fn counted(rows: &[(KernelRow, bool)], spans: Option<&[(Ns, Ns)]>) -> [Ns; 4] {
        let mut out = [0; 4];
        for t in 0..1_000 {
            if spans.is_some_and(|s| !s.iter().any(|&(a, b)| a <= t && t < b)) {
                continue;
            }
            let on = |c: Class| {
                rows.iter()
                    .any(|(r, nccl)| r.start <= t && t < r.end && Class::of(r.work, *nccl) == c)
            };
            let [compute, comm, transfer] =
                [Class::Compute, Class::Communication, Class::Transfer].map(on);
            out[0] += Ns::from(compute || comm || transfer);
            out[1] += Ns::from(compute);
            out[2] += Ns::from(comm && !compute);
            out[3] += Ns::from(transfer && !compute && !comm);
        }
        out
    }

    #[test]
    fn busy_time_by_class_equals_each_instant_classed() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(51);
        let spans = [(50, 200), (260, 300), (300, 420), (600, 900)];
        let queue = SpanQueue::of(&spans);
        for case in 0..300 {
            // Mostly kernels one after another, now and then a copy, an NCCL kernel or a replay.
            let mut rows = Vec::new();
            let mut start: Ns = rng.random_range(0..20);
            while start < 900 {
                let end = start + rng.random_range(0..40);
                let (work, nccl) = match rng.random_range(0..10) {
                    0 => (H2D, false),
                    1 => (Work::Kernel, true),
                    2 => (Work::Replay, false),
                    _ => (Work::Kernel, false),
                };
                rows.push((ev(start, end, work), nccl));
                start += rng.random_range(0..30);
            }
            let (mut whole, mut within) = (WorkTally::new(None), WorkTally::new(None));
            for (r, nccl) in &rows {
                whole.push(r, *nccl);
                within.push_within(r, *nccl, &queue);
            }
            for (tally, spans) in [
                (whole.finish(), None),
                (within.finish_within(&queue), Some(&spans[..])),
            ] {
                let d = &tally.devices[0];
                let got = [d.busy_ns, d.compute_ns, d.communication_ns, d.transfer_ns];
                assert_eq!(got, counted(&rows, spans), "case {case}, within {spans:?}");
            }
        }
    }
}
