//! The browser build: the JavaScript API of the page (wasm-bindgen, `--target web`).
//!
//! Two instances of the same module run in the page:
//! - in a dedicated Web Worker, [`Analysis`] holds one trace, opened lazily from the user's
//!   `File` through the read-only blob VFS ([`vfs`]), and answers with JSON strings (ids such as
//!   `globalPid` exceed 2^53, so numbers must not pass through JS values);
//! - on the main thread, `draw` renders views the worker computed onto canvases with plotters.
//!
//! API boundary rule: a panic kills the wasm instance, so every export returns
//! `Result<_, WebError>` and nothing here unwraps or indexes input-derived data. A panic hook still
//! logs to the console, so a bug elsewhere is visible rather than a bare "unreachable".

mod analyses;
mod analysis;
mod draw;
mod format;
mod indexed;
mod lanes;
mod lprof;
mod ranks;
pub mod vfs;
mod whatif;

pub use analyses::{analyze_traces, drill_traces, report_file};
pub use analysis::{
    Analysis, HostSide, bytes_read, keep_no_rows, kept_rows_room, kernel_part, open_batch,
    read_kernel_slice, reader_waits_for_sweep, reads_so_far, rows_handed_out, scan_kernels,
};
pub use draw::{
    draw_bar_chart, draw_gap_histogram, draw_ranks_timeline, draw_skew_chart, draw_step_times,
    draw_timeline, timeline_layout,
};
pub use format::{
    duration_column_unit, format_count, format_duration, format_duration_in, format_percent,
    format_signed_duration, format_signed_percent,
};
pub use lanes::{JsLanes, LaneReader};
pub use lprof::{draw_lprof_rounds, lprof_analyze};
pub use ranks::{ranks_hover, ranks_timeline, ranks_traces};
pub use whatif::{
    step_path, whatif_apart, whatif_fed, whatif_name_count, whatif_names, whatif_plan,
    whatif_traces,
};

use std::fmt::Display;
use std::sync::Once;

use wasm_bindgen::prelude::*;

/// The crate's version (the page shows it).
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The metrics and editable thresholds as JSON ([`crate::detect::catalogue::CATALOGUE`]): the
/// page renders its cards and threshold inputs from it instead of restating them.
#[wasm_bindgen(js_name = metricCatalogue)]
pub fn metric_catalogue() -> Result<String, WebError> {
    to_json(&crate::detect::catalogue::CATALOGUE)
}

/// Installs the panic hook once per instance; every entry point calls it.
pub(crate) fn init() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            web_sys::console::error_1(
                &format!("nsys-lens panicked (a bug, please report it): {info}").into(),
            );
        }));
        crate::trace::heartbeat(beat);
    });
}

#[wasm_bindgen]
extern "C" {
    /// The worker's `self.nsysLensHeartbeat(rows)`: tells the page the core is folding rows
    /// (absent on the main thread, whose instance only draws).
    #[wasm_bindgen(js_namespace = globalThis, js_name = nsysLensHeartbeat, catch)]
    fn js_heartbeat(rows: f64) -> Result<(), JsValue>;
}

/// The core's heartbeat ([`crate::trace::heartbeat`]): the page's watchdog ends an analysis
/// that hears nothing for a set time, so a view that folds for long must be heard.
fn beat(rows: u64) {
    let _ = js_heartbeat(rows as f64);
}

/// An error thrown to the page: a JS `Error` with the message a user reads and a `code` naming
/// its kind ([`crate::Error::code`]; `"internal"` for the web layer's own failures), which the
/// workers pass on so that the page tells errors apart without reading their text.
pub struct WebError(JsValue);

impl std::fmt::Debug for WebError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let error = self.0.dyn_ref::<js_sys::Error>();
        let message = error.map(|e| String::from(e.message()));
        let code = js_sys::Reflect::get(&self.0, &JsValue::from_str("code"))
            .ok()
            .and_then(|c| c.as_string());
        write!(f, "WebError({code:?}: {message:?})")
    }
}

impl WebError {
    fn new(message: &str, code: &str) -> WebError {
        let error = js_sys::Error::new(message);
        // Setting a property on a fresh Error cannot fail; if it did, the message still goes.
        let _ = js_sys::Reflect::set(&error, &JsValue::from_str("code"), &code.into());
        WebError(error.into())
    }
}

impl From<WebError> for JsValue {
    fn from(e: WebError) -> JsValue {
        e.0
    }
}

impl From<crate::Error> for WebError {
    fn from(e: crate::Error) -> WebError {
        WebError::new(&e.to_string(), e.code())
    }
}

/// Any other displayable failure of the web layer, as an `"internal"` error.
pub(crate) fn js_error(e: impl Display) -> WebError {
    WebError::new(&e.to_string(), "internal")
}

/// `value` as JSON text (the exchange format of every export).
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, WebError> {
    serde_json::to_string(value)
        .map_err(|e| js_error(format!("cannot encode the result as JSON: {e}")))
}

/// Parses JSON handed in by the page, naming the argument in the error.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    text: &str,
) -> Result<T, WebError> {
    serde_json::from_str(text).map_err(|e| js_error(format!("invalid {what} JSON: {e}")))
}
