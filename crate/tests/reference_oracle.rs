//! The `trtllm-skill` profile against an independent oracle: a Python rebuild of the reference
//! `detect_host_overhead.py` that lets SQLite do the LIKE matching, SUMs and row selection
//! (`tests/reference/detect_host_overhead_oracle.py`). Every reference key must be identical.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const REFERENCE_KEYS: [&str; 8] = [
    "verdict",
    "aggregate_metrics",
    "crossed_count",
    "applicable_count",
    "host_prep_confirmed",
    "nccl_caveat",
    "crossed_details",
    "phases",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn shared_dir() -> PathBuf {
    std::env::var_os("NSYS_LENS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"))
}

/// The oracle's JSON, or `None` when the reference itself fails on this file (missing table).
fn oracle(trace: &Path, extra: &[&str]) -> Option<Value> {
    let script = repo_root().join("tests/reference/detect_host_overhead_oracle.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(trace)
        .args(extra)
        .output()
        .expect("python3 must be installed");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no such table"),
            "oracle failed unexpectedly on {}: {err}",
            trace.display()
        );
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).expect("oracle prints JSON"))
}

fn ours(trace: &Path, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .args(["detect", "--json", "--profile", "trtllm-skill"])
        .arg(trace)
        .args(extra)
        .output()
        .expect("run nsys-lens");
    assert!(
        out.status.success(),
        "nsys-lens failed on {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("nsys-lens prints JSON")
}

fn compare(trace: &Path, extra: &[&str]) -> bool {
    let Some(expected) = oracle(trace, extra) else {
        return false;
    };
    let got = ours(trace, extra);
    for key in REFERENCE_KEYS {
        let got_value = if key == "phases" {
            reference_view(&got[key], &expected[key])
        } else {
            got[key].clone()
        };
        assert_eq!(
            got_value,
            expected[key],
            "{} ({extra:?}): key `{key}` differs from the reference",
            trace.display()
        );
    }
    true
}

/// Our phase entries restricted to the keys the reference emits (nsys-lens adds evidence keys).
fn reference_view(ours: &Value, reference: &Value) -> Value {
    let (Some(ours), Some(reference)) = (ours.as_object(), reference.as_object()) else {
        return ours.clone();
    };
    let mut out = serde_json::Map::new();
    for (phase, value) in ours {
        let keys = reference.get(phase).and_then(Value::as_object);
        let view = match (value.as_object(), keys) {
            (Some(v), Some(k)) => Value::Object(
                k.keys()
                    .filter_map(|key| Some((key.clone(), v.get(key)?.clone())))
                    .collect(),
            ),
            _ => value.clone(),
        };
        out.insert(phase.clone(), view);
    }
    Value::Object(out)
}

#[test]
fn public_exports_match_the_reference_exactly() {
    let dir = shared_dir().join("traces/public");
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "sqlite") && has_kernels(&path) {
            compared += usize::from(compare(&path, &[]));
            compare(&path, &["--no-m3"]);
        }
    }
    // Eight public exports have both kernel and NVTX tables (the reference needs both).
    assert!(compared >= 8, "only {compared} exports compared");
}

fn has_kernels(path: &Path) -> bool {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    conn.query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n > 0)
    .unwrap_or(false)
}

#[test]
fn generated_scenarios_match_the_reference_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenarios = nsys_lens::synth::scenarios();
    assert!(scenarios.len() >= 7);
    for (name, _) in scenarios {
        let path = dir.path().join(format!("{name}.sqlite"));
        nsys_lens::synth::generate(
            name,
            &path,
            &nsys_lens::synth::GenOptions { scale: 1, seed: 7 },
        )
        .unwrap_or_else(|e| panic!("generate {name}: {e}"));
        assert!(compare(&path, &[]), "{name}: the reference could not run");
        assert!(
            compare(&path, &["--no-m3"]),
            "{name} --no-m3: the reference could not run"
        );
    }
}
