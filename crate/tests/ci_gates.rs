//! The CI gates: `analyze BASE TARGET --fail-on-regression PCT` exits 1 when the target's wall
//! time per step grew by more than PCT, 4 when the pair cannot be compared; `detect --fail-on
//! KIND` exits 1 when the run is bounded by KIND. Thresholds come from the generator's planted
//! answers, on both sides of the planted regression.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;

use common::{EXIT_USAGE, describe, generated, nsys_lens};
use serde_json::Value;

const EXIT_GATE: i32 = 1;
const EXIT_NOT_COMPARABLE: i32 = 4;

/// `nsys-lens ARGS…`: its exit status, stdout and stderr.
fn run(args: &[&OsStr]) -> (Option<i32>, String, String) {
    let out = nsys_lens(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{}", describe(args, &out));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn gate(base: &Path, target: &Path, pct: f64) -> (Option<i32>, String, String) {
    let pct = format!("{pct}");
    run(&[
        OsStr::new("analyze"),
        base.as_os_str(),
        target.as_os_str(),
        OsStr::new("--fail-on-regression"),
        OsStr::new(&pct),
    ])
}

/// The planted wall time per step (µs) of a generated trace, standard profile.
fn planted_wall(answers: &Value) -> f64 {
    answers["analyze"]["standard"]["wall_time_per_step_us"]
        .as_f64()
        .expect("planted wall time per step")
}

#[test]
fn a_regression_beyond_the_threshold_fails_the_gate_and_one_below_it_passes() {
    let (_b_dir, base, b_answers) = generated("regression-baseline", 1, 42);
    let (_t_dir, target, t_answers) = generated("regression-target", 1, 42);
    let (b, t) = (planted_wall(&b_answers), planted_wall(&t_answers));
    let planted = (t - b) / b * 100.0;
    assert!(planted > 10.0, "the target is planted slower: {b} → {t} µs");

    // The figure the gate reads is the one `analyze --json` reports.
    let (code, json, _) = run(&[
        OsStr::new("analyze"),
        base.as_os_str(),
        target.as_os_str(),
        OsStr::new("--json"),
    ]);
    assert_eq!(code, Some(0), "no gate, no failure");
    let json: Value = serde_json::from_str(&json).expect("analyze JSON");
    let wall = &json["comparison"]["wall_time_per_step_us"];
    let reported = wall["delta_pct"].as_f64().expect("delta_pct");
    assert!(
        (reported - planted).abs() < 1e-6,
        "analyze reports {reported}%, the generator planted {planted}%"
    );
    assert_eq!(json["comparison"]["comparability"], Value::Array(vec![]));

    let (code, stdout, stderr) = gate(&base, &target, planted - 5.0);
    assert_eq!(
        code,
        Some(EXIT_GATE),
        "{planted}% > {}%: {stderr}",
        planted - 5.0
    );
    assert!(!stdout.is_empty(), "the report is still printed");
    assert!(
        stderr.contains(&format!("{:+.2}%", planted)) && stderr.contains("wall time per step"),
        "{stderr}"
    );
    let (code, _, stderr) = gate(&base, &target, planted + 5.0);
    assert_eq!(code, Some(0), "{planted}% < {}%: {stderr}", planted + 5.0);
    assert!(stderr.contains("no regression beyond"), "{stderr}");

    // The other way round the target is faster: an improvement passes any threshold.
    let (code, _, stderr) = gate(&target, &base, 0.0);
    assert_eq!(code, Some(0), "an improvement passes: {stderr}");
    let improved = (b - t) / t * 100.0;
    assert!(stderr.contains(&format!("{improved:+.2}%")), "{stderr}");
}

#[test]
fn a_pair_that_cannot_be_compared_gets_its_own_exit_status_and_says_why() {
    let (_b_dir, base, _) = generated("regression-baseline", 1, 42);
    let (_t_dir, tp2, _) = generated("tp2-straggler", 1, 42);
    let (code, json, _) = run(&[
        OsStr::new("analyze"),
        base.as_os_str(),
        tp2.as_os_str(),
        OsStr::new("--json"),
    ]);
    assert_eq!(code, Some(0));
    let json: Value = serde_json::from_str(&json).expect("analyze JSON");
    let warnings: Vec<&str> = json["comparison"]["comparability"]
        .as_array()
        .expect("comparability")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with("TP size differs")),
        "one rank against two: {warnings:?}"
    );
    // Whatever the threshold, even one the figures would pass.
    for pct in [0.0, 1000.0] {
        let (code, _, stderr) = gate(&base, &tp2, pct);
        assert_eq!(code, Some(EXIT_NOT_COMPARABLE), "{stderr}");
        let line = stderr.lines().last().unwrap_or_default();
        for w in &warnings {
            assert!(line.contains(w), "{line:?} should say {w:?}");
        }
    }
}

#[test]
fn the_regression_gate_needs_a_target_and_a_percentage() {
    let (_dir, base, _) = generated("regression-baseline", 1, 42);
    for args in [
        vec!["analyze", "B", "--fail-on-regression", "5"],
        vec!["analyze", "B", "B", "--fail-on-regression", "-5"],
        vec!["analyze", "B", "B", "--fail-on-regression", "five"],
    ] {
        let args: Vec<&OsStr> = args
            .iter()
            .map(|a| match *a {
                "B" => base.as_os_str(),
                a => OsStr::new(a),
            })
            .collect();
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(EXIT_USAGE), "{args:?}: {stderr}");
    }
}

fn detect_gate(path: &Path, kinds: &str, profile: &str) -> (Option<i32>, String, String) {
    run(&[
        OsStr::new("detect"),
        path.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--profile"),
        OsStr::new(profile),
        OsStr::new("--fail-on"),
        OsStr::new(kinds),
    ])
}

#[test]
fn fail_on_host_bound_fails_a_host_bound_run_and_passes_a_gpu_bound_one() {
    let (_h_dir, host, h_answers) = generated("host-bound", 1, 42);
    let (_g_dir, gpu, g_answers) = generated("gpu-bound", 1, 42);
    let planted = |a: &Value| {
        a["profiles"]["standard"]["verdict"]
            .as_str()
            .expect("planted verdict")
            .to_string()
    };
    assert_eq!(planted(&h_answers), "YES");
    assert_eq!(planted(&g_answers), "NO");
    for profile in ["standard", "trtllm-skill"] {
        let (code, stdout, stderr) = detect_gate(&host, "host-bound", profile);
        assert_eq!(code, Some(EXIT_GATE), "{profile}: {stderr}");
        let json: Value = serde_json::from_str(&stdout).expect("detect JSON");
        assert_eq!(json["verdict"], "YES", "{profile}");
        assert!(stderr.contains("host-bound (--fail-on)"), "{stderr}");
        let (code, _, stderr) = detect_gate(&gpu, "host-bound", profile);
        assert_eq!(code, Some(0), "{profile}: {stderr}");
    }
    // The kind planted in the GPU-bound run fails it; the others pass it.
    let kind = g_answers["profiles"]["standard"]["bound"]["kind"]
        .as_str()
        .expect("planted bound kind");
    assert_eq!(kind, "gpu-compute-bound");
    let (code, _, stderr) = detect_gate(&gpu, &format!("host-bound,{kind}"), "standard");
    assert_eq!(code, Some(EXIT_GATE), "{kind}: {stderr}");
    let others = [
        "gpu-compute-bound",
        "transfer-bound",
        "communication-bound",
        "mixed",
    ]
    .into_iter()
    .filter(|k| *k != kind)
    .collect::<Vec<_>>()
    .join(",");
    let (code, _, stderr) = detect_gate(&gpu, &others, "standard");
    assert_eq!(code, Some(0), "{others}: {stderr}");
    // trtllm-skill does not split the GPU work: only host-bound is accepted there.
    let (code, _, stderr) = detect_gate(&gpu, kind, "trtllm-skill");
    assert_eq!(code, Some(EXIT_USAGE), "{stderr}");
    let (code, _, stderr) = detect_gate(&gpu, "cpu-bound", "standard");
    assert_eq!(code, Some(EXIT_USAGE), "{stderr}");
}

#[test]
fn without_steps_the_gate_reads_the_windows_time_per_kernel_launched() {
    let (_a_dir, a, _) = generated("capture-no-nvtx", 1, 42);
    let (_b_dir, b, _) = generated("capture-no-nvtx", 1, 7);
    let kernels_per_s = |base: &Path, target: &Path| {
        let (code, json, stderr) = run(&[
            OsStr::new("analyze"),
            base.as_os_str(),
            target.as_os_str(),
            OsStr::new("--json"),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        let json: Value = serde_json::from_str(&json).expect("analyze JSON");
        let c = &json["comparison"];
        assert!(c["wall_time_per_step_us"]["baseline"].is_null(), "no steps");
        assert_eq!(c["window"]["replaces_steps"], true);
        let k = &c["window"]["kernels_per_s"];
        (
            k["baseline"].as_f64().expect("baseline kernels/s"),
            k["target"].as_f64().expect("target kernels/s"),
        )
    };
    // The slower capture as the target: fewer kernels per second of window.
    let (kb, kt) = kernels_per_s(&a, &b);
    let (base, target, kb, kt) = if kt < kb {
        (&a, &b, kb, kt)
    } else {
        (&b, &a, kt, kb)
    };
    let regressed = (kb / kt - 1.0) * 100.0;
    assert!(regressed > 0.0, "{kb} → {kt} kernels/s");
    let (code, _, stderr) = gate(base, target, regressed / 2.0);
    assert_eq!(code, Some(EXIT_GATE), "{regressed}%: {stderr}");
    assert!(
        stderr.contains("time per kernel launched")
            && stderr.contains(&format!("{regressed:+.2}%")),
        "{stderr}"
    );
    let (code, _, stderr) = gate(base, target, regressed * 2.0);
    assert_eq!(code, Some(0), "{regressed}%: {stderr}");
}
