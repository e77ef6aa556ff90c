//! The GPU side of the replay: each operation after its launch and the previous operation on
//! its stream, its duration under the changed costs, and a collective's end after the last
//! device arrives.

use super::super::graph::{NONE, Part, Place, Point, PointId};
use super::{
    Anchor, DEFAULT_GAP, DEFAULT_LATENCY, Ended, GPU_END, Launch, MAX_LAUNCHES, Member, OpenWork,
    Replay, Staged, UNEXPLAINED, widen,
};
use crate::costs::scale;
use crate::model::rows::KernelRow;
use crate::model::{NameId, Ns, Work};
use crate::names::kernels::KernelCategory;

impl Replay<'_> {
    pub(super) fn work_start(&mut self, k: &KernelRow) {
        let s = k.start;
        let launched = (k.correlation != 0).then(|| self.launch_of(k)).flatten();
        let staging = matches!(k.work, Work::Copy { pageable: true, .. })
            && launched.is_some_and(|l| l.end.is_none());
        let launch = launched.map(|l| match l.end {
            Some(end) if s >= end.measured => (end, l.graph),
            _ => (l.start, l.graph),
        });
        let graphed = launch.and_then(|(_, graph)| graph);
        let stream = self.streams.get(&(k.device, k.stream)).map(|e| e.at);
        let device = self.devices.entry(k.device).or_default();
        let latency = device.latency.median(DEFAULT_LATENCY);
        let gap = device.gap.median(DEFAULT_GAP);
        let other = device.last;
        // (anchor, typical delay, part of the edge, whether a launch edge)
        let mut edges: Vec<(Anchor, Ns, Part, bool)> = Vec::with_capacity(3);
        if let Some((l, _)) = launch {
            edges.push((l, latency, Part::Launch, true));
        }
        if let Some(p) = stream {
            edges.push((p, gap, Part::Waits, false));
        }
        let decided = edges
            .iter()
            .copied()
            .max_by_key(|&(a, _, _, launch)| (a.measured, !launch));
        // A start its own predecessors leave unexplained: another stream's work that ended just
        // before it (a cross-stream wait the export does not link) decides it.
        if let (Some(o), Some((d, typical, _, _))) = (other, decided)
            && s - d.measured > typical + UNEXPLAINED
            && o.measured > d.measured
            && o.measured <= s
        {
            edges.push((o, gap, Part::Waits, false));
        }
        let decided = edges
            .iter()
            .copied()
            .max_by_key(|&(a, _, _, launch)| (a.measured, !launch));
        let (time, pred, part) = match decided {
            None => (s, NONE, Part::Waits),
            Some((d, _, _, _)) => edges
                .iter()
                .map(|&(a, typical, part, launch)| {
                    // Under --graphs the kernel follows the step's graph launch, not its own.
                    let (a, delay) = match (graphed.filter(|_| launch), a.point == d.point) {
                        (Some(g), _) => (g, typical),
                        (None, true) => (a, s - a.measured),
                        (None, false) => (a, typical.min(s - a.measured)),
                    };
                    (a.replayed + delay, a.point, part)
                })
                .max_by_key(|&(t, p, _)| (t, p == d.point))
                .unwrap_or((s, NONE, Part::Waits)),
        };
        if let Some((d, _, _, launch)) = decided {
            let device = self.devices.entry(k.device).or_default();
            match launch {
                true => device.latency.push(s - d.measured),
                false => device.gap.push(s - d.measured),
            }
        }
        let point = self.points.push(Point {
            time,
            pred,
            part,
            name: k.short_name,
            place: Place::Stream {
                device: k.device,
                stream: k.stream,
            },
        });
        let start = Anchor {
            point,
            measured: s,
            replayed: time,
        };
        self.time_bounds(start);
        let (duration, part) = self.duration(k);
        if staging {
            let staged = Staged {
                copy_start: start,
                measured_end: k.end.max(s),
                replayed_end: time + duration,
            };
            self.staged.insert((k.process, k.correlation), staged);
        }
        let collective = (part == Part::Communication).then(|| self.join(k, start));
        let slot = self.work.insert(OpenWork {
            device: k.device,
            stream: k.stream,
            process: k.process,
            start,
            duration,
            part,
            name: k.short_name,
            collective,
        });
        self.due(k.end.max(s), GPU_END, slot);
    }

    /// The call that launched `k`, given up if it launched only `k`.
    fn launch_of(&mut self, k: &KernelRow) -> Option<Launch> {
        let key = (k.process, k.correlation);
        let launch = self.launches.get(&key).copied();
        if launch.is_some_and(|l| l.once) {
            self.launches.remove(&key);
        }
        launch
    }

    /// A GPU operation's replayed duration and what it is on a path.
    fn duration(&mut self, k: &KernelRow) -> (Ns, Part) {
        let took = k.end.max(k.start) - k.start;
        match k.work {
            Work::Kernel => {
                let class = self.class(k.short_name);
                let part = match class {
                    KernelCategory::Collective => Part::Communication,
                    _ => Part::Compute,
                };
                (scale(took, self.costs.class_factor(class.key())), part)
            }
            Work::Replay => (
                scale(took, self.costs.class_factor(KernelCategory::Replay.key())),
                Part::Compute,
            ),
            Work::Copy { .. } | Work::Memset => (scale(took, self.costs.copies), Part::Transfers),
        }
    }

    /// A collective kernel starting on its device: its key, and its instance recorded.
    fn join(&mut self, k: &KernelRow, start: Anchor) -> (NameId, u64) {
        let ordinal = self.ordinals.entry((k.device, k.short_name)).or_default();
        let key = (k.short_name, *ordinal);
        *ordinal += 1;
        if !self.collectives.contains_key(&key) {
            if self.collective_order.len() >= MAX_LAUNCHES
                && let Some(old) = self.collective_order.pop_front()
            {
                self.collectives.remove(&old);
            }
            self.collective_order.push_back(key);
        }
        self.collectives.entry(key).or_default().push(Member {
            start,
            took: k.end.max(k.start) - k.start,
        });
        key
    }

    /// A collective's end on one device: it cannot end before the last device to arrive has
    /// started it (NCCL's kernels wait for their peers), so its end follows the last arrival by
    /// what it measured, and every other device's start by at most the transfer time (the
    /// shortest instance's duration, when nobody waited).
    fn collective_end(&self, key: (NameId, u64), w: &OpenWork, e: Ns) -> (Ns, PointId) {
        let own = (w.start.replayed + w.duration, w.start.point);
        let Some(members) = self.collectives.get(&key) else {
            return own;
        };
        let arrived = members.iter().filter(|m| m.start.measured <= e);
        let Some(last) = arrived.clone().max_by_key(|m| m.start.measured) else {
            return own;
        };
        let transfer = arrived.clone().map(|m| m.took).min().unwrap_or(0);
        let factor = self.costs.class_factor(KernelCategory::Collective.key());
        arrived
            .map(|m| {
                let waited = e - m.start.measured;
                let delay = match m.start.point == last.start.point {
                    true => waited,
                    false => transfer.min(waited),
                };
                (m.start.replayed + scale(delay, factor), m.start.point)
            })
            .max_by_key(|&(t, p)| (t, p == last.start.point))
            .unwrap_or(own)
    }

    pub(super) fn work_end(&mut self, slot: usize, e: Ns) {
        let Some(w) = self.work.try_remove(slot) else {
            return;
        };
        let (time, pred) = match w.collective {
            Some(key) => self.collective_end(key, &w, e),
            None => (w.start.replayed + w.duration, w.start.point),
        };
        let point = self.points.push(Point {
            time,
            pred,
            part: w.part,
            name: w.name,
            place: Place::Stream {
                device: w.device,
                stream: w.stream,
            },
        });
        let at = Anchor {
            point,
            measured: e,
            replayed: time,
        };
        self.streams.insert(
            (w.device, w.stream),
            Ended {
                at,
                process: w.process,
            },
        );
        let device = self.devices.entry(w.device).or_default();
        if device.last.is_none_or(|l| l.measured <= e) {
            device.last = Some(at);
        }
        self.window = Some(widen(self.window, (w.start.replayed, time)));
        self.measured_window = Some(widen(self.measured_window, (w.start.measured, e)));
    }
}
