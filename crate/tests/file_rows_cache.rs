//! `trace::FileScan::cache_rows_up_to`: the rows `FileRows` reads from the file are kept as
//! bytes up to a budget and read back by later passes. Whatever the budget (none, a prefix of a
//! table, every table), every pass gives the rows the file gives, in the same order; a table in
//! several sorted runs is kept only whole; a table kept whole is read without the file. A scan
//! that keeps the rows it reads (`FileScan::keeping_rows`) gives the same rows and the same
//! trace facts, on every public export.

use crate::common;

use std::path::Path;

use nsys_lens::model::NvtxRow;
use nsys_lens::model::rows::{CallRow, EventRows, KernelRow, MemOpRow};
use nsys_lens::trace::{self, FileRows, FileScan, KernelPart, LoadOptions};

const MIB: usize = 1 << 20;

fn scan(conn: &rusqlite::Connection, budget: usize) -> FileScan {
    let mut scan = FileScan::new(conn, "cached", LoadOptions::all(), &mut |_| true).expect("scan");
    scan.cache_rows_up_to(budget);
    scan
}

/// Every table of `rows`, in start order.
type Tables = (Vec<KernelRow>, Vec<CallRow>, Vec<NvtxRow>, Vec<MemOpRow>);

fn read_all(rows: &dyn EventRows) -> Tables {
    let tables = (
        rows.kernels().collect(),
        rows.calls().collect(),
        rows.ranges().collect(),
        rows.memcpy().collect(),
    );
    rows.check().expect("no read error");
    tables
}

/// Reads `path` uncached, then three times through a cache of `budget` bytes (the second pass
/// over the calls starting while the first is halfway), comparing every pass; returns the bytes
/// cached and the runtime table's sorted runs.
fn assert_cached_reads_equal(path: &Path, budget: usize) -> (usize, usize) {
    let conn = trace::open_path(path).expect("open");
    let plain = scan(&conn, 0);
    let expected = read_all(&FileRows::over(&conn, &plain));
    let cached = scan(&conn, budget);
    let rows = FileRows::over(&conn, &cached);
    for pass in 0..3 {
        assert_eq!(read_all(&rows), expected, "pass {pass}, budget {budget}");
    }
    let mut first = rows.calls();
    let half: Vec<CallRow> = first.by_ref().take(expected.1.len() / 2).collect();
    let second: Vec<CallRow> = rows.calls().collect();
    let rest: Vec<CallRow> = first.collect();
    assert_eq!([half, rest].concat(), expected.1, "interleaved calls");
    assert_eq!(
        second, expected.1,
        "calls read while another pass was halfway"
    );
    rows.check().expect("no read error");
    assert!(
        cached.cached_bytes() <= budget,
        "{} bytes",
        cached.cached_bytes()
    );
    let runs = plain.run_counts()[1].1;
    (cached.cached_bytes(), runs)
}

/// A copy of `path` cut to its first fiftieth, open: a read past that fails.
fn cut_to_a_fiftieth(dir: &Path, path: &Path) -> rusqlite::Connection {
    let cut = dir.join("cut.sqlite");
    let bytes = std::fs::read(path).expect("read");
    std::fs::write(&cut, &bytes[..bytes.len() / 50]).expect("write");
    rusqlite::Connection::open_with_flags(
        &cut,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the cut file")
}

#[test]
fn cached_rows_read_back_as_the_file_gives_them_whatever_the_budget() {
    // host-bound: every table in one run; its kernels and calls take several MiB packed.
    let (_dir, path, _) = common::generated("host-bound", 8, 5);
    assert_eq!(
        assert_cached_reads_equal(&path, 0).0,
        0,
        "no budget, no cache"
    );
    // A prefix of the first table read; the rest of every pass from the file.
    assert_eq!(assert_cached_reads_equal(&path, MIB).0, MIB);
    let (whole, runs) = assert_cached_reads_equal(&path, 1 << 30);
    assert_eq!(runs, 1);
    assert!(whole > 2 * MIB, "{whole} bytes cached");
}

#[test]
fn a_table_in_several_runs_is_cached_only_whole() {
    let (_dir, path, _) = common::generated("tp2-phases", 2, 5);
    let (whole, runs) = assert_cached_reads_equal(&path, 1 << 30);
    assert!(runs > 1, "runtime table in {runs} run(s)");
    assert!(whole > 0);
    let conn = trace::open_path(&path).expect("open");
    let calls_only = |budget: usize| {
        let cached = scan(&conn, budget);
        FileRows::over(&conn, &cached).calls().for_each(drop);
        cached.cached_bytes()
    };
    assert!(calls_only(1 << 30) > 0, "the calls fit whole");
    let needed = calls_only(1 << 30);
    assert_eq!(calls_only(needed - MIB), 0, "a part of them is not kept");
}

/// Once a table is cached whole, a pass reads it from memory: over a connection to a file cut
/// to nothing, the kernels still read, and the calls (never read before) fail.
#[test]
fn a_table_cached_whole_is_read_without_the_file() {
    let (dir, path, _) = common::generated("host-bound", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let cached = scan(&conn, 1 << 30);
    let expected: Vec<KernelRow> = FileRows::over(&conn, &cached).kernels().collect();
    assert!(!expected.is_empty());
    let cut_conn = cut_to_a_fiftieth(dir.path(), &path);
    let rows = FileRows::over(&cut_conn, &cached);
    assert_eq!(rows.kernels().collect::<Vec<_>>(), expected);
    rows.check().expect("kernels from the cache");
    assert!(rows.calls().count() < 10, "calls read from the cut file");
    assert!(rows.check().is_err(), "the cut file fails");
}

/// Scans sharing one `RowBudget` (the page's open traces) keep together no more than it, every
/// pass still giving the file's rows; a scan dropped gives what it kept back.
#[test]
fn scans_sharing_a_budget_keep_no_more_together_and_give_it_back_when_dropped() {
    let (_dir, path, _) = common::generated("host-bound", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let opts = LoadOptions::page();
    let plain = FileScan::new(&conn, "s", opts, &mut |_| true).expect("scan");
    let expected = read_every_table(&FileRows::over(&conn, &plain));
    let alone = FileScan::keeping_rows(&conn, "s", opts, &mut |_| true, 1 << 30).expect("scan");
    read_every_table(&FileRows::over(&conn, &alone));
    let whole = alone.cached_bytes();
    assert!(whole >= 2 * MIB, "{whole} bytes kept alone");
    // Room for one file's rows and a half.
    let budget = trace::RowBudget::new(whole + whole / 2);
    let open = |budget: &trace::RowBudget| {
        let scan =
            FileScan::keeping_rows_within(&conn, "s", opts, &mut |_| true, budget).expect("scan");
        assert_eq!(read_every_table(&FileRows::over(&conn, &scan)), expected);
        scan
    };
    let first = open(&budget);
    let second = open(&budget);
    let (a, b) = (first.cached_bytes(), second.cached_bytes());
    assert!(
        a + b <= whole + whole / 2,
        "{a} + {b} kept of {}",
        whole + whole / 2
    );
    assert!(
        b < whole,
        "the second file keeps what the first left: {b} of {whole}"
    );
    let left = budget.left();
    drop(first);
    assert!(
        budget.left() >= left + a,
        "{a} bytes given back: {left} → {}",
        budget.left()
    );
}

/// The page's scan on two workers: the host side here on `budget`, the kernel table by a
/// reader on a connection and a budget of its own (a fresh wasm instance keeps what it may),
/// its part crossing as bytes (as between two wasm instances), of which the join copies only
/// the blocks its budget keeps.
fn scan_by_two_readers(
    conn: &rusqlite::Connection,
    path: &Path,
    (opts, budget): (LoadOptions, usize),
) -> FileScan {
    let host = FileScan::host_side(
        conn,
        "s",
        opts,
        &mut |_| true,
        &nsys_lens::trace::RowBudget::new(budget),
    )
    .expect("host side");
    let reader = trace::open_path(path).expect("open");
    let part = KernelPart::read(&reader, "s", opts, 1 << 30, &mut |_| true).expect("kernel part");
    let (shape, mut blocks) = part.into_bytes().expect("as bytes");
    blocks.truncate(host.kernel_blocks_kept());
    let part = KernelPart::from_bytes(&shape, blocks).expect("from bytes");
    host.finish(conn, &mut |_| true, Some(part)).expect("join")
}

fn read_every_table(rows: &dyn EventRows) -> (Tables, Vec<nsys_lens::model::rows::SyncRow>) {
    let syncs = rows.syncs().collect();
    (read_all(rows), syncs)
}

/// A scan keeping up to `budget` bytes gives the rows and facts of one keeping none, twice; so
/// does the CLI's, whose kernel table and CUDA API calls are read on threads of their own
/// (`FileScan::of_file`, the calls handed back in table order; the kernels'
/// processes numbered after the host side's, its kept rows rewritten when that renumbers them),
/// and, keeping none, whose passes read every table on threads of their own. Under `detect`'s
/// options the scan keeps the launch calls it selects, as a pass selects them. Returns the
/// bytes the first kept.
fn assert_kept_scan_equals_plain(path: &Path, opts: LoadOptions, budget: usize) -> usize {
    let conn = trace::open_path(path).expect("open");
    let plain = FileScan::new(&conn, "s", opts, &mut |_| true).expect("scan");
    let expected = read_every_table(&FileRows::over(&conn, &plain));
    let kept = FileScan::keeping_rows(&conn, "s", opts, &mut |_| true, budget).expect("scan");
    let threaded = FileScan::of_file(&conn, path, opts, budget).expect("scan");
    let read_ahead = FileScan::of_file(&conn, path, opts, 0).expect("scan");
    let two_readers = scan_by_two_readers(&conn, path, (opts, budget));
    let scans = [
        (&kept, "kept"),
        (&threaded, "kernels on a thread"),
        (&read_ahead, "every pass read ahead on threads"),
        (&two_readers, "kernels by a reader of their own, as bytes"),
    ];
    for (scan, how) in scans {
        let what = format!("{} ({how})", path.display());
        let (p, k) = (plain.meta(), scan.meta());
        assert_eq!(p.processes.global_pid, k.processes.global_pid, "{what}");
        assert_eq!(p.processes.name, k.processes.name, "{what}");
        assert_eq!(p.threads.process, k.threads.process, "{what}");
        assert_eq!(p.strings.len(), k.strings.len(), "{what}");
        assert_eq!(p.coverage, k.coverage, "{what}");
        assert_eq!(p.present, k.present, "{what}");
        let rows = FileRows::over(&conn, scan);
        for pass in 0..2 {
            assert_eq!(read_every_table(&rows), expected, "{what}: pass {pass}");
        }
    }
    assert_eq!(
        kept.cached_rows(),
        two_readers.cached_rows(),
        "{}",
        path.display()
    );
    kept.cached_bytes()
}

/// Whether any table of GPU work, runtime calls, syncs or NVTX ranges of `path` holds a row
/// (plain SQL): an export without one (`DynamicViT`: names, threads and system facts only) has
/// nothing a scan keeps.
fn holds_event_rows(path: &Path) -> bool {
    const TABLES: [&str; 6] = [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "NVTX_EVENTS",
    ];
    let conn = trace::open_path(path).expect("open");
    TABLES.iter().any(|table| {
        conn.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| {
            r.get::<_, bool>(0)
        })
        .unwrap_or(false)
    })
}

#[test]
fn a_scan_keeping_the_rows_gives_the_files_rows_on_the_swept_exports() {
    let mut kept = 0;
    let (page, detect) = (LoadOptions::page(), LoadOptions::detect());
    let exports = common::sweep_exports();
    for path in &exports {
        kept += usize::from(assert_kept_scan_equals_plain(path, page, 1 << 30) > 0);
        assert_kept_scan_equals_plain(path, detect, 1 << 30);
    }
    let with_rows = exports.iter().filter(|p| holds_event_rows(p)).count();
    assert!(with_rows > 0, "no swept export holds event rows");
    assert_eq!(
        kept, with_rows,
        "every export with event rows kept rows from its scan"
    );
    for scenario in ["tp2-phases", "cuda-graphs", "idle-causes"] {
        let (_dir, path, _) = common::generated(scenario, 2, 5);
        for opts in [page, detect] {
            let kept = assert_kept_scan_equals_plain(&path, opts, 1 << 30);
            assert!(kept > 0, "{scenario}");
        }
    }
    let (_dir, path, _) = common::generated("host-bound", 8, 5);
    for opts in [page, detect] {
        let kept = assert_kept_scan_equals_plain(&path, opts, MIB);
        assert_eq!(kept, MIB, "a prefix");
    }
    // A whole-graph capture that launches graphs and whose kernels carry graph node ids: every
    // scan reads that column (`trace::reads_graph_nodes`), the page's reader worker too, which
    // keeps only the string values that decide it.
    let (dir, path, _) = common::generated("capture-graph-level", 2, 5);
    let marked = dir.path().join("marked.sqlite");
    std::fs::copy(&path, &marked).expect("copy");
    let nodes = rusqlite::Connection::open(&marked)
        .and_then(|c| {
            c.execute(
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = rowid WHERE rowid % 4 = 0",
                [],
            )
        })
        .expect("mark kernels");
    assert!(nodes > 0, "kernels with a graph node");
    for opts in [page, detect] {
        assert_kept_scan_equals_plain(&marked, opts, 1 << 30);
    }
}

/// The rows a scan kept are read without the file, from the first pass.
#[test]
fn a_scan_keeping_the_rows_serves_the_first_pass_from_memory() {
    let (dir, path, _) = common::generated("host-bound", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let opts = LoadOptions::page();
    let plain = FileScan::new(&conn, "s", opts, &mut |_| true).expect("scan");
    let expected = read_every_table(&FileRows::over(&conn, &plain));
    let kept = FileScan::keeping_rows(&conn, "s", opts, &mut |_| true, 1 << 30).expect("scan");
    let cut_conn = cut_to_a_fiftieth(dir.path(), &path);
    assert_eq!(
        read_every_table(&FileRows::over(&cut_conn, &kept)),
        expected
    );
}

/// The kernel table read on a thread of its own numbers a process the host side met first, and
/// `ThreadNames` does not list, after the host side's: its kept rows are rewritten to the ids
/// of the scan on one thread. Here `ThreadNames` is emptied and the kernels' two processes are
/// swapped, so the kernels meet them in the other order than the host side.
#[test]
fn kernels_scanned_on_a_thread_take_the_process_ids_of_the_scan_on_one() {
    let (_dir, path, _) = common::generated("tp2-phases", 1, 5);
    let conn = rusqlite::Connection::open(&path).expect("open for writing");
    let pids: Vec<i64> = conn
        .prepare("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("kernel processes");
    assert_eq!(pids.len(), 2, "{pids:?}");
    conn.execute_batch(&format!(
        "DELETE FROM ThreadNames;
         UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = CASE globalPid
             WHEN {a} THEN {b} ELSE {a} END;",
        a = pids[0],
        b = pids[1]
    ))
    .expect("rewrite");
    drop(conn);
    let conn = trace::open_path(&path).expect("open");
    let opts = LoadOptions::page();
    let plain = FileScan::new(&conn, "s", opts, &mut |_| true).expect("scan");
    let threaded = FileScan::of_file(&conn, &path, opts, 1 << 30).expect("scan");
    let processes = &plain.meta().processes.global_pid;
    let first_kernel = FileRows::over(&conn, &plain)
        .kernels()
        .next()
        .expect("a kernel");
    assert_ne!(
        processes.get(first_kernel.process as usize),
        processes.first(),
        "the kernels meet the processes in another order than the host side"
    );
    let expected = read_every_table(&FileRows::over(&conn, &plain));
    let kernels = expected.0.0.len() as u64;
    let two_readers = scan_by_two_readers(&conn, &path, (LoadOptions::page(), 1 << 30));
    for (scan, how) in [(&threaded, "a thread"), (&two_readers, "another worker")] {
        assert_eq!(processes, &scan.meta().processes.global_pid, "{how}");
        assert!(
            scan.cached_rows().contains(&("kernels", kernels, true)),
            "every kernel kept ({how}): {:?}",
            scan.cached_rows()
        );
        assert_eq!(
            read_every_table(&FileRows::over(&conn, scan)),
            expected,
            "{how}"
        );
    }
}

/// Kernel rows a reader of its own kept on its budget are taken from the scan's as far as it
/// goes (whole blocks: a prefix of the table), the rest read from the file.
#[test]
fn kernel_rows_kept_by_another_reader_are_taken_as_far_as_the_budget_goes() {
    let (_dir, path, _) = common::generated("host-bound", 8, 5);
    let conn = trace::open_path(&path).expect("open");
    let opts = LoadOptions::page();
    let plain = FileScan::new(&conn, "s", opts, &mut |_| true).expect("scan");
    let expected = read_every_table(&FileRows::over(&conn, &plain));
    let kernels = expected.0.0.len() as u64;
    let whole = FileScan::keeping_rows(&conn, "s", opts, &mut |_| true, 1 << 30).expect("scan");
    assert!(whole.cached_rows().contains(&("kernels", kernels, true)));
    // Room for every table but the kernels' last block (here their only one: the prefix of
    // several blocks is `row_cache`'s own test).
    let budget = whole.cached_bytes() - MIB;
    let joined = scan_by_two_readers(&conn, &path, (LoadOptions::page(), budget));
    let kept = joined.cached_rows();
    let (_, rows, whole) = kept
        .iter()
        .find(|c| c.0 == "kernels")
        .copied()
        .expect("kernels");
    assert!(rows < kernels && !whole, "{kept:?}");
    assert_eq!(joined.cached_bytes(), budget, "{kept:?}");
    assert_eq!(read_every_table(&FileRows::over(&conn, &joined)), expected);
}
