//! Both analysis profiles read a trace's event tables only through `EventRows`: the analysis of
//! rows behind a `meta` that holds no event table equals the analysis of the loaded trace, for
//! every way of finding steps.

mod common;

use nsys_lens::analyze::{AnalyzeConfig, TraceBreakdown, analyze_rows, analyze_trace};
use nsys_lens::profile::Profile;
use nsys_lens::synth::{GenOptions, MarkerStyle, generate_with_markers};
use nsys_lens::trace::{LoadOptions, load_path};

#[test]
fn both_profiles_read_the_event_tables_only_through_the_row_iterators() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let mut methods = Vec::new();
    for (scenario, markers) in [
        ("tp2-phases", MarkerStyle::TensorrtLlm),
        ("host-bound", MarkerStyle::TensorrtLlm),
        ("host-bound", MarkerStyle::Unmarked),
        ("cuda-graphs", MarkerStyle::Unmarked),
    ] {
        let path = dir.path().join(format!("{scenario}-{markers:?}.sqlite"));
        let opts = GenOptions { scale: 1, seed: 5 };
        generate_with_markers(scenario, &path, &opts, markers).expect("generated");
        let trace = load_path(&path, LoadOptions::all()).expect("loaded");
        let rows = common::RowsOnly::of(trace.clone());
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = AnalyzeConfig {
                profile,
                ..AnalyzeConfig::default()
            };
            let whole = analyze_trace(&trace, &cfg).expect("analysed");
            let folded = analyze_rows(&rows, &cfg).expect("folded");
            let json = |b: &TraceBreakdown| serde_json::to_string(b).unwrap_or_default();
            assert_eq!(json(&folded), json(&whole), "{scenario}, {profile:?}");
            methods.push(whole.steps.map_or("none", |s| s.method));
        }
    }
    methods.sort_unstable();
    methods.dedup();
    assert_eq!(
        methods,
        [
            "allreduce-groups",
            "graph-launch",
            "kernel-sequence",
            "none",
            "nvtx-ranges"
        ],
        "every way of finding steps is read through the rows"
    );
}
