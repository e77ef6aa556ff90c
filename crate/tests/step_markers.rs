//! Configurable step markers (spec §2 "phase maps"): a custom regex re-classifies the steps of
//! a generated trace; counts come from the generator's answers, not from detect.

mod common;

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
