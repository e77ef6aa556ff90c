//! The kernel timeline at any zoom: per-lane, per-pixel-column aggregates (level of detail),
//! so millions of kernels become a few thousand numbers before anything reaches JavaScript.
//!
//! Lanes: one "forward steps" lane (NVTX steps, TP-deduplicated) then one lane per
//! (device, stream). Each column holds the fraction of its time covered by kernels, the kernel
//! count, and the longest kernel's name; device-idle columns are flagged for shading.

use serde::{Deserialize, Serialize};

use crate::model::{Ns, Trace};

/// What the page draws for one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineView {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub columns: u32,
    pub lanes: Vec<LaneView>,
    /// Kernel (or step) names referenced by `LaneView::top`.
    pub names: Vec<String>,
}

/// One lane's columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneView {
    pub label: String,
    /// `"steps"` or `"kernels"`.
    pub kind: String,
    pub device: Option<u32>,
    pub stream: Option<u32>,
    /// Fraction of each column covered by events, 0..=1.
    pub busy: Vec<f32>,
    /// Events starting in or overlapping each column.
    pub count: Vec<u32>,
    /// Index into `TimelineView::names` of the longest event in each column, -1 when empty.
    pub top: Vec<i32>,
    /// Columns in which the lane's device ran no kernel at all (GPU idle), for shading.
    pub idle: Vec<bool>,
}

/// The event under the pointer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub lane: u32,
    pub name: String,
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub duration_us: f64,
    pub device: Option<u32>,
    pub stream: Option<u32>,
}

/// Lanes indexed once; views are computed on demand from the same trace.
pub struct Timeline {
    lanes: Vec<Lane>,
    extent: (Ns, Ns),
}

struct Lane {
    label: String,
    kind: &'static str,
    device: Option<u32>,
    stream: Option<u32>,
    events: Events,
    /// Longest event, to bound the backward search for events overlapping a view's start.
    max_len: Ns,
}

/// Where a lane's events come from.
enum Events {
    /// Kernel row indices, sorted by start.
    Kernels(Vec<u32>),
    /// Forward steps `(start, end, name)`, sorted by start.
    Steps(Vec<(Ns, Ns, u32)>),
}

/// Most columns a view may ask for (a 8K-wide canvas).
pub const MAX_COLUMNS: u32 = 8192;

impl Timeline {
    /// Indexes the trace: one lane per (device, stream), plus a forward-step lane when the trace
    /// has TensorRT-LLM step ranges (TP copies merged).
    pub fn new(trace: &Trace) -> Timeline {
        let mut lanes = Vec::new();
        if let Some(lane) = steps_lane(trace) {
            lanes.push(lane);
        }
        lanes.extend(kernel_lanes(trace));
        let k = &trace.kernels;
        let extent = (
            k.start.iter().copied().min().unwrap_or(0),
            k.end.iter().copied().max().unwrap_or(0),
        );
        Timeline { lanes, extent }
    }

    /// First kernel start to last kernel end.
    pub fn extent(&self) -> (Ns, Ns) {
        self.extent
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// Aggregates `[start, end)` into `columns` per lane (`trace` is the one indexed).
    pub fn view(&self, trace: &Trace, start: Ns, end: Ns, columns: u32) -> TimelineView {
        let columns = columns.clamp(1, MAX_COLUMNS);
        let end = end.max(start + 1);
        let grid = Grid {
            start,
            end,
            columns,
        };
        let mut names = NameIndex::default();
        let mut lanes: Vec<LaneView> = self
            .lanes
            .iter()
            .map(|lane| lane_view(trace, lane, &grid, &mut names))
            .collect();
        mark_idle(&mut lanes);
        TimelineView {
            start_ns: start,
            end_ns: end,
            columns,
            lanes,
            names: names.names,
        }
    }

    /// The event of `lane` at time `t` (or within `slack` of it), preferring one that contains `t`.
    pub fn hit(&self, trace: &Trace, lane: u32, t: Ns, slack: Ns) -> Option<Hit> {
        let l = self.lanes.get(lane as usize)?;
        let slack = slack.max(0);
        let upto = partition(trace, l, t.saturating_add(slack));
        let mut best: Option<(Ns, usize)> = None;
        for i in (0..upto).rev() {
            let (s, e, _) = event(trace, l, i);
            if e < t.saturating_sub(slack) && s < t.saturating_sub(slack + l.max_len) {
                break;
            }
            let distance = if t < s {
                s - t
            } else if t >= e {
                t - e
            } else {
                0
            };
            if distance <= slack && best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, i));
            }
        }
        let (_, i) = best?;
        let (start_ns, end_ns, name) = event(trace, l, i);
        Some(Hit {
            lane,
            name: trace.strings.get(name).to_string(),
            start_ns,
            end_ns,
            duration_us: (end_ns - start_ns) as f64 / 1000.0,
            device: l.device,
            stream: l.stream,
        })
    }
}

fn event(trace: &Trace, lane: &Lane, i: usize) -> (Ns, Ns, u32) {
    let k = &trace.kernels;
    match &lane.events {
        Events::Kernels(idx) => {
            let j = idx[i] as usize;
            (k.start[j], k.end[j], k.short_name[j])
        }
        Events::Steps(steps) => steps[i],
    }
}

fn lane_len(lane: &Lane) -> usize {
    match &lane.events {
        Events::Kernels(idx) => idx.len(),
        Events::Steps(steps) => steps.len(),
    }
}

/// Number of events starting before `t`.
fn partition(trace: &Trace, lane: &Lane, t: Ns) -> usize {
    let k = &trace.kernels;
    match &lane.events {
        Events::Kernels(idx) => idx.partition_point(|&j| k.start[j as usize] < t),
        Events::Steps(steps) => steps.partition_point(|s| s.0 < t),
    }
}

fn lane_view(trace: &Trace, lane: &Lane, grid: &Grid, names: &mut NameIndex) -> LaneView {
    let n = grid.columns as usize;
    let mut covered = vec![0.0f64; n];
    let mut count = vec![0u32; n];
    let mut top: Vec<(Ns, i32)> = vec![(0, -1); n];
    let first = partition(trace, lane, grid.start.saturating_sub(lane.max_len));
    let last = partition(trace, lane, grid.end);
    for i in first..last.min(lane_len(lane)) {
        let (s, e, name) = event(trace, lane, i);
        let (s, e) = (s.max(grid.start), e.min(grid.end));
        if e <= s {
            continue;
        }
        let (c0, c1) = (grid.column(s), grid.column(e - 1));
        for c in c0..=c1 {
            let (cs, ce) = grid.bounds(c);
            covered[c] += (e.min(ce) - s.max(cs)).max(0) as f64;
            count[c] += 1;
            if e - s > top[c].0 {
                top[c] = (e - s, names.index(&trace.strings, name));
            }
        }
    }
    let busy = covered
        .iter()
        .enumerate()
        .map(|(c, &ns)| {
            let (cs, ce) = grid.bounds(c);
            (ns / (ce - cs).max(1) as f64).min(1.0) as f32
        })
        .collect();
    LaneView {
        label: lane.label.clone(),
        kind: lane.kind.to_string(),
        device: lane.device,
        stream: lane.stream,
        busy,
        count,
        top: top.into_iter().map(|(_, t)| t).collect(),
        idle: vec![false; n],
    }
}

/// The view's columns: column `c` covers `[start + c·w, start + (c+1)·w)`.
struct Grid {
    start: Ns,
    end: Ns,
    columns: u32,
}

impl Grid {
    fn column(&self, t: Ns) -> usize {
        let span = (self.end - self.start) as f64;
        let c = ((t - self.start) as f64 / span * f64::from(self.columns)).floor();
        (c.max(0.0) as usize).min(self.columns as usize - 1)
    }

    fn bounds(&self, c: usize) -> (Ns, Ns) {
        let span = (self.end - self.start) as f64;
        let at = |c: usize| self.start + (span * c as f64 / f64::from(self.columns)).round() as Ns;
        (at(c), at(c + 1))
    }
}

/// Names referenced by a view, each once.
#[derive(Default)]
struct NameIndex {
    names: Vec<String>,
    by_id: std::collections::HashMap<u32, i32>,
}

impl NameIndex {
    fn index(&mut self, strings: &crate::model::Strings, id: u32) -> i32 {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let i = self.names.len() as i32;
        self.names.push(strings.get(id).to_string());
        self.by_id.insert(id, i);
        i
    }
}

/// A device is idle in a column when none of its streams ran a kernel there.
fn mark_idle(lanes: &mut [LaneView]) {
    let mut devices: Vec<u32> = lanes.iter().filter_map(|l| l.device).collect();
    devices.sort_unstable();
    devices.dedup();
    for d in devices {
        let n = lanes.first().map_or(0, |l| l.count.len());
        let idle: Vec<bool> = (0..n)
            .map(|c| {
                lanes
                    .iter()
                    .filter(|l| l.device == Some(d))
                    .all(|l| l.count[c] == 0)
            })
            .collect();
        for l in lanes.iter_mut().filter(|l| l.device == Some(d)) {
            l.idle.clone_from(&idle);
        }
    }
}

/// One lane per (device, stream), kernels sorted by start.
fn kernel_lanes(trace: &Trace) -> Vec<Lane> {
    let k = &trace.kernels;
    let stream_of = |i: usize| k.stream.get(i).copied().unwrap_or(0);
    let mut groups: std::collections::BTreeMap<(u32, u32), Vec<u32>> =
        std::collections::BTreeMap::new();
    for i in 0..k.len() {
        groups
            .entry((k.device[i], stream_of(i)))
            .or_default()
            .push(i as u32);
    }
    groups
        .into_iter()
        .map(|((device, stream), mut idx)| {
            let key = |&j: &u32| k.start[j as usize];
            if !idx.is_sorted_by_key(key) {
                idx.sort_by_key(key);
            }
            let max_len = idx
                .iter()
                .map(|&j| k.end[j as usize] - k.start[j as usize])
                .max()
                .unwrap_or(0);
            let label = if k.stream.is_empty() {
                format!("GPU {device}")
            } else {
                format!("GPU {device} · stream {stream}")
            };
            Lane {
                label,
                kind: "kernels",
                device: Some(device),
                stream: Some(stream),
                events: Events::Kernels(idx),
                max_len,
            }
        })
        .collect()
}

/// Forward steps as the standard profile sees them (TP copies merged).
fn steps_lane(trace: &Trace) -> Option<Lane> {
    use crate::detect::{Profile, names::NameTables, steps};
    let sw = Profile::Standard.switches();
    let tables = NameTables::build(&trace.strings, &sw, None);
    let (found, _) = steps::forward_steps(&trace.nvtx, &tables, &sw);
    if found.is_empty() {
        return None;
    }
    let events: Vec<(Ns, Ns, u32)> = found.iter().map(|s| (s.start, s.end, s.name_id)).collect();
    let max_len = events.iter().map(|e| e.1 - e.0).max().unwrap_or(0);
    Some(Lane {
        label: "forward steps".into(),
        kind: "steps",
        device: None,
        stream: None,
        events: Events::Steps(events),
        max_len,
    })
}
