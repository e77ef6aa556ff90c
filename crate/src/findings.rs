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
use crate::explain::ExplainReport;
use crate::names::api::{ApiKind, api_kind};

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

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

fn pct(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// Where the largest gap of a set sits: its neighbours and the host work during it.
fn largest_gap_context(g: &TopGap) -> String {
    let mut s = format!(
        "largest: {:.1} µs between {} and {} (device {})",
        g.gap_us, g.prev_kernel, g.next_kernel, g.device
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
    let sum = |range: std::ops::RangeInclusive<usize>| -> (u64, f64) {
        range
            .filter_map(|i| idle.buckets.get(i))
            .fold((0, 0.0), |a, b| (a.0 + b.count, a.1 + b.total_us))
    };
    let top_in = |mut range: std::ops::RangeInclusive<usize>| {
        idle.top
            .iter()
            .find(|g| range.any(|i| bucket_label(i) == g.bucket))
    };
    let mut out = Vec::new();
    let mut push =
        |range: std::ops::RangeInclusive<usize>, sizes: &str, title: &str, pattern, fix: &str| {
            let (count, total) = sum(range.clone());
            let share = total / idle.device_time_us;
            if count == 0 || Severity::of_share(share) == Severity::Info {
                return;
            }
            let mut evidence = format!(
                "{count} gaps of {sizes} leave the GPUs idle {} ({} of device time)",
                ms(total),
                pct(share)
            );
            if let Some(g) = top_in(range) {
                evidence += &format!("; {}", largest_gap_context(g));
            }
            out.push(finding(
                Severity::of_share(share),
                "gaps",
                title.to_string(),
                evidence,
                pattern,
                fix,
                total,
            ));
        };
    // 50–100 µs gaps read as piecewise graph replay only when graphs are in use (§9.1);
    // without graphs they are Python between eager launches like the longer ones.
    let graphs_used = d.graphs.graph_kernels > 0 || d.graphs.graph_launch_calls > 0;
    if graphs_used {
        push(
            4..=4,
            "50–100 µs",
            "GPU idle between piecewise CUDA-graph replays (50–100 µs gaps)",
            Some("GRAPH_EXPAND"),
            "Capture larger pieces: remove what splits the graph (partition poisoning by .item(), dynamic-shape ops, opaque extensions) so fewer, longer replays run back to back.",
        );
    }
    let (python, sizes) = if graphs_used {
        (5..=7, "100 µs–5 ms")
    } else {
        (4..=7, "50 µs–5 ms")
    };
    push(
        python,
        sizes,
        &format!("GPU idle while Python runs between launches ({sizes} gaps)"),
        Some("CUSTOM_OP, GRAPH_EXPAND"),
        "Find the Python between the kernels on either side of the largest gaps (NVTX ranges above); fuse tensor-view chains and metadata prep into a custom op (CUSTOM_OP) or capture the region in a CUDA graph (GRAPH_EXPAND).",
    );
    out.extend(long_gap_finding(idle));
    out
}

/// `> 5 ms` gaps: syncs (SYNC + HOIST) or runtime object creation/allocation (ALLOC).
fn long_gap_finding(idle: &crate::drill::gap_report::IdleGaps) -> Option<Finding> {
    let b = idle.buckets.get(8)?;
    let share = b.total_us / idle.device_time_us;
    if b.count == 0 || Severity::of_share(share) == Severity::Info {
        return None;
    }
    let long: Vec<&TopGap> = idle
        .top
        .iter()
        .filter(|g| g.bucket == bucket_label(8))
        .collect();
    let has = |want: fn(ApiKind) -> bool| {
        long.iter()
            .flat_map(|g| &g.api)
            .find(|a| want(api_kind(&a.name)))
            .map(|a| a.name.clone())
    };
    let alloc = has(|k| matches!(k, ApiKind::ObjectCreate | ApiKind::Alloc));
    let sync = has(|k| k == ApiKind::BlockingSync);
    let (pattern, fix, cause) = match (&alloc, &sync) {
        (Some(name), _) => (
            "ALLOC",
            "Create CUDA events/streams and allocate buffers once at initialization, not per step or per layer.",
            format!("; {name} runs during them"),
        ),
        (None, Some(name)) => (
            "SYNC, HOIST",
            "Remove the host-device sync: pre-compute the value on the CPU (SYNC) and pass it down from step level (HOIST) instead of calling .item() in per-layer code.",
            format!("; {name} runs during them"),
        ),
        _ => (
            "SYNC, HOIST",
            "Look for a host-device sync (.item(), .cpu(), .tolist()) or runtime object creation in the code around the largest gaps; pre-compute on the CPU and hoist it out of per-layer code.",
            String::new(),
        ),
    };
    let mut evidence = format!(
        "{} gaps longer than 5 ms leave the GPUs idle {} ({} of device time){cause}",
        b.count,
        ms(b.total_us),
        pct(share)
    );
    if let Some(g) = long.first() {
        evidence += &format!("; {}", largest_gap_context(g));
    }
    Some(finding(
        Severity::of_share(share),
        "gaps",
        "GPU idle for more than 5 ms at a time (host-device syncs or object creation)".into(),
        evidence,
        Some(pattern),
        fix,
        b.total_us,
    ))
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
            "block {} ({}) waits {:.1} µs per layer × {:.1} layers = {} per step{}",
            b.group,
            b.names.join(", "),
            b.gap_per_layer_us,
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
            "last in {} of {} collectives ({} > {}), {:.1} µs late on average",
            s.ranks
                .iter()
                .find(|r| &r.rank == rank)
                .map_or(0, |r| r.last),
            s.collectives,
            pct(s.share),
            pct(s.threshold),
            s.mean_lateness_us
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
                "{:.0} launches/s from the busiest process; {} of kernels are shorter than {:.0} µs",
                storm.max_process_launches_per_s,
                pct(storm.tiny_share),
                storm.tiny_threshold_us
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
    let mut evidence = format!(
        "{} calls, {} in total ({} of the window): {}",
        c.calls,
        ms(c.total_us),
        pct(share),
        top.join(", ")
    );
    if let Some(n) = per_step {
        evidence += &format!("; {n:.1} per steady-state step");
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
