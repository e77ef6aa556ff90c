//! "What to do next": findings with severity, evidence (numbers) and a fix mapped to the
//! optimization patterns of the reference (§9.5): CUSTOM_OP, GRAPH_EXPAND, GRAPH_SPLIT, SYNC,
//! HOIST, ALLOC, and targeted work on a straggler's coordinator-only paths.
//!
//! Severity follows the share of device (or step) time at stake: ≥ 25 % high, ≥ 10 % medium,
//! ≥ 2 % low, else informational.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::drill::DrillReport;
use crate::drill::gap_report::TopGap;
use crate::drill::gaps::bucket_label;
use crate::drill::idle::{CauseKind, GapCause};
use crate::explain::ExplainReport;
use crate::format;

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

/// The drill-down with the findings it supports: what `nsys-lens drill --json` writes and the
/// page's Drill-down shows, the findings after the four analyses as the reference's JSON has them.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillFindings {
    pub report: DrillReport,
    pub findings: Vec<Finding>,
}

impl Serialize for DrillFindings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = &self.report;
        let mut out = s.serialize_struct("DrillReport", 9)?;
        out.serialize_field("gaps", &r.gaps)?;
        out.serialize_field("graphs", &r.graphs)?;
        out.serialize_field("patterns", &r.patterns)?;
        out.serialize_field("stragglers", &r.stragglers)?;
        out.serialize_field("findings", &self.findings)?;
        out.serialize_field("files", &r.files)?;
        out.serialize_field("options", &r.options)?;
        out.serialize_field("coverage", &r.coverage)?;
        out.serialize_field("idle", &r.idle)?;
        out.end()
    }
}

impl DrillFindings {
    pub fn of(report: DrillReport) -> DrillFindings {
        let findings = drill_findings(&report);
        DrillFindings { report, findings }
    }
}

/// Findings supported by the drill-down.
pub fn drill_findings(d: &DrillReport) -> Vec<Finding> {
    let mut out = gap_findings(d);
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

fn pct(share: f64) -> String {
    format::percent(share)
}

/// Where the largest gap of a set sits: its neighbours and the host work during it.
fn largest_gap_context(g: &TopGap) -> String {
    let mut s = format!(
        "largest: {} between {} and {} (device {})",
        ms(g.gap_us),
        g.prev_kernel,
        g.next_kernel,
        g.device
    );
    let ranges: Vec<&str> = g.nvtx.iter().take(3).map(|n| n.name.as_str()).collect();
    if !ranges.is_empty() {
        s += &format!(", during NVTX {}", ranges.join(" / "));
    }
    if let Some(a) = g.api.first() {
        s += &format!(", API {}", a.name);
    }
    s
}

/// Device-idle gaps grouped by what their size says (reference §9.1 readings).
fn gap_findings(d: &DrillReport) -> Vec<Finding> {
    let idle = &d.gaps.device_idle;
    if idle.device_time_us <= 0.0 {
        return Vec::new();
    }
    // 50–100 µs gaps are graph-replay dispatch only when graphs are in use (§9.1); the sizes
    // group gaps, the measured cause of their time says what holds them.
    let graphs_used = d.graphs.graph_kernels > 0 || d.graphs.graph_launch_calls > 0;
    let groups = match graphs_used {
        true => vec![
            (4..=4, "50–100 µs"),
            (5..=7, "100 µs–5 ms"),
            (8..=8, "over 5 ms"),
        ],
        false => vec![(4..=7, "50 µs–5 ms"), (8..=8, "over 5 ms")],
    };
    groups
        .into_iter()
        .filter_map(|(range, sizes)| gap_group_finding(idle, range, sizes))
        .collect()
}

/// One finding for the device-idle gaps of `range` (bucket indices): the cause that holds
/// most of their time, measured per bucket (`bucket_causes`), with the fix that fits it.
fn gap_group_finding(
    idle: &crate::drill::gap_report::IdleGaps,
    range: std::ops::RangeInclusive<usize>,
    sizes: &str,
) -> Option<Finding> {
    let mut count = 0;
    let mut total = 0.0;
    // (kind, label) → µs it holds in these buckets.
    let mut held: Vec<(GapCause, f64)> = Vec::new();
    for i in range.clone() {
        let Some(b) = idle.buckets.get(i) else {
            continue;
        };
        count += b.count;
        total += b.total_us;
        let Some(Some(c)) = idle.bucket_causes.get(i) else {
            continue;
        };
        let us = b.total_us * c.share;
        match held
            .iter_mut()
            .find(|(h, _)| h.kind == c.kind && h.label == c.label)
        {
            Some((_, t)) => *t += us,
            None => held.push((c.clone(), us)),
        }
    }
    let share = total / idle.device_time_us;
    if count == 0 || Severity::of_share(share) == Severity::Info {
        return None;
    }
    let top = held.into_iter().max_by(|a, b| a.1.total_cmp(&b.1));
    let (title, pattern, fix, held_text) = match &top {
        Some((c, us)) if total > 0.0 => {
            let (pattern, fix) = fix_for(c);
            let what = cause_text(c);
            let title = format!("GPU idle in {sizes} gaps: {what}");
            let held = format!("; {what}: {} of that time", pct(us / total));
            (title, pattern, fix, held)
        }
        _ => (
            format!("GPU idle in {sizes} gaps"),
            None,
            "The capture recorded no host activity during these gaps: trace more of the host (nsys -t cuda,nvtx,osrt and Python sampling) to see what holds them.".to_string(),
            String::new(),
        ),
    };
    let mut evidence = format!(
        "{count} gaps of {sizes} leave the GPUs idle {} ({} of device time){held_text}",
        ms(total),
        pct(share)
    );
    let largest = idle
        .top
        .iter()
        .find(|g| range.clone().any(|i| bucket_label(i) == g.bucket));
    if let Some(g) = largest {
        evidence += &format!("; {}", largest_gap_context(g));
    }
    Some(finding(
        Severity::of_share(share),
        "gaps",
        title,
        evidence,
        pattern,
        &fix,
        total,
    ))
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
        false => format!("{what} ({})", c.label),
    }
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

fn pattern_finding(d: &DrillReport) -> Option<Finding> {
    let p = &d.patterns;
    let b = p
        .blocks
        .first()
        .filter(|b| p.found && b.total_gap_us > 0.0)?;
    let share = if p.step_us > 0.0 {
        b.total_gap_us / p.step_us
    } else {
        0.0
    };
    Some(finding(
        Severity::of_share(share),
        "patterns",
        format!(
            "Per-layer host gap before the {} block (kernels {})",
            b.operation, b.kernels
        ),
        format!(
            "block {} ({}) waits {} per layer × {:.1} layers = {} per step{}",
            b.group,
            b.names.join(", "),
            ms(b.gap_per_layer_us),
            p.layers_per_step,
            ms(b.total_gap_us),
            if p.step_us > 0.0 {
                format!(" ({} of a {} step)", pct(share), ms(p.step_us))
            } else {
                String::new()
            }
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

/// Findings supported by the explainer's sections.
pub fn explain_findings(e: &ExplainReport) -> Vec<Finding> {
    let window_us = e.window.duration_us.max(f64::MIN_POSITIVE);
    let mut out = Vec::new();
    let storm = &e.launch_storm;
    if storm.storm {
        out.push(finding(
            Severity::Medium,
            "launches",
            "Launch storm: many tiny kernels at a high launch rate".into(),
            format!(
                "{} launches/s from the busiest process; {} of kernels are shorter than {}",
                format::mean(storm.max_process_launches_per_s, 0),
                pct(storm.tiny_share),
                ms(storm.tiny_threshold_us)
            ),
            Some("GRAPH_EXPAND, CUSTOM_OP"),
            "Capture the launch sequence in a CUDA graph (GRAPH_EXPAND) or fuse the small kernels (CUSTOM_OP) so the host issues fewer launches.",
            0.0,
        ));
    }
    out.extend(call_finding(
        &e.syncs,
        window_us,
        "syncs",
        "Blocking host-device synchronization",
        "SYNC, HOIST",
        "Replace blocking syncs in the step loop: pre-compute values on the CPU (SYNC), pass them from step level (HOIST), or wait on events asynchronously.",
    ));
    out.extend(call_finding(
        &e.allocations,
        window_us,
        "allocations",
        "Runtime object creation or allocation inside steps",
        "ALLOC",
        "Create events/streams and allocate buffers once at initialization and reuse them.",
    ));
    out.extend(memory_findings(e));
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

fn call_finding(
    c: &crate::explain::api::CallSummary,
    window_us: f64,
    source: &str,
    title: &str,
    pattern: &str,
    fix: &str,
) -> Option<Finding> {
    let per_step = c.calls_per_step.filter(|&n| n > 0.0);
    let share = c.total_us / window_us;
    if c.calls == 0 || (per_step.is_none() && Severity::of_share(share) == Severity::Info) {
        return None;
    }
    let top: Vec<String> = c
        .by_name
        .iter()
        .take(3)
        .map(|a| format!("{} ×{} ({})", a.name, a.count, ms(a.total_us)))
        .collect();
    // Calls on several threads, or before the first kernel, can add up to more than the window:
    // a share above 100 % would read as an error, so say what the window is instead.
    let of_window = if share <= 1.0 {
        format!("{} of the window", pct(share))
    } else {
        format!(
            "more than the {} kernel window: calls on several threads or outside it",
            ms(window_us)
        )
    };
    let mut evidence = format!(
        "{} calls, {} in total ({of_window}): {}",
        format::count(c.calls),
        ms(c.total_us),
        top.join(", ")
    );
    if let Some(n) = per_step {
        evidence += &format!("; {} per steady-state step", format::mean(n, 1));
    }
    Some(finding(
        Severity::of_share(share).min(Severity::Low),
        source,
        title.to_string(),
        evidence,
        Some(pattern),
        fix,
        c.total_us,
    ))
}

fn memory_findings(e: &ExplainReport) -> Vec<Finding> {
    let m = &e.memory;
    let mut out = Vec::new();
    if m.pageable_async_copies > 0 {
        out.push(finding(
            Severity::Low,
            "memory",
            "Async copies from pageable host memory".into(),
            format!(
                "{} cudaMemcpyAsync-style copies touch pageable memory: the driver stages them synchronously",
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
            "Synchronous copies or memsets".into(),
            format!(
                "{} copies and {} memsets were issued through synchronous APIs, blocking the host",
                m.synchronous_copies, m.synchronous_memsets
            ),
            Some("SYNC"),
            "Use the async variants on a stream (cudaMemcpyAsync, non_blocking=True) and synchronize only where the result is needed.",
            0.0,
        ));
    }
    out
}
