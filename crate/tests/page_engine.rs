//! The page's engine, natively: an export scanned (`trace::FileScan`, rows kept as the page keeps
//! them) and read again in start order (`trace::FileRows`). Its timeline — summary built over
//! the rows with the forward-step lane, zoomed-in views and hovers read again by `rowid`
//! (`reread::FileReads`) — and its gap histogram equal the loaded trace's, on every public export
//! and scenario and in every row order nsys may write (`tests/tools/reorder.py`). The verdict,
//! Root cause and drill-down over the same rows are `tests/views_over_file.rs`'s.

use crate::common;

use std::path::Path;

use nsys_lens::drill::gaps::idle_gap_histogram;
use nsys_lens::model::rows::EventRows;
use nsys_lens::model::{HostTable, Trace};
use nsys_lens::profile::Profile;
use nsys_lens::reread::{FileReads, SqliteKernels};
use nsys_lens::timeline::{Detail, Timeline};
use nsys_lens::trace::{self, FileRows, FileScan, LoadOptions};

/// The page's timeline of `path` and the loaded trace's agree: the extent, views zoomed out
/// (summary) and in (rows re-read), hovers on every lane, and the gap histogram; returns how
/// many hovers hit.
fn assert_same_timeline(path: &Path, full: &Trace, what: &str) -> usize {
    let label = path.display().to_string();
    let conn = trace::open_path(path).expect("open");
    let scan = FileScan::keeping_rows(&conn, &label, LoadOptions::page(), &mut |_| true, 1 << 30)
        .expect("scan");
    let rows = FileRows::over(&conn, &scan);
    let page = Timeline::of_rows_with_steps(&rows, &label).expect("timeline");
    let reads = FileReads::new(&trace::Schema::probe(&conn, &label).expect("schema"));
    // The loaded trace shows no host tracks: compared without them (`tests/timeline.rs` checks
    // them against SQL).
    let host = [
        trace::HostRows::none(HostTable::Api),
        trace::HostRows::none(HostTable::Nvtx),
    ];
    let links = trace::Links::none();
    let source = SqliteKernels {
        host: &host,
        links: &links,
        ..reads.source(&conn, &scan.meta().strings, &label)
    };
    let loaded = Timeline::new(full);
    assert_eq!(page.extent(), loaded.extent(), "{what}: extent");
    assert_eq!(page.lane_count(), loaded.lane_count(), "{what}: lanes");
    let (s, e) = loaded.extent();
    let span = (e - s).max(1);
    for (a, b, detail) in [
        (s, e, Detail::Summary),
        (s, e, Detail::Exact),
        (s + span / 3, s + span / 3 + span / 50, Detail::Auto),
    ] {
        let got = page
            .view_with(&source, a, b.max(a + 1), 600, detail)
            .expect("page view");
        let want = loaded
            .view_with(full, a, b.max(a + 1), 600, detail)
            .expect("loaded view");
        if got != want {
            let [g, w] = [&got, &want].map(|v| serde_json::to_value(v).expect("json"));
            panic!(
                "{what}: view [{a}, {b}) {detail:?} differs at {}",
                common::json_diff(&g, &w)
            );
        }
    }
    // Hovers on every lane, at a few times: the forward-step lane's names are read back whole.
    let mut hits = 0;
    for lane in 0..loaded.lane_count() as u32 {
        for k in 1..8 {
            let t = s + span / 8 * k;
            let got = page.hit(&source, lane, t, span / 50).expect("hit");
            let want = loaded.hit(full, lane, t, span / 50).expect("hit");
            assert_eq!(got, want, "{what}: hover on lane {lane} at {t}");
            hits += usize::from(got.is_some());
        }
    }
    assert_eq!(
        idle_gap_histogram(&rows, None),
        idle_gap_histogram(full, None),
        "{what}: gaps"
    );
    rows.check().expect("every read");
    hits
}

#[test]
fn the_page_timeline_and_gaps_equal_the_loaded_traces_in_any_row_order() {
    let (_dirs, paths) = common::row_order_inputs();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (mut checked, mut hits) = (0, 0);
    let mut orders = std::collections::BTreeSet::new();
    for path in &paths {
        let full = trace::load_path(path, LoadOptions::all()).expect("load");
        if full.kernels.is_empty() {
            continue;
        }
        hits += assert_same_timeline(path, &full, &path.display().to_string());
        for order in common::row_orders_of(checked) {
            orders.insert(order);
            let copy = common::reordered(path, tmp.path(), order);
            let what = format!("{} in {order} order", path.display());
            let reordered = trace::load_path(&copy, LoadOptions::all()).expect("load");
            hits += assert_same_timeline(&copy, &reordered, &what);
            std::fs::remove_file(&copy).expect("remove copy");
        }
        checked += 1;
    }
    let public = common::public_exports();
    let with_kernels = common::public_exports_with_kernels();
    let kernel_less = paths
        .iter()
        .filter(|p| public.contains(p) && !with_kernels.contains(p))
        .count();
    assert_eq!(
        checked,
        paths.len() - kernel_less,
        "every input with kernels"
    );
    assert!(hits > 100, "{hits} hovers hit");
    assert_eq!(
        orders.len(),
        common::ROW_ORDERS.len(),
        "every row order read"
    );
}

/// The rows the verdict's passes hand out are what `detect::rows_read` says from the scan's
/// counts (the page's progress bar while the verdict is computed), and each pass's what
/// `detect::verdict_passes` says (its time estimate), in both profiles (`trtllm-skill`'s busy
/// time is kernels only), with rows kept or not, on every public export with kernels and on
/// scenarios with graph replays and copies.
#[test]
fn the_verdict_reads_the_rows_detect_says_it_reads_pass_by_pass() {
    let mut paths = common::public_exports_with_kernels();
    let mut dirs = Vec::new();
    for scenario in ["host-bound", "cuda-graphs", "tp2-phases"] {
        let (dir, path, _) = common::generated(scenario, 2, 5);
        dirs.push(dir);
        paths.push(path);
    }
    for path in paths {
        let conn = trace::open_path(&path).expect("open");
        for budget in [0usize, 1 << 30] {
            let scan =
                FileScan::keeping_rows(&conn, "x", LoadOptions::page(), &mut |_| true, budget)
                    .expect("scan");
            let rows = FileRows::over(&conn, &scan);
            for profile in [Profile::Standard, Profile::TrtllmSkill] {
                let before = trace::rows_handed_out();
                let cfg = nsys_lens::detect::DetectConfig {
                    profile,
                    ..Default::default()
                };
                let _ = nsys_lens::detect::detect_rows(&rows, &cfg);
                let handed = trace::rows_handed_out() - before;
                assert_eq!(
                    handed,
                    nsys_lens::detect::rows_read(&scan.table_rows(), profile),
                    "{} under {profile:?} keeping {budget} bytes: {:?}",
                    path.display(),
                    scan.table_rows()
                );
                assert!(handed > 0, "{}", path.display());
                // Pass by pass, as the page's estimate weighs them.
                let passes = nsys_lens::detect::verdict_passes(&scan.table_rows(), &[], profile);
                let busy = || match profile {
                    Profile::Standard => rows.gpu_work().count(),
                    Profile::TrtllmSkill => rows.kernels().count(),
                };
                let counted = [
                    handed_by(|| rows.ranges().count()),
                    handed_by(busy),
                    handed_by(|| rows.calls().count()),
                ];
                assert_eq!(
                    counted,
                    passes.map(|p| p.rows),
                    "{} under {profile:?} keeping {budget} bytes",
                    path.display()
                );
            }
            // Nothing kept, or every row: each pass's weight is that of rows read from the file
            // or kept.
            let kept = scan.kept_rows();
            let expected = scan
                .table_rows()
                .map(|(t, n)| (t, if budget == 0 { 0 } else { n }));
            assert_eq!(kept, expected, "{}", path.display());
            let passes =
                nsys_lens::detect::verdict_passes(&scan.table_rows(), &kept, Profile::Standard);
            // An NVTX range, a GPU operation and an API call, read from the file or kept; a
            // pass without rows keeps none.
            let (read, unpacked) = ([1.45, 2.0, 1.0], [0.20, 0.35, 0.076]);
            for (k, pass) in passes.iter().enumerate() {
                let whole = if budget > 0 && pass.rows > 0 {
                    unpacked[k]
                } else {
                    read[k]
                };
                assert!(
                    (pass.weight - whole).abs() < 1e-9,
                    "{}: pass {k} {pass:?}",
                    path.display()
                );
            }
        }
    }
}

/// The rows handed out while `read` runs.
fn handed_by(read: impl FnOnce() -> usize) -> u64 {
    let before = trace::rows_handed_out();
    std::hint::black_box(read());
    trace::rows_handed_out() - before
}
