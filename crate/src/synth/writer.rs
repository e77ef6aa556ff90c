//! Writes a [`Timeline`] into a new SQLite file, fast.
//!
//! Millions of rows must land in seconds: one transaction, journal and sync off, no indexes,
//! and multi-row `INSERT`s (64 rows per statement) from cached prepared statements with the
//! parameters bound in place. Columns that never vary are SQL literals rather than parameters.

use std::path::Path;

use rusqlite::{Connection, Statement, ToSql};

use super::schema;
use super::timeline::{Api, GraphReplay, Kernel, MemOp, Nvtx, SyncOp, Timeline};
use crate::error::{Error, Result};

/// Rows per multi-row `INSERT` (at most 14 parameters × 64 stays far below SQLite's variable limit).
const BATCH: usize = 64;

/// Replaces `out` with the export of `tl`.
pub fn write(tl: &mut Timeline, out: &Path, scenario: &str) -> Result<()> {
    let path = out.display().to_string();
    remove_old(out, &path)?;
    let sql_err = |what: &str| {
        let path = path.clone();
        let what = what.to_string();
        move |e: rusqlite::Error| Error::Sqlite {
            path: path.clone(),
            what: what.clone(),
            detail: e.to_string(),
        }
    };
    let mut conn = Connection::open(out).map_err(sql_err("creating the file"))?;
    conn.pragma_update(None, "journal_mode", "OFF")
        .map_err(sql_err("PRAGMA journal_mode"))?;
    conn.pragma_update(None, "synchronous", "OFF")
        .map_err(sql_err("PRAGMA synchronous"))?;
    schema::create_tables(&conn).map_err(sql_err("creating tables"))?;
    let tx = conn.transaction().map_err(sql_err("BEGIN"))?;
    schema::write_descriptive(&tx, tl, scenario).map_err(sql_err("metadata tables"))?;
    write_events(&tx, tl).map_err(sql_err("event tables"))?;
    super::gpu_metrics::write(&tx, tl).map_err(sql_err("GPU metrics"))?;
    super::host_records::write(&tx, tl)
        .map_err(sql_err("overhead, scheduling and sample tables"))?;
    tx.commit().map_err(sql_err("COMMIT"))
}

fn remove_old(out: &Path, path: &str) -> Result<()> {
    match std::fs::remove_file(out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Io {
            path: path.to_string(),
            detail: format!("cannot replace the file: {e}"),
        }),
    }
}

fn write_events(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    let gpids: Vec<i64> = tl.procs.iter().map(|p| p.global_pid()).collect();
    write_strings(conn, tl)?;
    // nsys writes the kernel table in start order (every public export is), and the page's
    // one-pass analyses rely on it: generated traces do the same.
    let mut kernels: Vec<&Kernel> = tl.kernels.iter().collect();
    kernels.sort_by_key(|k| k.start);
    if tl.kernels.iter().any(|k| k.graph_id != 0) {
        // `graphId` joined the kernel table in nsys 2026.1 (schema 3.24.14), as its last column
        // but the ones after it, which these files do not have.
        conn.execute_batch(KERNEL_GRAPH_ID_DDL)?;
        insert_all(conn, &KERNELS_WITH_GRAPH_ID, &kernels, |st, o, k| {
            bind_kernel(st, o, k, tl, &gpids)?;
            bind(st, o + 14, (k.graph_id != 0).then_some(k.graph_id))
        })?;
    } else {
        insert_all(conn, &KERNELS, &kernels, |st, o, k| {
            bind_kernel(st, o, k, tl, &gpids)
        })?;
    }
    if !tl.graph_replays.is_empty() {
        // nsys creates tables lazily: the graph-trace table exists only when replays were traced.
        conn.execute_batch(GRAPH_TRACE_DDL)?;
        let mut replays: Vec<&GraphReplay> = tl.graph_replays.iter().collect();
        replays.sort_by_key(|r| r.start);
        insert_all(conn, &GRAPH_TRACE, &replays, |st, o, r| {
            bind_replay(st, o, r, &gpids)
        })?;
    }
    insert_all(conn, &RUNTIME, &tl.apis, |st, o, a| {
        bind_api(st, o, a, &gpids)
    })?;
    insert_all(conn, &NVTX, &tl.nvtx, |st, o, n| {
        bind_nvtx(st, o, n, tl, &gpids)
    })?;
    insert_all(conn, &MEMCPY, &tl.memcpy, |st, o, m| {
        bind_memcpy(st, o, m, &gpids)
    })?;
    insert_all(conn, &MEMSET, &tl.memset, |st, o, m| {
        bind_memop_common(st, o, m, &gpids)
    })?;
    insert_all(conn, &SYNCS, &tl.syncs, |st, o, s| {
        bind_sync(st, o, s, &gpids)
    })
}

fn write_strings(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    let rows: Vec<(u32, &str)> = tl.names.rows().collect();
    insert_all(conn, &STRINGS, &rows, |st, o, (id, v)| {
        bind(st, o + 1, id)?;
        bind(st, o + 2, v)
    })
}

/// The shape of one table's `INSERT`: the column list and one row's value list, in which `?`
/// marks a bound parameter and anything else is a literal.
struct TableSpec {
    table: &'static str,
    columns: &'static str,
    row: &'static str,
}

impl TableSpec {
    fn params(&self) -> usize {
        self.row.matches('?').count()
    }

    fn sql(&self, rows: usize) -> String {
        let values = vec![self.row; rows].join(",");
        format!(
            "INSERT INTO {} ({}) VALUES {values}",
            self.table, self.columns
        )
    }
}

const STRINGS: TableSpec = TableSpec {
    table: "StringIds",
    columns: "id, value",
    row: "(?,?)",
};

const KERNELS: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_KERNEL",
    columns: "start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, \
              shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, \
              blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, \
              gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig",
    row: "(?,?,?,1,NULL,?,?,?,?,?,NULL,0,0,?,?,1,1,?,1,1,0,0,0,0,?,0,?,NULL)",
};

/// The 2026.1 kernel column, added to the 2025.3.1 table when a node-traced kernel has a graph.
const KERNEL_GRAPH_ID_DDL: &str =
    "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN graphId INTEGER; -- Kernel graph ID.";

const KERNELS_WITH_GRAPH_ID: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_KERNEL",
    columns: "start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, demangledName, \
              shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, \
              blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, \
              gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig, graphId",
    row: "(?,?,?,1,NULL,?,?,?,?,?,NULL,0,0,?,?,1,1,?,1,1,0,0,0,0,?,0,?,NULL,?)",
};

/// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` as graph-level CUDA graph tracing exports it. None of the
/// reference schemas or public exports holds this table: the columns are those of CUPTI's
/// `CUpti_ActivityGraphTrace2` record plus the ids every CUPTI table of the export carries
/// (`docs/gpu-work-generator.md` says which are confirmed where).
pub const GRAPH_TRACE_DDL: &str = "
CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    greenContextId              INTEGER,                               -- Green context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    graphId                     INTEGER,                               -- Unique ID of the launched graph.
    graphExecId                 INTEGER                                -- ID of the launched graph executable.
);
";

const GRAPH_TRACE: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    columns: "start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid, graphId, graphExecId",
    row: "(?,?,?,1,NULL,?,?,?,?,?)",
};

const RUNTIME: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_RUNTIME",
    columns: "start, end, eventClass, globalTid, correlationId, nameId, returnValue, callchainId",
    row: "(?,?,1,?,?,?,0,NULL)",
};

const NVTX: TableSpec = TableSpec {
    table: "NVTX_EVENTS",
    columns: "start, end, eventType, text, globalTid, textId, domainId",
    row: "(?,?,?,?,?,?,?)",
};

const MEMCPY: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_MEMCPY",
    columns: "start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind, \
              srcDeviceId, dstDeviceId, copyCount",
    row: "(?,?,?,1,?,?,?,?,?,?,?,?,?,1)",
};

const MEMSET: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_MEMSET",
    columns: "start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, memKind, value",
    row: "(?,?,?,1,?,?,?,?,?,0)",
};

const SYNCS: TableSpec = TableSpec {
    table: "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    columns: "start, end, deviceId, contextId, streamId, correlationId, globalPid, syncType, eventId",
    row: "(?,?,?,1,?,?,?,?,0)",
};

fn bind<T: ToSql>(st: &mut Statement<'_>, idx: usize, v: T) -> rusqlite::Result<()> {
    st.raw_bind_parameter(idx, v)
}

/// Inserts `rows` with `BATCH`-row statements, then single-row ones for the remainder.
/// `bind_row(stmt, offset, row)` binds parameters `offset + 1 ..= offset + spec.params()`.
fn insert_all<T>(
    conn: &Connection,
    spec: &TableSpec,
    rows: &[T],
    bind_row: impl Fn(&mut Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let n = spec.params();
    let mut chunks = rows.chunks_exact(BATCH);
    if chunks.len() > 0 {
        let mut many = conn.prepare_cached(&spec.sql(BATCH))?;
        for chunk in &mut chunks {
            for (i, row) in chunk.iter().enumerate() {
                bind_row(&mut many, i * n, row)?;
            }
            many.raw_execute()?;
        }
    }
    let mut one = conn.prepare_cached(&spec.sql(1))?;
    for row in chunks.remainder() {
        bind_row(&mut one, 0, row)?;
        one.raw_execute()?;
    }
    Ok(())
}

fn gpid(gpids: &[i64], proc: u8) -> i64 {
    gpids.get(proc as usize).copied().unwrap_or(0)
}

fn bind_kernel(
    st: &mut Statement<'_>,
    o: usize,
    k: &Kernel,
    tl: &Timeline,
    gpids: &[i64],
) -> rusqlite::Result<()> {
    let geometry = tl
        .geometry
        .get(k.kind as usize)
        .copied()
        .unwrap_or([32, 1, 128]);
    bind(st, o + 1, k.start)?;
    bind(st, o + 2, k.end)?;
    bind(st, o + 3, k.device)?;
    bind(st, o + 4, k.stream)?;
    bind(st, o + 5, k.corr)?;
    bind(st, o + 6, gpid(gpids, k.proc))?;
    bind(st, o + 7, k.demangled)?;
    bind(st, o + 8, k.short)?;
    bind(st, o + 9, geometry[0])?;
    bind(st, o + 10, geometry[1])?;
    bind(st, o + 11, geometry[2])?;
    bind(st, o + 12, k.corr)?;
    bind(st, o + 13, (k.graph_node != 0).then_some(k.graph_node))
}

fn bind_api(st: &mut Statement<'_>, o: usize, a: &Api, gpids: &[i64]) -> rusqlite::Result<()> {
    bind(st, o + 1, a.start)?;
    bind(st, o + 2, a.end)?;
    bind(
        st,
        o + 3,
        gpid(gpids, a.proc) | i64::from(a.tid & 0xFF_FFFF),
    )?;
    bind(st, o + 4, a.corr)?;
    bind(st, o + 5, a.name)
}

fn bind_nvtx(
    st: &mut Statement<'_>,
    o: usize,
    n: &Nvtx,
    tl: &Timeline,
    gpids: &[i64],
) -> rusqlite::Result<()> {
    let (text, text_id) = if n.inline {
        (Some(tl.names.get(n.name)), None)
    } else {
        (None, Some(n.name))
    };
    bind(st, o + 1, n.start)?;
    bind(st, o + 2, n.end)?;
    bind(st, o + 3, n.event_type)?;
    bind(st, o + 4, text)?;
    bind(
        st,
        o + 5,
        gpid(gpids, n.proc) | i64::from(n.tid & 0xFF_FFFF),
    )?;
    bind(st, o + 6, text_id)?;
    bind(st, o + 7, n.domain)
}

fn bind_memop_common(
    st: &mut Statement<'_>,
    o: usize,
    m: &MemOp,
    gpids: &[i64],
) -> rusqlite::Result<()> {
    bind(st, o + 1, m.start)?;
    bind(st, o + 2, m.end)?;
    bind(st, o + 3, m.device)?;
    bind(st, o + 4, m.stream)?;
    bind(st, o + 5, m.corr)?;
    bind(st, o + 6, gpid(gpids, m.proc))?;
    bind(st, o + 7, m.bytes)?;
    bind(st, o + 8, m.kind)
}

fn bind_memcpy(st: &mut Statement<'_>, o: usize, m: &MemOp, gpids: &[i64]) -> rusqlite::Result<()> {
    bind_memop_common(st, o, m, gpids)?;
    bind(st, o + 9, m.src_kind)?;
    bind(st, o + 10, m.dst_kind)?;
    bind(st, o + 11, m.device)?;
    bind(st, o + 12, m.device)
}

fn bind_replay(
    st: &mut Statement<'_>,
    o: usize,
    r: &GraphReplay,
    gpids: &[i64],
) -> rusqlite::Result<()> {
    bind(st, o + 1, r.start)?;
    bind(st, o + 2, r.end)?;
    bind(st, o + 3, r.device)?;
    bind(st, o + 4, r.stream)?;
    bind(st, o + 5, r.corr)?;
    bind(st, o + 6, gpid(gpids, r.proc))?;
    bind(st, o + 7, r.graph_id)?;
    bind(st, o + 8, r.graph_exec_id)
}

fn bind_sync(st: &mut Statement<'_>, o: usize, s: &SyncOp, gpids: &[i64]) -> rusqlite::Result<()> {
    bind(st, o + 1, s.start)?;
    bind(st, o + 2, s.end)?;
    bind(st, o + 3, s.device)?;
    bind(st, o + 4, s.stream)?;
    bind(st, o + 5, s.corr)?;
    bind(st, o + 6, gpid(gpids, s.proc))?;
    bind(st, o + 7, s.sync_type)
}
