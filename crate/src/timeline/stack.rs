//! Several traces' lanes on one clock, one group each: the ranks timeline (issue 50), a group
//! per rank holding its device's lanes from its own file ([`super::DeviceLanes`]), every group
//! moved by its file's clock offset so the ranks' collectives line up.
//!
//! Each member's view is computed on its own file's clock over the window moved back by its
//! offset, in the same number of columns, so column `c` of every member covers the same span
//! of the common clock; stacking renames the members' names into one list, moves their
//! events by the offset and names each group's foldable lanes by the group ([`group_key`]),
//! since two files can both have a device 0.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::TimelineView;
use crate::model::Ns;

/// One member before stacking: a group's name and place, and its view on its file's clock.
pub struct Member {
    pub group: LaneGroup,
    /// Its lanes over `[start − offset, end − offset)` of its file's clock.
    pub view: TimelineView,
}

/// One group of the stacked view, as the page and tests read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaneGroup {
    /// The rank's name, as `ranks` gives it.
    pub label: String,
    pub file: String,
    pub device: u32,
    /// The ns added to its file's times to put them on the common clock (`ranks`'
    /// `clock.offset_ns` of its file).
    pub offset_ns: Ns,
    /// Drawn emphasized (the straggler).
    pub flagged: bool,
    /// Its lanes in the stacked view: `first_lane .. first_lane + lanes`.
    #[serde(default)]
    pub first_lane: u32,
    #[serde(default)]
    pub lanes: u32,
}

/// The key of group `i`'s foldable lanes (`rank:<i>`): what the page sends back to open or fold
/// them.
pub fn group_key(i: usize) -> String {
    format!("rank:{i}")
}

/// The members' lanes stacked in order over `[start, end)` of the common clock in `columns`
/// columns, their times read from `origin_ns`, and the groups with their lanes' places.
pub fn stack(
    members: Vec<Member>,
    (start, end, columns): (Ns, Ns, u32),
    origin_ns: Ns,
) -> (TimelineView, Vec<LaneGroup>) {
    let mut out = TimelineView {
        start_ns: start,
        end_ns: end,
        columns,
        lanes: Vec::new(),
        names: Vec::new(),
        classes: Vec::new(),
        origin_ns,
        range_label: String::new(),
    };
    let mut by_name: HashMap<String, i32> = HashMap::new();
    let mut groups = Vec::with_capacity(members.len());
    for (i, member) in members.into_iter().enumerate() {
        let mut group = member.group;
        group.first_lane = out.lanes.len() as u32;
        group.lanes = member.view.lanes.len() as u32;
        add(&mut out, &mut by_name, member.view, (group.offset_ns, i));
        groups.push(group);
    }
    (out, groups)
}

/// `view`'s lanes appended to `out`: names renamed into `out`'s list, events moved by `offset`,
/// foldable lanes keyed by group `i`.
fn add(
    out: &mut TimelineView,
    by_name: &mut HashMap<String, i32>,
    view: TimelineView,
    (offset, i): (Ns, usize),
) {
    let renamed: Vec<i32> = view
        .names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            *by_name.entry(name.clone()).or_insert_with(|| {
                out.names.push(name.clone());
                let class = view.classes.get(k).cloned().unwrap_or_default();
                out.classes.push(class);
                out.names.len() as i32 - 1
            })
        })
        .collect();
    let rename = |n: i32| {
        usize::try_from(n)
            .ok()
            .and_then(|k| renamed.get(k).copied())
            .unwrap_or(-1)
    };
    for mut lane in view.lanes {
        for top in &mut lane.top {
            *top = rename(*top);
        }
        for item in &mut lane.items {
            item.name = rename(item.name);
            item.start_ns = item.start_ns.saturating_add(offset);
            item.end_ns = item.end_ns.saturating_add(offset);
        }
        if !lane.group.is_empty() {
            lane.group = group_key(i);
        }
        out.lanes.push(lane);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Item, LaneView, columns::Columns};

    fn lane(label: &str, top: i32, item: Option<(Ns, Ns, i32)>, group: &str) -> LaneView {
        let columns = Columns {
            busy: vec![1.0, 0.0],
            count: vec![1, 0],
            top: vec![top, -1],
        };
        LaneView {
            items: item
                .map(|(start_ns, end_ns, name)| Item {
                    start_ns,
                    end_ns,
                    name,
                    depth: 0,
                })
                .into_iter()
                .collect(),
            group: group.into(),
            ..LaneView::of_columns(label.into(), "kernels", columns)
        }
    }

    fn view(start: Ns, names: &[&str], lanes: Vec<LaneView>) -> TimelineView {
        TimelineView {
            start_ns: start,
            end_ns: start + 100,
            columns: 2,
            lanes,
            names: names.iter().map(|n| n.to_string()).collect(),
            classes: names.iter().map(|_| "collective".to_string()).collect(),
            origin_ns: 0,
            range_label: String::new(),
        }
    }

    fn group(label: &str, offset_ns: Ns) -> LaneGroup {
        LaneGroup {
            label: label.into(),
            file: format!("{label}.sqlite"),
            device: 0,
            offset_ns,
            flagged: false,
            first_lane: 0,
            lanes: 0,
        }
    }

    #[test]
    fn groups_are_placed_in_order_their_events_moved_by_their_offsets() {
        // File 1's clock runs 400 ns behind: its window is [600, 700) for the common [1000, 1100).
        let a = view(
            1_000,
            &["allreduce", "gemm"],
            vec![
                lane("rank 0 · collectives", 0, Some((1_010, 1_040, 0)), ""),
                lane("GPU 0 · stream 7", 1, None, "device:0"),
                lane("GPU 0 · stream 8", 1, None, "device:0"),
            ],
        );
        let b = view(
            600,
            &["gemm", "allreduce"],
            vec![
                lane("rank 1 · collectives", 1, Some((630, 640, 1)), ""),
                lane("GPU 0", 0, None, ""),
            ],
        );
        let members = vec![
            Member {
                group: group("rank 0", 0),
                view: a,
            },
            Member {
                group: group("rank 1", 400),
                view: b,
            },
        ];
        let (out, groups) = stack(members, (1_000, 1_100, 2), 1_000);
        let places: Vec<(u32, u32, Ns)> = groups
            .iter()
            .map(|g| (g.first_lane, g.lanes, g.offset_ns))
            .collect();
        assert_eq!(places, vec![(0, 3, 0), (3, 2, 400)]);
        assert_eq!(out.lanes.len(), 5);
        assert_eq!(
            out.names,
            vec!["allreduce", "gemm"],
            "one list, each name once"
        );
        // rank 1's collective, [630, 640) on its clock, is [1030, 1040) on the common one.
        let item = out.lanes[3].items[0];
        assert_eq!((item.start_ns, item.end_ns, item.name), (1_030, 1_040, 0));
        assert_eq!(out.lanes[3].top, vec![0, -1]);
        assert_eq!(out.lanes[4].top, vec![1, -1]);
        // Both files have a device 0: the foldable lanes are keyed by their group.
        assert_eq!(out.lanes[1].group, "rank:0");
        assert_eq!(out.lanes[4].group, "");
        assert_eq!(
            (out.start_ns, out.end_ns, out.origin_ns),
            (1_000, 1_100, 1_000)
        );
    }
}
