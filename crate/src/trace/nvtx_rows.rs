//! NVTX rows read again by `rowid` range, named as the scan named them: the timeline's
//! forward-step lane zoomed in, and a hover's name.

use rusqlite::{Connection, OptionalExtension};

use super::decode::{
    NVTX_END, NVTX_TEXT, NVTX_TEXT_ID, inline_text, nvtx_columns, nvtx_row, only, opt_int, time,
};
use super::load::NVTX_TABLE;
use super::nvtx_names::RowNamer;
use super::open::sqlite_error;
use super::schema::{Schema, text_ref};
use super::tables::select;
use crate::error::Result;
use crate::model::{NvtxRow, Strings};

/// The NVTX columns the timeline's step lane reads (no thread, no domain).
const NAMED_SPAN: [&str; 6] = ["rowid", "start", "end", "eventType", "text", "textId"];

/// NVTX ranges read again by `rowid` range (the timeline's forward-step lane zoomed in), named
/// as the scan named them: a `textId` by the string table, an inline text by the text
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
