//! Both analysis profiles read a trace's event tables only through `EventRows`: the analysis of
//! rows behind a `meta` that holds no event table equals the analysis of the loaded trace, for
//! every way of finding steps.

use crate::common;

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

/// The drill-down over the index Root cause read on its way and the gaps the standard profile's
/// window pass swept (`analyze_rows_indexed`, as the page keeps them between the two views)
/// equals the drill-down that indexes the rows and sweeps the gaps itself, findings and
/// explainer report alike, under the default options and under others (then sweeping the gaps
/// itself). `trtllm-skill` keeps the index alone: its drill-down sweeps the gaps, reading the
/// rows for no index.
#[test]
fn the_drill_down_over_root_causes_index_equals_one_that_reads_its_own() {
    use nsys_lens::analyze::analyze_rows_indexed;
    use nsys_lens::drill::{DrillOptions, RowIndex};
    use nsys_lens::findings::DrillFindings;
    let dir = tempfile::TempDir::new().expect("tempdir");
    for scenario in ["tp2-phases", "host-bound", "cuda-graphs"] {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        let opts = GenOptions { scale: 1, seed: 3 };
        generate_with_markers(scenario, &path, &opts, MarkerStyle::TensorrtLlm).expect("generated");
        let rows = common::RowsOnly::of(load_path(&path, LoadOptions::all()).expect("loaded"));
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = AnalyzeConfig {
                profile,
                ..AnalyzeConfig::default()
            };
            let (_, kept) = analyze_rows_indexed(&rows, &cfg).expect("analysed");
            let kept = kept.expect("Root cause reads drill's index");
            assert_eq!(
                kept.gaps.is_some(),
                profile == Profile::Standard,
                "{scenario}, {profile:?}: the gaps swept by the window pass alone"
            );
            let label = format!("{scenario}.sqlite");
            let reused = [RowIndex::with_facts(&rows, &label, kept.index)];
            let own = [RowIndex::new(&rows, &label, None).expect("indexed")];
            let three = DrillOptions {
                top: 3,
                ..DrillOptions::default()
            };
            for drill in [DrillOptions::default(), three] {
                let what = format!("{scenario}, {profile:?}, top {}", drill.top);
                let swept = kept.gaps.as_ref();
                rows.call_reads();
                let (a, ea) =
                    DrillFindings::explained_after(&reused, &drill, swept).expect("drilled");
                let reads_after = rows.call_reads();
                let (b, eb) = DrillFindings::explained(&own, &drill).expect("drilled");
                let reads_own = rows.call_reads();
                // Root cause's gaps taken under its options: neither each device's sweep nor
                // the top gaps' attribution reads the calls again.
                let taken = swept.is_some() && drill.top == DrillOptions::default().top;
                let saved = if taken {
                    own[0].devices.len() as u32 + 1
                } else {
                    0
                };
                assert_eq!(
                    (reads_after + saved, reads_after > 0),
                    (reads_own, true),
                    "{what}: the calls' reads"
                );
                assert_same(&a, &b, &format!("{what}: drill-down"));
                assert_same(&ea, &eb, &format!("{what}: explainer"));
                assert!(!a.findings.is_empty(), "{what}: something found");
                let gaps = &a.report.gaps;
                assert!(
                    gaps.top
                        .iter()
                        .chain(&gaps.device_idle.top)
                        .all(|g| g.file == label)
                        && a.report.idle.per_device.iter().all(|d| d.file == label),
                    "{what}: every gap and device names the trace"
                );
                assert!(!a.report.gaps.top.is_empty(), "{what}: gaps kept");
            }
        }
    }
}

/// Both serialize, to the same JSON.
fn assert_same<T: serde::Serialize>(a: &T, b: &T, what: &str) {
    let (a, b) = (serde_json::to_string(a), serde_json::to_string(b));
    assert!(a.is_ok() && a.ok() == b.ok(), "{what}");
}
