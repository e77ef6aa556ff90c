//! Every real public export (`shared/traces/public`) through `nsys-lens detect --json`, in both
//! profiles, checked against `MANIFEST.json`: exports with kernels give a verdict whose `trace`
//! facts match the manifest; exports without kernels are refused with one clear line; what
//! could not be computed is stated in `coverage`; and the files are never written to.

use crate::common;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use common::{
    EXIT_INPUT, check_one_line_error, describe, nsys_lens, public_trace, public_traces_dir,
};

const PROFILES: [&str; 2] = ["standard", "trtllm-skill"];

/// A file's identity for the read-only check: size, modification time and a content hash.
#[derive(Debug, PartialEq)]
struct Snapshot {
    len: u64,
    modified: SystemTime,
    fnv1a: u64,
}

fn snapshot(path: &Path) -> Snapshot {
    let meta = fs::metadata(path).unwrap();
    let bytes = fs::read(path).unwrap();
    let fnv1a = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    Snapshot {
        len: meta.len(),
        modified: meta.modified().unwrap(),
        fnv1a,
    }
}

fn manifest() -> Vec<Value> {
    let path = public_traces_dir().join("MANIFEST.json");
    let text = fs::read_to_string(&path).unwrap();
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    value
        .as_array()
        .unwrap_or_else(|| panic!("{}: expected a JSON array", path.display()))
        .clone()
}

/// The manifest's row count of a table; `None` when the table is absent from the export.
fn count(entry: &Value, table: &str) -> Option<u64> {
    entry["counts"]
        .get(table)
        .map(|n| n.as_u64().expect("counts are integers"))
}

/// Runs `detect --json` on one file in one profile and returns the problems found.
fn check_one(path: &Path, entry: &Value, profile: &str) -> Vec<String> {
    let args = [
        OsStr::new("detect"),
        path.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--profile"),
        OsStr::new(profile),
    ];
    let out = nsys_lens(args);
    let ctx = || describe(&args, &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut problems = Vec::new();
    if stderr.contains("panicked") {
        return vec![format!("panicked:\n{}", ctx())];
    }

    let kernels = count(entry, "CUPTI_ACTIVITY_KIND_KERNEL").unwrap_or(0);
    if kernels == 0 {
        // No kernel table, or an empty one: no verdict is possible; say so in one line.
        if let Err(e) = check_one_line_error(&args, &out, EXIT_INPUT, Some("no GPU kernels")) {
            problems.push(format!("a kernel-less export must be refused: {e}"));
        }
        return problems;
    }

    if out.status.code() != Some(0) {
        return vec![format!(
            "an export with {kernels} kernels must be analysed (exit 0):\n{}",
            ctx()
        )];
    }
    let json: Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => return vec![format!("stdout is not JSON ({e}):\n{}", ctx())],
    };
    let mut expect = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };

    let verdict = &json["verdict"];
    expect(
        verdict == "YES" || verdict == "NO",
        format!("verdict is {verdict}, expected \"YES\" or \"NO\""),
    );
    expect(
        json["aggregate_metrics"].is_object(),
        "no `aggregate_metrics` object".into(),
    );
    expect(json["warnings"].is_array(), "no `warnings` list".into());

    let trace = &json["trace"];
    expect(
        trace["kernels"].as_u64() == Some(kernels),
        format!(
            "trace.kernels = {}, manifest says {kernels}",
            trace["kernels"]
        ),
    );
    let devices = entry["kernel_devices"]
        .as_u64()
        .expect("kernel_devices is an integer");
    let got_devices = trace["devices"].as_array().map(|d| d.len() as u64);
    expect(
        got_devices == Some(devices),
        format!(
            "trace.devices = {}, manifest says {devices} device(s) ran kernels",
            trace["devices"]
        ),
    );
    let nsys = match entry["nsys"].as_str() {
        None | Some("unknown") => Value::Null,
        Some(v) => Value::from(v),
    };
    expect(
        trace["nsys_version"] == nsys,
        format!(
            "trace.nsys_version = {}, manifest says {nsys}",
            trace["nsys_version"]
        ),
    );

    let coverage = json["coverage"].as_array();
    let well_formed = coverage.is_some_and(|c| {
        c.iter()
            .all(|n| n["subject"].is_string() && n["reason"].is_string())
    });
    expect(
        well_formed,
        format!(
            "`coverage` must be a list of {{subject, reason}} strings, got {}",
            json["coverage"]
        ),
    );
    if count(entry, "NVTX_EVENTS").is_none() {
        let noted = coverage.is_some_and(|c| c.iter().any(|n| n["subject"] == "NVTX_EVENTS"));
        expect(
            noted,
            format!(
                "no NVTX_EVENTS table, so `coverage` must say so (subject \"NVTX_EVENTS\"), got {}",
                json["coverage"]
            ),
        );
    }

    if !problems.is_empty() {
        problems.push(ctx());
    }
    problems
}

#[test]
fn every_public_trace_agrees_with_the_manifest() {
    let dir = public_traces_dir();
    let manifest = manifest();
    let listing = || -> BTreeSet<String> {
        fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let entries_before = listing();
    let on_disk: BTreeSet<String> = entries_before
        .iter()
        .filter(|name| name.ends_with(".sqlite"))
        .cloned()
        .collect();
    let listed: BTreeSet<String> = manifest
        .iter()
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !on_disk.is_empty(),
        "no *.sqlite files in {}",
        dir.display()
    );
    assert_eq!(
        on_disk,
        listed,
        "the *.sqlite files in {} and the MANIFEST.json entries differ",
        dir.display()
    );

    let mut failures = Vec::new();
    for entry in &manifest {
        let name = entry["file"].as_str().unwrap();
        let path = dir.join(name);
        let before = snapshot(&path);
        for profile in PROFILES {
            for problem in check_one(&path, entry, profile) {
                failures.push(format!("{name} [--profile {profile}]: {problem}"));
            }
        }
        let after = snapshot(&path);
        if before != after {
            failures.push(format!("{name}: the file changed while being analysed ({before:?} → {after:?}); it must be opened read-only"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The minimal real export has kernels but no NVTX table: the verdict is still given, and the
/// missing table is named in `coverage`.
#[test]
fn missing_nvtx_table_is_named_in_coverage() {
    let path = public_trace("GindaChen_nsys-ai__mock.sqlite");
    let args = [OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")];
    let out = nsys_lens(args);
    let ctx = describe(&args, &out);
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{ctx}"));
    let coverage = json["coverage"]
        .as_array()
        .unwrap_or_else(|| panic!("no `coverage` list:\n{ctx}"));
    let note = coverage.iter().find(|n| n["subject"] == "NVTX_EVENTS");
    let reason = note
        .and_then(|n| n["reason"].as_str())
        .unwrap_or_else(|| panic!("no NVTX_EVENTS coverage note:\n{ctx}"));
    assert!(
        !reason.trim().is_empty(),
        "the NVTX_EVENTS coverage note has no reason:\n{ctx}"
    );
    assert_eq!(json["trace"]["nvtx_ranges"].as_u64(), Some(0), "{ctx}");
}
