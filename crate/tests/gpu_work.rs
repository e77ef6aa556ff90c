//! Busy is what the GPU did: on every public export with GPU work, `detect --json`'s busy and
//! idle time per device equal plain SQL over the kernel, memcpy, memset and graph-trace tables;
//! the copy-bound exports read NO, transfer-bound, with a finding naming the copies and none
//! blaming a host call for time the GPU spent copying; the generated graph scenarios agree
//! between graph-level and node-level tracing.

mod common;

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::Value;

use common::{describe, gpu_work_sql, nsys_lens, public_exports, public_trace};

/// Per device, the union of `[start, end)` of every GPU operation, from SQL rows merged here.
fn busy_by_device(conn: &Connection) -> (BTreeMap<i64, i64>, (i64, i64)) {
    let sql = format!(
        "SELECT deviceId, start, \"end\" FROM ({}) ORDER BY deviceId, start",
        gpu_work_sql(conn)
    );
    let mut stmt = conn.prepare(&sql).expect("GPU work");
    let rows: Vec<(i64, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let hull = (
        rows.iter().map(|r| r.1).min().unwrap_or(0),
        rows.iter().map(|r| r.2).max().unwrap_or(0),
    );
    let mut busy: BTreeMap<i64, i64> = BTreeMap::new();
    let mut open: Option<(i64, i64, i64)> = None;
    for (d, s, e) in rows {
        open = match open {
            Some((od, os, oe)) if od == d && s <= oe => Some((od, os, oe.max(e))),
            Some((od, os, oe)) => {
                *busy.entry(od).or_default() += oe - os;
                Some((d, s, e))
            }
            None => Some((d, s, e)),
        };
    }
    if let Some((d, s, e)) = open {
        *busy.entry(d).or_default() += e - s;
    }
    (busy, hull)
}

fn detect_json(path: &std::path::Path, profile: &str) -> Option<Value> {
    let args = [
        "detect".as_ref(),
        "--json".as_ref(),
        "--profile".as_ref(),
        profile.as_ref(),
        path.as_os_str(),
    ];
    let out = nsys_lens(args);
    if !out.status.success() {
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", describe(&args, &out));
    }))
}

#[test]
fn busy_and_idle_per_device_equal_sql_over_every_gpu_operation_on_every_public_export() {
    let mut checked = 0;
    for path in public_exports() {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
        let (busy, (first, last)) = busy_by_device(&conn);
        let Some(report) = detect_json(&path, "standard") else {
            assert!(busy.is_empty(), "{name}: GPU work but no verdict");
            continue;
        };
        let window = last - first;
        assert_eq!(report["window"]["start_ns"], first, "{name}: window start");
        assert_eq!(report["window"]["end_ns"], last, "{name}: window end");
        let bound = &report["bound"];
        let per_device = bound["per_device"].as_array().expect("per device");
        assert_eq!(per_device.len(), busy.len(), "{name}: devices");
        for d in per_device {
            let device = d["device"].as_i64().expect("device");
            let want = busy[&device];
            assert_eq!(d["busy_ns"], want, "{name} device {device}: busy");
            let split = ["compute_ns", "communication_ns", "transfer_ns"]
                .map(|k| d[k].as_i64().expect("ns"))
                .iter()
                .sum::<i64>();
            assert_eq!(
                split, want,
                "{name} device {device}: the split sums to busy"
            );
        }
        for d in report["per_device"].as_array().expect("per device") {
            let device = d["device"].as_i64().expect("device");
            let idle = 1.0 - busy[&device] as f64 / window as f64;
            let got = d["gpu_idle_ratio"].as_f64().expect("idle ratio");
            assert!(
                (got - idle).abs() < 1e-9,
                "{name} device {device}: idle {got} vs {idle}"
            );
        }
        let devices = busy.len() as i64;
        assert_eq!(bound["window_ns"], window * devices, "{name}: device time");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} public exports with GPU work");
}

/// The reference profile keeps the kernel table alone, and says nothing of a bound.
#[test]
fn the_trtllm_skill_profile_counts_kernel_rows_only() {
    let path = public_trace("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    let report = detect_json(&path, "trtllm-skill").expect("verdict");
    assert!(report["bound"].is_null());
    let conn = Connection::open(&path).expect("open");
    let (first, last): (i64, i64) = conn
        .query_row(
            "SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("hull");
    assert_eq!(report["window"]["start_ns"], first);
    assert_eq!(report["window"]["end_ns"], last);
    assert_eq!(
        report["verdict"], "YES",
        "kernel rows only: the copies read as idle"
    );
}

#[test]
fn copy_bound_public_exports_read_transfer_bound_with_a_finding_naming_the_copies() {
    for (name, direction) in [
        ("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite", "H2D"),
        ("Lianhang666_gpu4__report2.sqlite", "H2D"),
        ("RajaATAli_SC23-OpenMP__report3.sqlite", "H2D"),
    ] {
        let path = public_trace(name);
        let report = detect_json(&path, "standard").expect("verdict");
        assert_eq!(report["verdict"], "NO", "{name}");
        let bound = &report["bound"];
        assert_eq!(bound["kind"], "transfer-bound", "{name}");
        let transfer = bound["shares"]["transfer"].as_f64().expect("share");
        assert!(transfer > 0.5, "{name}: transfers {transfer}");
        assert_eq!(bound["copies"][0]["direction"], direction, "{name}");

        let dir = tempfile::tempdir().expect("tempdir");
        let args = [
            "report".as_ref(),
            "--out".as_ref(),
            dir.path().as_os_str(),
            path.as_os_str(),
        ];
        let out = nsys_lens(args);
        assert!(out.status.success(), "{}", describe(&args, &out));
        let doc: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("report.json")).expect("report.json"),
        )
        .expect("json");
        let findings = doc["findings"].as_array().expect("findings");
        let first = &findings[0];
        assert_eq!(first["source"], "transfers", "{name}: the first finding");
        let evidence = first["evidence"].as_str().expect("evidence");
        assert!(
            evidence.contains(direction) && evidence.contains("GB/s"),
            "{name}: {evidence}"
        );
        // A host call is a cause of idle time only: no idle finding claims more than the
        // device time the GPU ran nothing.
        let idle_us = bound["shares"]["idle"].as_f64().expect("idle")
            * bound["window_ns"].as_f64().expect("window")
            / 1e3;
        for f in findings.iter().filter(|f| f["source"] == "idle") {
            let claimed = f["impact_us"].as_f64().expect("impact");
            assert!(
                claimed <= idle_us * (1.0 + 1e-9),
                "{name}: '{}' claims {claimed} µs of {idle_us} µs idle",
                f["title"]
            );
        }
    }
}

/// The serving scenario captured at graph level (one graph-trace row per replay, no kernel rows
/// inside) and at node level (the kernels inside): the same busy time up to the gaps inside
/// the replays, the same verdict, and the replays counted as GPU work.
#[test]
fn graph_level_and_node_level_captures_of_one_run_agree() {
    let (_g, graph, answers_g) = common::generated("serving-graphs", 1, 42);
    let (_n, node, answers_n) = common::generated("serving-graphs-node", 1, 42);
    let g = detect_json(&graph, "standard").expect("graph level");
    let n = detect_json(&node, "standard").expect("node level");
    assert_eq!(g["verdict"], n["verdict"]);
    assert_eq!(g["window"], n["window"]);
    let inner = answers_g["graph_modes"]["inner_gap_ns"]
        .as_i64()
        .expect("inner gaps");
    assert_eq!(
        answers_n["graph_modes"]["inner_gap_ns"], inner,
        "one placement"
    );
    let busy = |r: &Value| r["bound"]["busy_ns"].as_i64().expect("busy");
    assert_eq!(
        busy(&g) - busy(&n),
        inner,
        "the gaps inside replays are busy at graph level"
    );
    let replays = answers_g["graph_modes"]["graph_replays"]
        .as_u64()
        .expect("replays");
    assert!(replays > 0);
    assert_eq!(g["bound"]["replays"], replays);
    assert_eq!(n["bound"]["replays"], 0);
}
