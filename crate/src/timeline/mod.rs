//! The GPU timeline at any zoom: per-lane, per-pixel-column aggregates (level of detail),
//! so millions of kernels become a few thousand numbers before anything reaches JavaScript.
//!
//! Lanes: one "forward steps" lane (NVTX steps, TP-deduplicated) then one lane per
//! (device, stream) holding what the GPU did there — kernels, CUDA-graph replays, copies and
//! memsets (`EventRows::gpu_work`), as nsys's timeline puts them on their stream. Each column
//! holds the fraction of its time covered by that work, the count, and the longest one's name;
//! device-idle columns (no work of any kind on the device) are flagged for shading. The
//! timeline is built once for every profile, so it counts all GPU work even where the
//! `trtllm-skill` profile's verdict counts kernels alone.
//!
//! The page cannot hold the tables, so a [`Timeline`] keeps only what one pass over the work
//! in start order leaves behind ([`TimelineBuilder`]): per-lane summary bins (a fixed number
//! per lane, see [`summary::BINS`]) and a row-block index per table. A view covering few rows
//! re-reads them from a [`KernelSource`] and is exact; a wider one is drawn from the bins (see
//! [`columns::from_bins`] for the approximation).

mod build;
pub mod columns;
mod device;
pub mod fold;
pub mod host;
mod source;
pub mod stack;
mod step_lane;
pub mod summary;
mod view;
mod work;

use serde::{Deserialize, Serialize};

pub use build::TimelineBuilder;
use columns::{Columns, Grid, NameIndex, mark_idle};
pub use device::{DeviceLanes, MarkedLane};
pub use host::HostIndex;
pub use source::{KernelSource, lane_steps_in_order, lane_steps_of};
pub use step_lane::{StepLane, StepLaneBuilder, StepLaneFold};
use summary::{BinGrid, Blocks, Label, LaneBins};
pub use view::{
    DEPTH_ROWS, Hit, ITEM_MIN_PX, Item, LaneView, Link, NAMED_DEPTHS, TimelineView, busy_digits,
    depth_row, digit_busy,
};

use crate::model::rows::{EventRows, KernelRow};
use crate::model::{HostTable, Ns, Trace, WorkTable};
use crate::steps::Step;
use work::WorkEvent;

pub use crate::model::OutOfOrder;

/// How far from a kernel its launch call is looked for (and the reverse), widening: 1 ms,
/// 100 ms, 10 s (a launch queued behind a long-running stream).
const LINK_REACH: [Ns; 3] = [1_000_000, 100_000_000, 10_000_000_000];

/// Most rows a view re-reads for exact detail; wider views are drawn from the summary.
pub const EXACT_ROWS: i64 = 200_000;

/// Most columns a view may ask for (a 8K-wide canvas).
pub const MAX_COLUMNS: u32 = 8192;

/// How a view is computed: `Auto` re-reads rows when at most [`EXACT_ROWS`] cover the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Auto,
    /// Always re-read the rows (tests, exports).
    Exact,
    /// Always use the summary bins.
    Summary,
}

impl Detail {
    /// Whether a view covering `rows` rows re-reads them (else it is drawn from the bins).
    fn reads(self, rows: i64) -> bool {
        match self {
            Detail::Auto => rows <= EXACT_ROWS,
            Detail::Exact => true,
            Detail::Summary => false,
        }
    }
}

/// The summary of one pass over the GPU work: views are computed on demand from it and a
/// [`KernelSource`]. Memory: `BINS` bins per lane plus at most `MAX_BLOCKS` row blocks per
/// GPU-work table.
#[derive(Serialize, Deserialize)]
pub struct Timeline {
    /// Given by the host part where the timeline is used ([`Timeline::with_step_lane`]).
    #[serde(skip)]
    steps: Option<StepLane>,
    /// Device lanes by (device, stream).
    lanes: Vec<KernelLane>,
    grid: BinGrid,
    /// The row-block index of each GPU-work table, by [`WorkTable::index`].
    blocks: [Blocks; 4],
    /// Whether lanes are per stream (else a device's work shares one lane, stream 0).
    streams: bool,
    extent: (Ns, Ns),
    /// The host tracks' index, scanned from the source on the first view.
    #[serde(skip)]
    host: std::cell::OnceCell<HostIndex>,
}

/// Row ranges of each GPU-work table (by [`WorkTable::index`]), disjoint and ascending.
type TableRows = [Vec<(i64, i64)>; 4];

/// One (device, stream) lane's summary.
#[derive(Serialize, Deserialize)]
struct KernelLane {
    label: String,
    device: u32,
    stream: u32,
    bins: LaneBins,
}

impl KernelLane {
    fn new(device: u32, stream: u32, streams: bool, bins: LaneBins) -> KernelLane {
        let label = if streams {
            format!("GPU {device} · stream {stream}")
        } else {
            format!("GPU {device}")
        };
        KernelLane {
            label,
            device,
            stream,
            bins,
        }
    }

    fn view(&self, columns: Columns) -> LaneView {
        LaneView {
            device: Some(self.device),
            stream: Some(self.stream),
            ..LaneView::of_columns(self.label.clone(), "kernels", columns)
        }
    }
}

/// A step read back from the source: `(start, end, (label, NVTX row))`.
type LaneStep = (Ns, Ns, (Label, i64));

impl Timeline {
    /// Indexes a loaded trace's GPU work through the same one-pass builder the page streams
    /// into.
    pub fn new(trace: &Trace) -> Timeline {
        let builder = TimelineBuilder::new(trace, trace.columns().kernel_streams);
        // In start order by construction, so no push is refused.
        builder.fed(trace.gpu_work()).unwrap_or_else(|b| b.finish())
    }

    /// Indexes the GPU work and the forward steps of `rows` (the page's timeline, over the
    /// file's rows): the steps' lane re-reads its steps by the rows the ranges came from. A read
    /// error of `rows` is returned, not a short timeline.
    pub fn of_rows_with_steps(rows: &dyn EventRows, label: &str) -> crate::error::Result<Timeline> {
        let timeline = Timeline::of_rows(rows, label)?;
        Ok(timeline.with_step_lane(StepLane::of_rows(rows)?))
    }

    /// Indexes the GPU work of `rows`, without the step lane. A read error of `rows` is
    /// returned, not a short timeline.
    pub fn of_rows(rows: &dyn EventRows, label: &str) -> crate::error::Result<Timeline> {
        let builder = TimelineBuilder::without_steps(rows.columns().kernel_streams);
        let timeline = builder
            .fed(rows.gpu_work())
            .map_err(|_| crate::error::Error::Internal {
                detail: format!("{label}: GPU work out of start order"),
            })?;
        rows.check()?;
        Ok(timeline)
    }

    /// The forward-step lane, for a timeline built again over the same trace.
    pub fn step_lane(&self) -> Option<&StepLane> {
        self.steps.as_ref()
    }

    /// The forward-step lane: a timeline built elsewhere (the page's kernel pass) gets its
    /// steps, and their names, from the trace it is shown with ([`StepLane::builder`]).
    pub fn with_step_lane(mut self, lane: Option<StepLane>) -> Timeline {
        self.steps = lane;
        self
    }

    /// First GPU operation's start to the last one's end.
    pub fn extent(&self) -> (Ns, Ns) {
        self.extent
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len() + usize::from(self.steps.is_some())
    }

    /// Heap bytes of the summary bins (constant per lane, whatever the kernel count).
    pub fn summary_bytes(&self) -> usize {
        self.lanes.len() * summary::BINS * std::mem::size_of::<summary::Bin>()
    }

    /// Heap bytes of the row-block indexes (at most `MAX_BLOCKS` blocks a table).
    pub fn index_bytes(&self) -> usize {
        self.blocks.iter().map(Blocks::heap_bytes).sum()
    }

    /// Per GPU-work table, the row ranges holding every row that overlaps `[a, b)`.
    fn rows_overlapping(&self, a: Ns, b: Ns) -> TableRows {
        std::array::from_fn(|i| self.blocks[i].rows_overlapping(a, b))
    }

    /// The lane of work on `(device, stream)`, if any.
    fn lane_index(&self, device: u32, stream: u32) -> Option<usize> {
        let key = (device, if self.streams { stream } else { 0 });
        self.lanes
            .binary_search_by_key(&key, |l| (l.device, l.stream))
            .ok()
    }

    /// Aggregates `[start, end)` into `columns` per lane: exact from re-read rows when at most
    /// [`EXACT_ROWS`] rows cover the view, else from the summary bins.
    pub fn view(
        &self,
        source: &dyn KernelSource,
        start: Ns,
        end: Ns,
        columns: u32,
    ) -> crate::error::Result<TimelineView> {
        self.view_with(source, start, end, columns, Detail::Auto)
    }

    /// [`Timeline::view`] with the level of detail chosen by the caller.
    pub fn view_with(
        &self,
        source: &dyn KernelSource,
        start: Ns,
        end: Ns,
        columns: u32,
        detail: Detail,
    ) -> crate::error::Result<TimelineView> {
        self.view_folded(source, (start, end), columns, detail, &[])
    }

    /// [`Timeline::view_with`] with the lane groups named in `folded` ([`fold`]) each folded
    /// into one lane.
    pub fn view_folded(
        &self,
        source: &dyn KernelSource,
        (start, end): (Ns, Ns),
        columns: u32,
        detail: Detail,
        folded: &[String],
    ) -> crate::error::Result<TimelineView> {
        let mut view = self.full_view(source, (start, end, columns), detail)?;
        let layout = fold::Layout::new(&self.lane_groups(self.host.get()), folded);
        view.lanes = layout.apply(std::mem::take(&mut view.lanes));
        Ok(view)
    }

    /// The collapsible group of each lane of a view (one key per lane, `""` for the step lane),
    /// the host lanes' when `host` was scanned.
    fn lane_groups(&self, host: Option<&HostIndex>) -> Vec<String> {
        let steps = self.steps.iter().map(|_| String::new());
        let hosts = host.into_iter().flat_map(HostIndex::groups);
        let kernels = self.lanes.iter().map(|l| fold::device_group(l.device));
        steps.chain(hosts).chain(kernels).collect()
    }

    /// Every lane of `[start, end)` in `columns`, none folded.
    fn full_view(
        &self,
        source: &dyn KernelSource,
        (start, end, columns): (Ns, Ns, u32),
        detail: Detail,
    ) -> crate::error::Result<TimelineView> {
        let grid = view_grid(start, end, columns);
        let mut names = NameIndex::new(source);
        let mut lanes: Vec<LaneView> = Vec::new();
        if let Some(steps) = &self.steps {
            lanes.push(steps.view(source, &grid, &mut names, detail)?);
        }
        let rows = self.rows_overlapping(grid.start, grid.end);
        let exact = detail.reads(row_count(&rows));
        // The host tracks' scan reads both tables whole: done once a view is narrow enough to
        // read its kernels again (a first, whole-trace view of a large trace stays quick).
        let host = if exact {
            Some(self.host(source)?)
        } else {
            self.host.get()
        };
        if let Some(host) = host {
            lanes.extend(host.views(source, &grid, &mut names)?);
        }
        let read = exact.then_some(&rows);
        lanes.extend(self.kernel_lanes(source, &grid, read, &mut names, &|_| true)?);
        mark_idle(&mut lanes);
        Ok(self.view_of(&grid, lanes, names))
    }

    /// The view of `lanes` over `grid`, naming what `names` indexed.
    fn view_of(&self, grid: &Grid, lanes: Vec<LaneView>, names: NameIndex) -> TimelineView {
        let classes = names
            .names
            .iter()
            .map(|n| class_of(n).to_string())
            .collect();
        TimelineView {
            start_ns: grid.start,
            end_ns: grid.end,
            columns: grid.columns,
            lanes,
            names: names.names,
            classes,
            origin_ns: self.extent.0,
            range_label: String::new(),
        }
    }

    /// The device lanes `keep` keeps, over `grid`: exact from the rows `read` (every GPU-work
    /// row overlapping the view) when given, else from the summary bins.
    fn kernel_lanes(
        &self,
        source: &dyn KernelSource,
        grid: &Grid,
        read: Option<&TableRows>,
        names: &mut NameIndex,
        keep: &dyn Fn(&KernelLane) -> bool,
    ) -> crate::error::Result<Vec<LaneView>> {
        let mut lanes = Vec::new();
        let Some(rows) = read else {
            for lane in self.lanes.iter().filter(|l| keep(l)) {
                let cols = columns::from_bins(&lane.bins.bins, &self.grid, grid, names);
                lanes.push(lane.view(cols));
            }
            return Ok(lanes);
        };
        let events = self.read_lanes(source, rows, grid.start, grid.end)?;
        for (lane, evs) in self.lanes.iter().zip(events).filter(|(l, _)| keep(l)) {
            let evs = || {
                evs.iter()
                    .map(|ev| (ev.start, ev.end, Label::from(ev.label)))
            };
            let items = items_of(evs(), grid, names);
            let mut view = lane.view(columns::exact(evs(), grid, names));
            view.items = items;
            lanes.push(view);
        }
        Ok(lanes)
    }

    /// The host tracks' index, scanned from `source` the first time (views read it once they
    /// read kernel rows again; hovers only when a view has).
    pub fn host(&self, source: &dyn KernelSource) -> crate::error::Result<&HostIndex> {
        if let Some(index) = self.host.get() {
            return Ok(index);
        }
        let index = HostIndex::scan(source)?;
        Ok(self.host.get_or_init(|| index))
    }

    /// Rows a view of `[start, end)` would re-read for exact detail (it does when at most
    /// [`EXACT_ROWS`]).
    pub fn rows_covering(&self, start: Ns, end: Ns) -> i64 {
        let grid = view_grid(start, end, 1);
        row_count(&self.rows_overlapping(grid.start, grid.end))
    }

    /// Per column of a view of `[start, end)`, the largest possible difference between the
    /// summary's busy fraction and the exact one on a kernel lane (see
    /// [`columns::busy_error_bound`]).
    pub fn busy_error_bounds(&self, start: Ns, end: Ns, columns: u32) -> Vec<f64> {
        error_bounds(&self.grid, view_grid(start, end, columns))
    }

    /// [`Timeline::busy_error_bounds`] on the forward-step lane (its bins are its own).
    pub fn step_busy_error_bounds(&self, start: Ns, end: Ns, columns: u32) -> Vec<f64> {
        let grid = view_grid(start, end, columns);
        match &self.steps {
            Some(steps) => error_bounds(&steps.summary.grid, grid),
            None => vec![0.0; grid.columns as usize],
        }
    }

    /// Each device lane's events overlapping `[a, b)` (or within it, for a zero-length one),
    /// read from `rows` of every GPU-work table and put in start order (ties by table, then
    /// row), as the exact aggregation and hit testing expect.
    fn read_lanes(
        &self,
        source: &dyn KernelSource,
        rows: &TableRows,
        a: Ns,
        b: Ns,
    ) -> crate::error::Result<Vec<Vec<WorkEvent>>> {
        let mut lanes: Vec<Vec<WorkEvent>> = vec![Vec::new(); self.lanes.len()];
        let mut visit = |row: KernelRow| {
            if row.start >= b || row.end.max(row.start) < a {
                return;
            }
            if let Some(i) = self.lane_index(row.device, row.stream) {
                lanes[i].push(WorkEvent::of(&row));
            }
        };
        for (table, ranges) in WorkTable::ALL.into_iter().zip(rows) {
            for &(first, last) in ranges {
                source.work_in_rows(table, first, last, &mut visit)?;
            }
        }
        for lane in &mut lanes {
            if !lane.is_sorted_by_key(WorkEvent::order_key) {
                lane.sort_unstable_by_key(WorkEvent::order_key);
            }
        }
        Ok(lanes)
    }

    /// The event of `lane` at time `t` (or within `slack` of it), preferring one that contains
    /// `t`; kernels are re-read from `source`.
    pub fn hit(
        &self,
        source: &dyn KernelSource,
        lane: u32,
        t: Ns,
        slack: Ns,
    ) -> crate::error::Result<Option<Hit>> {
        self.hit_folded(source, (lane, None), (t, slack), &[])
    }

    /// [`Timeline::hit`] in a view whose groups named in `folded` are folded: on a folded lane,
    /// the event of the first of its lanes that has one; lanes (the hit's and its link's) are
    /// the view's. `row`: the depth row of an NVTX lane under the pointer ([`depth_row`]; the
    /// page reads the rows' places from the core's layout, `plot::lane_layout`), whose range is
    /// the hit rather than the innermost one at `t`; `None` on other lanes.
    pub fn hit_folded(
        &self,
        source: &dyn KernelSource,
        (lane, row): (u32, Option<u8>),
        (t, slack): (Ns, Ns),
        folded: &[String],
    ) -> crate::error::Result<Option<Hit>> {
        let layout = fold::Layout::new(&self.lane_groups(self.host.get()), folded);
        let members = layout.lanes_of(lane as usize);
        // A folded group is drawn in one row: its rows are not the members' depth rows.
        let row = row.filter(|_| members.len() == 1);
        for full in members {
            if let Some(mut hit) = self.full_hit(source, (full as u32, row, t, slack))? {
                hit.lane = lane;
                if let Some(link) = &mut hit.link {
                    link.lane = link
                        .lane
                        .and_then(|l| layout.row_of(l as usize))
                        .map(|r| r as u32);
                }
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// [`Timeline::hit`] on lane `lane` of the full list (none folded), at `t` within `slack`,
    /// in depth row `row` of an NVTX lane.
    fn full_hit(
        &self,
        source: &dyn KernelSource,
        (lane, row, t, slack): (u32, Option<u8>, Ns, Ns),
    ) -> crate::error::Result<Option<Hit>> {
        let slack = slack.max(0);
        let (a, b) = (t.saturating_sub(slack), t.saturating_add(slack));
        let steps = usize::from(self.steps.is_some());
        let host = self.host.get();
        let host_lanes = host.map_or(0, HostIndex::lane_count);
        if let Some((host, i)) = host.zip((lane as usize).checked_sub(steps))
            && i < host_lanes
        {
            return self.host_hit(source, host, (lane, i, row), (t, slack));
        }
        // Lanes: the step lane, the host lanes, then the kernel lanes.
        let lane_index = if (lane as usize) < steps {
            lane as usize
        } else {
            lane as usize - host_lanes
        };
        let (found, device, stream) = match lane_index.checked_sub(steps) {
            None => {
                let Some(s) = &self.steps else {
                    return Ok(None);
                };
                let steps = s.read(source, &s.rows_near(a, b), (a, b))?;
                let found = closest(steps.into_iter(), t, slack);
                let named =
                    found.map(|(s, e, (label, _))| Ok((s, e, hit_name(source, label)?, None)));
                (named.transpose()?, None, None)
            }
            Some(i) => {
                let Some(l) = self.lanes.get(i) else {
                    return Ok(None);
                };
                let rows = self.rows_overlapping(a.saturating_sub(1), b);
                let events = self.read_lanes(source, &rows, a, b)?;
                let evs = events.into_iter().nth(i).unwrap_or_default();
                let found = closest(evs.into_iter().map(|ev| (ev.start, ev.end, ev)), t, slack)
                    .map(|(s, e, ev)| (s, e, ev.label.text(source), Some(ev)));
                (found, Some(l.device), Some(l.stream))
            }
        };
        let Some((start_ns, end_ns, name, work)) = found else {
            return Ok(None);
        };
        let link = match (work, host) {
            (Some(ev), Some(host)) => self.launch_of(source, host, steps, &ev)?,
            _ => None,
        };
        Ok(Some(Hit {
            lane,
            name,
            start_ns,
            end_ns,
            duration_us: (end_ns - start_ns) as f64 / 1000.0,
            device,
            stream,
            work: work.map(|ev| ev.label.kind().to_string()),
            track: None,
            link,
        }))
    }

    /// The CUDA API call or NVTX range of host lane `i` (view lane `lane`, depth row `row`) at
    /// `t`, a launch call with its kernel.
    fn host_hit(
        &self,
        source: &dyn KernelSource,
        host: &HostIndex,
        (lane, i, row): (u32, usize, Option<u8>),
        (t, slack): (Ns, Ns),
    ) -> crate::error::Result<Option<Hit>> {
        let Some(found) = host.hit(source, i, (t, slack), row)? else {
            return Ok(None);
        };
        let link = match found.table {
            HostTable::Api => self.launched_work(source, host.lane_count(), &found)?,
            HostTable::Nvtx => None,
        };
        let r = found.row;
        Ok(Some(Hit {
            lane,
            name: r.name,
            start_ns: r.span.start,
            end_ns: r.span.end,
            duration_us: (r.span.end - r.span.start) as f64 / 1000.0,
            device: None,
            stream: None,
            work: None,
            track: Some(found.label),
            link,
        }))
    }

    /// The launch call of GPU work `ev` (a kernel, a graph replay's `cudaGraphLaunch`, a
    /// copy's `cudaMemcpyAsync`…): searched among the calls of ever wider spans before it
    /// ([`LINK_REACH`]).
    fn launch_of(
        &self,
        source: &dyn KernelSource,
        host: &HostIndex,
        steps: usize,
        ev: &WorkEvent,
    ) -> crate::error::Result<Option<Link>> {
        let Some(key) = source.work_key(ev.table, ev.row)? else {
            return Ok(None);
        };
        let start = ev.start;
        for reach in LINK_REACH {
            let span = (start.saturating_sub(reach), start.saturating_add(1));
            for (first, last) in host.api_rows(span) {
                let Some(call) = source.call_with(first, last, key)? else {
                    continue;
                };
                let mut found = None;
                source.host_rows(HostTable::Api, call, call, &mut |r| found = Some(r))?;
                return Ok(found.map(|r| {
                    let lane = host.lane_of(r.span.thread, HostTable::Api);
                    Link {
                        kind: "api".into(),
                        place: host::lane_label(r.span.thread, HostTable::Api),
                        name: r.name,
                        start_ns: r.span.start,
                        end_ns: r.span.end,
                        lane: lane.map(|i| (steps + i) as u32),
                    }
                }));
            }
        }
        Ok(None)
    }

    /// The GPU work launched by the CUDA API call `call` (a host hit): searched in every
    /// GPU-work table among the rows of ever wider spans after the call.
    fn launched_work(
        &self,
        source: &dyn KernelSource,
        host_lanes: usize,
        call: &host::HostHit,
    ) -> crate::error::Result<Option<Link>> {
        let Some(key) = source.call_key(call.row.span.row)? else {
            return Ok(None);
        };
        let start = call.row.span.start;
        for reach in LINK_REACH {
            let rows = self.rows_overlapping(start, start.saturating_add(reach));
            for (table, ranges) in WorkTable::ALL.into_iter().zip(rows) {
                for (first, last) in ranges {
                    let Some(row) = source.work_with(table, first, last, key)? else {
                        continue;
                    };
                    let mut found = None;
                    source.work_in_rows(table, row, row, &mut |r| found = Some(r))?;
                    return Ok(found.map(|r| self.work_link(source, host_lanes, &r)));
                }
            }
        }
        Ok(None)
    }

    /// The link to GPU work `row` from its launch call: its lane (after `host_lanes` host
    /// lanes) and label.
    fn work_link(&self, source: &dyn KernelSource, host_lanes: usize, row: &KernelRow) -> Link {
        let steps = usize::from(self.steps.is_some());
        let lane = self.lane_index(row.device, row.stream);
        Link {
            kind: "kernels".into(),
            place: lane.map_or_else(String::new, |i| self.lanes[i].label.clone()),
            name: work::WorkLabel::of(row).text(source),
            start_ns: row.start,
            end_ns: row.end,
            lane: lane.map(|i| (steps + host_lanes + i) as u32),
        }
    }
}

/// Per column of `view`, the summary's largest busy error over bins of `bins`.
fn error_bounds(bins: &BinGrid, view: Grid) -> Vec<f64> {
    (0..view.columns as usize)
        .map(|c| {
            let (cs, ce) = view.bounds(c);
            columns::busy_error_bound(bins, cs, ce)
        })
        .collect()
}

/// A lane's events `(start, end, name)` (start order) overlapping the view, one by one, when
/// there are at most one per [`ITEM_MIN_PX`] columns; else none (the lane is drawn from its
/// columns).
fn items_of<K: Copy + Into<Label>>(
    events: impl Iterator<Item = (Ns, Ns, K)>,
    grid: &Grid,
    names: &mut NameIndex,
) -> Vec<Item> {
    let most = (grid.columns / ITEM_MIN_PX).max(1) as usize;
    let inside: Vec<(Ns, Ns, K)> = events
        .filter(|&(s, e, _)| s < grid.end && e.max(s + 1) > grid.start)
        .take(most + 1)
        .collect();
    if inside.len() > most {
        return Vec::new();
    }
    inside
        .into_iter()
        .map(|(start_ns, end_ns, name)| Item {
            start_ns,
            end_ns,
            name: names.index(name),
            depth: 0,
        })
        .collect()
}

/// A name's class as the page colours it: other work than a kernel by its kind, a kernel by
/// its short name (`model::Work::class`, the rule Root cause's roll-up by class uses too).
fn class_of(name: &str) -> &'static str {
    crate::model::Work::of_name(name).class(name).key()
}

/// The view's column grid, with `columns` clamped and an empty range widened to 1 ns.
fn view_grid(start: Ns, end: Ns, columns: u32) -> Grid {
    Grid {
        start,
        end: end.max(start.saturating_add(1)),
        columns: columns.clamp(1, MAX_COLUMNS),
    }
}

/// Rows spanned by disjoint row ranges of every table.
fn row_count(rows: &TableRows) -> i64 {
    rows.iter().flatten().map(|(f, l)| l - f + 1).sum()
}

/// A hovered column's name.
fn hit_name(source: &dyn KernelSource, label: Label) -> crate::error::Result<String> {
    Ok(match label {
        Label::Name(id) => source.name(id),
        Label::Work(work) => work.text(source),
        Label::Index(_) => String::new(),
    })
}

/// What the step lane labels a step by.
fn step_label(s: &Step) -> Label {
    Label::Name(s.name_id)
}

/// The event nearest `t` among those (in start order) starting before `t + slack`: distance 0
/// when it contains `t`; on a tie the later one wins (the one drawn on top).
fn closest<K: Copy>(
    events: impl Iterator<Item = (Ns, Ns, K)>,
    t: Ns,
    slack: Ns,
) -> Option<(Ns, Ns, K)> {
    let mut best: Option<(Ns, (Ns, Ns, K))> = None;
    for (s, e, name) in events.take_while(|ev| ev.0 < t.saturating_add(slack)) {
        let distance = if t < s {
            s - t
        } else if t >= e {
            t - e
        } else {
            0
        };
        if distance <= slack && best.is_none_or(|(d, _)| distance <= d) {
            best = Some((distance, (s, e, name)));
        }
    }
    best.map(|(_, ev)| ev)
}

#[cfg(test)]
mod tests;
