//! What the capture checks read of the host side beyond the verdict's tables: the warm-up
//! activity (module loading, run-time compilation, slow launches) and whether the Python GC and
//! GIL markers were recorded. Read by `trace::capture` from the rows the load reads anyway (the
//! NVTX ranges, the runtime calls), else by a filtered `SELECT`, so the page's bounded open holds
//! it as the CLI does.

use super::Ns;

/// What a warm-up span was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WarmupKind {
    /// `cuModuleLoad*`, `cuLibraryLoad*` and the lazy-loading lookups (`names::api`).
    ModuleLoad,
    /// NVRTC, `cuLink*`, nvJitLink calls, or an NVTX range naming a compile or autotuning.
    Jit,
    /// A kernel-launch call of [`SLOW_LAUNCH_NS`] or more: a first launch loading its module.
    SlowLaunch,
}

/// A launch call at least this long is counted as warm-up (lazy loading of its module on first
/// launch takes milliseconds; a steady launch call takes microseconds, and one slowed by a busy
/// host rarely reaches this).
pub const SLOW_LAUNCH_NS: Ns = 5_000_000;

/// At most this many warm-up spans are held; more are counted, not kept.
pub const MAX_WARMUP_SPANS: usize = 1 << 16;

/// One warm-up span on any thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmupSpan {
    pub start: Ns,
    pub end: Ns,
    pub kind: WarmupKind,
    /// The API's base name or the NVTX range's label.
    pub label: String,
}

/// The capture facts the loader read (empty when the tables are absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptureMarks {
    /// Warm-up spans in start order (at most [`MAX_WARMUP_SPANS`]).
    pub warmup: Vec<WarmupSpan>,
    /// Warm-up spans beyond [`MAX_WARMUP_SPANS`], not kept.
    pub warmup_dropped: u64,
    /// Whether the warm-up spans were read (a runtime or NVTX table exists).
    pub read: bool,
    /// `Python GC` NVTX ranges (`TLLM_PROFILE_RECORD_GC=1`).
    pub gc_ranges: u64,
    /// `Waiting for GIL` / `Holding GIL` NVTX ranges (`-t …,python-gil`).
    pub gil_ranges: u64,
    /// Rows of `GPU_METRICS` (`--gpu-metrics-devices`), when the table exists.
    pub gpu_metrics: Option<u64>,
    /// The series of the metrics matched by [`MetricClass::of`], per device.
    pub metric_series: Vec<MetricSeries>,
    /// The metric names matched, per class.
    pub metric_names: Vec<(MetricClass, String)>,
}

/// The capture facts a load gathered from one table while reading it for its own use
/// (`trace::capture` merges them into [`CaptureMarks`] at the end of the load): `None` until
/// that table was read whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptureFold {
    pub runtime: Option<CaptureMarks>,
    pub nvtx: Option<CaptureMarks>,
}

/// The GPU-metric series the checks read, matched by the metric's name prefix (names vary by
/// nsys version and GPU: `SMs Active [Throughput %]`, `SM Active`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetricClass {
    SmActive,
    SmIssue,
    TensorActive,
    DramRead,
    DramWrite,
}

impl MetricClass {
    pub const ALL: [MetricClass; 5] = [
        MetricClass::SmActive,
        MetricClass::SmIssue,
        MetricClass::TensorActive,
        MetricClass::DramRead,
        MetricClass::DramWrite,
    ];

    /// The class of a `TARGET_INFO_GPU_METRICS.metricName`, by prefix (ASCII case-insensitive).
    pub fn of(name: &str) -> Option<MetricClass> {
        let lower = name.to_ascii_lowercase();
        let prefixes: [(&[&str], MetricClass); 5] = [
            (&["sms active", "sm active"], MetricClass::SmActive),
            (&["sm issue", "sms issue"], MetricClass::SmIssue),
            (
                &["tensor active", "tensor pipe active"],
                MetricClass::TensorActive,
            ),
            (
                &["dram read bandwidth", "dram read throughput"],
                MetricClass::DramRead,
            ),
            (
                &["dram write bandwidth", "dram write throughput"],
                MetricClass::DramWrite,
            ),
        ];
        prefixes
            .iter()
            .find(|(p, _)| p.iter().any(|p| lower.starts_with(p)))
            .map(|&(_, c)| c)
    }
}

/// Bins a series keeps: the capture's extent in at most this many, widths doubling as it grows.
pub const METRIC_BINS: usize = 2048;

/// One device's samples of one metric, summed in time bins (bounded whatever the capture's
/// length): bin `i` covers `[origin + i·width, origin + (i+1)·width)`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSeries {
    pub device: u32,
    pub class: MetricClass,
    pub origin: Ns,
    pub width: Ns,
    /// Per bin: sum of the sampled values and how many samples.
    pub bins: Vec<(f64, u64)>,
}

impl MetricSeries {
    pub fn new(device: u32, class: MetricClass, origin: Ns) -> MetricSeries {
        MetricSeries {
            device,
            class,
            origin,
            width: 1_000_000,
            bins: Vec::new(),
        }
    }

    /// Adds a sample at `t` (samples before the first one go to the first bin).
    pub fn add(&mut self, t: Ns, value: f64) {
        let mut i = ((t - self.origin).max(0) / self.width) as usize;
        while i >= METRIC_BINS {
            let merged: Vec<(f64, u64)> = self
                .bins
                .chunks(2)
                .map(|c| c.iter().fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1)))
                .collect();
            self.bins = merged;
            self.width *= 2;
            i = ((t - self.origin).max(0) / self.width) as usize;
        }
        if self.bins.len() <= i {
            self.bins.resize(i + 1, (0.0, 0));
        }
        self.bins[i].0 += value;
        self.bins[i].1 += 1;
    }

    /// Mean of the samples in `[start, end)` (bins cut by the window count in proportion) and
    /// the samples it read; `None` when none falls inside.
    pub fn mean(&self, start: Ns, end: Ns) -> Option<(f64, f64)> {
        let (mut sum, mut n) = (0.0, 0.0);
        for (i, &(s, c)) in self.bins.iter().enumerate() {
            let b0 = self.origin + i as Ns * self.width;
            let b1 = b0 + self.width;
            let overlap = (b1.min(end) - b0.max(start)).max(0);
            if overlap > 0 && c > 0 {
                let f = overlap as f64 / self.width as f64;
                sum += s * f;
                n += c as f64 * f;
            }
        }
        (n > 0.0).then(|| (sum / n, n))
    }
}
