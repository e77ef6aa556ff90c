//! Main-thread exports: the worker computes views, this instance draws them with plotters on a
//! canvas (the same drawing code as the native PNG output, `crate::plot`).

use plotters::prelude::IntoDrawingArea;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use super::{from_json, init, js_error, to_json};
use crate::drill::gaps::GapHistogram;
use crate::plot;
use crate::timeline::TimelineView;

/// Draws a `TimelineView` (JSON from `Analysis.timeline`) onto `canvas`.
#[wasm_bindgen(js_name = drawTimeline)]
pub fn draw_timeline(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = viewJson)] view_json: &str,
) -> Result<(), JsError> {
    init();
    let view: TimelineView = from_json("timeline view", view_json)?;
    let root = backend(canvas)?.into_drawing_area();
    plot::draw_timeline(&root, &view).map_err(js_error)?;
    root.present().map_err(js_error)
}

/// Draws a `GapHistogram` (JSON from `Analysis.gaps`) onto `canvas`.
#[wasm_bindgen(js_name = drawGapHistogram)]
pub fn draw_gap_histogram(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = histJson)] hist_json: &str,
) -> Result<(), JsError> {
    init();
    let hist: GapHistogram = from_json("gap histogram", hist_json)?;
    let root = backend(canvas)?.into_drawing_area();
    plot::draw_gap_histogram(&root, &hist).map_err(js_error)?;
    root.present().map_err(js_error)
}

/// `TIMELINE_LAYOUT` as JSON (label width, top margin, lane height in px), so the page maps a
/// pointer position to a lane and a time exactly as the drawing placed them.
#[wasm_bindgen(js_name = timelineLayout)]
pub fn timeline_layout() -> Result<String, JsError> {
    init();
    to_json(&plot::TIMELINE_LAYOUT)
}

fn backend(canvas: HtmlCanvasElement) -> Result<CanvasBackend, JsError> {
    CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| js_error("the canvas has no 2D context"))
}
