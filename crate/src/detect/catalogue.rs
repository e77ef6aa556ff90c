//! The metrics and the editable thresholds, written once: the CLI's text report and the page
//! (through `metricCatalogue()`) read their keys, ids, titles and directions from here, and the
//! verdict's one-line reading comes from [`summary`].

use serde::Serialize;

use super::DetectReport;

/// Which side of its threshold a metric crosses on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Above,
    Below,
}

/// One metric of the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metric {
    /// The JSON key (`aggregate_metrics`, `evidence`, `thresholds`).
    pub key: &'static str,
    /// Its id in the spec (`M1` … `M5`).
    pub id: &'static str,
    pub title: &'static str,
    pub direction: Direction,
}

/// The metrics in the order every report lists them.
pub const METRICS: [Metric; 7] = [
    metric("gpu_idle_ratio", "M1", "GPU idle ratio", Direction::Above),
    metric(
        "launch_overhead_ratio",
        "M2",
        "Launch overhead ratio",
        Direction::Above,
    ),
    metric(
        "host_prep_exposed_ratio",
        "M3a",
        "Host prep exposed ratio",
        Direction::Above,
    ),
    metric(
        "host_prep_perf_impact",
        "M3b",
        "Host prep perf impact",
        Direction::Above,
    ),
    metric(
        "host_prep_idle_attribution",
        "M3c",
        "Host prep idle attribution",
        Direction::Above,
    ),
    metric("gpu_utilization", "M4", "GPU utilization", Direction::Below),
    // A caveat, not a verdict metric: it crosses when NCCL takes much of the GPU time.
    metric(
        "nccl_ratio",
        "M5",
        "NCCL share of GPU time",
        Direction::Above,
    ),
];

const fn metric(key: &'static str, id: &'static str, title: &'static str, d: Direction) -> Metric {
    Metric {
        key,
        id,
        title,
        direction: d,
    }
}

/// A threshold the user may edit: the option key of `ThresholdOverrides`, and where its
/// default sits in the report's `thresholds` (scope and metric key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThresholdField {
    pub option: &'static str,
    pub scope: &'static str,
    pub metric: &'static str,
}

/// Every editable threshold (the CLI's `--…-threshold` options, the page's inputs).
pub const THRESHOLDS: [ThresholdField; 8] = [
    field("gpu_idle_ratio", "aggregate", "gpu_idle_ratio"),
    field(
        "launch_overhead_ratio",
        "aggregate",
        "launch_overhead_ratio",
    ),
    field("gpu_utilization", "aggregate", "gpu_utilization"),
    field(
        "host_prep_exposed_ratio",
        "aggregate",
        "host_prep_exposed_ratio",
    ),
    field(
        "host_prep_perf_impact",
        "aggregate",
        "host_prep_perf_impact",
    ),
    field(
        "host_prep_idle_attribution",
        "aggregate",
        "host_prep_idle_attribution",
    ),
    field("generation_gpu_idle_ratio", "generation", "gpu_idle_ratio"),
    field(
        "generation_gpu_utilization",
        "generation",
        "gpu_utilization",
    ),
];

const fn field(option: &'static str, scope: &'static str, metric: &'static str) -> ThresholdField {
    ThresholdField {
        option,
        scope,
        metric,
    }
}

/// The catalogue as one value (the page's `metricCatalogue()` JSON).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Catalogue {
    pub metrics: &'static [Metric],
    pub thresholds: &'static [ThresholdField],
    /// Metrics that must cross in a scope for its verdict to be YES.
    pub min_crossed: u32,
}

pub const CATALOGUE: Catalogue = Catalogue {
    metrics: &METRICS,
    thresholds: &THRESHOLDS,
    min_crossed: super::verdict::MIN_CROSSED,
};

/// The metric of `key`.
pub fn metric_of(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// The verdict in one sentence: which scopes crossed, or that none did.
pub fn summary(r: &DetectReport) -> String {
    let scopes = [
        (
            "aggregate",
            Some((&r.verdict, r.crossed_count, r.applicable_count)),
        ),
        (
            "context",
            r.phases
                .context
                .as_ref()
                .map(|p| (&p.verdict, p.crossed_count, p.applicable_count)),
        ),
        (
            "generation",
            r.phases
                .generation
                .as_ref()
                .map(|p| (&p.verdict, p.crossed_count, p.applicable_count)),
        ),
    ];
    let crossed: Vec<String> = scopes
        .iter()
        .filter_map(|(name, s)| match s {
            Some((v, c, a)) if **v == "YES" => Some(format!("{name} ({c} of {a} metrics crossed)")),
            _ => None,
        })
        .collect();
    let min = super::verdict::MIN_CROSSED;
    let verdict = match crossed.is_empty() {
        false => format!("The host CPU is a bottleneck: {}.", crossed.join("; ")),
        true => format!(
            "The host CPU does not look like the bottleneck: fewer than {min} applicable metrics crossed in every scope (aggregate {} of {}).",
            r.crossed_count, r.applicable_count
        ),
    };
    match r.bound {
        Some(_) => verdict,
        None => format!("{verdict} {KERNEL_ROWS_ONLY}"),
    }
}

/// What the `trtllm-skill` profile's figures count, said once beside its verdict.
pub const KERNEL_ROWS_ONLY: &str = "As the reference scripts do, this profile counts kernel rows only: copies, memsets and CUDA-graph replays read as idle time.";

/// Where a report's steps come from, in one phrase: the step marker (built-in, regex or phase
/// map, found or given), else the unit inferred from the kernel stream, else none.
pub fn step_source(
    marker: Option<&crate::names::steps::StepMarkerReport>,
    inferred: Option<&crate::iterations::inferred::UnitFound>,
) -> String {
    match (marker, inferred) {
        (Some(m), _) => m.describe(),
        (None, Some(u)) => format!("no step marker; {}", u.describe()),
        (None, None) => "no step marker found, and the kernel stream does not repeat at step scale: give a built-in marker, a regex or a phase map".into(),
    }
}
