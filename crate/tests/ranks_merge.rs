//! `nsys-lens ranks` as a map and a reduce (issue 50, "hundreds of ranks"): `ranks --summary`
//! per file then `ranks --merge` over the summaries writes the JSON `ranks` writes over the
//! files themselves, byte for byte — the generated TP=2 and TP=4 straggler runs split into one
//! file per rank with planted clock errors, the TP=2 run in one export, and the real
//! `mfu_2gpu_before`; a summary holds the collective kernels only; bad summaries are one-line
//! usage errors; `examples/ranks_dask.py` on a local Dask cluster of two workers gives the
//! one-process answer.

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use common::{EXIT_USAGE, assert_one_line_error, describe, nsys_lens, public_trace, rank_file};
use nsys_lens::synth::{self, GenOptions};

/// `nsys-lens ARGS…`'s stdout, which must succeed.
fn run(args: &[&OsStr]) -> Vec<u8> {
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(args, &out));
    out.stdout
}

/// `nsys-lens ranks PATHS… --json`, the one-shot answer.
fn one_shot(paths: &[PathBuf]) -> Vec<u8> {
    let mut a: Vec<&OsStr> = vec!["ranks".as_ref()];
    a.extend(paths.iter().map(|p| p.as_os_str()));
    a.push("--json".as_ref());
    run(&a)
}

/// The map (`ranks --summary P -o P.ranks.json` per file), then the reduce
/// (`ranks --merge SUMMARIES… --json`); also returns the summaries.
fn map_reduce(paths: &[PathBuf]) -> (Vec<u8>, Vec<Value>) {
    let summaries: Vec<PathBuf> = paths
        .iter()
        .map(|p| {
            let s = p.with_extension("ranks.json");
            run(&[
                "ranks".as_ref(),
                "--summary".as_ref(),
                p.as_os_str(),
                "-o".as_ref(),
                s.as_os_str(),
            ]);
            s
        })
        .collect();
    let mut a: Vec<&OsStr> = vec!["ranks".as_ref(), "--merge".as_ref()];
    a.extend(summaries.iter().map(|p| p.as_os_str()));
    a.push("--json".as_ref());
    let read = |p: &PathBuf| -> Value {
        serde_json::from_slice(&std::fs::read(p).expect("summary")).expect("summary JSON")
    };
    (run(&a), summaries.iter().map(read).collect())
}

/// Asserts the merged JSON is the one-shot JSON, byte for byte. Why the straggler was late
/// (`cause`) reads the exports again, so a merge leaves it `null`: when the one-shot answer
/// has one, every other byte is compared.
fn assert_same(what: &str, one: &[u8], merged: &[u8]) {
    let parse = |b: &[u8]| -> Value { serde_json::from_slice(b).expect("json") };
    let (mut a, mut b) = (parse(one), parse(merged));
    if a.get("cause").is_some_and(|c| !c.is_null()) {
        assert_eq!(b["cause"], Value::Null, "{what}");
        a.as_object_mut().map(|o| o.remove("cause"));
        b.as_object_mut().map(|o| o.remove("cause"));
        assert_eq!(a, b, "{what}:\n{}", common::json_diff(&a, &b));
        return;
    }
    assert!(
        one == merged,
        "{what}: the merged JSON differs from the one-shot:\n{}",
        common::json_diff(&a, &b)
    );
}

/// `scenario` (seed `seed`) in one export, and split into one file per device with the clock
/// of file `d` off by `shifts[d]`.
fn split(dir: &Path, scenario: &str, seed: u64, shifts: &[i64]) -> (PathBuf, Vec<PathBuf>) {
    let one = dir.join(format!("{scenario}.sqlite"));
    synth::generate(scenario, &one, &GenOptions { scale: 1, seed }).expect("gen");
    let files = shifts
        .iter()
        .enumerate()
        .map(|(d, &shift)| {
            rank_file(
                &one,
                dir,
                d as i64,
                shift,
                &format!("{scenario}_r{d}.sqlite"),
            )
        })
        .collect();
    (one, files)
}

/// The kernels a summary holds, over its ranks.
fn summarized_kernels(s: &Value) -> usize {
    s["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|r| r["kernels"].as_array().map_or(0, Vec::len))
        .sum()
}

#[test]
fn map_then_merge_writes_the_one_shot_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tp2, tp2_split) = split(dir.path(), "tp2-straggler", 42, &[0, 137_000]);
    let (_, tp2_split_back) = split(dir.path(), "tp2-straggler", 42, &[-420_000, 1_000_000]);
    let (_, tp4_split) = split(
        dir.path(),
        "tp4-straggler",
        7,
        &[0, 137_000, -420_000, 1_000_000],
    );
    let mfu = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    for (what, files) in [
        ("tp2-straggler, one export", vec![tp2]),
        ("tp2-straggler per rank, +137 µs", tp2_split),
        ("tp2-straggler per rank, −420 µs and +1 ms", tp2_split_back),
        (
            "tp4-straggler per rank, 0/+137/−420/+1000 µs",
            tp4_split.clone(),
        ),
        ("mfu_2gpu_before", vec![mfu]),
    ] {
        let one = one_shot(&files);
        let (merged, summaries) = map_reduce(&files);
        assert_same(what, &one, &merged);
        // A summary holds each rank's collective kernels, no other.
        let v: Value = serde_json::from_slice(&one).expect("json");
        let collective: u64 = v["ranks"]
            .as_array()
            .expect("ranks")
            .iter()
            .map(|r| r["collective_kernels"].as_u64().expect("count"))
            .sum();
        let held: usize = summaries.iter().map(summarized_kernels).sum();
        assert_eq!(held as u64, collective, "{what}");
        for s in &summaries {
            assert_eq!(s["kind"], "ranks-summary", "{what}");
            assert_eq!(s["summary_version"], 1, "{what}");
        }
    }
    // The TP=4 split's answer, for the record: rank 1 last, four ranks named by the files.
    let v: Value = serde_json::from_slice(&one_shot(&tp4_split)).expect("json");
    assert_eq!(v["straggler"], 1);
    assert_eq!(v["ranks"].as_array().map(Vec::len), Some(4));
    assert_eq!(v["collectives"]["count"], 48);
}

#[test]
fn bad_summaries_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, files) = split(dir.path(), "tp2-straggler", 42, &[0, 137_000]);
    let (good, _) = {
        let s = files[0].with_extension("ranks.json");
        run(&[
            "ranks".as_ref(),
            "--summary".as_ref(),
            files[0].as_os_str(),
            "-o".as_ref(),
            s.as_os_str(),
        ]);
        (s, ())
    };
    let text = std::fs::read_to_string(&good).expect("summary");
    let mut v: Value = serde_json::from_str(&text).expect("json");
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        p
    };
    let not_json = write("not.json", "{\"kind\": \"ranks-summary\", oops");
    v["summary_version"] = 99.into();
    let newer = write("newer.json", &v.to_string());
    let report = write(
        "report.json",
        &String::from_utf8(one_shot(&files[..1])).expect("utf-8"),
    );
    for (path, needle) in [
        (&not_json, "not JSON"),
        (&newer, "version 99"),
        (&report, "not a ranks summary"),
        (&files[1], "an SQLite export"),
    ] {
        let a: Vec<&OsStr> = vec![
            "ranks".as_ref(),
            "--merge".as_ref(),
            good.as_os_str(),
            path.as_os_str(),
        ];
        let out = nsys_lens(&a);
        assert_one_line_error(&a, &out, EXIT_USAGE, Some(needle));
    }
    let a: Vec<&OsStr> = vec![
        "ranks".as_ref(),
        "--summary".as_ref(),
        files[0].as_os_str(),
        files[1].as_os_str(),
    ];
    let out = nsys_lens(&a);
    assert_one_line_error(&a, &out, EXIT_USAGE, Some("one export"));
}

/// `examples/ranks_dask.py` over the TP=4 run split into four files (clocks off by 0, +137 µs,
/// −420 µs, +1 ms), on a LocalCluster of two worker processes: its merged JSON is `ranks
/// --json` over the four files in one process.
#[test]
fn the_dask_example_on_a_local_cluster_gives_the_one_process_answer() {
    let python = common::python_with("dask.distributed");
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, files) = split(
        dir.path(),
        "tp4-straggler",
        7,
        &[0, 137_000, -420_000, 1_000_000],
    );
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ranks_dask.py");
    let merged = dir.path().join("merged.json");
    let out = Command::new(&python)
        .arg(&example)
        .args(&files)
        .args([
            "--workers",
            "2",
            "--nsys-lens",
            env!("CARGO_BIN_EXE_nsys-lens"),
            "-o",
        ])
        .arg(&merged)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{} {}: {:?}\n{}",
        python.display(),
        example.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = std::fs::read(&merged).expect("merged JSON");
    assert_same("ranks_dask.py, tp4 per rank", &one_shot(&files), &merged);
}
