//! An open trace as the page's views read it: either loaded whole (with its timeline summary
//! built once on first use), or streamed (the host side loaded, the kernel table summarised by
//! the kernel pass and re-read by `rowid` when the timeline zooms in).
//!
//! Why one type: the verdict view asks the same questions of both (verdict, timeline view,
//! hover hit, gap histogram); Root cause, the drill-down, the report and a verdict under
//! another step marker or window fold over the trace's rows ([`Indexed::rows`]), which a
//! streamed trace reads again from its open file in start order, holding none of them.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use rusqlite::Connection;

use crate::analyze::DrillRead;
use crate::detect::{self, DetectConfig, DetectReport};
use crate::drill::gap_report::SweptGaps;
use crate::drill::gaps::{GapHistogram, idle_gap_histogram};
use crate::error::Result;
use crate::index::rows::IndexFacts;
use crate::model::rows::EventRows;
use crate::model::{Ns, Trace};
use crate::streamed::{FileReads, Streamed};
use crate::timeline::{Detail, Hit, KernelSource, Timeline, TimelineView};
use crate::trace::{FileRows, FileScan, LoadOptions, Schema};

/// The wasm memory the page keeps under (the streamed open's bound).
const PAGE_MEMORY: usize = 512 << 20;
/// Room kept for the deeper views' own state over the rows (per step, name, thread…): at least
/// this, and a sixth of the file (a bound from above: natively, Root cause's peak over a 1 GB
/// export's rows, none kept, is 60 MiB above the scan's, and the page's wasm memory after the
/// views is 385 MiB in all over a 4.2 GiB one's, with no rows kept).
const VIEW_ROOM: usize = 160 << 20;
const VIEW_ROOM_PER_FILE_BYTE: f64 = 1.0 / 6.0;
/// The most one trace's rows take in memory.
const MAX_ROW_CACHE: usize = 256 << 20;

/// What a trace scanned now may keep of the rows its views read (`trace::FileScan::
/// keeping_rows`): the page's memory left once the views' room is set aside, measured as the
/// wasm memory grown so far (it never shrinks), so a second trace gets what the first left.
fn row_cache_budget(conn: &Connection) -> usize {
    let grown = core::arch::wasm32::memory_size(0) * 65536;
    let room = VIEW_ROOM.max((file_bytes(conn) as f64 * VIEW_ROOM_PER_FILE_BYTE) as usize);
    PAGE_MEMORY
        .saturating_sub(grown.saturating_add(room))
        .min(MAX_ROW_CACHE)
}

/// The size of the open export (0 if SQLite cannot say).
fn file_bytes(conn: &Connection) -> usize {
    let pragma = |name: &str| -> usize {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .map_or(0, |v| usize::try_from(v).unwrap_or(0))
    };
    pragma("page_count").saturating_mul(pragma("page_size"))
}

pub(crate) struct Indexed {
    /// The file's name, as results label the trace.
    label: String,
    kind: Kind,
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
}

/// A drill-down of one trace kept for its report ([`Indexed::keep_drilled`]).
pub(crate) struct Drilled {
    /// `top`, `window` and the step marker's text, as the page asked.
    pub key: (usize, Option<(Ns, Ns)>, String),
    pub drill: crate::findings::DrillFindings,
    pub explain: crate::explain::ExplainReport,
}

enum Kind {
    Loaded {
        trace: Box<Trace>,
        timeline: OnceCell<Timeline>,
    },
    Streamed {
        streamed: Box<Streamed>,
        /// The export, still open: the timeline's zoomed-in views and the deeper views' rows
        /// read it.
        conn: Connection,
        /// What the timeline's zoomed-in views and hovers read again: GPU work, forward
        /// steps, host tracks, launch links.
        reads: FileReads,
        /// The timeline of every GPU operation, built on first use over the file's rows when
        /// the export holds work besides kernels (`Streamed::work_timeline`).
        work_timeline: OnceCell<Box<Timeline>>,
        /// What [`Indexed::rows`] found scanning the file, kept for every later read.
        scan: OnceCell<Box<FileScan>>,
    },
}

impl Indexed {
    pub(crate) fn new(trace: Trace, label: &str) -> Indexed {
        Indexed {
            drilled: RefCell::new(None),
            index: RefCell::new(None),
            swept: RefCell::new(None),
            label: label.to_string(),
            kind: Kind::Loaded {
                trace: Box::new(trace),
                timeline: OnceCell::new(),
            },
        }
    }

    /// A streamed trace over its still-open connection.
    pub(crate) fn streamed(streamed: Streamed, conn: Connection, label: &str) -> Result<Indexed> {
        let schema = Schema::probe(&conn, label)?;
        let reads = FileReads::new(&schema);
        Ok(Indexed {
            drilled: RefCell::new(None),
            index: RefCell::new(None),
            swept: RefCell::new(None),
            label: label.to_string(),
            kind: Kind::Streamed {
                streamed: Box::new(streamed),
                conn,
                reads,
                work_timeline: OnceCell::new(),
                scan: OnceCell::new(),
            },
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

    /// The event tables in start order, as the deeper views' folds read them: the loaded
    /// trace's, or a streamed trace's read from its open file ([`FileRows`], nothing held; the
    /// file is scanned on the first call and the scan kept).
    pub(crate) fn rows(&self) -> Result<Box<dyn EventRows + '_>> {
        match &self.kind {
            Kind::Loaded { trace, .. } => Ok(Box::new(&**trace)),
            Kind::Streamed { conn, scan, .. } => {
                let scan = match scan.get() {
                    Some(scan) => scan,
                    None => {
                        let opts = LoadOptions::page();
                        let budget = row_cache_budget(conn);
                        let found =
                            FileScan::keeping_rows(conn, &self.label, opts, &mut |_| true, budget)?;
                        scan.get_or_init(|| Box::new(found))
                    }
                };
                Ok(Box::new(FileRows::over(conn, scan)))
            }
        }
    }

    pub(crate) fn detect(&self, cfg: &DetectConfig) -> Result<DetectReport> {
        match &self.kind {
            Kind::Loaded { trace, .. } => detect::detect(trace, cfg),
            // The streamed pass measured the default windows of the marker the trace showed;
            // another marker's, or another window, are measured over the file's rows.
            Kind::Streamed { .. } if cfg.step_marker.is_some() || cfg.window.is_some() => {
                detect::detect_rows(&*self.rows()?, cfg)
            }
            // Kernels out of start order, or copies, memsets and graph replays under a profile
            // that counts them (`docs/gpu-work.md`): the pass's summaries cannot answer.
            Kind::Streamed { streamed, .. } if streamed.needs_rows(cfg.profile) => {
                detect::detect_rows(&*self.rows()?, cfg)
            }
            Kind::Streamed { streamed, .. } => streamed.detect(cfg),
        }
    }

    /// The GPU-idle gap histogram: gaps in every GPU operation (the streamed pass's, from the
    /// kernel table, when that is all the GPU did and its rows were in start order).
    pub(crate) fn gaps(&self) -> Result<GapHistogram> {
        match &self.kind {
            Kind::Loaded { trace, .. } => Ok(idle_gap_histogram(&**trace, None)),
            Kind::Streamed { streamed, .. } if streamed.views_need_rows() => {
                let rows = self.rows()?;
                let hist = idle_gap_histogram(&*rows, None);
                rows.check()?;
                Ok(hist)
            }
            Kind::Streamed { streamed, .. } => Ok(streamed.gaps.clone()),
        }
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

    /// Runs `f` on the timeline and the source its zoomed-in views re-read: the loaded tables,
    /// or the file's rows by `rowid`.
    fn with_timeline<R>(
        &self,
        f: impl FnOnce(&Timeline, &dyn KernelSource) -> Result<R>,
    ) -> Result<R> {
        let timeline = self.timeline()?;
        match &self.kind {
            Kind::Loaded { trace, .. } => f(timeline, &**trace),
            Kind::Streamed {
                streamed,
                conn,
                reads,
                ..
            } => f(
                timeline,
                &reads.source(conn, &streamed.host.strings, &self.label),
            ),
        }
    }

    /// The timeline summary: built on first use for a loaded trace, and for a streamed export
    /// holding GPU work besides kernels (over the file's rows); else the kernel pass's.
    fn timeline(&self) -> Result<&Timeline> {
        match &self.kind {
            Kind::Loaded { trace, timeline } => Ok(timeline.get_or_init(|| Timeline::new(trace))),
            Kind::Streamed { streamed, .. } if !streamed.views_need_rows() => {
                Ok(&streamed.timeline)
            }
            Kind::Streamed {
                streamed,
                work_timeline,
                ..
            } => {
                if let Some(t) = work_timeline.get() {
                    return Ok(t);
                }
                let built = streamed.work_timeline(&*self.rows()?, &self.label)?;
                Ok(work_timeline.get_or_init(|| Box::new(built)))
            }
        }
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

/// The open trace with this id, if it is still open.
pub(crate) fn lookup(id: u32) -> Option<Rc<Indexed>> {
    OPEN.with_borrow(|(_, open)| open.get(&id).and_then(Weak::upgrade))
}
