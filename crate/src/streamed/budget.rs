//! What a whole load of a streamed trace would cost the page, asked before it starts.
//!
//! The verdict streams the kernel table; Root cause, Drill-down, the report and a verdict under
//! another step marker or window still read a loaded [`crate::model::Trace`]
//! (`web/indexed.rs`). A wasm32 instance addresses at most 4 GiB, and an allocation past it
//! aborts the instance (the analysis worker and its open traces die with it). So the page
//! estimates the load from the tables' row counts (two B-tree lookups per table, no scan) and
//! refuses, with the CLI command that computes the same figures, a load that cannot fit.

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::format;
use crate::trace::{self, Schema};

/// The most memory a wasm32 instance can address: 65 536 pages of 64 KiB.
pub const WASM32_LIMIT_BYTES: u64 = 4 << 30;

/// Rows per table a whole load reads (`max(rowid)`: the count when no row was deleted, as in
/// every export `nsys` writes; more otherwise, so the estimate errs high).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableRows {
    pub kernels: u64,
    pub runtime: u64,
    pub nvtx: u64,
    pub memops: u64,
    pub syncs: u64,
    pub strings: u64,
}

/// Bytes one row takes in the loaded columns (`model::events`: starts and ends as `u64`, ids
/// as `u32`); a string as its text and its slot.
const KERNEL_ROW: u64 = 8 + 8 + 6 * 4;
const RUNTIME_ROW: u64 = 8 + 8 + 3 * 4;
const NVTX_ROW: u64 = 8 + 8 + 4 + 1 + 3 * 4;
const MEMOP_ROW: u64 = 8 + 8 + 4 * 4 + 8 + 3;
const SYNC_ROW: u64 = 8 + 8 + 4 * 4 + 1;
const STRING_ROW: u64 = 64;

/// The page's wasm memory over the loaded columns' bytes, in thousandths, measured after Root
/// cause, Drill-down and the report on the 1 GB benchmark trace (`gen host-bound --scale 6000`:
/// 665 MiB of columns, 1004 MiB of wasm memory, ×1.51): the columns (reserved at their row
/// counts), the analyses' indexes and their largest transient, the streamed verdict's host
/// side, and what the allocator cannot reuse. Rounded up, so that a load which would abort the
/// instance is refused rather than tried.
const WASM_PER_COLUMN_PERMILLE: u64 = 1600;

impl TableRows {
    /// The row counts of the tables a whole load reads (0 for an absent table).
    pub fn of(conn: &Connection, schema: &Schema, label: &str) -> Result<TableRows> {
        let rows = |table: &str| -> Result<u64> {
            if !schema.has_table(table) {
                return Ok(0);
            }
            let sql = format!("SELECT max(rowid) FROM {table}");
            let max: Option<i64> = conn
                .query_row(&sql, [], |r| r.get(0))
                .map_err(|e| trace::sqlite_error(label, table, &e))?;
            Ok(max.map_or(0, |m| m.max(0) as u64))
        };
        Ok(TableRows {
            kernels: rows(trace::KERNEL_TABLE)?,
            runtime: rows(trace::RUNTIME_TABLE)?,
            nvtx: rows(trace::NVTX_TABLE)?,
            memops: rows(trace::MEMCPY_TABLE)? + rows(trace::MEMSET_TABLE)?,
            syncs: rows(trace::SYNC_TABLE)?,
            strings: rows("StringIds")?,
        })
    }

    /// The bytes of the loaded columns.
    pub fn column_bytes(&self) -> u64 {
        self.kernels * KERNEL_ROW
            + self.runtime * RUNTIME_ROW
            + self.nvtx * NVTX_ROW
            + self.memops * MEMOP_ROW
            + self.syncs * SYNC_ROW
            + self.strings * STRING_ROW
    }

    /// The wasm memory a whole load and the analyses over it take.
    pub fn whole_load_bytes(&self) -> u64 {
        self.column_bytes() * WASM_PER_COLUMN_PERMILLE / 1000
    }
}

/// Refuses a whole load of `label` that would not fit next to the `used` bytes the instance
/// holds already: the message says what it would take and which CLI command gives the same
/// figures.
pub fn check_whole_load(rows: &TableRows, used: u64, label: &str) -> Result<()> {
    let need = rows.whole_load_bytes();
    let room = WASM32_LIMIT_BYTES.saturating_sub(used);
    if need <= room {
        return Ok(());
    }
    Err(Error::TooLarge {
        path: label.to_string(),
        kernels: format::count(rows.kernels),
        calls: format::count(rows.runtime),
        need_gib: gib(need),
        room_gib: gib(room),
    })
}

/// Bytes in GiB, to two decimals.
fn gib(bytes: u64) -> f64 {
    (bytes as f64 / (1u64 << 30) as f64 * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(kernels: u64) -> TableRows {
        TableRows {
            kernels,
            runtime: kernels,
            ..TableRows::default()
        }
    }

    #[test]
    fn a_load_that_fits_is_allowed_and_one_past_the_limit_refused_with_the_cli_command() {
        // 1 M kernels and launch calls: 68 MB of columns, 108.8 MB in the page.
        assert_eq!(rows(1_000_000).whole_load_bytes(), 68_000_000 * 16 / 10);
        assert!(check_whole_load(&rows(1_000_000), 32 << 20, "a.sqlite").is_ok());
        // 60 M of each: 4.08 GB of columns, 6.08 GiB in the page, over what a wasm32 instance
        // can address.
        let err = check_whole_load(&rows(60_000_000), 32 << 20, "big.sqlite").unwrap_err();
        assert_eq!(err.code(), "too-large");
        let text = err.to_string();
        assert!(text.starts_with("big.sqlite: "), "{text}");
        assert!(
            text.contains("60,000,000 kernels and 60,000,000 API calls"),
            "{text}"
        );
        assert!(text.contains("nsys-lens analyze big.sqlite"), "{text}");
        assert!(text.contains("6.08 GiB"), "{text}");
        // What the instance holds already counts against the room.
        let just = rows(20_000_000); // 1360 MB × 1.6 = 2.03 GiB
        assert!(check_whole_load(&just, 32 << 20, "x").is_ok());
        assert!(check_whole_load(&just, 2 << 30, "x").is_err());
    }
}
