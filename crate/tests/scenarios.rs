//! Scenario tests: every synthetic trace, loaded and analysed, must give the answers its
//! generator derived from the placed events (in both definition profiles).

use std::path::{Path, PathBuf};

use nsys_lens::detect::{DetectConfig, detect};
use nsys_lens::profile::Profile;
use nsys_lens::synth::{self, GenOptions};
use nsys_lens::trace::{LoadOptions, load_path};
use serde_json::Value;

const PROFILES: [(Profile, &str); 2] = [
    (Profile::Standard, "standard"),
    (Profile::TrtllmSkill, "trtllm-skill"),
];
const FLOAT_TOL: f64 = 1e-6;

fn gen_into(dir: &Path, scenario: &str, opts: &GenOptions) -> (PathBuf, Value) {
    let path = dir.join(format!("{scenario}.sqlite"));
    let answers = synth::generate(scenario, &path, opts)
        .unwrap_or_else(|e| panic!("generate {scenario}: {e}"));
    (path, answers)
}

/// Walks every leaf of `want`, comparing with `got` at the same path; collects mismatches.
fn compare(path: &str, want: &Value, got: Option<&Value>, errors: &mut Vec<String>) {
    let Some(got) = got else {
        errors.push(format!("{path}: missing in detect JSON (expected {want})"));
        return;
    };
    match want {
        Value::Object(map) => {
            if path.ends_with("phases") {
                let want_keys: Vec<&String> = map.keys().collect();
                let got_keys: Vec<&String> = got
                    .as_object()
                    .map(|m| m.keys().collect())
                    .unwrap_or_default();
                if want_keys != got_keys {
                    errors.push(format!(
                        "{path}: phases {want_keys:?} expected, detect has {got_keys:?}"
                    ));
                }
            }
            for (k, v) in map {
                compare(&format!("{path}.{k}"), v, got.get(k), errors);
            }
        }
        Value::Array(items) => {
            let n = got.as_array().map_or(0, Vec::len);
            if n != items.len() {
                errors.push(format!(
                    "{path}: {} elements expected, detect has {n}",
                    items.len()
                ));
            }
            for (i, v) in items.iter().enumerate() {
                compare(&format!("{path}[{i}]"), v, got.get(i), errors);
            }
        }
        Value::Number(n) if n.is_f64() => match (n.as_f64(), got.as_f64()) {
            (Some(a), Some(b)) if (a - b).abs() <= FLOAT_TOL => {}
            _ => errors.push(format!("{path}: expected {want}, got {got}")),
        },
        _ if want == got => {}
        _ => errors.push(format!("{path}: expected {want}, got {got}")),
    }
}

/// Answers must be unambiguous: no metric within 1e-3 of its threshold.
fn check_margins(scenario: &str, profile: &str, answers: &Value, errors: &mut Vec<String>) {
    let p = &answers["profiles"][profile];
    let mut scopes = vec![("aggregate", &p["aggregate_metrics"], false)];
    for (phase, is_gen) in [("context", false), ("generation", true)] {
        if let Some(ph) = p["phases"].get(phase) {
            scopes.push((phase, &ph["metrics"], is_gen));
        }
    }
    for (scope, m, is_gen) in scopes {
        let thresholds = [
            ("gpu_idle_ratio", if is_gen { 0.15 } else { 0.30 }),
            ("launch_overhead_ratio", 0.10),
            ("gpu_utilization", if is_gen { 0.80 } else { 0.60 }),
            ("host_prep_exposed_ratio", 0.50),
            ("host_prep_perf_impact", 0.05),
            ("host_prep_idle_attribution", 0.50),
            ("nccl_ratio", 0.20),
        ];
        for (key, t) in thresholds {
            if let Some(v) = m[key].as_f64().filter(|v| (v - t).abs() < 1e-3) {
                errors.push(format!(
                    "{scenario}/{profile}/{scope}.{key} = {v} is within 1e-3 of its threshold {t}"
                ));
            }
        }
    }
}

/// Options from `SYNTH_SCALE` / `SYNTH_SEED` (defaults 1 and 42), to try other seeds by hand.
fn env_options() -> GenOptions {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let d = GenOptions::default();
    GenOptions {
        scale: var("SYNTH_SCALE").map_or(d.scale, |s| s as u32),
        seed: var("SYNTH_SEED").unwrap_or(d.seed),
    }
}

#[test]
fn every_scenario_matches_its_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut errors = Vec::new();
    let opts = env_options();
    for &(scenario, _) in synth::scenarios() {
        let (path, answers) = gen_into(dir.path(), scenario, &opts);
        let trace =
            load_path(&path, LoadOptions::all()).unwrap_or_else(|e| panic!("load {scenario}: {e}"));
        for (profile, key) in PROFILES {
            check_margins(scenario, key, &answers, &mut errors);
            let cfg = DetectConfig {
                profile,
                file_label: scenario.to_string(),
                ..Default::default()
            };
            let report =
                detect(&trace, &cfg).unwrap_or_else(|e| panic!("detect {scenario} {key}: {e}"));
            assert_eq!(
                report.trace.kernels,
                answers["kernels"].as_u64().unwrap_or(0),
                "{scenario}: kernel count"
            );
            let devices: Vec<u64> = answers["devices"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .collect();
            let got_devices: Vec<u64> =
                report.trace.devices.iter().map(|&d| u64::from(d)).collect();
            assert_eq!(got_devices, devices, "{scenario}: devices");
            let got = serde_json::to_value(&report).expect("report serializes");
            compare(
                &format!("{scenario}/{key}"),
                &answers["profiles"][key],
                Some(&got),
                &mut errors,
            );
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn the_comparator_reports_mismatches() {
    let want = serde_json::json!({"a": {"x": 0.5, "n": 3, "s": "YES", "z": null}, "phases": {"context": {"k": 1}}, "l": [1, 2]});
    let mut errors = Vec::new();
    compare("t", &want, Some(&want.clone()), &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let got = serde_json::json!({"a": {"x": 0.5001, "n": 4, "s": "NO", "z": 1.0}, "phases": {"generation": {}}, "l": [1]});
    compare("t", &want, Some(&got), &mut errors);
    assert_eq!(errors.len(), 8, "{errors:#?}");
}

#[test]
fn answers_are_written_beside_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, answers) = gen_into(dir.path(), "gaps", &GenOptions::default());
    let on_disk = std::fs::read_to_string(synth::answers_path(&path)).expect("answers file");
    // Compared as text: parsing floats back is not bit-exact without serde_json's float_roundtrip.
    assert_eq!(
        on_disk,
        serde_json::to_string_pretty(&answers).expect("serializes") + "\n"
    );
    assert_eq!(
        synth::answers_path(Path::new("/x/t.sqlite")),
        Path::new("/x/t.answers.json")
    );
}

#[test]
fn scale_multiplies_the_kernels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = gen_into(dir.path(), "host-bound", &GenOptions { scale: 1, seed: 42 }).1;
    let two = gen_into(dir.path(), "host-bound", &GenOptions { scale: 2, seed: 42 }).1;
    let k1 = one["kernels"].as_u64().unwrap_or(0);
    assert_eq!(k1, synth::HOST_BOUND_KERNELS_PER_SCALE);
    assert_eq!(two["kernels"].as_u64(), Some(2 * k1));
}

#[test]
fn same_seed_same_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = gen_into(
        dir.path(),
        "tp2-straggler",
        &GenOptions { scale: 1, seed: 7 },
    )
    .1;
    let b = gen_into(
        dir.path(),
        "tp2-straggler",
        &GenOptions { scale: 1, seed: 7 },
    )
    .1;
    assert_eq!(a, b);
    let c = gen_into(
        dir.path(),
        "tp2-straggler",
        &GenOptions { scale: 1, seed: 8 },
    )
    .1;
    assert_eq!(
        c["kernels"], a["kernels"],
        "the seed changes durations, not the structure"
    );
}

#[test]
fn unknown_scenario_lists_the_known_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = synth::generate("nope", &dir.path().join("x.sqlite"), &GenOptions::default())
        .expect_err("unknown");
    let msg = err.to_string();
    assert!(msg.contains("host-bound") && msg.contains("gaps"), "{msg}");
}

#[test]
fn scenario_specific_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = GenOptions::default();
    let gaps = gen_into(dir.path(), "gaps", &opts).1;
    let counts: Vec<u64> = gaps["gap_buckets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["count"].as_u64())
        .collect();
    assert_eq!(counts, vec![30, 30, 25, 25, 20, 15, 10, 6, 3]);
    let graphs = gen_into(dir.path(), "cuda-graphs", &opts).1;
    assert_eq!(graphs["cuda_graphs"]["graph_kernels"], 40 * 14);
    assert_eq!(graphs["cuda_graphs"]["eager_kernels"], 3 * 20 + 40 * 2);
    let tp2 = gen_into(dir.path(), "tp2-straggler", &opts).1;
    assert_eq!(tp2["stragglers"]["straggler_device"], 1);
    let share = tp2["stragglers"]["straggler_share"].as_f64().unwrap_or(0.0);
    assert!((0.85..0.95).contains(&share), "straggler share {share}");
    let base = gen_into(dir.path(), "regression-baseline", &opts).1;
    let target = gen_into(dir.path(), "regression-target", &opts).1;
    assert_eq!(base["per_step"]["kernels_per_step"], 6.0);
    assert_eq!(target["per_step"]["kernels_per_step"], 22.0);
    assert!(
        target["per_step"]["nvtx_us_per_step"]
            .get("broadcast_requests")
            .is_some()
    );
    assert!(
        base["per_step"]["nvtx_us_per_step"]
            .get("broadcast_requests")
            .is_none()
    );
}

/// Benchmark: `cargo test --release --test integration -- --ignored --nocapture big_host_bound`
/// (scale 4000 = 5.12 M kernels unless `SYNTH_SCALE` says otherwise).
#[test]
#[ignore]
fn big_host_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scale = std::env::var("SYNTH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let t = std::time::Instant::now();
    let answers = gen_into(dir.path(), "host-bound", &GenOptions { scale, seed: 42 }).1;
    eprintln!(
        "host-bound --scale {scale}: {} kernels (file + answers) in {:?}",
        answers["kernels"],
        t.elapsed()
    );
}

/// Prints every scenario's answers; with `SYNTH_DIR=/some/dir` the files are kept there.
#[test]
#[ignore]
fn dump_answers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::env::var_os("SYNTH_DIR").map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    for &(scenario, _) in synth::scenarios() {
        let answers = gen_into(&dir, scenario, &GenOptions::default()).1;
        println!(
            "{}",
            serde_json::to_string_pretty(&answers).unwrap_or_default()
        );
    }
}

/// The launch overhead of one process or of all, counted here from the loaded runtime table.
struct DirectM2 {
    /// Launch calls of the process in the whole trace.
    calls: u64,
    /// Standard: their union ∩ the window; `trtllm-skill`: summed durations of those starting in it.
    ns: i64,
}

/// Kernel-launch API calls as `(process, start, end)`: every versioned launch API (standard) or
/// `cudaLaunchKernel` exactly (`trtllm-skill`), by a pattern of this test's own.
fn launch_calls(trace: &nsys_lens::model::Trace, profile: Profile) -> Vec<(u32, i64, i64)> {
    let versioned = regex::Regex::new(
        r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel|cuLaunchCooperativeKernel|cudaGraphLaunch|cuGraphLaunch)(_ptsz|_ptds)?(_v\d+)?$",
    )
    .expect("regex");
    let rt = &trace.runtime;
    (0..rt.len())
        .filter(|&i| {
            let name = trace.strings.get(rt.name[i]);
            match profile {
                Profile::Standard => versioned.is_match(name),
                Profile::TrtllmSkill => name == "cudaLaunchKernel",
            }
        })
        .map(|i| {
            let p = trace.threads.process[rt.thread[i] as usize];
            (p, rt.start[i], rt.end[i])
        })
        .collect()
}

/// M2 of `calls` in `[ws, we)`: per process the union's overlap (standard), or pooled
/// (`process` `None`) the durations of the calls starting in it.
fn direct_m2(calls: &[(u32, i64, i64)], process: Option<u32>, (ws, we): (i64, i64)) -> DirectM2 {
    let mut mine: Vec<(i64, i64)> = calls
        .iter()
        .filter(|c| process.is_none_or(|p| c.0 == p))
        .map(|c| (c.1, c.2))
        .collect();
    let calls_n = mine.len() as u64;
    if process.is_none() {
        let inside = mine.iter().filter(|c| c.0 >= ws && c.0 < we);
        return DirectM2 {
            calls: calls_n,
            ns: inside.map(|c| c.1 - c.0).sum(),
        };
    }
    mine.sort_unstable();
    let mut union: Vec<(i64, i64)> = Vec::new();
    for (s, e) in mine.into_iter().filter(|c| c.1 > c.0) {
        match union.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => union.push((s, e)),
        }
    }
    let ns = union
        .iter()
        .map(|&(s, e)| (e.min(we) - s.max(ws)).max(0))
        .sum();
    DirectM2 { calls: calls_n, ns }
}

/// `detect --window` (the middle half of the kernel hull) measures M2 in that window: every
/// process's launch calls, covered time and ratio (standard) and the pooled sum (`trtllm-skill`)
/// equal what this test counts from the loaded runtime table, on every scenario.
#[test]
fn m2_in_a_user_window_equals_a_direct_count_on_every_scenario() {
    let dir = tempfile::tempdir().expect("tempdir");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
    let mut cut = 0;
    for &(scenario, _) in synth::scenarios() {
        let (path, _) = gen_into(dir.path(), scenario, &GenOptions::default());
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let (s, e) = (
            trace.kernels.start.iter().min(),
            trace.kernels.end.iter().max(),
        );
        let (s, e) = (*s.expect("kernels"), *e.expect("kernels"));
        let window = (s + (e - s) / 4, e - (e - s) / 4);
        let window_us = (window.1 - window.0) as f64 / 1000.0;
        for (profile, key) in PROFILES {
            let cfg = DetectConfig {
                profile,
                window: Some(window),
                ..Default::default()
            };
            let report = detect(&trace, &cfg).expect("detect");
            assert_eq!(report.window.source, "user", "{scenario}");
            let calls = launch_calls(&trace, profile);
            let ev = &report.evidence["launch_overhead_ratio"];
            let (numerator, value) = match profile {
                Profile::Standard => {
                    let mut sum = (0.0, 0.0);
                    assert!(!report.per_process.is_empty(), "{scenario}: processes");
                    for p in &report.per_process {
                        let idx = trace
                            .processes
                            .global_pid
                            .iter()
                            .position(|g| g.to_string() == p.global_pid)
                            .expect("process") as u32;
                        let want = direct_m2(&calls, Some(idx), window);
                        let us = want.ns as f64 / 1000.0;
                        assert_eq!(p.launch_calls, want.calls, "{scenario} {key}: calls");
                        assert_eq!(p.launch_us, Some(us), "{scenario} {key}: µs");
                        let ratio = p.launch_overhead_ratio.expect("ratio");
                        assert!(close(ratio, us / window_us), "{scenario} {key}: ratio");
                        cut += usize::from(direct_m2(&calls, Some(idx), (s, e)).ns > want.ns);
                        sum = (sum.0 + us, sum.1 + ratio);
                    }
                    (sum.0, sum.1 / report.per_process.len() as f64)
                }
                Profile::TrtllmSkill => {
                    let want = direct_m2(&calls, None, window);
                    let us = want.ns as f64 / 1000.0;
                    cut += usize::from(direct_m2(&calls, None, (s, e)).ns > want.ns);
                    (us, us / window_us)
                }
            };
            let got = (
                ev.numerator_us.expect("numerator"),
                ev.value.expect("value"),
            );
            assert!(
                close(got.0, numerator),
                "{scenario} {key}: {got:?} vs {numerator}"
            );
            assert!(close(got.1, value), "{scenario} {key}: {got:?} vs {value}");
        }
    }
    assert!(cut >= 10, "the window cuts launch time off in {cut} cases");
}
