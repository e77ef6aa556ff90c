//! The host tracks: per process → thread, its CUDA API calls and its NVTX ranges (nested by
//! depth), above the GPU lanes.
//!
//! Bounded like the kernel lanes: one scan of each table's spans (`rowid`, start, end, thread —
//! [`KernelSource::host_scan`]) leaves the threads seen and a row-block index ([`Blocks`], at
//! most `MAX_BLOCKS` blocks; the runtime table is in a few sorted runs, so blocks are looked up
//! in any order). A view covering at most [`HOST_EXACT_ROWS`] rows of a table reads them again by
//! `rowid`, named ([`KernelSource::host_rows`]); a wider one draws the lanes empty, with a note
//! to zoom in.
//!
//! An NVTX lane is laid out with one row per nesting depth ([`super::depth_row`]) for the
//! deepest nesting on its thread over the whole trace, counted in the same scan (`Nesting`):
//! a lane keeps its height while the view pans or zooms (one laid out by the depth in the
//! view would jump as deeper ranges come and go under the pointer). A view holding ranges
//! deeper than the scan counted (rows out of start order on a thread) lays the lane out for
//! those.

use std::collections::BTreeMap;

use super::columns::{self, Grid, NameIndex};
use super::summary::{Blocks, Label};
use super::{ITEM_MIN_PX, Item, KernelSource, LaneView};
use crate::error::Result;
use crate::model::{HostRow, HostTable, Ns};

/// Most rows of one host table a view reads again; wider views draw the host lanes empty.
pub const HOST_EXACT_ROWS: i64 = 50_000;

/// Most host lanes kept (the threads with the most rows): a lane per thread and table.
pub const MAX_HOST_LANES: usize = 48;

/// One thread's calls or ranges.
#[derive(Debug, Clone)]
struct HostLane {
    table: HostTable,
    /// `globalTid` as exported.
    thread: i64,
    label: String,
    /// Nesting levels of the thread's NVTX ranges over the whole trace (0 for API calls).
    depths: u8,
}

/// What the scan leaves: the lanes and each table's row-block index.
pub struct HostIndex {
    lanes: Vec<HostLane>,
    api: Blocks,
    nvtx: Blocks,
}

/// A call or range under the pointer: its row, its table and its lane's label.
pub struct HostHit {
    pub row: HostRow,
    pub table: HostTable,
    pub label: String,
}

/// The rows of one table within reach of a view, by thread, in start order.
type ByThread = BTreeMap<i64, Vec<HostRow>>;

impl HostIndex {
    /// Scans both tables' spans from `source`.
    pub fn scan(source: &dyn KernelSource) -> Result<HostIndex> {
        let mut rows: BTreeMap<(i64, HostTable), u64> = BTreeMap::new();
        let mut blocks = [Blocks::default(), Blocks::default()];
        let mut nesting: BTreeMap<i64, Nesting> = BTreeMap::new();
        for (table, blocks) in [HostTable::Api, HostTable::Nvtx]
            .into_iter()
            .zip(&mut blocks)
        {
            source.host_scan(table, &mut |span| {
                blocks.push(span.row, span.start, span.end.max(span.start));
                *rows.entry((span.thread, table)).or_default() += 1;
                if table == HostTable::Nvtx {
                    nesting
                        .entry(span.thread)
                        .or_default()
                        .push(span.start, span.end);
                }
            })?;
        }
        let mut kept: Vec<((i64, HostTable), u64)> = rows.into_iter().collect();
        kept.sort_by_key(|&(key, n)| (std::cmp::Reverse(n), key));
        kept.truncate(MAX_HOST_LANES);
        kept.sort_by_key(|&((thread, table), _)| (process_of(thread), thread, table));
        let lanes = kept
            .into_iter()
            .map(|((thread, table), _)| HostLane {
                table,
                thread,
                label: lane_label(thread, table),
                depths: match table {
                    HostTable::Api => 0,
                    HostTable::Nvtx => nesting.get(&thread).map_or(1, |n| n.levels),
                },
            })
            .collect();
        let [api, nvtx] = blocks;
        Ok(HostIndex { lanes, api, nvtx })
    }

    /// Each lane's collapsible group: its process ([`super::fold::process_group`]).
    pub fn groups(&self) -> impl Iterator<Item = String> + '_ {
        self.lanes
            .iter()
            .map(|l| super::fold::process_group(process_of(l.thread)))
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// The index among the host lanes of `thread`'s lane of `table`, if kept.
    pub fn lane_of(&self, thread: i64, table: HostTable) -> Option<usize> {
        self.lanes
            .iter()
            .position(|l| l.thread == thread && l.table == table)
    }

    /// Row ranges of the CUDA API table holding every call overlapping `[a, b)`.
    pub fn api_rows(&self, (a, b): (Ns, Ns)) -> Vec<(i64, i64)> {
        self.api.rows_overlapping_any_order(a, b)
    }

    /// Heap bytes of the index (bounded: lanes and at most `MAX_BLOCKS` blocks a table).
    pub fn heap_bytes(&self) -> usize {
        self.api.heap_bytes()
            + self.nvtx.heap_bytes()
            + self.lanes.capacity() * std::mem::size_of::<HostLane>()
    }

    fn blocks(&self, table: HostTable) -> &Blocks {
        match table {
            HostTable::Api => &self.api,
            HostTable::Nvtx => &self.nvtx,
        }
    }

    /// The rows of `table` overlapping `[a, b)` by thread, in start order; `None` when more
    /// than [`HOST_EXACT_ROWS`] rows would be read.
    fn read(
        &self,
        source: &dyn KernelSource,
        table: HostTable,
        (a, b): (Ns, Ns),
    ) -> Result<Option<ByThread>> {
        let rows = self.blocks(table).rows_overlapping_any_order(a, b);
        if rows.iter().map(|(f, l)| l - f + 1).sum::<i64>() > HOST_EXACT_ROWS {
            return Ok(None);
        }
        let mut by: ByThread = BTreeMap::new();
        for (first, last) in rows {
            source.host_rows(table, first, last, &mut |r| {
                let s = &r.span;
                if s.start < b && s.end.max(s.start + 1) > a {
                    by.entry(s.thread).or_default().push(r);
                }
            })?;
        }
        for rows in by.values_mut() {
            rows.sort_by_key(|r| (r.span.start, r.span.row));
        }
        Ok(Some(by))
    }

    /// Every host lane's view of `grid`.
    pub fn views(
        &self,
        source: &dyn KernelSource,
        grid: &Grid,
        names: &mut NameIndex,
    ) -> Result<Vec<LaneView>> {
        let mut read: BTreeMap<HostTable, Option<ByThread>> = BTreeMap::new();
        for table in [HostTable::Api, HostTable::Nvtx] {
            if self.lanes.iter().any(|l| l.table == table) {
                read.insert(table, self.read(source, table, (grid.start, grid.end))?);
            }
        }
        Ok(self
            .lanes
            .iter()
            .map(|lane| {
                let rows = read.get(&lane.table).and_then(Option::as_ref);
                lane_view(lane, rows.map(|by| by.get(&lane.thread)), grid, names)
            })
            .collect())
    }

    /// The call or range of host lane `i` at `t` (within `slack`): on an NVTX lane with `row`
    /// (the depth row under the pointer, [`super::depth_row`]) the range drawn in that row, else
    /// the innermost.
    pub fn hit(
        &self,
        source: &dyn KernelSource,
        i: usize,
        (t, slack): (Ns, Ns),
        row: Option<u8>,
    ) -> Result<Option<HostHit>> {
        let Some(lane) = self.lanes.get(i) else {
            return Ok(None);
        };
        let (a, b) = (t.saturating_sub(slack), t.saturating_add(slack));
        let Some(mut by) = self.read(source, lane.table, (a.saturating_sub(1), b))? else {
            return Ok(None);
        };
        let mut rows = by.remove(&lane.thread).unwrap_or_default();
        // A range's depth counts the ranges open at its start, which overlap the read span too.
        let depth = depths(rows.iter().map(|r| (r.span.start, r.span.end)));
        let row = row.filter(|_| lane.table == HostTable::Nvtx);
        // In start order, so of ranges containing `t` the innermost (the latest) wins.
        let events = rows
            .iter()
            .zip(depth)
            .enumerate()
            .filter(|(_, (_, d))| row.is_none_or(|r| super::depth_row(*d) == r))
            .map(|(i, (r, _))| (r.span.start, r.span.end, i));
        let found = super::closest(events, t, slack).map(|(_, _, i)| i);
        Ok(found.map(|i| HostHit {
            row: rows.swap_remove(i),
            table: lane.table,
            label: lane.label.clone(),
        }))
    }
}

/// One host lane's view: columns and items from its rows when they were read, else empty with
/// a note.
fn lane_view(
    lane: &HostLane,
    rows: Option<Option<&Vec<HostRow>>>,
    grid: &Grid,
    names: &mut NameIndex,
) -> LaneView {
    let n = grid.columns as usize;
    let kind = match lane.table {
        HostTable::Api => "api",
        HostTable::Nvtx => "nvtx",
    };
    let empty = super::columns::Columns {
        busy: vec![0.0; n],
        count: vec![0; n],
        top: vec![-1; n],
    };
    let mut view = LaneView::of_columns(lane.label.clone(), kind, empty);
    view.thread = Some(lane.thread.to_string());
    let Some(rows) = rows else {
        view.note = "zoom in to see its rows".into();
        return view;
    };
    let rows: &[HostRow] = rows.map_or(&[], Vec::as_slice);
    let ids: Vec<i32> = rows.iter().map(|r| names.index_text(&r.name)).collect();
    let evs = || {
        rows.iter()
            .zip(&ids)
            .map(|(r, &id)| (r.span.start, r.span.end, Label::Index(id)))
    };
    let cols = columns::exact(evs(), grid, names);
    view.busy = cols.busy;
    view.count = cols.count;
    view.top = cols.top;
    view.depths = lane.depths;
    let depth = depths(rows.iter().map(|r| (r.span.start, r.span.end)));
    if rows.len() > (grid.columns / ITEM_MIN_PX).max(1) as usize {
        if lane.table == HostTable::Nvtx && lane.depths >= 2 {
            view.depth_busy = busy_per_depth_row(lane.depths, evs().zip(&depth), grid, names);
        }
    } else {
        let deepest = depth.iter().max().map_or(0, |&d| d.saturating_add(1));
        if lane.table == HostTable::Nvtx {
            view.depths = view.depths.max(deepest);
        }
        view.items = rows
            .iter()
            .zip(&ids)
            .zip(depth)
            .map(|((r, &name), depth)| Item {
                start_ns: r.span.start,
                end_ns: r.span.end,
                name,
                depth,
            })
            .collect();
    }
    view
}

/// Each depth row's busy columns ([`super::busy_digits`]) of a lane laid out for `depths` levels,
/// from its events with their depths.
fn busy_per_depth_row<'a>(
    depths: u8,
    events: impl Iterator<Item = ((Ns, Ns, Label), &'a u8)> + Clone,
    grid: &Grid,
    names: &mut NameIndex,
) -> Vec<String> {
    (0..=super::depth_row(depths - 1))
        .map(|row| {
            let in_row = events
                .clone()
                .filter(|(_, d)| super::depth_row(**d) == row)
                .map(|(ev, _)| ev);
            super::busy_digits(&columns::exact(in_row, grid, names).busy)
        })
        .collect()
}

/// The nesting levels of one thread's ranges, counted as they are scanned in start order (as
/// exports list them on a thread): the ranges still open (their ends, innermost last) and the
/// most seen open at once. Memory: one end per level open.
#[derive(Debug, Default)]
struct Nesting {
    open: Vec<Ns>,
    levels: u8,
}

impl Nesting {
    fn push(&mut self, start: Ns, end: Ns) {
        while self.open.last().is_some_and(|&e| e <= start) {
            self.open.pop();
        }
        // Past 255 levels the count saturates (lanes cap their rows far below).
        if self.open.len() < usize::from(u8::MAX) {
            self.open.push(end.max(start));
        }
        self.levels = self
            .levels
            .max(u8::try_from(self.open.len()).unwrap_or(u8::MAX));
    }
}

/// The nesting depth of each range (in start order) among those before it on its thread: 0 for
/// an outermost one.
fn depths(spans: impl Iterator<Item = (Ns, Ns)>) -> Vec<u8> {
    let mut open: Vec<Ns> = Vec::new();
    spans
        .map(|(s, e)| {
            while open.last().is_some_and(|&end| end <= s) {
                open.pop();
            }
            let depth = u8::try_from(open.len()).unwrap_or(u8::MAX);
            open.push(e.max(s));
            depth
        })
        .collect()
}

/// nsys packs the process id above bit 24 of `globalTid` and the thread id below it.
pub fn process_of(global_tid: i64) -> i64 {
    (global_tid >> 24) & 0xFF_FFFF
}

/// A host lane's label: `pid/tid` and the table.
pub fn lane_label(global_tid: i64, table: HostTable) -> String {
    let tid = global_tid & 0xFF_FFFF;
    let what = match table {
        HostTable::Api => "CUDA API",
        HostTable::Nvtx => "NVTX",
    };
    format!("{}/{tid} {what}", process_of(global_tid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_ranges_get_their_depth() {
        let spans = [(0, 100), (10, 50), (20, 30), (30, 40), (60, 90), (200, 300)];
        assert_eq!(depths(spans.into_iter()), vec![0, 1, 2, 2, 1, 0]);
    }

    #[test]
    fn global_thread_ids_split_into_process_and_thread() {
        let gtid = (288_230_376_151_711_744 | (1234 << 24)) + 5678;
        assert_eq!(process_of(gtid), 1234);
        assert_eq!(lane_label(gtid, HostTable::Api), "1234/5678 CUDA API");
    }
}
