//! The page's ranks panel (issue 50): the ranks answer over open traces, as `nsys-lens ranks
//! FILE… --json`, with its section and skew chart, and the ranks timeline — a lane group per
//! rank, its device's GPU work and its collective kernels from its own file, every group on the
//! common clock the answer put the files on.
//!
//! The answer keeps what the timeline needs of it (each rank's trace, device, offset and
//! collective kernels, as the map summarized them): a timeline view then reads only the views
//! of its ranks' files, never the answer again.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::analyses::{open_trace, over_inputs};
use super::analysis::ns_arg;
use super::indexed::Indexed;
use super::{WebError, init, js_error, to_json};
use crate::drill::{DrillInput, RowIndex};
use crate::model::Ns;
use crate::ranks::{FileSummary, RanksReport};
use crate::report::outline;
use crate::timeline::stack::{LaneGroup, Member, group_key, stack};
use crate::timeline::{DeviceLanes, MarkedLane, TimelineView};

/// What the page's Ranks panel shows: the answer as `nsys-lens ranks FILE… --json` gives it, its
/// report section (sentences and tables), its skew chart, and the common clock's extent the
/// ranks timeline spans.
#[derive(Serialize)]
struct RanksView<'a> {
    ranks: crate::report::Versioned<'a, RanksReport>,
    section: outline::Section,
    chart: crate::plot::skew::SkewSeries,
    timeline: Extent,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Extent {
    start_ns: Ns,
    end_ns: Ns,
}

/// What the ranks timeline draws, kept from the last answer.
struct RankLanes {
    /// The traces the answer was computed over, in order.
    ids: Vec<u32>,
    /// Every file's kernel window, moved onto the common clock: their union.
    extent: Extent,
    ranks: Vec<RankLane>,
    /// The groups of the last view drawn: where `ranksHover` finds a lane's rank.
    drawn: Vec<LaneGroup>,
}

/// One rank: its trace, its group (name, device, offset) and its collective kernels.
struct RankLane {
    trace: u32,
    group: LaneGroup,
    /// `(start, end, name)` on its file's clock, `name` a place in `names`.
    kernels: Vec<(Ns, Ns, u32)>,
    names: Vec<String>,
}

thread_local! {
    /// The last answer's ranks timeline (the panel shows one answer at a time).
    static LAID: RefCell<Option<RankLanes>> = const { RefCell::new(None) };
}

/// `{"ranks", "section", "chart", "timeline"}` over the traces `ids` (one export, or one file
/// per rank): the ranks at their collectives on one clock, as `nsys-lens ranks FILE… --json`;
/// `timeline`: `{start_ns, end_ns}`, what `ranksTimeline` spans.
#[wasm_bindgen(js_name = ranksTraces)]
pub fn ranks_traces(ids: Vec<u32>) -> Result<String, WebError> {
    init();
    over_inputs(&ids, None, |traces, inputs| {
        let mut windows: Vec<(Ns, Ns)> = Vec::with_capacity(inputs.len());
        let (report, summaries) = ranks_reusing(traces, inputs, |ix| windows.push(ix.extent))?;
        let lanes = rank_lanes(&ids, &report, summaries, &windows);
        let extent = lanes.extent;
        LAID.with(|l| l.replace(Some(lanes)));
        to_json(&RanksView {
            section: outline::ranks_section(&report),
            chart: crate::report::charts::skew_series(&report),
            ranks: crate::report::Versioned(&report),
            timeline: extent,
        })
    })
}

/// The ranks of the open `traces` (their rows as `inputs`), with what each keeps: the index Root
/// cause or the Drill-down kept, taken and given back (a second index beside it held every step
/// twice: at 1.5 M steps the Drill-down view's memory went 454 → 619 MiB), and the verdict the
/// page shows. A file without a kept index is indexed and dropped: memory holds one file's
/// index and the ranks' collective kernels, whatever the number of files. `seen`: each input's
/// index once summarized.
pub(super) fn ranks_reusing(
    traces: &[Rc<Indexed>],
    inputs: &[DrillInput<'_>],
    mut seen: impl FnMut(&RowIndex<'_>),
) -> Result<(RanksReport, Vec<FileSummary>), WebError> {
    let taken: Vec<Cell<bool>> = vec![Cell::new(false); inputs.len()];
    let each = |i: usize, ix: RowIndex<'_>| {
        seen(&ix);
        if let (true, Some(trace)) = (taken[i].get(), traces.get(i)) {
            trace.keep_index(ix.into_facts());
        }
    };
    let verdict = |i: usize, cfg: &crate::detect::DetectConfig| {
        traces.get(i).and_then(|t| t.kept_verdict(cfg))
    };
    let kept = |i: usize, input: &_| {
        let ix = kept_index(traces.get(i), input)?;
        taken[i].set(true);
        Some(ix)
    };
    crate::ranks::ranks_seeing(inputs, kept, each, verdict).map_err(WebError::from)
}

/// The index `trace` kept of `input` (taken: give it back with `Indexed::keep_index`), if it
/// holds kernels; else `None`, and the index is read again (to fail as a file without kernels
/// fails).
fn kept_index<'t>(trace: Option<&Rc<Indexed>>, input: &DrillInput<'t>) -> Option<RowIndex<'t>> {
    let trace = trace?;
    let ix = RowIndex::with_facts(input.rows, input.label, trace.take_index()?);
    if ix.kernel_absence().is_some() {
        trace.keep_index(ix.into_facts());
        return None;
    }
    Some(ix)
}

/// The ranks timeline of `report` over the traces `ids`: the summaries' ranks, file by file,
/// are the report's in order; `windows`: each file's kernel window on its own clock.
fn rank_lanes(
    ids: &[u32],
    report: &RanksReport,
    summaries: Vec<FileSummary>,
    windows: &[(Ns, Ns)],
) -> RankLanes {
    let offset = |f: usize| report.clock.offset_ns.get(f).copied().unwrap_or(0);
    let mut ranks = Vec::new();
    for (f, summary) in summaries.into_iter().enumerate() {
        for rank in summary.ranks {
            let k = ranks.len();
            let Some(named) = report.ranks.get(k) else {
                break;
            };
            ranks.push(RankLane {
                trace: ids.get(f).copied().unwrap_or(u32::MAX),
                group: LaneGroup {
                    label: named.rank.clone(),
                    file: named.file.clone(),
                    device: rank.device,
                    offset_ns: offset(f),
                    flagged: report.straggler == Some(k),
                    first_lane: 0,
                    lanes: 0,
                },
                kernels: rank.kernels,
                names: rank.names,
            });
        }
    }
    let moved = windows
        .iter()
        .enumerate()
        .map(|(f, &(a, b))| (a.saturating_add(offset(f)), b.saturating_add(offset(f))));
    let start = moved.clone().map(|w| w.0).min().unwrap_or(0);
    let end = moved.map(|w| w.1).max().unwrap_or(0).max(start + 1);
    RankLanes {
        ids: ids.to_vec(),
        extent: Extent {
            start_ns: start,
            end_ns: end,
        },
        ranks,
        drawn: Vec::new(),
    }
}

/// The ranks timeline as the page reads it: the stacked view, where its lanes are drawn
/// (`plot::lane_layout`) and its groups (each rank's name, device, offset and lanes).
#[derive(Serialize)]
struct RanksTimeline<'a> {
    #[serde(flatten)]
    view: &'a TimelineView,
    layout: crate::plot::LaneLayout,
    groups: Vec<LaneGroup>,
}

/// The ranks timeline over `[startNs, endNs)` of the common clock in `columns` columns, as
/// `{…TimelineView, layout, groups}`: per rank of the last `ranksTraces` over `ids`, its
/// collective kernels' lane and its device's lanes from its own file, moved by its file's
/// offset; the ranks whose group key (`rank:<i>`, a lane's `group`) is in `open` one lane per
/// stream, the others folded. Fails when that answer is not the last one computed.
#[wasm_bindgen(js_name = ranksTimeline)]
pub fn ranks_timeline(
    ids: Vec<u32>,
    #[wasm_bindgen(js_name = startNs)] start_ns: f64,
    #[wasm_bindgen(js_name = endNs)] end_ns: f64,
    columns: u32,
    open: Vec<String>,
) -> Result<String, WebError> {
    init();
    let start = ns_arg("startNs", start_ns)?;
    let end = ns_arg("endNs", end_ns)?;
    if end <= start {
        return Err(js_error(format!(
            "empty time range: endNs ({end}) must be after startNs ({start})"
        )));
    }
    let columns = columns.clamp(1, crate::timeline::MAX_COLUMNS);
    LAID.with(|laid| {
        let mut laid = laid.borrow_mut();
        let laid = computed(&mut laid, &ids)?;
        let members = laid
            .ranks
            .iter()
            .enumerate()
            .map(|(i, r)| member(r, (start, end, columns), open.contains(&group_key(i))))
            .collect::<Result<Vec<Member>, WebError>>()?;
        let (mut view, groups) = stack(members, (start, end, columns), laid.extent.start_ns);
        view.range_label = crate::plot::ticks::range_label(
            (view.start_ns, view.end_ns),
            (laid.extent.start_ns, laid.extent.end_ns),
            f64::from(view.columns),
            crate::plot::RULER_FONT_PX,
        );
        laid.drawn.clone_from(&groups);
        to_json(&RanksTimeline {
            layout: crate::plot::lane_layout(&view),
            view: &view,
            groups,
        })
    })
}

/// The ranks timeline of the traces `ids`, when it is the last one computed.
fn computed<'a>(
    laid: &'a mut Option<RankLanes>,
    ids: &[u32],
) -> Result<&'a mut RankLanes, WebError> {
    laid.as_mut().filter(|l| l.ids == ids).ok_or_else(|| {
        js_error("the ranks of these traces are not computed: show the Drill-down first")
    })
}

/// The collective kernel or GPU work under the pointer on lane `lane` of the last ranks
/// timeline drawn over `ids` (with the same `open` groups) at `tNs` of the common clock, as
/// `Hit` JSON with times on that clock, or `null`.
#[wasm_bindgen(js_name = ranksHover)]
pub fn ranks_hover(
    ids: Vec<u32>,
    lane: u32,
    #[wasm_bindgen(js_name = tNs)] t_ns: f64,
    #[wasm_bindgen(js_name = slackNs)] slack_ns: f64,
    open: Vec<String>,
) -> Result<String, WebError> {
    init();
    let t = ns_arg("tNs", t_ns)?;
    let slack = ns_arg("slackNs", slack_ns)?.max(0);
    LAID.with(|laid| {
        let mut laid = laid.borrow_mut();
        let laid = computed(&mut laid, &ids)?;
        let Some((i, g)) = laid
            .drawn
            .iter()
            .enumerate()
            .find(|(_, g)| (g.first_lane..g.first_lane + g.lanes).contains(&lane))
        else {
            return to_json(&None::<crate::timeline::Hit>);
        };
        let Some(r) = laid.ranks.get(i) else {
            return to_json(&None::<crate::timeline::Hit>);
        };
        let what = device_lanes(r, open.contains(&group_key(i)));
        let offset = g.offset_ns;
        let at = (t.saturating_sub(offset), slack);
        let hit = open_trace(r.trace)?
            .device_hit(&what, lane - g.first_lane, at)
            .map_err(WebError::from)?
            .map(|mut h| {
                h.lane = lane;
                h.start_ns = h.start_ns.saturating_add(offset);
                h.end_ns = h.end_ns.saturating_add(offset);
                h
            });
        to_json(&hit)
    })
}

/// Rank `r`'s lanes over `[start, end)` of the common clock: its file's view of the window
/// moved back by its offset.
fn member(
    r: &RankLane,
    (start, end, columns): (Ns, Ns, u32),
    streams: bool,
) -> Result<Member, WebError> {
    let trace = open_trace(r.trace)?;
    let offset = r.group.offset_ns;
    let window = (start.saturating_sub(offset), end.saturating_sub(offset));
    let what = device_lanes(r, streams);
    let view = trace
        .device_view(window, columns, &what)
        .map_err(WebError::from)?;
    Ok(Member {
        group: r.group.clone(),
        view,
    })
}

/// What rank `r`'s group shows of its file: its NCCL kernels' lane, then its device's lanes
/// (one per stream when `streams`).
fn device_lanes(r: &RankLane, streams: bool) -> DeviceLanes<'_> {
    DeviceLanes {
        device: r.group.device,
        streams,
        marked: Some(MarkedLane {
            label: format!("{} · NCCL", r.group.label),
            kind: "collectives",
            events: &r.kernels,
            names: &r.names,
        }),
    }
}
