//! Loading an export whole into the columnar [`Trace`] ([`load`], [`load_part`]; on two threads
//! natively, [`load_parallel`]): the in-memory row source of tests and benchmarks. The front ends
//! read an export through `FileScan` and `FileRows` instead.
//!
//! No `GROUP BY`, `JOIN` or `ORDER BY` runs inside SQLite: in wasm those are an order of magnitude
//! slower than a Rust pass over the streamed rows. Absent columns are selected as `NULL`, so one
//! loader serves every nsys version; absent tables become coverage notes.

use rusqlite::Connection;

use super::schema::Schema;
use super::tables::Loader;
use crate::error::{Error, Result};
use crate::model::{CoverageNote, NvtxRow, Strings, Threads, Trace, TraceMeta};
use crate::names::launch::GRAPH_LAUNCH;

/// Where a reader of the NVTX table hands each range (with the strings and threads as interned
/// so far); `false` stops the read.
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

    /// Only what detection reads: kernel start/end/device/process/name, copies and memsets (GPU
    /// work too), launch calls, NVTX ranges.
    pub fn detect() -> LoadOptions {
        LoadOptions {
            memory_ops: true,
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

pub(super) const PROGRESS_EVERY: u64 = 1 << 16;

pub use crate::model::KERNEL_TABLE;
pub const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const NVTX_TABLE: &str = "NVTX_EVENTS";
pub const MEMCPY_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
/// CUDA-graph replays traced at graph level (`--cuda-graph-trace=graph`, nsys's default).
pub const GRAPH_TRACE_TABLE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
/// OS runtime calls: only whether the table exists is read.
pub const OSRT_TABLE: &str = "OSRT_API";
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
    let (schema, mut trace) = ctx.begin()?;
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
    let map = trace.processes.absorb(&part.processes);
    trace.kernels = part.kernels;
    for p in &mut trace.kernels.process {
        *p = map.get(*p as usize).copied().unwrap_or(0);
    }
    trace.present.kernels = part.present.kernels;
    trace.coverage.extend(part.coverage);
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

/// The schema of an open file, which must be an nsys export.
pub fn probe_export(conn: &Connection, path: &str) -> Result<Schema> {
    let schema = Schema::probe(conn, path)?;
    if !schema.is_nsys_export() {
        return Err(Error::NotNsysExport { path: path.into() });
    }
    Ok(schema)
}

/// Whether a load reads kernels' `graphNodeId` for the verdict: only its warning about a whole-graph
/// capture of a trace that launches graphs asks whether any kernel has one.
pub fn reads_graph_nodes(meta: &TraceMeta, strings: &Strings) -> bool {
    meta.traces_whole_graphs() && !strings.sqlite_ids_where(names_a_graph_launch).is_empty()
}

/// Whether a `StringIds` value names a CUDA graph launch call: the only values a kernel
/// table's reader needs ([`reads_graph_nodes`]).
pub(super) fn names_a_graph_launch(value: &str) -> bool {
    value.starts_with(GRAPH_LAUNCH)
}
