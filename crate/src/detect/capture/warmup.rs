//! Warm-up: how much of the idle time between kernels the warm-up activity (module loading,
//! run-time compilation, slow first launches) covers, and the steady window after it.
//!
//! Read from the largest gaps of each device ([`super::idle::KEPT_GAPS`], exact) against the
//! warm-up spans of every thread: the share is a lower bound (smaller gaps are not read), which
//! is what a warning needs. A gap is a warm-up gap when warm-up spans cover half of it or more;
//! the steady window starts at the end of the last warm-up gap in the first half of the kernel
//! window, and its GPU idle ratio and utilization are exact (each kept gap carries every
//! device's busy time before its end).

use std::collections::BTreeMap;

use serde::Serialize;

use super::idle::KeptGap;
use super::{CaptureCheck, CaptureInputs, Status, WARMUP_SHARE};
use crate::model::Ns;
use crate::model::capture::{WarmupKind, WarmupSpan};
use crate::model::intervals::IntervalSet;

/// What the warm-up check measured: the idle time between kernels (all devices), the part of
/// it inside the largest gaps that warm-up spans cover, and their ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WarmupFigures {
    pub idle_ns: Ns,
    pub warmup_ns: Ns,
    pub share: f64,
}

/// The window after the warm-up, with the GPU figures of both windows (standard definitions:
/// per device, then the mean over devices that ran kernels).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyWindow {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub duration_us: f64,
    /// The warm-up before it: what held the last warm-up gap.
    pub after: String,
    pub gpu_idle_ratio: f64,
    pub gpu_utilization: f64,
    pub whole_gpu_idle_ratio: Option<f64>,
    pub whole_gpu_utilization: Option<f64>,
    /// `gpu_idle_ratio` / `gpu_utilization` when they cross the aggregate thresholds.
    pub crossed: Vec<&'static str>,
    /// The verdict of these two metrics alone (`YES` when both cross): launch overhead and
    /// host prep in this window need the calls again (`command`).
    pub verdict: &'static str,
    /// The CLI command giving the full verdict of the window.
    pub command: String,
}

fn kind_name(k: WarmupKind) -> &'static str {
    match k {
        WarmupKind::ModuleLoad => "module_load",
        WarmupKind::Jit => "jit",
        WarmupKind::SlowLaunch => "slow launch",
    }
}

/// The warm-up spans as sets: all of them, and per (kind, label).
struct Coverage {
    union: IntervalSet,
    per: BTreeMap<(WarmupKind, String), IntervalSet>,
}

/// Labels longer than this are cut (an NVTX text can hold a whole dictionary).
const MAX_LABEL: usize = 80;

impl Coverage {
    fn of(spans: &[WarmupSpan]) -> Coverage {
        let mut per: BTreeMap<(WarmupKind, String), Vec<(Ns, Ns)>> = BTreeMap::new();
        for s in spans {
            per.entry((s.kind, cut(&s.label)))
                .or_default()
                .push((s.start, s.end));
        }
        Coverage {
            union: IntervalSet::from_unsorted(spans.iter().map(|s| (s.start, s.end)).collect()),
            per: per
                .into_iter()
                .map(|(k, v)| (k, IntervalSet::from_unsorted(v)))
                .collect(),
        }
    }

    /// Covered ns of `[s, e)`.
    fn covered(&self, s: Ns, e: Ns) -> Ns {
        self.union.intersection_measure(&IntervalSet::single(s, e))
    }

    /// The `n` (kind, label) covering most of `gaps` (per device, summed), with their time.
    fn top(&self, gaps: &[IntervalSet], n: usize) -> Vec<String> {
        let mut v: Vec<(Ns, &(WarmupKind, String))> = self
            .per
            .iter()
            .map(|(k, set)| (gaps.iter().map(|g| set.intersection_measure(g)).sum(), k))
            .filter(|(ns, _)| *ns > 0)
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        v.into_iter()
            .take(n)
            .map(|(ns, (k, label))| format!("{} ({label}) {}", kind_name(*k), super::ms(ns)))
            .collect()
    }
}

fn cut(label: &str) -> String {
    match label.char_indices().nth(MAX_LABEL) {
        Some((i, _)) => format!("{}…", &label[..i]),
        None => label.to_string(),
    }
}

/// A steady window shorter than this share of the kernel window is not offered.
const MIN_STEADY_SHARE: f64 = 0.1;

/// The warm-up spans with only the slow launches that can be first launches: those starting
/// in the first [`EARLY_SHARE`] of the kernel window or by the time the last module load or
/// compile ends. A launch of ≥ 5 ms later in a run is something else (a full launch queue, a stalled
/// host) and stays out of the warm-up.
fn early_launches(spans: &[WarmupSpan], hull: Option<(Ns, Ns)>) -> Vec<WarmupSpan> {
    let (first, last) = hull.unwrap_or((0, 0));
    let loads_end = spans
        .iter()
        .filter(|s| s.kind != WarmupKind::SlowLaunch)
        .map(|s| s.end)
        .max()
        .unwrap_or(Ns::MIN);
    let early = first + ((last - first) as f64 * EARLY_SHARE) as Ns;
    let until = early.max(loads_end);
    spans
        .iter()
        .filter(|s| s.kind != WarmupKind::SlowLaunch || s.start <= until)
        .cloned()
        .collect()
}

/// The share of the kernel window, from its start, where a slow launch counts as a first one.
const EARLY_SHARE: f64 = 0.1;

/// The warm-up check and the steady window.
pub(super) fn check(
    inp: &CaptureInputs<'_>,
) -> (CaptureCheck, Option<WarmupFigures>, Option<SteadyWindow>) {
    let marks = &inp.host.capture;
    let Some(profile) = inp.kernels.idle.as_ref() else {
        return (unknown("the kernel sweep kept no idle profile"), None, None);
    };
    if !marks.read {
        return (
            unknown(
                "no CUDA API or NVTX table: module loads, compiles and first launches are not recorded",
            ),
            None,
            None,
        );
    }
    let spans = early_launches(&marks.warmup, inp.kernels.facts.hull);
    let cov = Coverage::of(&spans);
    let idle: Ns = profile
        .devices
        .iter()
        .map(|d| d.idle_ns)
        .fold(0, Ns::saturating_add);
    let mut warm: Ns = 0;
    let mut warm_gaps: Vec<(&KeptGap, u32)> = Vec::new();
    for d in &profile.devices {
        for g in &d.kept {
            let c = cov.covered(g.start, g.end);
            warm += c;
            if 2 * c >= g.ns() && c > 0 {
                warm_gaps.push((g, d.device));
            }
        }
    }
    let share = if idle > 0 {
        warm as f64 / idle as f64
    } else {
        0.0
    };
    let dropped = if marks.warmup_dropped > 0 {
        format!(" ({} more warm-up spans not read)", marks.warmup_dropped)
    } else {
        String::new()
    };
    let status = if share >= WARMUP_SHARE {
        Status::Warn
    } else {
        Status::Ok
    };
    let gap_sets: Vec<IntervalSet> = profile
        .devices
        .iter()
        .map(|d| IntervalSet::from_unsorted(d.kept.iter().map(|g| (g.start, g.end)).collect()))
        .collect();
    let top = cov.top(&gap_sets, 3);
    let evidence = if warm == 0 {
        format!(
            "no module load, compile or launch of ≥ 5 ms overlaps the largest idle gaps ({} warm-up spans in the trace){dropped}",
            spans.len()
        )
    } else {
        format!(
            "warm-up activity covers at least {:.1} % of the idle time between kernels ({} of {}){}: {}{dropped}",
            share * 100.0,
            super::ms(warm),
            super::ms(idle),
            if status == Status::Warn {
                "; the whole-window verdict mostly measures warm-up"
            } else {
                ""
            },
            top.join(", ")
        )
    };
    let steady = steady_window(inp, &warm_gaps, &top);
    let check = CaptureCheck {
        id: "warmup",
        status,
        title: "Warm-up outside the measured window",
        evidence,
        fix: (status == Status::Warn).then(|| {
            "capture after warm-up: nsys profile -c cudaProfilerApi with TLLM_PROFILE_START_STOP=A-B starting past the warm-up iterations (or read the steady window below)".to_string()
        }),
    };
    let figures = WarmupFigures {
        idle_ns: idle,
        warmup_ns: warm,
        share,
    };
    (check, Some(figures), steady)
}

fn unknown(why: &str) -> CaptureCheck {
    CaptureCheck {
        id: "warmup",
        status: Status::Unknown,
        title: "Warm-up outside the measured window",
        evidence: why.to_string(),
        fix: Some("nsys profile -t cuda,nvtx".into()),
    }
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=+@%,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The window after the last warm-up gap in the first half of the kernel window.
fn steady_window(
    inp: &CaptureInputs<'_>,
    warm_gaps: &[(&KeptGap, u32)],
    top: &[String],
) -> Option<SteadyWindow> {
    let (first, last) = inp.kernels.facts.hull?;
    let mid = first + (last - first) / 2;
    let (gap, _) = warm_gaps
        .iter()
        .filter(|(g, _)| g.start < mid)
        .max_by_key(|(g, _)| g.end)?;
    let start = gap.end;
    let len = last - start;
    if (len as f64) < MIN_STEADY_SHARE * (last - first) as f64 {
        return None;
    }
    let profile = inp.kernels.idle.as_ref()?;
    let ratios: Vec<f64> = profile
        .devices
        .iter()
        .map(|d| d.busy_ns - gap.busy_of(d.device))
        .filter(|&busy| busy > 0)
        .map(|busy| busy as f64 / len as f64)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let util = ratios.iter().sum::<f64>() / ratios.len() as f64;
    let idle = 1.0 - util;
    let t = inp.thresholds;
    let mut crossed = Vec::new();
    if idle > t.gpu_idle_ratio {
        crossed.push("gpu_idle_ratio");
    }
    if util < t.gpu_utilization {
        crossed.push("gpu_utilization");
    }
    Some(SteadyWindow {
        start_ns: start,
        end_ns: last,
        duration_us: len as f64 / 1000.0,
        after: top.first().cloned().unwrap_or_default(),
        gpu_idle_ratio: idle,
        gpu_utilization: util,
        whole_gpu_idle_ratio: inp.metrics.gpu_idle_ratio,
        whole_gpu_utilization: inp.metrics.gpu_utilization,
        verdict: if crossed.len() >= 2 { "YES" } else { "NO" },
        crossed,
        command: format!(
            "nsys-lens detect --window {start}:{last} {}",
            shell_word(inp.file)
        ),
    })
}
