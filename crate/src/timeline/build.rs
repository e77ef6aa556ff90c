//! Building a [`Timeline`] in one pass over GPU work in start order, in memory bounded by the
//! number of lanes (not rows), so the page can build it while streaming SQLite rows.

use std::collections::BTreeMap;

use super::summary::{Blocks, LaneBins, Summary};
use super::{KernelLane, OutOfOrder, StepLane, Timeline};
use crate::model::rows::KernelRow;
use crate::model::{Ns, StartOrder, Trace, WorkTable};

/// Feeds a [`Timeline`] one row of GPU work at a time (kernels, graph replays, copies,
/// memsets, as `EventRows::gpu_work` merges them): `new` with the host part of the trace (NVTX
/// steps and names), `push` every row in non-decreasing start, then `finish`. One order over
/// every table, because a lane's running union and the grid (its origin the first row's start,
/// growing only to the right) need the rows of all tables in start order.
pub struct TimelineBuilder {
    steps: Option<StepLane>,
    /// Whether lanes are per stream (the stream column was read) or per device only.
    streams: bool,
    /// (device, stream) → index into `summary.lanes`.
    lanes: BTreeMap<(u32, u32), usize>,
    /// The last lane looked up: consecutive kernels mostly share one.
    recent: Option<((u32, u32), usize)>,
    /// The grid's origin is the first row's start, set by the first push.
    summary: Summary,
    /// Per GPU-work table ([`WorkTable::index`]).
    blocks: [Blocks; 4],
    /// Whether a row was pushed.
    started: bool,
    order: StartOrder,
    max_end: Ns,
}

impl TimelineBuilder {
    /// Starts a timeline for `host` (its NVTX ranges give the forward-step lane). `streams`:
    /// whether kernels carry their stream (lanes are then labelled per stream).
    pub fn new(host: &Trace, streams: bool) -> TimelineBuilder {
        TimelineBuilder {
            steps: StepLane::of(host),
            ..TimelineBuilder::without_steps(streams)
        }
    }

    /// Starts a timeline without the forward-step lane (the page's kernel pass: the other
    /// worker adds it, [`Timeline::with_step_lane`]).
    pub fn without_steps(streams: bool) -> TimelineBuilder {
        TimelineBuilder {
            steps: None,
            streams,
            lanes: BTreeMap::new(),
            recent: None,
            summary: Summary::new(0),
            blocks: Default::default(),
            started: false,
            order: StartOrder::default(),
            max_end: Ns::MIN,
        }
    }

    /// Adds the next row of GPU work (its table is its `work`'s); one starting before the
    /// previous one is refused (the caller falls back to loading and sorting the table) and
    /// leaves the builder unchanged.
    pub fn push(&mut self, ev: KernelRow) -> Result<(), OutOfOrder> {
        self.order.check(&ev)?;
        if !self.started {
            self.summary.grid.origin = ev.start;
            self.started = true;
        }
        self.max_end = self.max_end.max(ev.end);
        self.blocks[WorkTable::of(ev.work).index()].push(ev.row, ev.start, ev.end);
        let stream = if self.streams { ev.stream } else { 0 };
        let lane = self.lane_of(ev.device, stream);
        let summary = &mut self.summary;
        let end = summary.fit(ev.end);
        if end > ev.start {
            summary.lanes[lane].record(&summary.grid, ev.start, end, ev.short_name);
        }
        Ok(())
    }

    /// Pushes every row of `rows` (in start order) and finishes; a row out of order gives the
    /// builder back, the rows before it pushed.
    pub fn fed(
        mut self,
        rows: impl Iterator<Item = KernelRow>,
    ) -> Result<Timeline, Box<TimelineBuilder>> {
        for row in rows {
            if self.push(row).is_err() {
                return Err(Box::new(self));
            }
        }
        Ok(self.finish())
    }

    /// The index of the lane of `(device, stream)`, created on first sight.
    fn lane_of(&mut self, device: u32, stream: u32) -> usize {
        let key = (device, stream);
        if let Some((k, i)) = self.recent
            && k == key
        {
            return i;
        }
        let next = self.lanes.len();
        let i = *self.lanes.entry(key).or_insert(next);
        if i == next {
            self.summary.lanes.push(LaneBins::default());
        }
        self.recent = Some((key, i));
        i
    }

    /// The finished timeline: lanes ordered by (device, stream) after the step lane.
    pub fn finish(self) -> Timeline {
        let mut summary = self.summary;
        let grid = summary.grid;
        summary.lanes.iter_mut().for_each(|l| l.flush(&grid));
        let mut bins: Vec<Option<LaneBins>> = summary.lanes.into_iter().map(Some).collect();
        let lanes = self
            .lanes
            .into_iter()
            .filter_map(|((device, stream), i)| {
                let bins = bins.get_mut(i)?.take()?;
                Some(KernelLane::new(device, stream, self.streams, bins))
            })
            .collect();
        let extent = if self.started {
            (grid.origin, self.max_end)
        } else {
            (0, 0)
        };
        Timeline {
            steps: self.steps,
            lanes,
            grid,
            blocks: self.blocks,
            streams: self.streams,
            extent,
            host: std::cell::OnceCell::new(),
        }
    }
}
