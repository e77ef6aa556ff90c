//! `trace::FileRows` holds no table: the heap a full read of a table in start order takes does
//! not grow with the trace, while its rows do. (A test binary of its own: it counts the
//! process's heap.)

mod common;

use std::sync::atomic::Ordering::Relaxed;

#[path = "common/counting.rs"]
mod counting;
use counting::{LIVE, PEAK};
use nsys_lens::model::NvtxRow;
use nsys_lens::model::rows::{CallRow, EventRows, KernelRow};
use nsys_lens::trace::{self, FileRows, LoadOptions};

/// Rows a read of the table gave, and the heap it took beyond what was live before it.
fn measured(read: impl FnOnce() -> usize) -> (usize, usize) {
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    let rows = read();
    (rows, PEAK.load(Relaxed) - live)
}

/// Per table (kernels, calls, ranges): rows and the heap a full read took.
fn read_tables(scenario: &str, scale: u32) -> [(usize, usize); 3] {
    let (_dir, path, _) = common::generated(scenario, scale, 5);
    let conn = trace::open_path(&path).expect("open");
    let file = FileRows::open(&conn, "scaled", LoadOptions::all(), &mut |_| true).expect("scan");
    // Statements are prepared (and cached by the connection) by a first read.
    let _ = (
        file.kernels().count(),
        file.calls().count(),
        file.ranges().count(),
    );
    let tables = [
        measured(|| file.kernels().count()),
        measured(|| file.calls().count()),
        measured(|| file.ranges().count()),
    ];
    file.check().expect("read");
    tables
}

#[test]
fn reading_a_table_takes_the_same_heap_at_three_times_the_rows() {
    // `tp2-phases` has its runtime table in several sorted runs: the merge's buffers are read;
    // `host-bound`'s tables are in one run each (under `--full`).
    let scenarios: &[&str] = match common::full() {
        true => &["host-bound", "tp2-phases"],
        false => &["tp2-phases"],
    };
    for &scenario in scenarios {
        let small = read_tables(scenario, 16);
        let large = read_tables(scenario, 48);
        let row_sizes = [
            ("kernels", size_of::<KernelRow>()),
            ("calls", size_of::<CallRow>()),
            ("ranges", size_of::<NvtxRow>()),
        ];
        for ((table, row_size), ((small_rows, small_heap), (large_rows, large_heap))) in
            row_sizes.into_iter().zip(small.into_iter().zip(large))
        {
            let what = format!(
                "{scenario} {table}: {small_rows} rows took {small_heap} B of heap, {large_rows} rows {large_heap} B"
            );
            // Both past a full chunk (4096 rows), the larger three times as long.
            assert!(small_rows > 4096 && large_rows >= 2 * small_rows, "{what}");
            // The chunk buffers and a statement's state, not the rows.
            assert!(large_heap <= small_heap + (16 << 10), "{what}");
            // Less than the table held as rows.
            assert!(large_heap < large_rows * row_size, "{what}");
        }
    }
}
