//! The page's "What would it buy": the what-if replay of an open trace (`nsys-lens whatif
//! TRACE --json`, with `--baseline` for a pair: where the regression lies on the critical path)
//! and one steady step's critical path (`whatif TRACE --step N --json`), which the timeline
//! draws.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use super::analyses::open_trace;
use super::indexed::Indexed;
use super::{WebError, from_json, init, js_error, to_json};
use crate::analyze::AnalyzeConfig;
use crate::report::{Versioned, outline};
use crate::whatif::apart::{self, Elsewhere, Names, Plan};
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
/// `elsewhereJson` ([`whatif_apart`]'s or [`whatif_fed`]'s answer) to join; with `feed`, each
/// batch of the rows it replays also goes to a helper that reads no file ([`whatif_fed`]).
#[wasm_bindgen(js_name = whatifTraces)]
pub fn whatif_traces(
    #[wasm_bindgen(js_name = targetId)] target_id: u32,
    #[wasm_bindgen(js_name = baselineId)] baseline_id: Option<u32>,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
    #[wasm_bindgen(js_name = elsewhereJson)] elsewhere_json: Option<String>,
    feed: Option<JsFeed>,
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
            let asked = whatif::asked(&*target, &cfg, &opts.changes)?;
            let (here, away) = apart::shared(&asked);
            let mine = match &feed {
                Some(feed) => target.whatif_feeding(&cfg, &here, &mut PageFeed(feed)),
                None => target.whatif(&cfg, &here),
            };
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

/// The plan for trace `id` (`apart::Plan::to_bytes`): the steady cycles of Root cause's analysis
/// (computed and kept, as the card then reads it) and the changes a helper worker replays
/// ([`whatif_apart`], [`whatif_fed`]); `undefined` when the changes are too few to share.
#[wasm_bindgen(js_name = whatifPlan)]
pub fn whatif_plan(
    id: u32,
    #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
) -> Result<Option<Vec<u8>>, WebError> {
    init();
    let opts: WhatifOptions = from_json("what-if options", options_json)?;
    if opts.path_only {
        return Ok(None);
    }
    let trace = open_trace(id)?;
    let cfg = config(&trace, &opts)?;
    let asked = whatif::asked(&*trace, &cfg, &opts.changes).map_err(WebError::from)?;
    let (_, away) = apart::shared(&asked);
    if away.is_empty() {
        return Ok(None);
    }
    let b = trace.analysis(&cfg).map_err(WebError::from)?;
    Plan::write(&b.steady_cycles, &away)
        .map(Some)
        .map_err(WebError::from)
}

/// `Elsewhere` JSON: a helper worker's replays of `plan`'s changes over trace `id` (the same
/// file as the analysis worker's), for that worker's `whatifTraces` to join.
#[wasm_bindgen(js_name = whatifApart)]
pub fn whatif_apart(id: u32, plan: &[u8]) -> Result<String, WebError> {
    init();
    let plan = Plan::from_bytes(plan).map_err(WebError::from)?;
    let trace = open_trace(id)?;
    let rows = trace.rows().map_err(WebError::from)?;
    let answer = apart::replay_apart(&*rows, &plan).map_err(WebError::from)?;
    to_json(&answer)
}

#[wasm_bindgen]
extern "C" {
    /// `worker.js`'s end of the `SharedArrayBuffer` a helper worker takes the replays' rows
    /// from: `send` copies a batch in, waiting (with a limit) for a free slot, and throws when
    /// the helper stopped or took none for that long.
    pub type JsFeed;

    #[wasm_bindgen(method, catch)]
    fn send(this: &JsFeed, batch: &[u8]) -> Result<(), JsValue>;

    /// The helper's end: `take` waits (with a limit) for the next batch and throws when the
    /// analysis worker stopped or sent none for that long.
    pub type JsFeedIn;

    #[wasm_bindgen(method, catch)]
    fn take(this: &JsFeedIn) -> Result<Vec<u8>, JsValue>;
}

struct PageFeed<'a>(&'a JsFeed);

impl whatif::Feed for PageFeed<'_> {
    fn send(&mut self, batch: &[u8]) -> crate::error::Result<()> {
        self.0.send(batch).map_err(feed_error)
    }
}

fn feed_error(e: JsValue) -> crate::error::Error {
    let detail = e
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "the what-if helper worker failed".into());
    crate::error::Error::Internal { detail }
}

/// How many names trace `id` has: [`whatif_names`] gives them in pieces.
#[wasm_bindgen(js_name = whatifNameCount)]
pub fn whatif_name_count(id: u32) -> Result<u32, WebError> {
    init();
    let trace = open_trace(id)?;
    let rows = trace.rows().map_err(WebError::from)?;
    Ok(rows.meta().strings.len() as u32)
}

/// Names `from..from + count` of trace `id` (`apart::names_piece`): what a helper that reads no
/// file replays with ([`whatif_fed`]).
#[wasm_bindgen(js_name = whatifNames)]
pub fn whatif_names(id: u32, from: u32, count: u32) -> Result<Vec<u8>, WebError> {
    init();
    let trace = open_trace(id)?;
    let rows = trace.rows().map_err(WebError::from)?;
    Ok(apart::names_piece(
        &rows.meta().strings,
        from as usize,
        count as usize,
    ))
}

/// `Elsewhere` JSON: a helper worker that opened no file replays `plan`'s changes
/// ([`whatif_plan`]'s bytes) over the
/// batches of rows the analysis worker's `whatifTraces` hands it through `feed`, named by the
/// pieces of [`whatif_names`] in `names` (an array of `Uint8Array`s), for that worker's
/// `whatifTraces` to join.
#[wasm_bindgen(js_name = whatifFed)]
pub fn whatif_fed(names: js_sys::Array, plan: &[u8], feed: JsFeedIn) -> Result<String, WebError> {
    init();
    let mut known = Names::default();
    for piece in names.iter() {
        let piece = piece
            .dyn_into::<js_sys::Uint8Array>()
            .map_err(|_| js_error("a piece of the names is not bytes"))?;
        known.take_piece(&piece.to_vec()).map_err(WebError::from)?;
    }
    let plan = Plan::from_bytes(plan).map_err(WebError::from)?;
    let mut next = || feed.take().map_err(feed_error);
    let answer = apart::replay_fed_apart(&known, &plan, &mut next).map_err(WebError::from)?;
    to_json(&answer)
}
