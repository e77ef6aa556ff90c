//! The points of the dependency graph a replay builds, each with the one predecessor that
//! decided its time: what the critical path is read back from.
//!
//! Why an arena with a moving base: the replay is a fold over the rows in start order, so it
//! must not keep a point per kernel or call of the whole trace. A critical path is read per
//! steady cycle, backwards from the cycle's end to its start; points older than the cycle before
//! the current one are dropped, and a predecessor that was dropped ends the walk (it lies before
//! the cycle's start, where the walk stops anyway).

use std::collections::VecDeque;

use hashbrown::HashMap;

use serde::Serialize;

use crate::model::{NameId, Ns, ThreadIdx};

/// A point's id: its place in the order points were made.
pub type PointId = u64;
/// No predecessor: a point whose time nothing in the export explains (the first on its thread,
/// an operation no traced call launched).
pub const NONE: PointId = u64::MAX;

/// What the time between a point and its predecessor was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// The host's own time between CUDA calls (named by the innermost NVTX range).
    Host,
    /// Kernel-launch calls (`cudaGraphLaunch` included) and the launch latency to the kernel's
    /// start.
    Launch,
    /// Other CUDA calls: copies, memsets, event and stream calls, allocations, and a
    /// synchronization that did not wait.
    Calls,
    /// A synchronization's return after the GPU work it waited for, a gap between operations on
    /// a stream, and a wait on another stream's work.
    Waits,
    /// Kernels and CUDA-graph replays but collectives.
    Compute,
    /// Collective kernels (NCCL).
    Communication,
    /// Copies and memsets.
    Transfers,
}

impl Part {
    pub const ALL: [Part; 7] = [
        Part::Host,
        Part::Launch,
        Part::Calls,
        Part::Waits,
        Part::Compute,
        Part::Communication,
        Part::Transfers,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Part::Host => "host's own time",
            Part::Launch => "launch calls",
            Part::Calls => "other CUDA calls",
            Part::Waits => "waits",
            Part::Compute => "GPU compute",
            Part::Communication => "communication",
            Part::Transfers => "transfers",
        }
    }
}

/// Where the time since a point's predecessor was spent: a host thread or a GPU stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Thread(ThreadIdx),
    Stream { device: u32, stream: u32 },
}

/// A point: its replayed time, the predecessor that decided it and what the time since was.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub time: Ns,
    pub pred: PointId,
    pub part: Part,
    /// The NVTX op (host time), call or kernel name the time since the predecessor belongs to.
    pub name: NameId,
    pub place: Place,
}

/// One stretch of a critical path: `[start, end)` spent on `part` at `place`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub start: Ns,
    pub end: Ns,
    pub part: Part,
    pub name: NameId,
    pub place: Place,
}

impl Point {
    fn segment(&self, start: Ns) -> Segment {
        Segment {
            start,
            end: self.time,
            part: self.part,
            name: self.name,
            place: self.place,
        }
    }
}

/// The points kept: those from `base` on.
#[derive(Debug, Default)]
pub struct Points {
    base: PointId,
    points: VecDeque<Point>,
    /// Most points held at once (the boundedness figure).
    pub peak: usize,
}

impl Points {
    pub fn push(&mut self, point: Point) -> PointId {
        let id = self.base + self.points.len() as PointId;
        self.points.push_back(point);
        self.peak = self.peak.max(self.points.len());
        id
    }

    pub fn get(&self, id: PointId) -> Option<&Point> {
        let i = id.checked_sub(self.base)?;
        self.points.get(usize::try_from(i).ok()?)
    }

    /// The id the next point gets.
    pub fn next_id(&self) -> PointId {
        self.base + self.points.len() as PointId
    }

    /// Drops the points made before `id`.
    pub fn drop_before(&mut self, id: PointId) {
        while self.base < id && self.points.pop_front().is_some() {
            self.base += 1;
        }
    }
}

/// Time per part of a critical path: an array, not a map (every point of every walk adds to
/// it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartTimes([Ns; Part::ALL.len()]);

impl PartTimes {
    pub fn get(&self, part: Part) -> Ns {
        self.0[part as usize]
    }

    fn add(&mut self, part: Part, time: Ns) {
        self.0[part as usize] += time;
    }

    /// The path's length: every part's time summed.
    pub fn total(&self) -> Ns {
        self.0.iter().sum()
    }
}

/// The critical path over a span, split by part and by name.
#[derive(Debug, Clone, Default)]
pub struct PathSplit {
    pub parts: PartTimes,
    pub names: HashMap<(Part, NameId), Ns>,
    pub total: Ns,
}

impl PathSplit {
    fn take(&mut self, point: &Point, time: Ns) {
        self.parts.add(point.part, time);
        *self.names.entry((point.part, point.name)).or_default() += time;
        self.total += time;
    }
}

/// The critical path that ends at point `end`, walked back to time `from`, added to `path`:
/// each point's time since its predecessor, the last segment cut at `from`. The walk's own
/// time per part, which sums to `end`'s time − `from` (when `end` lies after `from`).
pub fn walk_back(points: &Points, end: PointId, from: Ns, path: &mut PathSplit) -> PartTimes {
    walk(points, end, from, path, |_| {})
}

/// [`walk_back`], also giving the path's segments, latest first.
pub fn segments_back(
    points: &Points,
    end: PointId,
    from: Ns,
    path: &mut PathSplit,
) -> (PartTimes, Vec<Segment>) {
    let mut segments = Vec::new();
    let own = walk(points, end, from, path, |s| {
        if s.end > s.start {
            segments.push(s);
        }
    });
    (own, segments)
}

fn walk(
    points: &Points,
    end: PointId,
    from: Ns,
    path: &mut PathSplit,
    mut seg: impl FnMut(Segment),
) -> PartTimes {
    let mut own = PartTimes::default();
    let mut take = |point: &Point, time: Ns| {
        own.add(point.part, time);
        path.take(point, time);
    };
    let mut at = end;
    // A chain is at most as long as the points kept: a bound, whatever the predecessors say.
    for _ in 0..=points.points.len() {
        let Some(point) = points.get(at) else { break };
        if point.time <= from {
            break;
        }
        match points.get(point.pred) {
            Some(pred) if pred.time > from => {
                take(point, point.time - pred.time);
                seg(point.segment(pred.time));
                at = point.pred;
            }
            _ => {
                take(point, point.time - from);
                seg(point.segment(from));
                break;
            }
        }
    }
    own
}
