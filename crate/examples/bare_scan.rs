//! The bare scan `cargo xtask bench` measures `nsys-lens detect` against: every row's `start`
//! and `end` of the kernel, runtime and NVTX tables, read through the product's own SQLite and
//! discarded. The floor of reading those rows at all. Prints `TABLE ROWS` per table.
//! `--count` prints each table's `count(*)` instead, for the bench to check the scan against.
//! `--columns` reads, of the same rows, the columns `detect` decodes ([`DETECT_COLUMNS`]),
//! without any fold: SQLite's work for what `detect` asks of it, read through rusqlite (three
//! calls a column), so more than `detect`'s own reads (`trace::cells::Cursor`, one call) cost.
//! Usage: cargo run --release -p nsys-lens --example bare_scan -- [--count|--columns] TRACE.sqlite
use rusqlite::Connection;
use rusqlite::types::ValueRef;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The tables whose rows `detect` loads for a verdict, i.e. what "loaded events" counts.
const TABLES: [&str; 3] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
];

/// The columns `detect --json` decodes of each of [`TABLES`] on a trace without CUDA graphs
/// (`trace::decode`'s `kernel_columns`, `call_columns` and `nvtx_columns` without details).
const DETECT_COLUMNS: [&str; 3] = [
    "rowid, start, \"end\", deviceId, globalPid, shortName",
    "rowid, start, \"end\", globalTid, nameId",
    "rowid, start, \"end\", globalTid, eventType, text, textId",
];

fn has_table(conn: &Connection, table: &str) -> Res<bool> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
        [table],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}

/// Every row's `columns`, the integers summed and the texts' lengths too, so the read is not
/// optimised away; the rows read.
fn scan(conn: &Connection, table: &str, columns: &str) -> Res<u64> {
    let mut stmt = conn.prepare(&format!("SELECT {columns} FROM {table}"))?;
    let width = stmt.column_count();
    let mut rows = stmt.query([])?;
    let (mut read, mut checksum) = (0u64, 0i64);
    while let Some(row) = rows.next()? {
        for col in 0..width {
            match row.get_ref(col)? {
                ValueRef::Integer(v) => checksum = checksum.wrapping_add(v),
                ValueRef::Text(t) => checksum = checksum.wrapping_add(t.len() as i64),
                _ => {}
            }
        }
        read += 1;
    }
    std::hint::black_box(checksum);
    Ok(read)
}

fn count(conn: &Connection, table: &str) -> Res<u64> {
    let n: i64 = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
    Ok(u64::try_from(n)?)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (flag, path) = match args.as_slice() {
        [path] => ("", path),
        [flag, path] if flag == "--count" || flag == "--columns" => (flag.as_str(), path),
        _ => return Err("usage: bare_scan [--count|--columns] TRACE.sqlite".into()),
    };
    // Opened as nsys-lens opens an export: read-only, immutable, its page cache.
    let conn = nsys_lens::trace::open_path(std::path::Path::new(path))?;
    for (table, detect_columns) in TABLES.into_iter().zip(DETECT_COLUMNS) {
        let rows = match (has_table(&conn, table)?, flag) {
            (false, _) => 0,
            (true, "--count") => count(&conn, table)?,
            (true, "--columns") => scan(&conn, table, detect_columns)?,
            (true, _) => scan(&conn, table, "start, \"end\"")?,
        };
        println!("{table} {rows}");
    }
    Ok(())
}
