//! Findings of the drill-down's other sections: CUDA graphs, the per-layer pattern and
//! stragglers.

use super::idle::cause_text;
use super::{Finding, Severity, finding, ms, pct};
use crate::drill::DrillReport;
use crate::drill::gaps::bucket_label;
use crate::model::Ns;

/// The CUDA graphs findings: graph kernels not visible in the capture (re-capture advice), and
/// capturable kernels running eagerly beside the graphs.
pub(super) fn graph_findings(d: &DrillReport) -> Vec<Finding> {
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
pub(super) fn pattern_finding(d: &DrillReport) -> Option<Finding> {
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

/// The late rank, when one is: its lateness at the collectives and what to balance.
pub(super) fn straggler_finding(d: &DrillReport) -> Option<Finding> {
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
