//! The bare scan `cargo xtask bench` measures `nsys-lens detect` against: every row's `start`
//! and `end` of the kernel, runtime and NVTX tables, read through the product's own SQLite and
//! discarded. The floor of reading those rows at all. Prints `TABLE ROWS` per table.
//! `--count` prints each table's `count(*)` instead, for the bench to check the scan against.
//! Usage: cargo run --release -p nsys-lens --example bare_scan -- [--count] TRACE.sqlite
use rusqlite::Connection;
use rusqlite::types::ValueRef;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The tables whose rows `detect` loads for a verdict, i.e. what "loaded events" counts.
const TABLES: [&str; 3] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
];

fn has_table(conn: &Connection, table: &str) -> Res<bool> {
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1",
        [table],
        |r| r.get(0),
    )?;
    Ok(n > 0)
}

/// Every row's `start` and `end`, summed so the read is not optimised away; the rows read.
fn scan(conn: &Connection, table: &str) -> Res<u64> {
    let mut stmt = conn.prepare(&format!("SELECT start, \"end\" FROM {table}"))?;
    let mut rows = stmt.query([])?;
    let (mut read, mut checksum) = (0u64, 0i64);
    while let Some(row) = rows.next()? {
        for col in 0..2 {
            if let ValueRef::Integer(v) = row.get_ref(col)? {
                checksum = checksum.wrapping_add(v);
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
    let (counting, path) = match args.as_slice() {
        [path] => (false, path),
        [flag, path] if flag == "--count" => (true, path),
        _ => return Err("usage: bare_scan [--count] TRACE.sqlite".into()),
    };
    // Opened as nsys-lens opens an export: read-only, immutable, its page cache.
    let conn = nsys_lens::trace::open_path(std::path::Path::new(path))?;
    for table in TABLES {
        let rows = match (has_table(&conn, table)?, counting) {
            (false, _) => 0,
            (true, false) => scan(&conn, table)?,
            (true, true) => count(&conn, table)?,
        };
        println!("{table} {rows}");
    }
    Ok(())
}
