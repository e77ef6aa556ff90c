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

/// The drill-down over the index Root cause read on its way and the gaps its window pass swept
/// (`analyze_rows_indexed`, as the page keeps them between the two views) equals the drill-down
/// that indexes the rows and sweeps the gaps itself, findings and explainer report alike, under
/// the default options and under others (then sweeping the gaps itself); `trtllm-skill` reads
/// no index to keep.
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
        let cfg = AnalyzeConfig::default();
        let (_, kept) = analyze_rows_indexed(&rows, &cfg).expect("analysed");
        let kept = kept.expect("the standard profile reads drill's index");
        let label = format!("{scenario}.sqlite");
        let reused = [RowIndex::with_facts(&rows, &label, kept.index)];
        let own = [RowIndex::new(&rows, &label, None).expect("indexed")];
        let same = |x: serde_json::Result<String>, y: serde_json::Result<String>| {
            x.is_ok() && x.ok() == y.ok()
        };
        let three = DrillOptions {
            top: 3,
            ..DrillOptions::default()
        };
        for drill in [DrillOptions::default(), three] {
            let swept = Some(&kept.gaps);
            rows.call_reads();
            let (a, ea) = DrillFindings::explained_after(&reused, &drill, swept).expect("drilled");
            let reads_after = rows.call_reads();
            let (b, eb) = DrillFindings::explained(&own, &drill).expect("drilled");
            let reads_own = rows.call_reads();
            // Root cause's gaps taken under its options: neither each device's sweep nor the
            // top gaps' attribution reads the calls again.
            let taken = drill.top == DrillOptions::default().top;
            let saved = if taken {
                own[0].devices.len() as u32 + 1
            } else {
                0
            };
            assert_eq!(
                (reads_after + saved, reads_after > 0),
                (reads_own, true),
                "{scenario}, top {}: the calls' reads",
                drill.top
            );
            let (a_json, b_json) = (serde_json::to_string(&a), serde_json::to_string(&b));
            assert!(
                same(a_json, b_json),
                "{scenario}, top {}: drill-down",
                drill.top
            );
            let (ea_json, eb_json) = (serde_json::to_string(&ea), serde_json::to_string(&eb));
            assert!(
                same(ea_json, eb_json),
                "{scenario}, top {}: explainer",
                drill.top
            );
            assert!(!a.findings.is_empty(), "{scenario}: something found");
            let gaps = &a.report.gaps;
            assert!(
                gaps.top
                    .iter()
                    .chain(&gaps.device_idle.top)
                    .all(|g| g.file == label)
                    && a.report.idle.per_device.iter().all(|d| d.file == label),
                "{scenario}: every gap and device names the trace"
            );
            assert!(!a.report.gaps.top.is_empty(), "{scenario}: gaps kept");
        }
        let skill = AnalyzeConfig {
            profile: Profile::TrtllmSkill,
            ..AnalyzeConfig::default()
        };
        assert!(
            analyze_rows_indexed(&rows, &skill)
                .expect("analysed")
                .1
                .is_none()
        );
    }
}
