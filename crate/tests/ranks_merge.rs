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

use common::{
    EXIT_USAGE, assert_one_line_error, describe, nsys_lens, public_trace, whole_rank_file,
};
use nsys_lens::ranks::SUMMARY_VERSION;
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

/// The map (`ranks --summary P -o OUT/N.ranks.json` per file, in `out`: never beside an
/// input, which may be a shared export), then the reduce (`ranks --merge SUMMARIES… --json`);
/// also returns the summaries.
fn map_reduce(paths: &[PathBuf], out: &Path) -> (Vec<u8>, Vec<Value>) {
    let summaries: Vec<PathBuf> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = out.join(format!("{i}.ranks.json"));
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

/// Asserts the merged JSON is the one-shot JSON, byte for byte — why the straggler was late
/// (`cause`) included: the summaries carry what every span holds.
fn assert_same(what: &str, one: &[u8], merged: &[u8]) {
    let parse = |b: &[u8]| -> Value { serde_json::from_slice(b).expect("json") };
    assert!(
        one == merged,
        "{what}: the merged JSON differs from the one-shot:\n{}",
        common::json_diff(&parse(one), &parse(merged))
    );
}

/// `scenario` (seed `seed`) in one export, and split into one file per rank as its own node
/// captures it (its process's host rows and its device's GPU rows), the clock of file `d` off
/// by `shifts[d]`.
fn split(dir: &Path, scenario: &str, seed: u64, shifts: &[i64]) -> (PathBuf, Vec<PathBuf>) {
    let one = dir.join(format!("{scenario}.sqlite"));
    synth::generate(scenario, &one, &GenOptions { scale: 1, seed }).expect("gen");
    let files = shifts
        .iter()
        .enumerate()
        .map(|(d, &shift)| {
            let name = format!("{scenario}_{}_r{d}.sqlite", shifts[0]);
            whole_rank_file(&one, dir, d as i64, shift, &name)
        })
        .collect();
    (one, files)
}

/// Asserts `v`'s `cause` is the generator's planted one (`one`'s answers): the straggler's
/// host time in the planted NVTX op per late collective, its excess over the other ranks', the
/// spans it rests on and the straggler's mean lateness (1e-9 µs: float rounding only).
fn assert_planted_cause(what: &str, v: &Value, one: &Path) {
    let text = std::fs::read_to_string(one.with_extension("answers.json")).expect("answers");
    let answers: Value = serde_json::from_str(&text).expect("answers JSON");
    let (c, planted) = (&v["cause"], &answers["straggler_cause"]);
    let close = |got: &Value, want: &Value| {
        let (g, w) = (got.as_f64().expect("got"), want.as_f64().expect("want"));
        assert!((g - w).abs() < 1e-9, "{what}: {g} vs planted {w}: {c}");
    };
    assert_eq!(c["ops"][0]["op"], planted["op"], "{what}: {c}");
    close(&c["ops"][0]["straggler_us"], &planted["straggler_us"]);
    close(&c["ops"][0]["others_us"], &planted["others_us"]);
    close(&c["ops"][0]["excess_us"], &planted["mean_us"]);
    assert_eq!(c["spans"], planted["collectives"], "{what}");
    close(
        &c["mean_lateness_us"],
        &answers["stragglers"]["mean_lateness_us"],
    );
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

/// Asserts each rank of summary `s` holds one span per kernel, each with at most one entry per
/// (cause, label) pair of the rank: the size is bounded by collectives × pairs.
fn assert_spans_bounded(what: &str, s: &Value) {
    for r in s["ranks"].as_array().expect("ranks") {
        let (kernels, spans) = (&r["kernels"], r["spans"].as_array().expect("spans"));
        assert_eq!(
            kernels.as_array().map(Vec::len),
            Some(spans.len()),
            "{what}"
        );
        let pairs = r["causes"].as_array().expect("causes").len();
        for span in spans {
            let held = span[1].as_array().expect("host").len();
            assert!(held <= pairs, "{what}: {held} entries of {pairs} pairs");
        }
    }
}

#[test]
fn map_then_merge_writes_the_one_shot_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tp2, tp2_split) = split(dir.path(), "tp2-straggler", 42, &[0, 137_000]);
    let (_, tp2_split_back) = split(dir.path(), "tp2-straggler", 42, &[-420_000, 1_000_000]);
    let (tp4, tp4_split) = split(
        dir.path(),
        "tp4-straggler",
        7,
        &[0, 137_000, -420_000, 1_000_000],
    );
    let mfu = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    // Each run, and the export whose generator planted its straggler's cause.
    for (what, files, planted) in [
        ("tp2-straggler, one export", vec![tp2.clone()], Some(&tp2)),
        ("tp2-straggler per rank, +137 µs", tp2_split, Some(&tp2)),
        (
            "tp2-straggler per rank, −420 µs and +1 ms",
            tp2_split_back,
            Some(&tp2),
        ),
        (
            "tp4-straggler per rank, 0/+137/−420/+1000 µs",
            tp4_split.clone(),
            Some(&tp4),
        ),
        ("mfu_2gpu_before", vec![mfu], None),
    ] {
        let one = one_shot(&files);
        let maps = tempfile::tempdir().expect("tempdir");
        let (merged, summaries) = map_reduce(&files, maps.path());
        assert_same(what, &one, &merged);
        let v: Value = serde_json::from_slice(&merged).expect("json");
        assert!(v["cause"].is_object(), "{what}: no cause");
        if let Some(export) = planted {
            assert_planted_cause(what, &v, export);
        }
        // A summary holds each rank's collective kernels, no other.
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
            assert_eq!(s["summary_version"], SUMMARY_VERSION, "{what}");
            assert_spans_bounded(what, s);
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
    // A summary as version 1 wrote it: no spans, so no cause after a merge.
    let mut old = v.clone();
    old["summary_version"] = 1.into();
    for r in old["ranks"].as_array_mut().expect("ranks") {
        r.as_object_mut()
            .map(|o| (o.remove("causes"), o.remove("spans")));
    }
    let old = write("old.json", &old.to_string());
    v["summary_version"] = 99.into();
    let newer = write("newer.json", &v.to_string());
    let refused_old = format!(
        "a ranks summary of version 1, but this nsys-lens reads version {SUMMARY_VERSION}: write it again with `nsys-lens ranks --summary"
    );
    let report = write(
        "report.json",
        &String::from_utf8(one_shot(&files[..1])).expect("utf-8"),
    );
    for (path, needle) in [
        (&not_json, "not JSON"),
        (&old, refused_old.as_str()),
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
    let (one, files) = split(
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
    let v: Value = serde_json::from_slice(&merged).expect("json");
    assert_planted_cause("ranks_dask.py, tp4 per rank", &v, &one);
}
