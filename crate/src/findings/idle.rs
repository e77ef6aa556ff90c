//! Findings of the drill-down's idle-time attribution: one per cause holding GPU-idle time,
//! with the calls or ranges holding it, the largest gap and the fix that fits the cause.

use super::{Finding, Severity, finding, ms_ns, pct};
use crate::drill::DrillReport;
use crate::drill::gaps::bucket_label;
use crate::drill::idle::{CauseGap, CauseKind, GapCause};
use crate::model::Ns;
use crate::names::steps::StepStyle;

/// One cause's idle time over every device of the drill-down.
#[derive(Default)]
struct CauseTotal<'d> {
    ns: Ns,
    devices: usize,
    labels: Vec<(&'d str, Ns)>,
    /// (gap, its device, its file).
    gaps: Vec<(CauseGap, u32, &'d str)>,
    by_bucket: [Ns; 9],
}

/// The causes of every device's idle time summed per kind, largest first.
fn cause_totals(d: &DrillReport) -> Vec<(CauseKind, CauseTotal<'_>)> {
    let mut per: Vec<(CauseKind, CauseTotal<'_>)> = Vec::new();
    for dev in &d.idle.per_device {
        for c in &dev.causes {
            let i = match per.iter().position(|(k, _)| *k == c.kind) {
                Some(i) => i,
                None => {
                    per.push((c.kind, CauseTotal::default()));
                    per.len() - 1
                }
            };
            let t = &mut per[i].1;
            t.ns += c.ns;
            t.devices += 1;
            for l in &c.labels {
                match t.labels.iter_mut().find(|(n, _)| *n == l.label) {
                    Some((_, ns)) => *ns += l.ns,
                    None => t.labels.push((&l.label, l.ns)),
                }
            }
            t.gaps
                .extend(c.gaps.iter().map(|g| (*g, dev.device, dev.file.as_str())));
            for (b, ns) in t.by_bucket.iter_mut().zip(&c.by_bucket) {
                *b += ns;
            }
        }
    }
    for (_, t) in &mut per {
        t.labels.sort_by_key(|&(l, ns)| (std::cmp::Reverse(ns), l));
        t.gaps
            .sort_by_key(|(g, _, _)| (std::cmp::Reverse(g.ns), g.start_ns));
    }
    per.sort_by_key(|(k, t)| (std::cmp::Reverse(t.ns), k.rank()));
    per
}

/// One finding per cause that keeps the GPUs idle ≥ 2 % of device time (the drill-down's
/// idle-time attribution): the cause named, the calls or ranges holding its time inside the
/// gaps, the gap sizes it sits in, its largest gap, and the fix that fits the cause.
pub(super) fn idle_findings(d: &DrillReport) -> Vec<Finding> {
    let device_us = d.gaps.device_idle.device_time_us;
    let idle_ns: Ns = d.idle.per_device.iter().map(|x| x.idle_ns).sum();
    if device_us <= 0.0 || idle_ns <= 0 {
        return Vec::new();
    }
    cause_totals(d)
        .into_iter()
        .filter_map(|(kind, t)| {
            let share = t.ns as f64 / 1000.0 / device_us;
            let severity = Severity::of_share(share);
            (severity != Severity::Info).then(|| idle_finding(d, kind, &t, idle_ns, share))
        })
        .collect()
}

fn idle_finding(
    d: &DrillReport,
    kind: CauseKind,
    t: &CauseTotal<'_>,
    idle_ns: Ns,
    share: f64,
) -> Finding {
    let label = t.labels.first().map_or("", |l| l.0);
    let cause = GapCause {
        kind,
        label: label.to_string(),
        share: 0.0,
    };
    let what = cause_text(&cause);
    let title = match kind {
        CauseKind::Untraced => format!(
            "GPU idle with no host activity recorded: {} of device time",
            pct(share)
        ),
        _ => format!("GPU idle during {what}: {} of device time", pct(share)),
    };
    // The title's share is of device time; this one names its own base, so that on a trace
    // idle nearly all the time the two do not read as one figure rounded two ways.
    let mut evidence = format!(
        "{} of GPU-idle time ({} of the {} idle) on {} device{}",
        ms_ns(t.ns),
        pct(t.ns as f64 / idle_ns as f64),
        ms_ns(idle_ns),
        t.devices,
        if t.devices == 1 { "" } else { "s" }
    );
    if kind != CauseKind::Untraced && !t.labels.is_empty() {
        let held: Vec<String> = t
            .labels
            .iter()
            .take(3)
            .map(|(l, ns)| format!("{l} {}", ms_ns(*ns)))
            .collect();
        evidence += &format!("; inside the gaps: {}", held.join(", "));
    }
    if let Some((b, ns)) = t
        .by_bucket
        .iter()
        .enumerate()
        .max_by_key(|&(i, ns)| (*ns, std::cmp::Reverse(i)))
        .filter(|(_, ns)| **ns > 0)
    {
        evidence += &format!(
            "; mostly in {} gaps ({} of it)",
            bucket_label(b),
            pct(*ns as f64 / t.ns as f64)
        );
    }
    if let Some((g, device, file)) = t.gaps.first() {
        evidence += &format!("; {}", largest_gap_text(d, g, *device, file));
    }
    let (pattern, fix) = fix_for(&cause);
    finding(
        Severity::of_share(share),
        "idle",
        title,
        evidence,
        pattern,
        &fix,
        t.ns as f64 / 1000.0,
    )
}

/// The gap of a cause holding most of its time, with the kernels around it when the gap report
/// lists it among its largest.
fn largest_gap_text(d: &DrillReport, g: &CauseGap, device: u32, file: &str) -> String {
    let mut s = format!(
        "largest: {} of a {} gap on device {device}",
        ms_ns(g.ns),
        ms_ns(g.end_ns - g.start_ns)
    );
    let listed = d.gaps.device_idle.top.iter().find(|t| {
        t.start_ns == g.start_ns && t.end_ns == g.end_ns && t.device == device && t.file == file
    });
    if let Some(t) = listed {
        s += &format!(" between {} and {}", t.prev_kernel, t.next_kernel);
    }
    s
}

/// A measured cause in words, with the API or NVTX name that holds it.
pub(super) fn cause_text(c: &GapCause) -> String {
    let what = match c.kind {
        CauseKind::Sync => "host-device synchronization",
        CauseKind::Launch => "kernel launch calls",
        CauseKind::ModuleLoad => "loading device code",
        CauseKind::Jit => "JIT compilation",
        CauseKind::Alloc => "allocation and runtime object creation",
        CauseKind::Memop => "copies and memsets on the host",
        CauseKind::Gc => "Python garbage collection",
        CauseKind::Gil => "waiting for the GIL",
        CauseKind::Osrt => "blocking OS calls",
        CauseKind::Comm => "waiting on a collective",
        CauseKind::Api => "other CUDA API calls",
        CauseKind::Nvtx => "host work in an NVTX range",
        CauseKind::Untraced => "no recorded host activity",
    };
    match c.label.is_empty() {
        true => what.to_string(),
        false if c.kind == CauseKind::Nvtx && is_step_marker(&c.label) => format!(
            "host work in the forward step ({}) outside its named ranges",
            c.label
        ),
        false => format!("{what} ({})", c.label),
    }
}

/// Whether an idle label is a step marker's pattern: the idle time of a step's own range,
/// outside every range named inside it (`names::ranges::range_label`).
fn is_step_marker(label: &str) -> bool {
    StepStyle::ALL.iter().any(|s| s.pattern() == label)
}

/// The optimization pattern (reference §9.5, where one applies) and the advice that fit a
/// measured cause.
fn fix_for(c: &GapCause) -> (Option<&'static str>, String) {
    let label = &c.label;
    match c.kind {
        CauseKind::Sync => (
            Some("SYNC, HOIST"),
            format!("Remove the host-device sync ({label}): pre-compute the value on the CPU (SYNC) and pass it down from step level (HOIST) instead of reading GPU results (.item(), .cpu(), .tolist()) in the loop."),
        ),
        CauseKind::Launch => (
            Some("GRAPH_EXPAND, CUSTOM_OP"),
            format!("The launch calls themselves ({label}) hold the GPU: slow first launches are lazy module loading (warm up before the capture, or CUDA_MODULE_LOADING=EAGER); many short launches are fused (CUSTOM_OP) or captured in a CUDA graph (GRAPH_EXPAND)."),
        ),
        CauseKind::ModuleLoad | CauseKind::Jit => (
            None,
            format!("This is warm-up ({label}): measure after it (a capture range that starts after the first iterations, nsys -c cudaProfilerApi) or cache the compiled kernels; it says nothing about the steady state."),
        ),
        CauseKind::Alloc => (
            Some("ALLOC"),
            format!("Allocate buffers and create CUDA events/streams once at initialization, not per step or per layer ({label})."),
        ),
        CauseKind::Memop => (
            None,
            format!("Host-side copies ({label}) hold the GPU: use pinned host memory and async copies on a side stream, or keep the data on the device."),
        ),
        CauseKind::Gc => (
            None,
            "Python's garbage collector pauses the host: gc.freeze() after start-up, or collect between requests rather than during steps.".to_string(),
        ),
        CauseKind::Gil => (
            None,
            "Threads wait for the GIL while the GPU idles: move the competing Python work out of the serving thread's path, or release the GIL in long native calls.".to_string(),
        ),
        CauseKind::Osrt => (
            None,
            format!("Blocking OS calls ({label}) hold the host: move I/O and waits off the launching thread."),
        ),
        CauseKind::Comm => (
            None,
            format!("The rank waits on a collective ({label}): find the straggler rank (drill-down with every rank's file) and balance its work."),
        ),
        CauseKind::Api => (
            None,
            format!("CUDA API calls ({label}) hold the host: call them once outside the loop or cache their results."),
        ),
        CauseKind::Nvtx if is_step_marker(label) => (
            Some("HOIST, CUSTOM_OP"),
            "Host code in the forward step outside every NVTX range named inside it holds the GPU: name it first (NVTX ranges around the step's host functions, or line_profiler on the step), then hoist per-step work out of the loop (HOIST) or fuse it into a custom op (CUSTOM_OP).".to_string(),
        ),
        CauseKind::Nvtx => (
            Some("HOIST, CUSTOM_OP"),
            format!("Host code inside the NVTX range {label} holds the GPU: profile that function (line_profiler), hoist per-step work out of the loop (HOIST) or fuse it into a custom op (CUSTOM_OP)."),
        ),
        CauseKind::Untraced => (
            None,
            "No host activity was recorded during most of this time: trace more of the host (nsys -t cuda,nvtx,osrt, NVTX ranges around the serving loop, Python sampling) to see what holds it.".to_string(),
        ),
    }
}
