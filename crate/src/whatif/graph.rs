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

use crate::model::{NO_NAME, NameId, Ns, Strings, ThreadIdx};
use crate::names::shape::op_shape;

/// A point's id: its place in the order points were made.
pub type PointId = u64;
/// No predecessor: a point whose time nothing in the export explains (the first on its thread,
/// an operation no traced call launched).
pub const NONE: PointId = u64::MAX;

/// What the time between a point and its predecessor was spent on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
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

/// The critical path over a span, split by part and by name: the host's time by the op's
/// shape ([`op_shape`], as Root cause groups ops), under the first name of that shape met.
#[derive(Debug, Clone, Default)]
pub struct PathSplit {
    pub parts: PartTimes,
    pub names: HashMap<(Part, NameId), Ns>,
    pub total: Ns,
    shapes: Shapes,
}

impl PathSplit {
    fn take(&mut self, point: &Point, time: Ns, strings: &Strings) {
        self.parts.add(point.part, time);
        let name = match point.part {
            Part::Host => self.shapes.of(point.name, strings),
            _ => point.name,
        };
        *self.names.entry((point.part, name)).or_default() += time;
        self.total += time;
    }
}

/// Names met lately, remembered with the name their shape goes under.
const REMEMBERED_NAMES: usize = 1 << 14;

/// Each host name's shape, as the first name of that shape met. Why: a trace that names a range
/// per step (TensorRT-LLM's `[Executor] _forward_step N`) would otherwise add an entry per step
/// to every replay's split; this holds one per shape, and forgets names past
/// [`REMEMBERED_NAMES`] (a name per step is never met again).
#[derive(Debug, Clone, Default)]
struct Shapes {
    names: HashMap<NameId, NameId>,
    first: HashMap<String, NameId>,
}

impl Shapes {
    fn of(&mut self, name: NameId, strings: &Strings) -> NameId {
        if name == NO_NAME {
            return name;
        }
        if let Some(&first) = self.names.get(&name) {
            return first;
        }
        if self.names.len() >= REMEMBERED_NAMES {
            self.names.clear();
        }
        let shape = op_shape(strings.get(name));
        let first = match self.first.get(shape.as_ref()) {
            Some(&first) => first,
            None => {
                self.first.insert(shape.into_owned(), name);
                name
            }
        };
        self.names.insert(name, first);
        first
    }
}

/// The critical path that ends at point `end`, walked back to time `from`, added to `path`:
/// each point's time since its predecessor, the last segment cut at `from`. The walk's own
/// time per part, which sums to `end`'s time − `from` (when `end` lies after `from`).
pub fn walk_back(
    (points, strings): (&Points, &Strings),
    end: PointId,
    from: Ns,
    path: &mut PathSplit,
) -> PartTimes {
    walk((points, strings), end, from, path, |_| {})
}

/// [`walk_back`], also giving the path's segments, latest first.
pub fn segments_back(
    (points, strings): (&Points, &Strings),
    end: PointId,
    from: Ns,
    path: &mut PathSplit,
) -> (PartTimes, Vec<Segment>) {
    let mut segments = Vec::new();
    let own = walk((points, strings), end, from, path, |s| {
        if s.end > s.start {
            segments.push(s);
        }
    });
    (own, segments)
}

fn walk(
    (points, strings): (&Points, &Strings),
    end: PointId,
    from: Ns,
    path: &mut PathSplit,
    mut seg: impl FnMut(Segment),
) -> PartTimes {
    let mut own = PartTimes::default();
    let mut take = |point: &Point, time: Ns| {
        own.add(point.part, time);
        path.take(point, time, strings);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A host range named per step (`[Executor] _forward_step N`) is one entry of the split,
    /// under one step's name, with every step's time: past the names remembered too.
    #[test]
    fn a_range_named_per_step_is_one_entry_of_the_split() {
        let mut strings = Strings::default();
        let steps = 3 * REMEMBERED_NAMES + 7;
        let names: Vec<NameId> = (0..steps)
            .map(|i| strings.intern(&format!("[Executor] _forward_step {i}: 1 ctx reqs")))
            .collect();
        let kernel = strings.intern("gemm_kernel");
        let (mut points, mut path) = (Points::default(), PathSplit::default());
        let (mut last, mut time) = (NONE, 0);
        for &name in &names {
            time += 10;
            let host = points.push(Point {
                time,
                pred: last,
                part: Part::Host,
                name,
                place: Place::Thread(0),
            });
            time += 5;
            last = points.push(Point {
                time,
                pred: host,
                part: Part::Compute,
                name: kernel,
                place: Place::Stream {
                    device: 0,
                    stream: 7,
                },
            });
        }
        let own = walk_back((&points, &strings), last, 0, &mut path);
        let steps = steps as Ns;
        assert_eq!(path.names.len(), 2, "{:?}", path.names.keys().take(4));
        let (&(_, host), &host_ns) = path
            .names
            .iter()
            .find(|((part, _), _)| *part == Part::Host)
            .expect("the host's entry");
        assert_eq!(
            (op_shape(strings.get(host)).as_ref(), host_ns),
            ("[Executor] _forward_step *: * ctx reqs", 10 * steps)
        );
        assert_eq!(path.names[&(Part::Compute, kernel)], 5 * steps);
        assert_eq!((path.total, own.total()), (15 * steps, 15 * steps));
        assert!(path.shapes.names.len() <= REMEMBERED_NAMES);
    }
}
