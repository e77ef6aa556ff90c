//! One device's lanes of a trace, alone: what the ranks timeline ([`super::stack`]) shows of
//! each rank's file — its device's GPU work from the same summary and re-reads as the whole
//! timeline, and above it a lane of events the caller holds (the rank's collective kernels),
//! never the file's host or step lanes (a rank is its device).

use super::columns::{self, Grid, NameIndex, mark_idle};
use super::summary::Label;
use super::{
    Detail, Hit, KernelSource, LaneView, Timeline, TimelineView, fold, items_of, row_count,
};
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

impl Timeline {
    /// What lies under the pointer on lane `lane` of [`Timeline::device_view`]'s view of `what`
    /// at `t` (within `slack`): on the marked lane, its event; on a device lane, the GPU work
    /// [`Timeline::hit`] finds there (on a folded lane, the first stream that has one), without
    /// its launch (the view has no host lane to link to).
    pub fn device_hit(
        &self,
        source: &dyn KernelSource,
        what: &DeviceLanes<'_>,
        lane: u32,
        (t, slack): (Ns, Ns),
    ) -> crate::error::Result<Option<Hit>> {
        let mut row = lane as usize;
        if let Some(marked) = &what.marked {
            if row == 0 {
                return Ok(marked_hit(marked, what.device, (t, slack)));
            }
            row -= 1;
        }
        let own: Vec<usize> = (0..self.lanes.len())
            .filter(|&i| self.lanes[i].device == what.device)
            .collect();
        let group = fold::device_group(what.device);
        let folded = if what.streams {
            Vec::new()
        } else {
            vec![group.clone()]
        };
        let layout = fold::Layout::new(&vec![group; own.len()], &folded);
        // The full list's lanes: the step lane, the host lanes (once scanned), then these.
        let before =
            usize::from(self.steps.is_some()) + self.host.get().map_or(0, |h| h.lane_count());
        for member in layout.lanes_of(row) {
            let Some(&k) = own.get(member) else {
                continue;
            };
            if let Some(mut hit) = self.full_hit(source, ((before + k) as u32, None, t, slack))? {
                hit.lane = lane;
                hit.link = None;
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }
}

/// The marked event nearest `t` (within `slack`), as a hit on lane 0.
fn marked_hit(marked: &MarkedLane<'_>, device: u32, (t, slack): (Ns, Ns)) -> Option<Hit> {
    let events = marked.events.iter().map(|&(s, e, name)| (s, e, name));
    let (start_ns, end_ns, name) = super::closest(events, t, slack.max(0))?;
    Some(Hit {
        lane: 0,
        name: marked.names.get(name as usize).cloned().unwrap_or_default(),
        start_ns,
        end_ns,
        duration_us: (end_ns - start_ns) as f64 / 1000.0,
        device: Some(device),
        stream: None,
        work: Some("kernel".into()),
        track: None,
        link: None,
    })
}
