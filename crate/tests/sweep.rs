//! The page's detect path: a kernel summary swept from a start-order stream, assembled with a
//! host part that holds no kernel, must give exactly the report `detect` gives on the full trace
//! (both profiles from one stream, on every generated scenario and every public export).

mod common;

use nsys_lens::detect::{
    DetectConfig, KernelSummary, KernelSweep, Profile, ThresholdOverrides, detect,
    detect_with_kernels,
};
use nsys_lens::model::{Kernels, Trace};
use nsys_lens::synth::{self, GenOptions};
use nsys_lens::trace::{LoadOptions, load_path};

const PROFILES: [Profile; 2] = [Profile::Standard, Profile::TrtllmSkill];

fn config(profile: Profile, label: &str) -> DetectConfig {
    DetectConfig {
        profile,
        file_label: label.to_string(),
        ..DetectConfig::default()
    }
}

/// One stream of kernels feeding one sweep per profile, as the page does.
fn summaries(trace: &Trace, cfgs: &[DetectConfig]) -> Vec<KernelSummary> {
    let mut sweeps: Vec<KernelSweep> = cfgs.iter().map(|c| KernelSweep::new(trace, c)).collect();
    for ev in trace.kernels.events_in_start_order() {
        for s in &mut sweeps {
            s.push(ev).expect("a sorted stream is accepted");
        }
    }
    sweeps.into_iter().map(KernelSweep::finish).collect()
}

fn without_kernels(trace: &Trace) -> Trace {
    Trace {
        kernels: Kernels::default(),
        ..trace.clone()
    }
}

/// `detect_with_kernels(host without kernels, summary)` equals `detect(full trace)`, as JSON.
fn assert_same_reports(trace: &Trace, label: &str) {
    let cfgs: Vec<DetectConfig> = PROFILES.iter().map(|&p| config(p, label)).collect();
    let host = without_kernels(trace);
    for (cfg, summary) in cfgs.iter().zip(summaries(trace, &cfgs)) {
        let full = detect(trace, cfg).unwrap_or_else(|e| panic!("{label}: detect: {e}"));
        let paged = detect_with_kernels(&host, &summary, cfg)
            .unwrap_or_else(|e| panic!("{label}: detect_with_kernels: {e}"));
        let (a, b) = (
            serde_json::to_string(&full).expect("json"),
            serde_json::to_string(&paged).expect("json"),
        );
        assert_eq!(a, b, "{label} {}", cfg.profile.name());
    }
}

#[test]
fn summary_path_equals_detect_on_every_scenario_in_both_profiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    for &(scenario, _) in synth::scenarios() {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        synth::generate(scenario, &path, &GenOptions::default())
            .unwrap_or_else(|e| panic!("generate {scenario}: {e}"));
        let trace =
            load_path(&path, LoadOptions::all()).unwrap_or_else(|e| panic!("load {scenario}: {e}"));
        assert_same_reports(&trace, scenario);
    }
}

#[test]
fn summary_path_equals_detect_on_every_public_export() {
    let dir = common::public_traces_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("public dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    files.sort();
    for path in files {
        let label = path.display().to_string();
        let Ok(trace) = load_path(&path, LoadOptions::detect()) else {
            continue;
        };
        if trace.kernels.is_empty() {
            continue;
        }
        assert_same_reports(&trace, &label);
    }
}

/// The `host-bound` scenario, generated and loaded.
fn host_bound() -> Trace {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host-bound.sqlite");
    synth::generate("host-bound", &path, &GenOptions::default()).expect("generate");
    load_path(&path, LoadOptions::all()).expect("load")
}

#[test]
fn thresholds_act_in_assembly_only() {
    let trace = host_bound();
    let host = without_kernels(&trace);
    for profile in PROFILES {
        let plain = config(profile, "t");
        let edited = DetectConfig {
            thresholds: ThresholdOverrides {
                gpu_idle_ratio: Some(0.01),
                launch_overhead_ratio: Some(0.9),
                gpu_utilization: Some(0.99),
                ..ThresholdOverrides::default()
            },
            ..plain.clone()
        };
        let swept = summaries(&trace, &[plain.clone(), edited.clone()]);
        assert_eq!(swept[0], swept[1], "thresholds changed the sweep");
        let reassembled = detect_with_kernels(&host, &swept[0], &edited).expect("assemble");
        let full = detect(&trace, &edited).expect("detect");
        assert_eq!(
            serde_json::to_string(&reassembled).expect("json"),
            serde_json::to_string(&full).expect("json")
        );
        let first = detect_with_kernels(&host, &swept[0], &plain).expect("assemble");
        assert_ne!(first.thresholds, reassembled.thresholds);
    }
}

#[test]
fn a_summary_from_another_profile_or_window_is_refused() {
    let trace = host_bound();
    let standard = config(Profile::Standard, "t");
    let summary = &summaries(&trace, std::slice::from_ref(&standard))[0];
    let skill = config(Profile::TrtllmSkill, "t");
    assert!(detect_with_kernels(&trace, summary, &skill).is_err());
    let windowed = DetectConfig {
        window: Some((0, 1_000)),
        ..standard.clone()
    };
    assert!(detect_with_kernels(&trace, summary, &windowed).is_err());
    let empty = KernelSweep::new(&trace, &standard).finish();
    assert!(detect_with_kernels(&without_kernels(&trace), &empty, &standard).is_err());
}
