//! The drill-down as readable text (`nsys-lens drill` without `--json`).

use std::fmt::Write;

use super::tables::overlaps;
use crate::drill::DrillReport;
use crate::drill::gap_report::TopGap;
use crate::drill::gaps::GapBucket;
use crate::drill::idle::{CauseKind, CauseShare, FrameShare, IdleAttribution};
use crate::findings::DrillFindings;
use crate::format;

/// How many causes of a bucket are named; the rest are counted with their share.
const MIX_NAMED: usize = 3;

/// A bucket's measured causes as `sync (cudaStreamSynchronize) 54.3%, untraced 20.1%, nvtx
/// (aten::cat) 9.8% (+2 more: 5.2%)`, each a share of the bucket's gap time; `—` without any.
pub fn mix_text(causes: &[CauseShare]) -> String {
    if causes.is_empty() {
        return "—".into();
    }
    let named: Vec<String> = causes
        .iter()
        .take(MIX_NAMED)
        .map(|c| match c.kind {
            CauseKind::Untraced => format!("untraced {:.1}%", c.share * 100.0),
            k => format!("{} ({}) {:.1}%", k.name(), c.label, c.share * 100.0),
        })
        .collect();
    let rest = &causes[causes.len().min(MIX_NAMED)..];
    let more = match rest.len() {
        0 => String::new(),
        n => format!(
            " (+{n} more: {:.1}%)",
            rest.iter().map(|c| c.share).sum::<f64>() * 100.0
        ),
    };
    format!("{}{more}", named.join(", "))
}

/// The bucket table: each bucket's causes as measured in its gaps (no guessed cause).
fn buckets(out: &mut String, b: &[GapBucket]) {
    let _ = writeln!(
        out,
        "  {:<12} {:>8} {:>12} {:>7}  measured causes (share of the bucket's gap time)",
        "bucket", "gaps", "total ms", "share"
    );
    for x in b {
        let cause = mix_text(&x.causes);
        let _ = writeln!(
            out,
            "  {:<12} {:>8} {:>12.3} {:>6.1}%  {cause}",
            x.label,
            x.count,
            x.total_us / 1000.0,
            x.share * 100.0,
        );
    }
}

/// Where each device's idle time went, cause by cause.
fn idle_causes(out: &mut String, idle: &IdleAttribution, files: usize) {
    let _ = writeln!(
        out,
        "
Where the GPU-idle time went:"
    );
    for d in &idle.per_device {
        let file = if files > 1 {
            format!(" ({})", d.file)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  device {}{file}: {:.3} ms idle",
            d.device,
            d.idle_ns as f64 / 1e6
        );
        for c in &d.causes {
            let apart = match c.kind {
                CauseKind::Profiler => "  [nsys's own: not your application]",
                _ => "",
            };
            let _ = writeln!(
                out,
                "    {:<12} {:>12.3} ms {:>6.1}%  {}{apart}",
                c.kind.name(),
                c.ns as f64 / 1e6,
                c.share * 100.0,
                c.label
            );
            if !c.frames.is_empty() {
                let _ = writeln!(
                    out,
                    "    {:<12} {} CPU samples: {}",
                    "",
                    c.samples,
                    sampled_frames(&c.frames)
                );
            }
            if let Some(m) = &c.meanwhile {
                let _ = writeln!(out, "    {:<12} meanwhile {}", "", m.sentence());
            }
        }
    }
}

/// The CPU samples' frames of a cause as `frame 40% (12), …`.
pub fn sampled_frames(frames: &[FrameShare]) -> String {
    frames
        .iter()
        .map(|f| format!("{} {:.0}% ({})", f.frame, f.share * 100.0, f.samples))
        .collect::<Vec<_>>()
        .join(", ")
}

fn top(out: &mut String, gaps: &[TopGap]) {
    for (i, g) in gaps.iter().enumerate() {
        let lane = match g.stream {
            Some(s) => format!("device {} stream {s}", g.device),
            None => format!("device {}", g.device),
        };
        let _ = writeln!(
            out,
            "  {:>2}. {:>11}  {lane}  {}..{} ns  [{}]\n      {} → {}",
            i + 1,
            format::duration_us(g.gap_us),
            g.start_ns,
            g.end_ns,
            g.bucket,
            g.sides().0,
            g.sides().1
        );
        if !g.nvtx.is_empty() {
            let _ = writeln!(out, "      NVTX: {}", overlaps(&g.nvtx));
        }
        if !g.api.is_empty() {
            let _ = writeln!(out, "      API:  {}", overlaps(&g.api));
        }
        let _ = writeln!(out, "      cause: {}", g.reading);
    }
}

/// The drill-down report as text.
pub fn drill_report(drilled: &DrillFindings) -> String {
    let d = &drilled.report;
    let mut out = format!("Kernel-level drill-down: {}\n\n", d.files.join(", "));
    let g = &d.gaps;
    let idle = &g.device_idle;
    let _ = writeln!(
        out,
        "GPU-idle gaps (no kernel, graph replay, copy or memset on any stream): {} gaps, {:.3} ms = {:.1}% of device time{}",
        idle.gaps,
        idle.total_us / 1000.0,
        idle.idle_share * 100.0,
        idle.reading
            .as_ref()
            .map_or(String::new(), |r| format!("; {r}"))
    );
    buckets(&mut out, &idle.buckets);
    idle_causes(&mut out, &d.idle, d.files.len());
    let _ = writeln!(out, "\nLargest device-idle gaps:");
    top(&mut out, &idle.top);
    let _ = writeln!(
        out,
        "\nGaps per (device, stream): {} gaps, {:.3} ms{}",
        g.gaps,
        g.total_us / 1000.0,
        g.reading
            .as_ref()
            .map_or(String::new(), |r| format!("; {r}"))
    );
    buckets(&mut out, &g.buckets);
    let _ = writeln!(
        out,
        "  (per stream, time other streams of the device kept busy has no cause: such a bucket's shares add up to less than 100%)"
    );
    let _ = writeln!(out, "\nLargest per-stream gaps:");
    top(&mut out, &g.top);
    graphs(&mut out, d);
    patterns(&mut out, d);
    stragglers(&mut out, d);
    let _ = writeln!(out, "\nFindings:");
    for (i, f) in drilled.findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}. [{}] {}\n     {}\n     Fix: {}{}",
            i + 1,
            f.severity.label().to_uppercase(),
            f.title,
            f.evidence,
            f.fix,
            f.pattern
                .as_ref()
                .map_or(String::new(), |p| format!(" (pattern: {p})"))
        );
    }
    if drilled.findings.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in &d.coverage {
        let _ = writeln!(out, "Not computed — {}: {}", c.subject, c.reason);
    }
    out
}

fn graphs(out: &mut String, d: &DrillReport) {
    let g = &d.graphs;
    let _ = writeln!(
        out,
        "\nCUDA graphs (capture mode {}): {} graph-launched, {} eager kernels, coverage {:.1}%",
        g.capture_mode,
        g.graph_kernels,
        g.eager_kernels,
        g.coverage * 100.0
    );
    if g.replays > 0 {
        let _ = writeln!(
            out,
            "  {} graph replays recorded whole: {:.3} ms, {:.1}% of the kernel and replay time",
            g.replays,
            g.replay_us / 1000.0,
            g.replay_share * 100.0
        );
    }
    for p in &g.phases {
        let _ = writeln!(
            out,
            "  {} phase: {} kernels, coverage {:.1}%",
            p.phase,
            p.kernels,
            p.coverage * 100.0
        );
    }
    if let Some(a) = &g.advice {
        let _ = writeln!(out, "  {a}");
    }
    for e in &g.eager_top {
        let _ = writeln!(
            out,
            "  eager {:>8} × {:>12.3} ms  {}{}",
            e.count,
            e.total_us / 1000.0,
            e.name,
            if e.capturable { "  (capturable)" } else { "" }
        );
    }
}

fn patterns(out: &mut String, d: &DrillReport) {
    let p = &d.patterns;
    if !p.found {
        let _ = writeln!(
            out,
            "\nPer-layer pattern: none found in {} ({})",
            p.source,
            p.note.as_deref().unwrap_or("")
        );
        return;
    }
    let _ = writeln!(
        out,
        "\nPer-layer pattern: {} kernels × {:.2} layers per step, in {}",
        p.kernels.len(),
        p.layers_per_step,
        p.source
    );
    for k in &p.kernels {
        let _ = writeln!(
            out,
            "  {:>3}  gap {:>11}  {:<12} {}",
            k.index,
            format::duration_us(k.mean_gap_us),
            k.category.label(),
            k.name
        );
    }
    let _ = writeln!(out, "  blocks by gap × layers:");
    for b in &p.blocks {
        let _ = writeln!(
            out,
            "  {} {:<7} kernels {:<7} {:<20} {:>11}/layer {:>11}/step",
            b.group,
            b.priority,
            b.kernels,
            b.operation,
            format::duration_us(b.gap_per_layer_us),
            format::duration_us(b.total_gap_us)
        );
    }
}

fn stragglers(out: &mut String, d: &DrillReport) {
    let s = &d.stragglers;
    let _ = writeln!(
        out,
        "\nStragglers: {} collectives matched across {} rank(s)",
        s.collectives,
        s.ranks.len()
    );
    for r in &s.ranks {
        let _ = writeln!(
            out,
            "  device {} pid {} ({}): last in {} ({:.1}%), mean lateness {}",
            r.rank.device,
            r.rank.pid,
            r.rank.file,
            r.last,
            r.share * 100.0,
            format::duration_us(r.mean_lateness_us)
        );
    }
    match &s.rank {
        Some(r) => {
            let _ = writeln!(
                out,
                "  STRAGGLER: device {} (pid {}) is last in {:.1}% > {:.0}% of collectives",
                r.device,
                r.pid,
                s.share * 100.0,
                s.threshold * 100.0
            );
        }
        None => {
            let _ = writeln!(out, "  no straggler flagged");
        }
    }
    for n in s.alignment.iter().chain(&s.note) {
        let _ = writeln!(out, "  {n}");
    }
}
