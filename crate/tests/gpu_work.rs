//! Busy is what the GPU did: on every public export with GPU work, `detect --json`'s busy and
//! idle time per device equal plain SQL over the kernel, memcpy, memset and graph-trace tables;
//! the copy-bound exports read NO, transfer-bound, with a finding naming the copies and none
//! blaming a host call for time the GPU spent copying; the generated graph scenarios agree
//! between graph-level and node-level tracing.

use crate::common;

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde_json::Value;

use common::{describe, nsys_lens, public_exports, public_trace};

/// Per device, the union of `[start, end)` of every GPU operation, from SQL rows merged here.
fn busy_by_device(conn: &Connection) -> (BTreeMap<i64, i64>, (i64, i64)) {
    let (rows, hull) = common::gpu_work_rows(conn, "");
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

/// A phase's busy time by kind equals the generator's split of every placed GPU row within the
/// phase's steps: copy-bound's steps run while the next step's weights copy, transfer-bound.
#[test]
fn copy_bound_phases_split_their_busy_time_as_the_placed_rows_do() {
    let (_dir, path, answers) = common::generated("copy-bound", 1, 42);
    let report = detect_json(&path, "standard").expect("verdict");
    let keys = [
        "busy_ns",
        "compute_ns",
        "communication_ns",
        "transfer_ns",
        "window_ns",
    ];
    for phase in ["context", "generation"] {
        let (got, want) = (
            &report["phases"][phase]["bound"],
            &answers["profiles"]["standard"]["phases"][phase]["bound"],
        );
        for key in keys {
            assert_eq!(got[key], want[key], "{phase}.{key}");
        }
        assert_eq!(got["kind"], "transfer-bound", "{phase}");
        let of_busy = got["of_busy"]["transfer"].as_f64().unwrap_or(0.0);
        let busy = want["busy_ns"].as_f64().unwrap_or(0.0);
        let transfer = want["transfer_ns"].as_f64().unwrap_or(-1.0);
        assert!(
            (of_busy - transfer / busy).abs() < 1e-12,
            "{phase}: {of_busy}"
        );
    }
    let skill = detect_json(&path, "trtllm-skill").expect("verdict");
    assert!(
        skill["phases"]["generation"]["bound"].is_null(),
        "kernel rows only"
    );
}

/// One GPU-work row from SQL: device, start, end, and its class (0 compute, 1 communication,
/// 2 transfer) as the bound's precedence orders them.
type ClassedRow = (i64, i64, i64, usize);

fn classed_rows(conn: &Connection) -> Vec<ClassedRow> {
    let has = |table: &str| {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
            > 0
    };
    let mut parts = vec![
        "SELECT k.deviceId, k.start, k.\"end\", \
         CASE WHEN lower(s.value) LIKE '%nccl%' THEN 1 ELSE 0 END \
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName"
            .to_string(),
    ];
    for (table, class) in [
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", 0),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", 2),
        ("CUPTI_ACTIVITY_KIND_MEMSET", 2),
    ] {
        if has(table) {
            parts.push(format!(
                "SELECT deviceId, start, \"end\", {class} FROM {table}"
            ));
        }
    }
    let mut stmt = conn.prepare(&parts.join(" UNION ALL ")).expect("GPU work");
    stmt.query_map([], |r| {
        let class: i64 = r.get(3)?;
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, class as usize))
    })
    .expect("query")
    .map(|r| r.expect("row"))
    .collect()
}

/// `[compute, communication, transfer]` ns inside `window` (sorted disjoint spans), each ns
/// given to the first class covering it, by brute force over every boundary.
fn split_within(rows: &[ClassedRow], window: &[(i64, i64)]) -> [i64; 3] {
    let mut out = [0; 3];
    let devices: std::collections::BTreeSet<i64> = rows.iter().map(|r| r.0).collect();
    for d in devices {
        let mine: Vec<&ClassedRow> = rows.iter().filter(|r| r.0 == d && r.2 > r.1).collect();
        let mut cuts: Vec<i64> = mine.iter().flat_map(|r| [r.1, r.2]).collect();
        cuts.extend(window.iter().flat_map(|&(s, e)| [s, e]));
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (a, b) = (w[0], w[1]);
            if !window.iter().any(|&(s, e)| s <= a && b <= e) {
                continue;
            }
            let class = mine
                .iter()
                .filter(|r| r.1 <= a && b <= r.2)
                .map(|r| r.3)
                .min();
            if let Some(c) = class {
                out[c] += b - a;
            }
        }
    }
    out
}

/// On a real export, phases named by a phase map split their busy time as plain SQL over the
/// kernel, copy and memset tables says: the power-iteration loop's `Step N to N+10` ranges,
/// tens in even hundreds' decades as context, odd as generation.
#[test]
fn a_real_exports_phases_split_their_busy_time_as_sql_does() {
    let path = public_trace("brycelelbach_nsightful__power_iteration__baseline.sqlite");
    let dir = tempfile::tempdir().expect("tempdir");
    let map = dir.path().join("phases.json");
    std::fs::write(
        &map,
        r#"{"context": ["re:^Step ([0-9]*[02468])?0 to"], "generation": ["re:^Step [0-9]*[13579]0 to"]}"#,
    )
    .expect("phase map");
    let args = [
        "detect".as_ref(),
        "--json".as_ref(),
        "--phase-map".as_ref(),
        map.as_os_str(),
        path.as_os_str(),
    ];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let conn = common::open_export(&path);
    let mut stmt = conn
        .prepare(
            "SELECT n.start, n.\"end\", coalesce(n.text, s.value) FROM NVTX_EVENTS n \
             LEFT JOIN StringIds s ON s.id = n.textId \
             WHERE n.eventType = 59 AND coalesce(n.text, s.value) LIKE 'Step % to %' ORDER BY n.start",
        )
        .expect("steps");
    let steps: Vec<(i64, i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let first_number = |name: &str| -> i64 {
        name.split(' ')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(-1)
    };
    let rows = classed_rows(&conn);
    for (phase, parity) in [("context", 0), ("generation", 1)] {
        let window: Vec<(i64, i64)> = steps
            .iter()
            .filter(|s| (first_number(&s.2) / 10) % 2 == parity)
            .map(|s| (s.0, s.1))
            .collect();
        assert!(window.windows(2).all(|w| w[0].1 < w[1].0), "disjoint steps");
        let [compute, comm, transfer] = split_within(&rows, &window);
        let b = &report["phases"][phase]["bound"];
        assert_eq!(
            report["phases"][phase]["iteration_count"],
            window.len(),
            "{phase}"
        );
        assert_eq!(b["compute_ns"], compute, "{phase}");
        assert_eq!(b["communication_ns"], comm, "{phase}");
        assert_eq!(b["transfer_ns"], transfer, "{phase}");
        assert_eq!(b["busy_ns"], compute + comm + transfer, "{phase}");
        assert!(
            transfer > 0,
            "{phase}: the loop's D2H copies fall in its steps"
        );
    }
}

fn drill_graphs(path: &std::path::Path) -> Value {
    let args = ["drill".as_ref(), "--json".as_ref(), path.as_os_str()];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    report["graphs"].clone()
}

fn sql_i64(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .expect(sql)
        .unwrap_or(0)
}

/// The drill-down's CUDA-graph figures in both tracing modes of one run, against SQL over each
/// file: graph level counts replays and their graphs; node level the graphs by `graphId`, the
/// kernel nodes by `graphNodeId` and the launches whose kernels ran; both give the same share
/// of compute time in graphs, up to the gaps between nodes a replay covers. A
/// `CUDA_GRAPH_NODE_EVENTS` table, when present, is counted.
#[test]
fn graph_coverage_agrees_between_graph_level_and_node_level_tracing() {
    let (_g, graph, answers) = common::generated("serving-graphs", 1, 42);
    let (_n, node, _) = common::generated("serving-graphs-node", 1, 42);
    let modes = &answers["graph_modes"];
    let (span, inner) = (
        modes["replay_span_ns"].as_f64().expect("span"),
        modes["inner_gap_ns"].as_f64().expect("gaps"),
    );
    let launches = modes["graph_launches"].as_u64().expect("launches");
    let (gc, nc) = (common::open_export(&graph), common::open_export(&node));
    let eager = |c: &Connection| {
        sql_i64(
            c,
            "SELECT sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NULL",
        ) as f64
    };
    let (g, n) = (drill_graphs(&graph), drill_graphs(&node));
    let share = |r: &Value| r["graph_share"].as_f64().unwrap_or(-1.0);
    let want_g = span / (span + eager(&gc));
    let want_n = (span - inner) / (span - inner + eager(&nc));
    assert!((share(&g) - want_g).abs() < 1e-12, "graph level {g}");
    assert!((share(&n) - want_n).abs() < 1e-12, "node level {n}");
    assert!(
        (share(&g) - share(&n)).abs() < 0.01,
        "{} vs {}",
        share(&g),
        share(&n)
    );
    assert_eq!(g["graph_executions"], launches);
    assert_eq!(n["graph_executions"], launches);
    let graphs_g = sql_i64(
        &gc,
        "SELECT count(DISTINCT graphId) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    );
    let graphs_n = sql_i64(
        &nc,
        "SELECT count(DISTINCT graphId) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL",
    );
    assert_eq!(
        (g["graphs"].clone(), n["graphs"].clone()),
        (graphs_g.into(), graphs_n.into())
    );
    assert_eq!(graphs_g, graphs_n, "one placement");
    let nodes = sql_i64(
        &nc,
        "SELECT count(DISTINCT graphNodeId) FROM CUPTI_ACTIVITY_KIND_KERNEL",
    );
    assert!(nodes > 0);
    assert_eq!(
        (g["graph_nodes"].clone(), n["graph_nodes"].clone()),
        (0.into(), nodes.into())
    );
    let kernels = sql_i64(
        &nc,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL",
    );
    assert_eq!(n["graph_kernels"], kernels);
    assert!(
        n["node_events"].is_null(),
        "no CUDA_GRAPH_NODE_EVENTS table"
    );

    // A node-creation table added to the node-level file (the columns of nsys's DDL): each
    // kernel node created once by capture and cloned once at instantiation.
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("with-node-events.sqlite");
    std::fs::copy(&node, &copy).expect("copy");
    let conn = Connection::open(&copy).expect("open copy");
    conn.execute_batch(
        "CREATE TABLE CUDA_GRAPH_NODE_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, \
         eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL, \
         graphNodeId INTEGER NOT NULL, originalGraphNodeId INTEGER); \
         INSERT INTO CUDA_GRAPH_NODE_EVENTS \
         SELECT DISTINCT 0, 0, 0, NULL, 0, graphNodeId + 1000000, NULL \
         FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL; \
         INSERT INTO CUDA_GRAPH_NODE_EVENTS \
         SELECT DISTINCT 0, 0, 0, NULL, 0, graphNodeId, graphNodeId + 1000000 \
         FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL;",
    )
    .expect("node events");
    drop(conn);
    let with = drill_graphs(&copy);
    assert_eq!(
        with["node_events"],
        serde_json::json!({"rows": 2 * nodes, "cloned": nodes})
    );
}
