//! Configurable step markers (spec §2 "phase maps"): a custom regex re-classifies the steps of
//! a generated trace; counts come from the generator's answers, not from detect.

use crate::common;

use std::process::Command;

use serde_json::Value;

fn detect(path: &std::path::Path, extra: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .args(["detect", "--json"])
        .arg(path)
        .args(extra)
        .output()
        .expect("run nsys-lens");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json)
}

#[test]
fn step_regex_moves_all_steps_into_the_chosen_phase() {
    let (_dir, path, answers) = common::generated("host-bound", 1, 5);
    let total = common::placed_steps(&answers);

    let (code, gen_only) = detect(&path, &["--step-regex", r"_forward_step (?P<step>\d+):"]);
    assert_eq!(code, 0);
    assert_eq!(
        gen_only["phases"]["generation"]["iteration_count"].as_u64(),
        Some(total)
    );
    assert!(gen_only["phases"].get("context").is_none());

    let (code, ctx_only) = detect(
        &path,
        &[
            "--step-regex",
            r"_forward_step (?P<step>\d+):",
            "--steps-phase",
            "context",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        ctx_only["phases"]["context"]["iteration_count"].as_u64(),
        Some(total)
    );

    let (code, none) = detect(&path, &["--phase-map", "pytorch"]);
    assert_eq!(code, 0);
    assert_eq!(none["phases"], serde_json::json!({}));
    assert!(
        none["coverage"]
            .as_array()
            .expect("coverage")
            .iter()
            .any(|c| c["subject"] == "phases")
    );
}

#[test]
fn bad_markers_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hb.sqlite");
    nsys_lens::synth::generate(
        "host-bound",
        &path,
        &nsys_lens::synth::GenOptions { scale: 1, seed: 5 },
    )
    .expect("generate");
    assert_eq!(detect(&path, &["--step-regex", "("]).0, 2);
    assert_eq!(detect(&path, &["--phase-map", "nope"]).0, 2);
    assert_eq!(
        detect(
            &path,
            &["--profile", "trtllm-skill", "--phase-map", "pytorch"]
        )
        .0,
        2
    );
}

#[test]
fn trtllm_skill_warns_about_tp_duplicated_steps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tp2.sqlite");
    let answers = nsys_lens::synth::generate(
        "tp2-straggler",
        &path,
        &nsys_lens::synth::GenOptions { scale: 1, seed: 42 },
    )
    .expect("generate");
    let count = |profile: &str| -> u64 {
        let phases = &answers["profiles"][profile]["phases"];
        ["context", "generation"]
            .iter()
            .filter_map(|p| phases[p]["iteration_count"].as_u64())
            .sum()
    };
    let (raw, distinct) = (count("trtllm-skill"), count("standard"));
    assert!(raw > distinct);
    let (code, json) = detect(&path, &["--profile", "trtllm-skill"]);
    assert_eq!(code, 0);
    let expected = format!("({raw} ranges for {distinct} distinct steps");
    let warnings = json["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains(&expected))),
        "{warnings:?}"
    );
}

/// `nsys-lens CMD --json PATH EXTRA…`, which must succeed.
fn run_json(cmd: &str, path: &std::path::Path, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .args([cmd, "--json"])
        .arg(path)
        .args(extra)
        .output()
        .expect("run nsys-lens");
    assert!(
        out.status.success(),
        "{cmd} {extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `scenario` written with `style`'s step names, and its answers (the TensorRT-LLM run's).
fn styled(
    dir: &std::path::Path,
    scenario: &str,
    style: nsys_lens::synth::MarkerStyle,
) -> (std::path::PathBuf, Value) {
    let path = dir.join(format!("{scenario}-{style:?}.sqlite"));
    let answers = nsys_lens::synth::generate_with_markers(
        scenario,
        &path,
        &nsys_lens::synth::GenOptions { scale: 1, seed: 7 },
        style,
    )
    .expect("generate");
    (path, answers)
}

/// The per-step figures of a breakdown that a marker must not change.
const PER_STEP: [&str; 9] = [
    "iteration_method",
    "iterations",
    "steady_steps",
    "wall_time_per_step_us",
    "inter_step_gap_us",
    "kernels_per_step",
    "nvtx_per_step_us",
    "kernel_time_per_step_us",
    "api_time_per_step_us",
];

fn close(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0)
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| close(v, w))
        }
        _ => a == b,
    }
}

fn assert_same_figures(what: &str, got: &Value, want: &Value) {
    for key in PER_STEP {
        assert!(
            want.get(key).is_some(),
            "{what}: the expected figures have no {key}"
        );
        assert!(
            close(&got[key], &want[key]),
            "{what}.{key}: got {}, want {}",
            got[key],
            want[key]
        );
    }
}

/// The phases' step counts of a detect report, `(context, generation)`.
fn phase_counts(detect: &Value) -> (Option<u64>, Option<u64>) {
    let phases = &detect["phases"];
    (
        phases["context"]["iteration_count"].as_u64(),
        phases["generation"]["iteration_count"].as_u64(),
    )
}

/// The TensorRT-LLM markers' answers: vLLM's markers carry the same request counts, so every
/// per-step figure, the phases and the steady state are the generator's; each command reports
/// the marker it found.
#[test]
fn vllm_markers_give_the_generators_per_step_figures() {
    use nsys_lens::synth::MarkerStyle;
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in ["regression-baseline", "regression-target", "tp2-straggler"] {
        for style in [MarkerStyle::Vllm, MarkerStyle::VllmOld] {
            let (path, answers) = styled(dir.path(), scenario, style);
            assert!(answers["markers"]["renamed"].as_u64() > Some(0));
            let what = format!("{scenario} {style:?}");
            let analyze = run_json("analyze", &path, &[]);
            let b = &analyze["baseline"];
            assert_eq!(b["step_marker"]["marker"], "vllm", "{what}");
            assert_eq!(b["step_marker"]["auto"], true, "{what}");
            assert_same_figures(&what, b, &answers["analyze"]["standard"]);
            let detect = run_json("detect", &path, &[]);
            assert_eq!(detect["step_marker"]["marker"], "vllm", "{what}");
            let want = &answers["profiles"]["standard"]["phases"];
            assert_eq!(
                phase_counts(&detect),
                (
                    want["context"]["iteration_count"].as_u64(),
                    want["generation"]["iteration_count"].as_u64()
                ),
                "{what}"
            );
            let drill = run_json("drill", &path, &[]);
            assert_eq!(drill["step_markers"][0]["marker"], "vllm", "{what}");
        }
    }
}

/// SGLang's and PyTorch's markers carry no request counts: every step is a generation step,
/// so the figures are the TensorRT-LLM trace's read the same way (a regex without counts), and
/// the steady state holds every step of the benchmark.
#[test]
fn count_less_markers_read_every_step_as_generation() {
    use nsys_lens::synth::MarkerStyle;
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in ["regression-baseline", "regression-target", "tp2-straggler"] {
        let (trt, answers) = styled(dir.path(), scenario, MarkerStyle::TensorrtLlm);
        let all_steps = run_json(
            "analyze",
            &trt,
            &["--step-regex", r"_forward_step (?P<step>\d+):"],
        );
        let want = &all_steps["baseline"];
        assert_eq!(
            want["steady_steps"], answers["analyze"]["standard"]["iterations"],
            "{scenario}: every benchmark step is steady"
        );
        let total = common::placed_steps(&answers);
        for (style, key) in [
            (MarkerStyle::Sglang, "sglang"),
            (MarkerStyle::Pytorch, "pytorch"),
        ] {
            let (path, _) = styled(dir.path(), scenario, style);
            let what = format!("{scenario} {key}");
            let b = &run_json("analyze", &path, &[])["baseline"];
            assert_eq!(b["step_marker"]["marker"], key, "{what}");
            assert_same_figures(&what, b, want);
            let detect = run_json("detect", &path, &[]);
            assert_eq!(detect["step_marker"]["marker"], key, "{what}");
            assert_eq!(phase_counts(&detect), (None, Some(total)), "{what}");
        }
    }
}

/// A phase map (nsys-llm-explainer's form) read from a file: steps of a phase named like a
/// prefill are context steps, the rest generation; first match wins, so `decode` (listed
/// second, matching every step) gets only the steps `prefill` left.
#[test]
fn a_phase_map_file_splits_steps_into_phases_in_all_three_commands() {
    use nsys_lens::synth::MarkerStyle;
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, answers) = styled(dir.path(), "regression-baseline", MarkerStyle::Vllm);
    let map = dir.path().join("phases.json");
    std::fs::write(
        &map,
        r#"{"prefill": ["re:^execute_context_[1-9]"], "decode": ["EXECUTE_CONTEXT_"]}"#,
    )
    .expect("write map");
    let map = map.to_str().expect("utf-8 path");
    let want = &answers["profiles"]["standard"]["phases"];
    let detect = run_json("detect", &path, &["--phase-map", map]);
    assert_eq!(
        phase_counts(&detect),
        (
            want["context"]["iteration_count"].as_u64(),
            want["generation"]["iteration_count"].as_u64()
        )
    );
    assert_eq!(detect["step_marker"]["source"], "phase-map");
    assert_eq!(detect["step_marker"]["pattern"], "prefill, decode");
    assert_eq!(detect["step_marker"]["auto"], false);
    // Generation steps all count one request: the steady state is every decode step, as the
    // generator's (ctx 0, gen max).
    let b = &run_json("analyze", &path, &["--phase-map", map])["baseline"];
    assert_eq!(b["step_marker"]["source"], "phase-map");
    assert_same_figures("phase map", b, &answers["analyze"]["standard"]);
    let drill = run_json("drill", &path, &["--phase-map", map]);
    assert_eq!(drill["step_markers"][0]["source"], "phase-map");
}

/// A user regex with counts reads the vLLM names as the built-in marker does.
#[test]
fn a_step_regex_with_counts_gives_the_builtin_figures() {
    use nsys_lens::synth::MarkerStyle;
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, answers) = styled(dir.path(), "regression-target", MarkerStyle::Vllm);
    let re = r"^execute_context_(?P<ctx>\d+)\(\d+\)_generation_(?P<gen>\d+)\(\d+\)$";
    let b = &run_json("analyze", &path, &["--step-regex", re])["baseline"];
    assert_eq!(b["step_marker"]["source"], "regex");
    assert_eq!(b["step_marker"]["pattern"], re);
    assert_same_figures("regex", b, &answers["analyze"]["standard"]);
    let drill = run_json("drill", &path, &["--step-regex", re]);
    assert_eq!(drill["step_markers"][0]["source"], "regex");
}

/// `nsys-lens detect PATH EXTRA…` as text, which must succeed: its `Steps:` line.
fn steps_line(path: &std::path::Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .arg("detect")
        .arg(path)
        .args(extra)
        .output()
        .expect("run nsys-lens");
    assert!(
        out.status.success(),
        "detect {extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("Steps: "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no Steps: line in\n{text}"))
}

/// The text report names where the steps come from: each built-in marker found in a trace
/// written in its style, a regex or a phase map given, the unit inferred from the kernel stream
/// of a trace whose step ranges no marker reads, and none for a 4-kernel loop.
#[test]
fn detect_text_names_the_step_source_of_every_marker_style_and_of_none() {
    use nsys_lens::synth::MarkerStyle;
    let dir = tempfile::tempdir().expect("tempdir");
    for (style, key, pattern) in [
        (
            MarkerStyle::TensorrtLlm,
            "tensorrt-llm",
            "[Executor] _forward_step N: C ctx reqs, G gen reqs",
        ),
        (
            MarkerStyle::Vllm,
            "vllm",
            "execute_context_C(T)_generation_G(T) | execute_new_C_cached_G",
        ),
        (
            MarkerStyle::VllmOld,
            "vllm",
            "execute_context_C(T)_generation_G(T) | execute_new_C_cached_G",
        ),
        (MarkerStyle::Sglang, "sglang", "scheduler.run_batch"),
        (MarkerStyle::Pytorch, "pytorch", "ProfilerStep#N"),
    ] {
        let (path, _) = styled(dir.path(), "host-bound", style);
        assert_eq!(
            steps_line(&path, &[]),
            format!("built-in marker {key} (found in the trace): {pattern}"),
            "{style:?}"
        );
    }
    let (path, answers) = styled(dir.path(), "host-bound", MarkerStyle::Unmarked);
    let re = "^decode_iteration$";
    assert_eq!(
        steps_line(&path, &["--step-regex", re]),
        format!("regex (given): {re}")
    );
    let map = dir.path().join("map.json");
    std::fs::write(&map, r#"{"decode": ["decode_iteration"]}"#).expect("write map");
    let map = map.to_str().expect("utf-8 path");
    assert_eq!(
        steps_line(&path, &["--phase-map", map]),
        "phase map (given): decode"
    );
    // No marker: every step launches the same kernels, so the unit is the placed kernels per
    // placed step, repeated once per step (the first kernel starts step 1).
    let steps = common::placed_steps(&answers);
    let kernels = answers["kernels"].as_u64().expect("kernel count");
    assert_eq!(kernels % steps, 0);
    let period = kernels / steps;
    assert_eq!(
        steps_line(&path, &[]),
        format!(
            "no step marker; steps inferred from the kernel stream by kernel-sequence (confidence 100.0%): {period} kernels × {steps} repeats on device 0"
        )
    );
    let json = run_json("detect", &path, &[]);
    assert!(json["step_marker"].is_null());
    assert_eq!(
        json["inferred_steps"]["period_kernels"].as_u64(),
        Some(period)
    );
    assert_eq!(json["inferred_steps"]["repeats"].as_u64(), Some(steps));
    assert_eq!(json["inferred_steps"]["unit"], "step");
    let analyze = &run_json("analyze", &path, &[])["baseline"]["steps"];
    assert_eq!(analyze["period_kernels"].as_u64(), Some(period));
    assert_eq!(analyze["count"].as_u64(), Some(steps));
    // The capture-no-nvtx loop cycles 4 kernels: a loop, not a step.
    let (_d, loop_path, _) = common::generated("capture-no-nvtx", 1, 5);
    assert_eq!(
        steps_line(&loop_path, &[]),
        "no step marker found, and the kernel stream does not repeat at step scale: give a built-in marker, a regex or a phase map"
    );
}
