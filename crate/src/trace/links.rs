//! A row of GPU work (kernel, graph replay, copy, memset) and the CUDA API call that launched
//! it, found by their correlation id within one process: one row's key read by `rowid`, the
//! other side searched in a `rowid` range (the timeline's hover; its index narrows the range to
//! rows near the time).

use rusqlite::{Connection, OptionalExtension};

use super::load::RUNTIME_TABLE;
use super::open::sqlite_error;
use super::schema::Schema;
use super::work_rows::work_table_name;
use crate::error::Result;
use crate::model::{LinkKey, WorkTable};

/// A table's two reads: a row's key by `rowid`, and the row with a key in a `rowid` range.
type Reads = [String; 2];

/// The reads of the runtime table and of each GPU-work table; a table lacking its correlation
/// id or process column (or absent) links nothing.
#[derive(Debug, Clone)]
pub struct Links {
    calls: Option<Reads>,
    /// By [`WorkTable::index`].
    work: [Option<Reads>; 4],
}

impl Links {
    pub fn new(schema: &Schema) -> Links {
        let reads = |t: &str, who: &str| {
            let usable = schema.has_column(t, "correlationId") && schema.has_column(t, who);
            usable.then(|| {
                [
                    format!("SELECT correlationId, {who} >> 24 FROM {t} WHERE rowid = ?1"),
                    format!(
                        "SELECT rowid FROM {t} WHERE rowid BETWEEN ?1 AND ?2 AND correlationId = ?3 \
                         AND ({who} >> 24) = ?4 LIMIT 1"
                    ),
                ]
            })
        };
        let calls = reads(RUNTIME_TABLE, "globalTid");
        let work = WorkTable::ALL.map(|t| {
            calls
                .as_ref()
                .and_then(|_| reads(work_table_name(t), "globalPid"))
        });
        Links { calls, work }
    }

    /// Finds nothing (a source that shows no launch link).
    pub fn none() -> Links {
        Links {
            calls: None,
            work: [None, None, None, None],
        }
    }

    /// The key of row `row` of GPU-work table `table`.
    pub fn work_key(
        &self,
        conn: &Connection,
        path: &str,
        table: WorkTable,
        row: i64,
    ) -> Result<Option<LinkKey>> {
        let reads = self.work[table.index()].as_ref();
        key(conn, path, reads, work_table_name(table), row)
    }

    /// The key of CUDA API call row `row`.
    pub fn call_key(&self, conn: &Connection, path: &str, row: i64) -> Result<Option<LinkKey>> {
        key(conn, path, self.calls.as_ref(), RUNTIME_TABLE, row)
    }

    /// The row of GPU-work table `table` in `rows` with `key`.
    pub fn work_with(
        &self,
        conn: &Connection,
        path: &str,
        table: WorkTable,
        rows: (i64, i64),
        key: LinkKey,
    ) -> Result<Option<i64>> {
        let reads = self.work[table.index()].as_ref();
        find(conn, path, reads, work_table_name(table), rows, key)
    }

    /// The CUDA API call row of `rows` with `key`.
    pub fn call_with(
        &self,
        conn: &Connection,
        path: &str,
        rows: (i64, i64),
        key: LinkKey,
    ) -> Result<Option<i64>> {
        find(conn, path, self.calls.as_ref(), RUNTIME_TABLE, rows, key)
    }
}

fn key(
    conn: &Connection,
    path: &str,
    reads: Option<&Reads>,
    table: &str,
    row: i64,
) -> Result<Option<LinkKey>> {
    let Some([sql, _]) = reads else {
        return Ok(None);
    };
    let read = |r: &rusqlite::Row<'_>| {
        let correlation: Option<i64> = r.get(0)?;
        let process: Option<i64> = r.get(1)?;
        Ok(correlation.zip(process))
    };
    let found = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row([row], read).optional())
        .map_err(|e| sqlite_error(path, table, &e))?;
    Ok(found.flatten().map(|(correlation, process)| LinkKey {
        correlation,
        process,
    }))
}

fn find(
    conn: &Connection,
    path: &str,
    reads: Option<&Reads>,
    table: &str,
    (first, last): (i64, i64),
    key: LinkKey,
) -> Result<Option<i64>> {
    let Some([_, sql]) = reads else {
        return Ok(None);
    };
    conn.prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_row([first, last, key.correlation, key.process], |r| r.get(0))
                .optional()
        })
        .map_err(|e| sqlite_error(path, table, &e))
}
