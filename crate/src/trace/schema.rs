//! Schema probing: which tables and columns this export has, and its metadata.
//!
//! nsys creates tables lazily and renames things across versions, so nothing is assumed:
//! every loader asks [`Schema`] first and records what was absent.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;

use super::open::sqlite_error;
use crate::error::Result;
use crate::model::{GraphNodeEvents, TraceMeta};

/// Tables and their columns, as found in `sqlite_master`.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    tables: BTreeMap<String, BTreeSet<String>>,
}

impl Schema {
    /// Reads table and column names (cheap: the schema table only).
    pub fn probe(conn: &Connection, path: &str) -> Result<Schema> {
        let err = |e: rusqlite::Error| sqlite_error(path, "the schema", &e);
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')")
            .map_err(err)?;
        let names: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(err)?;
        let mut tables = BTreeMap::new();
        for name in names {
            let mut cols = BTreeSet::new();
            let mut info = conn
                .prepare(&format!(
                    "PRAGMA table_info(\"{}\")",
                    name.replace('"', "\"\"")
                ))
                .map_err(err)?;
            let rows = info.query_map([], |r| r.get::<_, String>(1)).map_err(err)?;
            for c in rows {
                cols.insert(c.map_err(err)?);
            }
            tables.insert(name, cols);
        }
        Ok(Schema { tables })
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|c| c.contains(column))
    }

    /// The table names, sorted.
    pub fn table_names(&self) -> Vec<String> {
        self.tables.keys().cloned().collect()
    }

    /// Whether this looks like an nsys export at all.
    pub fn is_nsys_export(&self) -> bool {
        self.has_table("StringIds")
            || self
                .tables
                .keys()
                .any(|t| t.starts_with("CUPTI_ACTIVITY_KIND_") || t.starts_with("NVTX_"))
    }

    /// The first of `candidates` present in `table`, for renamed columns.
    pub fn first_column<'a>(&self, table: &str, candidates: &[&'a str]) -> Option<&'a str> {
        candidates
            .iter()
            .copied()
            .find(|c| self.has_column(table, c))
    }
}

/// Reads version, capture options and session start into [`TraceMeta`]; missing pieces stay `None`.
pub fn read_meta(conn: &Connection, schema: &Schema, path: &str) -> Result<TraceMeta> {
    let mut meta = TraceMeta {
        tables: schema.table_names(),
        ..TraceMeta::default()
    };
    let export_table = ["META_DATA_EXPORT", "EXPORT_META_DATA"]
        .into_iter()
        .find(|t| schema.has_column(t, "name") && schema.has_column(t, "value"));
    if let Some(table) = export_table {
        meta.metadata_table = Some(table.to_string());
        for (name, value) in name_values(conn, table, path)? {
            match name.as_str() {
                "EXPORT_PRODUCT_VERSION" => meta.nsys_version = Some(value),
                "EXPORT_SCHEMA_VERSION" => meta.schema_version = Some(value),
                _ => {}
            }
        }
    }
    if schema.has_column("META_DATA_CAPTURE", "name")
        && schema.has_column("META_DATA_CAPTURE", "value")
    {
        meta.capture = name_values(conn, "META_DATA_CAPTURE", path)?
            .into_iter()
            .filter(|(k, _)| !k.ends_with(":ENVIRONMENT_VARIABLE"))
            .collect();
    }
    meta.graph_node_events = graph_node_events(conn, schema);
    meta.nccl_ranks = super::nccl::nccl_ranks(conn, schema);
    if schema.has_column("TARGET_INFO_SESSION_START_TIME", "utcEpochNs") {
        meta.session_start_utc_ns = conn
            .query_row(
                "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
            .unwrap_or(None);
    }
    Ok(meta)
}

/// The table of graph-node creation records, counted (`None` without it; a failed count reads
/// as no table: it only adds to the drill-down's graph figures).
fn graph_node_events(conn: &Connection, schema: &Schema) -> Option<GraphNodeEvents> {
    const TABLE: &str = "CUDA_GRAPH_NODE_EVENTS";
    if !schema.has_table(TABLE) {
        return None;
    }
    let cloned = match schema.has_column(TABLE, "originalGraphNodeId") {
        true => "count(originalGraphNodeId)",
        false => "0",
    };
    conn.query_row(
        &format!("SELECT count(*), {cloned} FROM {TABLE}"),
        [],
        |r| {
            Ok(GraphNodeEvents {
                rows: r.get::<_, i64>(0)?.max(0) as u64,
                cloned: r.get::<_, i64>(1)?.max(0) as u64,
            })
        },
    )
    .ok()
}

/// `(name, value)` rows of a metadata table; NULL values read as `""`.
fn name_values(conn: &Connection, table: &str, path: &str) -> Result<Vec<(String, String)>> {
    let err = |e: rusqlite::Error| sqlite_error(path, table, &e);
    let mut stmt = conn
        .prepare(&format!("SELECT name, value FROM {table}"))
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| Ok((text_of(r.get_ref(0)?), text_of(r.get_ref(1)?))))
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// Any SQLite value as text (metadata columns are TEXT, but tools write what they like).
pub fn text_of(v: rusqlite::types::ValueRef<'_>) -> String {
    text_ref(v).into_owned()
}

/// [`text_of`], borrowing a text value rather than copying it (valid UTF-8 is not copied).
pub fn text_ref(v: rusqlite::types::ValueRef<'_>) -> std::borrow::Cow<'_, str> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => "".into(),
        ValueRef::Integer(i) => i.to_string().into(),
        ValueRef::Real(f) => f.to_string().into(),
        ValueRef::Text(t) | ValueRef::Blob(t) => lossy(t),
    }
}

/// `bytes` as text, invalid UTF-8 replaced. Why not `String::from_utf8_lossy` alone: it checks
/// a byte at a time, where `str::from_utf8` checks the common all-valid case a word at a time
/// (the catalog reads every string of `StringIds`).
#[inline]
pub fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.into(),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Valid text is borrowed as it is; invalid bytes read as `String::from_utf8_lossy` reads
    /// them, each replaced by U+FFFD.
    #[test]
    fn lossy_text_reads_as_the_standard_library_reads_it() {
        let valid = "ncclKernel_AllReduce · 第1步".as_bytes();
        assert!(matches!(lossy(valid), std::borrow::Cow::Borrowed(t) if t.as_bytes() == valid));
        let invalid: &[u8] = b"step \xff\xfe 7";
        assert_eq!(lossy(invalid), "step \u{fffd}\u{fffd} 7");
        assert_eq!(lossy(invalid), String::from_utf8_lossy(invalid));
    }
}
