//! `nsys-lens ranks`: the generated TP=2 run with a planted straggler as one export and as one
//! file per rank with planted clock errors (every figure the one-file answer, the offsets
//! within 5 µs of the errors); the real `mfu_2gpu_before` (two ranks in one export) against
//! plain SQL over its NCCL kernels, its late rank's cause against SQL over its GPU work and the
//! idle attribution's SQL oracle (`tests/reference/idle_attribution_oracle.py`) swept over the
//! same spans; ranks named by NCCL's payloads and by file names; each
//! rank's GPU idle share over its file's window equal to plain SQL over its device's work, and
//! its verdict its file's, worded over its own device.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use common::{describe, nsys_lens, public_trace, rank_file, whole_rank_file, writable_copy};
use nsys_lens::synth::{self, GenOptions};

/// `nsys-lens ranks PATHS… --json`.
fn ranks(paths: &[&Path]) -> Value {
    let mut a: Vec<&OsStr> = vec![OsStr::new("ranks")];
    a.extend(paths.iter().map(|p| p.as_os_str()));
    a.push(OsStr::new("--json"));
    let out = nsys_lens(&a);
    assert!(out.status.success(), "{}", describe(&a, &out));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The generated TP=2 straggler run in one export.
fn tp2(dir: &Path) -> PathBuf {
    let one = dir.join("tp2.sqlite");
    synth::generate("tp2-straggler", &one, &GenOptions { scale: 1, seed: 42 }).expect("gen");
    one
}

/// The figures that must not depend on how the ranks were captured: every rank's but its file,
/// its name and what is measured over its file's window (its file's bound, its GPU's idle
/// share and its verdict), and every collective's but the late kernel's start in its own file.
fn figures(v: &Value) -> Value {
    let mut v = v.clone();
    for r in v["ranks"].as_array_mut().into_iter().flatten() {
        let by_file = ["bound", "gpu_idle_ratio", "verdict"];
        for k in ["file", "rank", "rank_number", "nranks", "named_by"]
            .into_iter()
            .chain(by_file)
        {
            r.as_object_mut().map(|o| o.remove(k));
        }
    }
    for w in v["collectives"]["worst"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        w.as_object_mut().map(|o| o.remove("last_start_ns"));
    }
    serde_json::json!({
        "ranks": v["ranks"],
        "collectives": v["collectives"],
        "straggler": v["straggler"],
    })
}

#[test]
fn per_rank_files_with_planted_clock_errors_give_the_one_file_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = tp2(dir.path());
    let whole = ranks(&[&one]);
    // The one-file answer: rank 1 (device 1) last at 90 % of 132 all-reduces.
    assert_eq!(whole["collectives"]["count"], 132, "{whole}");
    assert_eq!(whole["straggler"], 1);
    assert_eq!(whole["ranks"][1]["device"], 1);
    assert!(whole["ranks"][1]["last_share"].as_f64().unwrap() > 0.85);
    // Within one export: one clock, nothing corrected.
    assert_eq!(whole["clock"]["offset_ns"], serde_json::json!([0]));
    assert_eq!(whole["clock"]["correction_ns"], serde_json::json!([0]));
    assert!(
        whole["clock"]["method"]
            .as_str()
            .unwrap()
            .starts_with("one export"),
        "{whole}"
    );
    let r0 = rank_file(&one, dir.path(), 0, 0, "tp2_rank0.sqlite");
    for shift in [137_000, -420_000, 1_000_000, -1_000_000] {
        let r1 = rank_file(
            &one,
            dir.path(),
            1,
            shift,
            &format!("tp2_rank1_{shift}.sqlite"),
        );
        let split = ranks(&[&r0, &r1]);
        assert_eq!(
            figures(&split),
            figures(&whole),
            "clock off by {shift} ns:\n{}",
            common::json_diff(&figures(&split), &figures(&whole))
        );
        let clock = &split["clock"];
        let offset = clock["offset_ns"][1].as_i64().unwrap();
        assert!(
            (offset + shift).abs() <= 5_000,
            "planted {shift}, found {offset}: {clock}"
        );
        assert_eq!(clock["offset_ns"][0], 0);
        assert_eq!(clock["session_start_ns"], serde_json::json!([0, 0]));
        assert_eq!(clock["matched"][1], 132);
        // The files name their ranks.
        let names: Vec<(&str, &str)> = split["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["rank"].as_str().unwrap(), r["named_by"].as_str().unwrap()))
            .collect();
        assert_eq!(names, [("rank 0", "file-name"), ("rank 1", "file-name")]);
        // The late kernel's start is given in its own file's clock.
        let w = &split["collectives"]["worst"][0];
        let w1 = &whole["collectives"]["worst"][0];
        if w["last_rank"] == 1 {
            assert_eq!(
                w["last_start_ns"].as_i64().unwrap(),
                w1["last_start_ns"].as_i64().unwrap() + shift
            );
        }
    }
}

#[test]
fn tp4_as_four_files_with_four_clock_errors_gives_the_one_file_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("tp4.sqlite");
    let answers =
        synth::generate("tp4-straggler", &one, &GenOptions { scale: 1, seed: 7 }).expect("gen");
    let whole = ranks(&[&one]);
    // The generator's answer: rank 1 (device 1) last at 44 of 48 all-reduces.
    let planted = &answers["stragglers"];
    assert_eq!(
        whole["collectives"]["count"], planted["collectives"],
        "{whole}"
    );
    assert_eq!(whole["ranks"].as_array().map(Vec::len), Some(4));
    let straggler = whole["straggler"].as_u64().expect("a straggler") as usize;
    assert_eq!(
        whole["ranks"][straggler]["device"],
        planted["straggler_device"]
    );
    assert_eq!(
        whole["ranks"][straggler]["last_share"],
        planted["straggler_share"]
    );
    let mean = whole["ranks"][straggler]["mean_lateness_us"]
        .as_f64()
        .unwrap();
    assert!((mean - planted["mean_lateness_us"].as_f64().unwrap()).abs() < 1e-9);
    let shifts = [0, 137_000, -420_000, 1_000_000];
    let files: Vec<PathBuf> = shifts
        .iter()
        .enumerate()
        .map(|(d, &shift)| {
            rank_file(
                &one,
                dir.path(),
                d as i64,
                shift,
                &format!("tp4_r{d}.sqlite"),
            )
        })
        .collect();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let split = ranks(&paths);
    assert_eq!(
        figures(&split),
        figures(&whole),
        "{}",
        common::json_diff(&figures(&split), &figures(&whole))
    );
    for (i, shift) in shifts.iter().enumerate() {
        let offset = split["clock"]["offset_ns"][i].as_i64().unwrap();
        assert!(
            (offset + shift).abs() <= 5_000,
            "file {i}: planted {shift}, found {offset}"
        );
    }
    let names: Vec<&str> = split["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rank 0", "rank 1", "rank 2", "rank 3"]);
    // Each rank's GPU idle is over its own file's window: plain SQL over that file.
    for (i, file) in files.iter().enumerate() {
        let idle = idle_by_sql(file);
        let got = &split["ranks"][i];
        let device = got["device"].as_i64().unwrap();
        assert_close(got["gpu_idle_ratio"].as_f64().unwrap(), idle[&device]);
    }
    let idle = idle_by_sql(&one);
    for r in whole["ranks"].as_array().unwrap() {
        let device = r["device"].as_i64().unwrap();
        assert_close(r["gpu_idle_ratio"].as_f64().unwrap(), idle[&device]);
    }
}

/// Per device of the export at `path`, by plain SQL over its kernels, copies, memsets and graph
/// replays: 1 − the union of its work over the window from the first operation's start to the
/// last one's end (every device's).
fn idle_by_sql(path: &Path) -> BTreeMap<i64, f64> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let (rows, (first, last)) = common::gpu_work_rows(&conn, "");
    let mut by: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for (d, s, e) in rows {
        by.entry(d).or_default().push((s, e));
    }
    by.into_iter()
        .map(|(d, work)| {
            let busy = covered(&work, &[(first, last)]);
            (d, 1.0 - busy as f64 / (last - first) as f64)
        })
        .collect()
}

/// Asserts two shares agree but for float rounding.
fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
}

/// NCCL's kernels of `mfu_2gpu_before` by device (start, end), in start order, read by SQL.
fn nccl_kernels(path: &Path) -> BTreeMap<i64, Vec<(i64, i64)>> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut stmt = conn
        .prepare(
            "SELECT k.deviceId, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds s ON s.id = k.shortName
             WHERE s.value LIKE 'nccl%' ORDER BY k.start, k.rowid",
        )
        .expect("sql");
    let mut by: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows");
    for row in rows {
        let (d, s, e): (i64, i64, i64) = row.expect("row");
        by.entry(d).or_default().push((s, e));
    }
    by
}

#[test]
fn mfu_2gpu_before_equals_plain_sql_over_its_nccl_kernels() {
    let path = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let v = ranks(&[&path]);
    let by = nccl_kernels(&path);
    let devs: Vec<&Vec<(i64, i64)>> = by.values().collect();
    assert_eq!(devs.len(), 2, "two ranks");
    let n = devs.iter().map(|d| d.len()).min().unwrap();
    assert_eq!(n, 33);
    let us = |ns: i64| ns as f64 / 1000.0;
    // Per rank: last, lateness sum and worst, waiting, transferring.
    let mut last = [0u64; 2];
    let mut late = [0i64; 2];
    let mut worst = [0i64; 2];
    let mut waiting = [0i64; 2];
    let mut transfer_sum = [0i64; 2];
    let mut skews = Vec::new();
    for c in 0..n {
        let ks: Vec<(i64, i64)> = devs.iter().map(|d| d[c]).collect();
        let early = ks.iter().map(|k| k.0).min().unwrap();
        let lateness: i64 = ks.iter().map(|k| k.0).max().unwrap();
        let who = ks.iter().position(|k| k.0 == lateness).unwrap();
        let transfer = ks.iter().map(|k| k.1 - k.0).min().unwrap();
        for (r, k) in ks.iter().enumerate() {
            waiting[r] += k.1 - k.0 - transfer;
            transfer_sum[r] += transfer;
        }
        last[who] += 1;
        late[who] += lateness - early;
        worst[who] = worst[who].max(lateness - early);
        skews.push(lateness - early);
    }
    assert_eq!(v["collectives"]["count"], n as u64);
    for r in 0..2 {
        let got = &v["ranks"][r];
        assert_eq!(got["device"], r as u64, "{got}");
        assert_eq!(got["named_by"], "process-device");
        assert_eq!(got["last"], last[r], "{got}");
        assert_eq!(got["collectives"], n as u64);
        assert_eq!(
            got["last_share"].as_f64().unwrap(),
            last[r] as f64 / n as f64
        );
        assert_eq!(
            got["mean_lateness_us"].as_f64().unwrap(),
            us(late[r]) / last[r] as f64
        );
        assert_eq!(got["worst_lateness_us"].as_f64().unwrap(), us(worst[r]));
        assert_eq!(got["waiting_us"].as_f64().unwrap(), us(waiting[r]));
        assert_eq!(
            got["transferring_us"].as_f64().unwrap(),
            us(transfer_sum[r])
        );
    }
    skews.sort_unstable();
    let skew = &v["collectives"]["skew_us"];
    assert_eq!(skew["max"].as_f64().unwrap(), us(*skews.last().unwrap()));
    assert_eq!(skew["median"].as_f64().unwrap(), us(skews[(n - 1) / 2]));
    assert_eq!(
        skew["mean"].as_f64().unwrap(),
        us(skews.iter().sum()) / n as f64
    );
    // The worst collective: the largest skew, its last rank as SQL finds it.
    let w = &v["collectives"]["worst"][0];
    assert_eq!(w["skew_us"].as_f64().unwrap(), us(*skews.last().unwrap()));
    // 3.3 ms apart at worst (the reference notes' figure), no rank last in > 80 %.
    assert!(skew["max"].as_f64().unwrap() > 3_000.0);
    assert!(v["straggler"].is_null(), "{v}");
    // One export, one clock: no correction.
    assert_eq!(v["clock"]["offset_ns"], serde_json::json!([0]));
    assert_eq!(v["clock"]["matched"], serde_json::json!([0]));
}

/// NCCL's `NcclNvtxParamsCommInitRank` payload behind the export's 32-byte header.
fn payload(comm: u64, nranks: i32, rank: i32, dev: i32) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [1u64, 16777218, 24, 32] {
        b.extend(v.to_le_bytes());
    }
    b.extend(comm.to_le_bytes());
    for v in [nranks, rank, dev, 0] {
        b.extend(v.to_le_bytes());
    }
    b
}

#[test]
fn ranks_are_named_by_nccls_payloads_when_the_export_has_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = tp2(dir.path());
    let path = writable_copy(&one, &dir.path().join("node_rank7.sqlite"));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(
        "CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER, schemaId INTEGER, idx INTEGER,
             flags INTEGER, type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER,
             offset INTEGER);
         INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES
             (1, 16777218, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL),
             (1, 16777218, 1, NULL, 5, 'No. of ranks', NULL, NULL, 8),
             (1, 16777218, 2, NULL, 5, 'Rank', NULL, NULL, 12),
             (1, 16777218, 3, NULL, 5, 'CUDA device', NULL, NULL, 16);",
    )
    .expect("schema");
    // Each process's thread: its ncclCommInitRank range, ranks given the other way round from
    // the devices (NCCL's word wins over any guess).
    let tids: Vec<i64> = {
        let mut s = conn
            .prepare("SELECT DISTINCT globalTid FROM NVTX_EVENTS ORDER BY globalTid")
            .expect("sql");
        s.query_map([], |r| r.get(0))
            .expect("rows")
            .map(|r| r.expect("tid"))
            .collect()
    };
    assert_eq!(tids.len(), 2);
    for (tid, rank) in tids.iter().zip([1, 0]) {
        conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, binaryData)
             VALUES (1000, 2000, 59, 'ncclCommInitRank', ?1, 1, ?2)",
            rusqlite::params![tid, payload(0xfeed, 2, rank, 0)],
        )
        .expect("insert");
    }
    drop(conn);
    let v = ranks(&[&path]);
    let names: Vec<(&str, &str, u64)> = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rank"].as_str().unwrap(),
                r["named_by"].as_str().unwrap(),
                r["nranks"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(names, [("rank 1", "nccl", 2), ("rank 0", "nccl", 2)]);
    // The same export without the payloads: two ranks in one file (its name's rank 7 names
    // neither), so process and device.
    let v = ranks(&[&one]);
    assert_eq!(v["ranks"][0]["named_by"], "process-device");
    assert_eq!(v["ranks"][0]["rank"], "pid 50001 GPU 0");
}

#[test]
fn an_export_without_collectives_has_no_ranks_and_says_why() {
    let path = public_trace("brycelelbach_nsightful__power_iteration__baseline.sqlite");
    let v = ranks(&[&path]);
    assert_eq!(v["ranks"], serde_json::json!([]));
    assert_eq!(v["collectives"]["count"], 0);
    assert!(v["notes"][0].as_str().unwrap().contains("0 ranks"), "{v}");
    // And the text says it too.
    let out = nsys_lens([OsStr::new("ranks"), path.as_os_str()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Straggler: none"));
}

/// The cause's figures that do not depend on how the ranks were captured (all but the name and
/// the sentence naming it).
fn cause_figures(v: &Value) -> Value {
    let mut c = v["cause"].clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("name");
        o.remove("sentence");
    }
    c
}

/// The planted cause, found with its planted size: the straggler's host time in the planted
/// NVTX range per late collective beyond the other ranks' (every rank runs it, 5 µs, the
/// straggler 30–80 µs longer). Exact (1e-9 µs: float rounding only), not within a tolerance:
/// the range lies whole inside each span (it starts after the layer's kernels are launched, long
/// after the previous all-reduce ended), no call or other range nests in it, and the means are
/// taken over the same spans as the generator's (every late collective but the first, which has
/// no collective before it).
fn assert_planted_cause(v: &Value, answers: &Value) {
    let c = &v["cause"];
    let planted = &answers["straggler_cause"];
    let s = v["straggler"].as_u64().expect("a straggler") as usize;
    assert_eq!(c["rank"], s as u64, "{c}");
    assert_eq!(v["ranks"][s]["device"], planted["rank_device"], "{c}");
    assert_eq!(c["flagged"], true);
    assert_eq!(c["late"], v["ranks"][s]["last"]);
    assert_eq!(c["mean_lateness_us"], v["ranks"][s]["mean_lateness_us"]);
    assert_eq!(c["spans"], planted["collectives"], "{c}");
    let op = &c["ops"][0];
    assert_eq!(op["op"], planted["op"], "{c}");
    for (found, want) in [
        ("straggler_us", "straggler_us"),
        ("others_us", "others_us"),
        ("excess_us", "mean_us"),
    ] {
        let (got, want) = (op[found].as_f64().unwrap(), planted[want].as_f64().unwrap());
        assert!(
            (got - want).abs() < 1e-9,
            "{found}: planted {want} µs, found {op}"
        );
    }
    // The host causes add up to the spans; their differences to the span's.
    let host: Vec<&Value> = c["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == "host")
        .collect();
    let sum = |k: &str| host.iter().map(|r| r[k].as_f64().unwrap()).sum::<f64>();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
    assert!(
        close(sum("straggler_us"), c["span_us"].as_f64().unwrap()),
        "{c}"
    );
    assert!(
        close(sum("others_us"), c["others_span_us"].as_f64().unwrap()),
        "{c}"
    );
    // The largest excess: the host's own time in the planted range, which the sentence names.
    assert_eq!(c["causes"][0]["side"], "host");
    assert_eq!(c["causes"][0]["cause"], "nvtx");
    assert_eq!(c["causes"][0]["label"], planted["op"]);
    let sentence = c["sentence"].as_str().unwrap();
    let op_name = planted["op"].as_str().unwrap();
    assert!(
        sentence.contains(&format!("more in `{op_name}`")),
        "{sentence}"
    );
}

#[test]
fn the_straggler_s_planted_host_cause_is_found_in_one_file_and_in_per_rank_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    // tp2: rank 1 late by 30–80 µs in `_prepare_inputs` at 9 of 10 all-reduces; tp4 the same
    // on four ranks. Per-rank files with their clocks off by up to ±1 ms.
    let runs: [(&str, u64, usize, &[i64]); 2] = [
        ("tp2-straggler", 42, 2, &[0, -420_000]),
        ("tp4-straggler", 7, 4, &[0, 137_000, -420_000, 1_000_000]),
    ];
    for (scenario, seed, n, shifts) in runs {
        let one = dir.path().join(format!("{scenario}.sqlite"));
        synth::generate(scenario, &one, &GenOptions { scale: 1, seed }).expect("gen");
        let answers: Value = serde_json::from_str(
            &std::fs::read_to_string(one.with_extension("answers.json")).expect("answers"),
        )
        .expect("json");
        let whole = ranks(&[&one]);
        assert_planted_cause(&whole, &answers);
        let files: Vec<PathBuf> = (0..n)
            .map(|d| {
                let name = format!("{scenario}_r{d}.sqlite");
                whole_rank_file(&one, dir.path(), d as i64, shifts[d], &name)
            })
            .collect();
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let split = ranks(&paths);
        assert_eq!(
            cause_figures(&split),
            cause_figures(&whole),
            "{scenario} split:\n{}",
            common::json_diff(&cause_figures(&split), &cause_figures(&whole))
        );
        assert_planted_cause(&split, &answers);
        // The same sentence, naming the rank by its file.
        let name = |v: &Value| v["cause"]["name"].as_str().unwrap().to_string();
        assert_eq!(name(&split), "rank 1");
        assert_eq!(
            split["cause"]["sentence"].as_str().unwrap(),
            whole["cause"]["sentence"]
                .as_str()
                .unwrap()
                .replacen(&name(&whole), "rank 1", 1)
        );
    }
}

/// Per device of `mfu_2gpu_before`, read by SQL: its non-NCCL kernels and its copies and
/// memsets, each as `(start, end)` in start order.
fn gpu_work(path: &Path) -> BTreeMap<(i64, &'static str), Vec<(i64, i64)>> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut by: BTreeMap<(i64, &'static str), Vec<(i64, i64)>> = BTreeMap::new();
    let queries = [
        (
            "compute",
            "SELECT k.deviceId, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds s ON s.id = k.shortName WHERE s.value NOT LIKE 'nccl%'",
        ),
        (
            "copies",
            "SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY
             UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET",
        ),
    ];
    for (what, sql) in queries {
        let mut stmt = conn.prepare(sql).expect("sql");
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("rows");
        for row in rows {
            let (d, s, e): (i64, i64, i64) = row.expect("row");
            by.entry((d, what)).or_default().push((s, e));
        }
    }
    by.values_mut().for_each(|v| v.sort_unstable());
    by
}

/// The time the union of `work` (sorted by start) covers inside `spans` (sorted, disjoint).
fn covered(work: &[(i64, i64)], spans: &[(i64, i64)]) -> i64 {
    let mut union: Vec<(i64, i64)> = Vec::new();
    for &(s, e) in work {
        match union.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => union.push((s, e)),
        }
    }
    let mut ns = 0;
    for &(a, b) in spans {
        for &(s, e) in &union {
            ns += (b.min(e) - a.max(s)).max(0);
        }
    }
    ns
}

#[test]
fn mfu_2gpu_before_s_late_rank_cause_equals_plain_sql() {
    // No rank is flagged there (GPU 1 is last at 22 of 33, 66.7 %), but it is the rank last
    // most often: its cause is measured, over the 22 collectives it arrived last in.
    let path = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let v = ranks(&[&path]);
    let c = &v["cause"];
    let by = nccl_kernels(&path);
    let devs: Vec<&Vec<(i64, i64)>> = by.values().collect();
    // Late: GPU 1 starts after GPU 0 (a tie is GPU 0's); spans from each rank's previous
    // collective's end to its start at those collectives (the first has none before it).
    let mut spans: [Vec<(i64, i64)>; 2] = [Vec::new(), Vec::new()];
    let mut late = 0;
    for i in 0..33 {
        if devs[1][i].0 <= devs[0][i].0 {
            continue;
        }
        late += 1;
        if i == 0 {
            continue;
        }
        for d in 0..2 {
            spans[d].push((devs[d][i - 1].1, devs[d][i].0));
        }
    }
    assert_eq!(late, 22);
    assert_eq!(v["straggler"], Value::Null);
    assert_eq!(c["rank"], 1, "{c}");
    assert_eq!(c["flagged"], false);
    assert_eq!(c["late"], late);
    let n = spans[1].len();
    assert_eq!(c["spans"], n as u64);
    assert_eq!(c["other_spans"], spans[0].len() as u64);
    let per = |ns: i64, n: usize| ns as f64 / 1000.0 / n as f64;
    let span = |d: usize| spans[d].iter().map(|s| s.1 - s.0).sum::<i64>();
    assert_eq!(c["span_us"].as_f64().unwrap(), per(span(1), n));
    assert_eq!(
        c["others_span_us"].as_f64().unwrap(),
        per(span(0), spans[0].len())
    );
    // The GPU causes: each device's compute kernels and copies inside its spans.
    let work = gpu_work(&path);
    for what in ["compute", "copies"] {
        let row = c["causes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["side"] == "gpu" && r["cause"] == what)
            .unwrap_or_else(|| panic!("{what}: {c}"));
        let ns = |d: i64| covered(&work[&(d, what)], &spans[d as usize]);
        assert_eq!(
            row["straggler_us"].as_f64().unwrap(),
            per(ns(1), n),
            "{row}"
        );
        assert_eq!(
            row["others_us"].as_f64().unwrap(),
            per(ns(0), spans[0].len()),
            "{row}"
        );
    }
    // The host causes add up to the span.
    let host: f64 = c["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == "host")
        .map(|r| r["straggler_us"].as_f64().unwrap())
        .sum();
    assert!((host - c["span_us"].as_f64().unwrap()).abs() < 1e-6, "{c}");
    // The host causes, kind by kind and the straggler's largest label of each: the SQL oracle
    // of the drill-down's idle attribution swept over the same spans of each rank.
    let by_device: BTreeMap<i64, Vec<(i64, i64)>> =
        [(0, spans[0].clone()), (1, spans[1].clone())].into();
    let oracle = common::idle_attribution_oracle(&path, Some(&by_device));
    let held = |d: usize, kind: &str| oracle[d.to_string()]["causes"][kind].clone();
    let ns = |d: usize, kind: &str| held(d, kind)[0].as_i64().unwrap_or(0);
    let rows: Vec<&Value> = c["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == "host")
        .collect();
    for row in &rows {
        let kind = row["cause"].as_str().unwrap();
        assert_close(row["straggler_us"].as_f64().unwrap(), per(ns(1, kind), n));
        assert_close(
            row["others_us"].as_f64().unwrap(),
            per(ns(0, kind), spans[0].len()),
        );
        // Its label: the one the straggler spends most more time in per span than the other
        // rank (ties: the first name), else its largest.
        let labels = |d: usize| oracle[d.to_string()]["label_ns"][kind].clone();
        let (mine, theirs) = (labels(1), labels(0));
        let excess = mine
            .as_object()
            .into_iter()
            .flatten()
            .map(|(l, ns)| {
                let other = theirs[l].as_i64().unwrap_or(0);
                let diff = per(ns.as_i64().unwrap(), n) - per(other, spans[0].len());
                (l.clone(), diff)
            })
            .filter(|(_, d)| *d > 0.0)
            .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
            .map(|(l, _)| Value::from(l));
        if let Some(label) = excess.or_else(|| (ns(1, kind) > 0).then(|| held(1, kind)[1].clone()))
        {
            assert_eq!(row["label"], label, "{row}");
        }
    }
    // Every kind the oracle finds on either rank is a row.
    for d in 0..2 {
        let kinds = oracle[d.to_string()]["causes"].as_object().unwrap();
        for kind in kinds.keys() {
            assert!(
                rows.iter().any(|r| r["cause"] == kind.as_str()),
                "{kind}: {c}"
            );
        }
    }
    assert!(rows.len() >= 5, "{c}");
}

#[test]
fn each_rank_s_gpu_idle_and_verdict_on_mfu_2gpu_before_equal_plain_sql() {
    let path = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let v = ranks(&[&path]);
    let idle = idle_by_sql(&path);
    let conn = rusqlite::Connection::open(&path).expect("open");
    let (_, hull) = common::gpu_work_rows(&conn, "");
    let work = gpu_work(&path);
    // detect's verdict is per file: the ranks' verdicts say it, with their own GPU's shares.
    let out = nsys_lens([OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")]);
    let detect: Value = serde_json::from_slice(&out.stdout).expect("detect JSON");
    for r in v["ranks"].as_array().unwrap() {
        let device = r["device"].as_i64().unwrap();
        let share = idle[&device];
        assert_close(r["gpu_idle_ratio"].as_f64().unwrap(), share);
        // Compute (kernels but NCCL's) holding half the busy time makes it compute-bound.
        let compute = covered(&work[&(device, "compute")], &[hull]) as f64;
        let busy = (1.0 - share) * (hull.1 - hull.0) as f64;
        let lead = match (detect["verdict"].as_str(), compute / busy >= 0.5) {
            (Some("YES"), _) => "host-bound — the host-overhead verdict is YES",
            (_, true) => "GPU-compute-bound — kernels and graph replays fill most",
            (_, false) => "",
        };
        let verdict = r["verdict"].as_str().unwrap();
        assert!(!lead.is_empty() && verdict.starts_with(lead), "{verdict}");
        let idle_said = format!("idle {:.1}%", share * 100.0);
        assert!(verdict.ends_with(&idle_said), "{verdict} vs {idle_said}");
    }
    // The text shows each rank's idle share and verdict.
    let out = nsys_lens([OsStr::new("ranks"), path.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Verdict per rank"), "{text}");
    for r in v["ranks"].as_array().unwrap() {
        let line = format!(
            "  {}: {}",
            r["rank"].as_str().unwrap(),
            r["verdict"].as_str().unwrap()
        );
        assert!(text.contains(&line), "{line}");
    }
}

#[test]
fn each_rank_s_verdict_in_a_host_bound_run_is_its_file_s_planted_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = tp2(dir.path());
    let answers: Value = serde_json::from_str(
        &std::fs::read_to_string(one.with_extension("answers.json")).expect("answers"),
    )
    .expect("json");
    let planted = &answers["profiles"]["standard"];
    assert_eq!(planted["verdict"], "YES");
    let v = ranks(&[&one]);
    let idle = idle_by_sql(&one);
    for r in v["ranks"].as_array().unwrap() {
        let verdict = r["verdict"].as_str().unwrap();
        let share = idle[&r["device"].as_i64().unwrap()];
        assert!(
            verdict.starts_with(
                "host-bound — the host-overhead verdict is YES: the GPU waits on the host;"
            ),
            "{verdict}"
        );
        assert!(
            verdict.ends_with(&format!("idle {:.1}%", share * 100.0)),
            "{verdict}"
        );
        assert_close(r["gpu_idle_ratio"].as_f64().unwrap(), share);
    }
}

/// The answer in two reads of each file (`ranks::ranks`, as the page runs it: the ranks'
/// kernels first, then only the spans the cause counts) equals the reduce over summaries that
/// measured every span (`ranks --summary` then `--merge`, the CLI's path), byte for byte: on the
/// real `mfu_2gpu_before` and on the TP=4 run written as four rank files with clock errors.
#[test]
fn two_reads_give_the_answer_of_summaries_with_every_span() {
    use nsys_lens::trace::{FileRows, LoadOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("tp4.sqlite");
    synth::generate("tp4-straggler", &one, &GenOptions { scale: 1, seed: 7 }).expect("gen");
    let shifts = [0, 137_000, -420_000, 1_000_000];
    let split: Vec<PathBuf> = (0..4)
        .map(|d| {
            whole_rank_file(
                &one,
                dir.path(),
                d,
                shifts[d as usize],
                &format!("r{d}.sqlite"),
            )
        })
        .collect();
    let runs: Vec<Vec<PathBuf>> = vec![
        vec![public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite")],
        split,
    ];
    for paths in runs {
        let conns: Vec<rusqlite::Connection> = paths
            .iter()
            .map(|p| nsys_lens::trace::open_path(p).expect("open"))
            .collect();
        let rows: Vec<FileRows<'_>> = conns
            .iter()
            .zip(&paths)
            .map(|(c, p)| {
                FileRows::open(
                    c,
                    &p.display().to_string(),
                    LoadOptions::page(),
                    &mut |_| true,
                )
                .expect("rows")
            })
            .collect();
        let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let inputs = common::drill_inputs(&rows, &labels);
        let summaries: Vec<_> = inputs
            .iter()
            .map(|i| nsys_lens::ranks::summarize_input(i).expect("summary"))
            .collect();
        let merged = serde_json::to_string(&nsys_lens::ranks::merge(&summaries).expect("merge"))
            .expect("json");
        let two =
            serde_json::to_string(&nsys_lens::ranks::ranks(&inputs).expect("ranks")).expect("json");
        let v: Value = serde_json::from_str(&two).expect("json");
        assert!(
            v["cause"]["spans"].as_u64().unwrap_or(0) > 0,
            "{paths:?}: a cause measured"
        );
        assert_eq!(two, merged, "{paths:?}");
    }
}
