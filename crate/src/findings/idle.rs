//! Findings of the drill-down's idle-time attribution: one per cause holding GPU-idle time,
//! with the calls or ranges holding it, the largest gap and the fix that fits the cause.

use super::{Finding, Severity, finding, ms_ns, pct};
use crate::drill::DrillReport;
use crate::drill::gaps::bucket_label;
use crate::drill::idle::{CauseGap, CauseKind, GapCause, Meanwhile};
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
    /// CPU samples of the launching threads per frame (the most sampled of each device).
    frames: Vec<(&'d str, u32)>,
    /// Every sample of the launching threads in this time.
    samples: u32,
    /// Per device (and its file), what the other devices ran during this time (`host_ahead`).
    meanwhile: Vec<(u32, &'d str, &'d Meanwhile)>,
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
            t.ns = t.ns.saturating_add(c.ns);
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
            t.samples += c.samples;
            if let Some(m) = &c.meanwhile {
                t.meanwhile.push((dev.device, dev.file.as_str(), m));
            }
            for f in &c.frames {
                match t.frames.iter_mut().find(|(n, _)| *n == f.frame) {
                    Some((_, n)) => *n += f.samples,
                    None => t.frames.push((&f.frame, f.samples)),
                }
            }
        }
    }
    for (_, t) in &mut per {
        t.labels.sort_by_key(|&(l, ns)| (std::cmp::Reverse(ns), l));
        t.frames.sort_by_key(|&(f, n)| (std::cmp::Reverse(n), f));
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
    let idle_ns: Ns = d
        .idle
        .per_device
        .iter()
        .map(|x| x.idle_ns)
        .fold(0, Ns::saturating_add);
    if device_us <= 0.0 || idle_ns <= 0 {
        return Vec::new();
    }
    let totals = cause_totals(d);
    let unexplained = capture_advice(d, &totals, idle_ns, device_us);
    totals
        .into_iter()
        .filter_map(|(kind, t)| {
            let share = t.ns as f64 / 1000.0 / device_us;
            let severity = Severity::of_share(share);
            // nsys's own overhead is shown apart: a fact about the capture, never a warning.
            let severity = match kind {
                CauseKind::Profiler if share >= PROFILER_SHOWN => Severity::Info,
                CauseKind::Profiler => return None,
                _ if severity == Severity::Info => return None,
                _ => severity,
            };
            Some(idle_finding(d, kind, &t, idle_ns, (share, severity)))
        })
        .chain(unexplained)
        .collect()
}

/// From this share of GPU-idle time, host time no call explains asks for the records that
/// would.
const UNEXPLAINED_ASKS: f64 = 0.2;

/// When much idle time is host time no traced call explains (`cpu_busy`, `untraced`) and the
/// capture lacks the records that would name it, the nsys options that add them (NVIDIA's
/// Nsight Systems User Guide, `nsys profile` switches; see `docs/host-records.md`).
fn capture_advice(
    d: &DrillReport,
    totals: &[(CauseKind, CauseTotal<'_>)],
    idle_ns: Ns,
    device_us: f64,
) -> Option<Finding> {
    let unexplained: Ns = totals
        .iter()
        .filter(|(k, _)| unexplained_kind(*k))
        .map(|(_, t)| t.ns)
        .sum();
    let share = unexplained as f64 / idle_ns as f64;
    // Only devices with time to explain ask for the records (a device busy throughout does not).
    let seen = |f: fn(&crate::drill::idle::CpuRecords) -> bool| {
        d.idle
            .per_device
            .iter()
            .filter(|x| x.causes.iter().any(|c| unexplained_kind(c.kind)))
            .all(|x| f(&x.cpu_records))
    };
    let (scheduling, samples) = (seen(|r| r.scheduling), seen(|r| r.samples));
    if share < UNEXPLAINED_ASKS || (scheduling && samples) {
        return None;
    }
    let mut missing = Vec::new();
    if !samples {
        missing.push("CPU samples of the launching threads (nsys profile --sample=process-tree; for Python code also --python-sampling=true) name the code that ran");
    }
    if !scheduling {
        missing.push("thread scheduling (--cpuctxsw=process-tree) tells a thread running untraced code (cpu_busy) from one blocked or waiting for a CPU (cpu_waiting)");
    }
    Some(finding(
        Severity::Info,
        "capture",
        format!(
            "The capture cannot say what the host did during {} of the GPU-idle time",
            pct(share)
        ),
        format!(
            "{} of GPU-idle time ({} of device time) has no traced call or range on the launching processes; the capture has no {}",
            ms_ns(unexplained),
            pct(unexplained as f64 / 1000.0 / device_us),
            match (scheduling, samples) {
                (false, false) => "scheduling records or CPU samples of them",
                (true, false) => "CPU samples of them",
                _ => "scheduling records of them",
            }
        ),
        None,
        &format!(
            "Capture again with what is missing: {}.",
            missing.join("; ")
        ),
        unexplained as f64 / 1000.0,
    ))
}

/// Host time no traced call or range explains: what CPU samples and scheduling records would.
fn unexplained_kind(kind: CauseKind) -> bool {
    matches!(kind, CauseKind::CpuBusy | CauseKind::Untraced)
}

/// The share of device time from which nsys's own overhead gets a finding of its own.
const PROFILER_SHOWN: f64 = 0.02;

fn idle_finding(
    d: &DrillReport,
    kind: CauseKind,
    t: &CauseTotal<'_>,
    idle_ns: Ns,
    (share, severity): (f64, Severity),
) -> Finding {
    let label = t.labels.first().map_or("", |l| l.0);
    let cause = GapCause {
        kind,
        label: label.to_string(),
        share: 0.0,
        sampled: None,
        meanwhile: None,
    };
    let what = cause_text(&cause);
    let title = match kind {
        CauseKind::Untraced => format!(
            "GPU idle with no host activity recorded: {} of device time",
            pct(share)
        ),
        CauseKind::Profiler => format!(
            "GPU idle during nsys's own overhead (not your application): {} of device time",
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
    if !t.meanwhile.is_empty() {
        let files = d.idle.per_device.iter().any(|x| x.file != t.meanwhile[0].1);
        let each: Vec<String> = t
            .meanwhile
            .iter()
            .map(|(device, file, m)| match files {
                true => format!("while device {device} ({file}) waited, {}", m.sentence()),
                false => format!("while device {device} waited, {}", m.sentence()),
            })
            .collect();
        evidence += &format!("; {}", each.join("; "));
    }
    let samples = t.samples;
    if samples > 0 {
        let top: Vec<String> = t
            .frames
            .iter()
            .take(3)
            .map(|(f, n)| format!("{f} {} ({n})", pct(f64::from(*n) / f64::from(samples))))
            .collect();
        evidence += &format!(
            "; CPU samples of the launching threads in this time ({samples}): {}",
            top.join(", ")
        );
    }
    let (pattern, mut fix) = fix_for(&cause);
    let resolved = t.frames.iter().find(|(f, _)| !f.ends_with("(unresolved)"));
    if let Some((frame, _)) = resolved.filter(|_| profiled_code(kind)) {
        fix += &format!(
            " The samples point at {frame}: profile it first (line_profiler; for a Python function, name it in TLLM_LINE_PROFILER_FUNCTIONS)."
        );
    }
    finding(
        severity,
        "idle",
        title,
        evidence,
        pattern,
        &fix,
        t.ns as f64 / 1000.0,
    )
}

/// Whether a cause's time is host code running, whose sampled function is what to profile.
fn profiled_code(kind: CauseKind) -> bool {
    matches!(
        kind,
        CauseKind::CpuBusy | CauseKind::Nvtx | CauseKind::Untraced | CauseKind::Launch
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
        let (prev, next) = t.sides();
        s += &format!(" between {prev} and {next}");
    }
    s
}

/// A measured cause in words, with the API or NVTX name that holds it.
pub(super) fn cause_text(c: &GapCause) -> String {
    let what = match c.kind {
        CauseKind::Profiler => "nsys's own overhead, not your application",
        CauseKind::Sync => "host-device synchronization",
        CauseKind::Launch => "kernel launch calls",
        CauseKind::HostAhead => "launches waiting for room in the GPU's queue (host ahead)",
        CauseKind::LazyLoad => "the driver loading functions on first launch",
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
        CauseKind::CpuBusy => "untraced host code on the CPU",
        CauseKind::CpuWaiting => "launching threads off-CPU",
        CauseKind::Untraced => "no recorded host activity",
    };
    // These labels only restate the cause.
    let restated = matches!(c.kind, CauseKind::HostAhead | CauseKind::LazyLoad)
        || c.label == crate::drill::idle::UNSAMPLED;
    match c.label.is_empty() || restated {
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
        CauseKind::Profiler => (
            None,
            format!("This is nsys's own work ({label}), not your application's: it would not happen without the profiler, so it is no cause to fix in the code. If it is large, capture a shorter range or trace fewer APIs."),
        ),
        CauseKind::Launch => (
            Some("GRAPH_EXPAND, CUSTOM_OP"),
            format!("The launch calls themselves ({label}) hold the GPU: many short launches are fused (CUSTOM_OP) or captured in a CUDA graph (GRAPH_EXPAND). Slow first launches that no driver record explains may be lazy loading (warm up before the capture, or CUDA_MODULE_LOADING=EAGER)."),
        ),
        CauseKind::HostAhead => (
            None,
            format!("The launches ({label}) waited for room in the GPU's command queue: the host was ahead of the GPU, so this is not host overhead to cut. The GPU was busy with, or waiting on, work queued earlier (another stream, a copy, another device): look at what ran before these gaps."),
        ),
        CauseKind::LazyLoad => (
            None,
            format!("The driver loaded functions on their first launch ({label}): warm up before the capture or set CUDA_MODULE_LOADING=EAGER; it says nothing about the steady state."),
        ),
        CauseKind::CpuBusy => (
            Some("HOIST, CUSTOM_OP"),
            "The launching thread was on a CPU running code nsys did not trace: profile it with line_profiler, or put NVTX ranges around the step's host functions, then hoist per-step work out of the loop (HOIST) or fuse it (CUSTOM_OP).".to_string(),
        ),
        CauseKind::CpuWaiting => (
            None,
            format!("The launching threads were off their CPUs ({label}): blocked on I/O, a lock or a condition (trace OS runtime calls, -t osrt, to see which), or runnable but not scheduled, which is CPU contention: pin the launching thread to cores of its own near the GPU (taskset or numactl), and keep other work off them."),
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

#[cfg(test)]
mod tests {
    use crate::drill::idle::CauseKind;
    use crate::drill::{DrillOptions, drill_indexed};
    use crate::index::rows::RowIndex;
    use crate::index::testing::TraceBuilder;

    /// Device 0 (process 7) idles 100..1000 while its launch 100..1000 waits on a full command
    /// buffer 200..900 (host_ahead 700; the rest of the call is `launch`). Device 1 (process 9)
    /// runs a kernel 300..500 and one 1000..1100: inside the wait, 200 of 700 ns. The device's
    /// `host_ahead` cause, the gap's reading and the finding (700 of the 2200 ns of device time)
    /// say so.
    #[test]
    fn host_ahead_time_says_what_the_other_device_ran_meanwhile() {
        use crate::model::host_records::{OverheadKind, OverheadRow};
        let mut b = TraceBuilder::new();
        let c = b.call("cudaLaunchKernel", 0, 5);
        b.kernel("k1", 0, 100, c);
        let c = b.call("cudaLaunchKernel", 100, 1000);
        b.kernel("k2", 1000, 1100, c);
        b.trace.records.overheads.push(OverheadRow {
            start: 200,
            end: 900,
            process: 0,
            thread: Some(0),
            kind: OverheadKind::CommandBufferFull,
            name: crate::model::NO_NAME,
        });
        b.thread(9, 9);
        let c = b.call("cudaLaunchKernel", 250, 260);
        b.kernel_on((1, 3), "k3", (300, 500), c);
        let c = b.call("cudaLaunchKernel", 900, 910);
        b.kernel_on((1, 3), "k4", (1000, 1100), c);
        let ix = RowIndex::loaded(&b.trace, "t", None);
        let d = drill_indexed(&[ix], &DrillOptions::default()).expect("a loaded trace reads");
        let d0 = &d.idle.per_device[0];
        let ahead = d0
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::HostAhead)
            .expect("host_ahead");
        let m = ahead.meanwhile.as_ref().expect("meanwhile");
        assert_eq!((ahead.ns, m.busy_ns, m.other_devices), (700, 200, 1));
        let sentence =
            "device 1 ran kernels for 28.6% of it; the trace shows no GPU work for the other 71.4%";
        assert_eq!(m.sentence(), sentence);
        let gap = d.gaps.device_idle.top.iter().find(|g| g.device == 0);
        let reading = gap.map(|g| g.reading.as_str()).unwrap_or_default();
        assert!(
            reading.ends_with(&format!("; meanwhile {sentence}")),
            "{reading}"
        );
        let findings = super::super::drill_findings(&d);
        let f = findings
            .iter()
            .find(|f| f.title.contains("room in the GPU's queue"))
            .expect("a host_ahead finding");
        assert!(
            f.evidence
                .contains(&format!("while device 0 waited, {sentence}")),
            "{}",
            f.evidence
        );
        // Device 1 has no command-buffer-full record: nothing is measured for it.
        assert!(
            d.idle.per_device[1]
                .causes
                .iter()
                .all(|c| c.meanwhile.is_none())
        );
    }
}
