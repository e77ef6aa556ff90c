//! The kernel table read in `rowid` order, a chunk at a time, as [`KernelEvent`]s — never held.
//!
//! Why: the page must analyse exports whose kernel table is larger than its memory budget. nsys
//! writes the table in start order, so one pass in `rowid` order feeds the one-pass analyses
//! (`detect::sweep`, the timeline summary, the gap histogram). Chunks are `rowid` ranges (a
//! B-tree range, no sort), so the caller can yield between them (the page's worker answers
//! messages there) and re-read any range later (the timeline's deep zoom).

use rusqlite::{Connection, OptionalExtension};

use super::decode::{
    NVTX_END, NVTX_TEXT, NVTX_TEXT_ID, Remembered, inline_text, int, nvtx_columns, nvtx_row, only,
    opt_int, small, time,
};
use super::load::{KERNEL_TABLE, NVTX_TABLE};
use super::nvtx_names::RowNamer;
use super::open::sqlite_error;
use super::schema::{Schema, text_ref};
use super::tables::select;
use crate::error::Result;
use crate::model::{KernelEvent, NO_NAME, NameId, Ns, NvtxRow, Processes, Strings};

/// Columns of a [`KernelEvent`], `NULL` where the export lacks one.
const COLUMNS: [&str; 7] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "globalPid",
    "shortName",
    "graphNodeId",
];

/// A pass over the kernel table in `rowid` order.
#[derive(Debug, Clone)]
pub struct KernelRows {
    sql: String,
    /// The same query without `graphNodeId` (see [`KernelRows::skip_graph_nodes`]).
    sql_without_graph_nodes: String,
    /// First `rowid` not read yet.
    next: i64,
    /// Last `rowid` of the table (`next > last` once done; an absent or empty table starts done).
    last: i64,
    first: i64,
}

impl KernelRows {
    /// Prepares a pass (`rowid` bounds are two B-tree lookups, not a scan). Without a kernel
    /// table the pass is empty: the caller's coverage notes say why. `graph_nodes`: whether to
    /// read `graphNodeId` (else 0): the table's last column, it costs an eighth of the read.
    pub fn new(
        conn: &Connection,
        schema: &Schema,
        path: &str,
        graph_nodes: bool,
    ) -> Result<KernelRows> {
        let sql_without_graph_nodes = rows_sql(schema, false);
        let sql = if graph_nodes {
            rows_sql(schema, true)
        } else {
            sql_without_graph_nodes.clone()
        };
        let (first, last) = if schema.has_table(KERNEL_TABLE) {
            rowid_bounds(conn, path)?
        } else {
            (1, 0)
        };
        Ok(KernelRows {
            sql,
            sql_without_graph_nodes,
            next: first,
            last,
            first,
        })
    }

    /// Gives the rows from `share` (0..1) of those not read yet to another reader: this pass
    /// then ends before them. `None` when fewer than `min_rows` would go.
    pub fn split_tail(&mut self, share: f64, min_rows: i64) -> Option<(i64, i64)> {
        let left = self.last - self.next + 1;
        let given = (left as f64 * share.clamp(0.0, 1.0)) as i64;
        if given < min_rows.max(1) {
            return None;
        }
        let tail = (self.last - given + 1, self.last);
        self.last = tail.0 - 1;
        Some(tail)
    }

    /// The pass over rows `[first, last]` only (another reader's share, [`KernelRows::split_tail`]).
    pub fn only(mut self, (first, last): (i64, i64)) -> KernelRows {
        self.first = first;
        self.next = first;
        self.last = last;
        self
    }

    /// Stops reading `graphNodeId` from the next chunk on.
    pub fn skip_graph_nodes(&mut self) {
        self.sql.clone_from(&self.sql_without_graph_nodes);
    }

    /// The first `rowid` not read yet.
    pub fn next_row(&self) -> i64 {
        self.next
    }

    /// Reads no more rows (the reader has what it needs).
    pub fn skip_rest(&mut self) {
        self.next = self.last.saturating_add(1);
    }

    /// Whether every row has been read.
    pub fn is_done(&self) -> bool {
        self.next > self.last
    }

    /// Rows read so far and the table's `rowid` span, for progress.
    pub fn progress(&self) -> (u64, u64) {
        let span = (self.last - self.first + 1).max(0) as u64;
        let done = (self.next - self.first).clamp(0, span as i64) as u64;
        (done, span)
    }

    /// Reads the next `rows` rowids (fewer at the end) into `each`; names resolve through
    /// `names` (a `StringIds.id` to a [`crate::model::NameId`]), processes are interned into
    /// `processes`.
    pub fn next_chunk(
        &mut self,
        conn: &Connection,
        path: &str,
        rows: u32,
        names: impl FnMut(i64) -> NameId,
        processes: &mut Processes,
        each: impl FnMut(KernelEvent),
    ) -> Result<()> {
        if self.is_done() {
            return Ok(());
        }
        let to = self
            .next
            .saturating_add(i64::from(rows.max(1)) - 1)
            .min(self.last);
        self.read(conn, path, (self.next, to), names, processes, each)?;
        self.next = to.saturating_add(1);
        Ok(())
    }

    /// Reads the rows with `rowid` in `[first, last]`, in `rowid` order.
    pub fn read(
        &self,
        conn: &Connection,
        path: &str,
        (first, last): (i64, i64),
        mut names: impl FnMut(i64) -> NameId,
        processes: &mut Processes,
        mut each: impl FnMut(KernelEvent),
    ) -> Result<()> {
        let fail = |e: rusqlite::Error| sqlite_error(path, KERNEL_TABLE, &e);
        let mut stmt = conn.prepare_cached(&self.sql).map_err(fail)?;
        let mut rows = stmt.query([first, last]).map_err(fail)?;
        let mut process = Remembered::new(|gpid| processes.intern(gpid));
        while let Some(r) = rows.next().map_err(fail)? {
            let ev = (|| -> rusqlite::Result<KernelEvent> {
                Ok(KernelEvent {
                    row: int(r.get_ref(0)?, 0),
                    start: int(r.get_ref(1)?, 0),
                    end: int(r.get_ref(2)?, 0),
                    device: small(r.get_ref(3)?),
                    stream: small(r.get_ref(4)?),
                    process: process.get(int(r.get_ref(5)?, 0)),
                    short_name: opt_int(r.get_ref(6)?).map_or(NO_NAME, &mut names),
                    graph_node: opt_int(r.get_ref(7)?).map_or(0, |g| g as u64),
                    work: crate::model::Work::Kernel,
                    bytes: 0,
                })
            })()
            .map_err(fail)?;
            each(ev);
        }
        Ok(())
    }
}

fn rows_sql(schema: &Schema, graph_nodes: bool) -> String {
    let mut columns = COLUMNS;
    if !graph_nodes {
        columns[6] = "NULL";
    }
    select(
        schema,
        KERNEL_TABLE,
        &columns,
        "WHERE rowid BETWEEN ?1 AND ?2",
    )
    .replacen("SELECT ", "SELECT rowid, ", 1)
}

/// The first kernel row's start and the last kernel row's end (two B-tree edge lookups): in a
/// table in start order, the kernel hull's start and a lower bound of its end.
pub fn kernel_edges(conn: &Connection, schema: &Schema, path: &str) -> Result<Option<(Ns, Ns)>> {
    if !(schema.has_column(KERNEL_TABLE, "start") && schema.has_column(KERNEL_TABLE, "end")) {
        return Ok(None);
    }
    let edge = |sql: String| {
        conn.query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(|e| sqlite_error(path, KERNEL_TABLE, &e))
    };
    let first = edge(format!(
        "SELECT start FROM {KERNEL_TABLE} ORDER BY rowid LIMIT 1"
    ))?;
    let last = edge(format!(
        "SELECT \"end\" FROM {KERNEL_TABLE} ORDER BY rowid DESC LIMIT 1"
    ))?;
    Ok(first.zip(last))
}

/// `min(rowid)` and `max(rowid)`: two queries, because SQLite answers a lone `min`/`max` of the
/// `rowid` from the B-tree's edge but scans the whole table for both in one query.
fn rowid_bounds(conn: &Connection, path: &str) -> Result<(i64, i64)> {
    let edge = |f: &str| {
        conn.query_row(&format!("SELECT {f}(rowid) FROM {KERNEL_TABLE}"), [], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .map_err(|e| sqlite_error(path, KERNEL_TABLE, &e))
    };
    Ok(match (edge("min")?, edge("max")?) {
        (Some(first), Some(last)) => (first, last),
        _ => (1, 0),
    })
}

/// The NVTX columns the timeline's step lane reads (no thread, no domain).
const NAMED_SPAN: [&str; 6] = ["rowid", "start", "end", "eventType", "text", "textId"];

/// NVTX ranges read again by `rowid` range (the timeline's forward-step lane zoomed in), named
/// as the staged load named them: a `textId` by the string table, an inline text by the text
/// the load interned (none if it did not).
#[derive(Debug, Clone)]
pub struct NvtxRows {
    /// `None`: the export has no NVTX table.
    sql: Option<String>,
    /// One row's `text` and `textId`.
    name_sql: Option<String>,
}

impl NvtxRows {
    pub fn new(schema: &Schema) -> NvtxRows {
        let columns = only(nvtx_columns(false), &NAMED_SPAN);
        let filter = "WHERE rowid BETWEEN ?1 AND ?2 AND \"end\" IS NOT NULL";
        let has_table = schema.has_table(NVTX_TABLE);
        NvtxRows {
            sql: has_table.then(|| select(schema, NVTX_TABLE, &columns, filter)),
            name_sql: has_table
                .then(|| select(schema, NVTX_TABLE, &["text", "textId"], "WHERE rowid = ?1")),
        }
    }

    /// The name of the range in row `row` as a user sees it: its inline text, else its
    /// `StringIds` value (`None`: no such row, or no name).
    pub fn name_of(&self, conn: &Connection, path: &str, row: i64) -> Result<Option<String>> {
        let Some(sql) = &self.name_sql else {
            return Ok(None);
        };
        let fail = |e: rusqlite::Error| sqlite_error(path, NVTX_TABLE, &e);
        let read = |r: &rusqlite::Row<'_>| {
            let text = inline_text(r.get_ref(0)?).map(|t| t.into_owned());
            Ok((text, opt_int(r.get_ref(1)?)))
        };
        let (text, text_id) = match conn
            .prepare_cached(sql)
            .and_then(|mut stmt| stmt.query_row([row], read))
        {
            Ok(found) => found,
            Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        match (text, text_id) {
            (Some(text), _) => Ok(Some(text)),
            (None, Some(id)) => conn
                .prepare_cached("SELECT value FROM StringIds WHERE id = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([id], |r| Ok(text_ref(r.get_ref(0)?).into_owned()))
                })
                .optional()
                .map_err(|e| sqlite_error(path, "StringIds", &e)),
            (None, None) => Ok(None),
        }
    }

    /// Visits the ranges of rows `first..=last` in `rowid` order.
    pub fn read(
        &self,
        conn: &Connection,
        path: &str,
        (first, last): (i64, i64),
        strings: &Strings,
        each: &mut dyn FnMut(NvtxRow),
    ) -> Result<()> {
        let Some(sql) = &self.sql else {
            return Ok(());
        };
        let fail = |e: rusqlite::Error| sqlite_error(path, NVTX_TABLE, &e);
        let mut stmt = conn.prepare_cached(sql).map_err(fail)?;
        let mut rows = stmt.query([first, last]).map_err(fail)?;
        let mut namer = RowNamer::new(conn);
        while let Some(r) = rows.next().map_err(fail)? {
            let row = (|| -> rusqlite::Result<NvtxRow> {
                let text = inline_text(r.get_ref(NVTX_TEXT)?);
                let text_id = opt_int(r.get_ref(NVTX_TEXT_ID)?);
                let names = namer.name_again(strings, text.as_deref(), text_id)?;
                let mut row = nvtx_row(r, time(r.get_ref(NVTX_END)?)?, 0)?;
                names.apply(&mut row);
                Ok(row)
            })()
            .map_err(fail)?;
            each(row);
        }
        Ok(())
    }
}
