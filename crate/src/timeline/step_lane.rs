//! The forward-step lane: summary bins and a row-block index of the standard profile's steps.

use super::columns::{self, Grid, NameIndex};
use super::summary::{self, Blocks, Label, LaneBins, Summary};
use super::{
    Detail, KernelSource, LaneStep, LaneView, items_of, lane_steps_in_order, lane_steps_of,
    step_label,
};
use crate::model::rows::EventRows;
use crate::model::{Ns, NvtxRow, Strings, Trace};
use crate::profile::{Profile, Switches};
use crate::steps::names::StepParser;
use crate::steps::{Step, StepSink, StepsInOrder};

/// The forward-step lane: steps as the standard profile sees them (TP copies merged), from the
/// host part of the trace. Like a kernel lane it keeps summary bins and a row-block index (of
/// NVTX rows), not the steps: a view covering few rows reads their steps again
/// ([`KernelSource::steps_in_rows`]), a wider one is drawn from the bins. A long trace has
/// millions of steps; this stays the same size.
#[derive(Clone)]
pub struct StepLane {
    pub(super) summary: Summary<Label>,
    blocks: Blocks,
    pub(super) max_len: Ns,
}

/// Collects a [`StepLane`] step by step, in start order.
pub struct StepLaneBuilder {
    lane: StepLane,
}

impl StepSink for StepLaneBuilder {
    fn step(&mut self, s: &Step) {
        let lane = &mut self.lane;
        if lane.blocks.blocks.is_empty() {
            lane.summary.grid.origin = s.start;
        }
        lane.blocks.push(s.row, s.start, s.end);
        let summary = &mut lane.summary;
        let end = summary.fit(s.end);
        if end > s.start {
            summary.lanes[0].record(&summary.grid, s.start, end, step_label(s));
        }
        lane.max_len = lane.max_len.max(s.end.saturating_sub(s.start));
    }

    fn restart(&mut self) {
        self.lane = StepLane::empty();
    }
}

impl StepLaneBuilder {
    /// The lane; `None` without steps.
    pub fn finish(mut self) -> Option<StepLane> {
        let summary = &mut self.lane.summary;
        let grid = summary.grid;
        summary.lanes.iter_mut().for_each(|l| l.flush(&grid));
        (!self.lane.blocks.blocks.is_empty()).then_some(self.lane)
    }
}

/// The forward-step lane folded over the NVTX ranges as a scan hands them out (the page's host
/// side, as it reads them): the lane [`StepLane::of_rows`] would read, without reading the
/// ranges again. Rows out of start order void it (the pass then reads them).
pub struct StepLaneFold {
    sw: Switches,
    parser: StepParser,
    steps: Option<StepsInOrder>,
    lane: StepLaneBuilder,
}

impl Default for StepLaneFold {
    fn default() -> StepLaneFold {
        let sw = Profile::Standard.switches();
        StepLaneFold {
            parser: StepParser::new(&sw, None),
            steps: Some(StepsInOrder::new(&sw)),
            sw,
            lane: StepLane::builder(),
        }
    }
}

impl StepLaneFold {
    /// The next range, in start order (ties in table order); `strings` as the scan has them
    /// so far. `false` once the fold is void.
    pub fn range(&mut self, row: &NvtxRow, strings: &Strings) -> bool {
        let Some(steps) = &mut self.steps else {
            return false;
        };
        let lane = &mut self.lane;
        let names = (&self.parser, strings);
        if !steps.push(row, (&names, &self.sw), &mut |s| lane.step(&s)) {
            self.steps = None;
        }
        self.steps.is_some()
    }

    /// The lane (`Some(None)`: no steps), unless the fold was void.
    pub fn finish(self) -> Option<Option<StepLane>> {
        let mut lane = self.lane;
        self.steps?.finish(&mut |s| lane.step(&s));
        Some(lane.finish())
    }
}

impl StepLane {
    pub(super) fn of(trace: &Trace) -> Option<StepLane> {
        use crate::profile::Profile;
        use crate::steps;
        use crate::steps::names::StepNames;
        let sw = Profile::Standard.switches();
        let names = StepNames::parser(&trace.strings, &sw, None);
        let mut lane = StepLane::builder();
        steps::StepReader::new(&trace.nvtx, names, &sw).for_each_step(&mut lane);
        lane.finish()
    }

    /// The lane of the forward steps of `rows`' NVTX ranges, read in one pass (again, sorted
    /// whole, when they do not come in start order). A read error of `rows` is returned, not a
    /// short lane.
    pub fn of_rows(rows: &dyn EventRows) -> crate::error::Result<Option<StepLane>> {
        use crate::steps::StepSink;
        let mut lane = StepLane::builder();
        let strings = &rows.meta().strings;
        if !lane_steps_in_order(rows.ranges(), strings, &mut |s| lane.step(&s)) {
            lane.restart();
            lane_steps_of(rows.ranges(), strings, &mut |s| lane.step(&s));
        }
        rows.check()?;
        Ok(lane.finish())
    }

    fn empty() -> StepLane {
        let mut summary = Summary::<Label>::new(0);
        summary.lanes.push(LaneBins::default());
        StepLane {
            summary,
            blocks: Blocks::default(),
            max_len: 0,
        }
    }

    /// A lane built from the standard profile's steps (`detect::HostFacts::with_steps`) pushed in
    /// start order.
    pub fn builder() -> StepLaneBuilder {
        StepLaneBuilder {
            lane: StepLane::empty(),
        }
    }

    /// Heap bytes of the bins and the row-block index (fixed: [`summary::BINS`] bins, at most
    /// `MAX_BLOCKS` blocks).
    pub fn heap_bytes(&self) -> usize {
        let bins: usize = self.summary.lanes.iter().map(|l| l.bins.capacity()).sum();
        bins * std::mem::size_of::<summary::Bin<Label>>() + self.blocks.heap_bytes()
    }

    /// NVTX rows holding every step that may be within reach of `[a, b)`, with a block more on
    /// each side: the TP copies of a step read again together.
    pub(super) fn rows_near(&self, a: Ns, b: Ns) -> Vec<(i64, i64)> {
        self.blocks
            .rows_overlapping_widened(a.saturating_sub(self.max_len), b)
    }

    /// Steps of `rows` that may be within reach of `[a, b)`, as `(start, end, (label, row))`
    /// in start order: those starting before `b`, from the first that can still reach `a`.
    pub(super) fn read(
        &self,
        source: &dyn KernelSource,
        rows: &[(i64, i64)],
        (a, b): (Ns, Ns),
    ) -> crate::error::Result<Vec<LaneStep>> {
        let reach = a.saturating_sub(self.max_len);
        let mut steps = Vec::new();
        for &(first, last) in rows {
            source.steps_in_rows(first, last, &mut |s| {
                if s.start < b && s.start >= reach {
                    steps.push((s.start, s.end, (step_label(&s), s.row)));
                }
            })?;
        }
        let key = |s: &LaneStep| (s.0, s.1, s.2.1);
        if !steps.is_sorted_by_key(key) {
            steps.sort_unstable_by_key(key);
        }
        Ok(steps)
    }

    pub(super) fn view(
        &self,
        source: &dyn KernelSource,
        grid: &Grid,
        names: &mut NameIndex,
        detail: Detail,
    ) -> crate::error::Result<LaneView> {
        let rows = self.rows_near(grid.start, grid.end);
        let exact = detail.reads(rows.iter().map(|(f, l)| l - f + 1).sum());
        let mut items = Vec::new();
        let cols = if exact {
            let steps = self.read(source, &rows, (grid.start, grid.end))?;
            let evs = || steps.iter().map(|&(s, e, (l, _))| (s, e, l));
            items = items_of(evs(), grid, names);
            columns::exact(evs(), grid, names)
        } else {
            let bins = self.summary.lanes.first().map_or(&[][..], |l| &l.bins[..]);
            columns::from_bins(bins, &self.summary.grid, grid, names)
        };
        Ok(LaneView {
            items,
            ..LaneView::of_columns("forward steps".into(), "steps", cols)
        })
    }
}
