//! `detect` folded while the scan reads (`FileScan::of_file_folding`, what the CLI's one-shot
//! `detect` runs): the host facts from the NVTX ranges as the host side reads them, the kernel
//! sweep beside the kernel table's reader. It gives the verdict of the passes over the same
//! file, output for output, and gives way to the passes when the rows do not come as a pass
//! hands them out (out of start order, or a process `ThreadNames` does not list).

use crate::common;

use std::path::{Path, PathBuf};

use nsys_lens::detect::folded::{VerdictFold, came_through, detect_folded};
use nsys_lens::detect::{self, DetectConfig};
use nsys_lens::names::steps::parse_marker_spec;
use nsys_lens::profile::Profile;
use nsys_lens::trace::{self, FileRows, FileScan, LoadOptions};

pub(crate) type Json = Result<serde_json::Value, String>;

pub(crate) fn json<T: serde::Serialize>(r: nsys_lens::error::Result<T>) -> Json {
    r.map(|v| serde_json::to_value(v).expect("json"))
        .map_err(|e| e.to_string())
}

/// The verdict folded while scanning, keeping rows up to `budget` as the CLI does, whether
/// the fold came through (else its passes ran), and whether it swept the launch calls.
fn folded(path: &Path, cfg: &DetectConfig, budget: usize) -> (Json, bool, bool) {
    let conn = trace::open_path(path).expect("open");
    let mut fold = VerdictFold::new(cfg);
    let scanned = FileScan::of_file_folding(&conn, path, LoadOptions::detect(), budget, &mut fold);
    let (mut scan, gpu) = match scanned {
        Ok(scanned) => scanned,
        Err(e) => return (Err(e.to_string()), false, false),
    };
    scan.cache_rows_up_to(0);
    let through = came_through(&fold, &gpu, scan.meta());
    let launches = fold.swept_launches();
    let rows = FileRows::over(&conn, &scan);
    (
        json(detect_folded(&rows, fold, gpu, cfg)),
        through,
        launches,
    )
}

/// The verdict of the passes over the same file, read the same way.
pub(crate) fn passes(path: &Path, cfg: &DetectConfig) -> Json {
    let conn = trace::open_path(path).expect("open");
    let budget = budget_of(path);
    let scan =
        FileScan::of_file(&conn, path, LoadOptions::detect(), budget).map_err(|e| e.to_string())?;
    json(detect::detect_rows(&FileRows::over(&conn, &scan), cfg))
}

fn budget_of(path: &Path) -> usize {
    trace::row_budget(std::fs::metadata(path).expect("metadata").len(), 0)
}

pub(crate) fn assert_same(got: &Json, want: &Json, what: &str) {
    match (got, want) {
        (Ok(g), Ok(w)) => assert!(g == w, "{what}: {}", common::json_diff(g, w)),
        (g, w) => assert_eq!(g, w, "{what}"),
    }
}

pub(crate) fn configs() -> Vec<DetectConfig> {
    vec![
        DetectConfig::default(),
        DetectConfig {
            profile: Profile::TrtllmSkill,
            ..DetectConfig::default()
        },
        DetectConfig {
            step_marker: parse_marker_spec("vllm").expect("marker"),
            ..DetectConfig::default()
        },
        DetectConfig {
            window: Some((0, i64::MAX / 4)),
            ..DetectConfig::default()
        },
    ]
}

/// Whether a fold can come through on `path`, from plain SQL: every table it reads in start
/// order by `rowid` (the kernels by start and end), and every process that ran GPU work listed
/// in `ThreadNames` (an export without GPU work folds: its verdict says there is none).
fn foldable(path: &Path) -> bool {
    foldable_with(path, true)
}

/// [`foldable`], the copies and memsets in start order too when `other_work_in_order` (the
/// page's reader sorts them).
pub(crate) fn foldable_with(path: &Path, other_work_in_order: bool) -> bool {
    let conn = common::open_export(path);
    let has = |t: &str| common::has_table(&conn, t);
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).expect(sql);
    let out_of_order = |table: &str, key: &[&str], filter: &str| {
        let before: Vec<String> = key.iter().map(|c| format!("LAG({c}) OVER w")).collect();
        has(table)
            && count(&format!(
                "SELECT count(*) FROM (SELECT ({}) < ({}) AS back FROM {table} {filter} \
                 WINDOW w AS (ORDER BY rowid)) WHERE back",
                key.join(", "),
                before.join(", ")
            )) > 0
    };
    let gpu = ["CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"];
    let other_work_out_of_order =
        other_work_in_order && gpu.iter().any(|t| out_of_order(t, &["start"], ""));
    let in_order = !out_of_order("CUPTI_ACTIVITY_KIND_KERNEL", &["start", "\"end\""], "")
        && !out_of_order("NVTX_EVENTS", &["start"], "WHERE \"end\" IS NOT NULL")
        && !other_work_out_of_order;
    let listed = |table: &str| {
        let processes = match has("ThreadNames") {
            true => "SELECT DISTINCT (globalTid >> 24) << 24 FROM ThreadNames",
            false => "SELECT NULL WHERE 0",
        };
        let with_pid = count(&format!(
            "SELECT count(*) FROM pragma_table_info('{table}') WHERE name = 'globalPid'"
        )) > 0;
        // Without the column every row's process is the one of `globalPid` 0, listed by none.
        let unlisted = match with_pid {
            true => format!(
                "SELECT count(*) FROM (SELECT DISTINCT globalPid FROM {table}) \
                 WHERE globalPid NOT IN ({processes})"
            ),
            false => format!("SELECT count(*) FROM {table}"),
        };
        !has(table) || count(&unlisted) == 0
    };
    let all_listed = ["CUPTI_ACTIVITY_KIND_KERNEL", gpu[0], gpu[1]]
        .iter()
        .all(|t| listed(t));
    in_order && all_listed
}

pub(crate) fn scenarios() -> (Vec<tempfile::TempDir>, Vec<PathBuf>) {
    // Two multi-rank scenarios, then three of one rank.
    common::generated_each(&[
        "tp2-phases",
        "cuda-graphs",
        "copy-bound",
        "idle-causes",
        "host-bound",
    ])
}

#[test]
fn a_verdict_folded_while_scanning_equals_the_verdict_of_its_passes() {
    let (_dirs, generated) = scenarios();
    let inputs: Vec<PathBuf> = common::sweep_exports()
        .into_iter()
        .chain(generated.iter().cloned())
        .collect();
    let mut folds = Vec::new();
    let mut swept = Vec::new();
    for path in &inputs {
        let expect = foldable(path);
        for cfg in configs() {
            let what = format!("{}: {:?} {:?}", path.display(), cfg.profile, cfg.window);
            let (got, through, launches) = folded(path, &cfg, budget_of(path));
            assert_same(&got, &passes(path, &cfg), &what);
            assert_eq!(through, expect, "{what}: folded");
            swept.push(launches);
        }
        folds.push(expect);
    }
    // The single-rank scenarios' launch calls are swept as the scan reads them, in every
    // configuration.
    assert_eq!(swept[swept.len() - 12..], [true; 12], "launch calls swept");
    // The single-rank scenarios are written in start order (a multi-rank one a run per rank),
    // and most real exports are: the fold is what the CLI mostly runs.
    let single_rank = &folds[folds.len() - 3..];
    assert_eq!(single_rank, [true; 3], "the single-rank scenarios fold");
    assert!(
        folds.iter().filter(|&&f| f).count() > folds.len() / 2,
        "{folds:?}"
    );
    // Nothing kept: the passes after the fold read the launch calls from the file.
    let path = &generated[4];
    let cfg = DetectConfig::default();
    let (got, through, _) = folded(path, &cfg, 0);
    assert!(through, "{}: folded with nothing kept", path.display());
    assert_same(&got, &passes(path, &cfg), "nothing kept");
}

#[test]
fn an_export_out_of_start_order_gives_way_to_the_passes() {
    let (_dir, path, _) = common::generated("tp2-phases", 1, 3);
    let tmp = tempfile::tempdir().expect("tempdir");
    for order in common::ROW_ORDERS {
        let copy = common::reordered(&path, tmp.path(), order);
        assert!(!foldable(&copy), "{order}: the copy is out of start order");
        for cfg in configs() {
            let what = format!("{order} order: {:?}", cfg.profile);
            let (got, through, _) = folded(&copy, &cfg, budget_of(&copy));
            assert!(!through, "{what}: folded rows out of start order");
            assert_same(&got, &passes(&copy, &cfg), &what);
        }
    }
}

/// `copy-bound` (one rank, in start order) copied and altered by `alter`.
pub(crate) fn altered_copy_bound(
    name: &str,
    alter: impl FnOnce(&rusqlite::Connection),
) -> (tempfile::TempDir, PathBuf) {
    let (_dir, path, _) = common::generated("copy-bound", 1, 3);
    let tmp = tempfile::tempdir().expect("tempdir");
    let copy = common::writable_copy(&path, &tmp.path().join(name));
    alter(&rusqlite::Connection::open(&copy).expect("open copy"));
    (tmp, copy)
}

/// The fold gives way on `copy` under `cfgs`, and the passes answer.
fn assert_gives_way(copy: &Path, cfgs: &[DetectConfig], what: &str) {
    for cfg in cfgs {
        let (got, through, _) = folded(copy, cfg, budget_of(copy));
        assert!(!through, "{what}: {:?}: folded", cfg.profile);
        assert_same(&got, &passes(copy, cfg), what);
    }
}

#[test]
fn gpu_work_of_a_process_thread_names_does_not_list_gives_way_to_the_passes() {
    let (_tmp, copy) = altered_copy_bound("unlisted.sqlite", |conn| {
        conn.execute("DELETE FROM ThreadNames", []).expect("delete");
    });
    assert!(!foldable(&copy));
    assert_gives_way(&copy, &configs(), "an unlisted process's work");
}

/// A fold holds the copies, memsets and graph replays beside the kernels packed, about 16 bytes
/// a row, when each table's rows come in start order (up to 64 MiB: 4 M rows); held whole only
/// when a table's rows come out of order (2^18 rows, or as many as half the scan's budget holds).
/// 300,000 copies in start order fold with no budget and within one, to the passes' verdict.
#[test]
fn many_copies_in_start_order_fold_packed_without_a_budget() {
    let (_tmp, copy) = altered_copy_bound("copies.sqlite", add_copies);
    assert!(foldable(&copy), "in start order and listed");
    let cfg = DetectConfig::default();
    let want = passes(&copy, &cfg);
    let (got, through, _) = folded(&copy, &cfg, 0);
    assert!(
        through,
        "300,000 copies in start order, no budget: gave way"
    );
    assert_same(&got, &want, "many copies, no budget");
    let (got, through, _) = folded(&copy, &cfg, 100 << 20);
    assert!(through, "300,000 copies within the budget: gave way");
    assert_same(&got, &want, "many copies within the budget");
}

/// 300,000 one-nanosecond copies of the first copy, after every copy and kernel of the run.
fn add_copies(conn: &rusqlite::Connection) {
    let table = "CUPTI_ACTIVITY_KIND_MEMCPY";
    let columns: Vec<String> = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .expect("table info")
        .query_map([], |r| r.get(0))
        .expect("columns")
        .collect::<Result<_, _>>()
        .expect("names");
    let after: i64 = conn
        .query_row(
            &format!(
                "SELECT max((SELECT max(\"end\") FROM {table}), \
                 (SELECT max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL))"
            ),
            [],
            |r| r.get(0),
        )
        .expect("the run's end");
    let shifted: Vec<String> = columns
        .iter()
        .map(|c| match c.as_str() {
            "start" => format!("{after} + 2 * n"),
            "end" => format!("{after} + 2 * n + 1"),
            c => format!("\"{c}\""),
        })
        .collect();
    let sql = format!(
        "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 300000) \
         INSERT INTO {table} ({}) SELECT {} FROM k, (SELECT * FROM {table} LIMIT 1)",
        columns
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", "),
        shifted.join(", ")
    );
    conn.execute(&sql, []).expect("insert copies");
}
