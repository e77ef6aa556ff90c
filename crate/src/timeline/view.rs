//! What the page draws and hovers: a view's lanes and columns, its items and links.

use serde::{Deserialize, Serialize};

use crate::model::Ns;

/// What the page draws for one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineView {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub columns: u32,
    pub lanes: Vec<LaneView>,
    /// Kernel (or step) names referenced by `LaneView::top` and `Item::name`.
    pub names: Vec<String>,
    /// The kernel class of each of `names` (`names::kernels::KernelCategory`, lowercase), which
    /// colours a kernel drawn on its own.
    #[serde(default)]
    pub classes: Vec<String>,
    /// The trace's start (its first kernel's): the time axis reads offsets from it, as every
    /// time on the page does.
    #[serde(default)]
    pub origin_ns: Ns,
    /// What the view shows, in the words of the label above it, in the unit its ruler reads
    /// (`plot::ticks::range_label`); set by the front end that draws it, empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub range_label: String,
}

impl TimelineView {
    /// The lane where time on host thread `tid` (its `globalTid`) is drawn: its CUDA API lane
    /// (one row, and a path moving between the thread's calls and its own time stays on it),
    /// else its NVTX lane, else its process's folded lane.
    pub fn thread_lane(&self, tid: i64) -> Option<u32> {
        let text = tid.to_string();
        let of_thread = |kind: &str| {
            self.lanes
                .iter()
                .position(|l| l.kind == kind && l.thread.as_deref() == Some(text.as_str()))
        };
        let group = super::fold::process_group(super::host::process_of(tid));
        of_thread("api")
            .or_else(|| of_thread("nvtx"))
            .or_else(|| {
                self.lanes
                    .iter()
                    .position(|l| l.folded > 0 && l.group == group)
            })
            .map(|i| i as u32)
    }

    /// The lane of GPU `stream` on `device`, else the device's folded lane.
    pub fn stream_lane(&self, device: u32, stream: u32) -> Option<u32> {
        let kernels = |l: &&LaneView| l.kind == "kernels" && l.device == Some(device);
        let lanes = || self.lanes.iter().enumerate().filter(|(_, l)| kernels(l));
        lanes()
            .find(|(_, l)| l.stream == Some(stream))
            .or_else(|| lanes().find(|(_, l)| l.folded > 0))
            .map(|(i, _)| i as u32)
    }
}

/// One event drawn on its own (a view zoomed in far enough that its events are a few pixels
/// wide or more, [`ITEM_MIN_PX`]): its boundaries and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// Index into `TimelineView::names`.
    pub name: i32,
    /// Nesting depth on its thread (NVTX ranges; 0 for kernels, steps and API calls).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u8,
}

fn is_zero(d: &u8) -> bool {
    *d == 0
}

/// Depth rows an NVTX lane is laid out in at most: ranges nested deeper share the last row.
pub const DEPTH_ROWS: u8 = 16;

/// Depth rows tall enough for a range's name; the rows below them (depths `NAMED_DEPTHS` and
/// deeper, up to [`DEPTH_ROWS`]) are drawn thin, so a thread nested 18 deep (nvFuser's host
/// code) keeps a lane a few rows taller than one nested 6 deep rather than three times as tall.
pub const NAMED_DEPTHS: u8 = 6;

/// The row of an NVTX lane a range at `depth` is drawn in (and hovered at): its own up to
/// [`DEPTH_ROWS`], the last one for deeper ranges.
pub fn depth_row(depth: u8) -> u8 {
    depth.min(DEPTH_ROWS - 1)
}

/// A lane's events are drawn one by one when the view holds at most one per this many pixel
/// columns (on average) — kernels then are a few pixels wide, their boundaries visible.
pub const ITEM_MIN_PX: u32 = 3;

/// One lane's columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneView {
    pub label: String,
    /// `"steps"`, `"api"` (a thread's CUDA API calls), `"nvtx"` (a thread's NVTX ranges) or
    /// `"kernels"`.
    pub kind: String,
    pub device: Option<u32>,
    pub stream: Option<u32>,
    /// The thread of a host lane (`api`, `nvtx`): its `globalTid`, as a string (it exceeds
    /// 2^53); none on other lanes and on a folded group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Fraction of each column covered by events, 0..=1.
    pub busy: Vec<f32>,
    /// Events starting in or overlapping each column.
    pub count: Vec<u32>,
    /// Index into `TimelineView::names` of the longest event in each column, -1 when empty.
    pub top: Vec<i32>,
    /// Columns in which the lane's device ran no kernel at all (GPU idle), for shading.
    pub idle: Vec<bool>,
    /// The lane's events in the view one by one, in start order, when the view re-read them
    /// and they are few enough to draw ([`ITEM_MIN_PX`]); else empty (drawn from the columns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Item>,
    /// Why a lane shows nothing although it has events (a host lane too wide to read).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The collapsible group the lane belongs to (`process:<pid>`, `device:<n>`; see
    /// [`super::fold`]), empty when it is alone in its group: a click on its label folds the group
    /// (or, on a folded lane, opens it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Lanes folded into this one (a collapsed group), 0 for a lane of its own.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub folded: u32,
    /// Nesting levels the lane is laid out for, one depth row each ([`depth_row`]): on an NVTX
    /// lane the deepest nesting on its thread over the whole trace, plus one (see
    /// [`super::host`]); 0 for a lane of one row (kernels, steps, API calls, a folded group).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depths: u8,
    /// On an NVTX lane of nested ranges drawn from its columns (too many ranges to draw one
    /// by one): per depth row ([`depth_row`]), how busy each column is, one digit a column
    /// ([`busy_digits`]), so the rows keep their nesting rather than fill the lane as one
    /// block. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depth_busy: Vec<String>,
}

/// A busy fraction per column as one digit each: `0` nothing, `1`–`9` the covered share
/// rounded up to ninths (any event at all reads at least `1`).
pub fn busy_digits(busy: &[f32]) -> String {
    busy.iter()
        .map(|&b| match b {
            b if b <= 0.0 => '0',
            b => char::from(b'0' + (b.min(1.0) * 9.0).ceil().clamp(1.0, 9.0) as u8),
        })
        .collect()
}

/// The busy fraction a [`busy_digits`] digit stands for.
pub fn digit_busy(d: char) -> f32 {
    d.to_digit(10).map_or(0.0, |d| d as f32 / 9.0)
}

impl LaneView {
    /// A lane of `kind` drawn from `columns`: no GPU-idle shading, no items, no note, in no
    /// group, of one row. Callers set what they know beyond that, so a new field is given its
    /// default here once.
    pub fn of_columns(label: String, kind: &str, columns: super::columns::Columns) -> LaneView {
        let n = columns.count.len();
        LaneView {
            label,
            kind: kind.into(),
            device: None,
            stream: None,
            thread: None,
            busy: columns.busy,
            count: columns.count,
            top: columns.top,
            idle: vec![false; n],
            items: Vec::new(),
            note: String::new(),
            group: String::new(),
            folded: 0,
            depths: 0,
            depth_busy: Vec::new(),
        }
    }
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
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
    /// On a device lane, what the GPU did: `kernel`, `graph replay`, `copy` or `memset`
    /// (`work::work_kind`); `None` on other lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The host lane's label (process/thread and table) for a CUDA API call or NVTX range.
    #[serde(default)]
    pub track: Option<String>,
    /// For GPU work, the CUDA API call that launched it; for a launch call, the work it
    /// launched (a kernel, a graph replay, a copy…).
    #[serde(default)]
    pub link: Option<Link>,
}

/// The other end of a launch: a kernel's launch call, or a launch call's kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// `"api"` (the launch call) or `"kernels"` (the GPU work launched, on a device lane).
    pub kind: String,
    pub name: String,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// Its lane in the view, when shown (a thread beyond `host::MAX_HOST_LANES` is not).
    pub lane: Option<u32>,
    /// The launch call's thread, or the kernel's device and stream, as a label.
    pub place: String,
}
