//! The event tables read straight from an open export in start order ([`FileRows`]): the
//! [`EventRows`] the page's deeper views fold without loading the trace.
//!
//! Why: Root cause, the drill-down and the report read every event; loaded, a 1 GB export
//! takes about 1 GiB of the page's wasm memory and a 4 GiB one cannot open. [`FileScan`] reads
//! once what a whole load holds besides the event rows (strings, processes, threads, capture
//! facts…) and where each table's sorted runs lie; [`FileRows`] then reads any table in start
//! order as often as an analysis asks, a `rowid` chunk at a time, merging the runs
//! (`trace::runs`). Rows are decoded by the loader's own decoders (`tables.rs`), and the scan
//! runs the loader's own table readers in the CLI's order, so every id and name equals the
//! CLI's whole load of the file (`load_path`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use rusqlite::Connection;

use super::decode::{
    NVTX_END, NVTX_TEXT, NVTX_TEXT_ID, NVTX_THREAD, REPLAY_COLUMNS, Remembered, SYNC_COLUMNS,
    Selected, call_columns, call_row, inline_text, int, kernel_columns, kernel_row, memop_columns,
    memop_row, nvtx_columns, nvtx_row, only, opt_int, sync_row, time,
};
use super::load::{
    GRAPH_TRACE_TABLE, KERNEL_TABLE, LoadOptions, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE,
    ProgressFn, RUNTIME_TABLE, SYNC_TABLE, reads_graph_nodes,
};
use super::nvtx_names::name_row_again;
use super::open::sqlite_error;
use super::row_cache::{Budget, Cached, RowBudget, ScanFill, TableCache};
use super::runs::{Keyed, SortedRuns, read_chunk, thread_of};
use super::schema::Schema;
use super::tables::{Loader, launch_filter, select, select_decoded};
use crate::error::Result;
use crate::model::packed::Packable;
use crate::model::rows::{
    CallRow, Columns, ErrorLatch, EventRows, KernelRow, MemOpRow, Rows, SyncRow,
};
use crate::model::{
    CoverageNote, NO_NAME, Ns, NvtxRow, ProcessIdx, Processes, REPLAY_NAME, Strings, Threads,
    Trace, Work,
};

mod calls_apart;
mod file_rows;
#[cfg(not(target_arch = "wasm32"))]
mod fold;
mod gpu_work;
mod kernel_part;
mod lanes;
mod latched;
mod range_fold;
#[cfg(not(target_arch = "wasm32"))]
mod read_ahead;

pub use file_rows::FileRows;
#[cfg(not(target_arch = "wasm32"))]
pub use fold::{GpuFold, GpuProgress, ScanFold};
pub use kernel_part::{KernelPart, ReaderScan};
use kernel_part::{KernelReader, KernelScan};
pub use lanes::{Lane, RANGE_ROWIDS, RangeAsk, RangeReader, RowKind};
use latched::Latched;
pub use latched::{HEARTBEAT_ROWS, heartbeat, rows_handed_out};
pub use range_fold::RangeFold;

/// More sorted runs than this in one table and it is read in slices of its keys instead
/// (`runs::Slices`): the runs' bounds are held (about 36 bytes each). nsys has written a handful;
/// the generator's multi-rank traces one per rank and step; a reversed table one per row.
pub const MAX_FILE_RUNS: usize = 1 << 20;

/// The columns a scan reads of a table: where its rows lie, their start and owner.
const SCAN_COLUMNS: [&str; 5] = ["rowid", "start", "end", "globalPid", "globalTid"];

/// A chunk of a table: rows of a `rowid` range, in `rowid` order, at most `?3`.
const CHUNK: &str = "rowid BETWEEN ?1 AND ?2";
const CHUNK_ORDER: &str = "ORDER BY rowid LIMIT ?3";

/// One event table of a scanned file.
#[derive(Debug, Clone)]
struct Table<K> {
    name: &'static str,
    /// The `SELECT` of one chunk; `None`: the table is absent, or not read under the options.
    sql: Option<String>,
    runs: SortedRuns<K>,
    /// Rows read before, kept up to the file's budget.
    cache: RefCell<TableCache>,
}

impl<K: Ord + Copy> Table<K> {
    /// Its name and the rows its cache holds.
    fn kept(&self) -> (&'static str, u64) {
        (self.name, self.cache.borrow().rows())
    }

    fn new(name: &'static str, max_runs: usize) -> Table<K> {
        Table {
            name,
            sql: None,
            runs: SortedRuns::new(max_runs),
            cache: RefCell::default(),
        }
    }

    /// Rows the scan found (0 when the table is not read).
    fn rows(&self) -> u64 {
        self.runs.rows()
    }
}

/// What one scan of an export found: everything a whole load holds but the event rows, and
/// where each event table's runs sorted by start lie. Built once per open file.
#[derive(Debug)]
pub struct FileScan {
    path: String,
    /// The export's file when the scan may open it again (`of_file`): natively each pass then
    /// reads a table on a thread of its own (`read_ahead`).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    file: Option<std::path::PathBuf>,
    /// Shared with the passes' reader threads.
    meta: Arc<Trace>,
    details: bool,
    kernels: Table<(Ns, Ns)>,
    replays: Table<(Ns, Ns)>,
    calls: Table<Ns>,
    ranges: Table<Ns>,
    memcpy: Table<Ns>,
    memset: Table<Ns>,
    syncs: Table<Ns>,
    /// Bytes the tables' caches may still take (shared with the scans of other files when the
    /// budget was: [`FileScan::keeping_rows_within`]).
    cache_budget: Arc<Budget>,
    /// What the tables' runs hold, taken from the budget as far as it went: a file whose
    /// tables come in many runs keeps fewer rows, and eight such files no more than one may.
    runs_charged: usize,
}

impl Drop for FileScan {
    /// Gives what the tables' caches keep back to the budget other scans may share.
    fn drop(&mut self) {
        for (_, cache) in self.caches() {
            cache.borrow_mut().clear(&self.cache_budget);
        }
        self.cache_budget.give(self.runs_charged);
    }
}

/// A scan whose host side is read ([`FileScan::host_side`]), waiting for its kernel table:
/// read by another reader meanwhile, or here ([`HostScan::finish`]).
#[derive(Debug)]
pub struct HostScan {
    scan: FileScan,
    schema: Schema,
    meta: Trace,
    opts: LoadOptions,
    max_runs: usize,
    kernels: KernelScan,
    /// The string table's note, which follows the host side's notes (the CLI's load reads
    /// the kernel table in a part of its own: `merge_kernel_part`).
    strings_note: Option<CoverageNote>,
    /// Shared with a thread reading the kernels meanwhile.
    budget: Arc<Budget>,
}

impl HostScan {
    /// Reads the catalog (strings, threads, capture facts) and sets the scan up.
    fn begin(
        ctx: &mut Loader<'_, '_>,
        opts: LoadOptions,
        (max_runs, budget): (usize, &RowBudget),
    ) -> Result<HostScan> {
        let (schema, meta) = ctx.begin()?;
        let strings_note = meta
            .coverage
            .iter()
            .find(|n| n.subject == "StringIds")
            .cloned();
        let scan = FileScan {
            path: ctx.path.to_string(),
            file: None,
            meta: Arc::default(),
            details: opts.event_details,
            kernels: Table::new(KERNEL_TABLE, max_runs),
            replays: Table::new(GRAPH_TRACE_TABLE, max_runs),
            calls: Table::new(RUNTIME_TABLE, max_runs),
            ranges: Table::new(NVTX_TABLE, max_runs),
            memcpy: Table::new(MEMCPY_TABLE, max_runs),
            memset: Table::new(MEMSET_TABLE, max_runs),
            syncs: Table::new(SYNC_TABLE, max_runs),
            cache_budget: Arc::clone(&budget.0),
            runs_charged: 0,
        };
        let kernels = KernelScan::new(opts, &meta, budget.left() > 0);
        Ok(HostScan {
            scan,
            schema,
            meta,
            opts,
            max_runs,
            kernels,
            strings_note,
            budget: Arc::clone(&budget.0),
        })
    }

    /// Reads the host side, telling `hook` of the ranges; `apart`: the file again, for the
    /// tables SQLite steps on threads and connections of their own (natively).
    fn read(
        &mut self,
        ctx: &mut Loader<'_, '_>,
        hook: Option<Box<dyn ScanHook + '_>>,
        apart: Option<&std::path::Path>,
    ) -> Result<()> {
        let HostScan {
            scan,
            schema,
            meta,
            opts,
            budget,
            ..
        } = self;
        scan.scan_host(ctx, (schema, meta), (*opts, apart), budget, hook)?;
        meta.coverage.extend(self.strings_note.take());
        Ok(())
    }

    /// How many blocks of a [`KernelPart`]'s kept rows the join would keep, as the budget
    /// stands: the page copies no more of the reader worker's blocks into this instance (its
    /// memory never shrinks, and a reader keeps rows on a budget of its own).
    pub fn kernel_blocks_kept(&self) -> usize {
        TableCache::blocks_within(self.budget.left())
    }

    /// The scan, its kernel table joined from `part` (read by another reader) or, without
    /// one, read here on `conn` (`progress` returning `false` cancels).
    pub fn finish(
        mut self,
        conn: &Connection,
        progress: ProgressFn<'_>,
        part: Option<KernelPart>,
    ) -> Result<FileScan> {
        let path = self.scan.path.clone();
        let mut ctx = Loader {
            conn,
            path: &path,
            progress,
        };
        let part = match part {
            Some(part) => part,
            None => self.kernels.read(
                &mut ctx,
                (&self.schema, &self.meta.strings),
                std::mem::take(&mut self.meta.processes),
                (self.max_runs, &self.budget),
                &mut |_| {},
            )?,
        };
        self.join(part)?;
        let HostScan {
            mut scan,
            schema,
            mut meta,
            opts,
            budget,
            ..
        } = self;
        scan.shrink_runs();
        scan.runs_charged = budget.take_up_to(scan.runs_bytes());
        scan.cache_budget = budget;
        ctx.load_process_names(&schema, &mut meta.processes)?;
        scan.chunk_queries(&schema, &meta, opts);
        scan.meta = Arc::new(meta);
        scan.check_rowid_order(&path)?;
        Ok(scan)
    }

    /// Joins the kernel table's part: its processes take the ids the scan on one reader gives
    /// them (those `ThreadNames` lists, then those the host side met, then in the kernels'
    /// order), and its kept rows are rewritten if that renumbered any (a kernel of a process
    /// met first by the host side, not listed); rows kept on a budget of their own are taken
    /// from the scan's as far as it goes.
    fn join(&mut self, part: KernelPart) -> Result<()> {
        let KernelPart {
            processes,
            present,
            coverage,
            runs,
            mut cache,
            own_budget,
        } = part;
        let budget = &*self.budget;
        if own_budget {
            cache.charge(budget);
        }
        let ids = self.meta.processes.absorb(&processes);
        self.meta.present.kernels = present;
        self.meta.coverage.extend(coverage);
        if ids.iter().enumerate().any(|(i, &p)| p as usize != i) {
            cache.rewrite(budget, |k: &mut KernelRow| {
                k.process = ids.get(k.process as usize).copied().unwrap_or(0);
            })?;
        }
        let table = &mut self.scan.kernels;
        table.runs = runs;
        table.cache = RefCell::new(cache);
        Ok(())
    }
}

impl FileScan {
    /// Scans `conn` for the rows a whole load under `opts` holds. Tables are read in the
    /// order of the CLI's load (`load_path`: the host side, then the kernel table),
    /// each by its loader with a sink that keeps only the runs, reading only the columns that
    /// intern threads, processes and names, so their ids come out as that load's.
    pub fn new(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
    ) -> Result<FileScan> {
        FileScan::scan(
            conn,
            path,
            opts,
            progress,
            (MAX_FILE_RUNS, &RowBudget::new(0)),
            KernelReader::After,
        )
    }

    /// [`FileScan::new`] keeping the rows it reads, `bytes` at most over every table, as the
    /// passes after it keep theirs ([`FileScan::cache_rows_up_to`]): the first pass over a table
    /// then reads it from memory too. It reads every column a pass reads, not only the scan's.
    pub fn keeping_rows(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
        bytes: usize,
    ) -> Result<FileScan> {
        FileScan::keeping_rows_within(conn, path, opts, progress, &RowBudget::new(bytes))
    }

    /// [`FileScan::keeping_rows`] on a budget other scans may share: what every scan holding
    /// it keeps, together, stays within it.
    pub fn keeping_rows_within(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
        budget: &RowBudget,
    ) -> Result<FileScan> {
        FileScan::scan(
            conn,
            path,
            opts,
            progress,
            (MAX_FILE_RUNS, budget),
            KernelReader::After,
        )
    }

    /// [`FileScan::new`], a table in more than `max_runs` sorted runs read in slices of its
    /// keys (`runs::Slices`): the runs' bounds are what the scan holds per table.
    pub fn with_max_runs(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
        max_runs: usize,
    ) -> Result<FileScan> {
        FileScan::scan(
            conn,
            path,
            opts,
            progress,
            (max_runs, &RowBudget::new(0)),
            KernelReader::After,
        )
    }

    /// [`FileScan::keeping_rows`] of the export at `file`, its kernel table read on a second
    /// connection in a thread of its own while this one reads the host side: the two largest
    /// tables decoded on two cores. Ids and rows are those of the scan on one thread.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn of_file(
        conn: &Connection,
        file: &std::path::Path,
        opts: LoadOptions,
        bytes: usize,
    ) -> Result<FileScan> {
        let label = file.display().to_string();
        let budget = RowBudget::new(bytes);
        let limits = (MAX_FILE_RUNS, &budget);
        let reader = KernelReader::Thread(file);
        let mut scan = FileScan::scan(conn, &label, opts, &mut |_| true, limits, reader)?;
        scan.file = Some(file.to_path_buf());
        Ok(scan)
    }

    /// [`FileScan::of_file`] folding `fold` while it reads: its host side over the NVTX
    /// ranges as the host side reads them, then its GPU side over the GPU work as the kernel
    /// table's thread reads it. The GPU side comes back when every row it and the ranges met
    /// came as a pass would hand it out (`fold`'s module says when not); else the caller
    /// runs its passes.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn of_file_folding<F: ScanFold>(
        conn: &Connection,
        file: &std::path::Path,
        opts: LoadOptions,
        bytes: usize,
        fold: &mut F,
    ) -> Result<(FileScan, Option<F::Gpu>)> {
        fold::scan_folding(conn, file, (opts, &RowBudget::new(bytes)), fold)
    }

    /// The host side of [`FileScan::keeping_rows`], its kernel table left to another reader
    /// ([`KernelPart::read`], the page's reader worker), joined by [`HostScan::finish`].
    pub fn host_side(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
        budget: &RowBudget,
    ) -> Result<HostScan> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        FileScan::host_side_with(&mut ctx, (opts, budget), None)
    }

    /// [`FileScan::host_side`] telling `fold` of the NVTX ranges as it reads them (and keeps
    /// them): the page's verdict knows its host facts before the calls are read.
    pub fn host_side_folding(
        conn: &Connection,
        path: &str,
        (opts, budget): (LoadOptions, &RowBudget),
        progress: ProgressFn<'_>,
        fold: &mut dyn RangeFold,
    ) -> Result<HostScan> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        let hook = Box::new(range_fold::RangeHook::new(fold));
        FileScan::host_side_with(&mut ctx, (opts, budget), Some(hook))
    }

    fn host_side_with(
        ctx: &mut Loader<'_, '_>,
        (opts, budget): (LoadOptions, &RowBudget),
        hook: Option<Box<dyn ScanHook + '_>>,
    ) -> Result<HostScan> {
        let mut host = HostScan::begin(ctx, opts, (MAX_FILE_RUNS, budget))?;
        host.read(ctx, hook, None)?;
        Ok(host)
    }

    fn scan(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
        limits: (usize, &RowBudget),
        reader: KernelReader<'_>,
    ) -> Result<FileScan> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        let mut host = HostScan::begin(&mut ctx, opts, limits)?;
        let part = match reader {
            #[cfg(not(target_arch = "wasm32"))]
            KernelReader::Thread(file) => Some(host.read_beside_kernels(&mut ctx, file)?),
            _ => {
                host.read(&mut ctx, None, None)?;
                None
            }
        };
        host.finish(conn, ctx.progress, part)
    }
}

impl HostScan {
    /// Reads the host side while a thread reads the kernel table on a connection of its own
    /// (the kept rows of both counted against one budget): that part.
    #[cfg(not(target_arch = "wasm32"))]
    fn read_beside_kernels(
        &mut self,
        ctx: &mut Loader<'_, '_>,
        file: &std::path::Path,
    ) -> Result<KernelPart> {
        self.read_beside(ctx, file, (None, true), |ctx, mut job| {
            let (schema, strings, listed) = job.catalog(ctx)?;
            let (schema, strings) = (&schema, &strings);
            let limits = (job.max_runs, &*job.budget);
            job.kernels
                .read(ctx, (schema, strings), listed, limits, &mut |_| {})
        })
    }

    /// Reads the host side (telling `hook` of its ranges) while `kernel_side` reads the kernel
    /// table on a thread and a connection of its own.
    #[cfg(not(target_arch = "wasm32"))]
    fn read_beside<T: Send>(
        &mut self,
        ctx: &mut Loader<'_, '_>,
        file: &std::path::Path,
        (hook, copy_catalog): (Option<Box<dyn ScanHook + '_>>, bool),
        kernel_side: impl FnOnce(&mut Loader<'_, '_>, KernelJob) -> Result<T> + Send,
    ) -> Result<T> {
        let path = ctx.path;
        let job = self.kernel_job(copy_catalog);
        let (host, part) = std::thread::scope(|threads| {
            let worker = threads.spawn(move || -> Result<T> {
                own_connection(file, path, |ctx| kernel_side(ctx, job))
            });
            // The hook (and a sender it holds) ends in the read, before the join: a reader
            // waiting for what it sends hears that nothing comes.
            let host = self.read(ctx, hook, Some(file));
            (host, worker.join())
        });
        host?;
        part.map_err(|_| reader_stopped(path))?
    }

    /// What the kernel table's thread is given, a copy of the catalog with it if `copy_catalog`.
    #[cfg(not(target_arch = "wasm32"))]
    fn kernel_job(&self, copy_catalog: bool) -> KernelJob {
        KernelJob {
            kernels: self.kernels,
            max_runs: self.max_runs,
            budget: Arc::clone(&self.budget),
            input: copy_catalog.then(|| {
                let listed = self.meta.processes.clone();
                (self.schema.clone(), self.meta.strings.clone(), listed)
            }),
            opts: self.opts,
        }
    }
}

/// What the kernel table's thread is given: the scan's set-up and a copy of the catalog it
/// reads with.
#[cfg(not(target_arch = "wasm32"))]
struct KernelJob {
    kernels: KernelScan,
    max_runs: usize,
    budget: Arc<Budget>,
    /// A copy of the catalog (schema, strings, the processes `ThreadNames` lists, numbered
    /// alike on every reader); `None`: the reader reads its own, keeping no string's text but
    /// those that decide its columns, as the page's reader worker does (at 10 GB the strings
    /// are 200 MB).
    input: Option<(Schema, Strings, Processes)>,
    opts: LoadOptions,
}
#[cfg(not(target_arch = "wasm32"))]
impl KernelJob {
    /// The catalog the reader reads with: its copy, or read here.
    fn catalog(&mut self, ctx: &mut Loader<'_, '_>) -> Result<(Schema, Strings, Processes)> {
        match self.input.take() {
            Some(catalog) => Ok(catalog),
            None => KernelJob::own_catalog(ctx),
        }
    }

    /// The catalog read by the reader itself, keeping no string's text but those that decide
    /// its columns.
    fn own_catalog(ctx: &mut Loader<'_, '_>) -> Result<(Schema, Strings, Processes)> {
        let (schema, meta) = ctx.begin_keeping(super::load::names_a_graph_launch)?;
        Ok((schema, meta.strings, meta.processes))
    }
}

/// `read` over a connection of its own to `file` (`path` as the scan shows it), reporting no
/// progress: what a thread reading beside the scan's reads with.
#[cfg(not(target_arch = "wasm32"))]
fn own_connection<T>(
    file: &std::path::Path,
    path: &str,
    read: impl FnOnce(&mut Loader<'_, '_>) -> Result<T>,
) -> Result<T> {
    let conn = super::open::open_path(file)?;
    let mut ctx = Loader {
        conn: &conn,
        path,
        progress: &mut |_| true,
    };
    read(&mut ctx)
}

/// A reader that died is a bug, never an answer: an internal error.
#[cfg(not(target_arch = "wasm32"))]
fn reader_stopped(path: &str) -> crate::error::Error {
    crate::error::Error::Internal {
        detail: format!("the thread reading the kernels of {path} stopped"),
    }
}

/// What the host side's scan tells a fold (`fold.rs`): each range and the end of the ranges,
/// then each call the scan hands on and the end of the calls.
trait ScanHook {
    /// Whether the scan keeps the rows it tells the hook of, as a scan without hook would (a
    /// one-shot view's fold: no pass follows, so it keeps none).
    fn keeps_rows(&self) -> bool {
        false
    }
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads);
    fn ranges_read(&mut self, meta: &Trace);
    fn call(&mut self, row: &CallRow);
    fn calls_read(&mut self);
}

impl FileScan {
    /// The host side, as `load_part(.., Part::Host)` reads it: NVTX ranges, CUDA API calls,
    /// memory operations, synchronizations, then the capture facts, GPUs and names.
    fn scan_host(
        &mut self,
        ctx: &mut Loader<'_, '_>,
        (schema, meta): (&Schema, &mut Trace),
        (opts, apart): (LoadOptions, Option<&std::path::Path>),
        budget: &Budget,
        mut hook: Option<Box<dyn ScanHook + '_>>,
    ) -> Result<()> {
        // A one-shot view's fold keeps no row of any table: it reads none again unless it gives
        // up, and then its passes read them from the file.
        let keep = budget.left() > 0 && hook.as_ref().is_none_or(|h| h.keeps_rows());
        let Table { runs, cache, .. } = &mut self.ranges;
        let mut fill = ScanFill::new(cache.get_mut(), budget, keep);
        // The ranges are counted as a load that forgot them counts them (`forget_ranges`):
        // the verdict reports how many there are, and whether any is named by inline text.
        let mut seen = crate::model::OmittedRanges::default();
        let details = keep && opts.event_details;
        // A fold's GPU side waits for the ranges (`fold.rs`): SQLite steps them apart.
        let nvtx_apart = apart.filter(|_| hook.is_some());
        let read = (details, nvtx_apart);
        ctx.read_nvtx(schema, meta, read, &mut |row, strings, threads| {
            if let Some(hook) = &mut hook {
                hook.range(row, strings, threads);
            }
            runs.push(row.row, row.key());
            fill.push(row);
            seen.count += 1;
            seen.inline_text |= row.name != row.text_id_name;
            true
        })?;
        fill.finish(runs.count() == 1);
        meta.nvtx.omitted.count += seen.count;
        meta.nvtx.omitted.inline_text |= seen.inline_text;
        if let Some(hook) = &mut hook {
            hook.ranges_read(meta);
        }
        let strings = std::mem::take(&mut meta.strings);
        // With launch calls only, the scan hands on (and keeps) the launch calls alone, as a
        // pass selects them in SQL: the same rows, runs and columns. A fold takes them as they
        // are read, as it takes the ranges.
        let Table { runs, cache, .. } = &mut self.calls;
        let mut fill = ScanFill::new(cache.get_mut(), budget, keep);
        let scan_opts = LoadOptions {
            event_details: keep && opts.event_details,
            ..opts
        };
        let read = (schema, &strings, &mut *meta, scan_opts);
        let scanned = calls_apart::read(ctx, apart, read, &mut |call| {
            if let Some(hook) = &mut hook {
                hook.call(&call);
            }
            runs.push(call.row, call.key());
            fill.push(&call);
        });
        fill.finish(runs.count() == 1);
        meta.strings = strings;
        scanned?;
        if let Some(hook) = &mut hook {
            hook.calls_read();
        }
        if opts.memory_ops {
            for table in [&mut self.memcpy, &mut self.memset] {
                let Table {
                    name, runs, cache, ..
                } = table;
                let mut fill = ScanFill::new(cache.get_mut(), budget, keep);
                let columns = match keep {
                    true => memop_columns(name),
                    false => only(memop_columns(name), &SCAN_COLUMNS),
                };
                ctx.read_memops(schema, meta, name, &columns, &mut |op| {
                    runs.push(op.row, op.key());
                    fill.push(&op);
                })?;
                fill.finish(runs.count() == 1);
            }
        }
        let Table { runs, cache, .. } = &mut self.replays;
        let mut fill = ScanFill::new(cache.get_mut(), budget, keep);
        ctx.read_replays(schema, meta, &REPLAY_COLUMNS, &mut |row| {
            runs.push(row.row, row.key());
            fill.push(&row);
        })?;
        fill.finish(runs.count() == 1);
        if opts.syncs {
            let Table { runs, cache, .. } = &mut self.syncs;
            let mut fill = ScanFill::new(cache.get_mut(), budget, keep);
            let columns = match keep {
                true => SYNC_COLUMNS,
                false => only(SYNC_COLUMNS, &SCAN_COLUMNS),
            };
            ctx.read_syncs(schema, meta, &columns, &mut |sync| {
                runs.push(sync.row, sync.key());
                fill.push(&sync);
            })?;
            fill.finish(runs.count() == 1);
        }
        ctx.finish_host(schema, meta)
    }

    /// The `SELECT` of one chunk of each table the load reads.
    fn chunk_queries(&mut self, schema: &Schema, meta: &Trace, opts: LoadOptions) {
        let details = opts.event_details;
        let chunk = |table: &str, columns: &[&str], filter: &str| {
            let filter = format!("WHERE {CHUNK}{filter} {CHUNK_ORDER}");
            Some(select(schema, table, columns, &filter))
        };
        // Kernels and calls are decoded through `Selected`: the `NULL`s ending their lists left out.
        let decoded = |table: &str, columns: &[&str], filter: &str| {
            let filter = format!("WHERE {CHUNK}{filter} {CHUNK_ORDER}");
            Some(select_decoded(schema, table, columns, &filter))
        };
        if meta.present.kernels {
            let columns = kernel_read_columns(details, meta);
            self.kernels.sql = decoded(KERNEL_TABLE, &columns, "");
        }
        if meta.present.runtime {
            let launches = opts.launch_calls_only && schema.has_column(RUNTIME_TABLE, "nameId");
            let filter = match launches {
                true => format!(" AND {}", launch_filter(&meta.strings)),
                false => String::new(),
            };
            self.calls.sql = decoded(RUNTIME_TABLE, &call_columns(details), &filter);
        }
        if meta.present.nvtx {
            let filter = " AND \"end\" IS NOT NULL";
            self.ranges.sql = chunk(NVTX_TABLE, &nvtx_columns(details), filter);
        }
        if opts.memory_ops {
            for (table, present) in [
                (&mut self.memcpy, meta.present.memcpy),
                (&mut self.memset, meta.present.memset),
            ] {
                if present {
                    table.sql = chunk(table.name, &memop_columns(table.name), "");
                }
            }
        }
        if meta.present.replays {
            self.replays.sql = decoded(GRAPH_TRACE_TABLE, &REPLAY_COLUMNS, "");
        }
        if opts.syncs && meta.present.syncs {
            self.syncs.sql = chunk(SYNC_TABLE, &SYNC_COLUMNS, "");
        }
    }

    /// Gives back the room each table's runs grew past their count.
    fn shrink_runs(&mut self) {
        self.kernels.runs.shrink();
        self.replays.runs.shrink();
        self.calls.runs.shrink();
        self.ranges.runs.shrink();
        self.memcpy.runs.shrink();
        self.memset.runs.shrink();
        self.syncs.runs.shrink();
    }

    /// Bytes every table's runs hold.
    fn runs_bytes(&self) -> usize {
        self.kernels.runs.held_bytes()
            + self.replays.runs.held_bytes()
            + self.calls.runs.held_bytes()
            + self.ranges.runs.held_bytes()
            + self.memcpy.runs.held_bytes()
            + self.memset.runs.held_bytes()
            + self.syncs.runs.held_bytes()
    }

    /// Lets the rows read from the file be kept, `bytes` at most over every table (none
    /// before), so later passes read them from memory (`row_cache`).
    pub fn cache_rows_up_to(&mut self, bytes: usize) {
        self.cache_budget
            .give(std::mem::take(&mut self.runs_charged));
        self.cache_budget = Arc::new(Budget::new(bytes));
    }

    /// Bytes the tables' caches hold.
    pub fn cached_bytes(&self) -> usize {
        self.caches().iter().map(|(_, c)| c.borrow().bytes()).sum()
    }

    /// Per table, as [`FileScan::table_rows`] names them: the rows the scan kept (the passes
    /// read the others from the file).
    pub fn kept_rows(&self) -> [(&'static str, u64); 7] {
        [
            self.kernels.kept(),
            self.replays.kept(),
            self.calls.kept(),
            self.ranges.kept(),
            self.memcpy.kept(),
            self.memset.kept(),
            self.syncs.kept(),
        ]
    }

    /// Per table: its name, the rows its cache holds and whether they are all its rows (for
    /// the benchmarks).
    pub fn cached_rows(&self) -> Vec<(&'static str, u64, bool)> {
        self.caches()
            .iter()
            .map(|(name, c)| {
                let c = c.borrow();
                (*name, c.rows(), c.complete())
            })
            .collect()
    }

    fn caches(&self) -> [(&'static str, &RefCell<TableCache>); 7] {
        [
            ("kernels", &self.kernels.cache),
            ("replays", &self.replays.cache),
            ("calls", &self.calls.cache),
            ("ranges", &self.ranges.cache),
            ("memcpy", &self.memcpy.cache),
            ("memset", &self.memset.cache),
            ("syncs", &self.syncs.cache),
        ]
    }

    /// Everything but the event rows.
    pub fn meta(&self) -> &Trace {
        &self.meta
    }

    /// Refuses a table whose scan met a `rowid` not above the one before it: its rows read
    /// again by `rowid` range would be missed or read twice (a damaged b-tree; SQLite's
    /// `PRAGMA integrity_check` says "Rowid … out of order").
    fn check_rowid_order(&self, path: &str) -> Result<()> {
        let tables = [
            (self.kernels.name, self.kernels.runs.out_of_order()),
            (self.replays.name, self.replays.runs.out_of_order()),
            (self.calls.name, self.calls.runs.out_of_order()),
            (self.ranges.name, self.ranges.runs.out_of_order()),
            (self.memcpy.name, self.memcpy.runs.out_of_order()),
            (self.memset.name, self.memset.runs.out_of_order()),
            (self.syncs.name, self.syncs.runs.out_of_order()),
        ];
        match tables.into_iter().find_map(|(t, o)| o.map(|o| (t, o))) {
            Some((table, (before, row))) => Err(crate::error::Error::Corrupt {
                path: path.into(),
                detail: format!(
                    "table {table} lists rowid {row} after rowid {before}: its b-tree is out \
                     of order (PRAGMA integrity_check names the page)"
                ),
            }),
            None => Ok(()),
        }
    }

    /// Rows the scan found per table (kernels, graph replays, calls, ranges, memcpy, memset,
    /// syncs): what a pass reading a table whole hands out.
    pub fn table_rows(&self) -> [(&'static str, u64); 7] {
        [
            (self.kernels.name, self.kernels.rows()),
            (self.replays.name, self.replays.rows()),
            (self.calls.name, self.calls.rows()),
            (self.ranges.name, self.ranges.rows()),
            (self.memcpy.name, self.memcpy.rows()),
            (self.memset.name, self.memset.rows()),
            (self.syncs.name, self.syncs.rows()),
        ]
    }

    /// Sorted runs per table (kernels, calls, ranges, memcpy, memset, syncs), for figures.
    pub fn run_counts(&self) -> [(&'static str, usize); 6] {
        [
            (self.kernels.name, self.kernels.runs.count()),
            (self.calls.name, self.calls.runs.count()),
            (self.ranges.name, self.ranges.runs.count()),
            (self.memcpy.name, self.memcpy.runs.count()),
            (self.memset.name, self.memset.runs.count()),
            (self.syncs.name, self.syncs.runs.count()),
        ]
    }
}

/// The kernel columns a pass reads: the graph node only while the verdict can use it.
fn kernel_read_columns(details: bool, meta: &Trace) -> [&'static str; 11] {
    let graph_nodes = details || reads_graph_nodes(&meta.meta, &meta.strings);
    kernel_columns(details, graph_nodes)
}
