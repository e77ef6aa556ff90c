//! One device's lanes of a trace, alone: what the ranks timeline ([`super::stack`]) shows of
//! each rank's file — its device's GPU work from the same summary and re-reads as the whole
//! timeline, and above it a lane of events the caller holds (the rank's collective kernels),
//! never the file's host or step lanes (a rank is its device).

use super::columns::{self, Grid, NameIndex, mark_idle};
use super::summary::Label;
use super::{Detail, KernelSource, LaneView, Timeline, TimelineView, fold, items_of, row_count};
use crate::model::Ns;

/// What [`Timeline::device_view`] shows of a trace.
pub struct DeviceLanes<'a> {
    pub device: u32,
    /// One lane per stream; else the device's streams folded into one lane (a click on its
    /// label opens it, as on the whole timeline).
    pub streams: bool,
    /// A lane of the caller's events, above the device's lanes.
    pub marked: Option<MarkedLane<'a>>,
}

/// A lane of events the caller holds, on the trace's clock.
pub struct MarkedLane<'a> {
    pub label: String,
    /// The lane's kind (`LaneView::kind`), which decides its colour.
    pub kind: &'a str,
    /// `(start, end, name)` in start order, `name` a place in `names`.
    pub events: &'a [(Ns, Ns, u32)],
    pub names: &'a [String],
}

impl Timeline {
    /// `what.device`'s lanes over `[start, end)` in `columns` columns: its stream lanes (folded
    /// into one unless `what.streams`), exact or from the bins as [`Timeline::view`] decides,
    /// GPU-idle columns shaded; the marked lane first. No lane when the trace has no work on
    /// the device and nothing is marked.
    pub fn device_view(
        &self,
        source: &dyn KernelSource,
        (start, end): (Ns, Ns),
        columns: u32,
        what: &DeviceLanes<'_>,
    ) -> crate::error::Result<TimelineView> {
        let grid = super::view_grid(start, end, columns);
        let mut names = NameIndex::new(source);
        let rows = self.rows_overlapping(grid.start, grid.end);
        let read = Detail::Auto.reads(row_count(&rows)).then_some(&rows);
        let keep = |l: &super::KernelLane| l.device == what.device;
        let mut lanes = self.kernel_lanes(source, &grid, read, &mut names, &keep)?;
        mark_idle(&mut lanes);
        let group = fold::device_group(what.device);
        let groups = vec![group.clone(); lanes.len()];
        let folded = if what.streams {
            Vec::new()
        } else {
            vec![group]
        };
        let mut lanes = fold::Layout::new(&groups, &folded).apply(lanes);
        if let Some(marked) = &what.marked {
            let idle = lanes.first().map(|l| l.idle.clone());
            let mut lane = marked_lane(marked, &grid, &mut names, what.device);
            if let Some(idle) = idle {
                lane.idle = idle;
            }
            lanes.insert(0, lane);
        }
        Ok(self.view_of(&grid, lanes, names))
    }
}

/// The marked events over `grid`: exact columns, and the events one by one when few enough.
fn marked_lane(
    marked: &MarkedLane<'_>,
    grid: &Grid,
    names: &mut NameIndex,
    device: u32,
) -> LaneView {
    let ids: Vec<i32> = marked.names.iter().map(|n| names.index_text(n)).collect();
    let label = |name: u32| Label::Index(ids.get(name as usize).copied().unwrap_or(-1));
    let events = || {
        marked
            .events
            .iter()
            .map(|&(start, end, name)| (start, end, label(name)))
    };
    let items = items_of(events(), grid, names);
    LaneView {
        device: Some(device),
        items,
        ..LaneView::of_columns(
            marked.label.clone(),
            marked.kind,
            columns::exact(events(), grid, names),
        )
    }
}
