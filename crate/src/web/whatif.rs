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
use crate::whatif::{self, Costs, WhatIf};

/// `whatifTraces` and `stepPath` options: `{"step_marker", "changes": [Costs…], "path_only"}`;
/// no change: the standard set (host ×0.5, launches ×0.5, kernels ×0.5, host free);
/// `path_only`: the critical path without predictions (what a pair's regression reads).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct WhatifOptions {
    step_marker: String,
    changes: Vec<Costs>,
    path_only: bool,
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
/// on the critical path when given (`--baseline`), and their report sections.
#[wasm_bindgen(js_name = whatifTraces)]
pub fn whatif_traces(
    #[wasm_bindgen(js_name = targetId)] target_id: u32,
    #[wasm_bindgen(js_name = baselineId)] baseline_id: Option<u32>,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<String, WebError> {
    init();
    let opts: WhatifOptions = from_json("what-if options", options_json)?;
    let target = open_trace(target_id)?;
    let rows = target.rows().map_err(WebError::from)?;
    let cfg = config(&target, &opts)?;
    let mut result = match opts.path_only {
        true => whatif::path_known(&*rows, &cfg, &*target),
        false => target.whatif(&cfg, &opts.changes),
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
