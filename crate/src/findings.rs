//! "What to do next": findings with severity, evidence (numbers) and a fix mapped to the
//! optimization patterns of the reference (§9.5): CUSTOM_OP, GRAPH_EXPAND, GRAPH_SPLIT, SYNC,
//! HOIST, ALLOC, and targeted work on a straggler's coordinator-only paths.
//!
//! Severity follows the share of device (or step) time at stake: ≥ 25 % high, ≥ 10 % medium,
//! ≥ 2 % low, else informational.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::drill::gaps::bucket_label;
use crate::drill::idle::{CauseGap, CauseKind, GapCause};
use crate::drill::{self, DrillInput, DrillOptions, DrillReport};
use crate::error;
use crate::explain::api::CallSummary;
use crate::explain::{self, ExplainReport};
use crate::explain::{Window, WindowBasis};
use crate::format;
use crate::index::rows::RowIndex;
use crate::model::Ns;
use crate::names::steps::StepStyle;

/// How much a finding matters; sorts most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    /// From the share of the relevant time (device time, step time, kernel time).
    pub fn of_share(share: f64) -> Severity {
        if share >= 0.25 {
            Severity::High
        } else if share >= 0.10 {
            Severity::Medium
        } else if share >= 0.02 {
            Severity::Low
        } else {
            Severity::Info
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub title: String,
    /// The numbers behind it.
    pub evidence: String,
    /// The reference §9.5 pattern(s) the fix follows, when one applies.
    pub pattern: Option<String>,
    pub fix: String,
    /// Which analysis found it (`gaps`, `graphs`, `patterns`, `stragglers`, `launches` …).
    pub source: String,
    /// Time at stake, µs (for ordering within a severity).
    pub impact_us: f64,
}

fn finding(
    severity: Severity,
    source: &str,
    title: String,
    evidence: String,
    pattern: Option<&str>,
    fix: &str,
    impact_us: f64,
) -> Finding {
    Finding {
        severity,
        title,
        evidence,
        pattern: pattern.map(str::to_string),
        fix: fix.to_string(),
        source: source.to_string(),
        impact_us,
    }
}

/// Most severe first, then most time at stake.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.impact_us.total_cmp(&a.impact_us))
            .then_with(|| a.title.cmp(&b.title))
    });
}

/// The drill-down with every finding about its traces: what `nsys-lens drill --json` writes, the
/// page's Drill-down shows and every report format lists — one list, in one order, so the three
/// never disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillFindings {
    pub report: DrillReport,
    pub findings: Vec<Finding>,
}

impl Serialize for DrillFindings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = &self.report;
        let mut out = s.serialize_struct("DrillReport", 10)?;
        out.serialize_field("gaps", &r.gaps)?;
        out.serialize_field("graphs", &r.graphs)?;
        out.serialize_field("patterns", &r.patterns)?;
        out.serialize_field("stragglers", &r.stragglers)?;
        out.serialize_field("findings", &self.findings)?;
        out.serialize_field("files", &r.files)?;
        out.serialize_field("options", &r.options)?;
        out.serialize_field("step_markers", &r.step_markers)?;
        out.serialize_field("coverage", &r.coverage)?;
        out.serialize_field("idle", &r.idle)?;
        out.end()
    }
}

impl DrillFindings {
    /// The drill-down and the findings of it and of the explainer of each of its traces.
    pub fn of(report: DrillReport, explains: &[ExplainReport]) -> DrillFindings {
        let mut findings = drill_findings(&report);
        let several = explains.len() > 1;
        for e in explains {
            let mut more = explain_findings(e, Some(&report));
            if several {
                for f in &mut more {
                    f.evidence = format!("{}: {}", e.file, f.evidence);
                }
            }
            findings.extend(more);
        }
        sort(&mut findings);
        DrillFindings { report, findings }
    }

    /// Drills into `indexed` (one trace, or one per rank) and explains each trace: the whole
    /// drill-down as the CLI, the page and the report show it. Fails when a read failed.
    pub fn build(indexed: &[RowIndex<'_>], opts: &DrillOptions) -> error::Result<DrillFindings> {
        DrillFindings::explained(indexed, opts).map(|(d, _)| d)
    }

    /// [`DrillFindings::build`] and the explainer report of each trace it read (the report of
    /// one trace shows both: the page keeps them for its export).
    pub fn explained(
        indexed: &[RowIndex<'_>],
        opts: &DrillOptions,
    ) -> error::Result<(DrillFindings, Vec<ExplainReport>)> {
        let report = drill::drill_indexed(indexed, opts)?;
        let top = explain::DEFAULT_TOP.max(opts.top);
        let explains = indexed
            .iter()
            .map(|ix| explain::explain_rows(ix.rows, &ix.label, &ix.steps.steps, top))
            .collect::<error::Result<Vec<ExplainReport>>>()?;
        Ok((DrillFindings::of(report, &explains), explains))
    }

    /// [`DrillFindings::build`] over `inputs`. Fails when there is no input, an input has no
    /// kernels or a read failed.
    pub fn drill(inputs: &[DrillInput<'_>], opts: &DrillOptions) -> error::Result<DrillFindings> {
        DrillFindings::build(&drill::index_inputs(inputs)?, opts)
    }
}

/// Findings supported by the drill-down alone: where the idle time went, graphs, the per-layer
/// pattern and stragglers.
pub fn drill_findings(d: &DrillReport) -> Vec<Finding> {
    let mut out = idle_findings(d);
    out.extend(graph_findings(d));
    out.extend(pattern_finding(d));
    out.extend(straggler_finding(d));
    sort(&mut out);
    out
}

/// A duration (µs) in the unit that fits it, as every table shows it.
fn ms(us: f64) -> String {
    format::duration_us(us)
}

fn ms_ns(ns: Ns) -> String {
    ms(ns as f64 / 1000.0)
}

fn pct(share: f64) -> String {
    format::percent(share)
}

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
fn idle_findings(d: &DrillReport) -> Vec<Finding> {
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
    let mut evidence = format!(
        "{} of GPU-idle time ({} of all idle time) on {} device{}",
        ms_ns(t.ns),
        pct(t.ns as f64 / idle_ns as f64),
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
fn cause_text(c: &GapCause) -> String {
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

fn graph_findings(d: &DrillReport) -> Vec<Finding> {
    let g = &d.graphs;
    let mut out = Vec::new();
    if let Some(advice) = &g.advice {
        out.push(finding(
            Severity::Info,
            "graphs",
            "CUDA-graph kernels not visible in this capture".into(),
            advice.clone(),
            None,
            "Re-capture with nsys profile --cuda-graph-trace=node to measure graph coverage.",
            0.0,
        ));
    }
    let kernel_us = g.graph_kernel_us + g.eager_kernel_us;
    let share = if kernel_us > 0.0 {
        g.capturable_eager_us / kernel_us
    } else {
        0.0
    };
    if g.graph_kernels > 0 && Severity::of_share(share) != Severity::Info {
        let names: Vec<String> = g
            .eager_top
            .iter()
            .filter(|e| e.capturable)
            .take(3)
            .map(|e| format!("{} ×{}", e.name, e.count))
            .collect();
        out.push(finding(
            Severity::of_share(share),
            "graphs",
            "Capturable kernels run eagerly beside CUDA graphs".into(),
            format!(
                "graph coverage {} ({} of {} kernels); eager GEMM/norm/collective kernels take {} ({} of kernel time): {}",
                pct(g.coverage),
                g.graph_kernels,
                g.graph_kernels + g.eager_kernels,
                ms(g.capturable_eager_us),
                pct(share),
                names.join(", ")
            ),
            Some("GRAPH_EXPAND"),
            "Extend capture to these kernels: find the op that stops the partition (.item(), torch.cumsum or index ops with dynamic shapes, opaque C extensions) and make it capturable; split a monolithic custom op that blocks capture (GRAPH_SPLIT).",
            g.capturable_eager_us,
        ));
    }
    out
}

/// The per-layer pattern's costliest block, when the pattern was found in forward steps (the
/// "per step" it states needs steps), with what the attribution measured in gaps of its size.
fn pattern_finding(d: &DrillReport) -> Option<Finding> {
    let p = &d.patterns;
    let b = p
        .blocks
        .first()
        .filter(|b| p.found && p.step_us > 0.0 && b.total_gap_us > 0.0)?;
    let share = b.total_gap_us / p.step_us;
    let bucket = crate::drill::gaps::bucket_of((b.gap_per_layer_us * 1000.0) as Ns);
    let measured = match d.gaps.device_idle.bucket_causes.get(bucket) {
        Some(Some(c)) => format!(
            "; in {} gaps the attribution finds {} holding {}",
            bucket_label(bucket),
            cause_text(c),
            pct(c.share)
        ),
        _ => String::new(),
    };
    Some(finding(
        Severity::of_share(share),
        "patterns",
        format!(
            "Per-layer host gap before the {} block (kernels {})",
            b.operation, b.kernels
        ),
        format!(
            "block {} ({}) waits {} per layer × {:.1} layers = {} per step ({} of a {} step){measured}",
            b.group,
            b.names.join(", "),
            ms(b.gap_per_layer_us),
            p.layers_per_step,
            ms(b.total_gap_us),
            pct(share),
            ms(p.step_us)
        ),
        Some("CUSTOM_OP, GRAPH_EXPAND"),
        "Per-layer overhead compounds with depth: move the Python that runs before this block out of the layer (HOIST per-step values), fuse it into a custom op (CUSTOM_OP) or capture the layer in a CUDA graph (GRAPH_EXPAND).",
        b.total_gap_us,
    ))
}

fn straggler_finding(d: &DrillReport) -> Option<Finding> {
    let s = &d.stragglers;
    let rank = s.rank.as_ref()?;
    Some(finding(
        Severity::High,
        "stragglers",
        format!(
            "Rank on device {} (pid {}) arrives last at collectives",
            rank.device, rank.pid
        ),
        format!(
            "last in {} of {} collectives ({} > {}), {} late on average",
            s.ranks
                .iter()
                .find(|r| &r.rank == rank)
                .map_or(0, |r| r.last),
            s.collectives,
            pct(s.share),
            pct(s.threshold),
            ms(s.mean_lateness_us)
        ),
        Some("targeted optimization of coordinator-only paths"),
        "Reduce the extra host work on this rank (coordinator duties, asymmetric launches, allocations), pre-launch kernels to build queue depth before the sync point, or spread coordinator duties across ranks.",
        s.mean_lateness_us * s.collectives as f64 * s.share,
    ))
}

/// Idle time (ns, all devices) held by `kind` under labels that `matches`.
fn idle_held(d: &DrillReport, kind: CauseKind, matches: impl Fn(&str) -> bool) -> Ns {
    d.idle
        .per_device
        .iter()
        .flat_map(|dev| &dev.causes)
        .filter(|c| c.kind == kind)
        .flat_map(|c| &c.labels)
        .filter(|l| matches(&l.label))
        .map(|l| l.ns)
        .sum()
}

/// The share of device time `ns` of idle time is.
fn device_share(d: &DrillReport, ns: Ns) -> f64 {
    let device_us = d.gaps.device_idle.device_time_us;
    if device_us > 0.0 {
        (ns as f64 / 1000.0 / device_us).min(1.0)
    } else {
        0.0
    }
}

/// Findings of the explainer's sections. With kernels (a drill-down `d`), each is as severe as
/// the GPU-idle time its cause holds (a pattern that holds no idle time is informational);
/// blocking syncs, allocations and the other causes of idle time are the idle findings. Without
/// kernel records, the host side's own: syncs, allocations and copies over the whole capture.
pub fn explain_findings(e: &ExplainReport, d: Option<&DrillReport>) -> Vec<Finding> {
    let Some(d) = d else {
        return host_side_findings(e);
    };
    let mut out = Vec::new();
    let storm = &e.launch_storm;
    if storm.storm {
        let held = idle_held(d, CauseKind::Launch, |_| true);
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "launches",
            "Launch storm: many tiny kernels at a high launch rate".into(),
            format!(
                "{} launches/s from the busiest process; {} of kernels are shorter than {}; launch calls hold {} of GPU-idle time ({} of device time)",
                format::mean(storm.max_process_launches_per_s, 0),
                pct(storm.tiny_share),
                ms(storm.tiny_threshold_us),
                ms_ns(held),
                pct(share)
            ),
            Some("GRAPH_EXPAND, CUSTOM_OP"),
            "Capture the launch sequence in a CUDA graph (GRAPH_EXPAND) or fuse the small kernels (CUSTOM_OP) so the host issues fewer launches.",
            held as f64 / 1000.0,
        ));
    }
    out.extend(memory_findings(e, d));
    if e.nvtx.kernel_us > 0.0 && e.nvtx.coverage < 0.5 && e.nvtx.ranges > 0 {
        out.push(finding(
            Severity::Info,
            "nvtx",
            "Most GPU time is not attributed to any NVTX range".into(),
            format!(
                "{} of kernel time was launched inside an NVTX range",
                pct(e.nvtx.coverage)
            ),
            None,
            "Add NVTX ranges around the model's phases and host work (torch.cuda.nvtx.range) so gaps and kernels map to source.",
            0.0,
        ));
    }
    sort(&mut out);
    out
}

fn memory_findings(e: &ExplainReport, d: &DrillReport) -> Vec<Finding> {
    let m = &e.memory.in_window;
    let (scope, counted) = scope_words(&e.window);
    let mut out = Vec::new();
    if m.pageable_async_copies > 0 {
        // The attribution gives an async copy from pageable memory to `sync`, labelled by its API.
        let held = idle_held(d, CauseKind::Sync, |l| {
            l.starts_with("cudaMemcpy") && l.contains("Async")
        });
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "memory",
            format!("Async copies from pageable host memory ({counted})"),
            format!(
                "{} cudaMemcpyAsync-style copies {scope} touch pageable memory: the driver stages them synchronously; they hold {} of GPU-idle time ({} of device time)",
                m.pageable_async_copies,
                ms_ns(held),
                pct(share)
            ),
            Some("ALLOC"),
            "Allocate pinned host buffers once at initialization (cudaHostAlloc, tensor.pin_memory()) and copy through them.",
            held as f64 / 1000.0,
        ));
    }
    if m.synchronous_copies + m.synchronous_memsets > 0 {
        let held = idle_held(d, CauseKind::Sync, |l| {
            (l.starts_with("cudaMemcpy") || l.starts_with("cudaMemset")) && !l.contains("Async")
        });
        let share = device_share(d, held);
        out.push(finding(
            Severity::of_share(share),
            "memory",
            format!("Synchronous copies or memsets ({counted})"),
            format!(
                "{} copies and {} memsets {scope} were issued through synchronous APIs, blocking the host; they hold {} of GPU-idle time ({} of device time)",
                m.synchronous_copies,
                m.synchronous_memsets,
                ms_ns(held),
                pct(share)
            ),
            Some("SYNC"),
            "Use the async variants on a stream (cudaMemcpyAsync, non_blocking=True) and synchronize only where the result is needed.",
            held as f64 / 1000.0,
        ));
    }
    out
}

/// Findings of a trace without kernel records: what blocked the host, counted over the whole
/// capture (there is no GPU-idle time to attribute).
fn host_side_findings(e: &ExplainReport) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(call_finding(
        &e.syncs,
        &e.window,
        "syncs",
        "Blocking host-device synchronization",
        "SYNC, HOIST",
        "Replace blocking syncs in the loop: pre-compute values on the CPU (SYNC), pass them from step level (HOIST), or wait on events asynchronously.",
    ));
    out.extend(call_finding(
        &e.allocations,
        &e.window,
        "allocations",
        "Runtime object creation or allocation",
        "ALLOC",
        "Create events/streams and allocate buffers once at initialization and reuse them.",
    ));
    out.extend(host_memory_findings(e));
    sort(&mut out);
    out
}

/// A finding on API calls of one class, from the calls inside the explainer's window only; the
/// title says what was counted: per step (when there are steps), in the kernel window, or the
/// whole capture (no kernel records).
fn call_finding(
    c: &CallSummary,
    window: &Window,
    source: &str,
    what: &str,
    pattern: &str,
    fix: &str,
) -> Option<Finding> {
    let w = &c.in_window;
    let window_us = window.duration_us.max(f64::MIN_POSITIVE);
    let per_step = c.calls_per_step.filter(|&n| n > 0.0);
    // The union of the calls: the time at least one of them held a thread, never above 100 %.
    let busy = (w.busy_us / window_us).min(1.0);
    if w.calls == 0 || (per_step.is_none() && Severity::of_share(busy) == Severity::Info) {
        return None;
    }
    let (scope, counted) = scope_words(window);
    let title = match per_step {
        Some(n) => format!("{what}: {n:.1} calls per steady-state step"),
        None => format!("{what} ({counted})"),
    };
    let top: Vec<String> = w
        .by_name
        .iter()
        .take(3)
        .map(|a| format!("{} ×{} ({})", a.name, a.count, ms(a.total_us)))
        .collect();
    let mut evidence = format!(
        "{} call(s) {scope}, running {} of its {} ({}): {}",
        format::count(w.calls),
        ms(w.busy_us),
        ms(window.duration_us),
        pct(busy),
        top.join(", ")
    );
    if w.total_us > w.busy_us * 1.001 && w.threads > 1 {
        let summed = w.total_us / window_us;
        evidence += &format!(
            "; {} threads of {} process(es) block at the same time, so summed over threads they take {} ({} of the window{})",
            w.threads,
            w.processes,
            ms(w.total_us),
            pct(summed),
            if summed > 1.0 {
                ": above 100 % only because the threads overlap"
            } else {
                ""
            }
        );
    }
    if c.calls > w.calls {
        evidence += &format!(
            "; {} more call(s) lie outside the window (set-up or tear-down): {} of call time outside it is not counted",
            c.calls - w.calls,
            ms((c.total_us - w.total_us).max(0.0))
        );
    }
    Some(finding(
        Severity::of_share(busy).min(Severity::Low),
        source,
        title,
        evidence,
        Some(pattern),
        fix,
        w.busy_us,
    ))
}

/// What a window-scoped count covers, in words: for a sentence, and for a title.
fn scope_words(window: &Window) -> (&'static str, &'static str) {
    match window.basis {
        WindowBasis::Kernels => ("in the kernel window", "in the kernel window"),
        WindowBasis::Capture => ("in the whole capture", "whole capture: no kernel records"),
    }
}

/// Copies that stall the host, counted in the explainer's window (without kernels: the whole
/// capture).
fn host_memory_findings(e: &ExplainReport) -> Vec<Finding> {
    let m = &e.memory.in_window;
    let (scope, counted) = scope_words(&e.window);
    let mut out = Vec::new();
    if m.pageable_async_copies > 0 {
        out.push(finding(
            Severity::Low,
            "memory",
            format!("Async copies from pageable host memory ({counted})"),
            format!(
                "{} cudaMemcpyAsync-style copies {scope} touch pageable memory: the driver stages them synchronously",
                m.pageable_async_copies
            ),
            Some("ALLOC"),
            "Allocate pinned host buffers once at initialization (cudaHostAlloc, tensor.pin_memory()) and copy through them.",
            0.0,
        ));
    }
    if m.synchronous_copies + m.synchronous_memsets > 0 {
        out.push(finding(
            Severity::Low,
            "memory",
            format!("Synchronous copies or memsets ({counted})"),
            format!(
                "{} copies and {} memsets {scope} were issued through synchronous APIs, blocking the host",
                m.synchronous_copies, m.synchronous_memsets
            ),
            Some("SYNC"),
            "Use the async variants on a stream (cudaMemcpyAsync, non_blocking=True) and synchronize only where the result is needed.",
            0.0,
        ));
    }
    out
}
