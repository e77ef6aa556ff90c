//! The replay: one fold over the rows in time order that gives every call, NVTX boundary and
//! GPU operation a replayed time under changed costs, keeping the dependencies the export
//! shows (`docs/whatif.md` lists each edge and its source).
//!
//! Each point's time is the latest of its predecessors' replayed times plus the delay of the
//! edge. The edge that decided the measured time keeps its measured delay; the others keep at
//! most a typical delay (the launch latency or the gap between operations on the device,
//! the median of the last ones measured). So the replay of unchanged costs gives every row its
//! measured time, and a changed cost moves only what depends on it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

// foldhash, not SipHash: the replay inserts and removes an entry per call and GPU operation.
use hashbrown::HashMap;
use slab::Slab;

use super::graph::{
    NONE, Part, PathSplit, Place, Point, PointId, Points, Segment, segments_back, walk_back,
};
use super::{Costs, Cycles};
use crate::analyze::breakdown::CycleBounds;
use crate::costs::scale;
use crate::error::Result;
use crate::model::rows::{CallRow, EventRows, KernelRow, Rows, SyncRow};
use crate::model::{
    NO_NAME, NameFlags, NameId, Ns, NvtxRow, ProcessIdx, Strings, ThreadIdx, Work, flag,
};
use crate::names::api::{ApiKind, api_kind};
use crate::names::kernels::KernelCategory;

mod bounds;
mod feed;
mod gpu;
mod typical;

pub use feed::{Feed, replay_fed};

use bounds::{BoundId, CycleIndex};

use typical::Typical;

/// What one replay gives: the replayed cycles summed, their critical path, and the window.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    pub cycles: Cycles,
    /// First GPU operation's start to the last one's end, replayed.
    pub window: Option<(Ns, Ns)>,
    /// The same, measured.
    pub measured_window: Option<(Ns, Ns)>,
    /// The critical path summed over the cycles.
    pub path: PathSplit,
    /// Most points held at once.
    pub peak_points: usize,
    /// The critical path of the cycle asked for, latest segment first.
    pub segments: Vec<Segment>,
}

/// Replays `rows` under `costs`, keeping the critical path's segments of cycle `keep`;
/// `cycles` are the steady cycles Root cause measured.
pub fn replay_keeping(
    rows: &dyn EventRows,
    cycles: &[CycleBounds],
    costs: &Costs,
    keep: Option<usize>,
) -> Result<Replayed> {
    let mut all = replay_all(rows, cycles, std::slice::from_ref(costs), keep)?;
    Ok(all.pop().unwrap_or_default())
}

/// [`replay_keeping`] under each of `costs`, reading the rows once: each replay takes the same
/// rows in the same order, and orders its own ends among them, so it gives what a replay of its
/// own gives. Natively the replays run on threads beside the one reading the rows.
pub fn replay_all(
    rows: &dyn EventRows,
    cycles: &[CycleBounds],
    costs: &[Costs],
    keep: Option<usize>,
) -> Result<Vec<Replayed>> {
    replay_feeding(rows, cycles, costs, keep, None)
}

/// [`replay_all`], each batch of rows also handed to `feed` (another worker's replays,
/// [`replay_fed`]); the empty batch after the last ends them. A batch `feed` refuses ends
/// these replays too.
pub fn replay_feeding(
    rows: &dyn EventRows,
    cycles: &[CycleBounds],
    costs: &[Costs],
    keep: Option<usize>,
    mut feed: Option<&mut dyn Feed>,
) -> Result<Vec<Replayed>> {
    let strings = &rows.meta().strings;
    let index = CycleIndex::new(cycles);
    let folds: Vec<Replay<'_>> = costs
        .iter()
        .map(|c| {
            let mut fold = Replay::new(strings, c, &index);
            fold.keep = keep;
            fold
        })
        .collect();
    let mut sources = Sources {
        calls: rows.calls().peekable(),
        ranges: rows.ranges().peekable(),
        work: rows.gpu_work().peekable(),
        syncs: rows.syncs().peekable(),
    };
    let mut refused = None;
    let replayed = fan_out(folds, &mut || {
        if refused.is_some() {
            return Vec::new();
        }
        let batch = sources.next_batch();
        if let Some(feed) = feed.as_mut()
            && let Err(e) = feed::pack(&batch).and_then(|bytes| feed.send(&bytes))
        {
            refused = Some(e);
            return Vec::new();
        }
        batch
    });
    if let Some(e) = refused {
        return Err(e);
    }
    rows.check()?;
    Ok(replayed)
}

/// Rows handed to the replays at a time.
const BATCH: usize = 4096;

/// Feeds every batch `next` gives to each fold, then ends them: in turn in the page (wasm32 has
/// no threads), on up to as many threads as the machine has cores natively.
#[cfg(target_arch = "wasm32")]
fn fan_out(folds: Vec<Replay<'_>>, next: &mut dyn FnMut() -> Vec<Start>) -> Vec<Replayed> {
    in_turn(folds, next)
}

/// Each batch to each fold in turn, on this thread.
fn in_turn(mut folds: Vec<Replay<'_>>, next: &mut dyn FnMut() -> Vec<Start>) -> Vec<Replayed> {
    loop {
        let batch = next();
        if batch.is_empty() {
            break;
        }
        for fold in &mut folds {
            fold.take_all(&batch);
        }
    }
    folds.into_iter().map(Replay::finish).collect()
}

#[cfg(not(target_arch = "wasm32"))]
fn fan_out(folds: Vec<Replay<'_>>, next: &mut dyn FnMut() -> Vec<Start>) -> Vec<Replayed> {
    use std::sync::{Arc, mpsc};
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if folds.len() < 2 || cores < 2 {
        return in_turn(folds, next);
    }
    // The folds dealt out to the threads in turn, each thread keeping their places.
    let threads = cores.min(folds.len());
    let mut groups: Vec<Vec<(usize, Replay<'_>)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, fold) in folds.into_iter().enumerate() {
        groups[i % threads].push((i, fold));
    }
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for mut group in groups {
            // A few batches in flight: the reader never runs far ahead of the slowest fold.
            let (send, recv) = mpsc::sync_channel::<Arc<Vec<Start>>>(4);
            senders.push(send);
            handles.push(scope.spawn(move || {
                for batch in recv {
                    for (_, fold) in &mut group {
                        fold.take_all(&batch);
                    }
                }
                group
                    .into_iter()
                    .map(|(i, fold)| (i, fold.finish()))
                    .collect::<Vec<_>>()
            }));
        }
        loop {
            let batch = Arc::new(next());
            if batch.is_empty() {
                break;
            }
            for send in &senders {
                // A thread that stopped has panicked; its join below says so.
                let _ = send.send(Arc::clone(&batch));
            }
        }
        drop(senders);
        let mut replayed: Vec<(usize, Replayed)> = handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(group) => group,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect();
        replayed.sort_by_key(|(i, _)| *i);
        replayed.into_iter().map(|(_, r)| r).collect()
    })
}

/// Order of points at one time: ends before starts (a kernel ends before the sync waiting on
/// it returns, a launch call returns before its kernel starts), NVTX starts before calls.
const GPU_END: u8 = 0;
const CALL_END: u8 = 1;
const NVTX_END: u8 = 2;
const SYNC_ROW: u8 = 3;
const NVTX_START: u8 = 4;
const CALL_START: u8 = 5;
const GPU_START: u8 = 6;

/// An end due: its time and class (the order of points at one time), the order it was opened
/// in, and its slot among the open calls, operations or ranges of its class.
type End = (Ns, u8, u64, usize);

/// A row that starts a point, in the order the replays take them.
enum Start {
    Sync(SyncRow),
    Nvtx(NvtxRow),
    Call(CallRow),
    Work(KernelRow),
}

impl Start {
    /// Its place among the points: (time, class), as an end's in the replay's heap.
    fn key(&self) -> (Ns, u8) {
        match self {
            Start::Sync(r) => (r.start, SYNC_ROW),
            Start::Nvtx(r) => (r.start, NVTX_START),
            Start::Call(r) => (r.start, CALL_START),
            Start::Work(r) => (r.start, GPU_START),
        }
    }
}

struct Sources<'a> {
    calls: std::iter::Peekable<Rows<'a, CallRow>>,
    ranges: std::iter::Peekable<Rows<'a, NvtxRow>>,
    work: std::iter::Peekable<Rows<'a, KernelRow>>,
    syncs: std::iter::Peekable<Rows<'a, SyncRow>>,
}

impl Sources<'_> {
    fn next_start(&mut self) -> Option<(Ns, u8)> {
        [
            self.syncs.peek().map(|r| (r.start, SYNC_ROW)),
            self.ranges.peek().map(|r| (r.start, NVTX_START)),
            self.calls.peek().map(|r| (r.start, CALL_START)),
            self.work.peek().map(|r| (r.start, GPU_START)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next row of the four tables merged by (start, class).
    fn next(&mut self) -> Option<Start> {
        match self.next_start()?.1 {
            SYNC_ROW => self.syncs.next().map(Start::Sync),
            NVTX_START => self.ranges.next().map(Start::Nvtx),
            CALL_START => self.calls.next().map(Start::Call),
            _ => self.work.next().map(Start::Work),
        }
    }

    /// Up to [`BATCH`] next rows (none: the tables are read).
    fn next_batch(&mut self) -> Vec<Start> {
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH
            && let Some(row) = self.next()
        {
            batch.push(row);
        }
        batch
    }
}

/// A host thread: its last point, where it is in measured and replayed time, how deep in CUDA
/// calls, and its open NVTX ranges (name, end).
struct Thread {
    last: PointId,
    measured: Ns,
    replayed: Ns,
    calls: u32,
    ranges: Vec<(NameId, Ns)>,
}

/// An edge's end: a point, its measured and its replayed time.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    point: PointId,
    measured: Ns,
    replayed: Ns,
}

/// A call that launched (or may launch) GPU work, until its operations come.
#[derive(Debug, Clone, Copy)]
struct Launch {
    start: Anchor,
    end: Option<Anchor>,
    /// Under `--graphs`, for an eager launch the step's graph launch stands for: the graph
    /// launch's end, which its kernel follows by the typical latency whenever the eager call
    /// was made.
    graph: Option<Anchor>,
    /// It launches one operation (a kernel launch, a copy, a memset; a graph launch launches
    /// many): held until that operation comes, not for every launch after it.
    once: bool,
}

/// A copy with a pageable host side whose call was still open when it started: the call stages
/// the transfer through pinned memory and returns once it is staged or done (NVIDIA's "API
/// synchronization behavior"), so its end follows the copy's, offset as measured.
#[derive(Debug, Clone, Copy)]
struct Staged {
    copy_start: Anchor,
    measured_end: Ns,
    replayed_end: Ns,
}

/// Under `--graphs`, what a kernel-launch call in a steady step becomes: the step's graph
/// launch (the thread's first launch in the step), or a launch it absorbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GraphRole {
    Eager,
    First(usize),
    Absorbed(usize),
}

#[derive(Debug, Clone, Copy)]
struct OpenCall {
    graph: GraphRole,
    thread: ThreadIdx,
    process: ProcessIdx,
    correlation: u32,
    name: NameId,
    kind: ApiKind,
    start: Anchor,
}

#[derive(Debug, Clone, Copy)]
struct OpenWork {
    device: u32,
    stream: u32,
    process: ProcessIdx,
    start: Anchor,
    duration: Ns,
    part: Part,
    name: NameId,
    /// A collective's key among the devices' collectives: its name and its place in each
    /// device's sequence of that name.
    collective: Option<(NameId, u64)>,
}

/// One device's instance of a collective: its start and measured duration.
#[derive(Debug, Clone, Copy)]
struct Member {
    start: Anchor,
    took: Ns,
}

/// The last operation that ended on a stream, and its process.
#[derive(Debug, Clone, Copy)]
struct Ended {
    at: Anchor,
    process: ProcessIdx,
}

#[derive(Debug, Default)]
struct Device {
    latency: Typical,
    gap: Typical,
    /// The operation on any stream of the device that ended last.
    last: Option<Anchor>,
}

/// Launch latency assumed before a device has shown one (the generator's, CUDA's order).
const DEFAULT_LATENCY: Ns = 4_000;
/// Gap between operations on a stream assumed before a device has shown one.
const DEFAULT_GAP: Ns = 1_000;
/// A start later than its predecessors explain by more than this is looked for on the
/// device's other streams (a cross-stream wait the export does not link).
const UNEXPLAINED: Ns = 2_000;
/// Launches held for their operations at most (a launch whose kernel was not captured).
const MAX_LAUNCHES: usize = 1 << 16;
/// Points kept while no steady cycle is open.
const KEEP_OUTSIDE: PointId = 1 << 12;

/// Where a synchronization waits, from its `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION` row.
#[derive(Debug, Clone, Copy)]
enum Scope {
    /// One stream of the calling process.
    Stream(u32),
    /// Every stream of the calling process (a device or event synchronization).
    Process,
}

/// `CUpti_ActivitySynchronizationType`: 3 is a stream synchronization.
const SYNC_STREAM: u8 = 3;

struct Replay<'a> {
    strings: &'a Strings,
    costs: &'a Costs,
    points: Points,
    threads: HashMap<ThreadIdx, Thread>,
    streams: HashMap<(u32, u32), Ended>,
    devices: HashMap<u32, Device>,
    launches: HashMap<(ProcessIdx, u32), Launch>,
    launch_order: VecDeque<(ProcessIdx, u32)>,
    scopes: HashMap<(ProcessIdx, u32), Scope>,
    calls: Slab<OpenCall>,
    work: Slab<OpenWork>,
    next_id: u64,
    ends: BinaryHeap<Reverse<End>>,
    /// NVTX ends: (end, thread, name).
    nvtx_ends: Slab<(ThreadIdx, NameId)>,
    kinds: HashMap<NameId, ApiKind>,
    /// The names of the ranges whose self time the costs scale (`Costs::ops`), a bit per name
    /// id; `None` when they scale none. Not a factor cached per name: a trace that names a range
    /// per step (TensorRT-LLM's `[Executor] _forward_step N`) would add an entry per step.
    scaled_ops: Option<NameFlags>,
    classes: HashMap<NameId, KernelCategory>,
    /// Where the cycles' bounds lie (every replay's), and how far the bounds met at a GPU
    /// operation's start have come.
    index: &'a CycleIndex,
    next_time_bound: usize,
    /// The bounds met whose cycle is not done: their anchors.
    bounds: HashMap<BoundId, Anchor>,
    cycles: Cycles,
    /// Start points of the cycles started and not yet done.
    open: std::collections::BTreeSet<PointId>,
    path: PathSplit,
    window: Option<(Ns, Ns)>,
    measured_window: Option<(Ns, Ns)>,
    keep: Option<usize>,
    segments: Vec<Segment>,
    /// Collectives by (name, place in each device's sequence): the devices' instances so far.
    collectives: HashMap<(NameId, u64), Vec<Member>>,
    /// Copies with a pageable side, by the call staging them, until that call ends.
    staged: HashMap<(ProcessIdx, u32), Staged>,
    collective_order: VecDeque<(NameId, u64)>,
    /// Per (device, name): the collectives of that name the device started.
    ordinals: HashMap<(u32, NameId), u64>,
    /// Under `--graphs`: each (thread, cycle)'s graph launch.
    graph_launches: HashMap<(ThreadIdx, usize), Launch>,
}

impl<'a> Replay<'a> {
    fn new(strings: &'a Strings, costs: &'a Costs, index: &'a CycleIndex) -> Replay<'a> {
        Replay {
            strings,
            costs,
            points: Points::default(),
            threads: HashMap::new(),
            streams: HashMap::new(),
            devices: HashMap::new(),
            launches: HashMap::new(),
            launch_order: VecDeque::new(),
            scopes: HashMap::new(),
            calls: Slab::new(),
            work: Slab::new(),
            next_id: 0,
            ends: BinaryHeap::new(),
            nvtx_ends: Slab::new(),
            kinds: HashMap::new(),
            scaled_ops: (!costs.ops.is_empty())
                .then(|| strings.classify(|name| costs.op_factor(name) != 1.0)),
            classes: HashMap::new(),
            index,
            next_time_bound: 0,
            bounds: HashMap::new(),
            cycles: Cycles::default(),
            open: std::collections::BTreeSet::new(),
            path: PathSplit::default(),
            window: None,
            measured_window: None,
            keep: None,
            segments: Vec::new(),
            collectives: HashMap::new(),
            staged: HashMap::new(),
            collective_order: VecDeque::new(),
            ordinals: HashMap::new(),
            graph_launches: HashMap::new(),
        }
    }

    /// An end due at `at`, of `class`, for the open call, operation or range in `slot`; ends
    /// at one time and of one class come in the order they were opened.
    fn due(&mut self, at: Ns, class: u8, slot: usize) {
        self.next_id += 1;
        self.ends.push(Reverse((at, class, self.next_id, slot)));
    }

    fn kind(&mut self, name: NameId) -> ApiKind {
        let strings = self.strings;
        *self
            .kinds
            .entry(name)
            .or_insert_with(|| api_kind(strings.get(name)))
    }

    fn class(&mut self, name: NameId) -> KernelCategory {
        let strings = self.strings;
        *self
            .classes
            .entry(name)
            .or_insert_with(|| Work::Kernel.class(strings.get(name)))
    }

    /// The factor on the host's own time inside NVTX op `name` (innermost).
    fn host_factor(&self, name: NameId) -> f64 {
        let op = match &self.scaled_ops {
            Some(scaled) if name != NO_NAME && flag(scaled, name) => {
                self.costs.op_factor(self.strings.get(name))
            }
            _ => 1.0,
        };
        self.costs.host * op
    }

    /// A point on `thread`'s host timeline at measured time `t`: the host's own time since its
    /// last point, scaled, attributed to the innermost NVTX range (inside a call, the call's
    /// time, unscaled).
    fn host_point(&mut self, thread: ThreadIdx, t: Ns) -> Anchor {
        let th = self.threads.entry(thread).or_insert(Thread {
            last: NONE,
            measured: t,
            replayed: t,
            calls: 0,
            ranges: Vec::new(),
        });
        let elapsed = t - th.measured;
        let (in_call, last, from) = (th.calls > 0, th.last, th.replayed);
        let op = th.ranges.last().map_or(NO_NAME, |&(n, _)| n);
        let (part, time) = match in_call {
            true => (Part::Calls, from + elapsed),
            false => (Part::Host, from + scale(elapsed, self.host_factor(op))),
        };
        let point = self.points.push(Point {
            time,
            pred: last,
            part,
            name: op,
            place: Place::Thread(thread),
        });
        if let Some(th) = self.threads.get_mut(&thread) {
            th.last = point;
            th.measured = t;
            th.replayed = time;
        }
        Anchor {
            point,
            measured: t,
            replayed: time,
        }
    }

    fn sync_row(&mut self, r: &SyncRow) {
        let scope = match r.sync_type {
            SYNC_STREAM => Scope::Stream(r.stream),
            _ => Scope::Process,
        };
        if self.scopes.len() >= MAX_LAUNCHES {
            self.scopes.clear();
        }
        self.scopes.insert((r.process, r.correlation), scope);
    }

    fn nvtx_start(&mut self, r: &NvtxRow) {
        if r.end < r.start {
            return;
        }
        let at = self.host_point(r.thread, r.start);
        if let Some(th) = self.threads.get_mut(&r.thread) {
            th.ranges.push((r.name, r.end));
        }
        let index = self.index;
        for b in index.at_row(r.row) {
            self.bound(b, at);
        }
        let slot = self.nvtx_ends.insert((r.thread, r.name));
        self.due(r.end, NVTX_END, slot);
    }

    fn nvtx_end(&mut self, slot: usize, t: Ns) {
        let Some((thread, name)) = self.nvtx_ends.try_remove(slot) else {
            return;
        };
        self.host_point(thread, t);
        if let Some(th) = self.threads.get_mut(&thread)
            && let Some(i) = th.ranges.iter().rposition(|&(n, e)| n == name && e == t)
        {
            th.ranges.remove(i);
        }
    }

    fn call_start(&mut self, r: &CallRow) {
        let start = self.host_point(r.thread, r.start);
        if let Some(th) = self.threads.get_mut(&r.thread) {
            th.calls += 1;
        }
        let kind = self.kind(r.name);
        if r.correlation != 0
            && matches!(
                kind,
                ApiKind::Launch
                    | ApiKind::GraphLaunch
                    | ApiKind::Memcpy { .. }
                    | ApiKind::Memset { .. }
            )
        {
            let key = (r.process, r.correlation);
            if self.launch_order.len() >= MAX_LAUNCHES
                && let Some(old) = self.launch_order.pop_front()
            {
                self.launches.remove(&old);
            }
            self.launches.insert(
                key,
                Launch {
                    start,
                    end: None,
                    graph: None,
                    once: kind != ApiKind::GraphLaunch,
                },
            );
            self.launch_order.push_back(key);
        }
        let graph = self.graph_role(r, kind);
        let slot = self.calls.insert(OpenCall {
            graph,
            thread: r.thread,
            process: r.process,
            correlation: r.correlation,
            name: r.name,
            kind,
            start,
        });
        self.due(r.end.max(r.start), CALL_END, slot);
    }

    /// Under `--graphs`, a kernel-launch call's role: in a steady step, the thread's first
    /// launch becomes the step's graph launch (at the first call's cost) and absorbs the rest.
    fn graph_role(&mut self, r: &CallRow, kind: ApiKind) -> GraphRole {
        if !self.costs.graphs || kind != ApiKind::Launch {
            return GraphRole::Eager;
        }
        let spans = &self.index.spans;
        let i = spans.partition_point(|&(s, _)| s <= r.start);
        let Some(i) = i.checked_sub(1).filter(|&i| r.start < spans[i].1) else {
            return GraphRole::Eager;
        };
        if self.graph_launches.contains_key(&(r.thread, i)) {
            return GraphRole::Absorbed(i);
        }
        if let Some(l) = self.launches.get(&(r.process, r.correlation)) {
            self.graph_launches.insert((r.thread, i), *l);
        }
        GraphRole::First(i)
    }

    fn call_end(&mut self, slot: usize, e: Ns) {
        let Some(c) = self.calls.try_remove(slot) else {
            return;
        };
        let s = c.start.measured;
        let took = e - s;
        // Whatever the call's kind, so that the map holds only copies whose call is open.
        let staged = match self.staged.is_empty() {
            true => None,
            false => self.staged.remove(&(c.process, c.correlation)),
        };
        let (time, pred, part) = match (staged, c.kind) {
            (Some(st), ApiKind::Memcpy { .. }) => (
                (st.replayed_end + (e - st.measured_end)).max(c.start.replayed),
                st.copy_start.point,
                Part::Transfers,
            ),
            (_, ApiKind::Launch) if matches!(c.graph, GraphRole::Absorbed(_)) => {
                (c.start.replayed, c.start.point, Part::Launch)
            }
            (_, ApiKind::Launch | ApiKind::GraphLaunch) => (
                c.start.replayed + scale(took, self.costs.launch),
                c.start.point,
                Part::Launch,
            ),
            (
                _,
                ApiKind::BlockingSync
                | ApiKind::Memcpy { is_async: false }
                | ApiKind::Memset { is_async: false },
            ) => self.sync_end(&c, e),
            _ => (c.start.replayed + took, c.start.point, Part::Calls),
        };
        let point = self.points.push(Point {
            time,
            pred,
            part,
            name: c.name,
            place: Place::Thread(c.thread),
        });
        let end = Anchor {
            point,
            measured: e,
            replayed: time,
        };
        let graph = match c.graph {
            GraphRole::Eager => None,
            GraphRole::First(i) => {
                if let Some(g) = self.graph_launches.get_mut(&(c.thread, i)) {
                    g.end = Some(end);
                }
                None
            }
            GraphRole::Absorbed(i) => self.graph_launches.get(&(c.thread, i)).copied(),
        };
        if let Some(l) = self.launches.get_mut(&(c.process, c.correlation)) {
            l.end = Some(end);
            l.graph = graph.and_then(|g| g.end);
        }
        if let Some(th) = self.threads.get_mut(&c.thread) {
            th.calls = th.calls.saturating_sub(1);
            th.last = point;
            th.measured = e;
            th.replayed = time;
        }
    }

    /// A blocking call's end: when the GPU work it waited for ends, plus its measured return;
    /// the work it waited for is what ended last during the call on the streams it waits on.
    fn sync_end(&mut self, c: &OpenCall, e: Ns) -> (Ns, PointId, Part) {
        let s = c.start.measured;
        let scope = self.scopes.remove(&(c.process, c.correlation));
        // The row's deviceId is not the kernel table's: in `mfu_2gpu_before` the process whose
        // kernels run on device 1 writes deviceId 0 (its own ordinal). Streams are matched within
        // the calling process, by id for a stream synchronization.
        let waited = self
            .streams
            .iter()
            .filter(|&(&(_, st), ended)| {
                ended.process == c.process
                    && match scope {
                        Some(Scope::Stream(ss)) => st == ss,
                        Some(Scope::Process) | None => true,
                    }
            })
            .map(|(_, ended)| ended.at)
            .filter(|a| a.measured > s && a.measured <= e)
            .max_by_key(|a| a.measured);
        let own = c.start.replayed + (e - s);
        let Some(w) = waited else {
            return (own, c.start.point, Part::Calls);
        };
        let ret = e - w.measured;
        let alone = c.start.replayed + ret.min(e - s);
        let after = w.replayed + ret;
        match after >= alone {
            true => (after, w.point, Part::Waits),
            false => (alone, c.start.point, Part::Calls),
        }
    }

    /// Cycle bounds that are GPU iterations' starts: at the first operation starting at or after
    /// them.
    fn time_bounds(&mut self, start: Anchor) {
        while let Some(&(t, b)) = self.index.by_time.get(self.next_time_bound) {
            if t > start.measured {
                break;
            }
            self.next_time_bound += 1;
            self.bound(b, start);
        }
    }

    /// Bound `b` reached at `at`: a cycle whose both bounds are known is replayed, its
    /// critical path walked back, and points older than it dropped.
    fn bound(&mut self, b: BoundId, at: Anchor) {
        self.bounds.insert(b, at);
        let i = b / 2;
        if let (Some(&start), Some(&next)) =
            (self.bounds.get(&(2 * i)), self.bounds.get(&(2 * i + 1)))
        {
            self.bounds.remove(&(2 * i));
            self.bounds.remove(&(2 * i + 1));
            let (points, path) = ((&self.points, self.strings), &mut self.path);
            let own = match self.keep == Some(i) {
                true => {
                    let (own, segments) = segments_back(points, next.point, start.replayed, path);
                    self.segments = segments;
                    own
                }
                false => walk_back(points, next.point, start.replayed, path),
            };
            let span = (start.replayed, next.replayed);
            self.cycles.add(span, super::bound_of(&own));
            self.open.remove(&start.point);
        } else if b.is_multiple_of(2) {
            self.open.insert(at.point);
        }
        // A walk back stops at its cycle's start: what lies before the earliest open cycle's
        // start is not needed, and outside any cycle only the last points are kept (a
        // predecessor dropped ends a walk where the cycle starts).
        match self.open.first() {
            Some(&first) => self.points.drop_before(first),
            None => self.points.drop_before(at.point),
        }
    }

    /// Outside the steady cycles (a warm-up, a tail), keeps the points bounded.
    fn trim(&mut self) {
        if self.open.is_empty() {
            let keep = self.points.next_id().saturating_sub(KEEP_OUTSIDE);
            self.points.drop_before(keep);
        }
    }

    fn end_next(&mut self) {
        let Some(Reverse((t, class, _, slot))) = self.ends.pop() else {
            return;
        };
        match class {
            GPU_END => self.work_end(slot, t),
            CALL_END => self.call_end(slot, t),
            _ => self.nvtx_end(slot, t),
        }
    }

    /// Takes `batch` (the next rows in start order): before each row, the ends due by its
    /// start; after the last batch, [`Replay::finish`] takes the ends left.
    fn take_all(&mut self, batch: &[Start]) {
        for row in batch {
            let key = row.key();
            while self.ends.peek().is_some_and(|Reverse(e)| (e.0, e.1) <= key) {
                self.end_next();
                self.trim();
            }
            match row {
                Start::Sync(r) => self.sync_row(r),
                Start::Nvtx(r) => self.nvtx_start(r),
                Start::Call(r) => self.call_start(r),
                Start::Work(r) => self.work_start(r),
            }
            self.trim();
        }
    }

    fn finish(mut self) -> Replayed {
        while !self.ends.is_empty() {
            self.end_next();
            self.trim();
        }
        Replayed {
            cycles: self.cycles,
            window: self.window,
            measured_window: self.measured_window,
            path: self.path,
            peak_points: self.points.peak,
            segments: self.segments,
        }
    }
}

fn widen(span: Option<(Ns, Ns)>, (s, e): (Ns, Ns)) -> (Ns, Ns) {
    span.map_or((s, e), |(a, b)| (a.min(s), b.max(e)))
}
