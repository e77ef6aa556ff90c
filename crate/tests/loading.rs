//! The two loading paths (sequential with progress, used in wasm; parallel, used natively) give
//! the same trace, progress is reported, and a progress callback can cancel.

use crate::common;

use nsys_lens::detect::{DetectConfig, detect};
use nsys_lens::profile::Profile;
use nsys_lens::trace::{self, LoadOptions};

fn generated(scenario: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, path, _) = common::generated(scenario, 1, 3);
    (dir, path)
}

#[test]
fn sequential_and_parallel_loads_agree() {
    let (_dir, path) = generated("tp2-straggler");
    let label = path.display().to_string();
    for opts in [LoadOptions::all(), LoadOptions::detect()] {
        let parallel = trace::load_path(&path, opts).expect("parallel load");
        let conn = trace::open_path(&path).expect("open");
        let sequential = trace::load(&conn, &label, opts, &mut |_| true).expect("sequential load");
        assert_eq!(parallel.kernels.len(), sequential.kernels.len());
        let gpid = |t: &nsys_lens::model::Trace, i: usize| {
            t.processes.global_pid[t.kernels.process[i] as usize]
        };
        for i in 0..parallel.kernels.len() {
            assert_eq!(
                gpid(&parallel, i),
                gpid(&sequential, i),
                "kernel {i} process"
            );
        }
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = DetectConfig {
                profile,
                file_label: label.clone(),
                ..DetectConfig::default()
            };
            let a = serde_json::to_value(detect(&parallel, &cfg).expect("detect")).expect("json");
            let b = serde_json::to_value(detect(&sequential, &cfg).expect("detect")).expect("json");
            assert_eq!(a, b, "{profile:?}");
        }
    }
}

#[test]
fn progress_is_reported_and_can_cancel() {
    let (_dir, path) = generated("host-bound");
    let conn = trace::open_path(&path).expect("open");
    let mut steps: Vec<&'static str> = Vec::new();
    trace::load(&conn, "t", LoadOptions::all(), &mut |p| {
        if steps.last() != Some(&p.step) {
            steps.push(p.step);
        }
        true
    })
    .expect("load");
    for step in [
        "probing schema",
        "loading kernels",
        "loading CUDA API calls",
        "loading NVTX ranges",
        "done",
    ] {
        assert!(steps.contains(&step), "missing step {step} in {steps:?}");
    }
    let err = trace::load(&conn, "t", LoadOptions::all(), &mut |p| {
        p.step != "loading kernels"
    })
    .expect_err("cancel");
    assert!(matches!(err, nsys_lens::Error::Cancelled), "{err}");
}
