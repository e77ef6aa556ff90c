//! The generator's GPU work rows, checked with plain SQL on the written files (no analyzer).

use rusqlite::Connection;
use serde_json::Value;

use super::{GenOptions, generate};

fn written(scenario: &str) -> (tempfile::TempDir, Connection, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{scenario}.sqlite"));
    let answers = generate(scenario, &path, &GenOptions::default()).expect("generate");
    let conn = Connection::open(&path).expect("open");
    (dir, conn, answers)
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn has_table(conn: &Connection, table: &str) -> bool {
    count(
        conn,
        &format!("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{table}'"),
    ) == 1
}

fn mode(conn: &Connection) -> String {
    conn.query_row(
        "SELECT value FROM META_DATA_CAPTURE WHERE name = 'CUDA_GRAPH_TRACE_OPTIONS:MODE'",
        [],
        |r| r.get(0),
    )
    .expect("mode")
}

/// Graph launch calls, joined to the runtime names.
const GRAPH_CALLS: &str = "SELECT r.globalTid >> 24 AS pid, r.correlationId AS corr, r.start, r.end \
     FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
     WHERE s.value LIKE 'cudaGraphLaunch%'";

/// At graph level every `cudaGraphLaunch` has exactly one replay row (same process and
/// correlation id, after the call, with GPU time), and no kernel row belongs to a graph launch.
fn check_graph_level(conn: &Connection, nodes_per_replay_at_least: i64) {
    assert_eq!(mode(conn), "Graph");
    assert!(has_table(conn, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"));
    let calls = count(conn, &format!("SELECT count(*) FROM ({GRAPH_CALLS})"));
    let replays = count(conn, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
    assert!(calls > 0);
    assert_eq!(replays, calls, "one replay per graph launch");
    let matched = count(
        conn,
        &format!(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE g JOIN ({GRAPH_CALLS}) c \
             ON c.pid = g.globalPid >> 24 AND c.corr = g.correlationId \
             WHERE g.end > g.start AND g.start >= c.end AND g.deviceId = 0 AND g.streamId = 7 \
             AND g.graphId IS NOT NULL AND g.graphExecId IS NOT NULL"
        ),
    );
    assert_eq!(matched, calls, "each replay follows its own launch call");
    let inner = count(
        conn,
        &format!(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN ({GRAPH_CALLS}) c \
             ON c.pid = k.globalPid >> 24 AND c.corr = k.correlationId"
        ),
    );
    assert_eq!(inner, 0, "no kernel row of a graph launch at graph level");
    let with_node = count(
        conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL",
    );
    assert_eq!(with_node, 0);
    // Replays never overlap the eager kernels on their stream (one stream per device).
    let overlaps = count(
        conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE g JOIN CUPTI_ACTIVITY_KIND_KERNEL k \
         ON k.deviceId = g.deviceId AND k.start < g.end AND g.start < k.end",
    );
    assert_eq!(overlaps, 0);
    let shortest = count(
        conn,
        "SELECT min(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    );
    assert!(shortest >= nodes_per_replay_at_least * 1000, "{shortest}");
}

#[test]
fn capture_graph_level_writes_replays_and_no_inner_kernels() {
    let (_dir, conn, answers) = written("capture-graph-level");
    check_graph_level(&conn, 6);
    assert_eq!(answers["graph_replays"], 200);
    assert_eq!(answers["capture"]["graph_launches"], 200);
    let replay_ns = count(
        &conn,
        "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    );
    assert_eq!(
        answers["capture"]["graph_replay_ns"].as_i64(),
        Some(replay_ns)
    );
}

#[test]
fn scenarios_without_replays_have_no_graph_trace_table() {
    for scenario in [
        "cuda-graphs",
        "serving-graphs-node",
        "copy-bound",
        "host-bound",
    ] {
        let (_dir, conn, answers) = written(scenario);
        assert!(
            !has_table(&conn, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
            "{scenario}"
        );
        assert_eq!(answers["graph_replays"], 0, "{scenario}");
    }
}

#[test]
fn serving_graphs_in_both_modes() {
    let (_g, graph, ga) = written("serving-graphs");
    let (_n, node, na) = written("serving-graphs-node");
    check_graph_level(&graph, 5);
    assert_eq!(mode(&node), "Node");
    // Node level: every kernel of a graph launch carries its node id and graph id.
    let graph_kernels = count(
        &node,
        &format!(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN ({GRAPH_CALLS}) c \
             ON c.pid = k.globalPid >> 24 AND c.corr = k.correlationId \
             WHERE k.graphNodeId IS NOT NULL AND k.graphId IS NOT NULL"
        ),
    );
    assert_eq!(
        Some(graph_kernels),
        na["graph_modes"]["graph_kernels"].as_i64()
    );
    assert!(graph_kernels > 0);
    let eager = |c: &Connection| {
        count(
            c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NULL",
        )
    };
    assert_eq!(eager(&graph), eager(&node), "the eager attention kernels");
    assert_eq!(
        count(&graph, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        eager(&graph)
    );
    // The replay rows span exactly the node kernels of the same launch, gaps included.
    let spans = |c: &Connection, sql: &str| -> Vec<(i64, i64)> {
        let mut st = c.prepare(sql).expect("prepare");
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect()
    };
    let replays = spans(
        &graph,
        "SELECT start, end FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE ORDER BY start",
    );
    let node_spans = spans(
        &node,
        "SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL \
         GROUP BY globalPid, correlationId ORDER BY 1",
    );
    assert_eq!(replays, node_spans, "same placement in both modes");
    // The oracle: standard busy differs by the gaps inside the replays, nothing else moves.
    let std = |a: &Value| a["profiles"]["standard"].clone();
    let (gs, ns) = (std(&ga), std(&na));
    let busy = |s: &Value| s["bound"]["busy_ns"].as_i64().unwrap_or(0);
    let inner = ga["graph_modes"]["inner_gap_ns"].as_i64().unwrap_or(0);
    assert!(inner > 0);
    assert_eq!(busy(&gs) - busy(&ns), inner);
    assert_eq!(gs["bound"]["window_ns"], ns["bound"]["window_ns"]);
    for key in [
        "verdict",
        "crossed_count",
        "applicable_count",
        "host_prep_confirmed",
    ] {
        assert_eq!(gs[key], ns[key], "{key}");
    }
    assert_eq!(gs["bound"]["kind"], ns["bound"]["kind"]);
    let window = gs["bound"]["window_ns"].as_f64().unwrap_or(1.0);
    let idle = |s: &Value| {
        s["aggregate_metrics"]["gpu_idle_ratio"]
            .as_f64()
            .unwrap_or(0.0)
    };
    assert!((idle(&ns) - idle(&gs) - inner as f64 / window).abs() < 1e-12);
    for key in ["graph_launches", "replay_span_ns", "inner_gap_ns"] {
        assert_eq!(ga["graph_modes"][key], na["graph_modes"][key], "{key}");
    }
}

#[test]
fn copy_bound_streams_pinned_copies_host_to_device() {
    let (_dir, conn, answers) = written("copy-bound");
    let copies = &answers["copies"];
    let (n, bytes, ns) = conn
        .query_row(
            "SELECT count(*), sum(bytes), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY \
             WHERE copyKind = 1 AND srcKind = 1 AND dstKind = 2",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            },
        )
        .expect("copies");
    assert_eq!(copies["count"].as_i64(), Some(n));
    assert_eq!(copies["bytes"].as_i64(), Some(bytes));
    assert_eq!(copies["ns"].as_i64(), Some(ns));
    let gbps = copies["gb_per_s"].as_f64().unwrap_or(0.0);
    assert!((gbps - bytes as f64 / ns as f64).abs() < 1e-9 && (20.0..30.0).contains(&gbps));
    // Each copy is issued by a cudaMemcpyAsync call of the same process and correlation id.
    let issued = count(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r \
         ON r.globalTid >> 24 = m.globalPid >> 24 AND r.correlationId = m.correlationId \
         JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaMemcpyAsync%' AND m.start >= r.end",
    );
    assert_eq!(Some(issued), copies["all_copies"].as_i64());
    assert!(
        count(
            &conn,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
        ) > 0
    );
    // Copies last milliseconds, kernels microseconds.
    assert!(
        count(
            &conn,
            "SELECT min(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"
        ) > 2_000_000
    );
    assert!(
        count(
            &conn,
            "SELECT max(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ) <= 15_000
    );
    let standard = &answers["profiles"]["standard"];
    assert_eq!(standard["verdict"], "NO");
    assert_eq!(standard["bound"]["kind"], "transfer-bound");
    // The kernel-only profile sees a mostly idle GPU.
    assert_eq!(answers["profiles"]["trtllm-skill"]["verdict"], "YES");
}

#[test]
fn every_scenario_states_its_bound() {
    let kinds = [
        "host-bound",
        "gpu-compute-bound",
        "communication-bound",
        "transfer-bound",
        "mixed",
    ];
    for &(scenario, _) in super::scenarios() {
        let (_dir, _conn, answers) = written(scenario);
        let b = &answers["profiles"]["standard"]["bound"];
        assert!(
            kinds.iter().any(|k| b["kind"] == *k),
            "{scenario}: {}",
            b["kind"]
        );
        let shares: f64 = ["compute", "communication", "transfer", "idle"]
            .iter()
            .map(|k| b["shares"][k].as_f64().unwrap_or(f64::NAN))
            .sum();
        assert!((shares - 1.0).abs() < 1e-9, "{scenario}: {shares}");
        let ns = |k: &str| b[k].as_i64().unwrap_or(-1);
        assert_eq!(
            ns("compute_ns") + ns("communication_ns") + ns("transfer_ns"),
            ns("busy_ns"),
            "{scenario}"
        );
        assert!(ns("busy_ns") <= ns("window_ns"), "{scenario}");
        let idle = b["shares"]["idle"].as_f64().unwrap_or(f64::NAN);
        let want = (ns("window_ns") - ns("busy_ns")) as f64 / ns("window_ns") as f64;
        assert!((idle - want).abs() < 1e-12, "{scenario}");
        assert!(answers["profiles"]["trtllm-skill"].get("bound").is_none());
    }
}
