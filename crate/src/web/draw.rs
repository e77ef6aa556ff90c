//! Main-thread exports: the worker computes views, this instance draws them with plotters on a
//! canvas (the same drawing code as the native PNG output, `crate::plot`).

use plotters::prelude::IntoDrawingArea;
use plotters_canvas::CanvasBackend;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use super::{WebError, from_json, init, js_error, to_json};
use crate::drill::gaps::GapHistogram;
use crate::drill::idle::{IdleAttribution, PRECEDENCE};
use crate::plot::{self, step_times::StepSeries};
use crate::report::charts;
use crate::timeline::TimelineView;

/// Draws a `TimelineView` (JSON from `Analysis.timeline`) onto `canvas`; `arrowJson`
/// (`{"from_lane", "from_ns", "to_lane", "to_ns"}`, optional): a launch → kernel arrow on top;
/// `pathJson` (a step's critical path from `stepPath`, optional): its stretches along the lanes
/// they ran on. Returns how many stretches found a lane in the view.
#[wasm_bindgen(js_name = drawTimeline)]
pub fn draw_timeline(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = viewJson)] view_json: &str,
    #[wasm_bindgen(js_name = arrowJson)] arrow_json: Option<String>,
    #[wasm_bindgen(js_name = pathJson)] path_json: Option<String>,
) -> Result<u32, WebError> {
    init();
    let view: TimelineView = from_json("timeline view", view_json)?;
    let arrow: Option<plot::Arrow> = match arrow_json {
        Some(json) => Some(from_json("launch arrow", &json)?),
        None => None,
    };
    let marks = match path_json {
        Some(json) => path_marks(&view, &from_json("critical path", &json)?),
        None => Vec::new(),
    };
    let root = backend(canvas)?.into_drawing_area();
    plot::draw_timeline_with(&root, &view, arrow.as_ref(), &marks).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(marks.len() as u32)
}

/// The groups of a ranks timeline (`ranksTimeline`'s JSON).
#[derive(Deserialize)]
struct Grouped {
    groups: Vec<crate::timeline::stack::LaneGroup>,
}

/// Draws the ranks timeline (JSON from `ranksTimeline`: a `TimelineView` with its `groups`)
/// onto `canvas`: its lanes as `drawTimeline` draws them, a rule between the ranks' groups and
/// the straggler's marked.
#[wasm_bindgen(js_name = drawRanksTimeline)]
pub fn draw_ranks_timeline(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = viewJson)] view_json: &str,
) -> Result<(), WebError> {
    init();
    let view: TimelineView = from_json("ranks timeline", view_json)?;
    let grouped: Grouped = from_json("ranks timeline groups", view_json)?;
    let root = backend(canvas)?.into_drawing_area();
    plot::groups::draw_grouped_timeline(&root, &view, &grouped.groups).map_err(js_error)?;
    root.present().map_err(js_error)
}

/// Draws the skew per collective (the `chart` of `ranksTraces`: `plot::skew::SkewSeries`)
/// onto `canvas`, binned to its width; returns the height in CSS pixels the chart needs.
#[wasm_bindgen(js_name = drawSkewChart)]
pub fn draw_skew_chart(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = chartJson)] chart_json: &str,
) -> Result<u32, WebError> {
    init();
    let series: plot::skew::SkewSeries = from_json("skew chart", chart_json)?;
    let root = backend(canvas)?.into_drawing_area();
    plot::skew::draw_skew_chart(&root, &series).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(plot::skew::SKEW_CHART_HEIGHT)
}

/// A step's critical path as `stepPath` gives it (`whatif::StepPath`): what drawing reads.
#[derive(Deserialize)]
struct StepPathIn {
    segments: Vec<SegmentIn>,
}

#[derive(Deserialize)]
struct SegmentIn {
    start_ns: i64,
    end_ns: i64,
    place: PlaceIn,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum PlaceIn {
    Thread { tid: String },
    Stream { device: u32, stream: u32 },
}

/// Each stretch on the lane that shows where it ran (its thread's, its stream's), dropped when
/// the view has none.
fn path_marks(view: &TimelineView, path: &StepPathIn) -> Vec<plot::PathMark> {
    path.segments
        .iter()
        .filter_map(|s| {
            let lane = match &s.place {
                PlaceIn::Thread { tid } => view.thread_lane(tid.parse().ok()?),
                PlaceIn::Stream { device, stream } => view.stream_lane(*device, *stream),
            }?;
            Some(plot::PathMark {
                lane,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
            })
        })
        .collect()
}

/// Draws a `GapHistogram` (JSON from `Analysis.gaps`) onto `canvas`.
#[wasm_bindgen(js_name = drawGapHistogram)]
pub fn draw_gap_histogram(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = histJson)] hist_json: &str,
) -> Result<(), WebError> {
    init();
    let hist: GapHistogram = from_json("gap histogram", hist_json)?;
    let root = backend(canvas)?.into_drawing_area();
    plot::draw_gap_histogram(&root, &hist).map_err(js_error)?;
    root.present().map_err(js_error)
}

/// One series of `drawStepTimes`: a trace's label and its per-step wall times (µs), as
/// `step_wall_times_us` of an `AnalyzeReport` trace.
#[derive(Deserialize)]
struct Series {
    label: String,
    wall_us: Vec<f64>,
}

/// Draws per-step wall time, step by step, one line per trace (`[{"label", "wall_us"}]`).
#[wasm_bindgen(js_name = drawStepTimes)]
pub fn draw_step_times(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = seriesJson)] series_json: &str,
) -> Result<(), WebError> {
    init();
    let series: Vec<Series> = from_json("step series", series_json)?;
    let series: Vec<StepSeries<'_>> = series
        .iter()
        .map(|s| StepSeries {
            label: &s.label,
            wall_us: &s.wall_us,
        })
        .collect();
    let root = backend(canvas)?.into_drawing_area();
    plot::step_times::draw_step_times(&root, &series).map_err(js_error)?;
    root.present().map_err(js_error)
}

/// A bar chart as the report draws it: `{"title", "bars": [{"label", "value", "text",
/// "flagged"}]}` (per-rank lateness, functional blocks …).
#[derive(Deserialize)]
struct ChartSpec {
    title: String,
    bars: Vec<BarSpec>,
}

#[derive(Deserialize)]
struct BarSpec {
    label: String,
    value: f64,
    #[serde(default)]
    text: String,
    #[serde(default)]
    flagged: bool,
}

/// Draws a horizontal bar chart; returns the height in CSS pixels the chart needs (size the
/// canvas to it, then draw again).
#[wasm_bindgen(js_name = drawBarChart)]
pub fn draw_bar_chart(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = chartJson)] chart_json: &str,
) -> Result<u32, WebError> {
    init();
    let spec: ChartSpec = from_json("bar chart", chart_json)?;
    let chart = charts::BarChart {
        title: spec.title,
        bars: spec
            .bars
            .into_iter()
            .map(|b| charts::Bar {
                label: b.label,
                value: b.value,
                text: b.text,
                flagged: b.flagged,
            })
            .collect(),
    };
    let root = backend(canvas)?.into_drawing_area();
    charts::draw_bar_chart(&root, &chart).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(charts::bar_chart_height(&chart))
}

/// Draws "where the GPU-idle time went" from the `idle` of a `DrillReport` (JSON); returns the
/// height in CSS pixels the chart needs at the canvas's width (size the canvas, draw again).
#[wasm_bindgen(js_name = drawIdleCauses)]
pub fn draw_idle_causes(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = idleJson)] idle_json: &str,
) -> Result<u32, WebError> {
    init();
    let idle: IdleAttribution = from_json("idle attribution", idle_json)?;
    let width = canvas.width();
    let root = backend(canvas)?.into_drawing_area();
    plot::idle_causes::draw_idle_causes(&root, &idle).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(plot::idle_causes::idle_causes_height(&idle, width))
}

/// One trace of `drawKernelClasses`: its label and its `kernel_classes` (as a breakdown of
/// `AnalyzeReport` gives them).
#[derive(Deserialize)]
struct ClassesOf {
    label: String,
    classes: crate::analyze::classes::KernelClasses,
}

/// Draws the stacked bars of GPU time per kernel class, one per trace (and phase), from
/// `[{"label", "classes"}]` (`classes`: a breakdown's `kernel_classes`); returns the height in
/// CSS pixels the chart needs at the canvas's width (size the canvas, draw again).
#[wasm_bindgen(js_name = drawKernelClasses)]
pub fn draw_kernel_classes(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = tracesJson)] traces_json: &str,
) -> Result<u32, WebError> {
    init();
    let traces: Vec<ClassesOf> = from_json("kernel classes", traces_json)?;
    let traces: Vec<(&str, &crate::analyze::classes::KernelClasses)> = traces
        .iter()
        .map(|t| (t.label.as_str(), &t.classes))
        .collect();
    let chart = charts::kernel_class_bars(&traces);
    let width = canvas.width();
    let root = backend(canvas)?.into_drawing_area();
    plot::kernel_classes::draw_class_bars(&root, &chart).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(plot::kernel_classes::class_bars_height(&chart, width))
}

/// `{class: "#rrggbb"}`: the colour of each kernel class (the timeline's and
/// `drawKernelClasses`'), so the page's class table uses the same ones.
#[wasm_bindgen(js_name = kernelClassColours)]
pub fn kernel_class_colours() -> Result<String, WebError> {
    init();
    let colours: std::collections::BTreeMap<&str, String> =
        crate::names::kernels::KernelCategory::ALL
            .iter()
            .map(|k| {
                let c = plot::class_color(k.key());
                (k.key(), format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2))
            })
            .collect();
    to_json(&colours)
}

/// `{kind: "#rrggbb"}`: the colour of each idle-time cause in `drawIdleCauses`, so the page's
/// list beside the chart uses the same ones.
#[wasm_bindgen(js_name = idleCauseColours)]
pub fn idle_cause_colours() -> Result<String, WebError> {
    init();
    let colours: std::collections::BTreeMap<&str, String> = PRECEDENCE
        .iter()
        .map(|&k| {
            let c = plot::idle_causes::cause_colour(k);
            (k.name(), format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2))
        })
        .collect();
    to_json(&colours)
}

/// `TIMELINE_LAYOUT`'s label width and ruler height as JSON, so the page maps a pointer
/// position to a time exactly as the drawing placed it. Lanes are not of one height (an NVTX
/// lane has a row per nesting depth): their places come with each view (`layout` of
/// `Analysis.timeline`, `plot::lane_layout`), which `drawTimeline` draws by.
#[wasm_bindgen(js_name = timelineLayout)]
pub fn timeline_layout() -> Result<String, WebError> {
    init();
    to_json(&plot::TIMELINE_LAYOUT)
}

fn backend(canvas: HtmlCanvasElement) -> Result<CanvasBackend, WebError> {
    CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| js_error("the canvas has no 2D context"))
}
