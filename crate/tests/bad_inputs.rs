//! Inputs that cannot be analysed: `nsys-lens detect` must exit 3 with exactly one line on
//! stderr saying what is wrong and what to do, and never panic. Usage errors exit 2.

use crate::common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{
    BIN, EXIT_INPUT, EXIT_USAGE, assert_one_line_error, describe, lcg_bytes, nsys_lens,
    public_trace,
};
use tempfile::TempDir;

/// A small real export with kernels (2 kernels, no NVTX table).
const REAL_EXPORT: &str = "GindaChen_nsys-ai__mock.sqlite";

/// Runs `detect PATH` and checks the one-line refusal; returns the line.
fn refused(path: &Path, needle: Option<&str>) -> String {
    let args = [OsStr::new("detect"), path.as_os_str()];
    let out = nsys_lens(args);
    assert!(
        out.stdout.is_empty(),
        "nothing belongs on stdout when the input is refused:\n{}",
        describe(&args, &out)
    );
    assert_one_line_error(&args, &out, EXIT_INPUT, needle)
}

/// The same refusal must hold with `--json` (errors are not JSON; they go to stderr).
fn refused_json(path: &Path, needle: Option<&str>) -> String {
    let args = [OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")];
    let out = nsys_lens(args);
    assert_one_line_error(&args, &out, EXIT_INPUT, needle)
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    fs::write(&path, bytes).unwrap();
    path
}

/// A writable copy of a public export (the originals are read-only).
fn copy_real_export(dir: &TempDir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    fs::copy(public_trace(REAL_EXPORT), &path).unwrap();
    let mut perms = fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&path, perms).unwrap();
    path
}

#[test]
fn empty_file() {
    let dir = TempDir::new().unwrap();
    let path = write(&dir, "empty.sqlite", b"");
    refused(&path, Some("empty"));
    refused_json(&path, Some("empty"));
}

#[test]
fn random_bytes() {
    let dir = TempDir::new().unwrap();
    let path = write(&dir, "random.sqlite", &lcg_bytes(1, 4096));
    refused(&path, Some("not an SQLite database"));
    refused_json(&path, Some("not an SQLite database"));
}

#[test]
fn truncated_export() {
    let dir = TempDir::new().unwrap();
    let path = copy_real_export(&dir, "truncated.sqlite");
    let full = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(full / 2)
        .unwrap();
    refused(&path, Some("truncated"));
}

#[test]
fn nsys_rep_report_instead_of_its_export() {
    let dir = TempDir::new().unwrap();
    let path = write(&dir, "x.nsys-rep", &lcg_bytes(2, 4096));
    refused(&path, Some("nsys export"));
}

#[test]
fn sqlite_database_that_is_not_an_nsys_export() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("foo.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE foo(a, b); INSERT INTO foo VALUES (1, 'x'), (2, 'y');")
        .unwrap();
    conn.close().unwrap();
    refused(&path, Some("not an Nsight Systems export"));
}

#[test]
/// No kernel, but a copy: the GPU did work, so the standard verdict is measured (transfer-bound);
/// `trtllm-skill`, which counts kernels only, refuses it; with the copies gone too, both refuse.
fn nsys_export_with_an_empty_kernel_table() {
    let dir = TempDir::new().unwrap();
    let path = copy_real_export(&dir, "no-kernels.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;")
        .unwrap();
    let copies: i64 = conn
        .query_row("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(copies > 0, "the export has copies");
    let out = nsys_lens([OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a verdict");
    assert_eq!(report["bound"]["kind"], "transfer-bound", "{report}");
    let skill = [
        OsStr::new("detect"),
        path.as_os_str(),
        OsStr::new("--profile"),
        OsStr::new("trtllm-skill"),
    ];
    assert_one_line_error(
        &skill,
        &nsys_lens(skill),
        EXIT_INPUT,
        Some("no GPU kernels"),
    );
    conn.execute_batch(
        "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMSET;",
    )
    .unwrap();
    conn.close().unwrap();
    refused(&path, Some("no GPU kernels"));
    refused_json(&path, Some("no GPU kernels"));
}

#[test]
fn directory_instead_of_a_file() {
    let dir = TempDir::new().unwrap();
    let sub = dir.path().join("trace.sqlite");
    fs::create_dir(&sub).unwrap();
    refused(&sub, None);
}

#[test]
fn nonexistent_path() {
    let dir = TempDir::new().unwrap();
    refused(
        &dir.path().join("does-not-exist.sqlite"),
        Some("does-not-exist.sqlite"),
    );
}

/// A valid SQLite header (from a real export) followed by garbage, with the header's page count
/// matching the file size, so the damage is only found once SQLite reads the pages.
#[test]
fn sqlite_header_then_garbage() {
    let dir = TempDir::new().unwrap();
    let mut header = fs::read(public_trace(REAL_EXPORT)).unwrap();
    header.truncate(100);
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => usize::from(n),
    };
    let pages: u32 = 8;
    header[28..32].copy_from_slice(&pages.to_be_bytes());
    // The page count is trusted only when "version-valid-for" equals the change counter.
    let counter: [u8; 4] = header[24..28].try_into().unwrap();
    header[92..96].copy_from_slice(&counter);
    let mut bytes = header;
    bytes.extend(lcg_bytes(3, page_size * pages as usize - 100));
    let path = write(&dir, "garbage.sqlite", &bytes);
    refused(&path, None);
    refused_json(&path, None);
}

fn usage_error(args: &[&OsStr]) {
    let out = nsys_lens(args);
    let ctx = describe(args, &out);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "the CLI panicked:\n{ctx}"
    );
    assert_eq!(
        out.status.code(),
        Some(EXIT_USAGE),
        "a usage error must exit 2:\n{ctx}"
    );
    assert!(
        !out.stderr.is_empty(),
        "a usage error must say what is wrong on stderr:\n{ctx}"
    );
}

#[test]
fn detect_without_a_file_is_a_usage_error() {
    usage_error(&[OsStr::new("detect")]);
}

#[test]
fn unknown_profile_is_a_usage_error() {
    let trace = public_trace(REAL_EXPORT);
    usage_error(&[
        OsStr::new("detect"),
        trace.as_os_str(),
        OsStr::new("--profile"),
        OsStr::new("foo"),
    ]);
}

#[test]
fn non_numeric_threshold_is_a_usage_error() {
    let trace = public_trace(REAL_EXPORT);
    usage_error(&[
        OsStr::new("detect"),
        trace.as_os_str(),
        OsStr::new("--gpu-idle-threshold"),
        OsStr::new("lots"),
    ]);
}

/// A record table that cannot be read (here the driver's overhead table replaced by a view
/// whose rows fail to compute: `abs` of the least integer overflows) costs its explanations only: `drill` still answers, the driver's
/// module loading reads as the launch it lies in, and a note names the table.
#[test]
fn an_unreadable_record_table_is_a_note_not_a_failure() {
    let dir = TempDir::new().unwrap();
    let path = copy_real_export(&dir, "broken-overhead.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE CUPTI_ACTIVITY_KIND_OVERHEAD;
         CREATE VIEW CUPTI_ACTIVITY_KIND_OVERHEAD AS
           SELECT abs(-9223372036854775807 - 1) AS start, 0 AS end, 0 AS globalTid,
                  0 AS nameId, 6 AS overheadType;",
    )
    .unwrap();
    drop(conn);
    let args = [OsStr::new("drill"), path.as_os_str(), OsStr::new("--json")];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = json["idle"]["per_device"][0]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"launch") && !kinds.contains(&"module_load"),
        "{kinds:?}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CUPTI_ACTIVITY_KIND_OVERHEAD") && text.contains("not read"),
        "a note names the table"
    );
}

/// A copy of `REAL_EXPORT` in `dir` after `sql`.
fn real_export_after(dir: &TempDir, sql: &str) -> PathBuf {
    let path = copy_real_export(dir, "edited.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(conn.execute(sql, []).unwrap() > 0, "{sql}");
    path
}

/// Where `needle` first occurs in `bytes` at or after `from`.
fn find(bytes: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let at = bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)?;
    Some(from + at)
}

/// A copy of `REAL_EXPORT` in `dir` whose `DIAGNOSTIC_EVENT` table text has `byte` at `offset`
/// into the first `needle` after its `CREATE TABLE` — in every copy of that text in the file
/// (the live one, and any left in free space).
fn damaged_ddl(dir: &TempDir, needle: &[u8], offset: usize, byte: u8) -> PathBuf {
    let mut bytes = fs::read(public_trace(REAL_EXPORT)).unwrap();
    let mut from = 0;
    while let Some(ddl) = find(&bytes, b"CREATE TABLE DIAGNOSTIC_EVENT (\n", from) {
        let at = find(&bytes, needle, ddl).expect("the table has the text");
        bytes[at + offset] = byte;
        from = ddl + 1;
    }
    assert!(from > 0, "the export has the table");
    write(dir, "damaged.sqlite", &bytes)
}

/// A damaged `CREATE TABLE` text in the schema: SQLite's message quotes the statement from the
/// damage on (comments and line breaks), which made the refusal dozens of lines long. It is
/// one short line naming the table.
#[test]
fn a_damaged_schema_is_refused_in_one_short_line() {
    let dir = TempDir::new().unwrap();
    // An unterminated quoted identifier where a column's type was.
    let path = damaged_ddl(&dir, b"INTEGER", 0, b'"');
    let args = [OsStr::new("detect"), path.as_os_str()];
    let out = nsys_lens(args);
    let line = assert_one_line_error(&args, &out, EXIT_INPUT, Some("damaged"));
    assert!(
        line.contains("malformed database schema (DIAGNOSTIC_EVENT)") && line.len() < 400,
        "{line}"
    );
    // The library's own message, which the page shows as is, is one line too.
    let err = nsys_lens::trace::open_path(&path).expect_err("refused");
    assert!(!err.to_string().contains('\n'), "{err}");
}

/// A table or column name that is not UTF-8 (nsys writes UTF-8 only) is a damaged file, said
/// so, not an "SQLite error … invalid utf-8 sequence of 1 bytes from index 0".
#[test]
fn a_name_that_is_not_utf8_is_a_damaged_file() {
    let dir = TempDir::new().unwrap();
    let path = damaged_ddl(&dir, b"timestampType", "timestamp".len(), 0xff);
    let line = refused(&path, Some("damaged"));
    assert!(
        line.contains("not UTF-8 while reading the schema"),
        "{line}"
    );
}

/// A time no capture holds (a flipped high bit, a float where an integer belongs) is refused as
/// damage naming the table: sums and differences of such times overflowed (a panic in a debug
/// build, nonsense otherwise) in the launch sweep, root cause, the drill-down and the bound.
#[test]
fn a_time_far_from_the_session_start_is_refused_as_damage() {
    let first = |table: &str| format!("rowid = (SELECT min(rowid) FROM {table})");
    for (table, set, rows) in [
        (
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "start = -9223372036854775808",
            first("CUPTI_ACTIVITY_KIND_KERNEL"),
        ),
        // Every call: `detect` reads the launches only.
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "\"end\" = 1e300", "1".into()),
        (
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "start = 4611686018427387904",
            first("CUPTI_ACTIVITY_KIND_MEMCPY"),
        ),
    ] {
        let dir = TempDir::new().unwrap();
        let path = real_export_after(&dir, &format!("UPDATE {table} SET {set} WHERE {rows}"));
        for command in ["detect", "analyze", "drill"] {
            let args = [OsStr::new(command), path.as_os_str()];
            let line = assert_one_line_error(&args, &nsys_lens(args), EXIT_INPUT, Some(table));
            assert!(
                line.contains("more than 104 days from the session start"),
                "{line}"
            );
        }
    }
}

/// Copy sizes no copy has (beyond 256 TiB) read as unknown, as negative ones do: several of
/// them overflowed the sums of bytes per device and direction.
#[test]
fn copy_sizes_beyond_256_tib_read_as_unknown() {
    let dir = TempDir::new().unwrap();
    let sql = "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 9223372036854775807";
    let path = real_export_after(&dir, sql);
    for command in ["detect", "drill"] {
        let args = [OsStr::new(command), path.as_os_str(), OsStr::new("--json")];
        let out = nsys_lens(args);
        assert!(out.status.success(), "{}", describe(&args, &out));
    }
}

/// A damaged b-tree whose rows read back otherwise than the scan found them (zeroed cells give
/// rowids that repeat) is refused as damage, not as "the kernel table is not in start order":
/// nsys promises no order, and none is refused.
#[test]
fn a_kernel_table_that_reads_back_otherwise_is_damage() {
    let dir = TempDir::new().unwrap();
    // Case 678 of `tests/fuzz.rs` under seed 5.
    let mut bytes = fs::read(public_trace("GindaChen_nsys-ai__healthy_1pct.v3.sqlite")).unwrap();
    bytes[33_216..33_216 + 2030].fill(0);
    let path = write(&dir, "zeroed.sqlite", &bytes);
    let line = refused(&path, Some("damaged"));
    assert!(
        line.contains("CUPTI_ACTIVITY_KIND_KERNEL")
            && (line.contains("reads back otherwise than it was scanned")
                || line.contains("b-tree is out of order"))
            && !line.contains("not in start order"),
        "{line}"
    );
}

/// Thousands of operations each lasting 2^52 ns (about 52 days, inside the times a read
/// accepts) and copies of 2^47 bytes add up past `i64`: every command answers or refuses in one
/// line, and no sum overflows (this binary is built with overflow checks).
#[test]
fn huge_but_accepted_durations_and_sizes_do_not_overflow() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("huge.sqlite");
    fs::copy(
        public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite"),
        &path,
    )
    .unwrap();
    let mut perms = fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&path, perms).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (1 << 52);
         UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start + (1 << 52);
         UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start + (1 << 52), bytes = 1 << 47;",
    )
    .unwrap();
    let kernels: i64 = conn
        .query_row("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        kernels > 2048,
        "{kernels} kernels: their durations add past i64"
    );
    conn.close().unwrap();
    for command in ["detect", "analyze", "drill"] {
        let args = [OsStr::new(command), path.as_os_str(), OsStr::new("--json")];
        let out = nsys_lens(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{}", describe(&args, &out));
        match out.status.code() {
            Some(0) => {
                serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON");
            }
            _ => {
                assert_one_line_error(&args, &out, EXIT_INPUT, None);
            }
        }
    }
}

/// Runs `nsys-lens ARGS…` in `dir`, killed if it is still running after `limit`: `None` for a
/// hang, which then fails the test instead of hanging it. Its output goes to files (a pipe
/// nobody reads while it runs could block it).
fn nsys_lens_within(args: &[&OsStr], dir: &Path, limit: Duration) -> Option<Output> {
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .expect("start the nsys-lens binary");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for nsys-lens") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Output {
        status,
        stdout: fs::read(out).unwrap(),
        stderr: fs::read(err).unwrap(),
    })
}

/// Issue 48: two bit flips in `NVTX_EVENTS`' pages of a public export — the first turns the key
/// of cell 246 of its interior page (page 26) from 12303 into 13327 (`PRAGMA integrity_check`:
/// "Rowid 13327 out of order"), the second a byte of a row on page 412. Every read by `rowid`
/// range from 12304 up then began at row 12304 again, and `detect` read the same rows for ever.
/// Every command now ends at once in one line naming the damage and the table (each is given a
/// minute; the unoptimised build takes well under a second).
#[test]
fn an_out_of_order_btree_is_refused_not_read_for_ever() {
    const LIMIT: Duration = Duration::from_secs(60);
    let dir = TempDir::new().unwrap();
    let mut bytes = fs::read(public_trace("GindaChen_nsys-ai__mfu_2gpu_after.sqlite")).unwrap();
    assert_eq!((bytes[105_020], bytes[1_687_256]), (224, 0), "the export");
    bytes[105_020] = 232;
    bytes[1_687_256] = 64;
    let path = write(&dir, "two-flips.sqlite", &bytes);
    let report = dir.path().join("report");
    let commands: [&[&OsStr]; 5] = [
        &[OsStr::new("detect")],
        &[OsStr::new("detect"), OsStr::new("--json")],
        &[OsStr::new("analyze")],
        &[OsStr::new("drill")],
        &[
            OsStr::new("report"),
            OsStr::new("--out"),
            report.as_os_str(),
        ],
    ];
    for command in commands {
        let args = [command, &[path.as_os_str()]].concat();
        let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
        let out = nsys_lens_within(&args, dir.path(), LIMIT).unwrap_or_else(|| {
            panic!(
                "`nsys-lens {}` still ran after {LIMIT:?}: a hang",
                shown.join(" ")
            )
        });
        let line = assert_one_line_error(&args, &out, EXIT_INPUT, Some("damaged"));
        assert!(
            line.contains("two-flips.sqlite") && line.contains("NVTX_EVENTS"),
            "`nsys-lens {}`: {line}",
            shown.join(" ")
        );
    }
}
