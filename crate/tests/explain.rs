//! The explainer as a fold over rows (`explain::explain_rows`): it holds no state per kernel,
//! call or range, and its percentiles are exact.

use crate::common;

use std::collections::HashMap;

use nsys_lens::explain::{self, Held};
use nsys_lens::index::rows::RowIndex;
use nsys_lens::model::Trace;
use nsys_lens::names::api::{ApiKind, api_kind};
use nsys_lens::synth::HOST_BOUND_KERNELS_PER_SCALE;
use nsys_lens::trace::{LoadOptions, load_path};

/// The explainer's held state over `scenario` generated at `scale`, with its graph launch
/// calls.
fn held(scenario: &str, scale: u32) -> (Held, u64) {
    let (_dir, path, _answers) = common::generated(scenario, scale, 5);
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let steps = RowIndex::loaded(&trace, scenario, None).steps.steps;
    let (report, held) = explain::explain_rows_held(&trace, scenario, &steps, 20).expect("explain");
    assert_eq!(report.kernels.kernels, held.kernels, "{scenario}");
    let graph_launches = report
        .api_calls
        .by_name
        .iter()
        .filter(|c| api_kind(&c.name) == ApiKind::GraphLaunch)
        .map(|c| c.count)
        .sum();
    (held, graph_launches)
}

/// `host-bound` launches each kernel eagerly inside NVTX step ranges, `layers` nests layer
/// ranges in steps: on a trace eight times longer, the calls held for the join and the ranges
/// open at the clock stay as many, while the kernels are (nearly) eight times as many. The
/// percentiles' entries (coarse buckets, then the values inside the buckets the percentiles
/// fall in) fill up towards their bound, set by the durations' range, not by their number.
#[test]
fn the_explainer_holds_as_much_on_a_trace_eight_times_longer() {
    for scenario in ["host-bound", "layers"] {
        let ((short, _), (long, _)) = (held(scenario, 1), held(scenario, 8));
        eprintln!("{scenario}: scale 1 {short:?}, scale 8 {long:?}");
        assert!(long.kernels > 7 * short.kernels, "{scenario}: kernels");
        assert!(short.pending_calls > 0, "{scenario}: launches are joined");
        assert!(short.open_ranges > 0, "{scenario}: ranges are open");
        assert_eq!(
            (long.pending_calls, long.open_ranges),
            (short.pending_calls, short.open_ranges),
            "{scenario}: held calls and open ranges"
        );
        assert!(
            long.duration_entries < 3 * short.duration_entries,
            "{scenario}: percentile entries"
        );
    }
    assert_eq!(
        held("host-bound", 2).0.kernels,
        2 * HOST_BOUND_KERNELS_PER_SCALE
    );
}

/// A graph launch issues many kernels, so the join keeps its call to the end (no row says
/// when its last kernel came): on `cuda-graphs` eight times longer, the held calls grow by the
/// added graph launches at most, the open ranges not at all.
#[test]
fn graph_launches_are_the_only_calls_held_to_the_end() {
    let ((short, short_graphs), (long, long_graphs)) =
        (held("cuda-graphs", 1), held("cuda-graphs", 8));
    eprintln!("cuda-graphs: scale 1 {short:?}, scale 8 {long:?}");
    assert_eq!(long.kernels, 8 * short.kernels);
    assert_eq!(long_graphs, 8 * short_graphs);
    assert!(short_graphs > 0 && long.pending_calls > short.pending_calls);
    assert!(
        long.pending_calls - short.pending_calls <= (long_graphs - short_graphs) as usize,
        "{} held calls at scale 8, {} at scale 1, {short_graphs} → {long_graphs} graph launches",
        long.pending_calls,
        short.pending_calls
    );
    assert_eq!(long.open_ranges, short.open_ranges);
}

/// The value at index `floor(n × q)` of the sorted values (the reference's `compute_stats`).
fn sorted_quantile(sorted: &[i64], q: f64) -> i64 {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// Each kernel name's durations in ns, read from the loaded columns.
fn durations_by_name(trace: &Trace) -> HashMap<String, Vec<i64>> {
    let k = &trace.kernels;
    let mut by_name: HashMap<String, Vec<i64>> = HashMap::new();
    for i in 0..k.len() {
        let name = match trace.strings.get(k.short_name[i]) {
            "" => "(unnamed)",
            s => s,
        };
        by_name
            .entry(name.to_string())
            .or_default()
            .push((k.end[i] - k.start[i]).max(0));
    }
    by_name
}

/// The top kernels' percentiles, counted per distinct duration, are the sorted durations'
/// values at the reference's indices, on real exports with repeated and distinct durations.
#[test]
fn kernel_percentiles_are_the_sorted_durations_at_the_reference_indices() {
    for name in [
        "GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite",
        "NVIDIA_Fuser__df8f397__report1.sqlite",
    ] {
        let path = common::public_trace(name);
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let report = explain::explain_rows(&trace, name, &[], 10).expect("explain");
        let mut by_name = durations_by_name(&trace);
        assert!(!report.kernels.top.is_empty(), "{name}");
        for k in &report.kernels.top {
            let sorted = by_name.get_mut(&k.name).expect("a kernel name");
            sorted.sort_unstable();
            let us = |ns: i64| ns as f64 / 1000.0;
            let want = (
                sorted.len() as u64,
                us(sorted[0]),
                us(sorted_quantile(sorted, 0.5)),
                us(sorted_quantile(sorted, 0.9)),
                us(sorted[sorted.len() - 1]),
            );
            assert_eq!(
                (k.count, k.min_us, k.p50_us, k.p90_us, k.max_us),
                want,
                "{name}: {}",
                k.name
            );
        }
    }
}

/// The explainer reads the event tables only as rows: over rows whose metadata holds no table
/// it gives what it gives over the loaded trace, on exports with copies, memsets, NVTX ranges
/// and graph launches, and on exports without kernels (the window is then the host's events).
#[test]
fn the_explainer_reads_the_tables_only_as_rows() {
    let exports = [
        "GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite",
        "LeiWang1999_memfusion_artifact__report1.sqlite",
        "brycelelbach_nsightful__power_iteration__baseline.sqlite",
        "amir-ghz_DynamicViT__nsys_profile.sqlite",
        "davidev886_tutorial_vqe__report1.sqlite",
        "ZhangXin8069_qcu__test_report1.e5c172f.sqlite",
    ];
    let mut traces: Vec<(String, Trace)> = exports
        .iter()
        .map(|name| {
            let path = common::public_trace(name);
            (
                name.to_string(),
                load_path(&path, LoadOptions::all()).expect("load"),
            )
        })
        .collect();
    let (_dir, path, _) = common::generated("cuda-graphs", 1, 5);
    traces.push((
        "cuda-graphs".into(),
        load_path(&path, LoadOptions::all()).expect("load"),
    ));
    for (name, trace) in traces {
        let steps = RowIndex::loaded(&trace, &name, None).steps.steps;
        let loaded = serde_json::to_value(
            explain::explain_rows(&trace, &name, &steps, 20).expect("explain"),
        )
        .expect("json");
        let rows = common::RowsOnly::of(trace);
        let folded = explain::explain_rows(&rows, &name, &steps, 20).expect("explain");
        assert_eq!(
            serde_json::to_value(folded).expect("json"),
            loaded,
            "{name}"
        );
    }
}

/// The explainer riding on the drill-down's passes (its host join on the drill's first pass,
/// its window and top names from the index) reports exactly what its own passes report, on
/// every public export with kernels and on scenarios with graph launches, idle causes and
/// several ranks' worth of calls.
#[test]
fn the_explainer_riding_on_the_drill_down_reports_what_its_own_passes_report() {
    use nsys_lens::drill::{DrillOptions, RowIndex};
    use nsys_lens::findings::DrillFindings;
    let mut traces: Vec<(String, Trace)> = common::public_exports_with_kernels()
        .iter()
        .map(|path| {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .to_string();
            (name, load_path(path, LoadOptions::all()).expect("load"))
        })
        .collect();
    let mut dirs = Vec::new();
    for scenario in ["cuda-graphs", "idle-causes", "host-bound", "gaps"] {
        let (dir, path, _) = common::generated(scenario, 2, 7);
        traces.push((
            scenario.into(),
            load_path(&path, LoadOptions::all()).expect("load"),
        ));
        dirs.push(dir);
    }
    let opts = DrillOptions::default();
    let top = explain::DEFAULT_TOP.max(opts.top);
    for (name, trace) in &traces {
        let ix = RowIndex::new(trace, name, None).expect("index");
        let own = explain::explain_rows(trace, name, &ix.steps.steps, top).expect("explain");
        let (_, mut rode) =
            DrillFindings::explained(std::slice::from_ref(&ix), &opts).expect("drill-down");
        let rode = rode.pop().expect("one explained trace");
        let (rode, own) = (
            serde_json::to_value(&rode).expect("json"),
            serde_json::to_value(&own).expect("json"),
        );
        assert!(rode == own, "{name}: {}", common::json_diff(&rode, &own));
    }
}
