//! The drill-down's tables: gap buckets and largest gaps, CUDA-graph phases, eager and pattern
//! kernels, stragglers.

use super::{Cell, FILE, Kind, Table, col, csv_only, overlap_items, shown_only};
use crate::drill::DrillReport;
use crate::drill::gap_report::TopGap;
use crate::drill::gaps::GapBucket;
use crate::drill::idle::IdleAttribution;

pub fn buckets(name: &'static str, title: &'static str, b: &[GapBucket]) -> Table {
    use Kind::*;
    let mut t = Table::new(
        name,
        title,
        &[
            col("bucket", "Gap", Key),
            csv_only("lo_us", Key),
            csv_only("hi_us", Key),
            col("count", "Gaps", Count),
            col("total_us", "Total", Duration),
            col("share", "Share", Share),
            col("causes", "Measured causes (share of its gap time)", Text),
        ],
    );
    for x in b {
        t.row(vec![
            x.label.clone().into(),
            x.lo_us.into(),
            x.hi_us.into(),
            x.count.into(),
            x.total_us.into(),
            x.share.into(),
            Cell::List(
                x.causes
                    .iter()
                    .map(|c| crate::report::drill::mix_text(std::slice::from_ref(c)))
                    .collect(),
            ),
        ]);
    }
    t
}

/// Where each device's GPU-idle time went: every cause, its label, the frames the launching
/// threads' CPU samples name inside it, and (for `host_ahead`) what the other GPUs ran then.
pub fn idle_causes(idle: &IdleAttribution) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "idle_causes",
        "Where the GPU-idle time went",
        &[
            FILE,
            col("device", "Device", Key),
            col("cause", "Cause", Key),
            col("idle_us", "Idle time", Duration),
            col("share", "Share of its idle time", Share),
            col("label", "Held by", Text),
            col("samples", "CPU samples", Count),
            col("frames", "Sampled frames", Text),
            col("meanwhile", "Other GPUs meanwhile", Text),
        ],
    );
    for d in &idle.per_device {
        for c in &d.causes {
            let frames = c
                .frames
                .iter()
                .map(|f| format!("{} ({})", f.frame, f.samples))
                .collect();
            t.row(vec![
                d.file.clone().into(),
                d.device.into(),
                c.kind.name().into(),
                (c.ns as f64 / 1000.0).into(),
                c.share.into(),
                c.label.clone().into(),
                c.samples.into(),
                Cell::List(frames),
                c.meanwhile
                    .as_ref()
                    .map(|m| m.sentence())
                    .unwrap_or_default()
                    .into(),
            ]);
        }
    }
    t
}

pub fn top_gaps(name: &'static str, title: &'static str, gaps: &[TopGap]) -> Table {
    use Kind::*;
    let mut t = Table::new(
        name,
        title,
        &[
            FILE,
            col("device", "Device", Key),
            col("stream", "Stream", Key),
            col("start_ns", "Start", Timestamp),
            csv_only("end_ns", Timestamp),
            col("gap_us", "Gap", Duration),
            csv_only("bucket", Key),
            csv_only("prev_kernel", Text),
            csv_only("next_kernel", Text),
            shown_only("Kernels either side", Text),
            col("nvtx", "NVTX ranges open", Text),
            col("api", "CUDA API calls", Text),
        ],
    );
    for g in gaps {
        t.row(vec![
            g.file.clone().into(),
            g.device.into(),
            g.stream.into(),
            Cell::Num(g.start_ns as f64),
            Cell::Num(g.end_ns as f64),
            g.gap_us.into(),
            g.bucket.clone().into(),
            g.prev_kernel.clone().into(),
            g.next_kernel.clone().into(),
            Cell::List(vec![g.sides().0.to_string(), format!("→ {}", g.sides().1)]),
            Cell::List(overlap_items(&g.nvtx)),
            Cell::List(overlap_items(&g.api)),
        ]);
    }
    t
}

pub fn graph_phases(d: &DrillReport) -> Table {
    use Kind::*;
    let g = &d.graphs;
    let mut t = Table::new(
        "graph_coverage",
        "CUDA-graph coverage",
        &[
            col("scope", "Scope", Key),
            col("steps", "Steps", Count),
            col("kernels", "Kernels", Count),
            col("graph_kernels", "Graph kernels", Count),
            col("eager_kernels", "Eager kernels", Count),
            col("coverage", "Coverage", Share),
        ],
    );
    t.row(vec![
        "all kernels".into(),
        Cell::Missing,
        (g.graph_kernels + g.eager_kernels).into(),
        g.graph_kernels.into(),
        g.eager_kernels.into(),
        g.coverage.into(),
    ]);
    for p in &g.phases {
        t.row(vec![
            p.phase.clone().into(),
            p.steps.into(),
            p.kernels.into(),
            p.graph_kernels.into(),
            p.eager_kernels.into(),
            p.coverage.into(),
        ]);
    }
    t
}

pub fn eager_kernels(d: &DrillReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "eager_kernels",
        "Eagerly launched kernels",
        &[
            col("name", "Kernel", Text),
            col("category", "Category", Key),
            col("capturable", "Capturable", Key),
            col("count", "Count", Count),
            col("total_us", "Total", Duration),
        ],
    );
    for e in &d.graphs.eager_top {
        t.row(vec![
            e.name.clone().into(),
            e.category.label().into(),
            (if e.capturable { "yes" } else { "no" }).into(),
            e.count.into(),
            e.total_us.into(),
        ]);
    }
    t
}

pub fn pattern_kernels(d: &DrillReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "pattern_kernels",
        "Per-layer kernel sequence",
        &[
            col("index", "#", Key),
            col("name", "Kernel", Text),
            col("category", "Category", Key),
            col("mean_gap_us", "Mean gap before", Duration),
            col("mean_duration_us", "Mean duration", Duration),
        ],
    );
    for k in &d.patterns.kernels {
        t.row(vec![
            Cell::Int(k.index as u64),
            k.name.clone().into(),
            k.category.label().into(),
            k.mean_gap_us.into(),
            k.mean_duration_us.into(),
        ]);
    }
    t
}

pub fn pattern_blocks(d: &DrillReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "pattern_blocks",
        "Functional blocks ranked by gap × layers",
        &[
            col("rank", "Rank", Key),
            col("group", "Group", Key),
            col("kernels", "Kernels", Key),
            col("operation", "Operation", Key),
            col("names", "Kernel names", Text),
            col("gap_per_layer_us", "Gap per layer", Duration),
            col("total_gap_us", "Total gap", Duration),
            col("priority", "Priority", Key),
        ],
    );
    for b in &d.patterns.blocks {
        t.row(vec![
            Cell::Int(b.rank as u64),
            b.group.clone().into(),
            b.kernels.clone().into(),
            b.operation.clone().into(),
            b.names.join("; ").into(),
            b.gap_per_layer_us.into(),
            b.total_gap_us.into(),
            b.priority.clone().into(),
        ]);
    }
    t
}

pub fn stragglers(d: &DrillReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "stragglers",
        "Collective arrivals per rank",
        &[
            FILE,
            col("device", "Device", Key),
            col("pid", "PID", Key),
            col("collective_kernels", "Collectives", Count),
            col("last", "Last", Count),
            col("share", "Last in", Share),
            col("mean_lateness_us", "Mean lateness", Duration),
        ],
    );
    for r in &d.stragglers.ranks {
        t.row(vec![
            r.rank.file.clone().into(),
            r.rank.device.into(),
            Cell::Int(r.rank.pid as u64),
            r.collective_kernels.into(),
            r.last.into(),
            r.share.into(),
            r.mean_lateness_us.into(),
        ]);
    }
    t
}
