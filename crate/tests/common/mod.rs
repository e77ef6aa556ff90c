//! Helpers shared by the CLI integration tests: running the binary, locating the shared public
//! traces, and checking the "one clear line, no panic" contract for unusable input.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

mod rows_only;
#[allow(unused_imports)] // used by the tests that read rows
pub use rows_only::RowsOnly;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `nsys-lens` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_nsys-lens");

/// Exit status for input that cannot be analysed.
pub const EXIT_INPUT: i32 = 3;
/// Exit status for usage errors.
pub const EXIT_USAGE: i32 = 2;

/// Runs `nsys-lens ARGS…` to completion and captures its output.
pub fn nsys_lens<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(BIN)
        .args(args)
        .output()
        .expect("failed to start the nsys-lens binary")
}

/// The command line and everything the process printed, for assertion messages.
pub fn describe(args: &[&OsStr], out: &Output) -> String {
    let args: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
    format!(
        "`nsys-lens {}` exited with {:?}\n--- stderr ---\n{}\n--- stdout (first 2000 bytes) ---\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(2000)]),
    )
}

/// The folder of real public exports: `$NSYS_LENS_SHARED/traces/public`, else the `shared`
/// folder beside the repository. Panics with a clear message when it is missing, so a CI
/// machine without the data fails loudly instead of testing nothing.
pub fn public_traces_dir() -> PathBuf {
    let dir = match std::env::var_os("NSYS_LENS_SHARED") {
        Some(shared) => PathBuf::from(shared).join("traces/public"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/public"),
    };
    assert!(
        dir.join("MANIFEST.json").is_file(),
        "public traces not found: {} has no MANIFEST.json. Put the shared folder beside the \
         repository (../shared) or set NSYS_LENS_SHARED to it",
        dir.display()
    );
    dir
}

/// Every public export (`.sqlite`), sorted by path.
pub fn public_exports() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(public_traces_dir())
        .expect("public traces")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("sqlite"))
        .collect();
    paths.sort();
    paths
}

/// Whether the exhaustive sweeps run: `cargo xtask test --full` sets `NSYS_LENS_FULL=1` (run
/// before a release). Without it a sweep over exports, row orders or cases reads
/// representatives of each behaviour ([`sweep_exports`]), so CI stays short.
pub fn full() -> bool {
    std::env::var_os("NSYS_LENS_FULL").is_some_and(|v| v != "0" && !v.is_empty())
}

/// The public exports a sweep reads: every one under [`full`], else one of each shape the
/// readers meet — the newest schema with two GPUs, NCCL, NVTX and copies
/// (`mfu_2gpu_before`), the oldest schema (2.9.1, DLProf), schema 3.0.0 with copies on four
/// GPUs, a run of thousands of kernels with syncs (`power_iteration`) and one without kernels
/// (`qcu`: runtime calls and syncs only). The tests that every export opens and reads right
/// keep reading all of them: `public_traces` (the manifest's counts), `fuzz` (their damaged
/// copies) and `reference_oracle` (the reference script's numbers on every export it runs on).
pub fn sweep_exports() -> Vec<PathBuf> {
    const SHAPES: [&str; 5] = [
        "GindaChen_nsys-ai__mfu_2gpu_before.sqlite",
        "MohanadOdema_DLProf__w_Relu_nsys_profile.sqlite",
        "Lianhang666_gpu4__report2.sqlite",
        "brycelelbach_nsightful__power_iteration__baseline.sqlite",
        "ZhangXin8069_qcu__test_report1.e5c172f.sqlite",
    ];
    match full() {
        true => public_exports(),
        false => SHAPES.iter().map(|name| public_trace(name)).collect(),
    }
}

/// The exports of [`sweep_exports`] whose manifest entry counts kernels: every such public
/// export under [`full`], else the representatives that have kernels (all but `qcu`).
pub fn sweep_exports_with_kernels() -> Vec<PathBuf> {
    let with_kernels = public_exports_with_kernels();
    sweep_exports()
        .into_iter()
        .filter(|p| with_kernels.contains(p))
        .collect()
}

/// Every public export whose manifest entry counts kernels, by path.
pub fn public_exports_with_kernels() -> Vec<PathBuf> {
    let dir = public_traces_dir();
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).expect("MANIFEST.json");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    let paths: Vec<PathBuf> = manifest
        .as_array()
        .expect("the manifest is an array")
        .iter()
        .filter(|e| {
            e["counts"]
                .get("CUPTI_ACTIVITY_KIND_KERNEL")
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|n| n > 0)
        })
        .map(|e| dir.join(e["file"].as_str().expect("file name")))
        .collect();
    assert!(paths.len() >= 10, "{} exports with kernels", paths.len());
    paths
}

/// A public export by file name.
pub fn public_trace(name: &str) -> PathBuf {
    let path = public_traces_dir().join(name);
    assert!(path.is_file(), "missing public trace {}", path.display());
    path
}

/// Checks the contract for unusable input: exit status `code`, exactly one non-empty line on
/// stderr, no panic, and (when given) the line contains `needle`, ignoring case.
/// Returns the line, or what is wrong with the full output.
pub fn check_one_line_error(
    args: &[&OsStr],
    out: &Output,
    code: i32,
    needle: Option<&str>,
) -> Result<String, String> {
    let ctx = || describe(args, out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("panicked") {
        return Err(format!("the CLI panicked:\n{}", ctx()));
    }
    if out.status.code() != Some(code) {
        return Err(format!("expected exit status {code}:\n{}", ctx()));
    }
    let lines: Vec<&str> = stderr.lines().collect();
    if lines.len() != 1 || lines[0].trim().is_empty() {
        return Err(format!(
            "expected exactly one non-empty line on stderr, got {}:\n{}",
            lines.len(),
            ctx()
        ));
    }
    if let Some(needle) = needle
        && !lines[0].to_lowercase().contains(&needle.to_lowercase())
    {
        return Err(format!(
            "the error line should mention {needle:?}:\n{}",
            ctx()
        ));
    }
    Ok(lines[0].to_string())
}

/// [`check_one_line_error`], panicking on failure.
pub fn assert_one_line_error(
    args: &[&OsStr],
    out: &Output,
    code: i32,
    needle: Option<&str>,
) -> String {
    check_one_line_error(args, out, code, needle).unwrap_or_else(|e| panic!("{e}"))
}

/// Deterministic pseudo-random bytes (64-bit LCG, Knuth's MMIX constants; high bytes only).
pub fn lcg_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

/// A generated scenario (`SCENARIO.sqlite`) in a temporary folder that lives as long as the
/// returned `TempDir`, with the answers the generator computed from what it placed.
pub fn generated(
    scenario: &str,
    scale: u32,
    seed: u64,
) -> (tempfile::TempDir, PathBuf, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{scenario}.sqlite"));
    let opts = nsys_lens::synth::GenOptions { scale, seed };
    let answers = nsys_lens::synth::generate(scenario, &path, &opts).expect("generate");
    (dir, path, answers)
}

/// Each of `scenarios` generated at scale 1, seed 3 ([`generated`]), their temp dirs kept
/// alive with them.
pub fn generated_each(scenarios: &[&str]) -> (Vec<tempfile::TempDir>, Vec<PathBuf>) {
    scenarios
        .iter()
        .map(|s| {
            let (dir, path, _) = generated(s, 1, 3);
            (dir, path)
        })
        .unzip()
}

/// Whether the export open in `conn` has `table`.
pub fn has_table(conn: &rusqlite::Connection, table: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .expect("sqlite_master")
        > 0
}

/// Generates `scenario` (scale 1, seed 42) as `DIR/SCENARIO.sqlite`.
pub fn generate_in(dir: &Path, scenario: &str) -> PathBuf {
    let path = dir.join(format!("{scenario}.sqlite"));
    let opts = nsys_lens::synth::GenOptions { scale: 1, seed: 42 };
    nsys_lens::synth::generate(scenario, &path, &opts)
        .unwrap_or_else(|e| panic!("generate {scenario}: {e}"));
    path
}

/// `DIR/bin`, holding only `nsys-lens` (a link to [`BIN`]): the folder to put on PATH for
/// commands that call the CLI by name.
pub fn cli_dir(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin folder");
    std::os::unix::fs::symlink(BIN, bin.join("nsys-lens")).expect("link to nsys-lens");
    bin
}

/// Forward steps the generator placed (each once, whatever the ranks): the standard profile's
/// context and generation iteration counts in its answers.
pub fn placed_steps(answers: &serde_json::Value) -> u64 {
    let phases = &answers["profiles"]["standard"]["phases"];
    ["context", "generation"]
        .iter()
        .map(|p| {
            phases[p]["iteration_count"]
                .as_u64()
                .expect("iteration count")
        })
        .sum()
}

/// The first path where two JSON values differ, with both values.
pub fn json_diff(a: &serde_json::Value, b: &serde_json::Value) -> String {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if v != w => return format!("{k}.{}", json_diff(v, w)),
                    None => return format!("{k} (missing on the right)"),
                    _ => {}
                }
            }
            format!(
                "(keys) {:?} vs {:?}",
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>()
            )
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let i = x.iter().zip(y).position(|(v, w)| v != w).unwrap_or(0);
            format!("[{i}].{}", json_diff(&x[i], &y[i]))
        }
        _ => format!(": {a} vs {b}"),
    }
}

/// The tables whose rows are GPU work under the `standard` profile: kernels, CUDA-graph replays
/// traced at graph level, copies and memsets.
pub const GPU_WORK_TABLES: [&str; 4] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
];

/// A `SELECT` of every GPU work row of the export open in `conn`, as `deviceId, start, end,
/// globalPid` (0 where a table has no `globalPid` column): the rows of each table of
/// [`GPU_WORK_TABLES`] the export has (nsys creates tables lazily: an absent one contributes
/// nothing), `UNION ALL`, each named in the `main` schema; `None` when it has none of them.
pub fn gpu_work_select(conn: &rusqlite::Connection) -> Option<String> {
    let columns = |table: &str| -> Vec<String> {
        let mut st = conn
            .prepare(&format!("PRAGMA main.table_info({table})"))
            .expect("table_info");
        st.query_map([], |r| r.get::<_, String>(1))
            .expect("columns")
            .map(|c| c.expect("column"))
            .collect()
    };
    let parts: Vec<String> = GPU_WORK_TABLES
        .iter()
        .filter_map(|table| {
            let cols = columns(table);
            let pid = match cols.iter().any(|c| c == "globalPid") {
                true => "globalPid",
                false => "0",
            };
            (!cols.is_empty()).then(|| {
                format!("SELECT deviceId, start, end, {pid} AS globalPid FROM main.{table}")
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" UNION ALL "))
}

/// Opens the export at `path` read-only, as immutable (the shared folder is read-only).
pub fn open_export(path: &Path) -> rusqlite::Connection {
    use rusqlite::OpenFlags;
    let uri = format!("file:{}?immutable=1", path.display());
    rusqlite::Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open export")
}

/// [`gpu_work_select`] as `deviceId, start, end` rows, an empty `SELECT` without GPU work.
#[allow(dead_code)] // not every test binary reads it
pub fn gpu_work_sql(conn: &rusqlite::Connection) -> String {
    match gpu_work_select(conn) {
        Some(sql) => format!("SELECT deviceId, start, \"end\" FROM ({sql})"),
        None => "SELECT 0 AS deviceId, 0 AS start, 0 AS \"end\" WHERE 0".to_string(),
    }
}

/// A GPU operation as `(deviceId, start, end)`.
#[allow(dead_code)] // not every test binary reads it
pub type WorkRow = (i64, i64, i64);

/// Every GPU operation as `(deviceId, start, end)`, by device then start (`where_`: an SQL
/// condition on them, or `""`), and the hull of them all.
#[allow(dead_code)] // not every test binary reads it
pub fn gpu_work_rows(conn: &rusqlite::Connection, where_: &str) -> (Vec<WorkRow>, (i64, i64)) {
    let sql = format!(
        "SELECT deviceId, start, \"end\" FROM ({}) {where_} ORDER BY deviceId, start",
        gpu_work_sql(conn)
    );
    let mut stmt = conn.prepare(&sql).expect("GPU work");
    let rows: Vec<WorkRow> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let hull = (
        rows.iter().map(|r| r.1).min().unwrap_or(0),
        rows.iter().map(|r| r.2).max().unwrap_or(0),
    );
    (rows, hull)
}

/// The row orders `tests/tools/reorder.py` writes (nsys promises no order, 2025.6 release notes).
pub const ROW_ORDERS: [&str; 3] = ["grouped", "chunks", "reversed"];

/// The row orders a sweep rewrites its `i`-th input in: every one of [`ROW_ORDERS`] under
/// [`full`], else one, taken in turn, so that a sweep of three inputs or more still reads every
/// order and every input.
pub fn row_orders_of(i: usize) -> Vec<&'static str> {
    match full() {
        true => ROW_ORDERS.to_vec(),
        false => vec![ROW_ORDERS[i % ROW_ORDERS.len()]],
    }
}

/// A copy of `src` in `dir` whose event tables are stored in `order` ([`ROW_ORDERS`]).
pub fn reordered(src: &Path, dir: &Path, order: &str) -> PathBuf {
    let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("trace");
    let dst = dir.join(format!("{stem}.{order}.sqlite"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tools/reorder.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(src)
        .arg(&dst)
        .arg(order)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "reorder.py {} {order}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    dst
}

/// The exports of a sweep ([`sweep_exports`]) and a few scenarios with several ranks, CUDA
/// graphs, copies and planted idle causes (their temp dirs kept alive with them): the inputs
/// rewritten in every row order.
pub fn row_order_inputs() -> (Vec<tempfile::TempDir>, Vec<PathBuf>) {
    let (dirs, generated) = generated_each(&[
        "tp2-phases",
        "serving-graphs",
        "copy-bound",
        "idle-causes",
        "host-records",
    ]);
    let mut paths = sweep_exports();
    paths.extend(generated);
    (dirs, paths)
}

/// Whether two JSON values are equal but for floats within `rel` of each other (relative):
/// sums of the same terms added in another order differ in their last bits.
pub fn json_close(a: &serde_json::Value, b: &serde_json::Value, rel: f64) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                (x - y).abs() <= rel * x.abs().max(y.abs()) || x == y
            }
            _ => x == y,
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w, rel)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_close(v, w, rel))
        }
        _ => a == b,
    }
}

/// An NVTX range's op name: the name without PyTorch's `emit_nvtx` suffixes (`, seq = …`,
/// `, op_id = …`, `, sizes = […]`, `, input_op_ids = […]`), written apart from the crate's.
pub fn nvtx_op_name(name: &str) -> &str {
    // Compiled once: a test names every range of an export (debug builds compile slowly).
    static SUFFIX: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r", (seq = -?\d|op_id = \d|sizes = \[|input_op_ids = \[)")
            .expect("constant regex")
    });
    SUFFIX.find(name).map_or(name, |m| &name[..m.start()])
}

/// The tests' own NVTX op shape rule (`docs/spec.md` §3, NVTX ops), written apart from the
/// crate's: PyTorch `emit_nvtx` suffixes dropped ([`nvtx_op_name`]), then each digit run that
/// does not follow a letter read as `*`, a `0x` hex id as `0x*`; a name of digits and spaces
/// kept whole.
pub fn nvtx_op_shape(name: &str) -> String {
    static RUN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[A-Za-z][0-9]+|0[xX][0-9A-Fa-f]+|[0-9]+").expect("constant regex")
    });
    let op = nvtx_op_name(name);
    if op.chars().all(|c| c.is_ascii_digit() || c == ' ') {
        return op.to_string();
    }
    RUN.replace_all(op, |c: &regex::Captures| {
        let m = &c[0];
        if m.as_bytes()[0].is_ascii_alphabetic() {
            m.to_string()
        } else if m.len() > 2 && (m.starts_with("0x") || m.starts_with("0X")) {
            format!("{}*", &m[..2])
        } else {
            "*".to_string()
        }
    })
    .into_owned()
}

/// A copy of `src` at `dst` that can be written (the public exports are read-only).
pub fn writable_copy(src: &Path, dst: &Path) -> PathBuf {
    std::fs::copy(src, dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
    let mut perms = std::fs::metadata(dst).expect("metadata").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(dst, perms).expect("set permissions");
    dst.to_path_buf()
}

/// A copy of `one` at `dir/name` keeping the kernels of `device` only, their times moved by
/// `shift_ns` (the rank's host clock off by that much beyond its session start): one rank of a
/// run written as one file per rank.
pub fn rank_file(one: &Path, dir: &Path, device: i64, shift_ns: i64, name: &str) -> PathBuf {
    let path = writable_copy(one, &dir.join(name));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(&format!(
        "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId != {device};
         UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + {shift_ns}, end = end + {shift_ns};"
    ))
    .expect("edit");
    path
}

/// A copy of `one` holding rank `device`'s process (pid `50001 + device`) alone, every time of it
/// moved by `shift_ns`: one file per rank as its own node captures it, its clock off by
/// `shift_ns` beyond its session start (host and GPU rows alike, as one clock is off).
pub fn whole_rank_file(one: &Path, dir: &Path, device: i64, shift_ns: i64, name: &str) -> PathBuf {
    let path = writable_copy(one, &dir.join(name));
    let conn = rusqlite::Connection::open(&path).expect("open");
    let pid = 50001 + device;
    let mut sql = String::new();
    for t in ["KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION"] {
        sql += &format!("DELETE FROM CUPTI_ACTIVITY_KIND_{t} WHERE deviceId != {device};\n");
    }
    for t in ["CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"] {
        sql += &format!("DELETE FROM {t} WHERE ((globalTid >> 24) & 16777215) != {pid};\n");
    }
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "NVTX_EVENTS",
    ] {
        sql += &format!("UPDATE {t} SET start = start + {shift_ns}, end = end + {shift_ns};\n");
    }
    conn.execute_batch(&sql).expect("edit");
    path
}

/// A Python that imports `module`: `target/tools/py`'s (`cargo xtask setup` installs the
/// tests' Python packages there), else `python3`. Panics saying how to get one, so a test
/// that needs it never passes without running.
pub fn python_with(module: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let venv = exe
        .ancestors()
        .map(|dir| dir.join("tools/py/bin/python"))
        .find(|p| p.is_file());
    let has = |python: &Path| {
        Command::new(python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    venv.into_iter()
        .chain([PathBuf::from("python3")])
        .find(|p| has(p))
        .unwrap_or_else(|| {
            panic!(
                "no Python with the {module} package: run `cargo xtask setup` (it installs it in \
                 target/tools/py)"
            )
        })
}

/// A copy of `src` in `dir` with every kernel named `kernel` lasting `extra_ns` longer (the
/// rest of the trace untouched), written with SQL.
#[allow(dead_code)] // not every test binary reads it
pub fn slowed_copy(src: &Path, dir: &Path, kernel: &str, extra_ns: i64) -> PathBuf {
    let dst = dir.join(format!(
        "slow-{}",
        src.file_name().and_then(|n| n.to_str()).unwrap_or("trace")
    ));
    writable_copy(src, &dst);
    let conn = rusqlite::Connection::open(&dst).unwrap();
    let changed = conn
        .execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + ?1 \
             WHERE shortName IN (SELECT id FROM StringIds WHERE value = ?2)",
            rusqlite::params![extra_ns, kernel],
        )
        .unwrap();
    assert!(changed > 0, "no `{kernel}` kernel in {}", src.display());
    dst
}

/// Runs `tests/reference/idle_attribution_oracle.py` over the export at `path` with its idle
/// gaps in the GPU work: the script finds a device's gaps between the rows of the table
/// `CUPTI_ACTIVITY_KIND_KERNEL` (and the processes it attributes to from them), so it is handed
/// a connection holding a temporary view of that name over every GPU work row
/// ([`gpu_work_select`]: kernels, graph replays, copies, memsets), which SQLite resolves
/// before the file's own table. The oracle's rules are otherwise the script's own. With `spans`
/// (per device, `[start, end)` in ns) it sweeps those spans instead of the idle gaps, and only
/// their devices.
pub fn idle_attribution_oracle(
    path: &Path,
    spans: Option<&std::collections::BTreeMap<i64, Vec<(i64, i64)>>>,
) -> serde_json::Value {
    const RUN_OVER_WORK: &str = r#"
import importlib.util, json, sqlite3, sys
script, trace, view = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("idle_attribution_oracle", script)
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)
connect = sqlite3.connect
def over_gpu_work(*args, **kwargs):
    db = connect(*args, **kwargs)
    db.execute(view)
    return db
sqlite3.connect = over_gpu_work
spans = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
print(json.dumps(oracle.attribute(trace, spans), indent=1, sort_keys=True))
"#;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/idle_attribution_oracle.py");
    let view = format!(
        "CREATE TEMP VIEW CUPTI_ACTIVITY_KIND_KERNEL AS {}",
        gpu_work_select(&open_export(path)).expect("GPU work tables")
    );
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(RUN_OVER_WORK)
        .arg(&script)
        .arg(path)
        .arg(&view);
    if let Some(spans) = spans {
        cmd.arg(serde_json::to_string(spans).expect("spans as JSON"));
    }
    let out = cmd.output().expect("python3 must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle JSON")
}

/// Drill inputs over `rows`, each labeled as `labels` says, under the built-in step markers.
pub fn drill_inputs<'a>(
    rows: &'a [nsys_lens::trace::FileRows<'a>],
    labels: &'a [String],
) -> Vec<nsys_lens::drill::DrillInput<'a>> {
    rows.iter()
        .zip(labels)
        .map(|(rows, label)| nsys_lens::drill::DrillInput {
            rows,
            label,
            step_marker: None,
        })
        .collect()
}
