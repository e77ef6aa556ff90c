//! The page's bounded-memory open, across two workers (see `crate::streamed`):
//! [`StreamHost`] in the analysis worker loads the host side in steps and hands out the plan;
//! [`KernelPass`] in a loader worker streams the kernel table through the one-pass analyses;
//! [`StreamHost::attach`] joins their results into an [`Analysis`].

use js_sys::Uint8Array;
use rusqlite::Connection;
use wasm_bindgen::prelude::*;
use web_sys::File;

use super::analysis::{Analysis, open_connection, register, report_progress};
use super::vfs::Registration;
use super::{WebError, js_error};
use crate::model::Trace;
use crate::streamed::{
    self, Action, ByteSink, HostPlans, KernelResults, LoaderMachine, Message, Schedule, TailReader,
    loader::CHUNK_ROWS,
};
use crate::trace::{LoadOptions, Progress, StagedLoad, probe_export};

/// The host side of a trace being opened: strings and NVTX first, then the API calls.
#[wasm_bindgen]
pub struct StreamHost {
    name: String,
    registration: Registration,
    conn: Connection,
    staged: Option<StagedLoad>,
    /// The detect plans the kernel pass's plan came from, kept for the verdict.
    plans: Option<HostPlans>,
    trace: Option<Trace>,
    /// Kernel rows the loader gave this worker to read ([`StreamHost::read_kernel_tail`]).
    tail: Option<TailReader>,
}

#[wasm_bindgen]
impl StreamHost {
    /// Opens `file`, loads its strings and builds the detect plans from its NVTX ranges, handing
    /// `onFeed(bytes)` each chunk of windows for the kernel pass on the way
    /// (the loader's `"feed"` messages). `onProgress(step, done, total)` returning `false` cancels.
    pub fn open(
        file: File,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
        #[wasm_bindgen(js_name = onFeed)] on_feed: js_sys::Function,
    ) -> Result<StreamHost, WebError> {
        let (name, registration) = register(&file)?;
        let conn = open_connection(&registration, &name).map_err(WebError::from)?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        let mut staged = StagedLoad::begin(&conn, &name, &mut progress).map_err(WebError::from)?;
        // A chunk the page did not take would leave the kernel pass waiting for it: the open
        // fails instead.
        let mut lost = None;
        let mut feed = |bytes: Vec<u8>| {
            let array = Uint8Array::from(&bytes[..]);
            if let Err(e) = on_feed.call1(&JsValue::NULL, &array) {
                lost.get_or_insert(e);
            }
        };
        let plans = HostPlans::load(&mut staged, &conn, &name, &mut progress, &mut feed)
            .map_err(WebError::from)?;
        if let Some(e) = lost {
            let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
            return Err(js_error(format!(
                "the windows for the kernel pass could not be handed to the page: {why}"
            )));
        }
        Ok(StreamHost {
            name,
            registration,
            conn,
            staged: Some(staged),
            plans: Some(plans),
            trace: None,
            tail: None,
        })
    }

    /// The plan for the kernel pass, as bytes to send to the loader worker.
    pub fn plan(&mut self) -> Result<Uint8Array, WebError> {
        let (Some(staged), Some(plans)) = (&self.staged, &mut self.plans) else {
            return Err(order_error("plan"));
        };
        let mut bytes = JsBytes::default();
        plans.write_kernel_plan(staged.trace(), &mut bytes);
        Ok(bytes.array)
    }

    /// Loads the kernel-launch API calls, GPU info and names (what the verdict reads). The
    /// launch calls are swept in the phase windows `feedChunk(i)` gives back: chunk `i` of those
    /// `open` handed out (`undefined` past the last).
    #[wasm_bindgen(js_name = loadRest)]
    pub fn load_rest(
        &mut self,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
        #[wasm_bindgen(js_name = feedChunk)] feed_chunk: js_sys::Function,
    ) -> Result<(), WebError> {
        let mut staged = self.staged.take().ok_or_else(|| order_error("loadRest"))?;
        let plans = self.plans.as_mut().ok_or_else(|| order_error("loadRest"))?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        let mut feed = |i: usize| {
            let chunk = feed_chunk
                .call1(&JsValue::NULL, &JsValue::from(i as f64))
                .ok()?;
            chunk.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec)
        };
        // M2 from the launch calls swept in start order, not held; loaded when they cannot be.
        let swept = plans
            .sweep_launches(
                &self.conn,
                &self.name,
                (&mut staged, &mut progress),
                &mut feed,
            )
            .map_err(WebError::from)?;
        let trace = staged
            .finish(&self.conn, &self.name, LoadOptions::detect(), &mut progress)
            .map_err(WebError::from)?;
        if !swept {
            plans.sweep_loaded_launches(&trace);
        }
        self.trace = Some(trace);
        Ok(())
    }

    /// Starts reading kernel rows `first..=last`, which the loader gave away
    /// (the loader's answer to the offer), once the host side is loaded.
    #[wasm_bindgen(js_name = readKernelTail)]
    pub fn read_kernel_tail(&mut self, first: f64, last: f64) -> Result<(), WebError> {
        let trace = self
            .trace
            .as_ref()
            .ok_or_else(|| order_error("readKernelTail"))?;
        let schema = probe_export(&self.conn, &self.name).map_err(WebError::from)?;
        let graph_nodes = crate::trace::reads_graph_nodes(&trace.meta, &trace.strings);
        let range = (first as i64, last as i64);
        let reader = TailReader::new(&self.conn, &schema, &self.name, graph_nodes, range)
            .map_err(WebError::from)?;
        self.tail = Some(reader);
        Ok(())
    }

    /// The next chunk of those rows (as many as the loader reads per step), as bytes for the
    /// loader's `"tail"` message; `undefined` once all are read.
    #[wasm_bindgen(js_name = kernelTailChunk)]
    pub fn kernel_tail_chunk(&mut self) -> Result<Option<Uint8Array>, WebError> {
        let (Some(reader), Some(trace)) = (&mut self.tail, &self.trace) else {
            return Err(order_error("kernelTailChunk"));
        };
        let chunk = reader
            .next_chunk(&self.conn, CHUNK_ROWS, |id| trace.strings.resolve(id))
            .map_err(WebError::from)?;
        Ok(chunk.map(|bytes| Uint8Array::from(&bytes[..])))
    }

    /// Joins the kernel pass's results (the loader's `"done"` bytes) into the analysis.
    pub fn attach(self, bytes: Uint8Array) -> Result<Analysis, WebError> {
        let StreamHost {
            name,
            registration,
            conn,
            trace,
            plans,
            ..
        } = self;
        let (Some(host), Some(plans)) = (trace, plans) else {
            return Err(order_error("attach"));
        };
        let results = KernelResults::from_bytes(&bytes.to_vec()).map_err(WebError::from)?;
        let streamed = streamed::Streamed::attach(host, plans, results).map_err(WebError::from)?;
        Analysis::streamed(name, streamed, conn, registration).map_err(WebError::from)
    }
}

/// A JS buffer filled piece by piece: bytes on their way to another worker need not sit in
/// wasm memory, which keeps its high-water mark.
struct JsBytes {
    array: Uint8Array,
    at: u32,
}

impl Default for JsBytes {
    fn default() -> JsBytes {
        JsBytes {
            array: Uint8Array::new_with_length(0),
            at: 0,
        }
    }
}

impl ByteSink for JsBytes {
    fn begin(&mut self, len: usize) {
        self.array = Uint8Array::new_with_length(u32::try_from(len).unwrap_or(0));
        self.at = 0;
    }

    /// Bytes past the announced length are dropped (decoding the buffer then fails).
    fn write(&mut self, bytes: &[u8]) {
        let end = u32::try_from(bytes.len())
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.array.length());
        if let Some(end) = end {
            self.array.subarray(self.at, end).copy_from(bytes);
            self.at = end;
        }
    }
}

fn order_error(call: &str) -> WebError {
    js_error(format!(
        "StreamHost.{call} called out of order (open → plan → loadRest → attach)"
    ))
}

/// The kernel table of one file, streamed once (in the loader worker): the page hands it the
/// analysis worker's messages and does what it answers ([`LoaderMachine`]), nothing else.
#[wasm_bindgen]
pub struct KernelPass {
    machine: LoaderMachine,
    conn: Connection,
    on_progress: js_sys::Function,
    _registration: Registration,
}

#[wasm_bindgen]
impl KernelPass {
    /// Opens `file` (no table is read yet). `waitForOffer` is the page's test hook
    /// ([`Schedule::wait_for_offer`]).
    pub fn open(
        file: File,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
        #[wasm_bindgen(js_name = waitForOffer)] wait_for_offer: bool,
    ) -> Result<KernelPass, WebError> {
        let (name, registration) = register(&file)?;
        let conn = open_connection(&registration, &name).map_err(WebError::from)?;
        let schema = probe_export(&conn, &name).map_err(WebError::from)?;
        let pass = streamed::KernelPass::new(&conn, &schema, &name).map_err(WebError::from)?;
        Ok(KernelPass {
            machine: LoaderMachine::new(pass, Schedule::page(wait_for_offer)),
            conn,
            on_progress,
            _registration: registration,
        })
    }

    /// Hands the pass one message — `kind` `"continue"` (nothing new), `"plan"`, `"feed"`,
    /// `"offer"` or `"tail"`, with its bytes — and says what to do next ([`LoaderStep`]).
    pub fn next(&mut self, kind: &str, bytes: Option<Uint8Array>) -> Result<LoaderStep, WebError> {
        let bytes = bytes.map(|b| b.to_vec());
        let payload = || {
            bytes
                .as_deref()
                .ok_or_else(|| js_error(format!("a `{kind}` message without its bytes")))
        };
        let message = match kind {
            "continue" => Message::Continue,
            "plan" => Message::Plan(payload()?),
            "feed" => Message::Feed(payload()?),
            "offer" => Message::Offer,
            "tail" => Message::Tail(payload()?),
            other => return Err(js_error(format!("unknown loader message `{other}`"))),
        };
        let action = self.machine.next(&self.conn, message)?;
        self.progress_or_cancel()?;
        Ok(LoaderStep::from(action))
    }

    /// Reports the rows read so far; the page's `false` cancels.
    fn progress_or_cancel(&self) -> Result<(), WebError> {
        let Some(pass) = self.machine.pass() else {
            return Ok(());
        };
        let (done, total) = pass.progress();
        let step = Progress {
            step: "streaming kernels",
            done,
            total,
        };
        if !report_progress(&self.on_progress, step) {
            return Err(crate::error::Error::Cancelled.into());
        }
        Ok(())
    }
}

/// What the loader worker does next: `kind` is `"continue"` (read on after letting messages
/// in), `"need-plan"`, `"need-feed"`, `"need-offer"`, `"need-tail"` (wait for that message),
/// `"answer"` (tell the analysis worker [`LoaderStep::range`]) or `"done"`
/// ([`LoaderStep::bytes`] for `StreamHost.attach`).
#[wasm_bindgen]
pub struct LoaderStep {
    kind: &'static str,
    range: Option<(i64, i64)>,
    bytes: Option<Vec<u8>>,
}

#[wasm_bindgen]
impl LoaderStep {
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        self.kind.to_string()
    }

    /// The rows `[first, last]` the analysis worker reads (`"answer"`; `undefined`: none).
    #[wasm_bindgen(getter)]
    pub fn range(&self) -> Option<Box<[f64]>> {
        self.range
            .map(|(first, last)| Box::new([first as f64, last as f64]) as Box<[f64]>)
    }

    /// The results (`"done"`).
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> Option<Uint8Array> {
        self.bytes.as_deref().map(Uint8Array::from)
    }
}

impl From<Action> for LoaderStep {
    fn from(action: Action) -> LoaderStep {
        let (kind, range, bytes) = match action {
            Action::Continue => ("continue", None, None),
            Action::NeedPlan => ("need-plan", None, None),
            Action::NeedFeed => ("need-feed", None, None),
            Action::NeedOffer => ("need-offer", None, None),
            Action::NeedTail => ("need-tail", None, None),
            Action::Answer(range) => ("answer", range, None),
            Action::Done(bytes) => ("done", None, Some(bytes)),
        };
        LoaderStep { kind, range, bytes }
    }
}
