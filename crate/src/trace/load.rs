//! Loading event tables into the columnar [`Trace`] with plain streaming `SELECT`s.
//!
//! No `GROUP BY`, `JOIN` or `ORDER BY` runs inside SQLite: in wasm those are an order of magnitude
//! slower than a Rust pass over the streamed rows. Absent columns are selected as `NULL`, so one
//! loader serves every nsys version; absent tables become coverage notes.

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::launches::{LaunchCall, LaunchRuns, LaunchScan, LaunchSink, for_each_if_sorted};
use super::nvtx_names::RowNamer;
use super::open::sqlite_error;
use super::schema::{Schema, read_meta, text_of, text_ref};
use crate::error::{Error, Result};
use crate::model::{
    CoverageNote, GpuInfo, MemOps, NO_NAME, NameFlags, NvtxRanges, NvtxRow, ProcessIdx, Processes,
    Strings, Threads, Trace, TraceMeta,
};
use crate::names::launch::GRAPH_LAUNCH;
use crate::names::patterns::may_define_windows;
use crate::names::steps::step_text;

/// Where [`StagedLoad::stream_nvtx`] hands each NVTX range (with the strings and threads as
/// interned so far); `false` stops the read.
pub type NvtxSink<'a> = &'a mut dyn FnMut(&NvtxRow, &Strings, &Threads) -> bool;

/// What to load. Decoding a column costs time per row, so the verdict loads only what it reads.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    pub memory_ops: bool,
    pub syncs: bool,
    /// Kernel `streamId`, `correlationId`, `demangledName`, graph ids, runtime `correlationId` and
    /// NVTX `domainId`. When false those columns stay empty vectors.
    pub event_details: bool,
    /// Load only kernel-launch API calls from the runtime table (filtered in SQL by name id).
    pub launch_calls_only: bool,
}

impl LoadOptions {
    /// Every table and column the model holds.
    pub fn all() -> LoadOptions {
        LoadOptions {
            memory_ops: true,
            syncs: true,
            event_details: true,
            launch_calls_only: false,
        }
    }

    /// What the page shows: the verdict, the timeline, the root cause (every CUDA API call per
    /// step) and the drill-down and report (memory operations, synchronizations): everything.
    pub fn page() -> LoadOptions {
        LoadOptions::all()
    }

    /// Only what detection reads: kernel start/end/device/process/name, launch calls, NVTX ranges.
    pub fn detect() -> LoadOptions {
        LoadOptions {
            memory_ops: false,
            syncs: false,
            event_details: false,
            launch_calls_only: true,
        }
    }
}

/// A loading step, reported so a UI can show progress.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub step: &'static str,
    pub done: u64,
    /// Estimated total rows of this step (0 when unknown).
    pub total: u64,
}

/// Receives progress; returning `false` cancels the load.
pub type ProgressFn<'a> = &'a mut dyn FnMut(Progress) -> bool;

const PROGRESS_EVERY: u64 = 1 << 16;
/// The progress step of [`StagedLoad::sweep_launches`].
const SWEEP_STEP: &str = "sweeping kernel launches";

pub const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const NVTX_TABLE: &str = "NVTX_EVENTS";
pub const MEMCPY_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SYNC_TABLE: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// Loads a whole trace from an open, read-only connection, one table after another.
pub fn load(
    conn: &Connection,
    path: &str,
    opts: LoadOptions,
    progress: ProgressFn<'_>,
) -> Result<Trace> {
    load_part(conn, path, opts, progress, Part::Whole)
}

/// Which tables one loading pass reads: the page and the native CLI load the kernel table in
/// parallel with the rest ([`Part::Kernels`] and [`Part::Host`], joined by
/// [`merge_kernel_part`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Whole,
    /// The kernel table alone; `processes` hold only the `globalPid`s the kernels reference.
    Kernels,
    /// Everything but the kernel table.
    Host,
}

/// Loads the tables of `part` (see [`load`]).
pub fn load_part(
    conn: &Connection,
    path: &str,
    opts: LoadOptions,
    progress: ProgressFn<'_>,
    part: Part,
) -> Result<Trace> {
    let mut ctx = Loader {
        conn,
        path,
        progress,
    };
    let (schema, mut trace) = ctx.begin(false)?;
    let strings = std::mem::take(&mut trace.strings);
    if part != Part::Host {
        ctx.load_kernels(&schema, &strings, &mut trace, opts.event_details)?;
    }
    if part == Part::Kernels {
        ctx.load_process_names(&schema, &mut trace.processes)?;
        ctx.report("done", 1, 1)?;
        return Ok(Trace {
            kernels: trace.kernels,
            processes: trace.processes,
            coverage: trace.coverage,
            present: trace.present,
            ..Trace::default()
        });
    }
    trace.strings = strings;
    ctx.load_nvtx(&schema, &mut trace, opts.event_details)?;
    let strings = std::mem::take(&mut trace.strings);
    ctx.load_runtime(&schema, &strings, &mut trace, opts)?;
    trace.strings = strings;
    ctx.finish(&schema, &mut trace, opts)?;
    Ok(trace)
}

/// The host side of a trace (everything but kernels) loaded in steps, for a caller that streams
/// the kernel table itself: after [`StagedLoad::nvtx`] the forward steps and host-prep ranges are
/// known, which the one-pass kernel analyses need before their pass; the CUDA API calls follow.
/// The steps run in the order [`load_part`] uses, so process and thread ids come out the same.
pub struct StagedLoad {
    schema: Schema,
    trace: Trace,
    /// The launch calls were scanned for a sweep ([`StagedLoad::scan_launches`]): not loaded.
    launches_scanned: bool,
}

impl StagedLoad {
    /// Schema, metadata and strings, forward-step names not held
    /// ([`crate::model::Strings::without_step_names`]): the page's analysis worker would hold
    /// one per step, and needs of each only the step its NVTX rows read as they pass.
    pub fn begin(conn: &Connection, path: &str, progress: ProgressFn<'_>) -> Result<StagedLoad> {
        let (schema, trace) = Loader {
            conn,
            path,
            progress,
        }
        .begin(true)?;
        Ok(StagedLoad {
            schema,
            trace,
            launches_scanned: false,
        })
    }

    /// The NVTX ranges; with `windows_only`, only those that may be forward steps or host-prep
    /// ranges (the verdict's windows), the others counted in `nvtx.omitted`.
    pub fn nvtx(
        &mut self,
        conn: &Connection,
        path: &str,
        windows_only: bool,
        progress: ProgressFn<'_>,
    ) -> Result<()> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        ctx.load_nvtx_where(&self.schema, &mut self.trace, false, windows_only)
    }

    /// The NVTX ranges that may be forward steps or host-prep ranges handed to `sink` instead
    /// of kept (the others only counted): the page builds its detect plans from them as they
    /// pass. `Ok(false)`: `sink` stopped the read; load them with [`StagedLoad::nvtx`] then.
    pub fn stream_nvtx(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        sink: NvtxSink<'_>,
    ) -> Result<bool> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        // Ranges the sink gets are not kept either: counted like those filtered out.
        let mut passed = NvtxRanges::default();
        let done = ctx.stream_nvtx(
            &self.schema,
            &mut self.trace,
            false,
            true,
            &mut |row, s, t| {
                passed.omit(row.name != row.text_id_name);
                sink(row, s, t)
            },
        )?;
        let omitted = &mut self.trace.nvtx.omitted;
        if done {
            omitted.count += passed.omitted.count;
            omitted.inline_text |= passed.omitted.inline_text;
        } else {
            *omitted = Default::default();
        }
        Ok(done)
    }

    /// The CUDA API calls (only launch calls with `LoadOptions::detect()`), then the remaining
    /// tables `opts` asks for, GPU info and names.
    pub fn finish(
        mut self,
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
    ) -> Result<Trace> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        if !self.launches_scanned {
            let strings = std::mem::take(&mut self.trace.strings);
            ctx.load_runtime(&self.schema, &strings, &mut self.trace, opts)?;
            self.trace.strings = strings;
        }
        ctx.finish(&self.schema, &mut self.trace, opts)?;
        Ok(self.trace)
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// What is loaded so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Lets the NVTX ranges go once what needs them (the detect plans) is built
    /// ([`crate::model::NvtxRanges::forget_ranges`]).
    pub fn forget_nvtx_ranges(&mut self) {
        self.trace.nvtx.forget_ranges();
    }

    /// Feeds the kernel-launch API calls to `sink` in start order instead of loading them (the
    /// page's M2): one pass when the table is sorted; else the sink restarts, a scan finds the
    /// table's sorted runs and a merge feeds them again. Threads are interned as loading
    /// the calls would; progress is reported (and can cancel) as while loading them. `Ok(false)`:
    /// the calls must be loaded ([`StagedLoad::finish`] does); after `Ok(true)` it loads no
    /// runtime calls. Call after NVTX.
    pub fn sweep_launches(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        sink: &mut dyn LaunchSink,
    ) -> Result<bool> {
        let has = |c: &str| self.schema.has_column(RUNTIME_TABLE, c);
        if !(has("start") && has("end") && has("globalTid") && has("nameId")) {
            return Ok(false);
        }
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        let total = ctx.estimate_rows(RUNTIME_TABLE);
        ctx.report(SWEEP_STEP, 0, total)?;
        let Trace {
            strings,
            threads,
            processes,
            ..
        } = &mut self.trace;
        // Pushes a call, reporting progress every `PROGRESS_EVERY` calls.
        let done = std::cell::Cell::new(0u64);
        let mut feed = |sink: &mut dyn LaunchSink, call: LaunchCall| -> Result<()> {
            sink.push(call);
            done.set(done.get() + 1);
            if done.get().is_multiple_of(PROGRESS_EVERY) {
                ctx.report(SWEEP_STEP, done.get(), total)?;
            }
            Ok(())
        };
        let sorted = for_each_if_sorted(conn, path, strings, threads, processes, |call| {
            feed(sink, call)
        })?;
        if sorted.is_none() {
            sink.restart();
            done.set(0);
            let scan = LaunchRuns::scan(conn, &self.schema, path, strings, threads, processes)?;
            let LaunchScan::Runs(runs) = scan else {
                return Ok(false);
            };
            runs.for_each(conn, path, strings, threads, |call| feed(sink, call))?;
        }
        ctx.report(SWEEP_STEP, done.get(), total)?;
        self.trace.present.runtime = true;
        self.launches_scanned = true;
        Ok(true)
    }

    /// Processes met by the kernel pass join the table here, so every id stays one table's.
    pub fn processes_mut(&mut self) -> &mut Processes {
        &mut self.trace.processes
    }
}

/// Like [`load`], but reads the kernel table on a second connection in a second thread while
/// this thread reads the rest: the two largest tables, decoded on two cores. (The page does the
/// same with two Web Workers.)
#[cfg(not(target_arch = "wasm32"))]
pub fn load_parallel(
    conn: &Connection,
    path: &std::path::Path,
    opts: LoadOptions,
) -> Result<Trace> {
    let label = path.display().to_string();
    let (host, kernels) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| -> Result<Trace> {
            let conn = super::open::open_path(path)?;
            load_part(&conn, &label, opts, &mut |_| true, Part::Kernels)
        });
        let host = load_part(conn, &label, opts, &mut |_| true, Part::Host);
        let kernels = worker.join().map_err(|_| Error::Io {
            path: label.clone(),
            detail: "the kernel-loading thread failed".into(),
        });
        (host, kernels)
    });
    let mut trace = host?;
    merge_kernel_part(&mut trace, kernels??);
    Ok(trace)
}

/// Moves the kernels of a [`Part::Kernels`] load into a [`Part::Host`] load of the same file,
/// re-keying their processes. (Name ids agree: both halves read `StringIds` the same way, and
/// inline NVTX text is interned after those ids.)
pub fn merge_kernel_part(trace: &mut Trace, part: Trace) {
    let map: Vec<ProcessIdx> = (0..part.processes.len())
        .map(|i| {
            let p = trace.processes.intern(part.processes.global_pid[i]);
            let name = &mut trace.processes.name[p as usize];
            if name.is_empty() {
                name.clone_from(&part.processes.name[i]);
            }
            p
        })
        .collect();
    trace.kernels = part.kernels;
    for p in &mut trace.kernels.process {
        *p = map.get(*p as usize).copied().unwrap_or(0);
    }
    trace.present.kernels = part.present.kernels;
    trace.coverage.extend(part.coverage);
}

/// `SELECT` list with `NULL` standing in for absent columns.
pub(super) fn select(schema: &Schema, table: &str, columns: &[&str], filter: &str) -> String {
    let cols: Vec<String> = columns
        .iter()
        .map(|c| {
            if *c == "rowid" || schema.has_column(table, c) {
                format!("\"{c}\"")
            } else {
                "NULL".to_string()
            }
        })
        .collect();
    format!("SELECT {} FROM {table} {filter}", cols.join(", "))
}

/// What a kernel-table reader must say about the file's kernel table: absent, or absent columns.
pub fn kernel_table_notes(schema: &Schema) -> Vec<CoverageNote> {
    let note = |subject: String, reason: String| CoverageNote { subject, reason };
    if !schema.has_table(KERNEL_TABLE) {
        return vec![note(
            KERNEL_TABLE.into(),
            "no kernel table: the capture recorded no GPU kernels (CUDA trace off or failed)"
                .into(),
        )];
    }
    ["deviceId", "streamId", "globalPid", "correlationId"]
        .into_iter()
        .filter(|col| !schema.has_column(KERNEL_TABLE, col))
        .map(|col| {
            note(
                format!("{KERNEL_TABLE}.{col}"),
                format!("column {col} is absent: treated as 0 for every kernel"),
            )
        })
        .collect()
}

struct Loader<'c, 'p> {
    conn: &'c Connection,
    path: &'c str,
    progress: ProgressFn<'p>,
}

/// An integer column value; NULL, text and blobs read as `default` (odd columns never panic).
pub(super) fn int(v: ValueRef<'_>, default: i64) -> i64 {
    match v {
        ValueRef::Integer(i) => i,
        ValueRef::Real(f) if f.is_finite() => f as i64,
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(default),
        _ => default,
    }
}

pub(super) fn opt_int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Null => None,
        other => Some(int(other, 0)),
    }
}

/// An NVTX range's inline `text`: `None` unless the column holds text.
pub(super) fn inline_text(v: ValueRef<'_>) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t)),
        _ => None,
    }
}

/// Sets `column[row]`, growing a lazily allocated column (zeros for earlier rows).
fn set_sparse<T: Copy + Default>(column: &mut Vec<T>, row: usize, value: T) {
    if column.len() <= row {
        column.resize(row + 1, T::default());
    }
    column[row] = value;
}

pub(super) fn small(v: ValueRef<'_>) -> u32 {
    u32::try_from(int(v, 0)).unwrap_or(u32::MAX)
}

/// The SQL condition selecting kernel-launch API calls (any profile's) by `nameId`.
pub(super) fn launch_filter(strings: &Strings) -> String {
    let ids = strings.sqlite_ids_where(|s| {
        crate::names::launch::is_launch_api(s, crate::names::launch::LaunchApis::AllVersioned)
    });
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("nameId IN ({})", list.join(","))
}

/// The schema of an open file, which must be an nsys export.
pub fn probe_export(conn: &Connection, path: &str) -> Result<Schema> {
    let schema = Schema::probe(conn, path)?;
    if !schema.is_nsys_export() {
        return Err(Error::NotNsysExport { path: path.into() });
    }
    Ok(schema)
}

impl Loader<'_, '_> {
    /// Schema, metadata and strings: what every table loader needs first (forward-step names
    /// held unless `steps_unheld`).
    fn begin(&mut self, steps_unheld: bool) -> Result<(Schema, Trace)> {
        self.report("probing schema", 0, 0)?;
        let schema = probe_export(self.conn, self.path)?;
        let mut trace = Trace {
            meta: read_meta(self.conn, &schema, self.path)?,
            ..Trace::default()
        };
        self.load_strings(&schema, &mut trace, steps_unheld)?;
        Ok((schema, trace))
    }

    /// Everything after kernels, NVTX ranges and runtime calls.
    fn finish(&mut self, schema: &Schema, trace: &mut Trace, opts: LoadOptions) -> Result<()> {
        if opts.memory_ops {
            trace.memcpy = self.load_memops(schema, trace, MEMCPY_TABLE)?;
            trace.memset = self.load_memops(schema, trace, MEMSET_TABLE)?;
        }
        if opts.syncs {
            self.load_syncs(schema, trace)?;
        }
        self.load_gpus(schema, trace)?;
        self.load_names(schema, trace)?;
        self.report("done", 1, 1)
    }

    fn report(&mut self, step: &'static str, done: u64, total: u64) -> Result<()> {
        if (self.progress)(Progress { step, done, total }) {
            Ok(())
        } else {
            Err(Error::Cancelled)
        }
    }

    fn select(schema: &Schema, table: &str, columns: &[&str], filter: &str) -> String {
        select(schema, table, columns, filter)
    }

    /// Row-count estimate (max rowid: O(log n), unlike COUNT(*)) for reservations and progress.
    fn estimate_rows(&self, table: &str) -> u64 {
        self.conn
            .query_row(&format!("SELECT max(rowid) FROM {table}"), [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .ok()
            .flatten()
            .map_or(0, |n| n.clamp(0, 500_000_000) as u64)
    }

    /// Streams rows of `sql` into `each`, reporting progress under `step`.
    fn stream(
        &mut self,
        step: &'static str,
        table: &str,
        sql: &str,
        mut each: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>,
    ) -> Result<()> {
        self.stream_while(step, table, sql, |r| each(r).map(|()| true))
            .map(|_| ())
    }

    /// [`Loader::stream`] until `each` returns `false`: `Ok(false)` then.
    fn stream_while(
        &mut self,
        step: &'static str,
        table: &str,
        sql: &str,
        mut each: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<bool>,
    ) -> Result<bool> {
        let total = self.estimate_rows(table);
        self.report(step, 0, total)?;
        let (conn, path) = (self.conn, self.path);
        let fail = |e: rusqlite::Error| sqlite_error(path, table, &e);
        let mut stmt = conn.prepare(sql).map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut done = 0u64;
        while let Some(row) = rows.next().map_err(fail)? {
            if !each(row).map_err(fail)? {
                return Ok(false);
            }
            done += 1;
            if done.is_multiple_of(PROGRESS_EVERY) {
                self.report(step, done, total)?;
            }
        }
        self.report(step, done, total).map(|()| true)
    }

    fn load_strings(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        steps_unheld: bool,
    ) -> Result<()> {
        if !(schema.has_column("StringIds", "id") && schema.has_column("StringIds", "value")) {
            trace.note(
                "StringIds",
                "no StringIds table: kernel, API and registered NVTX names are unknown",
            );
            return Ok(());
        }
        let mut strings = match steps_unheld {
            true => Strings::without_step_names(),
            false => Strings::default(),
        };
        self.stream(
            "loading strings",
            "StringIds",
            "SELECT id, value FROM StringIds",
            |r| {
                let id = int(r.get_ref(0)?, -1);
                let value = text_ref(r.get_ref(1)?);
                match steps_unheld && step_text(&value).is_some() {
                    true => strings.push_row_unheld(id),
                    false => strings.push_row(id, &value),
                }
                Ok(())
            },
        )?;
        strings.finish_rows();
        trace.strings = strings;
        Ok(())
    }

    fn load_kernels(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        details: bool,
    ) -> Result<()> {
        trace.present.kernels = schema.has_table(KERNEL_TABLE);
        trace.coverage.extend(kernel_table_notes(schema));
        if !trace.present.kernels {
            return Ok(());
        }
        let mut cols = vec!["start", "end", "deviceId", "globalPid", "shortName"];
        let graph_nodes = details || reads_graph_nodes(&trace.meta, strings);
        if details {
            cols.extend([
                "streamId",
                "correlationId",
                "demangledName",
                "graphNodeId",
                "graphId",
            ]);
        } else if graph_nodes {
            cols.push("graphNodeId");
        }
        let sql = Self::select(schema, KERNEL_TABLE, &cols, "");
        let reserve = self.estimate_rows(KERNEL_TABLE) as usize;
        let Trace {
            kernels: k,
            processes,
            ..
        } = trace;
        k.start.reserve_exact(reserve);
        k.end.reserve_exact(reserve);
        k.device.reserve_exact(reserve);
        k.process.reserve_exact(reserve);
        k.short_name.reserve_exact(reserve);
        if details {
            k.stream.reserve_exact(reserve);
            k.correlation.reserve_exact(reserve);
            k.demangled_name.reserve_exact(reserve);
        }
        let mut last_gpid = i64::MIN;
        let mut last_proc = 0;
        self.stream("loading kernels", KERNEL_TABLE, &sql, |r| {
            k.start.push(int(r.get_ref(0)?, 0));
            k.end.push(int(r.get_ref(1)?, 0));
            k.device.push(small(r.get_ref(2)?));
            let gpid = int(r.get_ref(3)?, 0);
            if gpid != last_gpid {
                last_gpid = gpid;
                last_proc = processes.intern(gpid);
            }
            k.process.push(last_proc);
            k.short_name
                .push(opt_int(r.get_ref(4)?).map_or(NO_NAME, |id| strings.resolve(id)));
            if !details {
                if graph_nodes && let Some(g) = opt_int(r.get_ref(5)?) {
                    set_sparse(&mut k.graph_node, k.start.len() - 1, g as u64);
                }
                return Ok(());
            }
            k.stream.push(small(r.get_ref(5)?));
            k.correlation.push(small(r.get_ref(6)?));
            k.demangled_name
                .push(opt_int(r.get_ref(7)?).map_or(NO_NAME, |id| strings.resolve(id)));
            let row = k.start.len() - 1;
            if let Some(g) = opt_int(r.get_ref(8)?) {
                set_sparse(&mut k.graph_node, row, g as u64);
            }
            if let Some(g) = opt_int(r.get_ref(9)?) {
                set_sparse(&mut k.graph_id, row, g as u32);
            }
            Ok(())
        })
    }

    fn load_runtime(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        opts: LoadOptions,
    ) -> Result<()> {
        let details = opts.event_details;
        if !schema.has_table(RUNTIME_TABLE) {
            trace.note(
                RUNTIME_TABLE,
                "no CUDA runtime API table: launch overhead (M2) not computable",
            );
            return Ok(());
        }
        trace.present.runtime = true;
        let cols: &[&str] = if details {
            &["start", "end", "globalTid", "nameId", "correlationId"]
        } else {
            &["start", "end", "globalTid", "nameId"]
        };
        let filter = if opts.launch_calls_only && schema.has_column(RUNTIME_TABLE, "nameId") {
            format!("WHERE {}", launch_filter(strings))
        } else {
            String::new()
        };
        let sql = Self::select(schema, RUNTIME_TABLE, cols, &filter);
        let reserve = if filter.is_empty() {
            self.estimate_rows(RUNTIME_TABLE) as usize
        } else {
            0
        };
        let Trace {
            runtime: rt,
            processes,
            threads,
            ..
        } = trace;
        rt.start.reserve_exact(reserve);
        rt.end.reserve_exact(reserve);
        rt.thread.reserve_exact(reserve);
        rt.name.reserve_exact(reserve);
        if details {
            rt.correlation.reserve_exact(reserve);
        }
        let mut last_tid = i64::MIN;
        let mut last_thread = 0;
        self.stream("loading CUDA API calls", RUNTIME_TABLE, &sql, |r| {
            rt.start.push(int(r.get_ref(0)?, 0));
            rt.end.push(int(r.get_ref(1)?, 0));
            let gtid = int(r.get_ref(2)?, 0);
            if gtid != last_tid {
                last_tid = gtid;
                last_thread = threads.intern(gtid, processes);
            }
            rt.thread.push(last_thread);
            rt.name
                .push(opt_int(r.get_ref(3)?).map_or(NO_NAME, |id| strings.resolve(id)));
            if details {
                rt.correlation.push(small(r.get_ref(4)?));
            }
            Ok(())
        })
    }

    fn load_nvtx(&mut self, schema: &Schema, trace: &mut Trace, details: bool) -> Result<()> {
        self.load_nvtx_where(schema, trace, details, false)
    }

    /// NVTX ranges; with `windows_only`, only those that may be forward steps or host-prep
    /// ranges are kept (the rest are counted): the verdict needs no other.
    fn load_nvtx_where(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        details: bool,
        windows_only: bool,
    ) -> Result<()> {
        let mut kept = NvtxRanges::default();
        self.stream_nvtx(schema, trace, details, windows_only, &mut |row, _, _| {
            kept.push(row, details);
            true
        })?;
        kept.omitted = trace.nvtx.omitted;
        kept.shrink_to_fit();
        trace.nvtx = kept;
        Ok(())
    }

    /// Hands NVTX ranges to `sink` in table order instead of keeping them (they only count, in
    /// `trace.nvtx.omitted`). `sink` returning `false` stops the read: `Ok(false)`.
    fn stream_nvtx(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        details: bool,
        windows_only: bool,
        sink: NvtxSink<'_>,
    ) -> Result<bool> {
        if !schema.has_table(NVTX_TABLE) {
            trace.note(
                NVTX_TABLE,
                "no NVTX_EVENTS table: phase and host-prep metrics not computable",
            );
            return Ok(true);
        }
        trace.present.nvtx = true;
        let sql = Self::select(
            schema,
            NVTX_TABLE,
            &[
                "start",
                "end",
                "globalTid",
                "eventType",
                if details { "domainId" } else { "NULL" },
                "text",
                "textId",
                "rowid",
            ],
            "WHERE \"end\" IS NOT NULL",
        );
        let Trace {
            nvtx: n,
            strings,
            processes,
            threads,
            ..
        } = trace;
        let mut last_tid = i64::MIN;
        let mut last_thread = 0;
        let mut namer = RowNamer::new(self.conn);
        let keep_id: NameFlags = if windows_only {
            strings.classify(may_define_windows)
        } else {
            NameFlags::default()
        };
        self.stream_while("loading NVTX ranges", NVTX_TABLE, &sql, |r| {
            // Every row's thread is interned, kept or not: process and thread ids then come
            // out as in a whole load (they order per-process results).
            let gtid = int(r.get_ref(2)?, 0);
            if gtid != last_tid {
                last_tid = gtid;
                last_thread = threads.intern(gtid, processes);
            }
            let text_id = opt_int(r.get_ref(6)?);
            let by_id = text_id.map_or(NO_NAME, |id| strings.resolve(id));
            let text = inline_text(r.get_ref(5)?);
            if windows_only
                && !crate::model::flag(&keep_id, by_id)
                && !strings.is_unheld(by_id)
                && !text.as_deref().is_some_and(may_define_windows)
            {
                n.omit(text.is_some());
                return Ok(true);
            }
            let mut row = NvtxRow {
                row: int(r.get_ref(7)?, 0),
                start: int(r.get_ref(0)?, 0),
                end: int(r.get_ref(1)?, 0),
                thread: last_thread,
                event_type: u8::try_from(int(r.get_ref(3)?, 0)).unwrap_or(0),
                domain: if details { small(r.get_ref(4)?) } else { 0 },
                name: NO_NAME,
                text_id_name: NO_NAME,
                step: None,
                text_id_step: None,
            };
            namer
                .name(strings, text.as_deref(), text_id)?
                .apply(&mut row);
            Ok(sink(&row, strings, threads))
        })
        .inspect(|_| strings.shrink_to_fit())
    }

    fn load_memops(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        table: &'static str,
    ) -> Result<MemOps> {
        let mut ops = MemOps::default();
        if !schema.has_table(table) {
            trace.note(
                table,
                format!("no {table} table: no such operations were recorded"),
            );
            return Ok(ops);
        }
        let is_memcpy = table == MEMCPY_TABLE;
        if is_memcpy {
            trace.present.memcpy = true;
        } else {
            trace.present.memset = true;
        }
        // memset has no copy kind and one memory kind for both ends.
        let kinds: [&str; 3] = if is_memcpy {
            ["copyKind", "srcKind", "dstKind"]
        } else {
            ["NULL", "memKind", "memKind"]
        };
        let mut cols = vec![
            "start",
            "end",
            "deviceId",
            "streamId",
            "globalPid",
            "correlationId",
            "bytes",
        ];
        cols.extend(kinds);
        let sql = Self::select(schema, table, &cols, "");
        let processes = &mut trace.processes;
        let step = if is_memcpy {
            "loading memcpy"
        } else {
            "loading memset"
        };
        let kind = |v: ValueRef<'_>| opt_int(v).map_or(255, |k| u8::try_from(k).unwrap_or(255));
        self.stream(step, table, &sql, |r| {
            ops.start.push(int(r.get_ref(0)?, 0));
            ops.end.push(int(r.get_ref(1)?, 0));
            ops.device.push(small(r.get_ref(2)?));
            ops.stream.push(small(r.get_ref(3)?));
            ops.process.push(processes.intern(int(r.get_ref(4)?, 0)));
            ops.correlation.push(small(r.get_ref(5)?));
            ops.bytes
                .push(u64::try_from(int(r.get_ref(6)?, 0)).unwrap_or(0));
            ops.kind.push(kind(r.get_ref(7)?));
            ops.src_mem.push(kind(r.get_ref(8)?));
            ops.dst_mem.push(kind(r.get_ref(9)?));
            Ok(())
        })?;
        Ok(ops)
    }

    fn load_syncs(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        if !schema.has_table(SYNC_TABLE) {
            trace.note(
                SYNC_TABLE,
                "no synchronization table: CUDA sync events were not recorded",
            );
            return Ok(());
        }
        trace.present.syncs = true;
        let sql = Self::select(
            schema,
            SYNC_TABLE,
            &[
                "start",
                "end",
                "deviceId",
                "streamId",
                "globalPid",
                "correlationId",
                "syncType",
            ],
            "",
        );
        let Trace {
            syncs: s,
            processes,
            ..
        } = trace;
        self.stream("loading synchronization", SYNC_TABLE, &sql, |r| {
            s.start.push(int(r.get_ref(0)?, 0));
            s.end.push(int(r.get_ref(1)?, 0));
            s.device.push(small(r.get_ref(2)?));
            s.stream.push(small(r.get_ref(3)?));
            s.process.push(processes.intern(int(r.get_ref(4)?, 0)));
            s.correlation.push(small(r.get_ref(5)?));
            s.sync_type
                .push(u8::try_from(int(r.get_ref(6)?, 0)).unwrap_or(255));
            Ok(())
        })
    }

    fn load_gpus(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        const T: &str = "TARGET_INFO_GPU";
        if !schema.has_column(T, "id") {
            trace.note(
                T,
                "no TARGET_INFO_GPU table: GPU models are unknown (devices are named by id only)",
            );
            return Ok(());
        }
        let sql = Self::select(
            schema,
            T,
            &["id", "name", "busLocation", "smCount", "totalMemory"],
            "",
        );
        let gpus = &mut trace.gpus;
        self.stream("loading GPU info", T, &sql, |r| {
            let text = |v: ValueRef<'_>| match v {
                ValueRef::Null => None,
                other => Some(text_of(other)),
            };
            gpus.push(GpuInfo {
                id: int(r.get_ref(0)?, -1),
                name: text(r.get_ref(1)?).unwrap_or_default(),
                bus_location: text(r.get_ref(2)?),
                sm_count: opt_int(r.get_ref(3)?),
                total_memory: opt_int(r.get_ref(4)?),
            });
            Ok(())
        })
    }

    /// Thread names (`ThreadNames`) and process names (`PROCESSES`).
    fn load_names(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        if schema.has_column("ThreadNames", "nameId")
            && schema.has_column("ThreadNames", "globalTid")
        {
            let Trace {
                threads,
                strings,
                processes,
                ..
            } = trace;
            self.stream(
                "loading thread names",
                "ThreadNames",
                "SELECT globalTid, nameId FROM ThreadNames",
                |r| {
                    let (Some(gtid), Some(name)) = (opt_int(r.get_ref(0)?), opt_int(r.get_ref(1)?))
                    else {
                        return Ok(());
                    };
                    let t = threads.intern(gtid, processes) as usize;
                    threads.name[t] = strings.resolve(name);
                    Ok(())
                },
            )?;
        }
        self.load_process_names(schema, &mut trace.processes)
    }

    /// Names of the processes already interned (a process no event references stays out).
    fn load_process_names(&mut self, schema: &Schema, processes: &mut Processes) -> Result<()> {
        if schema.has_column("PROCESSES", "globalPid") && schema.has_column("PROCESSES", "name") {
            self.stream(
                "loading process names",
                "PROCESSES",
                "SELECT globalPid, name FROM PROCESSES",
                |r| {
                    let Some(gpid) = opt_int(r.get_ref(0)?) else {
                        return Ok(());
                    };
                    if let Some(p) = processes.find(gpid) {
                        processes.name[p as usize] = text_of(r.get_ref(1)?);
                    }
                    Ok(())
                },
            )?;
        }
        Ok(())
    }
}

/// Whether a load reads kernels' `graphNodeId` for the verdict: only its warning about a whole-graph
/// capture of a trace that launches graphs asks whether any kernel has one.
pub fn reads_graph_nodes(meta: &TraceMeta, strings: &Strings) -> bool {
    meta.traces_whole_graphs()
        && !strings
            .sqlite_ids_where(|s| s.starts_with(GRAPH_LAUNCH))
            .is_empty()
}
