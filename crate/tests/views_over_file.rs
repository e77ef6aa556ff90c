//! The page's deeper views run over the file's rows (`trace::FileRows`: nothing loaded) and
//! give what the CLI gives over the loaded trace, output for output: the verdict under another
//! step marker or window, root cause in both profiles, the drill-down with its findings, and
//! the report. The exports of a sweep (every public export under `cargo xtask test --full`) and
//! generated scenarios; the rows kept in memory by the file's scan (`FileScan::keeping_rows`), as the page keeps them.

use crate::common;

use std::path::{Path, PathBuf};

use nsys_lens::detect::{self, DetectConfig};
use nsys_lens::model::rows::EventRows;
use nsys_lens::names::steps::{StepSource, parse_marker_spec};
use nsys_lens::profile::Profile;
use nsys_lens::trace::{self, FileRows, LoadOptions};

/// The exports of a sweep (every one under `--full`), and scenarios with several ranks, CUDA
/// graphs, inline NVTX names and planted idle causes (their temp dirs kept alive with them).
fn traces() -> (Vec<tempfile::TempDir>, Vec<PathBuf>) {
    let (dirs, generated) = common::generated_each(&[
        "tp2-phases",
        "cuda-graphs",
        "gpu-bound",
        "idle-causes",
        "layers",
    ]);
    let mut paths = common::sweep_exports();
    paths.extend(generated);
    (dirs, paths)
}

/// `f` over the file's rows and over the whole load of `path`, both read as the page reads
/// them (`LoadOptions::page`).
fn both<R>(path: &Path, f: impl Fn(&dyn EventRows) -> R) -> (R, R) {
    let label = path.display().to_string();
    let loaded = trace::load_path(path, LoadOptions::page()).expect("load");
    let conn = trace::open_path(path).expect("open");
    // As the page reads them: the scan keeps the rows, every pass reads them back.
    let scan =
        trace::FileScan::keeping_rows(&conn, &label, LoadOptions::page(), &mut |_| true, 1 << 30)
            .expect("scan");
    let rows = FileRows::over(&conn, &scan);
    (f(&rows), f(&loaded))
}

fn json<T: serde::Serialize>(r: nsys_lens::error::Result<T>) -> Result<serde_json::Value, String> {
    r.map(|v| serde_json::to_value(v).expect("json"))
        .map_err(|e| e.to_string())
}

/// Equal results (or equal errors), else where they first differ.
fn assert_same(
    got: &Result<serde_json::Value, String>,
    want: &Result<serde_json::Value, String>,
    what: &str,
) {
    match (got, want) {
        (Ok(g), Ok(w)) => assert!(g == w, "{what}: {}", common::json_diff(g, w)),
        (g, w) => assert_eq!(g, w, "{what}"),
    }
}

#[test]
fn the_verdict_under_another_marker_or_window_over_the_file_equals_the_clis() {
    let (_dirs, paths) = traces();
    let marker: Option<StepSource> = parse_marker_spec("vllm").expect("marker");
    for path in &paths {
        let cfgs = [
            DetectConfig::default(),
            DetectConfig {
                profile: Profile::TrtllmSkill,
                ..DetectConfig::default()
            },
            DetectConfig {
                step_marker: marker.clone(),
                ..DetectConfig::default()
            },
            DetectConfig {
                window: Some((0, i64::MAX / 4)),
                ..DetectConfig::default()
            },
        ];
        for cfg in &cfgs {
            let (file, loaded) = both(path, |rows| json(detect::detect_rows(rows, cfg)));
            let whole = trace::load_path(path, LoadOptions::page()).expect("load");
            let want = json(detect::detect(&whole, cfg));
            assert_same(&file, &want, &format!("{}: {cfg:?}", path.display()));
            assert_same(&loaded, &want, &format!("{}: loaded rows", path.display()));
        }
    }
}

#[test]
fn root_cause_over_the_file_equals_the_clis_in_both_profiles() {
    use nsys_lens::analyze::{AnalyzeConfig, analyze_rows};
    let (_dirs, paths) = traces();
    for path in &paths {
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = AnalyzeConfig {
                profile,
                ..AnalyzeConfig::default()
            };
            let (file, loaded) = both(path, |rows| json(analyze_rows(rows, &cfg)));
            assert_same(&file, &loaded, &format!("{}: {profile:?}", path.display()));
        }
    }
}

#[test]
fn the_drill_down_and_the_report_over_the_file_equal_the_clis() {
    use nsys_lens::drill::{DrillInput, DrillOptions};
    use nsys_lens::findings::DrillFindings;
    use nsys_lens::report::document;
    let (_dirs, paths) = traces();
    let opts = DrillOptions::default();
    let mut reports = 0;
    for path in &paths {
        let label = "trace";
        let (file, loaded) = both(path, |rows| {
            let input = DrillInput {
                rows,
                label,
                step_marker: None,
            };
            json(DrillFindings::drill(&[input], &opts))
        });
        assert_same(&file, &loaded, &format!("{}: drill", path.display()));
        // The report: the file's rows with the verdict computed from them, as the page's
        // streamed verdict equals the CLI's (tests/streamed.rs).
        let (file, loaded) = both(path, |rows| {
            json(document::build_rows(rows, label, &opts, &|cfg| {
                detect::detect_rows(rows, cfg)
            }))
        });
        let whole = trace::load_path(path, LoadOptions::page()).expect("load");
        let want = json(document::build(&whole, label, &opts));
        assert_same(&file, &want, &format!("{}: report", path.display()));
        assert_same(
            &loaded,
            &want,
            &format!("{}: report, loaded rows", path.display()),
        );
        reports += usize::from(want.is_ok());
    }
    assert_eq!(reports, paths.len(), "every input is reported");
}

/// nsys promises no row order (2025.6 release notes): every input rewritten in another order
/// (each of [`common::ROW_ORDERS`] in turn; every one under `--full`: `common::row_orders_of`) gives, over the file's rows as the page reads them and loaded as the
/// CLI reads them, the original's verdict (both profiles), root cause (both profiles) and
/// drill-down.
#[test]
fn every_view_of_an_export_in_any_row_order_equals_the_originals() {
    use nsys_lens::analyze::{AnalyzeConfig, analyze_rows};
    use nsys_lens::drill::{DrillInput, DrillOptions};
    use nsys_lens::findings::DrillFindings;
    let (_dirs, paths) = common::row_order_inputs();
    let tmp = tempfile::tempdir().expect("tempdir");
    let views = |rows: &dyn EventRows| -> Vec<Result<serde_json::Value, String>> {
        let mut out = Vec::new();
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = DetectConfig {
                profile,
                ..DetectConfig::default()
            };
            out.push(json(detect::detect_rows(rows, &cfg)));
            let cfg = AnalyzeConfig {
                profile,
                ..AnalyzeConfig::default()
            };
            out.push(json(analyze_rows(rows, &cfg)));
        }
        let input = DrillInput {
            rows,
            label: "trace",
            step_marker: None,
        };
        out.push(json(DrillFindings::drill(
            &[input],
            &DrillOptions::default(),
        )));
        out
    };
    for (i, path) in paths.iter().enumerate() {
        let want = views(&trace::load_path(path, LoadOptions::page()).expect("load"));
        for order in common::row_orders_of(i) {
            let copy = common::reordered(path, tmp.path(), order);
            let what = format!("{} in {order} order", path.display());
            let (file, loaded) = both(&copy, |rows| views(rows));
            for (i, w) in want.iter().enumerate() {
                assert_same(&file[i], w, &format!("{what}: view {i} over the file"));
                assert_same(&loaded[i], w, &format!("{what}: view {i} loaded"));
            }
            std::fs::remove_file(&copy).expect("remove copy");
        }
    }
}
