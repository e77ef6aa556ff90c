//! The page's bounded-memory open, across two workers (see `crate::streamed`):
//! [`StreamHost`] in the analysis worker loads the host side in steps and hands out the plan;
//! [`KernelPass`] in a loader worker streams the kernel table through the one-pass analyses;
//! [`StreamHost::attach`] joins their results into an [`Analysis`].

use js_sys::Uint8Array;
use rusqlite::Connection;
use wasm_bindgen::prelude::*;
use web_sys::File;

use super::analysis::{Analysis, open_connection, register, report_progress};
use super::js_error;
use super::vfs::Registration;
use crate::model::Trace;
use crate::streamed::{self, ByteSink, HostPlans, KernelPlan, KernelResults, TailReader};
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
    /// ([`KernelPass::feed`]). `onProgress(step, done, total)` returning `false` cancels.
    pub fn open(
        file: File,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
        #[wasm_bindgen(js_name = onFeed)] on_feed: js_sys::Function,
    ) -> Result<StreamHost, JsError> {
        let (name, registration) = register(&file)?;
        let conn = open_connection(&registration, &name).map_err(js_error)?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        let mut staged = StagedLoad::begin(&conn, &name, &mut progress).map_err(js_error)?;
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
            .map_err(js_error)?;
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
    pub fn plan(&mut self) -> Result<Uint8Array, JsError> {
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
    ) -> Result<(), JsError> {
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
            .map_err(js_error)?;
        let trace = staged
            .finish(&self.conn, &self.name, LoadOptions::detect(), &mut progress)
            .map_err(js_error)?;
        if !swept {
            plans.sweep_loaded_launches(&trace);
        }
        self.trace = Some(trace);
        Ok(())
    }

    /// Starts reading kernel rows `first..=last`, which the loader gave away
    /// ([`KernelPass::split_tail`]), once the host side is loaded.
    #[wasm_bindgen(js_name = readKernelTail)]
    pub fn read_kernel_tail(&mut self, first: f64, last: f64) -> Result<(), JsError> {
        let trace = self
            .trace
            .as_ref()
            .ok_or_else(|| order_error("readKernelTail"))?;
        let schema = probe_export(&self.conn, &self.name).map_err(js_error)?;
        let graph_nodes = crate::trace::reads_graph_nodes(&trace.meta, &trace.strings);
        let range = (first as i64, last as i64);
        let reader = TailReader::new(&self.conn, &schema, &self.name, graph_nodes, range)
            .map_err(js_error)?;
        self.tail = Some(reader);
        Ok(())
    }

    /// The next chunk of at most `rows` of those rows, as bytes for [`KernelPass::push_tail`];
    /// `undefined` once all are read.
    #[wasm_bindgen(js_name = kernelTailChunk)]
    pub fn kernel_tail_chunk(&mut self, rows: u32) -> Result<Option<Uint8Array>, JsError> {
        let (Some(reader), Some(trace)) = (&mut self.tail, &self.trace) else {
            return Err(order_error("kernelTailChunk"));
        };
        let chunk = reader
            .next_chunk(&self.conn, rows, |id| trace.strings.resolve(id))
            .map_err(js_error)?;
        Ok(chunk.map(|bytes| Uint8Array::from(&bytes[..])))
    }

    /// Joins the kernel pass's results (bytes from [`KernelPass::finish`]) into the analysis.
    pub fn attach(self, bytes: Uint8Array) -> Result<Analysis, JsError> {
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
        let results = KernelResults::from_bytes(&bytes.to_vec()).map_err(js_error)?;
        let streamed = streamed::Streamed::attach(host, plans, results).map_err(js_error)?;
        Analysis::streamed(name, streamed, conn, registration).map_err(js_error)
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

fn order_error(call: &str) -> JsError {
    js_error(format!(
        "StreamHost.{call} called out of order (open → plan → loadRest → attach)"
    ))
}

/// The kernel table of one file, streamed once (in the loader worker).
#[wasm_bindgen]
pub struct KernelPass {
    pass: streamed::KernelPass,
    conn: Connection,
    on_progress: js_sys::Function,
    _registration: Registration,
}

#[wasm_bindgen]
impl KernelPass {
    /// Opens `file` (no table is read yet); kernels follow with [`KernelPass::step`].
    pub fn open(
        file: File,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
    ) -> Result<KernelPass, JsError> {
        let (name, registration) = register(&file)?;
        let conn = open_connection(&registration, &name).map_err(js_error)?;
        let schema = probe_export(&conn, &name).map_err(js_error)?;
        let pass = streamed::KernelPass::new(&conn, &schema, &name).map_err(js_error)?;
        Ok(KernelPass {
            pass,
            conn,
            on_progress,
            _registration: registration,
        })
    }

    #[wasm_bindgen(js_name = hasPlan)]
    pub fn has_plan(&self) -> bool {
        self.pass.has_plan()
    }

    /// Whether the pass waits for the next chunk of windows ([`KernelPass::feed`]).
    #[wasm_bindgen(js_name = needsFeed)]
    pub fn needs_feed(&self) -> bool {
        self.pass.needs_feed()
    }

    /// The next chunk of windows from the analysis worker (`StreamHost.open`'s `onFeed`), in
    /// order; ignored when the plan carried them whole.
    pub fn feed(&mut self, bytes: Uint8Array) -> Result<(), JsError> {
        self.pass.feed(&bytes.to_vec()).map_err(js_error)
    }

    /// Whether reading must wait for the plan or windows (the waiting buffer is full).
    #[wasm_bindgen(js_name = bufferFull)]
    pub fn buffer_full(&self) -> bool {
        self.pass.buffer_full()
    }

    /// Reads up to `rows` more rows; `false` once the table is read. Fails on a kernel out of
    /// start order (the page then loads the table whole).
    pub fn step(&mut self, rows: u32) -> Result<bool, JsError> {
        let more = self.pass.step(&self.conn, rows).map_err(js_error)?;
        self.progress_or_cancel()?;
        Ok(more)
    }

    /// Reports the rows read so far; the page's `false` cancels.
    fn progress_or_cancel(&self) -> Result<(), JsError> {
        let (done, total) = self.pass.progress();
        let step = Progress {
            step: "streaming kernels",
            done,
            total,
        };
        if !report_progress(&self.on_progress, step) {
            return Err(js_error(crate::error::Error::Cancelled));
        }
        Ok(())
    }

    /// The plan from the analysis worker ([`StreamHost::plan`]'s bytes).
    #[wasm_bindgen(js_name = setPlan)]
    pub fn set_plan(&mut self, bytes: Uint8Array) -> Result<(), JsError> {
        let plan = KernelPlan::from_bytes(&bytes.to_vec()).map_err(js_error)?;
        self.pass.set_plan(plan).map_err(js_error)
    }

    /// Gives `share` (0..1) of the rows left to the analysis worker ([`StreamHost::read_kernel_tail`]):
    /// `[first, last]`, or `undefined` when too few are left.
    #[wasm_bindgen(js_name = splitTail)]
    pub fn split_tail(&mut self, share: f64) -> Option<Box<[f64]>> {
        let (first, last) = self.pass.split_tail(share, streamed::pass::MIN_TAIL_ROWS)?;
        Some(Box::new([first as f64, last as f64]))
    }

    /// Whether rows given to the analysis worker are still to come.
    #[wasm_bindgen(js_name = tailPending)]
    pub fn tail_pending(&self) -> bool {
        self.pass.tail_pending()
    }

    /// The next chunk of those rows ([`StreamHost::kernel_tail_chunk`]'s bytes), once this
    /// pass's own rows are read.
    #[wasm_bindgen(js_name = pushTail)]
    pub fn push_tail(&mut self, bytes: Uint8Array) -> Result<(), JsError> {
        self.pass.push_tail(&bytes.to_vec()).map_err(js_error)?;
        self.progress_or_cancel()
    }

    /// The analyses' results as bytes for [`StreamHost::attach`].
    pub fn finish(self) -> Result<Uint8Array, JsError> {
        let results = self.pass.finish().map_err(js_error)?;
        Ok(Uint8Array::from(&results.to_bytes()[..]))
    }
}
