//! `nsys-lens ranks`: the generated TP=2 run with a planted straggler as one export and as one
//! file per rank with planted clock errors (every figure the one-file answer, the offsets
//! within 5 µs of the errors); the real `mfu_2gpu_before` (two ranks in one export) against
//! plain SQL over its NCCL kernels; ranks named by NCCL's payloads and by file names.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

use common::{describe, nsys_lens, public_trace, rank_file, writable_copy};
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

/// The figures that must not depend on how the ranks were captured: every rank's but its file
/// and name, and every collective's but the late kernel's start in its own file.
fn figures(v: &Value) -> Value {
    let mut v = v.clone();
    for r in v["ranks"].as_array_mut().into_iter().flatten() {
        for k in ["file", "rank", "rank_number", "nranks", "named_by", "bound"] {
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
