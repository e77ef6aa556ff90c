//! NVTX rows read again by `rowid` range, named as the scan named them: the timeline's
//! forward-step lane zoomed in.

use rusqlite::Connection;

use super::decode::{
    NVTX_END, NVTX_TEXT, NVTX_TEXT_ID, inline_text, nvtx_columns, nvtx_row, only, opt_int, time,
};
use super::load::NVTX_TABLE;
use super::nvtx_names::name_row_again;
use super::open::sqlite_error;
use super::schema::Schema;
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
}

impl NvtxRows {
    pub fn new(schema: &Schema) -> NvtxRows {
        let columns = only(nvtx_columns(false), &NAMED_SPAN);
        let filter = "WHERE rowid BETWEEN ?1 AND ?2 AND \"end\" IS NOT NULL";
        NvtxRows {
            sql: (schema.has_table(NVTX_TABLE))
                .then(|| select(schema, NVTX_TABLE, &columns, filter)),
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
        while let Some(r) = rows.next().map_err(fail)? {
            let row = (|| -> rusqlite::Result<NvtxRow> {
                let text = inline_text(r.get_ref(NVTX_TEXT)?);
                let text_id = opt_int(r.get_ref(NVTX_TEXT_ID)?);
                let mut row = nvtx_row(r, time(r.get_ref(NVTX_END)?)?, 0)?;
                name_row_again(&mut row, strings, text.as_deref(), text_id);
                Ok(row)
            })()
            .map_err(fail)?;
            each(row);
        }
        Ok(())
    }
}
