//! `Analysis`: one trace, opened in the worker, queried by the page with JSON in and out.

use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use web_sys::File;

use std::rc::Rc;

use super::indexed::{self, Indexed};
use super::vfs::{self, Registration};
use super::{WebError, from_json, init, js_error, to_json};
use crate::detect::beside::{self, FactsFold, Folded, Rider, SweepBeside};
use crate::detect::{DetectConfig, SweepInputs, ThresholdOverrides};
use crate::error::Error;
use crate::model::Ns;
use crate::profile::Profile;
use crate::riders::{ReaderSweep, Riders};
use crate::timeline::{StepLane, StepLaneFold};
use crate::trace::{self, HEADER_LEN, Progress, RangeFold, WorkEnds};

/// A loaded trace and the registration of its `File` (dropped, i.e. unregistered, on `free()`).
#[wasm_bindgen]
pub struct Analysis {
    pub(super) name: String,
    pub(super) trace: Rc<Indexed>,
    pub(super) id: u32,
    registration: Registration,
}

/// `detect`'s options from the page: `{"profile", "no_m3", "thresholds", "step_marker",
/// "window"}`, all optional (`step_marker`: the marker field, see
/// `names::steps::parse_marker_spec`; `window`: `[start_ns, end_ns]` as in the export, `detect
/// --window`, a range selected on the timeline).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct DetectOptions {
    profile: Profile,
    no_m3: bool,
    thresholds: ThresholdOverrides,
    step_marker: String,
    window: Option<(Ns, Ns)>,
}

/// A timeline view with its lanes' places (`plot::lane_layout`), as the page reads it.
#[derive(Serialize)]
struct LaidOutView<'a> {
    #[serde(flatten)]
    view: &'a crate::timeline::TimelineView,
    layout: crate::plot::LaneLayout,
}

#[derive(Serialize)]
struct Extent {
    start_ns: Ns,
    end_ns: Ns,
}

/// Times from JS are doubles; anything beyond ±2^61 ns (73 years) is clamped so that the
/// timeline's arithmetic (`end - start`, `start + span`) cannot overflow an i64.
const NS_LIMIT: f64 = (1u64 << 61) as f64;

impl Analysis {
    fn of(name: String, trace: Indexed, registration: Registration) -> Analysis {
        let trace = Rc::new(trace);
        let id = indexed::register(&trace);
        Analysis {
            name,
            trace,
            id,
            registration,
        }
    }
}

#[wasm_bindgen]
impl Analysis {
    /// This trace's id in the worker, for calls over several traces (`analyzeTraces`,
    /// `drillTraces`).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Opens `file` read-only through the blob VFS (no copy into wasm memory) and scans its
    /// tables, as the CLI does: every view then folds over its rows. `onProgress(step, done,
    /// total)` returning `false` cancels.
    pub fn open(
        file: File,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
    ) -> Result<Analysis, WebError> {
        let (name, registration, conn) = open_file(&file)?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        let trace = Indexed::open(conn, &name, &mut progress).map_err(WebError::from)?;
        Ok(Analysis::of(name, trace, registration))
    }

    /// [`Analysis::open`]'s host side: the kernel table is left to the reader worker
    /// ([`scan_kernels`]) meanwhile, and joined by [`HostSide::join`]. The verdict under
    /// `optionsJson` ([`Analysis::detect`]'s) is folded beside: once the NVTX ranges are read,
    /// `onSweep` gets the kernel sweep's inputs as bytes for the reader worker
    /// ([`kernel_part`]), or `null` when the fold gave up.
    #[wasm_bindgen(js_name = openHost)]
    pub fn open_host(
        file: File,
        #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
        #[wasm_bindgen(js_name = onSweep)] on_sweep: js_sys::Function,
    ) -> Result<HostSide, WebError> {
        let (name, registration, conn) = open_file(&file)?;
        let cfg = detect_config(&name, options_json)?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        // The host side folds the launch calls and the timeline's step lane only when it keeps
        // no row: over kept rows the passes after the join cost less than the same folds do
        // while SQLite reads in wasm (at 1 GB they took the host side 3 s longer).
        let folds = indexed::row_cache_budget(&conn) == 0;
        let work = folds.then(|| WorkEnds::read(&conn));
        let mut fold = Relayed {
            fold: FactsFold::new(&cfg, beside::SWEEP_RANGES_MOST, work),
            facts: true,
            on_sweep: &on_sweep,
            relayed: false,
            lane: folds.then(StepLaneFold::default),
            steps: None,
        };
        let host =
            Indexed::open_host(&conn, &name, &mut progress, &mut fold).map_err(WebError::from)?;
        let steps = fold.steps;
        let folded = fold.fold.into_folded().map(|f| (format!("{cfg:?}"), f));
        Ok(HostSide {
            name,
            conn,
            host,
            registration,
            folded,
            launches_left: (!folds).then_some(cfg),
            steps,
        })
    }

    /// The verdict as `DetectReport` JSON. `optionsJson`: `{"profile": "standard" |
    /// "trtllm-skill", "no_m3": bool, "thresholds": {...}, "window": [start_ns, end_ns]}`,
    /// every key optional (`"{}"`).
    pub fn detect(
        &self,
        #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
    ) -> Result<String, WebError> {
        let cfg = detect_config(&self.name, options_json)?;
        let report = self.trace.detect(&cfg).map_err(WebError::from)?;
        to_json(&report)
    }

    /// `{"start_ns", "end_ns"}`: first GPU operation's start to the last one's end.
    #[wasm_bindgen(js_name = timelineExtent)]
    pub fn timeline_extent(&self) -> Result<String, WebError> {
        let (start_ns, end_ns) = self.trace.extent().map_err(WebError::from)?;
        to_json(&Extent { start_ns, end_ns })
    }

    /// `TimelineView` JSON of `[startNs, endNs)` in `columns` pixel columns, the lane groups
    /// named in `folded` (`process:<pid>`, `device:<n>`: a lane's `group`) folded into one lane
    /// each, with the label the page shows above it (`range_label`) and where `drawTimeline`
    /// draws its lanes (`layout`: `plot::LaneLayout`, each lane's top, height and rows in px).
    pub fn timeline(
        &self,
        #[wasm_bindgen(js_name = startNs)] start_ns: f64,
        #[wasm_bindgen(js_name = endNs)] end_ns: f64,
        columns: u32,
        folded: Vec<String>,
    ) -> Result<String, WebError> {
        let start = ns_arg("startNs", start_ns)?;
        let end = ns_arg("endNs", end_ns)?;
        if end <= start {
            return Err(js_error(format!(
                "empty time range: endNs ({end}) must be after startNs ({start})"
            )));
        }
        let mut view = self
            .trace
            .view((start, end), columns, &folded)
            .map_err(WebError::from)?;
        let (origin, trace_end) = self.trace.extent().map_err(WebError::from)?;
        view.range_label = crate::plot::ticks::range_label(
            (view.start_ns, view.end_ns),
            (origin, trace_end),
            f64::from(view.columns),
            crate::plot::RULER_FONT_PX,
        );
        let layout = crate::plot::lane_layout(&view);
        to_json(&LaidOutView {
            view: &view,
            layout,
        })
    }

    /// The event under the pointer as `Hit` JSON, or `null`; `lane` is a lane of the view
    /// drawn with the same `folded` groups, `row` the index of the row under the pointer among
    /// that lane's `layout` rows (on an NVTX lane, the depth whose range is hovered).
    pub fn hover(
        &self,
        lane: u32,
        #[wasm_bindgen(js_name = tNs)] t_ns: f64,
        #[wasm_bindgen(js_name = slackNs)] slack_ns: f64,
        folded: Vec<String>,
        row: Option<u32>,
    ) -> Result<String, WebError> {
        let t = ns_arg("tNs", t_ns)?;
        let slack = ns_arg("slackNs", slack_ns)?.max(0);
        // Rows past the last are the last's (deeper ranges share it).
        let row = row.map(|r| crate::timeline::depth_row(u8::try_from(r).unwrap_or(u8::MAX)));
        let hit = self
            .trace
            .hit((lane, row), (t, slack), &folded)
            .map_err(WebError::from)?;
        to_json(&hit)
    }

    /// `GapHistogram` JSON: GPU-idle gaps of every device, bucketed.
    pub fn gaps(&self) -> Result<String, WebError> {
        to_json(&self.trace.gaps().map_err(WebError::from)?)
    }

    /// The rows computing the verdict with [`Analysis::detect`]'s `optionsJson` reads
    /// (`detect::rows_read`, which its profile decides): the page's progress counts
    /// [`rows_handed_out`] against it.
    #[wasm_bindgen(js_name = verdictRows)]
    pub fn verdict_rows(
        &self,
        #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
    ) -> Result<f64, WebError> {
        let opts: DetectOptions = from_json("detect options", options_json)?;
        Ok(self.trace.verdict_rows(opts.profile) as f64)
    }

    /// The verdict's passes with [`Analysis::detect`]'s `optionsJson`, in the order they run
    /// (`detect::verdict_passes`), as rows and weight of each in turn: the page weighs the rows
    /// still to read by them.
    #[wasm_bindgen(js_name = verdictPasses)]
    pub fn verdict_passes(
        &self,
        #[wasm_bindgen(js_name = optionsJson)] options_json: &str,
    ) -> Result<Vec<f64>, WebError> {
        let opts: DetectOptions = from_json("detect options", options_json)?;
        Ok(self
            .trace
            .verdict_passes(opts.profile)
            .iter()
            .flat_map(|p| [p.rows as f64, p.weight])
            .collect())
    }

    /// The file's name as the user chose it.
    #[wasm_bindgen(js_name = fileName)]
    pub fn file_name(&self) -> String {
        self.name.clone()
    }

    /// `{"size", "reads", "bytes", "ms"}`: how much of the file the blob VFS read (diagnostics:
    /// a lazy open reads a fraction of a large file).
    #[wasm_bindgen(js_name = readStats)]
    pub fn read_stats(&self) -> Result<String, WebError> {
        to_json(&self.registration.stats())
    }
}

/// A trace whose host side is scanned ([`Analysis::open_host`]), waiting for its kernel table.
#[wasm_bindgen]
pub struct HostSide {
    name: String,
    conn: Connection,
    host: trace::HostScan,
    registration: Registration,
    /// The verdict's host facts folded as the ranges were read, under the options' key.
    folded: Option<(String, Folded)>,
    /// The verdict's configuration while its launch sweep waits for the calls the host side
    /// kept ([`HostSide::sweep_launches`]).
    launches_left: Option<DetectConfig>,
    /// The timeline's forward-step lane folded over the same ranges, if they came in order.
    steps: Option<Option<StepLane>>,
}

#[wasm_bindgen]
impl HostSide {
    /// Sweeps the launch calls the host side kept for the verdict folded beside (it kept them
    /// rather than sweep them as it read): the worker runs this while the reader worker still
    /// reads the kernel table, so the verdict has no pass left after the join.
    #[wasm_bindgen(js_name = sweepLaunches)]
    pub fn sweep_launches(&mut self) -> Result<(), WebError> {
        let (Some(cfg), Some((_, folded))) = (self.launches_left.take(), &mut self.folded) else {
            return Ok(());
        };
        if !folded.begin_launches(&cfg, WorkEnds::read(&self.conn)) {
            return Ok(());
        }
        let complete = self
            .host
            .fold_kept_calls(&mut |call| folded.launch_call(call))
            .map_err(WebError::from)?;
        folded.launches_read(complete);
        Ok(())
    }

    /// The open trace, its kernel table joined from the reader worker's `part` (what
    /// [`kernel_part`] returned after the sweep's bytes), or read here when `part` is
    /// `undefined` (the reader failed); `sweep`: the reader's sweep of the GPU work, if it
    /// swept (the verdict then reads only the launch calls).
    pub fn join(
        self,
        part: Option<js_sys::Array>,
        sweep: Option<js_sys::Uint8Array>,
        #[wasm_bindgen(js_name = onProgress)] on_progress: js_sys::Function,
    ) -> Result<Analysis, WebError> {
        let kept = self.host.kernel_blocks_kept();
        let part = part
            .map(|p| kernel_part_of(&p, kept))
            .transpose()
            .map_err(WebError::from)?;
        let mut progress = |p: Progress| report_progress(&on_progress, p);
        let HostSide {
            name,
            conn,
            host,
            registration,
            folded,
            steps,
            ..
        } = self;
        let swept = part.is_some();
        let trace =
            Indexed::join(conn, &name, host, part, &mut progress).map_err(WebError::from)?;
        trace.keep_step_lane(steps);
        if let (Some(sweep), true) = (sweep, swept) {
            let sweep: ReaderSweep = beside::from_bytes(&sweep.to_vec())?;
            let gaps = sweep.gaps();
            trace.keep_ridden(sweep.timeline, gaps);
            if let Some((key, folded)) = folded {
                trace.keep_beside(key, folded, sweep.kernels);
            }
        }
        Ok(Analysis::of(name, trace, registration))
    }
}

/// The reader worker's side of an open, first step: opens `file` on a connection and a wasm
/// instance of its own and reads its catalog; the kernel table is [`read_kernel_slice`]'s,
/// keeping its rows as the budget of this instance allows.
/// `room`: what the analysis worker would keep of the rows ([`kept_rows_room`]), a cap on the
/// rows kept here, which that worker would not copy in. `onProgress` hears the scan as
/// [`Analysis::open`]'s does.
#[wasm_bindgen(js_name = scanKernels)]
pub fn scan_kernels(
    file: File,
    room: Option<f64>,
    #[wasm_bindgen(js_name = onProgress)] on_progress: Option<js_sys::Function>,
) -> Result<(), WebError> {
    let (name, registration, conn) = open_file(&file)?;
    let room = room.map_or(usize::MAX, |r| r.max(0.0) as usize);
    let budget = super::indexed::row_cache_budget(&conn).min(room);
    let mut progress = |p: Progress| on_progress.as_ref().is_none_or(|f| report_progress(f, p));
    let opts = crate::trace::LoadOptions::page();
    // The other GPU work is read once the sweep's inputs come (`SweepBeside::start`): the
    // analysis worker gives the sweep up on exports with millions of forward steps, and the
    // copies held for it would take room both workers need then.
    let scan = trace::ReaderScan::begin(&conn, &name, (opts, budget), &mut progress, true)
        .map_err(WebError::from)?;
    READER.replace(Some(Reader {
        name,
        conn,
        scan,
        sweep: None,
        riders: None,
        _registration: registration,
    }));
    Ok(())
}

/// The reader worker's second step, repeated until it returns `true`: reads the next slice of
/// the kernel table [`scan_kernels`] began (between two, the worker hears its messages). Once
/// the analysis worker's kernel sweep `inputs` came ([`Analysis::open_host`]'s `onSweep`), the
/// GPU work is swept: the kernels kept so far, then each slice as it is read.
#[wasm_bindgen(js_name = readKernelSlice)]
pub fn read_kernel_slice(
    inputs: Option<js_sys::Uint8Array>,
    #[wasm_bindgen(js_name = onProgress)] on_progress: Option<js_sys::Function>,
) -> Result<bool, WebError> {
    let mut progress = |p: Progress| on_progress.as_ref().is_none_or(|f| report_progress(f, p));
    READER.with_borrow_mut(|reader| {
        let Some(reader) = reader else {
            return Err(js_error("no kernel table was begun in this worker"));
        };
        if let (None, Some(bytes)) = (&reader.sweep, inputs) {
            let inputs: SweepInputs = beside::from_bytes(&bytes.to_vec())?;
            // The views after the verdict ride on the sweep when their passes would read the
            // kernels from the file again; they need every kind of GPU work.
            let streams = trace::LoadOptions::page().event_details;
            let riders = (inputs.all_work() && !reader.scan.keeps_every_kernel())
                .then(|| Riders::new(streams));
            reader.riders = riders;
            let rider: &mut dyn Rider = match &mut reader.riders {
                Some(riders) => riders,
                None => &mut (),
            };
            let at = (&reader.conn, reader.name.as_str());
            reader.sweep = Some(SweepBeside::start(
                &mut reader.scan,
                at,
                &mut progress,
                (inputs, rider),
            )?);
        }
        let at = (&reader.conn, reader.name.as_str());
        let done = match &mut reader.sweep {
            Some(sweep) => {
                let rider: &mut dyn Rider = match &mut reader.riders {
                    Some(riders) => riders,
                    None => &mut (),
                };
                sweep.slice(&mut reader.scan, at, &mut progress, rider)?
            }
            None => reader.scan.read_slice(at.0, at.1, &mut progress, None)?,
        };
        Ok(done)
    })
}

/// Whether the reader worker should wait for the kernel sweep's inputs before its next slice
/// ([`read_kernel_slice`]): the slice would hold kernels its memory does not keep, which the
/// sweep, begun later, could not take (`trace::ReaderScan::waits_for_sweep`).
#[wasm_bindgen(js_name = readerWaitsForSweep)]
pub fn reader_waits_for_sweep() -> bool {
    READER.with_borrow(|reader| {
        reader
            .as_ref()
            .is_some_and(|r| r.sweep.is_none() && r.scan.waits_for_sweep())
    })
}

/// The kernel table [`read_kernel_slice`] read: when the GPU work's sweep did not begin and
/// the analysis worker's kernel sweep `inputs` came since, swept here first from the rows kept.
/// Returns `[sweep, shape, block…]`, `Uint8Array`s whose buffers the worker transfers to the
/// analysis worker ([`HostSide::join`]): the sweep's summary (empty when it did not sweep),
/// then the part.
#[wasm_bindgen(js_name = kernelPart)]
pub fn kernel_part(inputs: Option<js_sys::Uint8Array>) -> Result<js_sys::Array, WebError> {
    let Some(mut reader) = READER.take() else {
        return Err(js_error("no kernel table was scanned in this worker"));
    };
    let swept = match (reader.sweep.take(), inputs) {
        (Some(sweep), _) => match reader.riders.take() {
            Some(mut riders) => sweep
                .finish(&mut reader.scan, &mut riders)
                .map(|kernels| riders.finish(kernels)),
            None => sweep
                .finish(&mut reader.scan, &mut ())
                .map(ReaderSweep::alone),
        },
        (None, Some(bytes)) => {
            // Only the kernels kept can be swept now: every one read, so no rider is needed.
            let inputs = beside::from_bytes(&bytes.to_vec())?;
            let at = (&reader.conn, reader.name.as_str());
            beside::sweep_beside(&mut reader.scan, at, &mut |_| true, (inputs, &mut ()))?
                .map(ReaderSweep::alone)
        }
        (None, None) => None,
    };
    let sweep = swept.map(|s| beside::to_bytes(&s)).transpose()?;
    let Reader { conn, scan, .. } = reader;
    drop(conn);
    let (shape, blocks) = scan.into_part().into_bytes().map_err(WebError::from)?;
    let out = js_sys::Array::new();
    out.push(&js_sys::Uint8Array::from(
        sweep.as_deref().unwrap_or_default(),
    ));
    out.push(&js_sys::Uint8Array::from(&shape[..]));
    for block in blocks {
        out.push(&js_sys::Uint8Array::from(&block[..]));
    }
    Ok(out)
}

/// What a reader worker holds between [`scan_kernels`] and [`kernel_part`].
struct Reader {
    name: String,
    conn: Connection,
    scan: trace::ReaderScan,
    /// The GPU work's sweep, once the analysis worker's inputs came.
    sweep: Option<SweepBeside>,
    /// The views folded beside that sweep, if they ride.
    riders: Option<Riders>,
    /// Keeps the file registered while the connection reads it.
    _registration: Registration,
}

thread_local! {
    static READER: std::cell::RefCell<Option<Reader>> = const { std::cell::RefCell::new(None) };
}

/// A [`FactsFold`] that hands the kernel sweep's inputs to the page once the ranges are read,
/// or `null` as soon as the fold gives up: the reader worker, waiting for them, reads on.
/// The timeline's forward-step lane is folded over the same ranges.
struct Relayed<'a> {
    fold: FactsFold<'a>,
    /// Until the facts' fold gives up (it would begin again if handed more ranges).
    facts: bool,
    on_sweep: &'a js_sys::Function,
    relayed: bool,
    /// The step lane's fold, until it is void; its lane once the ranges are read.
    lane: Option<StepLaneFold>,
    steps: Option<Option<StepLane>>,
}

impl Relayed<'_> {
    fn relay(&mut self, inputs: Option<SweepInputs>) {
        if std::mem::replace(&mut self.relayed, true) {
            return;
        }
        let bytes = inputs.and_then(|i| beside::to_bytes(&i).ok());
        let arg: JsValue = match bytes {
            Some(b) => js_sys::Uint8Array::from(&b[..]).into(),
            None => JsValue::NULL,
        };
        // The page relays it; a page that could not leaves the sweep to the passes.
        let _ = self.on_sweep.call1(&JsValue::NULL, &arg);
    }
}

impl RangeFold for Relayed<'_> {
    fn range(
        &mut self,
        row: &crate::model::NvtxRow,
        strings: &crate::model::Strings,
        threads: &crate::model::Threads,
    ) -> bool {
        if self.facts && !self.fold.range(row, strings, threads) {
            self.facts = false;
            self.relay(None);
        }
        if self.lane.as_mut().is_some_and(|l| !l.range(row, strings)) {
            self.lane = None;
        }
        self.facts || self.lane.is_some()
    }

    fn ranges_read(&mut self, meta: &crate::model::Trace, in_order: bool) {
        self.fold.ranges_read(meta, in_order && self.facts);
        let inputs = self.fold.sweep_inputs();
        self.relay(inputs);
        let lane = self.lane.take().filter(|_| in_order);
        self.steps = lane.and_then(StepLaneFold::finish);
    }

    fn call(&mut self, row: &crate::model::rows::CallRow) -> bool {
        self.fold.call(row)
    }

    fn calls_read(&mut self, complete: bool) {
        self.fold.calls_read(complete);
    }
}

/// `detect`'s configuration from the page's options (`optionsJson`) for the trace `label`.
fn detect_config(label: &str, options_json: &str) -> Result<DetectConfig, WebError> {
    let opts: DetectOptions = from_json("detect options", options_json)?;
    if let Some((a, b)) = opts.window
        && b <= a
    {
        return Err(js_error(format!(
            "empty window: its end ({b} ns) must be after its start ({a} ns)"
        )));
    }
    Ok(DetectConfig {
        window: opts.window,
        profile: opts.profile,
        thresholds: opts.thresholds,
        skip_m3: opts.no_m3,
        file_label: label.to_string(),
        step_marker: super::analyses::step_source(&opts.step_marker)?,
    })
}

/// Rows handed out by the views' passes in this instance so far (`trace::rows_handed_out`):
/// a view's progress is the difference over it.
#[wasm_bindgen(js_name = rowsHandedOut)]
pub fn rows_handed_out() -> f64 {
    crate::trace::rows_handed_out() as f64
}

/// Bytes this instance has read from files so far (`web::vfs::bytes_read`): the page's
/// progress counts a scan's from what it was when the scan began.
#[wasm_bindgen(js_name = bytesRead)]
pub fn bytes_read() -> f64 {
    vfs::bytes_read() as f64
}

/// `{"size": 0, "reads", "bytes", "ms"}`: what this instance has read from files so far, and
/// the milliseconds it waited in `FileReaderSync` (`web::vfs::reads_so_far`; the benchmarks
/// print each worker's).
#[wasm_bindgen(js_name = readsSoFar)]
pub fn reads_so_far() -> Result<String, WebError> {
    to_json(&vfs::reads_so_far())
}

/// The next trace opened alone is the first of `traces` the page opens together (the files of
/// one drop): its kept rows leave the others room for their state.
#[wasm_bindgen(js_name = openBatch)]
pub fn open_batch(traces: u32) {
    super::indexed::open_batch(traces as usize);
}

/// What a trace of `fileBytes` opened now could keep of its rows in this instance: beside the
/// traces open, or `alone`, replacing them. The page caps the reader worker's part with it.
#[wasm_bindgen(js_name = keptRowsRoom)]
pub fn kept_rows_room(#[wasm_bindgen(js_name = fileBytes)] file_bytes: f64, alone: bool) -> f64 {
    super::indexed::kept_rows_room(file_bytes.max(0.0) as u64, alone) as f64
}

/// Whether the traces opened next keep no row, every pass reading the file (the page's
/// `?rows=file`).
#[wasm_bindgen(js_name = keepNoRows)]
pub fn keep_no_rows(on: bool) {
    super::indexed::keep_no_rows(on);
}

/// The part [`scan_kernels`] returned, back in this instance with its first `kept` blocks of
/// rows: those past what the budget keeps are not copied in (the reader kept them on a budget
/// of its own, and this instance's memory never shrinks).
fn kernel_part_of(part: &js_sys::Array, kept: usize) -> Result<trace::KernelPart, Error> {
    let bytes = |v: JsValue| v.dyn_into::<js_sys::Uint8Array>().map(|a| a.to_vec());
    let mut items = part.iter().take(kept.saturating_add(1)).map(bytes);
    let malformed = || Error::Internal {
        detail: "the reader worker's scan of the kernel table came back malformed".into(),
    };
    let shape = items.next().and_then(|s| s.ok()).ok_or_else(malformed)?;
    let blocks = items
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| malformed())?;
    trace::KernelPart::from_bytes(&shape, blocks)
}

/// `file` registered with the blob VFS and open: its name, registration and connection.
fn open_file(file: &File) -> Result<(String, Registration, Connection), WebError> {
    let (name, registration) = register(file)?;
    let conn = open_connection(&registration, &name).map_err(WebError::from)?;
    Ok((name, registration, conn))
}

/// Checks the header of `file` and registers it with the blob VFS.
pub(super) fn register(file: &File) -> Result<(String, Registration), WebError> {
    init();
    let name = file.name();
    check_header(file, &name).map_err(WebError::from)?;
    let registration = vfs::register(file)
        .map_err(|detail| Error::Io {
            path: name.clone(),
            detail,
        })
        .map_err(WebError::from)?;
    Ok((name, registration))
}

/// Classifies the file from its first bytes before SQLite sees it, for errors a user can act on
/// (empty, `.nsys-rep`, not SQLite, truncated).
fn check_header(file: &File, name: &str) -> Result<(), Error> {
    let size = vfs::blob_size(file);
    let io = |detail: String| Error::Io {
        path: name.to_string(),
        detail,
    };
    let head = if size == 0 {
        Vec::new()
    } else {
        let reader = vfs::reader().map_err(io)?;
        vfs::read_slice(&reader, file, 0, size.min(HEADER_LEN as u64)).map_err(io)?
    };
    trace::check_header(name, &head, size)
}

/// Opens the registered file read-only through the blob VFS, configured for analysis.
pub(super) fn open_connection(
    registration: &Registration,
    name: &str,
) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(registration.uri(), flags, vfs::VFS_NAME)
        .map_err(|e| trace::sqlite_error(name, "the file", &e))?;
    trace::configure(&conn, name)?;
    Ok(conn)
}

/// Calls the page's progress callback with the step, its rows done and in all, and the bytes
/// this instance has read from files so far; `false` from it (or a throw) cancels the load.
pub(super) fn report_progress(callback: &js_sys::Function, p: Progress) -> bool {
    let result = callback.call4(
        &JsValue::NULL,
        &JsValue::from_str(p.step),
        &JsValue::from_f64(p.done as f64),
        &JsValue::from_f64(p.total as f64),
        &JsValue::from_f64(vfs::bytes_read() as f64),
    );
    match result {
        Ok(v) => v.as_bool() != Some(false),
        Err(e) => {
            web_sys::console::error_2(
                &"nsys-lens: the progress callback threw; cancelling:".into(),
                &e,
            );
            false
        }
    }
}

/// A time argument in ns: finite, clamped to ±2^61.
pub(super) fn ns_arg(what: &str, value: f64) -> Result<Ns, WebError> {
    if !value.is_finite() {
        return Err(js_error(format!(
            "{what} must be a finite number of nanoseconds (got {value})"
        )));
    }
    Ok(value.clamp(-NS_LIMIT, NS_LIMIT) as Ns)
}
