//! Whole-window figures of one trace (issue 18 item 4): what a comparison falls back to when
//! steps cannot be found in one or both traces. The kernel window is the first kernel's start
//! to the last kernel's end (all devices); every figure is normalized per second of that window
//! and per kernel launched, so two captures of different lengths compare.

use serde::Serialize;

use super::breakdown::PerName;
use super::compare::{Delta, OpDelta, regressions, rows};
use super::ops::Tallies;
use crate::drill::gap_report::gaps_and_idle;
use crate::index::TraceIndex;
use crate::model::intervals::MergeSorted;
use crate::model::{Ns, Trace};
use crate::profile::Profile;
use crate::steps::visible_name;

/// One name's time over the whole window, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowRow {
    pub name: String,
    /// Time per second of kernel window (µs/s).
    pub us_per_s: f64,
    /// Time per kernel launched in the window (µs).
    pub us_per_kernel: f64,
    pub calls_per_s: f64,
    pub total_us: f64,
    pub calls: u64,
}

/// The whole kernel window of one trace, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowFigures {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub window_s: f64,
    pub kernels: u64,
    pub kernels_per_s: f64,
    pub devices: usize,
    /// Busy share of the window (kernels' union per device, averaged over devices), 0–1.
    pub gpu_busy_share: f64,
    pub gpu_idle_share: f64,
    /// Kernel time by kernel name, largest first.
    pub kernel_ops: Vec<WindowRow>,
    /// CUDA API time by name (calls starting in the window), largest first.
    pub api_ops: Vec<WindowRow>,
    /// NVTX push/pop and start/end ranges starting in the window, by name, largest first.
    pub nvtx_ops: Vec<WindowRow>,
    /// GPU-idle time by cause (`drill::idle`'s attribution, all devices), µs per second of
    /// window, largest first.
    pub idle_causes: Vec<(String, f64)>,
}

/// The figures of `trace`'s kernel window; `None` without kernels.
pub fn window_figures(trace: &Trace) -> Option<WindowFigures> {
    let k = &trace.kernels;
    let start_ns = k.start.iter().copied().min()?;
    let end_ns = k.end.iter().copied().max()?;
    let span = (end_ns - start_ns).max(1);
    let window_s = span as f64 / 1e9;
    let kernels = k.len() as u64;
    let (devices, busy) = busy_share(trace, span);
    let rows = |t: Tallies<'_>| -> Vec<WindowRow> {
        t.rows(None, |v| v)
            .into_iter()
            .map(|r| WindowRow {
                us_per_s: r.total_us / window_s,
                us_per_kernel: r.total_us / kernels.max(1) as f64,
                calls_per_s: r.calls as f64 / window_s,
                name: r.name,
                total_us: r.total_us,
                calls: r.calls,
            })
            .collect()
    };
    let inside = |t: Ns| t >= start_ns && t < end_ns;
    let r = &trace.runtime;
    let api = Tallies::of_events(&trace.strings, &r.name, (&r.start, &r.end), |i| {
        inside(r.start[i])
    });
    let kernel_tally =
        Tallies::of_events(&trace.strings, &k.short_name, (&k.start, &k.end), |_| true);
    Some(WindowFigures {
        start_ns,
        end_ns,
        window_s,
        kernels,
        kernels_per_s: kernels as f64 / window_s,
        devices,
        gpu_busy_share: busy,
        gpu_idle_share: 1.0 - busy,
        kernel_ops: rows(kernel_tally),
        api_ops: rows(api),
        nvtx_ops: rows(nvtx_tally(trace, inside)),
        idle_causes: idle_causes(trace, window_s),
    })
}

/// Every device's idle time by cause, as the drill-down attributes it, per second of window.
fn idle_causes(trace: &Trace, window_s: f64) -> Vec<(String, f64)> {
    let ix = TraceIndex::new(trace, "trace");
    let (_, idle) = gaps_and_idle(std::slice::from_ref(&ix), 0, None);
    let mut by_kind: Vec<(String, f64)> = Vec::new();
    for cause in idle.per_device.iter().flat_map(|d| &d.causes) {
        let us_per_s = cause.ns as f64 / 1000.0 / window_s;
        match by_kind.iter_mut().find(|(k, _)| k == cause.kind.name()) {
            Some((_, v)) => *v += us_per_s,
            None => by_kind.push((cause.kind.name().to_string(), us_per_s)),
        }
    }
    by_kind.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    by_kind
}

/// NVTX ranges starting in the window, by their visible name.
fn nvtx_tally<'t>(trace: &'t Trace, inside: impl Fn(Ns) -> bool) -> Tallies<'t> {
    let sw = Profile::Standard.switches();
    let nvtx = &trace.nvtx;
    let mut t = Tallies::default();
    for i in 0..nvtx.len() {
        let Some(name) = visible_name(nvtx, i, &sw) else {
            continue;
        };
        if inside(nvtx.start[i]) {
            t.add(
                trace.strings.get(name),
                (nvtx.end[i] - nvtx.start[i]).max(0),
            );
        }
    }
    t
}

/// Devices with kernels, and the mean over them of the kernels' union over the window.
///
/// Each device's union is merged in start order as the kernels come (an export's kernel table
/// is in start order); otherwise its kernels' row numbers are sorted by start first. No list of
/// intervals per kernel.
fn busy_share(trace: &Trace, span: Ns) -> (usize, f64) {
    let k = &trace.kernels;
    let in_order = k.start.is_sorted();
    let device_ids = k.devices();
    let busy: f64 = device_ids
        .iter()
        .map(|&device| {
            let rows = (0..k.len()).filter(|&i| k.device[i] == device);
            let union: Ns = if in_order {
                MergeSorted::new(rows.map(|i| (k.start[i], k.end[i])))
                    .map(|(s, e)| e - s)
                    .sum()
            } else {
                let mut rows: Vec<u32> = rows.map(|i| i as u32).collect();
                rows.sort_unstable_by_key(|&i| k.start[i as usize]);
                let spans = rows
                    .iter()
                    .map(|&i| (k.start[i as usize], k.end[i as usize]));
                MergeSorted::new(spans).map(|(s, e)| e - s).sum()
            };
            union as f64 / span as f64
        })
        .sum();
    let devices = device_ids.len().max(1);
    (devices, busy / devices as f64)
}

/// Baseline vs target over their whole kernel windows: every per-name value is µs per second
/// of kernel window (the `*_us_per_step` fields of the rows hold that figure here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowComparison {
    /// Says plainly that this is a window comparison, and why.
    pub note: String,
    /// Steps could not be compared in one or both traces: this comparison is the answer.
    pub replaces_steps: bool,
    pub unit: &'static str,
    pub window_s: Delta,
    pub gpu_busy_share: Delta,
    pub kernels_per_s: Delta,
    /// Mean kernel time: kernel time per kernel launched (µs).
    pub kernel_us_per_kernel: Delta,
    pub kernels: Vec<OpDelta>,
    pub api: Vec<OpDelta>,
    pub nvtx: Vec<OpDelta>,
    /// GPU-idle time by cause (`sync`, `launch`, `untraced` …), µs per second of window.
    pub idle_causes: Vec<OpDelta>,
    /// The kernel, CUDA API or NVTX op that grew most per second of window.
    pub top_regression: Option<WindowRegression>,
    pub primary_cause: Option<&'static str>,
    pub conclusion: String,
}

/// The largest growth of one table, with the table it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowRegression {
    /// `kernel`, `cuda-api` or `nvtx`.
    pub kind: &'static str,
    #[serde(flatten)]
    pub row: OpDelta,
}

fn per_s(rows: &[WindowRow]) -> PerName {
    PerName(rows.iter().map(|r| (r.name.clone(), r.us_per_s)).collect())
}

fn mean_kernel_us(w: &WindowFigures) -> f64 {
    w.kernel_ops.iter().map(|r| r.total_us).sum::<f64>() / w.kernels.max(1) as f64
}

/// Compares two kernel windows; `missing` names the trace(s) without per-step figures (empty:
/// both have them).
pub fn compare_windows(b: &WindowFigures, t: &WindowFigures, missing: &str) -> WindowComparison {
    let d = |x: f64, y: f64| Delta::new(Some(x), Some(y), Profile::Standard);
    let kernels = rows(&per_s(&b.kernel_ops), &per_s(&t.kernel_ops));
    let api = rows(&per_s(&b.api_ops), &per_s(&t.api_ops));
    let nvtx = rows(&per_s(&b.nvtx_ops), &per_s(&t.nvtx_ops));
    let idle_causes = rows(
        &PerName(b.idle_causes.clone()),
        &PerName(t.idle_causes.clone()),
    );
    // Host tables and the kernel table each nominate their largest growth; the largest wins.
    let top_regression = [("kernel", &kernels), ("cuda-api", &api), ("nvtx", &nvtx)]
        .into_iter()
        .filter_map(|(kind, table)| {
            regressions(table)
                .into_iter()
                .next()
                .map(|row| WindowRegression { kind, row })
        })
        .max_by(|x, y| x.row.delta_us.total_cmp(&y.row.delta_us));
    let busy = d(b.gpu_busy_share, t.gpu_busy_share);
    let primary_cause = top_regression.as_ref().map(|r| match r.kind {
        "kernel" => "GPU execution",
        _ => "host overhead",
    });
    let why = if missing.is_empty() {
        "alongside the per-step comparison".to_string()
    } else {
        format!("no per-step figures in {missing}, so")
    };
    let note = format!(
        "Window comparison: {why} the whole kernel windows are compared (first kernel start to last kernel end), normalized per second of kernel window and per kernel launched"
    );
    let conclusion = window_conclusion(&note, &busy, top_regression.as_ref());
    WindowComparison {
        note,
        replaces_steps: !missing.is_empty(),
        unit: "µs per second of kernel window",
        window_s: d(b.window_s, t.window_s),
        gpu_busy_share: busy,
        kernels_per_s: d(b.kernels_per_s, t.kernels_per_s),
        kernel_us_per_kernel: d(mean_kernel_us(b), mean_kernel_us(t)),
        kernels,
        api,
        nvtx,
        idle_causes,
        top_regression,
        primary_cause,
        conclusion,
    }
}

fn window_conclusion(note: &str, busy: &Delta, top: Option<&WindowRegression>) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.1}%", v * 100.0));
    let busy_text = format!("GPU busy {} → {}", pct(busy.baseline), pct(busy.target));
    let top_text = match top {
        Some(r) => format!(
            "the largest regression is {} `{}`: {:.0} → {:.0} µs per second of window ({})",
            r.kind,
            r.row.name,
            r.row.baseline_us_per_step,
            r.row.target_us_per_step,
            r.row
                .delta_pct
                .map_or("new".to_string(), |p| format!("{p:+.1}%"))
        ),
        None => "no kernel, CUDA API or NVTX op grew per second of window".to_string(),
    };
    format!("{note}. {busy_text}; {top_text}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// Device 0: 0..100, 50..150 and 300..400 ns, a union of 250 ns; device 1: 100..200 and
    /// 120..130 ns (100 ns) and a zero-length kernel at 500 ns. Over a 500 ns window: 50 % and
    /// 20 % busy, 35 % on average.
    fn kernels(order: &[usize]) -> TraceBuilder {
        let all = [
            (0, 0, 100),
            (0, 50, 150),
            (0, 300, 400),
            (1, 100, 200),
            (1, 120, 130),
            (1, 500, 500),
        ];
        let mut b = TraceBuilder::new();
        for &i in order {
            let (device, start, end) = all[i];
            b.kernel_on((device, 7), "k", (start, end), 0);
        }
        b
    }

    #[test]
    fn busy_share_is_each_devices_union_averaged_in_start_order_or_not() {
        for order in [[0, 1, 3, 4, 2, 5], [2, 5, 4, 0, 3, 1]] {
            let b = kernels(&order);
            let (devices, busy) = busy_share(&b.trace, 500);
            assert_eq!(devices, 2, "{order:?}");
            assert!((busy - 0.35).abs() < 1e-12, "{order:?}: {busy}");
            let w = window_figures(&b.trace).expect("kernels");
            assert_eq!((w.start_ns, w.end_ns, w.gpu_busy_share), (0, 500, busy));
        }
    }
}
