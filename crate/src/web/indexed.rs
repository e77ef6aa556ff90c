//! An open trace as the page's views read it, the way the CLI reads it: the export still open,
//! its tables scanned once (`trace::FileScan`, as many of their rows kept in memory as the page's
//! budget allows), every view a fold over its rows read again in start order
//! (`trace::FileRows`, sorted runs merged). The timeline's summary is built on first use; its
//! zoomed-in views and hovers read rows again by `rowid` (`trace::FileReads`).

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use rusqlite::Connection;

use super::lanes::JsLanes;
use crate::analyze::{self, AnalyzeConfig, DrillRead, TraceBreakdown};
use crate::costs::Costs;
use crate::detect::beside::Folded;
use crate::detect::{self, DetectConfig, DetectReport, KernelSummary};
use crate::drill::gap_report::SweptGaps;
use crate::drill::gaps::{GapHistogram, idle_gap_histogram};
use crate::error::Result;
use crate::index::rows::IndexFacts;
use crate::model::Ns;
use crate::model::rows::EventRows;
use crate::profile::Profile;
use crate::reread::FileReads;
use crate::timeline::{Detail, DeviceLanes, Hit, KernelSource, StepLane, Timeline, TimelineView};
use crate::trace::{
    FileRows, FileScan, HostScan, KernelPart, LoadOptions, ProgressFn, RangeFold, RowBudget,
    Schema, SharedBudget,
};
use crate::whatif::{self, WhatIf};

/// What a scan in this instance may keep of the rows its views read (`trace::row_budget`),
/// counting the wasm memory grown so far as used (it never shrinks): the reader worker's.
pub(crate) fn row_cache_budget(conn: &Connection) -> usize {
    match KEEP_NONE.get() {
        true => 0,
        false => crate::trace::row_budget(file_bytes(conn), wasm_memory_bytes()),
    }
}

/// The next opens keep no row, every pass reading the file (the page's `?rows=file`): how a
/// trace too large to keep any row is read, on a small one.
pub(crate) fn keep_no_rows(on: bool) {
    KEEP_NONE.set(on);
}

thread_local! {
    /// The budget the open traces' kept rows share.
    static SHARED: RefCell<Option<SharedBudget>> = const { RefCell::new(None) };
    /// How many traces the next one opened alone is the first of.
    static BATCH: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
    /// [`keep_no_rows`].
    static KEEP_NONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The next trace opened alone is the first of `traces` opened together (the rank files of one
/// drop): its budget leaves the others their state (`trace::SharedBudget::first`).
pub(crate) fn open_batch(traces: usize) {
    BATCH.set(traces.max(1));
}

/// What a trace opened now may keep of its rows, together with every trace open: the first
/// of a batch sets the budget as [`row_cache_budget`] does; a trace opened while others are
/// open shares theirs (`trace::SharedBudget`: eight rank files keep what one may). A closed
/// trace gives its rows back.
pub(crate) fn shared_row_budget(conn: &Connection) -> RowBudget {
    if KEEP_NONE.get() {
        return RowBudget::new(0);
    }
    let bytes = file_bytes(conn);
    let others_open = any_open();
    SHARED.with_borrow_mut(|shared| match shared {
        Some(shared) if others_open => shared.open_beside(bytes),
        _ => {
            let first = SharedBudget::first(bytes, wasm_memory_bytes(), BATCH.get());
            let budget = first.budget();
            *shared = Some(first);
            budget
        }
    })
}

/// What a trace of `file_bytes` opened now could keep of its rows ([`shared_row_budget`]),
/// `alone` if it is to replace every trace open: what the reader worker, on a budget of its
/// own, keeps at most of its kernel table for this instance.
pub(crate) fn kept_rows_room(file_bytes: u64, alone: bool) -> usize {
    if KEEP_NONE.get() {
        return 0;
    }
    SHARED.with_borrow(|shared| match shared {
        Some(shared) if !alone && any_open() => shared.room_beside(file_bytes),
        _ => SharedBudget::first_room(file_bytes, wasm_memory_bytes(), BATCH.get()),
    })
}

/// This instance's memory, grown so far (it never shrinks).
fn wasm_memory_bytes() -> usize {
    core::arch::wasm32::memory_size(0) * 65536
}

/// The size of the open export (0 if SQLite cannot say).
/// In `u64`: a wasm32 `usize` stops at 4 GiB.
pub(crate) fn file_bytes(conn: &Connection) -> u64 {
    let pragma = |name: &str| -> u64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .map_or(0, |v| u64::try_from(v).unwrap_or(0))
    };
    pragma("page_count").saturating_mul(pragma("page_size"))
}

pub(crate) struct Indexed {
    /// The file's name, as results label the trace.
    label: String,
    /// The export, still open: every view reads its rows.
    conn: Connection,
    /// Where each table's rows lie, the catalog (strings, processes, threads), the kept rows.
    scan: Box<FileScan>,
    /// What the timeline's zoomed-in views and hovers read again: GPU work, forward steps,
    /// host tracks, launch links.
    reads: FileReads,
    /// The timeline summary, built on first use.
    timeline: OnceCell<Box<Timeline>>,
    /// What the reader worker folded beside its sweep of the GPU work
    /// ([`Indexed::keep_ridden`]), until the first timeline and gaps take it.
    ridden: RefCell<Ridden>,
    /// The last drill-down of this trace alone, with its explainer report, under the options
    /// it was asked for: the report's export reads it rather than every table again.
    drilled: RefCell<Option<Drilled>>,
    /// What drill's index read of the trace's rows (steps under the first built-in marker
    /// met), left by Root cause or a drill-down: the next drill-down does not read the rows
    /// again to index them.
    index: RefCell<Option<IndexFacts>>,
    /// The gaps Root cause's window pass swept with that index: the next drill-down under the
    /// same options does not sweep them again.
    swept: RefCell<Option<SweptGaps>>,
    /// The last verdict and its options (their `Debug` text: a custom step marker is a regex,
    /// which has no equality): the report's export after the Drill-down asks for the verdict
    /// the page already shows, and should not read every row again for it.
    verdict: RefCell<Option<(String, DetectReport)>>,
    /// The last Root cause analysis and its options but the label (their `Debug` text): the
    /// what-if card finds the steady steps with it, then the Root cause view shows it, and the
    /// report's replay asks for it again.
    analysis: RefCell<Option<(String, Rc<TraceBreakdown>)>>,
    /// The verdict's host facts folded as the host side read its ranges and the reader
    /// worker's sweep of the GPU work, under the options (`DetectConfig`'s debug form) of the
    /// open: the first verdict under them reads only the launch calls again.
    beside: RefCell<Option<(String, Folded, KernelSummary)>>,
    /// The last what-if answer and its options (`AnalyzeConfig` and the changes, their `Debug`
    /// text): the report's export asks for the card's answer again, a replay that takes as long
    /// as the card and as much memory.
    whatif: RefCell<Option<(String, WhatIf)>>,
    /// The lane workers that read the kernels and calls not kept for every pass
    /// (`web::lanes`), once they began.
    lanes: OnceCell<JsLanes>,
}

/// The timeline's GPU lanes and the gap histogram the reader worker folded beside its sweep
/// (`web::riders`), and the forward-step lane the host side folded over its ranges.
#[derive(Default)]
struct Ridden {
    timeline: Option<Timeline>,
    gaps: Option<GapHistogram>,
    steps: Option<Option<StepLane>>,
}

/// A drill-down of one trace kept for its report ([`Indexed::keep_drilled`]).
pub(crate) struct Drilled {
    /// `top`, `window` and the step marker's text, as the page asked.
    pub key: (usize, Option<(Ns, Ns)>, String),
    pub drill: crate::findings::DrillFindings,
    pub explain: crate::explain::ExplainReport,
}

impl Indexed {
    /// Scans the export open in `conn` (`progress` returning `false` cancels).
    pub(crate) fn open(conn: Connection, label: &str, progress: ProgressFn<'_>) -> Result<Indexed> {
        let budget = shared_row_budget(&conn);
        let scan =
            FileScan::keeping_rows_within(&conn, label, LoadOptions::page(), progress, &budget)?;
        Indexed::of_scan(conn, label, scan)
    }

    /// The host side of [`Indexed::open`], the kernel table left to the reader worker
    /// (`trace::KernelPart`); [`Indexed::join`] ends it.
    pub(crate) fn open_host(
        conn: &Connection,
        label: &str,
        progress: ProgressFn<'_>,
        fold: &mut dyn RangeFold,
    ) -> Result<HostScan> {
        let budget = shared_row_budget(conn);
        let opts = LoadOptions::page();
        FileScan::host_side_folding(conn, label, (opts, &budget), progress, fold)
    }

    /// [`Indexed::open`] from its host side and the reader worker's kernel part (`None`: the
    /// reader failed, the kernel table is read here).
    pub(crate) fn join(
        conn: Connection,
        label: &str,
        host: HostScan,
        part: Option<KernelPart>,
        progress: ProgressFn<'_>,
    ) -> Result<Indexed> {
        let scan = host.finish(&conn, progress, part)?;
        Indexed::of_scan(conn, label, scan)
    }

    fn of_scan(conn: Connection, label: &str, scan: FileScan) -> Result<Indexed> {
        let reads = FileReads::new(&Schema::probe(&conn, label)?);
        Ok(Indexed {
            label: label.to_string(),
            conn,
            scan: Box::new(scan),
            reads,
            timeline: OnceCell::new(),
            ridden: RefCell::new(Ridden::default()),
            drilled: RefCell::new(None),
            index: RefCell::new(None),
            swept: RefCell::new(None),
            verdict: RefCell::new(None),
            analysis: RefCell::new(None),
            beside: RefCell::new(None),
            whatif: RefCell::new(None),
            lanes: OnceCell::new(),
        })
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Keeps what drill's index read of this trace's rows (under the first built-in marker).
    pub(crate) fn keep_index(&self, facts: IndexFacts) {
        if facts.builtin_marker() {
            self.index.replace(Some(facts));
        }
    }

    /// Keeps what Root cause read of this trace's rows for its drill-down (under the first
    /// built-in marker): drill's index and the gaps swept with it.
    pub(crate) fn keep_drill_read(&self, read: DrillRead) {
        if read.index.builtin_marker() {
            self.index.replace(Some(read.index));
            self.swept.replace(read.gaps);
        }
    }

    /// The gaps Root cause swept with the index it kept ([`Indexed::keep_drill_read`]).
    pub(crate) fn swept(&self) -> Option<SweptGaps> {
        self.swept.borrow().clone()
    }

    /// What drill's index read of this trace's rows, when kept (taken: give it back with
    /// [`Indexed::keep_index`]).
    pub(crate) fn take_index(&self) -> Option<IndexFacts> {
        self.index.take()
    }

    /// Keeps the drill-down of this trace alone (the last one asked for).
    pub(crate) fn keep_drilled(&self, drilled: Drilled) {
        self.drilled.replace(Some(drilled));
    }

    /// The drill-down kept under `key`, if the last one was asked with it.
    pub(crate) fn drilled(
        &self,
        key: &(usize, Option<(Ns, Ns)>, String),
    ) -> Option<std::cell::Ref<'_, Drilled>> {
        std::cell::Ref::filter_map(self.drilled.borrow(), |d| {
            d.as_ref().filter(|d| &d.key == key)
        })
        .ok()
    }

    /// The event tables in start order, read from the open file ([`FileRows`]).
    pub(crate) fn rows(&self) -> Result<Box<dyn EventRows + '_>> {
        Ok(Box::new(self.file_rows()))
    }

    fn file_rows(&self) -> FileRows<'_> {
        let rows = FileRows::over(&self.conn, &self.scan);
        match self.lanes.get() {
            Some(lanes) => rows.reading_ranges(lanes),
            None => rows,
        }
    }

    /// See [`FileScan::rows_for_lanes`].
    pub(crate) fn rows_for_lanes(&self) -> u64 {
        self.scan.rows_for_lanes()
    }

    /// The lanes every pass asks from now on (the first ones set stay).
    pub(crate) fn set_lanes(&self, lanes: JsLanes) {
        let _ = self.lanes.set(lanes);
    }

    /// The verdict kept from the last [`Indexed::detect`], if it was asked under `cfg`.
    pub(crate) fn kept_verdict(&self, cfg: &DetectConfig) -> Option<DetectReport> {
        let key = format!("{cfg:?}");
        let kept = self.verdict.borrow();
        kept.as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, report)| report.clone())
    }

    pub(crate) fn detect(&self, cfg: &DetectConfig) -> Result<DetectReport> {
        let key = format!("{cfg:?}");
        if let Some((kept, report)) = &*self.verdict.borrow()
            && *kept == key
        {
            return Ok(report.clone());
        }
        let beside = self.beside.take().filter(|b| b.0 == key);
        let report = match beside {
            Some((_, folded, kernels)) => {
                detect::beside::detect_joined(&self.file_rows(), folded, kernels, cfg)?
            }
            None => detect::detect_rows(&self.file_rows(), cfg)?,
        };
        self.verdict.replace(Some((key, report.clone())));
        Ok(report)
    }

    /// Root cause's analysis of this trace under `cfg`, kept for the next view that asks for it
    /// under the same options but the label: computed as the Root cause view computes it, with
    /// what a drill-down would read again kept ([`Indexed::keep_drill_read`]). Its `label` is
    /// the one it was computed under; [`Indexed::analysis_labelled`] gives `cfg`'s.
    pub(crate) fn analysis(&self, cfg: &AnalyzeConfig) -> Result<Rc<TraceBreakdown>> {
        let key = format!("{:?}", (cfg.profile, cfg.tp_size, &cfg.step_marker));
        if let Some((kept, b)) = &*self.analysis.borrow()
            && *kept == key
        {
            return Ok(Rc::clone(b));
        }
        let (b, read) = analyze::analyze_rows_indexed(&self.file_rows(), cfg)?;
        if let Some(read) = read {
            self.keep_drill_read(read);
        }
        let b = Rc::new(b);
        self.analysis.replace(Some((key, Rc::clone(&b))));
        Ok(b)
    }

    /// The what-if answer of `changes` (the standard set when empty) under `cfg`
    /// (`whatif::whatif_known` over this trace's rows), kept for the next view that asks for it
    /// under the same options: the card's answer, which the report's export holds too.
    pub(crate) fn whatif(&self, cfg: &AnalyzeConfig, changes: &[Costs]) -> Result<WhatIf> {
        let key = format!("{:?}", (cfg, changes));
        if let Some((kept, answer)) = &*self.whatif.borrow()
            && *kept == key
        {
            return Ok(answer.clone());
        }
        let answer = whatif::whatif_known(&self.file_rows(), cfg, changes, self)?;
        self.whatif.replace(Some((key, answer.clone())));
        Ok(answer)
    }

    /// [`Indexed::whatif`] replayed anew, each batch of rows handed to `feed` too (a helper
    /// worker waits for them whether or not an answer is kept), the answer kept.
    pub(crate) fn whatif_feeding(
        &self,
        cfg: &AnalyzeConfig,
        changes: &[Costs],
        feed: &mut dyn whatif::Feed,
    ) -> Result<WhatIf> {
        let answer = whatif::whatif_feeding(&self.file_rows(), cfg, changes, self, feed)?;
        self.keep_whatif(cfg, changes, &answer);
        Ok(answer)
    }

    /// Keeps `answer` as [`Indexed::whatif`]'s under `cfg` and `changes`: the card's answer
    /// joined from two workers' replays (`whatif::apart`), which the report then shows.
    pub(crate) fn keep_whatif(&self, cfg: &AnalyzeConfig, changes: &[Costs], answer: &WhatIf) {
        let key = format!("{:?}", (cfg, changes));
        self.whatif.replace(Some((key, answer.clone())));
    }

    /// [`Indexed::analysis`] under `cfg`'s label, as Root cause shows it.
    pub(crate) fn analysis_labelled(&self, cfg: &AnalyzeConfig) -> Result<TraceBreakdown> {
        let b = self.analysis(cfg)?;
        Ok(TraceBreakdown {
            label: cfg.label.clone(),
            ..(*b).clone()
        })
    }

    /// The rows [`Indexed::detect`] reads under `profile` (`detect::rows_read`).
    pub(crate) fn verdict_rows(&self, profile: Profile) -> u64 {
        self.verdict_passes(profile).iter().map(|p| p.rows).sum()
    }

    /// The passes of [`Indexed::detect`] under `profile`, in order (`detect::verdict_passes`).
    pub(crate) fn verdict_passes(&self, profile: Profile) -> [detect::VerdictPass; 3] {
        let mut passes =
            detect::verdict_passes(&self.scan.table_rows(), &self.scan.kept_rows(), profile);
        // The ranges and the GPU work were folded beside the scan, and the launch calls too
        // when their sweep fits the GPU work's window.
        if let Some((_, folded, kernels)) = &*self.beside.borrow() {
            let folded = match folded.launches_fit(kernels) {
                true => &mut passes[..],
                false => &mut passes[..2],
            };
            folded.iter_mut().for_each(|pass| pass.rows = 0);
        }
        passes
    }

    /// Keeps what the open folded of the verdict under `key` (`DetectConfig`'s debug form),
    /// if the facts fit the scan's processes (else the verdict's passes run, and are counted).
    pub(crate) fn keep_beside(&self, key: String, folded: Folded, kernels: KernelSummary) {
        if folded.fits(self.scan.meta()) {
            self.beside.replace(Some((key, folded, kernels)));
        }
    }

    /// Keeps the timeline's GPU lanes and the gap histogram the reader worker folded beside
    /// its sweep: the first timeline and gaps take them rather than read the GPU work again.
    pub(crate) fn keep_ridden(&self, timeline: Option<Timeline>, gaps: Option<GapHistogram>) {
        let mut ridden = self.ridden.borrow_mut();
        (ridden.timeline, ridden.gaps) = (timeline, gaps);
    }

    /// Keeps the timeline's forward-step lane the host side folded over its ranges (`None`:
    /// they came out of order): the timeline then reads no range again for it.
    pub(crate) fn keep_step_lane(&self, lane: Option<Option<StepLane>>) {
        self.ridden.borrow_mut().steps = lane;
    }

    /// The GPU-idle gap histogram: gaps in every GPU operation.
    pub(crate) fn gaps(&self) -> Result<GapHistogram> {
        if let Some(gaps) = &self.ridden.borrow().gaps {
            return Ok(gaps.clone());
        }
        let rows = self.file_rows();
        let hist = idle_gap_histogram(&rows, None);
        rows.check()?;
        Ok(hist)
    }

    pub(crate) fn extent(&self) -> Result<(Ns, Ns)> {
        Ok(self.timeline()?.extent())
    }

    /// The timeline view of `[start, end)` in `columns` columns, the groups named in `folded`
    /// folded (`timeline::fold`).
    pub(crate) fn view(
        &self,
        (start, end): (Ns, Ns),
        columns: u32,
        folded: &[String],
    ) -> Result<TimelineView> {
        self.with_timeline(|t, source| {
            t.view_folded(source, (start, end), columns, Detail::Auto, folded)
        })
    }

    /// One device's lanes over `[start, end)` (`Timeline::device_view`): a rank of the ranks
    /// timeline.
    pub(crate) fn device_view(
        &self,
        window: (Ns, Ns),
        columns: u32,
        what: &DeviceLanes<'_>,
    ) -> Result<TimelineView> {
        self.with_timeline(|t, source| t.device_view(source, window, columns, what))
    }

    /// What lies under the pointer on lane `lane` of [`Indexed::device_view`]'s view.
    pub(crate) fn device_hit(
        &self,
        what: &DeviceLanes<'_>,
        lane: u32,
        at: (Ns, Ns),
    ) -> Result<Option<Hit>> {
        self.with_timeline(|t, source| t.device_hit(source, what, lane, at))
    }

    /// The kernel, step, call or range of view lane `lane` (its depth row `row` on an NVTX
    /// lane) under the pointer.
    pub(crate) fn hit(
        &self,
        (lane, row): (u32, Option<u8>),
        (t, slack): (Ns, Ns),
        folded: &[String],
    ) -> Result<Option<Hit>> {
        self.with_timeline(|timeline, source| {
            timeline.hit_folded(source, (lane, row), (t, slack), folded)
        })
    }

    /// Runs `f` on the timeline and the source its zoomed-in views re-read (the file's rows by
    /// `rowid`).
    fn with_timeline<R>(
        &self,
        f: impl FnOnce(&Timeline, &dyn KernelSource) -> Result<R>,
    ) -> Result<R> {
        let timeline = self.timeline()?;
        let strings = &self.scan.meta().strings;
        f(
            timeline,
            &self.reads.source(&self.conn, strings, &self.label),
        )
    }

    /// The timeline summary, built on first use over the file's rows.
    fn timeline(&self) -> Result<&Timeline> {
        if let Some(t) = self.timeline.get() {
            return Ok(t);
        }
        let rows = self.file_rows();
        let (lanes, steps) = {
            let mut ridden = self.ridden.borrow_mut();
            (ridden.timeline.take(), ridden.steps.take())
        };
        let lanes = match lanes {
            Some(lanes) => lanes,
            None => Timeline::of_rows(&rows, &self.label)?,
        };
        let steps = match steps {
            Some(lane) => lane,
            None => StepLane::of_rows(&rows)?,
        };
        let built = lanes.with_step_lane(steps);
        Ok(self.timeline.get_or_init(|| Box::new(built)))
    }
}

thread_local! {
    /// Every open trace of this worker by id, so one call can read several (a baseline and a
    /// target, the rank files of one run). Weak: the `Analysis` owning a trace decides its life.
    static OPEN: RefCell<(u32, HashMap<u32, Weak<Indexed>>)> = RefCell::new((0, HashMap::new()));
}

/// Registers `trace` and returns its id.
pub(crate) fn register(trace: &Rc<Indexed>) -> u32 {
    OPEN.with_borrow_mut(|(next, open)| {
        *next += 1;
        open.retain(|_, w| w.strong_count() > 0);
        open.insert(*next, Rc::downgrade(trace));
        *next
    })
}

/// Whether a trace is open.
fn any_open() -> bool {
    OPEN.with_borrow(|(_, open)| open.values().any(|w| w.strong_count() > 0))
}

/// The open trace with this id, if it is still open.
pub(crate) fn lookup(id: u32) -> Option<Rc<Indexed>> {
    OPEN.with_borrow(|(_, open)| open.get(&id).and_then(Weak::upgrade))
}

/// The what-if replay's analysis and verdict of an open trace: the ones it keeps.
impl crate::whatif::Known for Indexed {
    fn analysis(&self, cfg: &AnalyzeConfig) -> Result<Rc<TraceBreakdown>> {
        Indexed::analysis(self, cfg)
    }

    fn verdict(&self, cfg: &DetectConfig) -> Result<DetectReport> {
        self.detect(cfg)
    }
}
