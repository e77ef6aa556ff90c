//! A kernel and the CUDA API call that launched it, found by their correlation id within one
//! process: one row's key read by `rowid`, the other side searched in a `rowid` range (the
//! timeline's hover; its index narrows the range to rows near the time).

use rusqlite::{Connection, OptionalExtension};

use super::load::{KERNEL_TABLE, RUNTIME_TABLE};
use super::open::sqlite_error;
use super::schema::Schema;
use crate::error::Result;
use crate::model::LinkKey;

/// The four reads; `None` when either table lacks its correlation id or process column.
#[derive(Debug, Clone)]
pub struct Links {
    sql: Option<[String; 4]>,
}

impl Links {
    pub fn new(schema: &Schema) -> Links {
        let has = |t: &str, c: &str| schema.has_column(t, c);
        let usable = has(KERNEL_TABLE, "correlationId")
            && has(KERNEL_TABLE, "globalPid")
            && has(RUNTIME_TABLE, "correlationId")
            && has(RUNTIME_TABLE, "globalTid");
        let key = |t: &str, who: &str| {
            format!("SELECT correlationId, {who} >> 24 FROM {t} WHERE rowid = ?1")
        };
        let find = |t: &str, who: &str| {
            format!(
                "SELECT rowid FROM {t} WHERE rowid BETWEEN ?1 AND ?2 AND correlationId = ?3 \
                 AND ({who} >> 24) = ?4 LIMIT 1"
            )
        };
        Links {
            sql: usable.then(|| {
                [
                    key(KERNEL_TABLE, "globalPid"),
                    key(RUNTIME_TABLE, "globalTid"),
                    find(KERNEL_TABLE, "globalPid"),
                    find(RUNTIME_TABLE, "globalTid"),
                ]
            }),
        }
    }

    /// Finds nothing (a source that shows no launch link).
    pub fn none() -> Links {
        Links { sql: None }
    }

    /// The key of kernel row `row`.
    pub fn kernel_key(&self, conn: &Connection, path: &str, row: i64) -> Result<Option<LinkKey>> {
        self.key(conn, path, 0, KERNEL_TABLE, row)
    }

    /// The key of CUDA API call row `row`.
    pub fn call_key(&self, conn: &Connection, path: &str, row: i64) -> Result<Option<LinkKey>> {
        self.key(conn, path, 1, RUNTIME_TABLE, row)
    }

    /// The kernel row of `rows` with `key`.
    pub fn kernel_with(
        &self,
        conn: &Connection,
        path: &str,
        rows: (i64, i64),
        key: LinkKey,
    ) -> Result<Option<i64>> {
        self.find(conn, path, 2, KERNEL_TABLE, rows, key)
    }

    /// The CUDA API call row of `rows` with `key`.
    pub fn call_with(
        &self,
        conn: &Connection,
        path: &str,
        rows: (i64, i64),
        key: LinkKey,
    ) -> Result<Option<i64>> {
        self.find(conn, path, 3, RUNTIME_TABLE, rows, key)
    }

    fn key(
        &self,
        conn: &Connection,
        path: &str,
        which: usize,
        table: &str,
        row: i64,
    ) -> Result<Option<LinkKey>> {
        let Some(sql) = &self.sql else {
            return Ok(None);
        };
        let read = |r: &rusqlite::Row<'_>| {
            let correlation: Option<i64> = r.get(0)?;
            let process: Option<i64> = r.get(1)?;
            Ok(correlation.zip(process))
        };
        let found = conn
            .prepare_cached(&sql[which])
            .and_then(|mut stmt| stmt.query_row([row], read).optional())
            .map_err(|e| sqlite_error(path, table, &e))?;
        Ok(found.flatten().map(|(correlation, process)| LinkKey {
            correlation,
            process,
        }))
    }

    fn find(
        &self,
        conn: &Connection,
        path: &str,
        which: usize,
        table: &str,
        (first, last): (i64, i64),
        key: LinkKey,
    ) -> Result<Option<i64>> {
        let Some(sql) = &self.sql else {
            return Ok(None);
        };
        conn.prepare_cached(&sql[which])
            .and_then(|mut stmt| {
                stmt.query_row([first, last, key.correlation, key.process], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| sqlite_error(path, table, &e))
    }
}
