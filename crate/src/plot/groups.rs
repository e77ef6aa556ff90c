//! The ranks timeline: the stacked lanes of several ranks ([`crate::timeline::stack`]) drawn as
//! the whole timeline draws its lanes, with what tells the groups apart — a rule above each
//! group after the first, and the flagged group (the straggler) marked by a bar in the alert
//! colour along its labels.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawResult, INK, LaneLayout, STRAGGLER, err, lane_layout};
use crate::timeline::TimelineView;
use crate::timeline::stack::LaneGroup;

/// Draws `view`'s lanes and ruler ([`super::draw_timeline`]), then its groups' rules and marks.
pub fn draw_grouped_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
    groups: &[LaneGroup],
) -> DrawResult {
    super::draw_timeline(root, view)?;
    let layout = lane_layout(view);
    let (w, _) = root.dim_in_pixel();
    for (i, g) in groups.iter().enumerate() {
        let Some((top, bottom)) = span_of(&layout, g) else {
            continue;
        };
        if i > 0 {
            let y = top - 2;
            root.draw(&PathElement::new(vec![(0, y), (w as i32, y)], INK.mix(0.6)))
                .map_err(err)?;
        }
        if g.flagged {
            root.draw(&Rectangle::new([(0, top), (3, bottom)], STRAGGLER.filled()))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// The pixel rows group `g`'s lanes cover: its first lane's top to its last lane's bottom.
fn span_of(layout: &LaneLayout, g: &LaneGroup) -> Option<(i32, i32)> {
    let first = layout.lanes.get(g.first_lane as usize)?;
    let last_at = (g.first_lane + g.lanes).checked_sub(1)?;
    let last = layout.lanes.get(last_at as usize)?;
    let bottom = last.top_px + last.height_px - super::TIMELINE_LAYOUT.lane_gap_px;
    Some((first.top_px as i32, bottom as i32))
}
