//! The page's "What would it buy": the what-if replay of an open trace (`nsys-lens whatif
//! TRACE --json`, with `--baseline` for a pair: where the regression lies on the critical path)
//! and one steady step's critical path (`whatif TRACE --step N --json`), which the timeline
//! draws.

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use super::analyses::open_trace;
use super::indexed::Indexed;
use super::{WebError, from_json, init, to_json};
use crate::analyze::AnalyzeConfig;
use crate::report::{Versioned, outline};
use crate::whatif::apart::{self, Elsewhere, Plan};
use crate::whatif::{self, Costs, WhatIf};

/// `whatifTraces`, `whatifPlan` and `stepPath` options: `{"step_marker", "changes": [Costs…],
/// "path_only", "split"}`; no change: the standard set (host ×0.5, launches ×0.5,
/// kernels ×0.5, host free); `path_only`: the critical path without predictions (what a pair's
/// regression reads); `split`: only this worker's share of the changes (`whatif::apart`), with
/// the helper worker's predictions of the rest (`whatifTraces`'s `elsewhereJson`) joined.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct WhatifOptions {
    step_marker: String,
    changes: Vec<Costs>,
    path_only: bool,
    split: bool,
}

/// Root cause's configuration for `trace` (its steps under the page's marker), as the CLI's.
fn config(trace: &Indexed, opts: &WhatifOptions) -> Result<AnalyzeConfig, WebError> {
    Ok(AnalyzeConfig {
        label: trace.label().to_string(),
        source: trace.label().to_string(),
        step_marker: super::analyses::step_source(&opts.step_marker)?,
        ..AnalyzeConfig::default()
    })
}

/// What the card shows: the answer as `nsys-lens whatif TARGET [--baseline BASE] --json` gives
/// it, and the report's sections of it (sentences and tables), which the page renders as they
/// are.
#[derive(Serialize)]
struct WhatifView<'a> {
    whatif: Versioned<'a, WhatIf>,
    section: outline::Section,
    regression: Option<outline::Section>,
}

/// `{"whatif", "section", "regression"}` of trace `targetId`: its what-if answer (`WhatIf` as
/// `nsys-lens whatif TARGET --json`), with where the step time's change from `baselineId` lies
/// on the critical path when given (`--baseline`), and their report sections. Under `split`,
/// this worker's share of the changes, kept for the call that brings the helper's
/// `elsewhereJson` ([`whatif_apart`]'s answer) to join.
#[wasm_bindgen(js_name = whatifTraces)]
pub fn whatif_traces(
    #[wasm_bindgen(js_name = targetId)] target_id: u32,
    #[wasm_bindgen(js_name = baselineId)] baseline_id: Option<u32>,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
    #[wasm_bindgen(js_name = elsewhereJson)] elsewhere_json: Option<String>,
) -> Result<String, WebError> {
    init();
    let opts: WhatifOptions = from_json("what-if options", options_json)?;
    let elsewhere: Option<Elsewhere> = elsewhere_json
        .map(|j| from_json("the helper's predictions", &j))
        .transpose()?;
    let target = open_trace(target_id)?;
    let rows = target.rows().map_err(WebError::from)?;
    let cfg = config(&target, &opts)?;
    let mut result = match (opts.path_only, opts.split) {
        (true, _) => whatif::path_known(&*rows, &cfg, &*target),
        (false, false) => target.whatif(&cfg, &opts.changes),
        (false, true) => {
            let (here, away) = apart::shared(&opts.changes);
            let mine = target.whatif(&cfg, &here);
            match elsewhere {
                Some(came) => mine
                    .and_then(|m| apart::join(m, &away, came))
                    .inspect(|joined| {
                        target.keep_whatif(&cfg, &opts.changes, joined);
                    }),
                None => mine,
            }
        }
    }
    .map_err(WebError::from)?;
    if let Some(id) = baseline_id {
        let baseline = open_trace(id)?;
        let rows = baseline.rows().map_err(WebError::from)?;
        let path = whatif::path_known(&*rows, &config(&baseline, &opts)?, &*baseline)
            .map_err(WebError::from)?;
        result.regression = Some(whatif::compare::regression(&path, &result));
    }
    to_json(&WhatifView {
        whatif: Versioned(&result),
        section: outline::whatif_section(&result),
        regression: result.regression.as_ref().map(outline::regression_section),
    })
}

/// `StepPath` JSON: the critical path of steady step `step` (from 0) of trace `id`, in the
/// export's times, as `nsys-lens whatif TRACE --step N --json`.
#[wasm_bindgen(js_name = stepPath)]
pub fn step_path(
    id: u32,
    step: u32,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<String, WebError> {
    init();
    let opts: WhatifOptions = from_json("what-if options", options_json)?;
    let trace = open_trace(id)?;
    let rows = trace.rows().map_err(WebError::from)?;
    let path = whatif::step_path(&*rows, &config(&trace, &opts)?, step as usize)
        .map_err(WebError::from)?;
    to_json(&Versioned(&path))
}

/// `Plan` JSON for trace `id`: the steady cycles of Root cause's analysis (computed and kept,
/// as the card then reads it) and the changes a helper worker replays ([`whatif_apart`]);
/// `undefined` when the changes are too few to share.
#[wasm_bindgen(js_name = whatifPlan)]
pub fn whatif_plan(
    id: u32,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<Option<String>, WebError> {
    init();
    let opts: WhatifOptions = from_json("what-if options", options_json)?;
    let trace = open_trace(id)?;
    let (_, away) = apart::shared(&opts.changes);
    if away.is_empty() || opts.path_only {
        return Ok(None);
    }
    let b = trace
        .analysis(&config(&trace, &opts)?)
        .map_err(WebError::from)?;
    let plan = Plan {
        cycles: b.steady_cycles.to_vec(),
        changes: away,
    };
    to_json(&plan).map(Some)
}

/// `Elsewhere` JSON: a helper worker's replays of `plan`'s changes over trace `id` (the same
/// file as the analysis worker's), for that worker's `whatifTraces` to join.
#[wasm_bindgen(js_name = whatifApart)]
pub fn whatif_apart(
    id: u32,
    #[wasm_bindgen(js_name = planJson)] plan_json: &str,
) -> Result<String, WebError> {
    init();
    let plan: Plan = from_json("what-if plan", plan_json)?;
    let trace = open_trace(id)?;
    let rows = trace.rows().map_err(WebError::from)?;
    let answer = apart::replay_apart(&*rows, &plan).map_err(WebError::from)?;
    to_json(&answer)
}
