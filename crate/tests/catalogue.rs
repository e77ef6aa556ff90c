//! The metric catalogue the text report and the page read is the one the verdict computes: every
//! metric is a key of the report's metrics and evidence, every editable threshold moves the
//! threshold the catalogue says it does, and the summary names the scopes that crossed.

use crate::common;

use nsys_lens::detect::catalogue::{CATALOGUE, Direction, METRICS, THRESHOLDS};
use nsys_lens::detect::{DetectConfig, ThresholdOverrides, detect};
use nsys_lens::trace::{LoadOptions, load_path};

fn report_json(cfg: &DetectConfig) -> (serde_json::Value, nsys_lens::detect::DetectReport) {
    let (_dir, path, _) = common::generated("host-bound", 2, 5);
    let trace = load_path(&path, LoadOptions::detect()).expect("load");
    let report = detect(&trace, cfg).expect("detect");
    (serde_json::to_value(&report).expect("json"), report)
}

#[test]
fn every_catalogued_metric_is_in_the_report_with_its_direction() {
    let (v, _) = report_json(&DetectConfig::default());
    for m in &METRICS {
        assert!(
            v["aggregate_metrics"].get(m.key).is_some(),
            "{} in aggregate_metrics",
            m.key
        );
        let direction = &v["evidence"][m.key]["direction"];
        let want = match m.direction {
            Direction::Above => "above",
            Direction::Below => "below",
        };
        assert_eq!(direction, want, "{} crosses {want}", m.key);
    }
    assert_eq!(METRICS.len(), 7);
    assert_eq!(CATALOGUE.min_crossed, 2);
}

#[test]
fn every_editable_threshold_moves_the_threshold_the_catalogue_names() {
    for f in &THRESHOLDS {
        let overrides: ThresholdOverrides =
            serde_json::from_value(serde_json::json!({ f.option: 0.4321 })).expect("an option");
        let cfg = DetectConfig {
            thresholds: overrides,
            ..DetectConfig::default()
        };
        let (v, _) = report_json(&cfg);
        assert_eq!(
            v["thresholds"][f.scope][f.metric], 0.4321,
            "{} sets thresholds.{}.{}",
            f.option, f.scope, f.metric
        );
    }
}

#[test]
fn the_summary_names_the_scopes_that_crossed() {
    let (_, report) = report_json(&DetectConfig::default());
    assert_eq!(report.verdict, "YES");
    let aggregate = format!(
        "aggregate ({} of {} metrics crossed)",
        report.crossed_count, report.applicable_count
    );
    assert!(report.summary.contains(&aggregate), "{}", report.summary);
    assert!(report.summary.starts_with("The host CPU is a bottleneck"));
    let strict = DetectConfig {
        thresholds: serde_json::from_value(serde_json::json!({
            "gpu_idle_ratio": 0.99, "gpu_utilization": 0.0, "launch_overhead_ratio": 0.99,
            "host_prep_exposed_ratio": 0.99, "host_prep_perf_impact": 0.99,
            "host_prep_idle_attribution": 0.99, "generation_gpu_idle_ratio": 0.99,
            "generation_gpu_utilization": 0.0
        }))
        .expect("overrides"),
        ..DetectConfig::default()
    };
    let (_, calm) = report_json(&strict);
    assert_eq!(calm.verdict, "NO");
    assert!(
        calm.summary
            .contains("fewer than 2 applicable metrics crossed"),
        "{}",
        calm.summary
    );
}
