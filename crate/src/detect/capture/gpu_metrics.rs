//! GPU metrics (`--gpu-metrics-devices`): per device, the mean SM Active, SM Issue, Tensor
//! Active and DRAM bandwidth (read + write, % of peak) over the kernel window and over each
//! phase's span, and the patterns they show. Read from the loader's binned series
//! ([`crate::model::capture::MetricSeries`]): a window cutting a bin counts it in proportion.
//!
//! Patterns, each on one device over the kernel window (thresholds chosen here, in % of peak):
//! - `low_utilization`: SM Active < [`LOW_SM_ACTIVE`];
//! - `launch_overhead`: SM Active < [`LOW_SM_ACTIVE`] while the device is idle between kernels
//!   more than the verdict's GPU idle threshold: the SMs wait for work the host has not launched;
//! - `memory_bound`: DRAM bandwidth ≥ [`HIGH_DRAM`] with SM Issue < [`LOW_ISSUE`];
//! - `compute_bound`: SM Issue ≥ [`HIGH_ISSUE`] or Tensor Active ≥ [`HIGH_TENSOR`].

use serde::Serialize;

use super::CaptureInputs;
use crate::model::Ns;
use crate::model::capture::{MetricClass, MetricSeries};

pub const LOW_SM_ACTIVE: f64 = 50.0;
pub const HIGH_DRAM: f64 = 60.0;
pub const LOW_ISSUE: f64 = 40.0;
pub const HIGH_ISSUE: f64 = 60.0;
pub const HIGH_TENSOR: f64 = 50.0;

/// Mean values (% of peak) of one device over one window; `None` when not sampled there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricMeans {
    pub sm_active: Option<f64>,
    pub sm_issue: Option<f64>,
    pub tensor_active: Option<f64>,
    /// DRAM read + write bandwidth.
    pub dram_bandwidth: Option<f64>,
    /// Samples read (of the most sampled metric).
    pub samples: f64,
}

/// One device's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceGpuMetrics {
    pub device: u32,
    pub window: MetricMeans,
    pub context: Option<MetricMeans>,
    pub generation: Option<MetricMeans>,
    /// The patterns these figures show (`low_utilization`, `launch_overhead`, `memory_bound`,
    /// `compute_bound`).
    pub patterns: Vec<&'static str>,
}

/// `capture.gpu_metrics`: the metric names matched and the per-device figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuMetricsReport {
    pub metrics: Vec<String>,
    pub per_device: Vec<DeviceGpuMetrics>,
}

fn means(series: &[&MetricSeries], (s, e): (Ns, Ns)) -> MetricMeans {
    let of = |c: MetricClass| {
        series
            .iter()
            .find(|m| m.class == c)
            .and_then(|m| m.mean(s, e))
    };
    let dram = match (of(MetricClass::DramRead), of(MetricClass::DramWrite)) {
        (None, None) => None,
        (r, w) => Some(r.map_or(0.0, |r| r.0) + w.map_or(0.0, |w| w.0)),
    };
    let samples = MetricClass::ALL
        .iter()
        .filter_map(|&c| of(c).map(|m| m.1))
        .fold(0.0, f64::max);
    MetricMeans {
        sm_active: of(MetricClass::SmActive).map(|m| m.0),
        sm_issue: of(MetricClass::SmIssue).map(|m| m.0),
        tensor_active: of(MetricClass::TensorActive).map(|m| m.0),
        dram_bandwidth: dram,
        samples,
    }
}

fn patterns(m: &MetricMeans, idle_ratio: Option<f64>, idle_threshold: f64) -> Vec<&'static str> {
    let mut out = Vec::new();
    let low = m.sm_active.is_some_and(|a| a < LOW_SM_ACTIVE);
    if low {
        out.push("low_utilization");
        if idle_ratio.is_some_and(|i| i > idle_threshold) {
            out.push("launch_overhead");
        }
    }
    if m.dram_bandwidth.is_some_and(|d| d >= HIGH_DRAM) && m.sm_issue.is_some_and(|i| i < LOW_ISSUE)
    {
        out.push("memory_bound");
    }
    if m.sm_issue.is_some_and(|i| i >= HIGH_ISSUE)
        || m.tensor_active.is_some_and(|t| t >= HIGH_TENSOR)
    {
        out.push("compute_bound");
    }
    out
}

/// The figures, when the export holds matched metric samples.
pub fn report(inp: &CaptureInputs<'_>) -> Option<GpuMetricsReport> {
    let marks = &inp.host.capture;
    if marks.metric_series.is_empty() {
        return None;
    }
    let hull = inp.kernels.facts.hull?;
    let mut devices: Vec<u32> = marks.metric_series.iter().map(|s| s.device).collect();
    devices.dedup();
    let window = (hull.1 - hull.0).max(1) as f64;
    let per_device = devices
        .into_iter()
        .map(|device| {
            let series: Vec<&MetricSeries> = marks
                .metric_series
                .iter()
                .filter(|s| s.device == device)
                .collect();
            let idle_ratio = inp.kernels.idle.as_ref().and_then(|p| {
                p.devices
                    .iter()
                    .find(|d| d.device == device)
                    .map(|d| 1.0 - d.busy_ns as f64 / window)
            });
            let whole = means(&series, hull);
            DeviceGpuMetrics {
                device,
                patterns: patterns(&whole, idle_ratio, inp.thresholds.gpu_idle_ratio),
                window: whole,
                context: inp.phase_spans[0].map(|w| means(&series, w)),
                generation: inp.phase_spans[1].map(|w| means(&series, w)),
            }
        })
        .collect();
    Some(GpuMetricsReport {
        metrics: marks.metric_names.iter().map(|(_, n)| n.clone()).collect(),
        per_device,
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.1} %"))
}

/// The evidence line of the `gpu_metrics` check.
pub fn evidence(r: &GpuMetricsReport) -> String {
    let devices: Vec<String> = r
        .per_device
        .iter()
        .map(|d| {
            let m = &d.window;
            let shows = if d.patterns.is_empty() {
                "no pattern".to_string()
            } else {
                d.patterns.join(", ")
            };
            format!(
                "device {}: SM Active {}, SM Issue {}, Tensor Active {}, DRAM bandwidth {} over the kernel window ({shows})",
                d.device,
                pct(m.sm_active),
                pct(m.sm_issue),
                pct(m.tensor_active),
                pct(m.dram_bandwidth)
            )
        })
        .collect();
    devices.join("; ")
}
