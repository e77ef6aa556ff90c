//! The report's tables, once, as rows of cells: Markdown, CSV and HTML render the same tables.

use super::document::Document;
use crate::detect::DetectReport;
use crate::drill::DrillReport;
use crate::drill::attribution::Overlap;
use crate::drill::gap_report::TopGap;
use crate::drill::gaps::GapBucket;
use crate::explain::api::CallSummary;

/// One table: a file stem for CSV, a title, headers and rows of display cells.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    pub name: &'static str,
    pub title: &'static str,
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(name: &'static str, title: &'static str, headers: &[&'static str]) -> Table {
        Table {
            name,
            title,
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// µs with 3 decimals (ns precision).
pub fn us3(v: f64) -> String {
    format!("{v:.3}")
}

/// A ratio with 4 decimals.
pub fn r4(v: f64) -> String {
    format!("{v:.4}")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// `name ×count (overlap µs)`, `; `-separated.
pub fn overlaps(v: &[Overlap]) -> String {
    v.iter()
        .map(|o| format!("{} ×{} ({:.1} µs)", o.name, o.count, o.overlap_us))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The aggregate metrics of the verdict with their evidence.
pub fn verdict(detect: &DetectReport) -> Table {
    let mut t = Table::new(
        "verdict",
        "Host-overhead metrics (aggregate)",
        &[
            "metric",
            "value",
            "threshold",
            "direction",
            "crossed",
            "numerator_us",
            "denominator_us",
            "meaning",
        ],
    );
    for (name, e) in &detect.evidence {
        t.row(vec![
            name.to_string(),
            e.value.map_or(String::new(), r4),
            r4(e.threshold),
            e.direction.into(),
            opt(e.crossed),
            e.numerator_us.map_or(String::new(), us3),
            e.denominator_us.map_or(String::new(), us3),
            e.meaning.into(),
        ]);
    }
    t
}

pub fn findings(doc: &Document) -> Table {
    let mut t = Table::new(
        "findings",
        "Findings",
        &["severity", "title", "evidence", "pattern", "fix", "source"],
    );
    for f in &doc.findings {
        t.row(vec![
            f.severity.label().into(),
            f.title.clone(),
            f.evidence.clone(),
            opt(f.pattern.as_ref()),
            f.fix.clone(),
            f.source.clone(),
        ]);
    }
    t
}

pub fn buckets(name: &'static str, title: &'static str, b: &[GapBucket]) -> Table {
    let mut t = Table::new(
        name,
        title,
        &[
            "bucket", "lo_us", "hi_us", "count", "total_us", "share", "cause",
        ],
    );
    for x in b {
        t.row(vec![
            x.label.clone(),
            x.lo_us.to_string(),
            opt(x.hi_us),
            x.count.to_string(),
            us3(x.total_us),
            r4(x.share),
            x.cause.clone(),
        ]);
    }
    t
}

pub fn top_gaps(name: &'static str, title: &'static str, gaps: &[TopGap]) -> Table {
    let mut t = Table::new(
        name,
        title,
        &[
            "file",
            "device",
            "stream",
            "start_ns",
            "end_ns",
            "gap_us",
            "bucket",
            "prev_kernel",
            "next_kernel",
            "nvtx",
            "api",
        ],
    );
    for g in gaps {
        t.row(vec![
            g.file.clone(),
            g.device.to_string(),
            opt(g.stream),
            g.start_ns.to_string(),
            g.end_ns.to_string(),
            us3(g.gap_us),
            g.bucket.clone(),
            g.prev_kernel.clone(),
            g.next_kernel.clone(),
            overlaps(&g.nvtx),
            overlaps(&g.api),
        ]);
    }
    t
}

pub fn graph_phases(d: &DrillReport) -> Table {
    let g = &d.graphs;
    let mut t = Table::new(
        "graph_coverage",
        "CUDA-graph coverage",
        &[
            "scope",
            "steps",
            "kernels",
            "graph_kernels",
            "eager_kernels",
            "coverage",
        ],
    );
    t.row(vec![
        "all kernels".into(),
        String::new(),
        (g.graph_kernels + g.eager_kernels).to_string(),
        g.graph_kernels.to_string(),
        g.eager_kernels.to_string(),
        r4(g.coverage),
    ]);
    for p in &g.phases {
        t.row(vec![
            p.phase.clone(),
            p.steps.to_string(),
            p.kernels.to_string(),
            p.graph_kernels.to_string(),
            p.eager_kernels.to_string(),
            r4(p.coverage),
        ]);
    }
    t
}

pub fn eager_kernels(d: &DrillReport) -> Table {
    let mut t = Table::new(
        "eager_kernels",
        "Eagerly launched kernels",
        &["name", "category", "capturable", "count", "total_us"],
    );
    for e in &d.graphs.eager_top {
        t.row(vec![
            e.name.clone(),
            e.category.label().into(),
            e.capturable.to_string(),
            e.count.to_string(),
            us3(e.total_us),
        ]);
    }
    t
}

pub fn pattern_kernels(d: &DrillReport) -> Table {
    let mut t = Table::new(
        "pattern_kernels",
        "Per-layer kernel sequence",
        &[
            "index",
            "name",
            "category",
            "mean_gap_us",
            "mean_duration_us",
        ],
    );
    for k in &d.patterns.kernels {
        t.row(vec![
            k.index.to_string(),
            k.name.clone(),
            k.category.label().into(),
            us3(k.mean_gap_us),
            us3(k.mean_duration_us),
        ]);
    }
    t
}

pub fn pattern_blocks(d: &DrillReport) -> Table {
    let mut t = Table::new(
        "pattern_blocks",
        "Functional blocks ranked by gap × layers",
        &[
            "rank",
            "group",
            "kernels",
            "operation",
            "names",
            "gap_per_layer_us",
            "total_gap_us",
            "priority",
        ],
    );
    for b in &d.patterns.blocks {
        t.row(vec![
            b.rank.to_string(),
            b.group.clone(),
            b.kernels.clone(),
            b.operation.clone(),
            b.names.join("; "),
            us3(b.gap_per_layer_us),
            us3(b.total_gap_us),
            b.priority.clone(),
        ]);
    }
    t
}

pub fn stragglers(d: &DrillReport) -> Table {
    let mut t = Table::new(
        "stragglers",
        "Collective arrivals per rank",
        &[
            "file",
            "device",
            "pid",
            "collective_kernels",
            "last",
            "share",
            "mean_lateness_us",
        ],
    );
    for r in &d.stragglers.ranks {
        t.row(vec![
            r.rank.file.clone(),
            r.rank.device.to_string(),
            r.rank.pid.to_string(),
            r.collective_kernels.to_string(),
            r.last.to_string(),
            r4(r.share),
            us3(r.mean_lateness_us),
        ]);
    }
    t
}

pub fn top_kernels(doc: &Document) -> Table {
    let mut t = Table::new(
        "top_kernels",
        "Top kernels by total time",
        &[
            "name", "count", "total_us", "avg_us", "p50_us", "p90_us", "min_us", "max_us", "share",
        ],
    );
    for k in &doc.explain.kernels.top {
        t.row(vec![
            k.name.clone(),
            k.count.to_string(),
            us3(k.total_us),
            us3(k.avg_us),
            us3(k.p50_us),
            us3(k.p90_us),
            us3(k.min_us),
            us3(k.max_us),
            r4(k.share),
        ]);
    }
    t
}

pub fn calls(name: &'static str, title: &'static str, c: &CallSummary) -> Table {
    let mut t = Table::new(
        name,
        title,
        &["name", "count", "total_us", "avg_us", "max_us"],
    );
    for a in &c.by_name {
        t.row(vec![
            a.name.clone(),
            a.count.to_string(),
            us3(a.total_us),
            us3(a.avg_us),
            us3(a.max_us),
        ]);
    }
    t
}

pub fn memory(doc: &Document) -> Table {
    let m = &doc.explain.memory;
    let mut t = Table::new(
        "memory",
        "Memory copies and memsets (whole capture)",
        &[
            "kind",
            "count",
            "bytes",
            "total_us",
            "pageable_async",
            "synchronous",
            "unjoined",
        ],
    );
    for x in m.memcpy.iter().chain(std::iter::once(&m.memset)) {
        t.row(vec![
            x.kind.clone(),
            x.count.to_string(),
            x.bytes.to_string(),
            us3(x.total_us),
            x.pageable_async.to_string(),
            x.synchronous.to_string(),
            x.unjoined.to_string(),
        ]);
    }
    t
}

pub fn nvtx_ranges(doc: &Document) -> Table {
    let mut t = Table::new(
        "nvtx_ranges",
        "NVTX ranges by total time (whole capture)",
        &["name", "count", "total_us", "avg_us", "max_us"],
    );
    for r in &doc.explain.nvtx.top_ranges {
        t.row(vec![
            r.name.clone(),
            r.count.to_string(),
            us3(r.total_us),
            us3(r.avg_us),
            us3(r.max_us),
        ]);
    }
    t
}

pub fn nvtx_gpu(doc: &Document) -> Table {
    let mut t = Table::new(
        "nvtx_gpu_time",
        "GPU time by launching NVTX range (innermost)",
        &["name", "kernels", "gpu_us", "share"],
    );
    for g in &doc.explain.nvtx.gpu_time {
        t.row(vec![
            g.name.clone(),
            g.kernels.to_string(),
            us3(g.gpu_us),
            r4(g.share),
        ]);
    }
    t
}

pub fn processes(doc: &Document) -> Table {
    let mut t = Table::new(
        "processes",
        "Per-process breakdown (whole capture)",
        &[
            "pid",
            "name",
            "devices",
            "kernels",
            "kernel_us",
            "launch_calls",
            "api_calls",
            "api_us",
            "sync_calls",
            "sync_us",
            "memcpy",
            "memcpy_bytes",
            "nvtx_ranges",
        ],
    );
    for p in &doc.explain.processes {
        let devices: Vec<String> = p.devices.iter().map(u32::to_string).collect();
        t.row(vec![
            p.pid.to_string(),
            p.name.clone(),
            devices.join(" "),
            p.kernels.to_string(),
            us3(p.kernel_us),
            p.launch_calls.to_string(),
            p.api_calls.to_string(),
            us3(p.api_us),
            p.sync_calls.to_string(),
            us3(p.sync_us),
            p.memcpy.to_string(),
            p.memcpy_bytes.to_string(),
            p.nvtx_ranges.to_string(),
        ]);
    }
    t
}

pub fn coverage(doc: &Document) -> Table {
    let mut t = Table::new("coverage", "Not computed, and why", &["subject", "reason"]);
    for c in &doc.coverage {
        t.row(vec![c.subject.clone(), c.reason.clone()]);
    }
    t
}
