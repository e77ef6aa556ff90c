//! The page's lane workers (`trace::Lane`): with the page cross-origin isolated, the analysis
//! worker starts lane workers once it opened a trace whose kernels or calls it did not keep;
//! each opens the same `File` ([`LaneReader`]), and the analysis worker's passes ask them for
//! `rowid` ranges of the kernel and runtime tables, which they decode while the pass folds
//! ([`Analysis::set_lanes`]). The answers cross a `SharedArrayBuffer` the pass waits on
//! (`Atomics.wait`): a pass is one synchronous call into wasm and hears no message.
//! `worker.js` owns the workers and that buffer; this module holds the two ends' wasm sides.

use wasm_bindgen::prelude::*;
use web_sys::File;

use super::analysis::{Analysis, open_connection, register};
use super::vfs::Registration;
use super::{WebError, js_error};
use crate::error::Error;
use crate::trace::{Lane, RangeAsk, RangeReader, RowKind};

/// A lane worker's reader of the open file.
#[wasm_bindgen]
pub struct LaneReader {
    lane: Lane,
    _registration: Registration,
}

#[wasm_bindgen]
impl LaneReader {
    /// Opens `file` and reads the catalog the rows are decoded with.
    pub fn open(file: File) -> Result<LaneReader, WebError> {
        let (name, registration) = register(&file)?;
        let conn = open_connection(&registration, &name).map_err(WebError::from)?;
        let lane = Lane::open(conn, &name).map_err(WebError::from)?;
        Ok(LaneReader {
            lane,
            _registration: registration,
        })
    }

    /// The processes and threads its catalog numbers (`[processes, threads]`).
    pub fn numbered(&self) -> Vec<u32> {
        let (processes, threads) = self.lane.numbered();
        vec![processes as u32, threads as u32]
    }

    /// The packed rows of a range a pass asked ([`JsLanes`]' `ask`).
    pub fn answer(&self, kind: u8, sql: String, low: f64, high: f64) -> Result<Vec<u8>, WebError> {
        let kind =
            RowKind::from_code(kind).ok_or_else(|| js_error(format!("no row kind {kind}")))?;
        let ask = RangeAsk {
            kind,
            table: kind.table(),
            sql,
            low: low as i64,
            high: high as i64,
        };
        self.lane.answer(&ask).map_err(WebError::from)
    }
}

#[wasm_bindgen]
extern "C" {
    /// `worker.js`'s lanes of an open trace: `ask` posts a range to the next lane in turn,
    /// `take` waits for the oldest answer (throwing when a lane failed or stopped answering),
    /// `ready` says whether it is written, `numbered` is `null` once one failed.
    pub type JsLanes;

    #[wasm_bindgen(method)]
    fn depth(this: &JsLanes) -> u32;

    #[wasm_bindgen(method)]
    fn numbered(this: &JsLanes) -> Option<Vec<u32>>;

    #[wasm_bindgen(method, catch)]
    fn ask(this: &JsLanes, kind: u8, sql: &str, low: f64, high: f64) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch)]
    fn take(this: &JsLanes) -> Result<Vec<u8>, JsValue>;

    #[wasm_bindgen(method)]
    fn ready(this: &JsLanes) -> bool;
}

impl RangeReader for JsLanes {
    fn depth(&self) -> usize {
        JsLanes::depth(self) as usize
    }

    fn numbered(&self) -> Option<(usize, usize)> {
        match JsLanes::numbered(self)?.as_slice() {
            [processes, threads] => Some((*processes as usize, *threads as usize)),
            _ => None,
        }
    }

    fn ask(&self, ask: &RangeAsk) -> crate::error::Result<()> {
        JsLanes::ask(
            self,
            ask.kind.code(),
            &ask.sql,
            ask.low as f64,
            ask.high as f64,
        )
        .map_err(lane_error)
    }

    fn take(&self) -> crate::error::Result<Vec<u8>> {
        JsLanes::take(self).map_err(lane_error)
    }

    fn ready(&self) -> bool {
        JsLanes::ready(self)
    }
}

fn lane_error(e: JsValue) -> Error {
    let detail = e
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "a lane worker failed".into());
    Error::Internal { detail }
}

#[wasm_bindgen]
impl Analysis {
    /// The kernels and calls each pass would ask lanes for: those not kept, of a table in one
    /// sorted run (`worker.js` starts lanes when there are enough to pay for them).
    #[wasm_bindgen(js_name = rowsForLanes)]
    pub fn rows_for_lanes(&self) -> f64 {
        self.trace.rows_for_lanes() as f64
    }

    /// The lanes every pass over this trace asks from now on, when their catalog numbers
    /// its processes and threads alike (once set, for the trace's life).
    #[wasm_bindgen(js_name = setLanes)]
    pub fn set_lanes(&self, lanes: JsLanes) {
        self.trace.set_lanes(lanes);
    }
}
