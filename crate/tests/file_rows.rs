//! `trace::FileRows` (the event tables read from the file in start order, nothing held) gives
//! the rows the CLI's whole load gives (`trace::load_path`, read through its own `EventRows`),
//! field by field and in the same order, with the same processes, threads and strings: on
//! every public export and on generated scenarios whose runtime table is in several sorted
//! runs. A read error ends the rows and is returned by `check`.

use crate::common;

use std::path::Path;

use nsys_lens::model::rows::EventRows;
use nsys_lens::model::{NameId, Trace};
use nsys_lens::trace::{self, FileRows, LoadOptions};

/// The load options the CLI's `report` (everything), `analyze` (no syncs) and `detect` (only
/// launch calls, no event details) read.
fn cli_options() -> [(&'static str, LoadOptions); 3] {
    [
        ("report", LoadOptions::all()),
        (
            "analyze",
            LoadOptions {
                syncs: false,
                ..LoadOptions::all()
            },
        ),
        ("detect", LoadOptions::detect()),
    ]
}

/// Rows of one table from both sources: equal but for `row`, which maps loaded indices to
/// file `rowid`s monotonically.
fn assert_same_rows<T: std::fmt::Debug + PartialEq + Copy>(
    what: &str,
    loaded: Vec<T>,
    file: Vec<T>,
    row: impl Fn(&mut T) -> &mut i64,
) -> usize {
    assert_eq!(loaded.len(), file.len(), "{what}: row count");
    let mut pairs: Vec<(i64, i64)> = Vec::with_capacity(loaded.len());
    for (i, (mut l, mut f)) in loaded.into_iter().zip(file).enumerate() {
        pairs.push((*row(&mut l), *row(&mut f)));
        *row(&mut l) = 0;
        *row(&mut f) = 0;
        assert_eq!(l, f, "{what}: row {i} in start order");
    }
    pairs.sort_unstable();
    assert!(
        pairs.windows(2).all(|w| w[0].1 < w[1].1),
        "{what}: file rowids do not grow with the loaded rows' table order"
    );
    pairs.len()
}

/// Processes, threads, strings and the other facts of the two sources agree.
fn assert_same_meta(what: &str, loaded: &Trace, file: &Trace) {
    let (l, f) = (&loaded.processes, &file.processes);
    assert_eq!(l.global_pid, f.global_pid, "{what}: processes");
    assert_eq!(l.name, f.name, "{what}: process names");
    let (l, f) = (&loaded.threads, &file.threads);
    assert_eq!(l.global_tid, f.global_tid, "{what}: threads");
    assert_eq!(l.process, f.process, "{what}: thread processes");
    assert_eq!(l.name, f.name, "{what}: thread names");
    assert_eq!(loaded.strings.len(), file.strings.len(), "{what}: strings");
    for id in 0..loaded.strings.len() as NameId {
        assert_eq!(
            loaded.strings.get(id),
            file.strings.get(id),
            "{what}: string {id}"
        );
    }
    assert_eq!(loaded.coverage, file.coverage, "{what}: coverage notes");
    assert_eq!(
        format!("{:?}", loaded.present),
        format!("{:?}", file.present),
        "{what}: tables present"
    );
    assert_eq!(loaded.capture, file.capture, "{what}: capture facts");
    assert_eq!(loaded.gpus, file.gpus, "{what}: GPUs");
    assert_eq!(
        format!("{:?}", loaded.meta),
        format!("{:?}", file.meta),
        "{what}: metadata"
    );
    assert_eq!(file.kernels.len() + file.runtime.len() + file.nvtx.len(), 0);
}

/// Compares every table of `path` under every CLI option set; the rows compared per table.
fn assert_same_as_loaded(path: &Path) -> [usize; 6] {
    let mut compared = [0; 6];
    for (cli, opts) in cli_options() {
        let what = format!("{} ({cli})", path.display());
        let loaded = trace::load_path(path, opts).expect("load");
        let conn = trace::open_path(path).expect("open");
        let file =
            FileRows::open(&conn, &path.display().to_string(), opts, &mut |_| true).expect("scan");
        assert_same_meta(&what, &loaded, file.meta());
        assert_eq!(loaded.columns(), file.columns(), "{what}: columns");
        let counts = [
            assert_same_rows(
                &format!("{what} kernels"),
                loaded.kernels().collect(),
                file.kernels().collect(),
                |k| &mut k.row,
            ),
            assert_same_rows(
                &format!("{what} calls"),
                loaded.calls().collect(),
                file.calls().collect(),
                |c| &mut c.row,
            ),
            assert_same_rows(
                &format!("{what} ranges"),
                loaded.ranges().collect(),
                file.ranges().collect(),
                |r| &mut r.row,
            ),
            assert_same_rows(
                &format!("{what} memcpy"),
                loaded.memcpy().collect(),
                file.memcpy().collect(),
                |m| &mut m.row,
            ),
            assert_same_rows(
                &format!("{what} memset"),
                loaded.memset().collect(),
                file.memset().collect(),
                |m| &mut m.row,
            ),
            assert_same_rows(
                &format!("{what} syncs"),
                loaded.syncs().collect(),
                file.syncs().collect(),
                |s| &mut s.row,
            ),
        ];
        file.check().expect("no read error");
        for (sum, n) in compared.iter_mut().zip(counts) {
            *sum += n;
        }
    }
    compared
}

/// The most sorted runs any table of `path` is in (under every option).
fn most_runs(path: &Path, table: &str) -> usize {
    let conn = trace::open_path(path).expect("open");
    let file = FileRows::open(&conn, "runs", LoadOptions::all(), &mut |_| true).expect("scan");
    let runs = file.scan().run_counts();
    runs.iter()
        .find(|(name, _)| *name == table)
        .map_or(0, |&(_, n)| n)
}

#[test]
fn file_rows_equal_the_whole_load_on_every_public_export() {
    let mut exports = 0;
    let mut rows = [0; 6];
    let mut merged_calls = false;
    for entry in std::fs::read_dir(common::public_traces_dir()).expect("public traces") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("sqlite") {
            continue;
        }
        // Every export opens; one without an event table compares empty tables.
        for (sum, n) in rows.iter_mut().zip(assert_same_as_loaded(&path)) {
            *sum += n;
        }
        merged_calls |= most_runs(&path, trace::RUNTIME_TABLE) > 1;
        exports += 1;
    }
    assert!(exports >= 15, "{exports} exports");
    assert!(
        rows.iter().all(|&n| n > 100),
        "rows compared per table: {rows:?}"
    );
    assert!(merged_calls, "no export's runtime table is in several runs");
}

#[test]
fn file_rows_equal_the_whole_load_on_generated_scenarios() {
    for scenario in [
        "tp2-straggler",
        "tp2-phases",
        "gpu-bound",
        "cuda-graphs",
        "idle-causes",
    ] {
        let (_dir, path, _) = common::generated(scenario, 2, 5);
        let rows = assert_same_as_loaded(&path);
        assert!(rows[0] > 0 && rows[1] > 0, "{scenario}: {rows:?}");
        if scenario.starts_with("tp2") {
            let runs = most_runs(&path, trace::RUNTIME_TABLE);
            assert!(runs > 1, "{scenario}: runtime table in {runs} run(s)");
        }
    }
}

/// A file cut short after it was scanned: the rows end at the first unreadable page and
/// `check` says why, nothing panics.
#[test]
fn a_file_truncated_after_the_scan_ends_the_rows_with_an_error() {
    let (dir, path, _) = common::generated("host-bound", 4, 5);
    let conn = trace::open_path(&path).expect("open");
    let label = path.display().to_string();
    let scan =
        trace::FileScan::new(&conn, &label, LoadOptions::all(), &mut |_| true).expect("scan");
    drop(conn);
    let cut = dir.path().join("cut.sqlite");
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 5]).expect("write");
    let conn = rusqlite::Connection::open_with_flags(
        &cut,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the cut file");
    let file = FileRows::over(&conn, &scan);
    let read = file.kernels().count()
        + file.calls().count()
        + file.ranges().count()
        + file.memcpy().count();
    let err = file.check().expect_err("a read past the end fails");
    let whole = trace::load_path(&path, LoadOptions::all()).expect("load");
    assert!(
        read < whole.kernels.len() + whole.runtime.len() + whole.nvtx.len() + whole.memcpy.len(),
        "{read} rows read"
    );
    let message = err.to_string();
    assert!(message.contains(&label), "{message}");
    assert!(file.check().is_ok(), "the error is returned once");
}

/// A table in more sorted runs than the scan keeps (nsys promises no order) is read in slices
/// of its keys: every table comes in start order, ties in table order, as a whole load has it.
#[test]
fn a_table_in_too_many_runs_is_read_in_start_order() {
    let (_dir, path, _) = common::generated("tp2-phases", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let all = LoadOptions::all();
    let scan =
        trace::FileScan::with_max_runs(&conn, "tp2.sqlite", all, &mut |_| true, 1).expect("scan");
    let rows = FileRows::over(&conn, &scan);
    let loaded = trace::load_path(&path, all).expect("load");
    let key = |c: &nsys_lens::model::rows::CallRow| (c.start, c.end, c.correlation);
    let got: Vec<_> = rows.calls().map(|c| key(&c)).collect();
    let want: Vec<_> = EventRows::calls(&loaded).map(|c| key(&c)).collect();
    assert!(want.len() > 1000, "{} calls", want.len());
    assert_eq!(got, want, "calls");
    let kernels =
        |r: &dyn EventRows| -> Vec<(i64, i64)> { r.kernels().map(|k| (k.start, k.end)).collect() };
    assert_eq!(kernels(&rows), kernels(&loaded), "kernels");
    rows.check().expect("every read");
}
