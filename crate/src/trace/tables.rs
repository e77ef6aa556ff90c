//! The table readers: one plain streaming `SELECT` per table into the model's columns, with
//! values decoded leniently (a NULL, text or blob where a number belongs reads as a default).

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::capture::{MarkedRanges, WarmupCalls};
use super::cells::{Cells, Cursor, Row};
use super::decode::{
    NVTX_END, NVTX_TEXT, NVTX_TEXT_ID, NVTX_THREAD, NVTX_TYPE, REPLAY_COLUMNS, Remembered,
    SYNC_COLUMNS, Selected, call_columns, call_row, inline_text, int, kernel_columns, kernel_row,
    memop_columns, memop_row, nvtx_columns, nvtx_row_read, opt_int, opt_time, sync_row, time,
};
use super::load::{
    GRAPH_TRACE_TABLE, KERNEL_TABLE, LoadOptions, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE, NvtxSink,
    OSRT_TABLE, PROGRESS_EVERY, Progress, ProgressFn, RUNTIME_TABLE, SYNC_TABLE,
    kernel_table_notes, probe_export, reads_graph_nodes,
};
use super::nvtx_names::name_row;
use super::open::sqlite_error;
use super::schema::{Schema, read_meta, text_of, text_ref};
use crate::error::{Error, Result};
use crate::model::rows::{CallRow, KernelRow, MemOpRow, SyncRow};
use crate::model::{
    GLOBAL_PID_MASK, GpuInfo, Kernels, MemOps, NVTX_RANGE_TYPES, NameFlags, NvtxRanges, Processes,
    Strings, Trace,
};

/// What [`Loader::read_nvtx`] does with each range read: its thread interned, its name looked
/// up or its inline text interned, the capture's marks observed, then handed to `sink`.
struct NvtxNaming<'t, 's> {
    strings: &'t mut Strings,
    processes: &'t mut Processes,
    threads: &'t mut crate::model::Threads,
    marked: Option<MarkedRanges>,
    /// The last row's `globalTid` and its thread.
    last: (i64, crate::model::ThreadIdx),
    details: bool,
    sink: NvtxSink<'s>,
}

impl NvtxNaming<'_, '_> {
    /// Each column is asked of SQLite once a row (a column asked costs about 60 instructions,
    /// and the scan reads every range). `false`: the sink stops the read.
    fn row(&mut self, r: &impl Cells) -> rusqlite::Result<bool> {
        let end = opt_time(r.get_ref(NVTX_END)?)?;
        if end.is_none() && self.marked.is_none() {
            return Ok(true);
        }
        let text_id = opt_int(r.get_ref(NVTX_TEXT_ID)?);
        let text = r.get_ref(NVTX_TEXT)?;
        let (start, event_type) = (time(r.get_ref(1)?)?, int(r.get_ref(NVTX_TYPE)?, -1));
        if let Some(marked) = &mut self.marked {
            marked.observe(self.strings, (start, end), event_type, text, text_id);
        }
        let Some(end) = end else {
            return Ok(true);
        };
        // Every row's thread is interned, kept or not: process and thread ids then come
        // out as in a whole load (they order per-process results).
        let gtid = int(r.get_ref(NVTX_THREAD)?, 0);
        if gtid != self.last.0 {
            self.last = (gtid, self.threads.intern(gtid, self.processes));
        }
        let read = ((start, end), event_type, self.details);
        let mut row = nvtx_row_read(r, read, self.last.1)?;
        name_row(
            &mut row,
            self.strings,
            inline_text(text).as_deref(),
            text_id,
        );
        Ok((self.sink)(&row, self.strings, self.threads))
    }
}

/// `SELECT` list with `NULL` standing in for absent columns.
pub(super) fn select(schema: &Schema, table: &str, columns: &[&str], filter: &str) -> String {
    let cols = select_list(schema, table, columns);
    format!("SELECT {} FROM {table} {filter}", cols.join(", "))
}

/// [`select`] without the `NULL`s that end the list, natively, for the rows decoded through
/// [`Selected`], which reads a column past the statement's last as one selected as `NULL`.
/// Why: SQLite fills every `NULL` of the list for every row, about 35 instructions each; the
/// kernel table's scan selects five of them. Not in the page: there the same trim raised the
/// analysis worker's peak on a 10 GB export from 492 to 543 MiB, over its 512 MiB, for a
/// reason not found (`docs/performance.md`).
pub(super) fn select_decoded(
    schema: &Schema,
    table: &str,
    columns: &[&str],
    filter: &str,
) -> String {
    let mut cols = select_list(schema, table, columns);
    while cfg!(not(target_arch = "wasm32"))
        && cols.len() > 1
        && cols.last().is_some_and(|c| c == "NULL")
    {
        cols.pop();
    }
    format!("SELECT {} FROM {table} {filter}", cols.join(", "))
}

/// `columns` quoted, `NULL` for each one `table` lacks.
fn select_list(schema: &Schema, table: &str, columns: &[&str]) -> Vec<String> {
    columns
        .iter()
        .map(|c| match *c == "rowid" || schema.has_column(table, c) {
            true => format!("\"{c}\""),
            false => "NULL".to_string(),
        })
        .collect()
}

pub(super) struct Loader<'c, 'p> {
    pub(super) conn: &'c Connection,
    pub(super) path: &'c str,
    pub(super) progress: ProgressFn<'p>,
}

/// The SQL condition selecting kernel-launch API calls (any profile's) by `nameId`.
pub(super) fn launch_filter(strings: &Strings) -> String {
    format!(
        "nameId IN ({})",
        id_list(&strings.sqlite_ids_where(is_any_launch_api))
    )
}

/// The NVTX rows a load reads: closed ranges and, for the capture checks only, open ones.
fn nvtx_rows_filter(schema: &Schema) -> String {
    let mut filter = "WHERE \"end\" IS NOT NULL".to_string();
    if schema.has_column(NVTX_TABLE, "eventType") {
        let types: Vec<i64> = NVTX_RANGE_TYPES.map(i64::from).into();
        filter += &format!(" OR eventType IN ({})", id_list(&types));
    }
    filter
}

/// The runtime table's `SELECT` for a load, and the calls it keeps when only launch calls are
/// (`None`: every call). Warm-up calls are selected too, for the capture checks.
fn runtime_query(
    schema: &Schema,
    strings: &Strings,
    opts: LoadOptions,
    warmup: Option<&WarmupCalls>,
) -> (String, Option<NameFlags>) {
    let launches = (opts.launch_calls_only && schema.has_column(RUNTIME_TABLE, "nameId"))
        .then(|| strings.classify(is_any_launch_api));
    let filter = match (&launches, warmup) {
        (Some(launches), Some(warmup)) => format!(
            "WHERE nameId IN ({})",
            id_list(&warmup.sqlite_ids_or(strings, launches))
        ),
        (Some(_), None) => format!("WHERE {}", launch_filter(strings)),
        (None, _) => String::new(),
    };
    let columns = call_columns(opts.event_details);
    (
        select_decoded(schema, RUNTIME_TABLE, &columns, &filter),
        launches,
    )
}

/// A kernel-launch API of any profile.
pub(super) fn is_any_launch_api(name: &str) -> bool {
    crate::names::launch::is_launch_api(name, crate::names::launch::LaunchApis::AllVersioned)
}

/// `1,2,3`, for an SQL `IN` list.
pub(super) fn id_list(ids: &[i64]) -> String {
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    list.join(",")
}

impl Loader<'_, '_> {
    /// Schema, metadata and strings: what every table loader needs first.
    pub(super) fn begin(&mut self) -> Result<(Schema, Trace)> {
        self.begin_keeping(|_| true)
    }

    /// [`Loader::begin`] keeping only the `StringIds` values `keep` accepts: every id is read,
    /// so names resolve to the [`NameId`](crate::model::NameId)s any load gives them, but a
    /// value not kept reads empty. For a reader that shows no name (the page's reader worker
    /// names its kernels by id): a long trace's strings, one per forward step, are most of a
    /// load's memory before its rows.
    pub(super) fn begin_keeping(&mut self, keep: fn(&str) -> bool) -> Result<(Schema, Trace)> {
        self.report("probing schema", 0, 0)?;
        let schema = probe_export(self.conn, self.path)?;
        let mut trace = Trace {
            meta: read_meta(self.conn, &schema, self.path)?,
            ..Trace::default()
        };
        self.load_strings(&schema, &mut trace, keep)?;
        self.number_threads(&schema, &mut trace)?;
        // Non-kernel GPU work is named by these (`EventRows::gpu_work`), interned before any
        // inline NVTX text so every load of a file numbers them alike.
        for name in crate::model::work_names() {
            trace.strings.intern(name);
        }
        Ok((schema, trace))
    }

    /// Everything after kernels, NVTX ranges and runtime calls.
    pub(super) fn finish(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        opts: LoadOptions,
    ) -> Result<()> {
        if opts.memory_ops {
            trace.memcpy = self.load_memops(schema, trace, MEMCPY_TABLE)?;
            trace.memset = self.load_memops(schema, trace, MEMSET_TABLE)?;
        }
        let mut replays = Kernels::default();
        self.read_replays(schema, trace, &REPLAY_COLUMNS, &mut |row| {
            replays.push(&row, true)
        })?;
        trace.replays = replays;
        if opts.syncs {
            self.load_syncs(schema, trace)?;
        }
        self.finish_host(schema, trace)
    }

    /// What a load reads after the event tables: whether OS runtime calls were traced, the
    /// capture checks' facts, GPU info and names.
    pub(super) fn finish_host(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        trace.present.osrt = schema.has_table(OSRT_TABLE);
        self.load_capture_marks(schema, trace)?;
        self.load_gpus(schema, trace)?;
        self.load_names(schema, trace)?;
        self.load_host_records(schema, trace)?;
        self.report("done", 1, 1)
    }

    pub(super) fn report(&mut self, step: &'static str, done: u64, total: u64) -> Result<()> {
        if (self.progress)(Progress { step, done, total }) {
            Ok(())
        } else {
            Err(Error::Cancelled)
        }
    }

    pub(super) fn select(schema: &Schema, table: &str, columns: &[&str], filter: &str) -> String {
        select(schema, table, columns, filter)
    }

    /// Row-count estimate (max rowid: O(log n), unlike COUNT(*)) for reservations and progress.
    pub(super) fn estimate_rows(&self, table: &str) -> u64 {
        self.conn
            .query_row(&format!("SELECT max(rowid) FROM {table}"), [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .ok()
            .flatten()
            .map_or(0, |n| n.clamp(0, 500_000_000) as u64)
    }

    /// Streams rows of `sql` into `each`, reporting progress under `step`.
    pub(super) fn read_rows(
        &mut self,
        step: &'static str,
        table: &str,
        sql: &str,
        mut each: impl FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> Result<()> {
        self.read_while(step, table, sql, |r| each(r).map(|()| true))
            .map(|_| ())
    }

    /// [`Loader::read_rows`] until `each` returns `false`: `Ok(false)` then.
    pub(super) fn read_while(
        &mut self,
        step: &'static str,
        table: &str,
        sql: &str,
        each: impl FnMut(&Row<'_>) -> rusqlite::Result<bool>,
    ) -> Result<bool> {
        let total = self.estimate_rows(table);
        self.read_counted(step, (table, total), sql, each)
    }

    /// [`Loader::read_while`] of a table whose rows were estimated at `total` already.
    fn read_counted(
        &mut self,
        step: &'static str,
        (table, total): (&str, u64),
        sql: &str,
        mut each: impl FnMut(&Row<'_>) -> rusqlite::Result<bool>,
    ) -> Result<bool> {
        self.report(step, 0, total)?;
        let (conn, path) = (self.conn, self.path);
        let fail = |e: rusqlite::Error| sqlite_error(path, table, &e);
        let mut rows = Cursor::prepare(conn, sql).map_err(fail)?;
        let mut done = 0u64;
        while let Some(row) = rows.next().map_err(fail)? {
            if !each(&row).map_err(fail)? {
                return Ok(false);
            }
            done += 1;
            if done.is_multiple_of(PROGRESS_EVERY) {
                self.report(step, done, total)?;
            }
        }
        self.report(step, done, total).map(|()| true)
    }

    pub(super) fn load_strings(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        keep: fn(&str) -> bool,
    ) -> Result<()> {
        if !(schema.has_column("StringIds", "id") && schema.has_column("StringIds", "value")) {
            trace.note(
                "StringIds",
                "no StringIds table: kernel, API and registered NVTX names are unknown",
            );
            return Ok(());
        }
        let mut strings = Strings::default();
        self.read_rows(
            "loading strings",
            "StringIds",
            "SELECT id, value FROM StringIds",
            |r| {
                let id = int(r.get_ref(0)?, -1);
                let value = text_ref(r.get_ref(1)?);
                strings.push_row(id, if keep(&value) { &value } else { "" });
                Ok(())
            },
        )?;
        strings.finish_rows();
        trace.strings = strings;
        Ok(())
    }

    pub(super) fn load_kernels(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        details: bool,
    ) -> Result<()> {
        let graph_nodes = details || reads_graph_nodes(&trace.meta, strings);
        let columns = kernel_columns(details, graph_nodes);
        let total = self.estimate_rows(KERNEL_TABLE);
        let mut k = std::mem::take(&mut trace.kernels);
        k.reserve_exact(total as usize, details);
        let streamed = match note_kernel_table(schema, trace) {
            true => {
                let select = (&columns[..], "", Some(total));
                self.read_kernels_where(schema, strings, trace, select, &mut |row| {
                    k.push(&row, details);
                })
            }
            false => Ok(()),
        };
        trace.kernels = k;
        streamed
    }

    /// Hands every kernel row (selected as `columns`, a [`kernel_columns`] list) to `sink` in
    /// table order, its process interned; notes an absent table or column.
    pub(super) fn read_kernels(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        columns: &[&str],
        sink: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        if !note_kernel_table(schema, trace) {
            return Ok(());
        }
        self.read_kernels_where(schema, strings, trace, (columns, "", None), sink)
    }

    /// [`Loader::read_kernels`] of at most `limit` rows after `rowid` `after` (from the first
    /// with `None`), in `rowid` order: a slice of the table (the page's reader worker hears its
    /// messages between two). The first slice notes an absent table or column.
    pub(super) fn read_kernel_slice(
        &mut self,
        (schema, strings): (&Schema, &Strings),
        trace: &mut Trace,
        columns: &[&str],
        (after, limit, total): (Option<i64>, u64, u64),
        sink: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        let present = match after {
            None => note_kernel_table(schema, trace),
            Some(_) => trace.present.kernels,
        };
        if !present {
            return Ok(());
        }
        let from = after.map_or(String::new(), |row| format!("WHERE rowid > {row} "));
        let filter = format!("{from}ORDER BY rowid LIMIT {limit}");
        self.read_kernels_where(
            schema,
            strings,
            trace,
            (columns, &filter, Some(total)),
            sink,
        )
    }

    /// The kernels `filter` selects, their progress counted against `total` rows (`None`:
    /// estimated here).
    fn read_kernels_where(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        (columns, filter, total): (&[&str], &str, Option<u64>),
        sink: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        let sql = select_decoded(schema, KERNEL_TABLE, columns, filter);
        let processes = &mut trace.processes;
        let mut process = Remembered::new(|gpid| processes.intern(gpid));
        let mut selected = None;
        let total = total.unwrap_or_else(|| self.estimate_rows(KERNEL_TABLE));
        let counted = (KERNEL_TABLE, total);
        self.read_counted("loading kernels", counted, &sql, |r| {
            let selected = Selected::remembered(&mut selected, r);
            let (mut row, gpid) = kernel_row(r, strings, selected)?;
            row.process = process.get(gpid);
            sink(row);
            Ok(true)
        })
        .map(|_| ())
    }

    pub(super) fn load_runtime(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        opts: LoadOptions,
    ) -> Result<()> {
        let details = opts.event_details;
        let reserve = if opts.launch_calls_only {
            0
        } else {
            self.estimate_rows(RUNTIME_TABLE) as usize
        };
        let mut rt = std::mem::take(&mut trace.runtime);
        rt.reserve_exact(reserve, details);
        let streamed = self.read_runtime(schema, strings, trace, opts, &mut |call| {
            rt.push(&call, details);
        });
        trace.runtime = rt;
        streamed
    }

    /// Hands the CUDA API calls a load keeps (only launch calls with `launch_calls_only`) to
    /// `sink` in table order, their threads interned; folds the warm-up calls on the way.
    pub(super) fn read_runtime(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        trace: &mut Trace,
        opts: LoadOptions,
        sink: &mut dyn FnMut(CallRow),
    ) -> Result<()> {
        if !schema.has_table(RUNTIME_TABLE) {
            trace.note(
                RUNTIME_TABLE,
                "no CUDA runtime API table: no launch overhead (M2), API calls, syncs or launch latency (the launch rate counts kernels instead); gaps list no API calls, graph kernels are recognised by graphNodeId only, kernels are placed in steps by their GPU start",
            );
            return Ok(());
        }
        trace.present.runtime = true;
        let mut warmup = WarmupCalls::new(schema, strings);
        let (sql, launches) = runtime_query(schema, strings, opts, warmup.as_ref());
        let Trace {
            processes,
            threads,
            capture_fold,
            ..
        } = trace;
        let mut thread = Remembered::new(|gtid| {
            let t = threads.intern(gtid, processes);
            (t, threads.process.get(t as usize).copied().unwrap_or(0))
        });
        let mut selected = None;
        self.read_rows("loading CUDA API calls", RUNTIME_TABLE, &sql, |r| {
            let selected = Selected::remembered(&mut selected, r);
            let (mut call, gtid) = call_row(r, strings, selected)?;
            if let Some(warmup) = &mut warmup {
                warmup.observe(strings, call.start, call.end, call.name);
            }
            if launches.as_ref().is_some_and(|l| !l.get(call.name)) {
                return Ok(());
            }
            (call.thread, call.process) = thread.get(gtid);
            sink(call);
            Ok(())
        })?;
        capture_fold.runtime = warmup.map(WarmupCalls::finish);
        Ok(())
    }

    /// Every NVTX range, kept.
    pub(super) fn load_nvtx(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        details: bool,
    ) -> Result<()> {
        let mut kept = NvtxRanges::default();
        self.read_nvtx(schema, trace, (details, None), &mut |row, _, _| {
            kept.push(row, details);
            true
        })?;
        kept.omitted = trace.nvtx.omitted;
        kept.shrink_to_fit();
        trace.nvtx = kept;
        Ok(())
    }

    /// Hands NVTX ranges to `sink` in table order instead of keeping them. `sink` returning
    /// `false` stops the read: `Ok(false)`. With `apart` (natively: the file again), SQLite
    /// steps the table on a thread and connection of its own (`cell_batch`) while the ranges
    /// are named and handed on here, reporting no progress.
    pub(super) fn read_nvtx(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        (details, apart): (bool, Option<&std::path::Path>),
        sink: NvtxSink<'_>,
    ) -> Result<bool> {
        if !schema.has_table(NVTX_TABLE) {
            trace.note(
                NVTX_TABLE,
                "no NVTX_EVENTS table: context/generation phases, host-prep metrics (M3a/b/c), forward steps and the NVTX range summary not computed; no GPU time is attributed to ranges and gaps list no NVTX ranges",
            );
            return Ok(true);
        }
        trace.present.nvtx = true;
        let sql = Self::select(
            schema,
            NVTX_TABLE,
            &nvtx_columns(details),
            &nvtx_rows_filter(schema),
        );
        let Trace {
            strings,
            processes,
            threads,
            capture_fold,
            ..
        } = trace;
        capture_fold.nvtx = None;
        let marked = MarkedRanges::new(schema, strings);
        let mut ranges = NvtxNaming {
            strings,
            processes,
            threads,
            marked,
            last: (i64::MIN, 0),
            details,
            sink,
        };
        let done = match apart {
            #[cfg(not(target_arch = "wasm32"))]
            Some(file) => {
                super::cell_batch::read_apart((file, self.path), (NVTX_TABLE, &sql), &mut |r| {
                    ranges.row(r)
                })?
            }
            _ => self.read_while("loading NVTX ranges", NVTX_TABLE, &sql, |r| ranges.row(r))?,
        };
        let NvtxNaming {
            strings, marked, ..
        } = ranges;
        strings.shrink_to_fit();
        if done {
            capture_fold.nvtx = marked.map(MarkedRanges::finish);
        }
        Ok(done)
    }

    /// Hands every graph replay of `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` (selected as `columns`,
    /// [`REPLAY_COLUMNS`] or fewer) to `sink` in table order, its process interned. The table is
    /// there only when graphs were traced at graph level, so its absence is no coverage note.
    pub(super) fn read_replays(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        columns: &[&str],
        sink: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        trace.present.replays = schema.has_table(GRAPH_TRACE_TABLE);
        if !trace.present.replays {
            return Ok(());
        }
        let sql = select_decoded(schema, GRAPH_TRACE_TABLE, columns, "");
        let (processes, strings) = (&mut trace.processes, &trace.strings);
        let mut process = Remembered::new(|gpid| processes.intern(gpid));
        let mut selected = None;
        self.read_rows("loading graph replays", GRAPH_TRACE_TABLE, &sql, |r| {
            let selected = Selected::remembered(&mut selected, r);
            let (mut row, gpid) = kernel_row(r, strings, selected)?;
            row.process = process.get(gpid);
            row.work = crate::model::Work::Replay;
            sink(row);
            Ok(())
        })
    }

    pub(super) fn load_memops(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        table: &'static str,
    ) -> Result<MemOps> {
        let mut ops = MemOps::default();
        let columns = memop_columns(table);
        self.read_memops(schema, trace, table, &columns, &mut |op| ops.push(&op))?;
        Ok(ops)
    }

    /// Hands every row of memory-operation `table` (selected as `columns`, a [`memop_columns`]
    /// list) to `sink` in table order, its process interned; notes an absent table.
    pub(super) fn read_memops(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        table: &'static str,
        columns: &[&str],
        sink: &mut dyn FnMut(MemOpRow),
    ) -> Result<()> {
        if !schema.has_table(table) {
            trace.note(
                table,
                format!("no {table} table: no such operations were recorded"),
            );
            return Ok(());
        }
        let is_memcpy = table == MEMCPY_TABLE;
        if is_memcpy {
            trace.present.memcpy = true;
        } else {
            trace.present.memset = true;
        }
        let sql = Self::select(schema, table, columns, "");
        let processes = &mut trace.processes;
        let step = if is_memcpy {
            "loading memcpy"
        } else {
            "loading memset"
        };
        self.read_rows(step, table, &sql, |r| {
            let (mut op, gpid) = memop_row(r)?;
            op.process = processes.intern(gpid);
            sink(op);
            Ok(())
        })
    }

    pub(super) fn load_syncs(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        let mut s = std::mem::take(&mut trace.syncs);
        let streamed = self.read_syncs(schema, trace, &SYNC_COLUMNS, &mut |sync| s.push(&sync));
        trace.syncs = s;
        streamed
    }

    /// Hands every synchronization (selected as `columns`, a [`SYNC_COLUMNS`] list) to `sink`
    /// in table order, its process interned; notes an absent table.
    pub(super) fn read_syncs(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        columns: &[&str],
        sink: &mut dyn FnMut(SyncRow),
    ) -> Result<()> {
        if !schema.has_table(SYNC_TABLE) {
            trace.note(
                SYNC_TABLE,
                "no synchronization table: CUDA sync events were not recorded",
            );
            return Ok(());
        }
        trace.present.syncs = true;
        let sql = Self::select(schema, SYNC_TABLE, columns, "");
        let processes = &mut trace.processes;
        self.read_rows("loading synchronization", SYNC_TABLE, &sql, |r| {
            let (mut sync, gpid) = sync_row(r)?;
            sync.process = processes.intern(gpid);
            sink(sync);
            Ok(())
        })
    }

    pub(super) fn load_gpus(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
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
        self.read_rows("loading GPU info", T, &sql, |r| {
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

    /// Numbers the processes and threads `ThreadNames` lists, by ascending `globalPid` and
    /// `globalTid`, before any event is read: a process's or thread's id then does not depend on
    /// the order the event tables' rows are read in (nsys promises none). Only a thread no name
    /// row lists is numbered as met.
    fn number_threads(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        if !schema.has_column("ThreadNames", "globalTid") {
            return Ok(());
        }
        let mut tids: Vec<i64> = Vec::new();
        self.read_rows(
            "numbering threads",
            "ThreadNames",
            "SELECT globalTid FROM ThreadNames",
            |r| {
                tids.extend(opt_int(r.get_ref(0)?));
                Ok(())
            },
        )?;
        tids.sort_unstable();
        tids.dedup();
        let mut pids: Vec<i64> = tids.iter().map(|&t| t & GLOBAL_PID_MASK).collect();
        pids.dedup();
        for pid in pids {
            trace.processes.intern(pid);
        }
        for tid in tids {
            trace.threads.intern(tid, &mut trace.processes);
        }
        Ok(())
    }

    /// Thread names (`ThreadNames`) and process names (`PROCESSES`).
    pub(super) fn load_names(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        if schema.has_column("ThreadNames", "nameId")
            && schema.has_column("ThreadNames", "globalTid")
        {
            let Trace {
                threads,
                strings,
                processes,
                ..
            } = trace;
            self.read_rows(
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
    pub(super) fn load_process_names(
        &mut self,
        schema: &Schema,
        processes: &mut Processes,
    ) -> Result<()> {
        if schema.has_column("PROCESSES", "globalPid") && schema.has_column("PROCESSES", "name") {
            self.read_rows(
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

/// Notes in `trace` whether the kernel table is there, and what of it is missing; `false`:
/// there is nothing to read.
fn note_kernel_table(schema: &Schema, trace: &mut Trace) -> bool {
    trace.present.kernels = schema.has_table(KERNEL_TABLE);
    trace.coverage.extend(kernel_table_notes(schema));
    trace.present.kernels
}

/// Native only: the page's `SELECT`s keep their `NULL`s ([`select_decoded`]).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// A kernel table without the columns a scan leaves out, one row.
    fn kernels() -> (Connection, Schema) {
        let conn = Connection::open_in_memory().expect("in-memory database");
        conn.execute_batch(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, \"end\", deviceId, globalPid, shortName); \
             INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 250, 3, 77, 9);",
        )
        .expect("rows");
        let schema = Schema::probe(&conn, ":memory:").expect("schema");
        (conn, schema)
    }

    fn decoded(conn: &Connection, sql: &str) -> (KernelRow, i64) {
        let mut cursor = Cursor::prepare(conn, sql).expect("prepared");
        let row = cursor.next().expect("a step").expect("a row");
        let selected: Selected<11> = Selected::of(&row);
        kernel_row(&row, &Strings::default(), &selected).expect("decoded")
    }

    #[test]
    fn a_decoded_select_leaves_out_the_nulls_that_end_it_and_reads_the_same_row() {
        let (conn, schema) = kernels();
        let columns = kernel_columns(false, false);
        let full = select(&schema, KERNEL_TABLE, &columns, "");
        let trimmed = select_decoded(&schema, KERNEL_TABLE, &columns, "");
        assert_eq!(full.matches("NULL").count(), 5, "{full}");
        assert_eq!(
            trimmed,
            "SELECT \"rowid\", \"start\", \"end\", \"deviceId\", \"globalPid\", \"shortName\" \
             FROM CUPTI_ACTIVITY_KIND_KERNEL "
        );
        let (ours, theirs) = (decoded(&conn, &trimmed), decoded(&conn, &full));
        assert_eq!(ours, theirs);
        assert_eq!(
            (ours.0.start, ours.0.end, ours.0.device, ours.1),
            (100, 250, 3, 77)
        );
    }

    #[test]
    fn a_decoded_select_of_no_column_the_table_has_still_selects_one() {
        let (_, schema) = kernels();
        let sql = select_decoded(&schema, KERNEL_TABLE, &["streamId", "graphId"], "");
        assert_eq!(sql, "SELECT NULL FROM CUPTI_ACTIVITY_KIND_KERNEL ");
    }
}
