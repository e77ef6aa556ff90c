//! `nsys-lens analyze` against the generator's answers (regression pair, TP=2 traces), the
//! JSON shape of the issue, the text layouts, every public export, and bad input.
//!
//! The answers come from `synth::answers::analyze`, which derives them from where the scenario
//! placed its steps (it never runs the analysis).

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::{
    EXIT_INPUT, EXIT_USAGE, assert_one_line_error, check_one_line_error, describe, nsys_lens,
    public_trace, public_traces_dir,
};
use nsys_lens::synth::{self, GenOptions};
use serde_json::Value;
use tempfile::TempDir;

const PROFILES: [&str; 2] = ["standard", "trtllm-skill"];
/// The issue's `T` keys, in order.
const T_KEYS: [&str; 12] = [
    "label",
    "iteration_method",
    "iterations",
    "benchmark_window",
    "steady_steps",
    "wall_time_per_step_us",
    "inter_step_gap_us",
    "kernels_per_step",
    "nvtx_per_step_us",
    "kernel_time_per_step_us",
    "api_time_per_step_us",
    "warnings",
];
/// Figures computed in µs from integer ns by both sides: equal up to float rounding.
const REL_TOL: f64 = 1e-9;

fn generate(dir: &Path, scenario: &str) -> (PathBuf, Value) {
    let path = dir.join(format!("{scenario}.sqlite"));
    let answers = synth::generate(scenario, &path, &GenOptions { scale: 1, seed: 42 })
        .unwrap_or_else(|e| panic!("generate {scenario}: {e}"));
    (path, answers)
}

/// Runs `nsys-lens analyze ARGS` and returns stdout; the command must succeed.
fn analyze_ok<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> String {
    let mut all: Vec<std::ffi::OsString> = vec!["analyze".into()];
    all.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
    let refs: Vec<&OsStr> = all.iter().map(|a| a.as_os_str()).collect();
    let out = nsys_lens(&refs);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&refs, &out));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn analyze_json(paths: &[&Path], profile: &str, extra: &[&str]) -> Value {
    let mut args: Vec<&OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    args.extend([
        OsStr::new("--json"),
        OsStr::new("--profile"),
        OsStr::new(profile),
    ]);
    args.extend(extra.iter().map(OsStr::new));
    serde_json::from_str(&analyze_ok(args)).expect("analyze --json prints JSON")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs()).max(1.0)
}

/// Compares a number, or every key of a `{name: number}` map (same key set), or equal values.
fn check(what: &str, got: &Value, want: &Value, errors: &mut Vec<String>) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (
                g.as_f64().unwrap_or(f64::NAN),
                w.as_f64().unwrap_or(f64::NAN),
            );
            if !close(g, w) {
                errors.push(format!("{what}: analyze {g}, answers {w}"));
            }
        }
        (Value::Object(g), Value::Object(w)) => {
            let (gk, wk): (Vec<&String>, Vec<&String>) = (g.keys().collect(), w.keys().collect());
            let (mut gs, mut ws) = (gk.clone(), wk.clone());
            gs.sort();
            ws.sort();
            if gs != ws {
                errors.push(format!("{what}: keys {gk:?}, answers {wk:?}"));
            }
            for (k, wv) in w {
                if let Some(gv) = g.get(k) {
                    check(&format!("{what}.{k}"), gv, wv, errors);
                }
            }
        }
        _ if got == want => {}
        _ => errors.push(format!("{what}: analyze {got}, answers {want}")),
    }
}

/// Every per-trace figure the answers state, against the breakdown `t`.
fn check_breakdown(label: &str, t: &Value, answers: &Value, errors: &mut Vec<String>) {
    let keys = T_KEYS[1..11]
        .iter()
        .chain(["step_wall_times_us", "gpu_time_per_step_us"].iter());
    for &key in keys {
        let Some(want) = answers.get(key) else {
            continue;
        };
        match (&t[key], want) {
            (Value::Array(g), Value::Array(w)) => {
                if g.len() != w.len() {
                    errors.push(format!(
                        "{label}.{key}: {} values, answers {}",
                        g.len(),
                        w.len()
                    ));
                }
                for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                    check(&format!("{label}.{key}[{i}]"), gv, wv, errors);
                }
            }
            (got, want) => check(&format!("{label}.{key}"), got, want, errors),
        }
    }
    let iso = &t["isolation"];
    check(
        &format!("{label}.phases"),
        &json_len(&iso["phases"]),
        &answers["phases"],
        errors,
    );
    check(
        &format!("{label}.benchmark_phase"),
        &iso["benchmark_phase"],
        &answers["benchmark_phase"],
        errors,
    );
    check(
        &format!("{label}.total_iterations"),
        &iso["total_iterations"],
        &answers["total_iterations"],
        errors,
    );
    check(
        &format!("{label}.common_size"),
        &iso["common_size"],
        &answers["common_size"],
        errors,
    );
    let dur = t["steady"]["step_duration_us"]["avg"].clone();
    check(
        &format!("{label}.step_duration_avg"),
        &dur,
        &answers["step_duration_avg_us"],
        errors,
    );
}

/// A JSON document with object keys in text order (`serde_json::Value` sorts them).
enum Node {
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    Leaf,
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Node, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Node>()? {
                    out.push((k, v));
                }
                Ok(Node::Map(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Node, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element::<Node>()? {
                    out.push(v);
                }
                Ok(Node::Seq(out))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
        }
        d.deserialize_any(V)
    }
}

impl Node {
    fn get(&self, key: &str) -> &Node {
        match self {
            Node::Map(m) => m
                .iter()
                .find(|(k, _)| k == key)
                .map_or(&Node::Leaf, |(_, v)| v),
            _ => &Node::Leaf,
        }
    }

    fn items(&self) -> &[Node] {
        match self {
            Node::Seq(v) => v,
            _ => &[],
        }
    }

    fn keys(&self) -> Vec<&str> {
        match self {
            Node::Map(m) => m.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

fn json_len(v: &Value) -> Value {
    Value::from(v.as_array().map_or(0, Vec::len))
}

fn assert_no_errors(errors: Vec<String>) {
    assert!(errors.is_empty(), "mismatches:\n{}", errors.join("\n"));
}

#[test]
fn regression_pair_reproduces_the_generator_in_both_profiles() {
    let dir = TempDir::new().unwrap();
    let (base, base_answers) = generate(dir.path(), "regression-baseline");
    let (target, target_answers) = generate(dir.path(), "regression-target");
    let mut errors = Vec::new();
    for profile in PROFILES {
        let r = analyze_json(&[&base, &target], profile, &[]);
        assert_eq!(r["profile"], profile);
        let (b, t, c) = (&r["baseline"], &r["target"], &r["comparison"]);
        check_breakdown(
            &format!("{profile}.baseline"),
            b,
            &base_answers["analyze"][profile],
            &mut errors,
        );
        check_breakdown(
            &format!("{profile}.target"),
            t,
            &target_answers["analyze"][profile],
            &mut errors,
        );
        let expected = &target_answers["versus_baseline"][profile];
        let statuses: serde_json::Map<String, Value> = c["nvtx"]
            .as_array()
            .expect("nvtx rows")
            .iter()
            .map(|row| {
                (
                    row["name"].as_str().unwrap_or("").to_string(),
                    row["status"].clone(),
                )
            })
            .collect();
        check(
            &format!("{profile}.statuses"),
            &Value::Object(statuses),
            &expected["nvtx_status"],
            &mut errors,
        );
        let host = expected["host_overhead_dominates"].as_bool() == Some(true);
        assert!(
            host,
            "the scenario is built so that host overhead dominates"
        );
        assert_eq!(c["primary_cause"], "inter-step host overhead", "{profile}");
        assert!(
            c["comparability"].as_array().is_some_and(Vec::is_empty),
            "{profile}: {}",
            c["comparability"]
        );
        let wall = &c["wall_time_per_step_us"];
        let (bw, tw) = (
            base_answers["analyze"][profile]["wall_time_per_step_us"]
                .as_f64()
                .unwrap_or(0.0),
            target_answers["analyze"][profile]["wall_time_per_step_us"]
                .as_f64()
                .unwrap_or(0.0),
        );
        check(
            &format!("{profile}.delta_pct"),
            &wall["delta_pct"],
            &Value::from((tw - bw) / bw * 100.0),
            &mut errors,
        );
    }
    assert_no_errors(errors);
}

/// The issue's numbers: `_fetch_new_requests` 36 → 270 µs/step, `broadcast_requests` NEW at
/// 250, `_update_requests` 413 → 723, more kernels per step (standard counts each once per step).
#[test]
fn regression_pair_shows_the_issue_numbers_in_standard() {
    let dir = TempDir::new().unwrap();
    let (base, _) = generate(dir.path(), "regression-baseline");
    let (target, _) = generate(dir.path(), "regression-target");
    let r = analyze_json(&[&base, &target], "standard", &[]);
    let row = |name: &str| {
        r["comparison"]["nvtx"]
            .as_array()
            .and_then(|rows| rows.iter().find(|x| x["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    for (name, b, t, status) in [
        ("_fetch_new_requests", 36.0, 270.0, "REGRESSION"),
        ("broadcast_requests", 0.0, 250.0, "NEW"),
        ("_update_requests", 413.0, 723.0, "REGRESSION"),
    ] {
        let x = row(name);
        assert!(
            close(x["baseline_us_per_step"].as_f64().unwrap_or(-1.0), b),
            "{x}"
        );
        assert!(
            close(x["target_us_per_step"].as_f64().unwrap_or(-1.0), t),
            "{x}"
        );
        assert_eq!(x["status"], status, "{x}");
    }
    let k = &r["comparison"]["kernels_per_step"];
    assert_eq!(
        (k["baseline"].as_f64(), k["target"].as_f64()),
        (Some(6.0), Some(22.0))
    );
    let top: Vec<&str> = r["comparison"]["handoff"]["top_regressing_ops"]
        .as_array()
        .map(|v| v.iter().filter_map(|o| o["nvtx_name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        top,
        [
            "_update_requests",
            "broadcast_requests",
            "_fetch_new_requests"
        ]
    );
    let line = r["comparison"]["handoff"]["line_profiler"]
        .as_str()
        .unwrap_or("");
    assert!(line.starts_with("TLLM_LINE_PROFILER_FUNCTIONS=\"tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._update_requests,"), "{line}");
}

#[test]
fn tp2_traces_reproduce_the_generator_with_allreduce_grouping_and_rank_dedup() {
    let dir = TempDir::new().unwrap();
    let mut errors = Vec::new();
    for scenario in ["tp2-straggler", "tp2-phases"] {
        let (path, answers) = generate(dir.path(), scenario);
        for profile in PROFILES {
            let r = analyze_json(&[&path], profile, &[]);
            let t = &r["baseline"];
            let want = &answers["analyze"][profile];
            check_breakdown(&format!("{scenario}.{profile}"), t, want, &mut errors);
            assert_eq!(t["iteration_method"], "allreduce");
            assert_eq!(t["isolation"]["common_size"], 8, "4 layers × 2 ranks");
            // Each steady step was recorded by both ranks and merged into one.
            let steady = t["steady_steps"].as_u64().unwrap_or(0);
            assert_eq!(
                t["steady"]["ranges"].as_u64(),
                Some(2 * steady),
                "{scenario} {profile}"
            );
            assert!(r["target"].is_null() && r["comparison"].is_null());
        }
        let standard = analyze_json(&[&path], "standard", &[]);
        let iso = &standard["baseline"]["isolation"];
        assert_eq!(
            iso["nvtx_steps_in_window"], answers["analyze"]["standard"]["iterations"],
            "cross-check"
        );
        let warnings = standard["baseline"]["warnings"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(
            warnings, 0,
            "allreduce iterations and NVTX steps agree: {}",
            standard["baseline"]["warnings"]
        );
    }
    assert_no_errors(errors);
}

/// GPU busy per step counts every GPU operation under `standard`: copies (copy-bound), whole
/// graph replays (serving-graphs) and node-level graph kernels (serving-graphs-node), each
/// against the oracle's union of every placed GPU row clipped to the steady cycles. The
/// kernel-only `trtllm-skill` profile keeps the reference's top kernels' summed time.
#[test]
fn gpu_busy_per_step_counts_copies_and_graph_replays_in_standard() {
    let dir = TempDir::new().unwrap();
    let mut errors = Vec::new();
    let mut busy = Vec::new();
    for scenario in ["copy-bound", "serving-graphs", "serving-graphs-node"] {
        let (path, answers) = generate(dir.path(), scenario);
        for profile in PROFILES {
            let t = &analyze_json(&[&path], profile, &[])["baseline"];
            let want = &answers["analyze"][profile];
            check_breakdown(&format!("{scenario}.{profile}"), t, want, &mut errors);
            assert!(
                want["gpu_time_per_step_us"].is_number(),
                "{scenario} {profile}: the oracle states GPU time per step"
            );
            if profile == "standard" {
                assert_eq!(t["gpu_time_label"], "GPU busy per step (devices summed)");
                busy.push(t["gpu_time_per_step_us"].as_f64().unwrap_or(0.0));
            }
        }
    }
    assert_no_errors(errors);
    // The copies dominate copy-bound's steps: busy per step far above its kernels' time.
    let (path, _) = generate(dir.path(), "copy-bound");
    let t = &analyze_json(&[&path], "standard", &[])["baseline"];
    let kernels: f64 = t["kernel_ops"].as_array().map_or(0.0, |v| {
        v.iter().filter_map(|r| r["us_per_step"].as_f64()).sum()
    });
    assert!(busy[0] > 10.0 * kernels, "{} vs {kernels}", busy[0]);
    // Graph level covers the 1 µs gaps between nodes inside a replay; node level does not.
    assert!(busy[1] > busy[2], "{busy:?}");
}

/// The warm-up phase has a steady-sized step: the reference's whole-trace steady state takes it
/// in (and the 150 ms pause after it), which the trtllm-skill profile reproduces and flags.
#[test]
fn tp2_phases_benchmark_is_not_the_last_phase() {
    let dir = TempDir::new().unwrap();
    let (path, answers) = generate(dir.path(), "tp2-phases");
    assert_eq!(answers["analyze"]["standard"]["benchmark_phase"], 1);
    assert_eq!(answers["analyze"]["standard"]["phases"], 3);
    let skill = analyze_json(&[&path], "trtllm-skill", &[]);
    let std = analyze_json(&[&path], "standard", &[]);
    assert_eq!(skill["baseline"]["isolation"]["benchmark_phase"], 1);
    let (ws, ss) = (
        std["baseline"]["wall_time_per_step_us"]
            .as_f64()
            .unwrap_or(0.0),
        skill["baseline"]["wall_time_per_step_us"]
            .as_f64()
            .unwrap_or(0.0),
    );
    assert!(
        ss > 3.0 * ws,
        "the reference's span includes the warm-up pause: {ss} vs {ws}"
    );
    let warned = skill["baseline"]["warnings"].as_array().is_some_and(|w| {
        w.iter().any(|w| {
            w.as_str()
                .is_some_and(|s| s.contains("outside the benchmark window"))
        })
    });
    assert!(warned, "{}", skill["baseline"]["warnings"]);
}

/// The reference divides NVTX totals by `--tp-size` (and nothing else).
#[test]
fn tp_size_divides_nvtx_in_trtllm_skill_only() {
    let dir = TempDir::new().unwrap();
    let (path, answers) = generate(dir.path(), "tp2-straggler");
    let r = analyze_json(&[&path], "trtllm-skill", &["--tp-size", "2"]);
    let want = &answers["analyze"]["trtllm-skill"];
    let mut errors = Vec::new();
    let halved: serde_json::Map<String, Value> = want["nvtx_per_step_us"]
        .as_object()
        .expect("nvtx answers")
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_f64().unwrap_or(0.0) / 2.0)))
        .collect();
    check(
        "nvtx/2",
        &r["baseline"]["nvtx_per_step_us"],
        &Value::Object(halved),
        &mut errors,
    );
    check(
        "kernels",
        &r["baseline"]["kernel_time_per_step_us"],
        &want["kernel_time_per_step_us"],
        &mut errors,
    );
    assert_no_errors(errors);
    let args = [
        OsStr::new("analyze"),
        path.as_os_str(),
        OsStr::new("--tp-size"),
        OsStr::new("2"),
    ];
    let out = nsys_lens(args);
    let line = assert_one_line_error(&args, &out, EXIT_USAGE, Some("trtllm-skill"));
    assert!(line.contains("--tp-size"), "{line}");
}

/// The JSON is `{"schema_version", "profile", "baseline": T, "target": T|null, "comparison":
/// C|null}` with the issue's keys first, in the issue's order, after the version.
#[test]
fn json_shape_is_the_issues() {
    let dir = TempDir::new().unwrap();
    let (base, _) = generate(dir.path(), "regression-baseline");
    let (target, _) = generate(dir.path(), "regression-target");
    let starts_with = |v: &Node, want: &[&str]| {
        let got = v.keys();
        assert!(
            got.len() >= want.len() && got[..want.len()] == *want,
            "keys {got:?} must start with {want:?}"
        );
    };
    for profile in PROFILES {
        let text = analyze_ok([
            base.as_os_str(),
            target.as_os_str(),
            OsStr::new("--json"),
            OsStr::new("--profile"),
            OsStr::new(profile),
        ]);
        let r: Node = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            r.keys(),
            [
                "schema_version",
                "profile",
                "baseline",
                "target",
                "comparison"
            ]
        );
        for t in [r.get("baseline"), r.get("target")] {
            starts_with(t, &T_KEYS);
            assert_eq!(t.get("benchmark_window").keys(), ["start_ns", "end_ns"]);
            assert_eq!(t.get("inter_step_gap_us").keys(), ["p50", "p90"]);
            assert!(matches!(t.get("warnings"), Node::Seq(_)));
        }
        let c = r.get("comparison");
        starts_with(
            c,
            &[
                "wall_time_per_step_us",
                "nvtx",
                "kernels",
                "api",
                "kernels_per_step",
                "conclusion",
                "comparability",
            ],
        );
        starts_with(
            c.get("wall_time_per_step_us"),
            &["baseline", "target", "delta_pct"],
        );
        starts_with(
            c.get("kernels_per_step"),
            &["baseline", "target", "delta_pct"],
        );
        for table in ["nvtx", "kernels", "api"] {
            let rows = c.get(table).items();
            assert!(!rows.is_empty(), "{table}");
            for row in rows {
                starts_with(
                    row,
                    &[
                        "name",
                        "baseline_us_per_step",
                        "target_us_per_step",
                        "delta_us",
                        "status",
                    ],
                );
            }
        }
        let r: Value = serde_json::from_str(&text).expect("JSON");
        let c = &r["comparison"];
        assert!(c["conclusion"].is_string() && c["comparability"].is_array());
        let single = analyze_json(&[&base], profile, &[]);
        assert!(single["target"].is_null() && single["comparison"].is_null());
        assert_eq!(
            single["baseline"], r["baseline"],
            "the baseline does not depend on the target"
        );
    }
}

#[test]
fn trtllm_skill_text_is_the_reference_layout() {
    let dir = TempDir::new().unwrap();
    let (base, ba) = generate(dir.path(), "regression-baseline");
    let (target, ta) = generate(dir.path(), "regression-target");
    let text = analyze_ok([
        base.as_os_str(),
        target.as_os_str(),
        OsStr::new("--profile"),
        OsStr::new("trtllm-skill"),
        OsStr::new("--baseline-label"),
        OsStr::new("v1.1"),
        OsStr::new("--target-label"),
        OsStr::new("main"),
    ]);
    let rule = "=".repeat(80);
    assert!(
        text.starts_with(&format!("\n\n{rule}\nANALYSIS: v1.1\n{rule}\n")),
        "{text}"
    );
    let wall = |a: &Value| {
        a["analyze"]["trtllm-skill"]["wall_time_per_step_us"]
            .as_f64()
            .unwrap_or(0.0)
    };
    let (bw, tw) = (wall(&ba), wall(&ta));
    for needle in [
        "\n--- Iteration Detection (method: nvtx) ---\n  Total iterations: 43\n  Phases detected: 1\n".to_string(),
        "  Benchmark phase: iters 0-42 (43 iters)\n".to_string(),
        "  Max generation requests observed: 64\n  Steady-state steps (0 ctx, 64 gen): 40\n  Unique steady-state steps: 40\n".to_string(),
        format!("  Wall time per step: {bw:.1} us\n"),
        format!("COMPARISON: v1.1 vs main\n{rule}\n"),
        format!("  Wall time per step: {bw:.1} vs {tw:.1} us  ({:+.1} us, {:+.1}%)\n", tw - bw, (tw - bw) / bw * 100.0),
        "  Operation                                  Baseline     Target      Delta   Delta%  Status\n".to_string(),
        "  CONCLUSION: Regression is primarily in INTER-STEP HOST OVERHEAD.\n    The gap between forward steps increased more than step execution.\n".to_string(),
        "    broadcast_requests: NEW  (+".to_string(),
    ] {
        assert!(text.contains(&needle), "missing {needle:?} in:\n{text}");
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("  _fetch_new_requests "))
        .unwrap_or("");
    assert!(row.ends_with("+650%  REGRESSION"), "{row:?}");
}

#[test]
fn standard_text_states_the_facts() {
    let dir = TempDir::new().unwrap();
    let (base, _) = generate(dir.path(), "regression-baseline");
    let (target, _) = generate(dir.path(), "regression-target");
    let out = dir.path().join("report.txt");
    let stdout = analyze_ok([
        base.as_os_str(),
        target.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ]);
    assert!(stdout.is_empty(), "-o writes the report to the file only");
    let text = std::fs::read_to_string(&out).expect("report written");
    for needle in [
        "Root cause: baseline   (profile: standard)",
        "Iterations: nvtx — no allreduce kernels",
        "wall time per step           2642.0 µs",
        "Comparison: baseline → target",
        "primarily INTER-STEP HOST OVERHEAD",
        "Comparability: same batch",
        "NVTX ops (µs/step, by change in self time)",
        "_update_requests                                        413.0      723.0     +310.0     +310.0            REGRESSION",
        "broadcast_requests                                        0.0      250.0     +250.0     +250.0            NEW",
        "The NVTX op whose own (self) time grew most: _update_requests (+310.0 µs per step).",
        "TLLM_LINE_PROFILER_FUNCTIONS=\"",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

/// The swept exports (every public one under `--full`): analysed (exit 0, JSON) in both
/// profiles, or refused with one line when it has no kernels.
#[test]
fn public_exports_are_analysed_or_refused_clearly() {
    let swept = common::sweep_exports();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(public_traces_dir().join("MANIFEST.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let mut analysed = 0;
    for entry in manifest.as_array().expect("manifest list") {
        let file = entry["file"].as_str().expect("file");
        let kernels = entry["counts"]["CUPTI_ACTIVITY_KIND_KERNEL"]
            .as_u64()
            .unwrap_or(0);
        let path = public_trace(file);
        if !swept.contains(&path) {
            continue;
        }
        for profile in PROFILES {
            let args = [
                OsStr::new("analyze"),
                path.as_os_str(),
                OsStr::new("--json"),
                OsStr::new("--profile"),
                OsStr::new(profile),
            ];
            let out = nsys_lens(args);
            if kernels == 0 {
                if let Err(e) =
                    check_one_line_error(&args, &out, EXIT_INPUT, Some("no GPU kernels"))
                {
                    panic!("{e}");
                }
                continue;
            }
            assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
            let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            let t = &r["baseline"];
            assert!(
                ["allreduce", "nvtx", "inferred", "none"]
                    .contains(&t["iteration_method"].as_str().unwrap_or(""))
            );
            let without = t["wall_time_per_step_us"].is_null();
            let warned = t["warnings"].as_array().is_some_and(|w| !w.is_empty());
            assert!(
                !without || warned,
                "{file} {profile}: no per-step figures must come with a reason"
            );
            analysed += 1;
        }
        // Text output must not panic either.
        let out = nsys_lens([OsStr::new("analyze"), path.as_os_str()]);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{file}"
        );
    }
    let with_kernels = common::sweep_exports_with_kernels().len();
    assert_eq!(analysed, PROFILES.len() * with_kernels, "analyses");
}

#[test]
fn bad_inputs_exit_3_with_one_line() {
    let dir = TempDir::new().unwrap();
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let rep = dir.path().join("x.nsys-rep");
    std::fs::write(&rep, common::lcg_bytes(2, 4096)).unwrap();
    let random = dir.path().join("random.sqlite");
    std::fs::write(&random, common::lcg_bytes(1, 4096)).unwrap();
    let missing = dir.path().join("does-not-exist.sqlite");
    let (good, _) = generate(dir.path(), "regression-baseline");
    for (path, needle) in [
        (&empty, "empty"),
        (&rep, "nsys export"),
        (&random, "not an SQLite database"),
        (&missing, "does-not-exist.sqlite"),
    ] {
        for args in [
            vec![OsStr::new("analyze"), path.as_os_str()],
            vec![
                OsStr::new("analyze"),
                good.as_os_str(),
                path.as_os_str(),
                OsStr::new("--json"),
            ],
        ] {
            let out = nsys_lens(&args);
            assert!(out.stdout.is_empty(), "{}", describe(&args, &out));
            assert_one_line_error(&args, &out, EXIT_INPUT, Some(needle));
        }
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = TempDir::new().unwrap();
    let (good, _) = generate(dir.path(), "regression-baseline");
    for args in [
        vec!["analyze"],
        vec!["analyze", "--profile", "foo"],
        vec!["analyze", "--profile", "trtllm-skill", "--tp-size", "0"],
        vec!["analyze", "--profile", "trtllm-skill", "--tp-size", "two"],
    ] {
        let mut args: Vec<&OsStr> = args.into_iter().map(OsStr::new).collect();
        if args.len() > 1 {
            args.insert(1, good.as_os_str());
        }
        let out = nsys_lens(&args);
        let ctx = describe(&args, &out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{ctx}");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{ctx}"
        );
        assert!(!out.stderr.is_empty(), "{ctx}");
    }
}

/// The reference oracle (`tests/reference/analyze_host_overhead_oracle.py`): its text, or its
/// JSON with `--json`; `None` when the reference itself fails (a missing table).
fn oracle(paths: &[&Path], extra: &[&str]) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/reference/analyze_host_overhead_oracle.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .args(paths)
        .args(extra)
        .output()
        .expect("python3 must be installed");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no such table"),
            "oracle failed on {paths:?}: {err}"
        );
        return None;
    }
    Some(String::from_utf8(out.stdout).expect("utf-8"))
}

/// Our trtllm-skill text must equal the oracle's byte for byte, and every key of the dict the
/// reference's `analyze_single_trace` returns must equal ours.
fn matches_oracle(paths: &[&Path], extra: &[&str]) -> bool {
    let Some(expected) = oracle(paths, extra) else {
        return false;
    };
    let mut args: Vec<&OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    args.extend([OsStr::new("--profile"), OsStr::new("trtllm-skill")]);
    args.extend(extra.iter().map(OsStr::new));
    let text = analyze_ok(&args);
    assert_eq!(
        text, expected,
        "{paths:?} {extra:?}: text differs from the reference oracle"
    );
    let mut with_json: Vec<&str> = extra.to_vec();
    with_json.push("--json");
    let reference: Value =
        serde_json::from_str(&oracle(paths, &with_json).unwrap_or_default()).expect("oracle JSON");
    let ours = analyze_json(paths, "trtllm-skill", extra);
    let mut errors = Vec::new();
    for side in ["baseline", "target"] {
        let (r, t) = (&reference[side], &ours[side]);
        if r.is_null() {
            continue;
        }
        let found = t["isolation"]["benchmark_phase"].is_number();
        check(
            &format!("{side}.bench_found"),
            &Value::from(found),
            &r["bench_found"],
            &mut errors,
        );
        let pairs = [
            ("bench_iter_count", &t["iterations"]),
            ("wall_time_stats", &t["isolation"]["iteration_wall_us"]),
            ("gap_stats", &t["isolation"]["iteration_gap_us"]),
            ("steady_step_count", &t["steady_steps"]),
            ("step_dur_stats", &t["steady"]["step_duration_us"]),
            ("step_gap_stats", &t["steady"]["inter_step_gap_us"]),
            ("ss_wall_per_step", &t["wall_time_per_step_us"]),
            ("nvtx_per_step", &t["nvtx_per_step_us"]),
            ("gpu_per_step", &t["gpu_time_per_step_us"]),
            ("kernels_per_step", &t["kernels_per_step"]),
            ("kernel_per_step", &t["kernel_time_per_step_us"]),
            ("api_per_step", &t["api_time_per_step_us"]),
        ];
        for (key, got) in pairs {
            if let Some(want) = r.get(key) {
                exact(&format!("{side}.{key}"), got, want, &mut errors);
            }
        }
    }
    assert_no_errors(errors);
    true
}

/// Bit-equal numbers (the reference's float operations, in its order), equal everything else.
fn exact(what: &str, got: &Value, want: &Value, errors: &mut Vec<String>) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) if g.as_f64() == w.as_f64() => {}
        (Value::Object(g), Value::Object(w)) => {
            if g.len() != w.len() {
                errors.push(format!("{what}: {} keys, reference {}", g.len(), w.len()));
            }
            for (k, wv) in w {
                exact(
                    &format!("{what}.{k}"),
                    g.get(k).unwrap_or(&Value::Null),
                    wv,
                    errors,
                );
            }
        }
        _ if got == want => {}
        _ => errors.push(format!("{what}: ours {got}, reference {want}")),
    }
}

#[test]
fn trtllm_skill_matches_the_reference_oracle() {
    let dir = TempDir::new().unwrap();
    let mut compared = 0;
    for &(scenario, _) in synth::scenarios() {
        let (path, _) = generate(dir.path(), scenario);
        assert!(
            matches_oracle(&[&path], &[]),
            "{scenario}: the reference could not run"
        );
        compared += 1;
    }
    let base = dir.path().join("regression-baseline.sqlite");
    let target = dir.path().join("regression-target.sqlite");
    assert!(matches_oracle(
        &[&base, &target],
        &["--baseline-label", "v1.1", "--target-label", "main"]
    ));
    let tp2 = dir.path().join("tp2-phases.sqlite");
    let straggler = dir.path().join("tp2-straggler.sqlite");
    assert!(matches_oracle(&[&straggler, &tp2], &["--tp-size", "2"]));
    // The swept exports with kernels (the others `analyze` refuses); every one under `--full`.
    // The reference runs on those with NVTX tables: 3 of the 4 (`gpu4` has none), 8 in all.
    let exports = common::sweep_exports_with_kernels();
    for path in &exports {
        compared += usize::from(matches_oracle(&[path], &[]));
    }
    let runs_on = if common::full() { 8 } else { 3 };
    assert!(
        compared >= synth::scenarios().len() + runs_on,
        "only {compared} traces compared"
    );
}

/// PyTorch's `emit_nvtx` names every call `op, seq = N, op_id = N, sizes = […]`
/// (`mfu_2gpu_before` has 18 656 names with `, op_id = `), so grouped by name each call is its
/// own row. The per-step NVTX table groups them by op: its row count is the number of distinct
/// names, cut before the first `, seq = ` / `, op_id = ` / `, sizes = ` / `, input_op_ids = `,
/// of the ranges overlapping the steady window or starting in it (plain SQL on the file, the
/// window read from the JSON), and each row is one op.
/// The kernel window's NVTX table holds one row per name of the ranges starting in the window,
/// the forward steps' ranges left out (each step names its own: they would be a row per step).
#[test]
fn the_window_nvtx_table_leaves_the_forward_step_ranges_out() {
    let dir = TempDir::new().expect("tempdir");
    let (path, _) = generate(dir.path(), "host-bound");
    let window = &analyze_json(&[&path], "standard", &[])["baseline"]["window"];
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let count = |steps: &str| -> i64 {
        let sql = format!(
            "SELECT count(DISTINCT coalesce(n.text, s.value)) FROM NVTX_EVENTS n
               LEFT JOIN StringIds s ON s.id = n.textId
               WHERE n.eventType IN (59, 60) AND n.start >= ?1 AND n.start < ?2
                 AND coalesce(n.text, s.value) {steps} LIKE '%_forward_step %'"
        );
        let bounds = [&window["start_ns"], &window["end_ns"]].map(|v| v.as_i64().expect("ns"));
        conn.query_row(&sql, bounds, |r| r.get(0))
            .expect("distinct names")
    };
    let (steps, others) = (count(""), count("NOT"));
    assert!(
        steps > 50,
        "the window holds a step range per step: {steps}"
    );
    let rows = window["nvtx_ops"].as_array().expect("nvtx_ops");
    assert_eq!(rows.len() as i64, others, "one row per name but the steps'");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&"_prepare_tp_inputs"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("_forward_step")),
        "{names:?}"
    );
}

#[test]
fn emit_nvtx_ops_are_one_row_per_op_in_the_per_step_nvtx_table() {
    let path = public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let t = &analyze_json(&[&path], "standard", &[])["baseline"];
    let window = &t["steady"]["window"];
    let (start, end) = (
        window["start_ns"].as_i64().expect("start"),
        window["end_ns"].as_i64().expect("end"),
    );
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    // Each suffix's position, or the name's length + 1 when it is absent; the op ends at the
    // first one.
    let at =
        |suffix: &str| format!("coalesce(nullif(instr(name, '{suffix}'), 0), length(name) + 1)");
    let sql = format!(
        "WITH r AS (SELECT coalesce(n.text, s.value) AS name, n.start, n.end FROM NVTX_EVENTS n
           LEFT JOIN StringIds s ON s.id = n.textId
           WHERE n.eventType IN (59, 60, 70, 71) AND n.end > 0 AND n.end >= n.start),
         o AS (SELECT substr(name, 1, min({}, {}, {}, {}) - 1) AS op FROM r
           WHERE name IS NOT NULL AND ((start < ?2 AND end > ?1) OR (start >= ?1 AND start < ?2)))
         SELECT DISTINCT op FROM o",
        at(", seq = "),
        at(", op_id = "),
        at(", sizes = "),
        at(", input_op_ids = "),
    );
    // Ops whose names differ only in numbers (layer indices) are one op: one row per shape.
    let shapes: std::collections::BTreeSet<String> = conn
        .prepare(&sql)
        .expect("sql")
        .query_map([start, end], |r| r.get::<_, String>(0))
        .expect("distinct ops")
        .map(|op| common::nvtx_op_shape(&op.expect("op")))
        .collect();
    let ops = shapes.len() as i64;
    let rows = t["nvtx_ops"].as_array().expect("nvtx_ops");
    assert!(ops > 10, "the window holds PyTorch ops: {ops}");
    assert_eq!(rows.len() as i64, ops, "one row per op shape");
    for r in rows {
        let name = r["name"].as_str().expect("name");
        assert!(
            !name.contains(", op_id = ") && !name.contains(", seq = "),
            "{name}"
        );
    }
}

#[test]
fn the_slowest_steps_and_each_nvtx_ops_longest_instance_are_the_placed_ones() {
    let dir = TempDir::new().unwrap();
    let (path, answers) = generate(dir.path(), "regression-target");
    let r = analyze_json(&[&path], "standard", &[]);
    let t = &r["baseline"];
    // The slowest cycles: the generator's cycles, longest first.
    let mut placed: Vec<(i64, i64)> = answers["analyze"]["standard"]["step_cycles_ns"]
        .as_array()
        .expect("the placed cycles")
        .iter()
        .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
        .collect();
    placed.sort_by_key(|&(s, e)| (std::cmp::Reverse(e - s), s));
    let slowest: Vec<(i64, i64)> = t["slowest_steps"]
        .as_array()
        .expect("slowest_steps")
        .iter()
        .map(|c| {
            (
                c["start_ns"].as_i64().unwrap(),
                c["end_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(slowest.len(), 5);
    assert_eq!(slowest, placed[..5].to_vec());
    for c in t["slowest_steps"].as_array().unwrap() {
        let i = c["index"].as_u64().unwrap() as usize;
        assert_eq!(c["wall_us"], t["step_wall_times_us"][i], "{c}");
    }
    // Each NVTX op's longest instance: the longest range of that name overlapping the steady
    // window, by plain SQL.
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let window = &t["steady"]["window"];
    let (a, b) = (
        window["start_ns"].as_i64().unwrap(),
        window["end_ns"].as_i64().unwrap(),
    );
    let ops = t["nvtx_ops"].as_array().expect("nvtx_ops");
    assert!(!ops.is_empty());
    for op in ops {
        let name = op["name"].as_str().unwrap();
        let longest = longest_range_ns(&conn, name, (a, b));
        let got = &op["longest"];
        let (s, e) = (
            got["start_ns"].as_i64().unwrap(),
            got["end_ns"].as_i64().unwrap(),
        );
        assert_eq!(e - s, longest, "{name}: {op}");
    }
}

/// In a comparison each NVTX row names its op's longest instance (in the target, else in the
/// baseline), where the page opens the timeline: its length is the longest range of that name
/// overlapping that trace's steady window, by plain SQL on that file.
#[test]
fn comparison_nvtx_rows_name_the_longest_instance_in_the_target_else_the_baseline() {
    let dir = TempDir::new().unwrap();
    let (base, _) = generate(dir.path(), "regression-baseline");
    let (target, _) = generate(dir.path(), "regression-target");
    let r = analyze_json(&[&base, &target], "standard", &[]);
    let rows = r["comparison"]["nvtx"].as_array().expect("comparison.nvtx");
    assert!(
        rows.iter().any(|row| row["status"] == "NEW"),
        "the pair has an op new in the target"
    );
    for row in rows {
        let name = row["name"].as_str().expect("name");
        let longest = &row["longest"];
        let side = longest["trace"].as_str().expect("trace");
        let in_target = row["target_us_per_step"].as_f64().unwrap() > 0.0;
        assert_eq!(side, if in_target { "target" } else { "baseline" }, "{row}");
        let path = if side == "target" { &target } else { &base };
        let window = &r[side]["steady"]["window"];
        let (a, b) = (
            window["start_ns"].as_i64().unwrap(),
            window["end_ns"].as_i64().unwrap(),
        );
        let conn =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .expect("open");
        let want = longest_range_ns(&conn, name, (a, b));
        let got = longest["end_ns"].as_i64().unwrap() - longest["start_ns"].as_i64().unwrap();
        assert_eq!(got, want, "{name}: {row}");
    }
}

/// The longest NVTX range named `name` overlapping `[a, b)`, in ns (plain SQL on the export).
fn longest_range_ns(conn: &rusqlite::Connection, name: &str, (a, b): (i64, i64)) -> i64 {
    conn.query_row(
        "SELECT MAX(n.end - n.start) FROM NVTX_EVENTS n
         LEFT JOIN StringIds s ON s.id = n.textId
         WHERE COALESCE(n.text, s.value) = ?1 AND n.start < ?3 AND n.end > ?2",
        rusqlite::params![name, a, b],
        |r| r.get(0),
    )
    .expect(name)
}

/// `scenario` at `scale`, generated and loaded: the trace and its kernel count.
fn loaded(dir: &Path, scenario: &str, scale: u32) -> nsys_lens::model::Trace {
    let path = dir.join(format!("{scenario}-{scale}.sqlite"));
    synth::generate(scenario, &path, &GenOptions { scale, seed: 42 }).expect("generate");
    nsys_lens::trace::load_path(&path, nsys_lens::trace::LoadOptions::all()).expect("load")
}

/// The fold's held state is the launches in flight and one open TP group per NVTX op: at 8
/// times the steps (6–8 times the kernels, calls and ranges) it holds as much as at 1 (host-bound:
/// 20 launches, a step's worth, and 6 ops; tp2-phases: 60 and 7), while the per-step figures
/// stay alike.
#[test]
fn the_standard_fold_holds_the_same_state_at_eight_times_the_steps() {
    let dir = TempDir::new().expect("tempdir");
    let cfg = nsys_lens::analyze::AnalyzeConfig::default();
    for scenario in ["host-bound", "tp2-phases"] {
        let measured: Vec<_> = [1, 8]
            .map(|scale| {
                let trace = loaded(dir.path(), scenario, scale);
                let (b, peaks) =
                    nsys_lens::analyze::analyze_rows_measured(&trace, &cfg).expect("analysed");
                (trace.kernels.len(), b, peaks)
            })
            .into();
        let [(k1, b1, p1), (k8, b8, p8)] = &measured[..] else {
            unreachable!("two scales")
        };
        eprintln!("{scenario}: kernels {k1} → {k8}, peaks {p1:?} → {p8:?}");
        // tp2-phases scales its benchmark phase, not its warm-up: 6 times the kernels.
        assert!(*k8 >= 6 * k1, "{scenario}: the kernels grow with the scale");
        assert!(
            b8.steady_steps.unwrap_or(0) >= 7 * b1.steady_steps.unwrap_or(0),
            "{scenario}: the steady steps grow too: {:?} → {:?}",
            b1.steady_steps,
            b8.steady_steps
        );
        assert!(
            p1.pending_launches > 0 && p1.open_op_groups > 0,
            "{scenario}: launches were joined and NVTX ops grouped: {p1:?}"
        );
        assert_eq!(
            p8, p1,
            "{scenario}: the held state does not grow with the scale"
        );
        assert_eq!(
            b8.kernels_per_step, b1.kernels_per_step,
            "{scenario}: the same steps, more of them"
        );
    }
}
