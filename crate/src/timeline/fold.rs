//! Collapsible track groups: a process's thread lanes (CUDA API, NVTX) and a device's stream
//! lanes each form a group the page can fold into one summary lane (a click on its label).
//!
//! The page sends the folded groups' keys with every view and hover; the core lays the lanes
//! out ([`Layout`]), so the page never re-lays out the view itself and the hit test's lane
//! numbers are the drawn ones.

use std::ops::Range;

use super::LaneView;

/// The group key of a process's host lanes (`process:<pid>`).
pub fn process_group(pid: i64) -> String {
    format!("process:{pid}")
}

/// The group key of a device's stream lanes (`device:<n>`).
pub fn device_group(device: u32) -> String {
    format!("device:{device}")
}

/// The view's rows over the full list of lanes (the step lane, the host lanes, the kernel
/// lanes, in that order): a row is one lane, or a folded group of consecutive lanes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    /// The lanes of the full list the row shows (one, or a folded group's).
    lanes: Range<usize>,
    /// The group's key when the group has two lanes or more (only those can fold).
    group: String,
    folded: bool,
}

impl Layout {
    /// Rows for lanes whose groups are `groups` (one key per lane, `""` for none), with the
    /// groups named in `folded` folded.
    pub fn new(groups: &[String], folded: &[String]) -> Layout {
        let mut rows: Vec<Row> = Vec::new();
        let mut i = 0;
        while i < groups.len() {
            let key = &groups[i];
            let end = if key.is_empty() {
                i + 1
            } else {
                i + groups[i..].iter().take_while(|g| *g == key).count()
            };
            let group = if end - i >= 2 {
                key.clone()
            } else {
                String::new()
            };
            if !group.is_empty() && folded.contains(&group) {
                rows.push(Row {
                    lanes: i..end,
                    group,
                    folded: true,
                });
            } else {
                rows.extend((i..end).map(|l| Row {
                    lanes: l..l + 1,
                    group: group.clone(),
                    folded: false,
                }));
            }
            i = end;
        }
        Layout { rows }
    }

    /// The lanes of the full list that view row `row` shows (empty when there is no such row).
    pub fn lanes_of(&self, row: usize) -> Range<usize> {
        self.rows.get(row).map_or(0..0, |r| r.lanes.clone())
    }

    /// The view row showing lane `lane` of the full list.
    pub fn row_of(&self, lane: usize) -> Option<usize> {
        self.rows.iter().position(|r| r.lanes.contains(&lane))
    }

    /// The view's lanes from the full list `lanes`: each folded group merged into one lane,
    /// every lane of a foldable group marked with its key, the first of an open group and
    /// every folded one labelled with the arrow a click toggles.
    pub fn apply(&self, lanes: Vec<LaneView>) -> Vec<LaneView> {
        let mut lanes: Vec<Option<LaneView>> = lanes.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(self.rows.len());
        let mut previous = "";
        for row in &self.rows {
            let opens = !row.group.is_empty() && row.group != previous;
            previous = &row.group;
            let members: Vec<LaneView> = lanes
                .get_mut(row.lanes.clone())
                .into_iter()
                .flatten()
                .filter_map(Option::take)
                .collect();
            if row.folded {
                out.extend(merge(&row.group, members));
                continue;
            }
            for mut lane in members {
                if opens {
                    lane.label = format!("▾ {}", lane.label);
                }
                lane.group.clone_from(&row.group);
                out.push(lane);
            }
        }
        out
    }
}

/// A folded group's one lane: per column the busiest member's busy fraction and longest event,
/// the members' event counts summed; GPU-idle where every member is (they share a device).
fn merge(group: &str, members: Vec<LaneView>) -> Option<LaneView> {
    let folded = members.len() as u32;
    let mut iter = members.into_iter();
    let mut lane = iter.next()?;
    for other in iter {
        for c in 0..lane.busy.len().min(other.busy.len()) {
            if other.busy[c] > lane.busy[c] {
                lane.busy[c] = other.busy[c];
                if other.top[c] >= 0 {
                    lane.top[c] = other.top[c];
                }
            } else if lane.top[c] < 0 {
                lane.top[c] = other.top[c];
            }
            lane.count[c] = lane.count[c].saturating_add(other.count[c]);
            lane.idle[c] &= other.idle[c];
        }
        if lane.note.is_empty() {
            lane.note = other.note;
        }
    }
    lane.items.clear();
    lane.stream = None;
    lane.thread = None;
    lane.label = folded_label(group, folded);
    lane.group = group.to_string();
    lane.folded = folded;
    // One row: a folded group draws its members' columns, not their ranges.
    lane.depths = 0;
    Some(lane)
}

/// `▸ process 1234 · 3 lanes`, `▸ GPU 0 · 4 streams`.
fn folded_label(group: &str, lanes: u32) -> String {
    match group.split_once(':') {
        Some(("device", d)) => format!("▸ GPU {d} · {lanes} streams"),
        Some(("process", p)) => format!("▸ process {p} · {lanes} lanes"),
        _ => format!("▸ {group} · {lanes} lanes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_folded_group_is_one_row_and_single_lanes_never_fold() {
        // steps, process 7 (api, nvtx), process 9 (api only), GPU 0 (2 streams), GPU 1 (1).
        let groups = keys(&[
            "",
            "process:7",
            "process:7",
            "process:9",
            "device:0",
            "device:0",
            "device:1",
        ]);
        let open = Layout::new(&groups, &[]);
        assert_eq!(open.rows.len(), 7);
        let folded = Layout::new(&groups, &keys(&["process:7", "process:9", "device:1"]));
        // process 9 and GPU 1 have one lane each: nothing to fold.
        assert_eq!(folded.rows.len(), 6);
        assert_eq!(folded.lanes_of(1), 1..3);
        assert_eq!(folded.row_of(2), Some(1));
        assert_eq!(folded.row_of(4), Some(3));
        assert_eq!(folded.lanes_of(2), 3..4);
        assert_eq!(folded.lanes_of(9), 0..0);
    }

    fn lane(label: &str, busy: Vec<f32>, count: Vec<u32>, top: Vec<i32>) -> LaneView {
        LaneView {
            device: Some(0),
            stream: Some(1),
            ..LaneView::of_columns(
                label.into(),
                "kernels",
                crate::timeline::columns::Columns { busy, count, top },
            )
        }
    }

    #[test]
    fn a_folded_lane_keeps_the_busiest_member_per_column_and_sums_counts() {
        let lanes = vec![
            lane("GPU 0 · stream 1", vec![0.5, 0.0], vec![2, 0], vec![3, -1]),
            lane("GPU 0 · stream 2", vec![0.25, 1.0], vec![1, 4], vec![5, 6]),
        ];
        let groups = keys(&["device:0", "device:0"]);
        let out = Layout::new(&groups, &keys(&["device:0"])).apply(lanes.clone());
        assert_eq!(out.len(), 1);
        let m = &out[0];
        assert_eq!(m.busy, vec![0.5, 1.0]);
        assert_eq!(m.count, vec![3, 4]);
        assert_eq!(m.top, vec![3, 6]);
        assert_eq!(m.label, "▸ GPU 0 · 2 streams");
        assert_eq!(
            (m.folded, m.stream, m.group.as_str()),
            (2, None, "device:0")
        );
        let open = Layout::new(&groups, &[]).apply(lanes);
        let labels: Vec<&str> = open.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, vec!["▾ GPU 0 · stream 1", "GPU 0 · stream 2"]);
        assert!(open.iter().all(|l| l.group == "device:0" && l.folded == 0));
    }
}
