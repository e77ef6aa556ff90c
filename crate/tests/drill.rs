//! The drill-down against the generator's answers: gap buckets and the largest gaps (with their
//! NVTX ranges and API calls), CUDA-graph coverage, the per-layer pattern and its block ranking,
//! stragglers, and the explainer's figures; then the CLI's JSON shape, exit codes and bad input.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{Value, json};

use common::{EXIT_INPUT, EXIT_USAGE, assert_one_line_error, describe, nsys_lens, public_trace};
use nsys_lens::drill;
use nsys_lens::drill::{DrillInput, DrillOptions, DrillReport};
use nsys_lens::explain::{self, ExplainReport};
use nsys_lens::findings::{DrillFindings, drill_findings};
use nsys_lens::index::rows::RowIndex;
use nsys_lens::model::Trace;
use nsys_lens::names::api::api_base_name;
use nsys_lens::synth::{self, GenOptions};
use nsys_lens::trace::{LoadOptions, load_path};

const EPS: f64 = 1e-6;

/// Generates `scenario`, loads it, returns (trace, answers).
fn generated(dir: &Path, scenario: &str, seed: u64) -> (Trace, Value) {
    let path = dir.join(format!("{scenario}-{seed}.sqlite"));
    let answers =
        synth::generate(scenario, &path, &GenOptions { scale: 1, seed }).expect("generate");
    (load_path(&path, LoadOptions::all()).expect("load"), answers)
}

fn drill_one(trace: &Trace, label: &str, opts: &DrillOptions) -> DrillReport {
    drill::drill(
        &[DrillInput {
            rows: trace,
            label,
            step_marker: None,
        }],
        opts,
    )
    .expect("drill")
}

fn close(got: f64, want: &Value, what: &str) {
    let want = want
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: answer {want} is not a number"));
    assert!(
        (got - want).abs() <= EPS * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

fn check_buckets(got: &[nsys_lens::drill::gaps::GapBucket], want: &Value, what: &str) {
    let want = want.as_array().expect("bucket answers");
    assert_eq!(got.len(), want.len(), "{what}: bucket count");
    let total: f64 = got.iter().map(|b| b.total_us).sum();
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            Some(g.count),
            w["count"].as_u64(),
            "{what} {} count",
            g.label
        );
        close(
            g.total_us,
            &w["total_us"],
            &format!("{what} {} total", g.label),
        );
        if total > 0.0 {
            assert!((g.share - g.total_us / total).abs() < 1e-9, "{what} share");
        }
    }
}

/// The largest gaps, every field, against the oracle's list.
fn check_top(got: &Value, want: &Value, what: &str) {
    let (got, want) = (
        got.as_array().expect("top"),
        want.as_array().expect("top answers"),
    );
    assert_eq!(got.len(), want.len(), "{what}: number of top gaps");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ctx = format!("{what} #{i}");
        for key in [
            "device",
            "stream",
            "start_ns",
            "end_ns",
            "prev_kernel",
            "next_kernel",
        ] {
            assert_eq!(g[key], w[key], "{ctx} {key}");
        }
        close(
            g["gap_us"].as_f64().expect("gap_us"),
            &w["gap_us"],
            &format!("{ctx} gap_us"),
        );
        for list in ["nvtx", "api"] {
            let (gl, wl) = (
                g[list].as_array().expect("list"),
                w[list].as_array().expect("list"),
            );
            // The drill-down names an API without its version suffix (`_v3020`).
            let label = |n: &str| match list {
                "api" => api_base_name(n).to_string(),
                _ => n.to_string(),
            };
            let names = |v: &[Value]| {
                v.iter()
                    .map(|x| label(x["name"].as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(gl), names(wl), "{ctx} {list} names");
            for (a, b) in gl.iter().zip(wl) {
                assert_eq!(a["count"], b["count"], "{ctx} {list} {} count", a["name"]);
                close(
                    a["overlap_us"].as_f64().expect("overlap"),
                    &b["overlap_us"],
                    &format!("{ctx} {list} {} overlap", a["name"]),
                );
            }
        }
    }
}

fn check_gaps(report: &DrillReport, answers: &Value, scenario: &str) {
    let d = &answers["drill"];
    check_buckets(
        &report.gaps.buckets,
        &d["stream_buckets"],
        &format!("{scenario} stream"),
    );
    check_buckets(
        &report.gaps.device_idle.buckets,
        &d["idle_buckets"],
        &format!("{scenario} idle"),
    );
    let json = serde_json::to_value(&report.gaps).expect("json");
    check_top(
        &json["top"],
        &d["top_stream_gaps"],
        &format!("{scenario} stream top"),
    );
    check_top(
        &json["device_idle"]["top"],
        &d["top_idle_gaps"],
        &format!("{scenario} idle top"),
    );
}

fn check_graphs(report: &DrillReport, answers: &Value, scenario: &str) {
    let (g, w) = (&report.graphs, &answers["drill"]["graphs"]);
    assert_eq!(
        Some(g.graph_kernels),
        w["graph_kernels"].as_u64(),
        "{scenario} graph kernels"
    );
    assert_eq!(
        Some(g.eager_kernels),
        w["eager_kernels"].as_u64(),
        "{scenario} eager kernels"
    );
    for p in &g.phases {
        let want = &w[p.phase.as_str()];
        assert_eq!(
            Some(p.steps),
            want["steps"].as_u64(),
            "{scenario} {} steps",
            p.phase
        );
        assert_eq!(
            Some(p.kernels),
            want["kernels"].as_u64(),
            "{scenario} {} kernels",
            p.phase
        );
        assert_eq!(
            Some(p.graph_kernels),
            want["graph_kernels"].as_u64(),
            "{scenario} {} graph kernels",
            p.phase
        );
    }
    for phase in ["context", "generation"] {
        let listed = g.phases.iter().any(|p| p.phase == phase);
        assert_eq!(
            listed,
            w[phase]["steps"].as_u64() != Some(0),
            "{scenario} {phase} listed"
        );
    }
    let eager = w["eager_by_name"].as_array().expect("eager_by_name");
    assert_eq!(
        g.eager_top.len(),
        eager.len().min(report.options.top),
        "{scenario} eager rows"
    );
    for (got, want) in g.eager_top.iter().zip(eager) {
        assert_eq!(
            Some(got.name.as_str()),
            want["name"].as_str(),
            "{scenario} eager order"
        );
        assert_eq!(
            Some(got.count),
            want["count"].as_u64(),
            "{scenario} {} count",
            got.name
        );
        close(
            got.total_us,
            &want["total_us"],
            &format!("{scenario} {} total", got.name),
        );
    }
}

fn check_explain(e: &ExplainReport, answers: &Value, scenario: &str) {
    let w = &answers["drill"]["explain"];
    let kernels = w["kernels"].as_array().expect("kernels");
    assert_eq!(
        e.kernels.distinct_names as usize,
        kernels.len(),
        "{scenario} kernel names"
    );
    for k in &e.kernels.top {
        let want = kernels
            .iter()
            .find(|x| x["name"] == k.name.as_str())
            .unwrap_or_else(|| panic!("{scenario}: {} not in answers", k.name));
        assert_eq!(
            Some(k.count),
            want["count"].as_u64(),
            "{scenario} {} count",
            k.name
        );
        for (got, key) in [
            (k.total_us, "total_us"),
            (k.min_us, "min_us"),
            (k.max_us, "max_us"),
            (k.p50_us, "p50_us"),
            (k.p90_us, "p90_us"),
        ] {
            close(got, &want[key], &format!("{scenario} {} {key}", k.name));
        }
    }
    let lat = &w["launch_latency"];
    assert_eq!(
        Some(e.launch_latency.kernels),
        lat["kernels"].as_u64(),
        "{scenario} latency n"
    );
    let d = &e.launch_latency.distribution;
    close(d.p50_us, &lat["p50_us"], &format!("{scenario} latency p50"));
    close(d.p90_us, &lat["p90_us"], &format!("{scenario} latency p90"));
    close(d.p99_us, &lat["p99_us"], &format!("{scenario} latency p99"));
    assert_eq!(
        Some(e.syncs.calls),
        w["syncs"]["calls"].as_u64(),
        "{scenario} syncs"
    );
    close(
        e.syncs.total_us,
        &w["syncs"]["total_us"],
        &format!("{scenario} sync time"),
    );
    let copies: u64 = e.memory.memcpy.iter().map(|m| m.count).sum();
    assert_eq!(
        Some(copies),
        w["memcpy"]["count"].as_u64(),
        "{scenario} memcpy count"
    );
    let bytes: u64 = e.memory.memcpy.iter().map(|m| m.bytes).sum();
    assert_eq!(
        Some(bytes),
        w["memcpy"]["bytes"].as_u64(),
        "{scenario} memcpy bytes"
    );
    let nv = &w["nvtx_gpu"];
    close(
        e.nvtx.attributed_us,
        &nv["attributed_us"],
        &format!("{scenario} NVTX attributed"),
    );
    close(
        e.nvtx.kernel_us,
        &nv["kernel_us"],
        &format!("{scenario} kernel time"),
    );
    for g in &e.nvtx.gpu_time {
        let want = nv["by_name"]
            .as_array()
            .and_then(|v| v.iter().find(|x| x["name"] == g.name.as_str()))
            .unwrap_or_else(|| panic!("{scenario}: NVTX {} not in answers", g.name));
        close(
            g.gpu_us,
            &want["gpu_us"],
            &format!("{scenario} NVTX {} GPU time", g.name),
        );
    }
}

#[test]
fn every_scenario_matches_its_gap_graph_and_explainer_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    for &(scenario, _) in synth::scenarios() {
        let (trace, answers) = generated(dir.path(), scenario, 42);
        let report = drill_one(&trace, scenario, &DrillOptions::default());
        check_gaps(&report, &answers, scenario);
        check_graphs(&report, &answers, scenario);
        let steps = RowIndex::loaded(&trace, scenario, None).steps.steps;
        let explained = explain::explain_rows(&trace, scenario, &steps, 1000).expect("explain");
        check_explain(&explained, &answers, scenario);
    }
}

#[test]
fn gaps_in_every_bucket_match_the_placed_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    for seed in [42, 7] {
        let (trace, answers) = generated(dir.path(), "gaps", seed);
        let report = drill_one(
            &trace,
            "gaps",
            &DrillOptions {
                top: 25,
                window: None,
            },
        );
        // The scenario's own histogram (written when it placed the gaps) agrees too.
        check_buckets(&report.gaps.buckets, &answers["gap_buckets"], "gap_buckets");
        assert!(
            report.gaps.buckets.iter().all(|b| b.count > 0),
            "every bucket populated"
        );
        assert_eq!(report.gaps.top.len(), 25);
        let top = &report.gaps.top[0];
        assert_eq!((top.bucket.as_str(), top.stream), ("> 5 ms", Some(7)));
    }
}

#[test]
fn a_window_counts_only_the_gaps_inside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "gaps", 42);
    let want = &answers["drill"]["top_stream_gaps"][3];
    let (s, e) = (
        want["start_ns"].as_i64().expect("start"),
        want["end_ns"].as_i64().expect("end"),
    );
    let report = drill_one(
        &trace,
        "gaps",
        &DrillOptions {
            top: 5,
            window: Some((s, e)),
        },
    );
    assert_eq!(report.gaps.gaps, 1, "exactly the gap spanning the window");
    close(report.gaps.total_us, &want["gap_us"], "windowed total");
    assert_eq!(report.gaps.window, Some((s, e)));
    let narrower = drill_one(
        &trace,
        "gaps",
        &DrillOptions {
            top: 5,
            window: Some((s + 1, e)),
        },
    );
    assert_eq!(
        narrower.gaps.gaps, 0,
        "a gap sticking out of the window is not counted"
    );
}

#[test]
fn cuda_graphs_in_node_mode_have_the_known_eager_share() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "cuda-graphs", 42);
    let g = drill_one(&trace, "cuda-graphs", &DrillOptions::default()).graphs;
    let want = &answers["cuda_graphs"];
    assert_eq!(Some(g.graph_kernels), want["graph_kernels"].as_u64());
    assert_eq!(Some(g.eager_kernels), want["eager_kernels"].as_u64());
    close(g.coverage, &want["graph_coverage"], "coverage");
    assert_eq!(Some(g.graph_launch_calls), want["graph_launches"].as_u64());
    assert_eq!(g.capture_mode, "node");
    assert_eq!(
        g.advice, None,
        "node mode sees graph kernels: no re-capture advice"
    );
    let generation = g
        .phases
        .iter()
        .find(|p| p.phase == "generation")
        .expect("generation");
    assert!(
        generation.coverage > 0.8 && g.phases[0].coverage == 0.0,
        "{:?}",
        g.phases
    );
}

#[test]
fn graph_level_capture_gets_the_recapture_advice() {
    // The generator records graph replays' kernels (node mode); a graph-mode capture of the same
    // run would hold the graph launches but not their kernels. Remove those kernels to get one.
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut trace, _) = generated(dir.path(), "cuda-graphs", 42);
    for (k, v) in trace.meta.capture.iter_mut() {
        if k.ends_with("CUDA_GRAPH_TRACE_OPTIONS:MODE") {
            *v = "Graph".into();
        }
    }
    let keep: Vec<usize> = (0..trace.kernels.len())
        .filter(|&i| trace.kernels.graph_node_of(i) == 0)
        .collect();
    let k = &mut trace.kernels;
    let pick = |v: &mut Vec<i64>| *v = keep.iter().map(|&i| v[i]).collect();
    pick(&mut k.start);
    pick(&mut k.end);
    let pick32 = |v: &mut Vec<u32>| *v = keep.iter().map(|&i| v[i]).collect();
    pick32(&mut k.device);
    pick32(&mut k.stream);
    pick32(&mut k.process);
    pick32(&mut k.correlation);
    pick32(&mut k.short_name);
    pick32(&mut k.demangled_name);
    k.graph_node.clear();
    let report = drill_one(&trace, "graph-mode", &DrillOptions::default());
    let g = &report.graphs;
    assert_eq!((g.graph_kernels, g.capture_mode.as_str()), (0, "graph"));
    let advice = g.advice.as_deref().expect("advice");
    assert!(
        advice.contains("--cuda-graph-trace=node") && advice.starts_with("40 graph launch"),
        "{advice}"
    );
    assert!(
        drill_findings(&report)
            .iter()
            .any(|f| f.source == "graphs" && f.fix.contains("--cuda-graph-trace=node"))
    );
}

#[test]
fn the_per_layer_pattern_and_its_block_ranking_are_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    for seed in [42, 3] {
        let (trace, answers) = generated(dir.path(), "layers", seed);
        let want = &answers["layer_pattern"];
        assert_eq!(
            want["placed_as_planned"], true,
            "the generator placed the plan"
        );
        let p = drill_one(&trace, "layers", &DrillOptions::default()).patterns;
        assert!(p.found, "{:?}", p.note);
        let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
        let sequence: Vec<&str> = want["sequence"]
            .as_array()
            .expect("sequence")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(names, sequence, "the layer's kernel sequence");
        assert_eq!(Some(p.steps), want["steps"].as_u64());
        assert_eq!(
            p.layers_per_step,
            want["layers_per_step"].as_f64().expect("layers")
        );
        for (k, w) in p
            .kernels
            .iter()
            .zip(want["mean_gap_us"].as_array().expect("gaps"))
        {
            close(
                k.mean_gap_us,
                w,
                &format!("mean gap before kernel {}", k.index),
            );
        }
        let blocks = want["blocks"].as_array().expect("blocks");
        assert_eq!(p.blocks.len(), blocks.len(), "blocks");
        for (b, w) in p.blocks.iter().zip(blocks) {
            assert_eq!(
                (
                    Some(b.rank as u64),
                    Some(b.first as u64),
                    Some(b.last as u64)
                ),
                (w["rank"].as_u64(), w["first"].as_u64(), w["last"].as_u64()),
                "block {} ({})",
                b.group,
                b.operation
            );
            close(b.gap_per_layer_us, &w["gap_per_layer_us"], "gap per layer");
            close(b.total_gap_us, &w["total_gap_us"], "gap per step");
        }
        assert_eq!(
            (
                p.blocks[0].operation.as_str(),
                p.blocks[0].priority.as_str()
            ),
            ("attention", "HIGH")
        );
    }
}

#[test]
fn the_late_rank_of_tp2_is_flagged_with_its_lateness() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "tp2-straggler", 42);
    let s = drill_one(&trace, "tp2.sqlite", &DrillOptions::default()).stragglers;
    let want = &answers["stragglers"];
    let rank = s.rank.as_ref().expect("a straggler");
    assert_eq!(
        Some(u64::from(rank.device)),
        want["straggler_device"].as_u64()
    );
    assert_eq!((rank.pid, rank.file.as_str()), (50002, "tp2.sqlite"));
    assert_eq!(Some(s.collectives), want["collectives"].as_u64());
    close(s.share, &want["straggler_share"], "share");
    close(
        s.mean_lateness_us,
        &want["mean_lateness_us"],
        "mean lateness",
    );
    for r in &s.ranks {
        let count = want["last_count_by_device"]
            .as_array()
            .and_then(|v| v.iter().find(|x| x["device"] == r.rank.device))
            .and_then(|x| x["count"].as_u64());
        assert_eq!(Some(r.last), count, "device {}", r.rank.device);
    }
}

#[test]
fn each_late_rank_names_its_latest_collective_as_sql_orders_the_nccl_kernels() {
    let path = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let s = drill_one(&trace, "mfu.sqlite", &DrillOptions::default()).stragglers;
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    // The n-th NCCL kernel of a device, in start order, by plain SQL.
    let nth = |device: u32, n: u64| -> (i64, i64) {
        conn.query_row(
            "SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds s ON s.id = k.shortName
             WHERE k.deviceId = ?1 AND s.value LIKE '%nccl%'
             ORDER BY k.start LIMIT 1 OFFSET ?2",
            rusqlite::params![device, n as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the n-th NCCL kernel")
    };
    assert_eq!(s.ranks.len(), 2, "{s:?}");
    let mut seen = 0;
    for (i, r) in s.ranks.iter().enumerate() {
        let other = &s.ranks[1 - i];
        let Some(w) = r.worst else {
            assert_eq!(r.last, 0);
            continue;
        };
        seen += 1;
        assert_eq!((w.start_ns, w.end_ns), nth(r.rank.device, w.index));
        let first = nth(other.rank.device, w.index).0;
        assert_eq!(w.lateness_us, (w.start_ns - first) as f64 / 1000.0);
        assert!(
            w.lateness_us >= r.mean_lateness_us,
            "the latest is at least the mean"
        );
    }
    assert_eq!(seen, 2, "both ranks were last at some collective");
}

#[test]
fn several_files_are_ranks_on_one_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "tp2-straggler", 42);
    let inputs = [
        DrillInput {
            rows: &trace,
            label: "a.sqlite",
            step_marker: None,
        },
        DrillInput {
            rows: &trace,
            label: "b.sqlite",
            step_marker: None,
        },
    ];
    let s = drill::drill(&inputs, &DrillOptions::default())
        .expect("drill")
        .stragglers;
    assert_eq!(s.ranks.len(), 4);
    assert!(
        s.alignment
            .as_deref()
            .is_some_and(|a| a.contains("utcEpochNs"))
    );
    // Both copies of device 1 arrive at the same instant; the first rank listed wins the tie.
    let rank = s.rank.expect("straggler");
    assert_eq!((rank.device, rank.file.as_str()), (1, "a.sqlite"));
    close(s.share, &answers["stragglers"]["straggler_share"], "share");
    assert_eq!(
        s.ranks[3].last, 0,
        "b.sqlite's device 1 ties and is never strictly last"
    );
}

#[test]
fn a_single_rank_has_no_straggler_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, _) = generated(dir.path(), "layers", 42);
    let s = drill_one(&trace, "layers", &DrillOptions::default()).stragglers;
    assert_eq!((s.rank, s.collectives), (None, 0));
    assert!(
        s.note
            .as_deref()
            .is_some_and(|n| n.contains("at least two")),
        "{:?}",
        s.note
    );
}

/// A JSON document with its objects' keys in document order (serde_json's `Value` sorts them).
#[derive(Debug, Default)]
enum Ordered {
    Object(Vec<(String, Ordered)>),
    Array(Vec<Ordered>),
    #[default]
    Scalar,
}

impl Ordered {
    fn at(&self, path: &[&str]) -> &Ordered {
        let Some((first, rest)) = path.split_first() else {
            return self;
        };
        let next = match self {
            Ordered::Object(kv) => kv.iter().find(|(k, _)| k == first).map(|(_, v)| v),
            Ordered::Array(v) => first.parse::<usize>().ok().and_then(|i| v.get(i)),
            Ordered::Scalar => None,
        };
        next.unwrap_or_else(|| panic!("no {first} in the JSON"))
            .at(rest)
    }

    fn keys(&self) -> Vec<&str> {
        match self {
            Ordered::Object(kv) => kv.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut kv = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Ordered>()? {
                    kv.push((k, v));
                }
                Ok(Ordered::Object(kv))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = s.next_element::<Ordered>()? {
                    v.push(x);
                }
                Ok(Ordered::Array(v))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_str<E>(self, _: &str) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Scalar)
            }
        }
        d.deserialize_any(V)
    }
}

fn args<'a>(a: &[&'a str]) -> Vec<&'a OsStr> {
    a.iter().map(|s| OsStr::new(*s)).collect()
}

#[test]
fn cli_json_has_the_issue_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tp2.sqlite");
    synth::generate("tp2-straggler", &path, &GenOptions::default()).expect("generate");
    let p = path.to_str().expect("utf-8 path");
    let a = args(&["drill", p, "--json", "--top", "3"]);
    let out = nsys_lens(&a);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&a, &out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let o: Ordered = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys = |path: &[&str]| o.at(path).keys();
    assert_eq!(
        &keys(&[])[..6],
        [
            "schema_version",
            "gaps",
            "graphs",
            "patterns",
            "stragglers",
            "findings"
        ]
    );
    assert_eq!(
        &keys(&["gaps", "buckets", "0"])[..6],
        ["label", "lo_us", "hi_us", "count", "total_us", "share"]
    );
    assert_eq!(
        &keys(&["gaps", "top", "0"])[..9],
        [
            "device",
            "stream",
            "start_ns",
            "end_ns",
            "gap_us",
            "prev_kernel",
            "next_kernel",
            "nvtx",
            "api"
        ]
    );
    assert_eq!(
        &keys(&["graphs"])[..5],
        [
            "graph_kernels",
            "eager_kernels",
            "coverage",
            "capture_mode",
            "eager_top"
        ]
    );
    assert_eq!(
        &keys(&["stragglers"])[..4],
        ["rank", "share", "mean_lateness_us", "collectives"]
    );
    assert_eq!(keys(&["stragglers", "rank"]), ["device", "pid", "file"]);
    assert_eq!(
        &keys(&["findings", "0"])[..5],
        ["severity", "title", "evidence", "pattern", "fix"]
    );
    assert_eq!(v["gaps"]["top"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        v["stragglers"]["rank"],
        json!({"device": 1, "pid": 50002, "file": p})
    );
    // The readable report names the straggler too.
    let text = nsys_lens(args(&["drill", p]));
    assert!(String::from_utf8_lossy(&text.stdout).contains("STRAGGLER: device 1 (pid 50002)"));
}

#[test]
fn kernel_less_and_unusable_inputs_exit_3_with_one_line() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(common::public_traces_dir().join("MANIFEST.json"))
            .expect("manifest"),
    )
    .expect("manifest JSON");
    let kernel_less = manifest
        .as_array()
        .expect("array")
        .iter()
        .find(|e| e["counts"].get("CUPTI_ACTIVITY_KIND_KERNEL").is_none())
        .and_then(|e| e["file"].as_str())
        .expect("a kernel-less export");
    let path = public_trace(kernel_less);
    let p = path.to_str().expect("utf-8");
    let a = args(&["drill", p, "--json"]);
    assert_one_line_error(&a, &nsys_lens(&a), EXIT_INPUT, Some("no GPU kernels"));
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"not a database at all, just text").expect("write");
    let j = junk.to_str().expect("utf-8");
    let a = args(&["drill", j]);
    assert_one_line_error(
        &a,
        &nsys_lens(&a),
        EXIT_INPUT,
        Some("not an SQLite database"),
    );
    let missing = dir.path().join("missing.sqlite");
    let m = missing.to_str().expect("utf-8");
    let a = args(&["drill", m]);
    assert_one_line_error(&a, &nsys_lens(&a), EXIT_INPUT, None);
    // A kernel-less file among rank files is refused too.
    let good = dir.path().join("g.sqlite");
    synth::generate("gaps", &good, &GenOptions::default()).expect("generate");
    let a = args(&["drill", good.to_str().expect("utf-8"), p]);
    assert_one_line_error(&a, &nsys_lens(&a), EXIT_INPUT, Some(kernel_less));
}

#[test]
fn bad_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("g.sqlite");
    synth::generate("gaps", &path, &GenOptions::default()).expect("generate");
    let p = path.to_str().expect("utf-8");
    for bad in [
        vec!["drill"],
        vec!["drill", p, "--top", "0"],
        vec!["drill", p, "--top", "x"],
        vec!["drill", p, "--window", "10:5"],
        vec!["drill", p, "--window", "abc"],
    ] {
        let a = args(&bad);
        let out = nsys_lens(&a);
        assert_eq!(
            out.status.code(),
            Some(EXIT_USAGE),
            "{}",
            describe(&a, &out)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

#[test]
fn a_launch_calls_only_load_states_what_it_cannot_see() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("layers.sqlite");
    synth::generate("layers", &path, &GenOptions::default()).expect("generate");
    let launches_only = LoadOptions {
        launch_calls_only: true,
        ..LoadOptions::all()
    };
    let lean = load_path(&path, launches_only).expect("load");
    let report = drill_one(&lean, "layers", &DrillOptions::default());
    assert!(
        report
            .coverage
            .iter()
            .any(|c| c.reason.contains("kernel launches only")),
        "{:?}",
        report.coverage
    );
    // What does not depend on the missing calls is unchanged (the gaps; not their causes).
    let full = load_path(&path, LoadOptions::all()).expect("load");
    let all = drill_one(&full, "layers", &DrillOptions::default());
    let sizes = |r: &DrillReport| -> Vec<(u64, f64)> {
        r.gaps
            .buckets
            .iter()
            .map(|b| (b.count, b.total_us))
            .collect()
    };
    assert_eq!(sizes(&report), sizes(&all));
    assert_eq!(report.patterns, all.patterns);
    let steps = RowIndex::loaded(&lean, "layers", None).steps.steps;
    let e = explain::explain_rows(&lean, "layers", &steps, 10).expect("explain");
    assert_eq!(e.syncs.calls, 0);
    assert!(e.coverage.iter().any(|c| c.subject.contains("syncs")));
}

/// Drills one public export (every table the page loads), keeping `top` gaps, in `window`.
fn drill_public(name: &str, top: usize, window: Option<(i64, i64)>) -> DrillReport {
    let trace = load_path(&public_trace(name), LoadOptions::all()).expect("load");
    drill_one(&trace, name, &DrillOptions { top, window })
}

/// The cause of device 0's gap that is exactly `window` in a public export.
fn device0_gap_cause(name: &str, window: (i64, i64)) -> drill::idle::GapCause {
    let report = drill_public(name, 10, Some(window));
    let gap = report.gaps.device_idle.top.iter().find(|g| g.device == 0);
    let gap = gap.expect("the gap");
    assert_eq!((gap.start_ns, gap.end_ns), window);
    gap.cause.clone().expect("a cause")
}

/// The verdict's gap table shows what was measured, no guess: each device-idle bucket's causes
/// (every device's gaps of that size) are, kind by kind, the time the oracle gives them in the
/// gaps of that size; they add up to the bucket's gap time, the first is the bucket's dominant
/// cause (`bucket_causes`), a bucket without gaps has none; the per-stream buckets' causes add
/// up to no more than their gap time; no reading names a typical cause.
fn check_bucket_mix(report: &DrillReport, oracle: &Value, name: &str) {
    let idle = &report.gaps.device_idle;
    for (i, b) in idle.buckets.iter().enumerate() {
        let mut want: std::collections::BTreeMap<String, i64> = Default::default();
        for device in oracle.as_object().expect("devices").values() {
            let kinds = device["buckets"][i.to_string()].as_object();
            for (kind, ns) in kinds.into_iter().flatten() {
                *want.entry(kind.clone()).or_default() += ns.as_i64().expect("ns");
            }
        }
        let got: std::collections::BTreeMap<String, i64> = b
            .causes
            .iter()
            .map(|c| (c.kind.name().to_string(), c.ns))
            .collect();
        assert_eq!(got, want, "{name}: device-idle bucket {}", b.label);
        let total: i64 = b.causes.iter().map(|c| c.ns).sum();
        assert_eq!(
            total,
            (b.total_us * 1000.0).round() as i64,
            "{name} {}",
            b.label
        );
        let dominant = idle.bucket_causes[i].as_ref().map(|c| (c.kind, &c.label));
        assert_eq!(
            b.causes.first().map(|c| (c.kind, &c.label)),
            dominant,
            "{name} {}",
            b.label
        );
        assert_eq!(b.count == 0, b.causes.is_empty(), "{name} {}", b.label);
    }
    for b in &report.gaps.buckets {
        let total: i64 = b.causes.iter().map(|c| c.ns).sum();
        assert!(
            total <= (b.total_us * 1000.0).round() as i64,
            "{name} stream {}",
            b.label
        );
    }
    let readings = [&report.gaps.reading, &idle.reading].into_iter().flatten();
    let tops = report.gaps.top.iter().chain(&idle.top).map(|g| &g.reading);
    for r in readings.chain(tops) {
        assert!(!r.contains("typical"), "{name}: {r}");
    }
}

/// The swept exports with kernels (every public one under `--full`): each device's causes add up to its idle time to the ns
/// (and the devices' idle times to the gap report's device-idle total), no share is above 1,
/// and per device the idle time and every cause's time and label are those of an independent
/// oracle that cuts each gap between GPU work rows (kernels, graph replays, copies, memsets) at
/// every call and range boundary with SQL and brute force ([`idle_attribution_oracle`]), as
/// is what the other devices ran during its `host_ahead` time.
#[test]
fn idle_causes_add_up_and_match_the_oracle_on_the_swept_exports() {
    for path in common::sweep_exports_with_kernels() {
        let name = path.file_name().and_then(OsStr::to_str).expect("file name");
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let report = drill_one(&trace, name, &DrillOptions::default());
        let idle = &report.idle.per_device;
        assert!(!idle.is_empty(), "{name}: no device");
        let total: i64 = idle.iter().map(|d| d.idle_ns).sum();
        assert_eq!(
            total,
            (report.gaps.device_idle.total_us * 1000.0).round() as i64,
            "{name}: idle time is the device-idle gaps' total"
        );
        for d in idle {
            let sum: i64 = d.causes.iter().map(|c| c.ns).sum();
            assert_eq!(sum, d.idle_ns, "{name} device {}: causes sum", d.device);
            assert!(
                d.causes
                    .iter()
                    .all(|c| c.ns > 0 && (0.0..=1.0).contains(&c.share)),
                "{name} device {}: {:?}",
                d.device,
                d.causes
            );
        }
        for g in report.gaps.top.iter().chain(&report.gaps.device_idle.top) {
            if let Some(c) = &g.cause {
                assert!((0.0..=1.0).contains(&c.share), "{name}: {g:?}");
            }
        }
        let oracle = common::idle_attribution_oracle(&path, None);
        assert_eq!(
            oracle.as_object().map(|o| o.len()),
            Some(idle.len()),
            "{name}: devices"
        );
        check_bucket_mix(&report, &oracle, name);
        for d in idle {
            let want = &oracle[d.device.to_string()];
            assert_eq!(
                json!(d.idle_ns),
                want["idle_ns"],
                "{name} device {}",
                d.device
            );
            let got: serde_json::Map<String, Value> = d
                .causes
                .iter()
                .map(|c| (c.kind.name().to_string(), json!([c.ns, c.label])))
                .collect();
            assert_eq!(
                Value::Object(got),
                want["causes"],
                "{name} device {}",
                d.device
            );
            let labels: serde_json::Map<String, Value> = d
                .causes
                .iter()
                .map(|c| {
                    let held: Vec<Value> =
                        c.labels.iter().map(|l| json!([l.label, l.ns])).collect();
                    (c.kind.name().to_string(), Value::Array(held))
                })
                .collect();
            assert_eq!(
                Value::Object(labels),
                want["labels"],
                "{name} device {}: labels",
                d.device
            );
            let frames: serde_json::Map<String, Value> = d
                .causes
                .iter()
                .filter(|c| !c.frames.is_empty())
                .map(|c| {
                    let sampled: Vec<Value> = c
                        .frames
                        .iter()
                        .map(|f| json!([f.frame, f.samples]))
                        .collect();
                    (c.kind.name().to_string(), Value::Array(sampled))
                })
                .collect();
            assert_eq!(
                Value::Object(frames),
                want["frames"],
                "{name} device {}: sampled frames",
                d.device
            );
            let samples: serde_json::Map<String, Value> = d
                .causes
                .iter()
                .filter(|c| c.samples > 0)
                .map(|c| (c.kind.name().to_string(), json!(c.samples)))
                .collect();
            assert_eq!(
                Value::Object(samples),
                want["samples"],
                "{name} device {}: samples",
                d.device
            );
            let meanwhile = d.causes.iter().find_map(|c| c.meanwhile.as_ref()).map(|m| {
                let work: Vec<Value> = m
                    .work
                    .iter()
                    .map(|w| json!([w.device, w.work, w.ns]))
                    .collect();
                json!({"ns": m.ns, "busy_ns": m.busy_ns, "work": work})
            });
            assert_eq!(
                meanwhile.unwrap_or(Value::Null),
                want["meanwhile"],
                "{name} device {}: other devices' work during host_ahead",
                d.device
            );
        }
    }
}

/// The causes the issue names, checked against the rows first (python's sqlite3 on the files;
/// each query is described where it is used).
#[test]
fn the_gaps_of_public_exports_have_the_causes_their_rows_show() {
    // NVIDIA_Fuser df8f397, one thread. Its largest device-idle gap, 1376514515..1727594292
    // (351079777 ns), starts inside the NVTX range `KernelExecutor::compileFusion`
    // (1376489669..1723180397), which holds `executor_utils::NVRTC` and, inside it,
    // `executor_utils::Nvrtc::CompileProgram` (1409647767..1723005422, 313357655 ns): JIT for
    // 1723180397 - 1376514515 = 346665882 ns. (`SELECT start, end FROM NVTX_EVENTS JOIN
    // StringIds …` and the runtime rows overlapping the gap.) After the compile come a cudaMalloc
    // and a 4.04 ms first cudaLaunchKernel (lazy loading).
    let fuser = drill_public("NVIDIA_Fuser__df8f397__report1.sqlite", 10, None);
    let top = &fuser.gaps.device_idle.top;
    let largest = top[0].cause.clone().expect("a cause");
    assert_eq!((top[0].start_ns, top[0].end_ns), (1376514515, 1727594292));
    assert_eq!(largest.kind.name(), "jit");
    assert!(
        [
            "executor_utils::Nvrtc::CompileProgram",
            "KernelExecutor::compileFusion"
        ]
        .contains(&largest.label.as_str()),
        "{largest:?}"
    );
    assert_eq!((largest.share * 351079777.0).round(), 346665882.0);
    // The 121 ms gap after it (1727830386..1848853036) holds the 15 cuLibraryLoadData calls
    // (24224471 ns in all) and 15 cuLibraryGetKernel (42609 ns), but no NVTX range and no other
    // call for most of it. The launching thread (globalTid 285298772900428, the one whose
    // cudaLaunchKernel calls these are) was switched onto a CPU at 1726990023 and off at
    // 1907767113 (`SELECT start, isSchedIn FROM SCHED_EVENTS WHERE globalTid = …`): it ran code
    // nsys did not trace for all of that time, so the rows say cpu_busy first (78.5 %).
    assert_eq!(top[1].start_ns, 1727830386);
    let second = top[1].cause.clone().expect("a cause");
    assert_eq!(
        (second.kind.name(), second.label.as_str()),
        ("cpu_busy", "untraced code")
    );
    assert!(
        top[1]
            .reading
            .starts_with("cpu_busy (untraced code) holds 78.5%"),
        "{}",
        top[1].reading
    );
    let module_load = fuser.idle.per_device[0]
        .causes
        .iter()
        .find(|c| c.kind.name() == "module_load")
        .expect("module loading");
    assert_eq!(
        (module_load.label.as_str(), module_load.ns),
        ("cuLibraryLoadData", 24224471 + 42609)
    );
    // The next six gaps (5.5 to 13.0 ms) each hold one cudaLaunchKernel_v7000 call covering
    // 95 % of the gap or more (the first launch of each kernel). The 13.0 ms one,
    // 1892414795..1905382031, starts where a memset ends (CUPTI_ACTIVITY_KIND_MEMSET, correlation
    // 4149): the GPU ran it, so the gap is not 1892205005..1905382031 between kernels.
    for g in &top[2..8] {
        let c = g.cause.clone().expect("a cause");
        assert_eq!(
            (c.kind.name(), c.label.as_str()),
            ("launch", "cudaLaunchKernel")
        );
        assert!(c.share > 0.95, "{g:?}");
    }
    assert_eq!(
        (
            top[2].start_ns,
            top[2].end_ns,
            top[2].prev_kernel.as_deref()
        ),
        (1892414795, 1905382031, Some("[CUDA memset]"))
    );

    // GindaChen h100_2gpu: copies keep both GPUs busy. Per device 223 pinned host-to-device
    // copies take 920.9 ms of the 969 ms the GPU work spans (`SELECT deviceId, copyKind,
    // srcKind, sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1, 2, 3`). The 18.6 ms
    // process 111 waits in cudaStreamSynchronize (155781369577..155799957141, under
    // `aten::item`) device 0 spends on eight copies of stream 7 (three 160 MiB host-to-device,
    // each followed by a device-to-device copy, then two of 16 KiB), idle under 10 µs at a time.
    let two_gpus = "GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite";
    let sync = drill_public(two_gpus, 10, Some((155781369577, 155799957141)));
    let device0: Vec<_> = sync
        .gaps
        .device_idle
        .top
        .iter()
        .filter(|g| g.device == 0)
        .collect();
    assert!(
        !device0.is_empty() && device0.iter().all(|g| g.gap_us < 10.0),
        "{device0:?}"
    );
    // 156064988229..156220812318 holds a 4.2 GB host-to-device copy (151750042 ns) and its
    // device-to-device copy. Device 0's largest gap is 156064988229..156065750091 (761862 ns),
    // between a device-to-device copy (correlation 1462077) and a host-to-device one (1462092):
    // on process 111's one thread, short aten ops cover 62006 ns of it (the NVTX rows
    // overlapping it, nested ones merged) and the cudaMemcpyAsync of the next copy lies inside
    // `aten::to`; no other call: untraced holds the other 699856 ns.
    let whole = drill_public(two_gpus, 10, None);
    let largest = whole.gaps.device_idle.top.iter().find(|g| g.device == 0);
    let largest = largest.expect("a device-0 gap");
    assert_eq!(
        (
            largest.start_ns,
            largest.end_ns,
            largest.prev_kernel.as_deref(),
            largest.next_kernel.as_deref()
        ),
        (
            156064988229,
            156065750091,
            Some("[CUDA memcpy Device-to-Device]"),
            Some("[CUDA memcpy Host-to-Device]")
        )
    );
    let cause = device0_gap_cause(two_gpus, (156064988229, 156065750091));
    assert_eq!(cause.kind.name(), "untraced");
    assert_eq!((cause.share * 761862.0).round(), 699856.0);

    // brycelelbach power_iteration: the 44 device-idle gaps over 5 ms (kernels merged in start
    // order) each lie in one NVTX range `IO <step>` of the main thread covering 97.8 % of it
    // or more, with no runtime call inside those ranges. The main thread's OS runtime calls
    // inside them (`OSRT_API`: 1100 `write`, 88 `open64`/`close`/`fstat64` … 16.9 ms in all
    // inside gaps) are `osrt`, a little of each gap: the range keeps over 95 % of every one.
    let power = drill_public(
        "brycelelbach_nsightful__power_iteration__baseline.sqlite",
        100,
        None,
    );
    let over_5ms: Vec<_> = power
        .gaps
        .device_idle
        .top
        .iter()
        .filter(|g| g.gap_us > 5000.0)
        .collect();
    assert_eq!(over_5ms.len(), 44);
    for g in over_5ms {
        let c = g.cause.clone().expect("a cause");
        assert_eq!((c.kind.name(), c.label.as_str()), ("nvtx", "IO"), "{g:?}");
        assert!(c.share > 0.95, "{g:?}");
    }
    let reading = power.gaps.device_idle.reading.unwrap_or_default();
    assert!(
        reading.starts_with("dominated by > 5 ms: nvtx (IO) holds"),
        "{reading}"
    );
}

/// Sorted, merged `[start, end)` intervals of `rows` (empty ones dropped).
fn merged(mut rows: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    rows.retain(|r| r.1 > r.0);
    rows.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in rows {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The intervals two merged lists share.
fn shared(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if e > s {
            out.push((s, e));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn total(intervals: &[(i64, i64)]) -> i64 {
    intervals.iter().map(|(s, e)| e - s).sum()
}

/// `(start, end)` rows of an SQL query.
fn spans_of(conn: &rusqlite::Connection, sql: &str) -> Vec<(i64, i64)> {
    let mut st = conn.prepare(sql).expect(sql);
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect(sql)
        .map(|r| r.expect("row"))
        .collect()
}

/// GindaChen h100_2gpu: device 0's `host_ahead` time (13.1 % of its idle time) is its idle
/// gaps (between its merged kernels, copies and memsets) inside the driver's 99 "command buffer
/// full" records of process 111 (`CUPTI_ACTIVITY_KIND_OVERHEAD`, overheadType 8): 859876 ns.
/// Those records lie inside launch calls, where no sync call, profiler record or NVTX range of a
/// higher cause is open, so nothing takes that time before `host_ahead`. What device 1 ran
/// meanwhile is its rows of each table inside that time, read here with plain SQL: copies
/// 772694 ns (89.9 %), kernels 72522 ns (8.4 %), any work 845216 ns; no memset. The
/// drill-down gives those figures, and its readings say so.
#[test]
fn host_ahead_time_names_what_the_other_gpu_ran_as_the_rows_show() {
    let name = "GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite";
    let conn = common::open_export(&public_trace(name));
    let device_rows = |device: i64| {
        let sql = format!(
            "SELECT start, \"end\" FROM ({}) WHERE deviceId = {device}",
            common::gpu_work_sql(&conn)
        );
        merged(spans_of(&conn, &sql))
    };
    let busy0 = device_rows(0);
    let gaps: Vec<(i64, i64)> = busy0.windows(2).map(|w| (w[0].1, w[1].0)).collect();
    let full = merged(spans_of(
        &conn,
        "SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_OVERHEAD WHERE overheadType = 8 \
         AND globalTid >> 24 IN (SELECT globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0)",
    ));
    let ahead = shared(&gaps, &full);
    assert_eq!(total(&ahead), 859876);
    let of_device1 = |table: &str| {
        let sql = format!("SELECT start, \"end\" FROM {table} WHERE deviceId = 1");
        total(&shared(&ahead, &merged(spans_of(&conn, &sql))))
    };
    let copies = of_device1("CUPTI_ACTIVITY_KIND_MEMCPY");
    let kernels = of_device1("CUPTI_ACTIVITY_KIND_KERNEL");
    let memsets = of_device1("CUPTI_ACTIVITY_KIND_MEMSET");
    let any = total(&shared(&ahead, &device_rows(1)));
    assert_eq!((copies, kernels, memsets, any), (772694, 72522, 0, 845216));

    let report = drill_public(name, 400, None);
    let device0 = &report.idle.per_device[0];
    let cause = device0
        .causes
        .iter()
        .find(|c| c.kind.name() == "host_ahead")
        .expect("host_ahead");
    assert_eq!(cause.ns, total(&ahead));
    let m = cause.meanwhile.as_ref().expect("what the other GPU ran");
    assert_eq!((m.ns, m.busy_ns, m.other_devices), (cause.ns, any, 1));
    let work: Vec<(u32, &str, i64)> = m
        .work
        .iter()
        .map(|w| (w.device, w.work.as_str(), w.ns))
        .collect();
    assert_eq!(work, vec![(1, "copies", copies), (1, "kernels", kernels)]);
    assert_eq!(
        m.sentence(),
        "device 1 ran copies for 89.9% of it and kernels for 8.4%; the trace shows no GPU work for the other 1.7%"
    );
    // A gap the command buffer held whole: its reading says what device 1 ran then.
    let held = report
        .gaps
        .device_idle
        .top
        .iter()
        .find(|g| g.device == 0 && g.reading.starts_with("host_ahead"))
        .expect("a host_ahead gap among the largest");
    let rows_then = total(&shared(&[(held.start_ns, held.end_ns)], &device_rows(1)));
    assert_eq!(rows_then, held.end_ns - held.start_ns, "{held:?}");
    assert!(
        held.reading
            .ends_with("; meanwhile device 1 ran copies for 100.0% of it"),
        "{}",
        held.reading
    );
    let text = nsys_lens::report::drill::drill_report(&DrillFindings::of(report, &[]));
    assert!(
        text.contains("meanwhile device 1 ran copies for 89.9% of it"),
        "{text}"
    );
}

/// brycelelbach power_iteration: nsys kept the backtraces of the OS calls over 80 µs
/// (`OSRT_CALLCHAINS`, 24 chains). Those of the launching (main) thread are five `open64` and
/// one `close` (`SELECT … FROM OSRT_API WHERE globalTid = <main> AND callchainId != 0`); each
/// chain's first frame is libc's `__open` / `__close`, the next an unresolved address in
/// `/usr/bin/python3.11`, so the code that made them is named `python3.11 (unresolved)`, as a
/// sample's frame would be. Inside the device's idle gaps (its GPU work merged, as SQL reads it
/// here) they take 423989 and 197710 ns, no CUDA call of the process overlapping them: the
/// `osrt` cause lists them under `open64 from python3.11 (unresolved)` and `close from …`, the
/// calls without a backtrace under their function alone.
#[test]
fn os_calls_name_the_code_that_made_them_as_their_backtraces_show() {
    let name = "brycelelbach_nsightful__power_iteration__baseline.sqlite";
    let conn = common::open_export(&public_trace(name));
    let main: i64 = conn
        .query_row(
            "SELECT DISTINCT r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s \
             ON s.id = r.nameId WHERE s.value LIKE 'cudaLaunchKernel%'",
            [],
            |r| r.get(0),
        )
        .expect("the launching thread");
    let mut st = conn
        .prepare(
            "SELECT o.start, o.\"end\", s.value, o.callchainId FROM OSRT_API o JOIN StringIds s \
             ON s.id = o.nameId WHERE o.globalTid = ?1 AND o.callchainId != 0",
        )
        .expect("sql");
    let chained: Vec<(i64, i64, String, i64)> = st
        .query_map([main], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    assert_eq!(chained.len(), 6);
    let mut frames = conn
        .prepare(
            "SELECT m.value, c.unresolved FROM OSRT_CALLCHAINS c JOIN StringIds m \
             ON m.id = c.module WHERE c.id = ?1 ORDER BY c.stackDepth",
        )
        .expect("sql");
    let busy = merged(spans_of(
        &conn,
        &common::gpu_work_sql(&conn).replace("deviceId, ", ""),
    ));
    let gaps: Vec<(i64, i64)> = busy.windows(2).map(|w| (w[0].1, w[1].0)).collect();
    let calls = merged(spans_of(
        &conn,
        &format!(
            "SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid >> 24 = {}",
            main >> 24
        ),
    ));
    let mut want: Vec<(String, i64)> = Vec::new();
    for (start, end, function, chain) in &chained {
        let chain: Vec<(String, bool)> = frames
            .query_map([chain], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0)))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
        let (module, unresolved) = chain
            .iter()
            .find(|(m, _)| !m.ends_with("/libc.so.6"))
            .expect("a frame outside libc");
        assert!(*unresolved && module == "/usr/bin/python3.11", "{chain:?}");
        let label = format!("{function} from python3.11 (unresolved)");
        let inside = shared(&gaps, &[(*start, *end)]);
        assert!(shared(&inside, &calls).is_empty(), "a CUDA call takes it");
        match want.iter_mut().find(|(l, _)| *l == label) {
            Some(w) => w.1 += total(&inside),
            None => want.push((label, total(&inside))),
        }
    }
    want.sort_by_key(|w| std::cmp::Reverse(w.1));
    assert_eq!(
        want,
        vec![
            ("open64 from python3.11 (unresolved)".to_string(), 423989),
            ("close from python3.11 (unresolved)".to_string(), 197710)
        ]
    );
    let report = drill_public(name, 10, None);
    let osrt = report.idle.per_device[0]
        .causes
        .iter()
        .find(|c| c.kind.name() == "osrt")
        .expect("osrt");
    let got: Vec<(String, i64)> = osrt
        .labels
        .iter()
        .filter(|l| l.label.contains(" from "))
        .map(|l| (l.label.clone(), l.ns))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        osrt.label, "write",
        "the calls without a backtrace keep their function"
    );
}

/// The first idle-time finding names the cause that holds most of the GPU-idle time, with the
/// calls or ranges holding it inside the gaps and the fix that fits that cause — on the exports
/// whose largest gaps the test above reads from the rows: JIT on nvFuser (warm-up advice, not
/// ALLOC), the `IO` range on power_iteration (not `.item()`); and module loading on the mock
/// export (not the launch, nor object creation): its 18.25 ms gap between its two kernels
/// (1517728492..1535979030) holds the second one's cudaLaunchKernel_v7000 (1518030155..
/// 1535794161, 17764006 ns), inside which the driver's own records
/// (`CUPTI_ACTIVITY_KIND_OVERHEAD`, overheadType 6, correlationId 159: 1518033597..1526073215
/// and 1526084721..1532400292) say 14.36 ms went to runtime-triggered module loading, and the
/// tail of a cudaHostAlloc; its 4.2 ms gap before its one copy the rest of that cudaHostAlloc
/// and the copy's cudaMemcpyAsync. Its shares are of the time it describes, never above 100 %.
/// h100_2gpu, busy copying (the test above), has none.
#[test]
fn idle_findings_name_the_measured_cause_its_evidence_and_its_fix() {
    for (file, cause, held, pattern, not) in [
        (
            "NVIDIA_Fuser__df8f397__report1.sqlite",
            "JIT compilation (executor_utils::Nvrtc::CompileProgram)",
            "executor_utils::Nvrtc::CompileProgram ",
            None,
            "ALLOC",
        ),
        (
            "GindaChen_nsys-ai__mock.sqlite",
            "loading device code (runtime module loading)",
            "runtime module loading ",
            None,
            "object creation",
        ),
        (
            "brycelelbach_nsightful__power_iteration__baseline.sqlite",
            "host work in an NVTX range (IO)",
            "IO ",
            Some("HOIST, CUSTOM_OP"),
            ".item()",
        ),
    ] {
        let report = drill_public(file, 10, None);
        let findings = drill_findings(&report);
        let first = findings
            .iter()
            .find(|f| f.source == "idle")
            .unwrap_or_else(|| panic!("{file}: an idle-time finding: {findings:?}"));
        assert!(first.title.contains(cause), "{file}: {}", first.title);
        assert!(
            first.evidence.contains(&format!("inside the gaps: {held}"))
                || first.evidence.contains(&format!(", {held}")),
            "{file}: {}",
            first.evidence
        );
        assert_eq!(first.pattern.as_deref(), pattern, "{file}");
        let text = format!("{} {} {}", first.title, first.evidence, first.fix);
        assert!(!text.contains(not), "{file}: {text}");
        // The cause's idle time as the attribution measured it, summed over devices.
        let held_ns: i64 = report
            .idle
            .per_device
            .iter()
            .flat_map(|d| &d.causes)
            .filter(|c| first.title.contains(&format!("({})", c.label)) || c.label.is_empty())
            .map(|c| c.ns)
            .sum();
        assert!(held_ns > 0, "{file}");
        for share in percentages(&text) {
            assert!((0.0..=100.0).contains(&share), "{file}: {text}");
        }
    }
    // h100_2gpu's GPUs are busy, copying mostly, for all but 0.7 % of the device time: no cause
    // of the idle time holds 2 % of it, the least an idle-time finding needs (`Severity::of_share`).
    let busy = drill_public("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite", 10, None);
    assert!(
        busy.gaps.device_idle.idle_share < 0.007,
        "{}",
        busy.gaps.device_idle.idle_share
    );
    let findings = drill_findings(&busy);
    assert!(findings.iter().all(|f| f.source != "idle"), "{findings:?}");
}

/// Every "N.N%" (or "N.N %") in `text`.
fn percentages(text: &str) -> Vec<f64> {
    text.split('%')
        .filter_map(|s| {
            s.trim_end()
                .rsplit([' ', '(', '\u{a0}'])
                .next()?
                .parse::<f64>()
                .ok()
        })
        .collect()
}

/// Findings never state a share above 100 % and each idle-time finding's cause holds at least
/// as much idle time as any cause it outranks, on every public export with kernels.
#[test]
fn idle_findings_follow_the_attribution_on_every_public_export() {
    for path in common::public_exports_with_kernels() {
        let file = path.file_name().and_then(OsStr::to_str).expect("file name");
        let report = drill_public(file, 10, None);
        let findings = drill_findings(&report);
        let idle: Vec<f64> = findings
            .iter()
            .filter(|f| f.source == "idle")
            .map(|f| f.impact_us)
            .collect();
        assert!(
            idle.windows(2).all(|w| w[0] >= w[1]) || findings.iter().any(|f| f.source != "idle"),
            "{file}: {idle:?}"
        );
        for f in &findings {
            let text = format!("{} {}", f.title, f.evidence);
            for share in percentages(&text) {
                assert!((0.0..=100.0).contains(&share), "{file}: {text}");
            }
        }
        // The largest cause of the idle time is the first idle finding, when it is one.
        let device_us = report.gaps.device_idle.device_time_us;
        let mut per: std::collections::HashMap<&str, i64> = Default::default();
        for c in report.idle.per_device.iter().flat_map(|d| &d.causes) {
            *per.entry(c.kind.name()).or_default() += c.ns;
        }
        let largest = per.values().max().copied().unwrap_or(0);
        if largest as f64 / 1000.0 / device_us >= 0.02 {
            let first = findings.iter().find(|f| f.source == "idle");
            assert!(
                first.is_some_and(|f| (f.impact_us - largest as f64 / 1000.0).abs() < 1e-6),
                "{file}: {first:?}"
            );
        }
    }
}

/// The generator's `host-records` scenario tiles every idle gap with pieces the trace's own
/// records explain (module and lazy function loading inside a first launch, a profiler buffer
/// flush on its own thread, a launch waiting on a full command buffer; per step the launching
/// thread blocked, running sampled untraced code, preempted): each cause gets exactly the time
/// placed under the label placed, and the samples inside the launching thread's on-CPU time (not
/// another thread's, not one while a kernel runs) name the sampled function. What device 1 ran
/// during the full command buffer's wait is the copy and kernel placed there, and its reading
/// says so; device 1, busy throughout, asks for no records.
#[test]
fn planted_host_records_explain_exactly_the_time_placed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "host-records", 3);
    let opts = DrillOptions {
        top: 40,
        ..DrillOptions::default()
    };
    let report = drill_one(&trace, "host-records", &opts);
    let want = &answers["idle_causes"]["0"];
    let device = &report.idle.per_device[0];
    assert_eq!(json!(device.idle_ns), want["idle_ns"]);
    let got: serde_json::Map<String, Value> = device
        .causes
        .iter()
        .map(|c| {
            (
                c.kind.name().to_string(),
                json!({"ns": c.ns, "label": c.label}),
            )
        })
        .collect();
    assert_eq!(Value::Object(got), want["causes"]);
    let frames: serde_json::Map<String, Value> = device
        .causes
        .iter()
        .filter(|c| !c.frames.is_empty())
        .map(|c| {
            let f: serde_json::Map<String, Value> = c
                .frames
                .iter()
                .map(|f| (f.frame.clone(), json!(f.samples)))
                .collect();
            (c.kind.name().to_string(), Value::Object(f))
        })
        .collect();
    assert_eq!(Value::Object(frames), want["frames"]);
    assert!(
        device.cpu_records.scheduling && device.cpu_records.samples,
        "{:?}",
        device.cpu_records
    );
    // Device 1 copies, then runs a kernel, during device 0's command-buffer-full wait.
    let ahead = device
        .causes
        .iter()
        .find_map(|c| c.meanwhile.as_ref())
        .expect("what device 1 ran during host_ahead");
    let work: Vec<Value> = ahead
        .work
        .iter()
        .map(|w| json!([w.device, w.work, w.ns]))
        .collect();
    assert_eq!(
        json!({"ns": ahead.ns, "busy_ns": ahead.busy_ns, "work": work}),
        want["meanwhile"]
    );
    let waited = report
        .gaps
        .device_idle
        .top
        .iter()
        .find(|g| {
            g.cause
                .as_ref()
                .is_some_and(|c| c.kind.name() == "host_ahead")
        })
        .expect("the gap of the full command buffer");
    assert!(
        waited
            .reading
            .ends_with("; meanwhile device 1 ran copies for 80.0% of it and kernels for 10.0%; the trace shows no GPU work for the other 10.0%"),
        "{}",
        waited.reading
    );
    // A steady step's gap (2 + 3 + 0.5 ms, the 10 µs launch, 4 µs latency): 3.004 ms on-CPU
    // (three samples), 2.5 ms off it.
    let step_gap = report
        .gaps
        .device_idle
        .top
        .iter()
        .find(|g| g.end_ns - g.start_ns == 5_514_000)
        .and_then(|g| g.cause.clone())
        .expect("a steady step's gap");
    assert_eq!(
        (step_gap.kind.name(), step_gap.sampled.as_deref()),
        ("cpu_busy", Some("tokenize (libserving.so)"))
    );
    let findings = drill_findings(&report);
    let busy = findings
        .iter()
        .find(|f| f.title.contains("untraced host code on the CPU"))
        .expect("a cpu_busy finding");
    assert!(
        busy.fix.contains("tokenize (libserving.so)") && busy.fix.contains("line_profiler"),
        "{}",
        busy.fix
    );
    // Device 0's launching threads were sampled and scheduled; device 1's process (which ran
    // only a copy and a kernel) was not, and device 1 idles over the rest of the window (the
    // verdict's: first GPU operation to last, on any device): the capture cannot say what its
    // host did then, and says so for it alone.
    let second = &report.idle.per_device[1];
    assert!(
        !second.cpu_records.scheduling && !second.cpu_records.samples,
        "{:?}",
        second.cpu_records
    );
    assert!(
        second.causes.iter().any(|c| c.kind.name() == "untraced"),
        "{:?}",
        second.causes
    );
    let asks = findings
        .iter()
        .find(|f| f.title.contains("cannot say what the host did"))
        .expect("the capture's records of device 1's process are missing");
    assert!(
        asks.evidence
            .contains("no scheduling records or CPU samples"),
        "{}",
        asks.evidence
    );
}

/// The generator's `idle-causes` scenario tiles every idle gap with planted pieces (a JIT compile
/// holding a module load, a module load, a slow first launch; per step a sync, a cudaMalloc, an
/// `IO` range, GC pauses, GIL waits, untraced host time, the launch): each cause gets exactly the
/// time placed, under the label placed, and the first finding names the largest.
#[test]
fn planted_idle_causes_get_exactly_the_time_placed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, answers) = generated(dir.path(), "idle-causes", 7);
    let report = drill_one(&trace, "idle-causes", &DrillOptions::default());
    let want = &answers["idle_causes"]["0"];
    let device = report
        .idle
        .per_device
        .iter()
        .find(|d| d.device == 0)
        .expect("device 0");
    assert_eq!(json!(device.idle_ns), want["idle_ns"]);
    let got: serde_json::Map<String, Value> = device
        .causes
        .iter()
        .map(|c| {
            (
                c.kind.name().to_string(),
                json!({"ns": c.ns, "label": c.label}),
            )
        })
        .collect();
    assert_eq!(Value::Object(got), want["causes"]);
    let kinds = want["causes"].as_object().expect("causes");
    for k in [
        "jit",
        "module_load",
        "launch",
        "sync",
        "alloc",
        "nvtx",
        "gc",
        "gil",
        "untraced",
    ] {
        assert!(kinds.contains_key(k), "{k} planted");
    }
    let (largest, _) = kinds
        .iter()
        .max_by_key(|(_, c)| c["ns"].as_i64())
        .expect("a cause");
    let first = drill_findings(&report)
        .into_iter()
        .find(|f| f.source == "idle")
        .expect("an idle finding");
    let label = want["causes"][largest]["label"]
        .as_str()
        .unwrap_or_default();
    assert!(first.title.contains(label), "{largest}: {}", first.title);
}

/// DLProf writes each op's NVTX range as a Python dict whose call stack names file paths; 4 of
/// them name `torch/_jit_internal.py` (`SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '{%'
/// AND text LIKE '%/torch/_jit%'`), and no range of the export is a compilation (no `compile`, `nvrtc`
/// or `autotun` anywhere). A path is where code lives, not what the host did: none of those
/// dicts is JIT time, and the export has no jit cause at all.
#[test]
fn dlprof_dictionary_ranges_naming_jit_paths_are_not_jit_compilation() {
    let name = "MohanadOdema_DLProf__w_Relu_nsys_profile.sqlite";
    let conn = rusqlite::Connection::open_with_flags(
        public_trace(name),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open");
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).expect(sql) };
    let dicts_naming_jit = count(
        "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '{%' AND text LIKE '%/torch/_jit%'",
    );
    assert_eq!(
        dicts_naming_jit, 4,
        "the export's dict ranges naming a jit path"
    );
    let compiles = count(
        "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '%compile%' OR text LIKE '%nvrtc%' \
         OR text LIKE '%autotun%'",
    );
    assert_eq!(compiles, 0, "no compilation range");
    let report = drill_public(name, 10, None);
    for d in &report.idle.per_device {
        let jit: Vec<_> = d.causes.iter().filter(|c| c.kind.name() == "jit").collect();
        assert!(jit.is_empty(), "device {}: {jit:?}", d.device);
    }
}

/// The drill-down's folds hold state bounded by the trace's shape, not its length: on scenarios
/// generated at scale 1 and 8 (8× the steady steps; one device, and two ranks on two devices),
/// the most open host intervals, calls in flight, copies held and kernels held for the layer
/// search at once are the same, while the kernels read grow 6–8×.
#[test]
fn the_folds_hold_the_same_state_at_eight_times_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = |scenario: &str, scale: u32| {
        let path = dir.path().join(format!("{scenario}-{scale}.sqlite"));
        synth::generate(scenario, &path, &GenOptions { scale, seed: 42 }).expect("generate");
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let ix = RowIndex::loaded(&trace, scenario, None);
        let report = drill::drill_indexed(std::slice::from_ref(&ix), &DrillOptions::default())
            .expect("drill");
        assert!(
            report.patterns.found,
            "{scenario} at {scale}: the layer is found"
        );
        let p = &ix.peak;
        let peaks = [
            p.open_intervals.get(),
            p.pending_calls.get(),
            p.pending_copies.get(),
            p.sequence_kernels.get(),
        ];
        eprintln!(
            "{scenario} at scale {scale}: {} kernels, peaks {peaks:?}",
            ix.kernels
        );
        (ix.kernels, peaks)
    };
    for scenario in ["host-bound", "tp2-phases"] {
        let (kernels_1, peaks_1) = held(scenario, 1);
        let (kernels_8, peaks_8) = held(scenario, 8);
        assert!(
            kernels_8 >= 6 * kernels_1,
            "{scenario}: {kernels_1} → {kernels_8}"
        );
        assert_eq!(
            peaks_8, peaks_1,
            "{scenario}: open intervals, calls, copies, layer-search kernels"
        );
        assert!(
            peaks_1[0] > 0 && peaks_1[1] > 0 && peaks_1[3] > 0,
            "{scenario}: {peaks_1:?}"
        );
    }
}

/// The drill-down reads event rows only through `EventRows`' iterators (so it runs the same
/// over the file, whose `meta` holds none): over a source whose `meta` has no event table it
/// reports exactly what it reports over the loaded trace, on generated scenarios with several
/// devices, graphs and planted causes, and on a public export with pageable async copies.
#[test]
fn the_drill_down_reads_rows_only_through_the_iterators() {
    use nsys_lens::model::rows::EventRows;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut traces: Vec<(String, Trace)> = ["idle-causes", "tp2-phases", "cuda-graphs", "layers"]
        .iter()
        .map(|&s| (s.to_string(), generated(dir.path(), s, 42).0))
        .collect();
    let public = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let loaded = load_path(&public, LoadOptions::all()).expect("load");
    traces.push(("mfu_2gpu_before".into(), loaded));
    let opts = DrillOptions::default();
    for (label, trace) in traces {
        let whole = drill_one(&trace, &label, &opts);
        let rows_only = common::RowsOnly::of(trace);
        let input = DrillInput {
            rows: &rows_only as &dyn EventRows,
            label: &label,
            step_marker: None,
        };
        let streamed = drill::drill(&[input], &opts).expect("drill");
        assert_eq!(
            serde_json::to_value(&streamed).ok(),
            serde_json::to_value(&whole).ok(),
            "{label}"
        );
        assert!(
            whole.idle.per_device.iter().any(|d| d.idle_ns > 0),
            "{label}"
        );
    }
}

/// Idle time inside a forward step's own range (outside the ranges named in it) is reported
/// under the step marker's pattern, once, not under each step's name (every step names its
/// range differently), and its finding says it is the step's own range.
#[test]
fn idle_time_in_the_step_ranges_adds_up_under_the_markers_pattern() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let (trace, _) = generated(dir.path(), "tp2-phases", 42);
    let report = drill_one(&trace, "tp2", &DrillOptions::default());
    let pattern = nsys_lens::names::steps::StepStyle::TensorrtLlm.pattern();
    let mut under_pattern = 0;
    for device in &report.idle.per_device {
        for cause in &device.causes {
            for l in &cause.labels {
                assert!(
                    !l.label.contains("_forward_step ") || l.label == pattern,
                    "a step's own name as a label: {}",
                    l.label
                );
                if l.label == pattern {
                    assert!(l.ns > 0 && l.ns <= device.idle_ns, "{l:?}");
                    under_pattern += 1;
                }
            }
        }
    }
    assert!(
        under_pattern > 0,
        "idle time inside the step ranges: {report:?}"
    );
    let findings = drill_findings(&report);
    let text: Vec<String> = findings
        .iter()
        .map(|f| format!("{} {}", f.title, f.evidence))
        .collect();
    assert!(
        text.iter().any(|t| t.contains(&format!(
            "in the forward step ({pattern}) outside its named ranges"
        ))),
        "{text:#?}"
    );
}

/// One export per rank whose second host's clock is off beyond what the session start times
/// say (planted: rank 1's kernels shifted by +137 µs, or −420 µs): the files are put on one
/// clock by their collectives' ends, the offset is found to the ns (the generator's kernels end
/// together), and the straggler, its share and lateness are the one-file answer. With the
/// session start alone, +137 µs made rank 1 last in every collective and −420 µs named rank 0.
#[test]
fn per_rank_files_with_clock_errors_give_the_one_file_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("tp2.sqlite");
    synth::generate("tp2-straggler", &one, &GenOptions { scale: 1, seed: 42 }).expect("gen");
    let straggler = |args: &[&Path]| {
        let mut a: Vec<&OsStr> = vec![OsStr::new("drill")];
        a.extend(args.iter().map(|p| p.as_os_str()));
        a.push(OsStr::new("--json"));
        let out = nsys_lens(&a);
        assert!(out.status.success(), "{}", describe(&a, &out));
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["stragglers"].clone()
    };
    let whole = straggler(&[&one]);
    let rank = |device: i64, shift_ns: i64, name: &str| {
        common::rank_file(&one, dir.path(), device, shift_ns, name)
    };
    let r0 = rank(0, 0, "rank0.sqlite");
    for shift in [137_000, -420_000] {
        let r1 = rank(1, shift, &format!("rank1_{shift}.sqlite"));
        let s = straggler(&[&r0, &r1]);
        assert_eq!(s["rank"]["device"], whole["rank"]["device"], "{s}");
        assert_eq!(s["share"], whole["share"], "{s}");
        assert_eq!(s["mean_lateness_us"], whole["mean_lateness_us"], "{s}");
        let said = format!("{:+.1} µs (spread 0.0 µs", -(shift as f64) / 1000.0);
        assert!(
            s["alignment"].as_str().is_some_and(|a| a.contains(&said)),
            "{s}"
        );
    }
    // One export holding both ranks: nothing to correct.
    assert!(whole["alignment"].is_null(), "{whole}");
}

/// A rank file that kept every rank's launch calls but only its own kernels: the launches of
/// the processes that ran no kernel in it are not held for a join (they would all be, to the
/// end), so the join holds no more than over the whole run, and the rank's kernels still find
/// their launches.
#[test]
fn launches_of_processes_without_kernels_are_not_held() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = dir.path().join("tp4.sqlite");
    synth::generate("tp4-straggler", &one, &GenOptions { scale: 1, seed: 7 }).expect("gen");
    let rank = common::rank_file(&one, dir.path(), 2, 0, "rank2.sqlite");
    let held = |path: &Path| {
        let trace = load_path(path, LoadOptions::all()).expect("load");
        let ix = RowIndex::loaded(&trace, "t", None);
        let (mut joined, mut kernels) = (0usize, 0usize);
        let mut join = ix.launch_join();
        for k in nsys_lens::model::rows::EventRows::kernels(&trace) {
            kernels += 1;
            joined += usize::from(join.find(k.start, k.process, k.correlation).is_some());
        }
        (join.peak(), joined, kernels)
    };
    let (whole_peak, whole_joined, whole_kernels) = held(&one);
    let (rank_peak, rank_joined, rank_kernels) = held(&rank);
    assert_eq!(
        whole_joined, whole_kernels,
        "every kernel of the run finds its launch"
    );
    assert_eq!(
        rank_joined, rank_kernels,
        "every kernel of the rank finds its launch"
    );
    assert!(
        rank_kernels * 4 == whole_kernels,
        "{rank_kernels} of {whole_kernels}"
    );
    assert!(
        rank_peak <= whole_peak,
        "held {rank_peak} calls at once in the rank file, {whole_peak} over the whole run"
    );
}
