//! CUDA API calls and NVTX ranges for the timeline's thread tracks: one scan of where and when
//! (`rowid`, start, end, thread — no names), from which the timeline keeps a bounded row-block
//! index, then rows read again by `rowid` range, named, for a zoomed-in view. Nothing is held
//! here: the page never keeps either table.

use rusqlite::Connection;

use super::decode::{inline_text, int, opt_int, time};
use super::load::{NVTX_TABLE, RUNTIME_TABLE};
use super::open::sqlite_error;
use super::schema::Schema;
use super::tables::select;
use crate::error::Result;
use crate::model::{HostRow, HostSpan, HostTable, NVTX_RANGE_TYPES, Strings};

/// The reads of one host table; both `None` when the export lacks it (or its times or thread).
#[derive(Debug, Clone)]
pub struct HostRows {
    table: HostTable,
    scan_sql: Option<String>,
    read_sql: Option<String>,
}

impl HostRows {
    pub fn new(schema: &Schema, table: HostTable) -> HostRows {
        let name = table_name(table);
        let usable = schema.has_table(name)
            && ["start", "end", "globalTid"]
                .iter()
                .all(|c| schema.has_column(name, c));
        let filter = match table {
            HostTable::Api => String::new(),
            HostTable::Nvtx => {
                let types: Vec<String> = NVTX_RANGE_TYPES.iter().map(u8::to_string).collect();
                let typed = if schema.has_column(name, "eventType") {
                    format!(" AND eventType IN ({})", types.join(", "))
                } else {
                    String::new()
                };
                format!("\"end\" IS NOT NULL{typed}")
            }
        };
        let and = |more: &str| match (filter.is_empty(), more.is_empty()) {
            (true, true) => String::new(),
            (true, false) => format!("WHERE {more}"),
            (false, true) => format!("WHERE {filter}"),
            (false, false) => format!("WHERE {more} AND {filter}"),
        };
        let names: &[&str] = match table {
            HostTable::Api => &["nameId", "nameId"],
            HostTable::Nvtx => &["text", "textId"],
        };
        let span = ["rowid", "start", "end", "globalTid"];
        let read_columns: Vec<&str> = span.iter().chain(names).copied().collect();
        HostRows {
            table,
            scan_sql: usable.then(|| select(schema, name, &span, &and(""))),
            read_sql: usable
                .then(|| select(schema, name, &read_columns, &and("rowid BETWEEN ?1 AND ?2"))),
        }
    }

    /// Reads nothing (a source whose host tracks are not shown).
    pub fn none(table: HostTable) -> HostRows {
        HostRows {
            table,
            scan_sql: None,
            read_sql: None,
        }
    }

    /// Visits every row's span in `rowid` order (the index scan: four integers a row).
    pub fn scan(
        &self,
        conn: &Connection,
        path: &str,
        each: &mut dyn FnMut(HostSpan),
    ) -> Result<()> {
        let Some(sql) = &self.scan_sql else {
            return Ok(());
        };
        let fail = |e: rusqlite::Error| sqlite_error(path, table_name(self.table), &e);
        let mut stmt = conn.prepare(sql).map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        while let Some(r) = rows.next().map_err(fail)? {
            each(span_of(r).map_err(fail)?);
        }
        Ok(())
    }

    /// Visits rows `first..=last` in `rowid` order, named: an API call by its function, an
    /// NVTX range by its inline text, else its `StringIds` value.
    pub fn read(
        &self,
        conn: &Connection,
        path: &str,
        (first, last): (i64, i64),
        strings: &Strings,
        each: &mut dyn FnMut(HostRow),
    ) -> Result<()> {
        let Some(sql) = &self.read_sql else {
            return Ok(());
        };
        let fail = |e: rusqlite::Error| sqlite_error(path, table_name(self.table), &e);
        let mut stmt = conn.prepare_cached(sql).map_err(fail)?;
        let mut rows = stmt.query([first, last]).map_err(fail)?;
        while let Some(r) = rows.next().map_err(fail)? {
            let row = (|| -> rusqlite::Result<HostRow> {
                let text = inline_text(r.get_ref(4)?).map(|t| t.into_owned());
                let name = match (self.table, text) {
                    (HostTable::Nvtx, Some(text)) => text,
                    _ => opt_int(r.get_ref(5)?)
                        .map(|id| strings.get(strings.resolve(id)).to_string())
                        .unwrap_or_default(),
                };
                Ok(HostRow {
                    span: span_of(r)?,
                    name,
                })
            })()
            .map_err(fail)?;
            each(row);
        }
        Ok(())
    }
}

fn table_name(table: HostTable) -> &'static str {
    match table {
        HostTable::Api => RUNTIME_TABLE,
        HostTable::Nvtx => NVTX_TABLE,
    }
}

/// The first four columns: `rowid, start, end, globalTid`.
fn span_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<HostSpan> {
    Ok(HostSpan {
        row: int(r.get_ref(0)?, 0),
        start: time(r.get_ref(1)?)?,
        end: time(r.get_ref(2)?)?,
        thread: int(r.get_ref(3)?, 0),
    })
}
