//! The page's deeper views over open traces: root cause (`analyze`, spec §3), drill-down
//! (spec §4) and the explainer report's exports (spec §5); the ranks panel's views are in
//! `ranks`. The same core calls as the CLI's
//! `analyze`, `drill` and `report`; traces are named by their `Analysis.id` so one call can read
//! several (a baseline and a target, or the rank files of one run).

use std::rc::Rc;

use js_sys::Uint8Array;
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::indexed::{self, Drilled, Indexed};
use super::{WebError, from_json, init, js_error, to_json};
use crate::analyze::{self, AnalyzeConfig, AnalyzeReport};
use crate::drill::{DrillInput, DrillOptions, RowIndex};
use crate::findings::DrillFindings;
use crate::names::steps::{StepSource, parse_marker_spec};
use crate::profile::Profile;
use crate::report::{csv, document, html, markdown, outline};

/// `analyzeTraces` options: `{"profile", "tp_size", "baseline_label", "target_label",
/// "step_marker"}` (the marker field: see [`parse_marker_spec`]).
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct AnalyzeOptions {
    profile: Profile,
    tp_size: Option<u32>,
    baseline_label: String,
    target_label: String,
    step_marker: String,
}

/// `drillTraces` options: `{"top", "window": [start, end], "step_marker"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PageDrillOptions {
    top: Option<usize>,
    window: Option<(crate::model::Ns, crate::model::Ns)>,
    step_marker: String,
}

/// The page's marker field as a step source; a bad one is the user's to fix.
pub(super) fn step_source(spec: &str) -> Result<Option<StepSource>, WebError> {
    parse_marker_spec(spec)
        .map_err(|e| WebError::from(crate::error::Error::Usage(format!("step marker: {e}"))))
}

impl Default for AnalyzeOptions {
    fn default() -> AnalyzeOptions {
        AnalyzeOptions {
            profile: Profile::Standard,
            tp_size: None,
            baseline_label: "baseline".into(),
            target_label: "target".into(),
            step_marker: String::new(),
        }
    }
}

/// The report's sections as the page renders them.
#[derive(serde::Serialize)]
struct OutlineView<'a> {
    file: &'a str,
    verdict_not_computed: Option<&'a document::NotComputed>,
    sections: Vec<outline::Section>,
}

/// The open trace `id`, or an error the page can show.
pub(super) fn open_trace(id: u32) -> Result<Rc<Indexed>, WebError> {
    indexed::lookup(id)
        .ok_or_else(|| js_error(format!("trace {id} is not open (closed or replaced)")))
}

/// `AnalyzeReport` JSON of the trace `baselineId`, compared with `targetId` when given (as
/// `nsys-lens analyze BASELINE [TARGET] --json`).
#[wasm_bindgen(js_name = analyzeTraces)]
pub fn analyze_traces(
    #[wasm_bindgen(js_name = baselineId)] baseline_id: u32,
    #[wasm_bindgen(js_name = targetId)] target_id: Option<u32>,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<String, WebError> {
    init();
    let opts: AnalyzeOptions = from_json("analyze options", options_json)?;
    let tp_size = analyze::tp_size_for(opts.profile, opts.tp_size).map_err(WebError::from)?;
    let step_marker = step_source(&opts.step_marker)?;
    let breakdown = |id: u32, label: &str| -> Result<analyze::TraceBreakdown, WebError> {
        let trace = open_trace(id)?;
        let cfg = AnalyzeConfig {
            profile: opts.profile,
            tp_size,
            label: label.to_string(),
            source: label.to_string(),
            step_marker: step_marker.clone(),
        };
        trace.analysis_labelled(&cfg).map_err(WebError::from)
    };
    let baseline = breakdown(baseline_id, &opts.baseline_label)?;
    let target = target_id
        .map(|id| breakdown(id, &opts.target_label))
        .transpose()?;
    to_json(&AnalyzeReport::new(opts.profile, baseline, target))
}

/// `DrillReport` JSON over the traces `ids` (one trace, or one file per rank), as
/// `nsys-lens drill TRACE… --json`. `optionsJson`: `{"top", "window": [start, end]}`.
#[wasm_bindgen(js_name = drillTraces)]
pub fn drill_traces(
    ids: Vec<u32>,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<String, WebError> {
    init();
    let page: PageDrillOptions = from_json("drill options", options_json)?;
    let opts = DrillOptions {
        top: page.top.unwrap_or(crate::drill::DEFAULT_TOP),
        window: page.window,
    };
    let step_marker = step_source(&page.step_marker)?;
    over_inputs(&ids, step_marker.as_ref(), |traces, inputs| {
        drill_inputs(traces, inputs, &opts, &page.step_marker)
    })
}

/// The drill-down of `inputs` (the open `traces`), keeping what the next views reuse.
fn drill_inputs(
    traces: &[Rc<Indexed>],
    inputs: &[DrillInput<'_>],
    opts: &DrillOptions,
    marker: &str,
) -> Result<String, WebError> {
    let (kept, swept) = match (traces, inputs) {
        // One trace under its built-in marker: Root cause or the last drill-down indexed it
        // (and Root cause swept its gaps).
        ([trace], [input]) if input.step_marker.is_none() => (trace.take_index(), trace.swept()),
        _ => (None, None),
    };
    let swept = swept.filter(|_| kept.is_some());
    let indexed = match (kept, inputs.first()) {
        (Some(facts), Some(input)) => {
            let indexed = vec![RowIndex::with_facts(input.rows, input.label, facts)];
            crate::drill::require_kernels(&indexed).map_err(WebError::from)?;
            indexed
        }
        _ => crate::drill::index_inputs(inputs).map_err(WebError::from)?,
    };
    let drilled = DrillFindings::explained_after(&indexed, opts, swept.as_ref());
    if let [trace] = traces {
        // Kept only when read under the built-in marker.
        indexed
            .into_iter()
            .for_each(|ix| trace.keep_index(ix.into_facts()));
    }
    let (drill, explains) = drilled.map_err(WebError::from)?;
    let json = to_json(&drill)?;
    if let ([trace], [explain]) = (traces, &explains[..]) {
        trace.keep_drilled(Drilled {
            key: (opts.top, opts.window, marker.to_string()),
            explain: explain.clone(),
            drill,
        });
    }
    Ok(json)
}

/// `f` over the open traces `ids` and their rows as drill inputs under `step_marker`.
pub(super) fn over_inputs<T>(
    ids: &[u32],
    step_marker: Option<&StepSource>,
    f: impl FnOnce(&[Rc<Indexed>], &[DrillInput<'_>]) -> Result<T, WebError>,
) -> Result<T, WebError> {
    let traces = ids
        .iter()
        .map(|&id| open_trace(id))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = traces
        .iter()
        .map(|t| t.rows())
        .collect::<crate::error::Result<Vec<_>>>()
        .map_err(WebError::from)?;
    let inputs: Vec<DrillInput<'_>> = traces
        .iter()
        .zip(&rows)
        .map(|(t, rows)| DrillInput {
            rows: &**rows,
            label: t.label(),
            step_marker,
        })
        .collect();
    f(&traces, &inputs)
}

/// The explainer report of trace `id` as `format`: `"md"`, `"json"`, `"html"` (one
/// self-contained file) or `"csv-zip"` (every table as CSV in a zip) — the files of
/// `nsys-lens report`, built here so nothing leaves the machine — or `"outline"`: its sections
/// as JSON (`{"file", "verdict_not_computed", "sections"}`), which the page renders for a trace
/// without kernel records (its host side).
#[wasm_bindgen(js_name = reportFile)]
pub fn report_file(id: u32, format: &str, top: u32) -> Result<Uint8Array, WebError> {
    init();
    let trace = open_trace(id)?;
    let opts = DrillOptions {
        top: top.max(1) as usize,
        window: None,
    };
    let doc = report_document(&trace, &opts)?;
    let bytes: Vec<u8> = match format {
        "md" => markdown::render(&doc).into_bytes(),
        "json" => serde_json::to_vec_pretty(&doc).map_err(js_error)?,
        "html" => html::render(&doc).into_bytes(),
        "csv-zip" => {
            let tables = csv::csv_files(&outline::tables(&doc)).map_err(WebError::from)?;
            csv::zip(&tables).map_err(WebError::from)?
        }
        "outline" => {
            let view = OutlineView {
                file: &doc.file,
                verdict_not_computed: doc.verdict_not_computed.as_ref(),
                sections: outline::outline(&doc),
            };
            serde_json::to_vec(&view).map_err(js_error)?
        }
        other => {
            return Err(js_error(format!(
                "unknown report format `{other}` (md, json, html, csv-zip, outline)"
            )));
        }
    };
    Ok(Uint8Array::from(bytes.as_slice()))
}

/// The report of `trace`: from the drill-down the page already computed under the same options
/// when it did (the Drill-down view, then its export), its ranks over the index the trace kept,
/// else from the trace's rows; the verdict is the one the page shows.
fn report_document(
    trace: &Rc<Indexed>,
    opts: &DrillOptions,
) -> Result<document::Document, WebError> {
    let label = trace.label();
    let key = (opts.top, opts.window, String::new());
    let drilled = trace
        .drilled(&key)
        .map(|kept| (kept.explain.clone(), kept.drill.clone()));
    if let Some((explain, drill)) = drilled {
        let detect = trace.detect(&document::verdict_config(label))?;
        let rows = trace.rows()?;
        let classes = crate::analyze::classes::window_classes(&*rows)?;
        let mut doc = document::with_drill_down(label, detect, explain, drill, classes);
        doc.whatif = Some(trace.whatif(&document::whatif_config(label), &[])?);
        let input = DrillInput {
            rows: &*rows,
            label,
            step_marker: None,
        };
        let traces = std::slice::from_ref(trace);
        let (ranks, _) = super::ranks::ranks_reusing(traces, std::slice::from_ref(&input), |_| {})?;
        doc.ranks = Some(ranks);
        return Ok(doc);
    }
    let rows = trace.rows()?;
    let verdict = |cfg: &crate::detect::DetectConfig| trace.detect(cfg);
    Ok(document::build_rows(&*rows, label, opts, &verdict)?)
}
