//! Time per kernel class (issue 40 item 3): `analyze --json`'s `kernel_classes` against what
//! the generator placed (its answers: each kernel's class as the scenario placed it), against
//! plain SQL over a real export with the class rule written here apart from the analyzer's, and
//! the comparison's deltas and conclusion on a real export against a copy with one kernel
//! slowed.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use common::{describe, nsys_lens, public_trace, slowed_copy};

const MFU_BEFORE: &str = "GindaChen_nsys-ai__mfu_2gpu_before.sqlite";

fn analyze_json(paths: &[&Path]) -> Value {
    let mut args: Vec<&OsStr> = vec![OsStr::new("analyze")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    args.push(OsStr::new("--json"));
    let out = nsys_lens(&args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// A class table of the JSON as `{class: (gpu_us, count)}` (per unit) and its rows' totals.
fn table(t: &Value) -> BTreeMap<String, (f64, f64, f64, u64)> {
    t["classes"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    let class = r["class"].as_str().unwrap_or("").to_string();
                    let rows = r["rows"].as_u64().unwrap_or(0);
                    (
                        class,
                        (f(&r["gpu_us"]), f(&r["count"]), f(&r["total_us"]), rows),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `{class: {"us", "count"}}` of the answers against a table of the JSON, per unit.
fn check_per_unit(what: &str, got: &Value, want: &Value, errors: &mut Vec<String>) {
    let got = table(got);
    let want: BTreeMap<String, (f64, f64)> = want
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), (f(&v["us"]), f(&v["count"]))))
                .collect()
        })
        .unwrap_or_default();
    let got_keys: Vec<&String> = got.keys().collect();
    let want_keys: Vec<&String> = want.keys().collect();
    if got_keys != want_keys {
        errors.push(format!(
            "{what}: classes {got_keys:?}, placed {want_keys:?}"
        ));
    }
    for (class, (us, count)) in &want {
        let Some(&(g_us, g_count, _, _)) = got.get(class) else {
            continue;
        };
        if !close(g_us, *us) || !close(g_count, *count) {
            errors.push(format!(
                "{what}.{class}: {g_us} µs × {g_count}, placed {us} µs × {count}"
            ));
        }
    }
}

#[test]
fn the_time_per_kernel_class_is_what_each_scenario_placed_per_step_phase_and_window() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut checked = Vec::new();
    for &(scenario, _) in nsys_lens::synth::scenarios() {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        let answers = nsys_lens::synth::generate(scenario, &path, &Default::default())
            .unwrap_or_else(|e| panic!("{scenario}: {e}"));
        let want = &answers["analyze"]["standard"]["kernel_classes"];
        if want.is_null() {
            continue;
        }
        let json = analyze_json(&[&path]);
        let got = &json["baseline"]["kernel_classes"];
        let mut errors = Vec::new();
        check_per_unit(
            &format!("{scenario} per step"),
            &got["per_step"],
            &want["per_step"],
            &mut errors,
        );
        let phases = got["phases"].as_array().cloned().unwrap_or_default();
        match want["phases"].as_object() {
            Some(w) => {
                let scopes: Vec<&str> = phases.iter().filter_map(|p| p["scope"].as_str()).collect();
                assert_eq!(scopes, ["context steps", "generation steps"], "{scenario}");
                for p in &phases {
                    let scope = p["scope"].as_str().unwrap_or("");
                    check_per_unit(&format!("{scenario} {scope}"), p, &w[scope], &mut errors);
                }
            }
            None => assert!(phases.is_empty(), "{scenario}: {phases:?}"),
        }
        // The whole window: totals, every GPU work row.
        let window = table(&got["window"]);
        for (class, v) in want["window_total"].as_object().into_iter().flatten() {
            let (_, _, total_us, rows) = window.get(class).copied().unwrap_or_default();
            if !close(total_us, f(&v["us"])) || rows as f64 != f(&v["count"]) {
                errors.push(format!(
                    "{scenario} window.{class}: {total_us} µs × {rows}, placed {v}"
                ));
            }
        }
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        checked.push(scenario);
    }
    for s in [
        "kernel-classes",
        "regression-target",
        "copy-bound",
        "tp2-phases",
    ] {
        assert!(checked.contains(&s), "{s} not checked: {checked:?}");
    }
}

#[test]
fn the_kernel_classes_scenario_has_every_placed_class_in_both_phases() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = common::generate_in(dir.path(), "kernel-classes");
    let json = analyze_json(&[&path]);
    let k = &json["baseline"]["kernel_classes"];
    let per_step = table(&k["per_step"]);
    let classes: Vec<&str> = per_step.keys().map(String::as_str).collect();
    assert_eq!(
        classes,
        [
            "attention",
            "copy",
            "elementwise",
            "gemm",
            "memory",
            "norm",
            "other",
            "reduction",
            "sampling"
        ]
    );
    // Placed: GEMM 300 µs per generation step, 900 µs per context step.
    assert!(close(per_step["gemm"].0, 300.0), "{:?}", per_step["gemm"]);
    let context = table(&k["phases"][0]);
    assert!(close(context["gemm"].0, 900.0), "{:?}", context["gemm"]);
    kernel_classes_add_up_to_the_kernel_table(&json["baseline"]);
}

/// The kernel classes per step (kernel rows: not copies, memsets or replays) add up to the
/// per-step kernel table of the same breakdown.
fn kernel_classes_add_up_to_the_kernel_table(b: &Value) {
    let per_step = table(&b["kernel_classes"]["per_step"]);
    let kernels: f64 = per_step
        .iter()
        .filter(|(c, _)| !matches!(c.as_str(), "copy" | "memset" | "replay"))
        .map(|(_, v)| v.0)
        .sum();
    let table_sum: f64 = b["kernel_ops"]
        .as_array()
        .map(|a| a.iter().map(|r| f(&r["us_per_step"])).sum())
        .unwrap_or(f64::NAN);
    assert!(close(kernels, table_sum), "{kernels} vs {table_sum}");
}

/// The class rule, written apart from the analyzer's (`names::kernels`): the first pattern
/// that matches a kernel's short name, case-insensitive.
const CLASS_RULE: [(&str, &str); 8] = [
    (
        "collective",
        "nccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|alltoall",
    ),
    (
        "attention",
        "flash|attention|attn|fmha|mha|xqa|mla|rope|rotary|kvcache|kv_cache",
    ),
    ("gemm", "gemm|gemv|matmul|cublas|nvjet|xmma|splitk|cutlass"),
    ("norm", "norm"),
    ("reduction", "reduce|reduction|triton_red|triton_per_"),
    ("sampling", "sample|sampling|argmax|topk|top_k|softmax"),
    (
        "memory",
        "memcpy|memset|copy|fill|cat_|gather|scatter|index",
    ),
    (
        "elementwise",
        "elementwise|silu|gelu|relu|act_and_mul|triton_poi|add|mul|divide|subtract|sqrt|_exp|tanh|sigmoid",
    ),
];

fn class_of(name: &str) -> &'static str {
    CLASS_RULE
        .iter()
        .find(|(_, p)| {
            // ASCII case only, as kernel names are and as the product's own matchers fold
            // case (it builds `regex` without Unicode case tables).
            regex::RegexBuilder::new(p)
                .case_insensitive(true)
                .unicode(false)
                .build()
                .expect("pattern")
                .is_match(name)
        })
        .map_or("other", |(c, _)| c)
}

/// `{class: (summed ns, rows)}` of every GPU work row of the export, by plain SQL: kernels by
/// their short name's class, copies, memsets and graph replays by their table.
fn sql_classes(path: &Path) -> BTreeMap<&'static str, (i64, u64)> {
    let conn = Connection::open(path).unwrap();
    let mut out: BTreeMap<&'static str, (i64, u64)> = BTreeMap::new();
    let mut st = conn
        .prepare(
            "SELECT s.value, sum(k.end - k.start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds s ON s.id = k.shortName GROUP BY s.value",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap();
    for r in rows {
        let (name, ns, n) = r.unwrap();
        let e = out.entry(class_of(&name)).or_default();
        e.0 += ns;
        e.1 += n as u64;
    }
    for (table, class) in [
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "copy"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "memset"),
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "replay"),
    ] {
        let sql = format!("SELECT coalesce(sum(end - start), 0), count(*) FROM {table}");
        // An absent table (nsys creates them lazily) holds no rows.
        let read = conn.query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)));
        if let Ok((ns, n)) = read
            && n > 0
        {
            out.insert(class, (ns, n as u64));
        }
    }
    out
}

/// The kernel window of the export, ns: its first GPU operation's start to the last one's end.
fn window_ns(path: &Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row(
        &format!(
            "SELECT max(\"end\") - min(start) FROM ({})",
            common::gpu_work_sql(&conn)
        ),
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn mfu_2gpu_before_time_per_class_over_its_window_equals_plain_sql() {
    let path = public_trace(MFU_BEFORE);
    let json = analyze_json(&[&path]);
    let window = &json["baseline"]["kernel_classes"]["window"];
    let got = table(window);
    let want = sql_classes(&path);
    let got_keys: Vec<&str> = got.keys().map(String::as_str).collect();
    let want_keys: Vec<&str> = want.keys().copied().collect();
    assert_eq!(got_keys, want_keys);
    for (class, (ns, rows)) in &want {
        let (_, _, total_us, got_rows) = got[*class];
        assert!(
            close(total_us, *ns as f64 / 1000.0),
            "{class}: {total_us} vs {ns} ns"
        );
        assert_eq!(got_rows, *rows, "{class}");
    }
    // Per second of the window: first GPU operation's start to the last one's end.
    let span = window_ns(&path);
    assert!(
        close(f(&window["divisor"]), span as f64 / 1e9),
        "{}",
        window["divisor"]
    );
    kernel_classes_add_up_to_the_kernel_table(&json["baseline"]);
}

#[test]
fn mfu_2gpu_before_against_a_copy_with_layer_norm_slower_moves_the_norm_class_alone() {
    let dir = tempfile::TempDir::new().unwrap();
    let before = public_trace(MFU_BEFORE);
    let slow = slowed_copy(&before, dir.path(), "vectorized_layer_norm_kernel", 200_000);
    let json = analyze_json(&[&before, &slow]);
    let c = &json["comparison"];
    let k = &c["kernel_classes"];
    assert_eq!(
        (&k["scope"], &k["per"]),
        (&"steady steps".into(), &"step".into()),
        "{k}"
    );
    // Three layer norms per repeat per device, two devices (tests/inferred_steps.rs reads it
    // from SQL), 200 µs more each; every other class unchanged.
    for d in k["classes"].as_array().into_iter().flatten() {
        let want = if d["class"] == "norm" { 1200.0 } else { 0.0 };
        assert!(close(f(&d["delta_us"]), want), "{d}");
    }
    assert_eq!(k["grew_most"]["class"], "norm");
    // The steps are inferred from kernel starts, which the copy keeps: wall time per step did
    // not grow, so the conclusion names no cause and no class.
    let conclusion = c["conclusion"].as_str().unwrap_or("");
    assert!(c["primary_cause"].is_null(), "{conclusion}");
    assert!(!conclusion.contains("kernel class"), "{conclusion}");
}

#[test]
fn a_window_comparison_whose_gpu_execution_grew_names_the_slowed_kernels_class() {
    // nvFuser's benchmark export: no steps, so the whole windows are compared per second.
    let dir = tempfile::TempDir::new().unwrap();
    let before = public_trace("NVIDIA_Fuser__ee4fcf3__report1.sqlite");
    let op = "nvfuser_pointwise_f0_c1_r0_g0";
    let slow = slowed_copy(&before, dir.path(), op, 500_000);
    let json = analyze_json(&[&before, &slow]);
    let c = &json["comparison"];
    assert_eq!(c["primary_cause"], "GPU execution");
    let k = &c["kernel_classes"];
    assert_eq!(k["per"], "second of kernel window", "{k}");
    let class = class_of(op);
    assert_eq!(k["grew_most"]["class"], class, "{k}");
    // The class's GPU time per second of window, from SQL on both files.
    let per_s =
        |path: &Path| sql_classes(path)[class].0 as f64 / 1000.0 / (window_ns(path) as f64 / 1e9);
    let (b, t) = (per_s(&before), per_s(&slow));
    assert!(close(f(&k["grew_most"]["baseline_us"]), b), "{b}: {k}");
    assert!(close(f(&k["grew_most"]["target_us"]), t), "{t}: {k}");
    let conclusion = c["conclusion"].as_str().unwrap_or("");
    let label = k["grew_most"]["label"].as_str().unwrap_or("?");
    assert!(
        conclusion.contains(&format!("The kernel class that grew most is {label}: ")),
        "{conclusion}"
    );
}

#[test]
fn the_trtllm_skill_profile_has_no_kernel_classes() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = common::generate_in(dir.path(), "kernel-classes");
    let args = [
        OsStr::new("analyze"),
        path.as_os_str(),
        path.as_os_str(),
        OsStr::new("--profile"),
        OsStr::new("trtllm-skill"),
        OsStr::new("--json"),
    ];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["baseline"].get("kernel_classes").is_none());
    assert!(json["comparison"].get("kernel_classes").is_none());
}

#[test]
fn the_regression_pair_compares_each_class_per_step_and_per_phase_as_placed() {
    let dir = tempfile::TempDir::new().unwrap();
    let opts = Default::default();
    let (b, t) = (dir.path().join("b.sqlite"), dir.path().join("t.sqlite"));
    let ba = nsys_lens::synth::generate("regression-baseline", &b, &opts).unwrap();
    let ta = nsys_lens::synth::generate("regression-target", &t, &opts).unwrap();
    let json = analyze_json(&[&b, &t]);
    let k = &json["comparison"]["kernel_classes"];
    let placed = |a: &Value, scope: Option<&str>| {
        let c = &a["analyze"]["standard"]["kernel_classes"];
        match scope {
            None => c["per_step"].clone(),
            Some(s) => c["phases"][s].clone(),
        }
    };
    let check = |what: &str, got: &Value, scope: Option<&str>| {
        let (pb, pt) = (placed(&ba, scope), placed(&ta, scope));
        for d in got.as_array().into_iter().flatten() {
            let class = d["class"].as_str().unwrap_or("");
            let us = |p: &Value| p[class]["us"].as_f64().unwrap_or(0.0);
            let (wb, wt) = (us(&pb), us(&pt));
            assert!(close(f(&d["baseline_us"]), wb), "{what} {d} vs {wb}");
            assert!(close(f(&d["target_us"]), wt), "{what} {d} vs {wt}");
            assert!(close(f(&d["delta_us"]), wt - wb), "{what} {d}");
        }
    };
    check("per step", &k["classes"], None);
    let phases = k["phases"].as_array().cloned().unwrap_or_default();
    assert_eq!(phases.len(), 2, "{k}");
    for p in &phases {
        let scope = p["scope"].as_str().unwrap_or("");
        check(scope, &p["classes"], Some(scope));
    }
    // The target's 16 extra tiny launches per step are elementwise kernels of 2 µs.
    let elementwise = k["classes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["class"] == "elementwise")
        .cloned()
        .unwrap_or_default();
    assert!(close(f(&elementwise["delta_us"]), 32.0), "{elementwise}");
}
