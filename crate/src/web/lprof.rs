//! line_profiler rounds in the page: the main thread reads the dropped `.txt` files as text and
//! gets the same [`crate::lprof::LprofReport`] as `nsys-lens lprof --json`, with the round chart
//! and the Markdown report from the core; the chart is drawn here with plotters.

use plotters::prelude::IntoDrawingArea;
use plotters_canvas::CanvasBackend;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use super::{WebError, from_json, init, js_error, to_json};
use crate::lprof::{self, LprofInput, LprofReport, Options, names};
use crate::plot::lprof_rounds::{self, RoundChart};
use crate::report::Versioned;

/// One dropped file: `{"name", "text"}`.
#[derive(Deserialize)]
struct FileText {
    name: String,
    text: String,
}

/// `{"top", "ranks", "handoff"}`: the CLI's `--top`, `--ranks` and `--handoff`.
#[derive(Deserialize, Default)]
struct LprofOptions {
    #[serde(default)]
    top: usize,
    #[serde(default)]
    ranks: bool,
    /// The Root cause hand-off's `TLLM_LINE_PROFILER_FUNCTIONS="…"` line, when it was computed.
    #[serde(default)]
    handoff: Option<String>,
}

#[derive(Serialize)]
struct LprofView<'a> {
    /// As `nsys-lens lprof --json` writes it (the page exports it as is).
    report: Versioned<'a, LprofReport>,
    chart: RoundChart,
    markdown: String,
}

/// Analyses line_profiler outputs (`[{"name","text"}]`): `{"report", "chart", "markdown"}`.
#[wasm_bindgen(js_name = lprofAnalyze)]
pub fn lprof_analyze(
    #[wasm_bindgen(js_name = filesJson)] files_json: &str,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<String, WebError> {
    init();
    let files: Vec<FileText> = from_json("line_profiler files", files_json)?;
    let opts: LprofOptions = from_json("line_profiler options", options_json)?;
    let inputs: Vec<LprofInput> = files
        .into_iter()
        .map(|f| LprofInput {
            name: f.name,
            text: f.text,
        })
        .collect();
    let options = Options {
        top: opts.top,
        ranks: opts.ranks,
        handoff_functions: opts
            .handoff
            .as_deref()
            .map(names::functions_of_line)
            .unwrap_or_default(),
    };
    let report = lprof::analyze(&inputs, &options)?;
    to_json(&LprofView {
        chart: RoundChart::of(&report),
        markdown: lprof::report::markdown(&report),
        report: Versioned(&report),
    })
}

/// Draws the round chart (`chart` of `lprofAnalyze`); returns the height in CSS pixels it needs
/// at the canvas's width (size the canvas to it, then draw again).
#[wasm_bindgen(js_name = drawLprofRounds)]
pub fn draw_lprof_rounds(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(js_name = chartJson)] chart_json: &str,
) -> Result<u32, WebError> {
    init();
    let chart: RoundChart = from_json("round chart", chart_json)?;
    let width = canvas.width();
    let backend = CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| js_error("the canvas has no 2D context"))?;
    let root = backend.into_drawing_area();
    lprof_rounds::draw_round_chart(&root, &chart).map_err(js_error)?;
    root.present().map_err(js_error)?;
    Ok(lprof_rounds::round_chart_height(&chart, width))
}
