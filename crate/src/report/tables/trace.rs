//! The verdict and the explainer's tables of one trace (kernels, API calls, memory, NVTX,
//! processes, coverage).

use super::{Cell, Kind, Table, col, csv_only};
use crate::detect::DetectReport;
use crate::detect::catalogue::METRICS;
use crate::explain::api::CallSummary;
use crate::report::document::Document;

/// The aggregate metrics of the verdict with their evidence.
pub fn verdict(detect: &DetectReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "verdict",
        "Host-overhead metrics (aggregate)",
        &[
            csv_only("metric", Key),
            col("title", "Metric", Text),
            col("value", "Value", Share),
            col("threshold", "Threshold", Share),
            col("direction", "Crossed when", Key),
            col("crossed", "Crossed", Key),
            col("numerator_us", "Numerator", Duration),
            col("denominator_us", "Denominator", Duration),
            col("parts", "Mean of (per device or process)", Text),
            col("meaning", "Meaning", Text),
        ],
    );
    // In the catalogue's order (M1 … M5), each metric named as the page names it.
    let metrics = METRICS
        .iter()
        .filter_map(|m| detect.evidence.get(m.key).map(|e| (m, e)));
    for (m, e) in metrics {
        t.row(vec![
            m.key.into(),
            format!("{} ({})", m.title, m.id).into(),
            e.value.into(),
            e.threshold.into(),
            e.direction.into(),
            e.crossed.map(|c| if c { "yes" } else { "no" }).into(),
            e.numerator_us.into(),
            e.denominator_us.into(),
            match e.parts.is_empty() {
                true => Cell::Missing,
                false => e.figures().into(),
            },
            e.meaning.into(),
        ]);
    }
    t
}

pub fn findings(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "findings",
        "Findings",
        &[
            col("severity", "Severity", Key),
            col("title", "Title", Text),
            col("evidence", "Evidence", Text),
            col("pattern", "Pattern", Key),
            col("fix", "Fix", Text),
            col("source", "Source", Key),
        ],
    );
    for f in &doc.findings {
        t.row(vec![
            f.severity.label().into(),
            f.title.clone().into(),
            f.evidence.clone().into(),
            f.pattern.clone().into(),
            f.fix.clone().into(),
            f.source.clone().into(),
        ]);
    }
    t
}

pub fn top_kernels(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "top_kernels",
        "Top kernels by total time",
        &[
            col("name", "Kernel", Text),
            col("count", "Count", Count),
            col("total_us", "Total", Duration),
            col("avg_us", "Mean", Duration),
            col("p50_us", "p50", Duration),
            col("p90_us", "p90", Duration),
            col("min_us", "Min", Duration),
            col("max_us", "Max", Duration),
            col("share", "Share", Share),
        ],
    );
    for k in &doc.explain.kernels.top {
        t.row(vec![
            k.name.clone().into(),
            k.count.into(),
            k.total_us.into(),
            k.avg_us.into(),
            k.p50_us.into(),
            k.p90_us.into(),
            k.min_us.into(),
            k.max_us.into(),
            k.share.into(),
        ]);
    }
    t
}

/// GPU time per kernel class over the whole kernel window.
pub fn kernel_classes(k: &crate::analyze::classes::ClassTable) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "kernel_classes",
        "GPU time per kernel class (whole kernel window, summed)",
        &[
            csv_only("class", Key),
            col("label", "Class", Text),
            col("total_us", "GPU time", Duration),
            col("rows", "Rows", Count),
            col("us_per_s", "GPU time per s of window", Duration),
            col("share", "Share", Share),
        ],
    );
    for r in &k.classes {
        t.row(vec![
            r.class.key().into(),
            r.label.clone().into(),
            r.total_us.into(),
            r.rows.into(),
            r.gpu_us.into(),
            r.share.into(),
        ]);
    }
    t
}

pub fn calls(name: &'static str, title: &'static str, c: &CallSummary) -> Table {
    use Kind::*;
    let mut t = Table::new(
        name,
        title,
        &[
            col("name", "Call", Text),
            col("count", "Count", Count),
            col("total_us", "Total", Duration),
            col("avg_us", "Mean", Duration),
            col("max_us", "Max", Duration),
        ],
    );
    for a in &c.by_name {
        t.row(vec![
            a.name.clone().into(),
            a.count.into(),
            a.total_us.into(),
            a.avg_us.into(),
            a.max_us.into(),
        ]);
    }
    t
}

pub fn memory(doc: &Document) -> Table {
    use Kind::*;
    let m = &doc.explain.memory;
    let mut t = Table::new(
        "memory",
        "Memory copies and memsets (whole capture)",
        &[
            col("kind", "Kind", Key),
            col("count", "Count", Count),
            col("bytes", "Bytes", Bytes),
            col("total_us", "Total", Duration),
            col("pageable_async", "Pageable async", Count),
            col("synchronous", "Synchronous", Count),
            col("unjoined", "Without a CUDA API call", Count),
        ],
    );
    for x in m.memcpy.iter().chain(std::iter::once(&m.memset)) {
        t.row(vec![
            x.kind.clone().into(),
            x.count.into(),
            x.bytes.into(),
            x.total_us.into(),
            x.pageable_async.into(),
            x.synchronous.into(),
            x.unjoined.into(),
        ]);
    }
    t
}

pub fn nvtx_ranges(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "nvtx_ranges",
        "NVTX ranges by total time (whole capture)",
        &[
            col("name", "Range", Text),
            col("count", "Count", Count),
            col("total_us", "Total", Duration),
            col("avg_us", "Mean", Duration),
            col("max_us", "Max", Duration),
        ],
    );
    for r in &doc.explain.nvtx.top_ranges {
        t.row(vec![
            r.name.clone().into(),
            r.count.into(),
            r.total_us.into(),
            r.avg_us.into(),
            r.max_us.into(),
        ]);
    }
    t
}

pub fn nvtx_gpu(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "nvtx_gpu_time",
        "GPU time by launching NVTX range (innermost)",
        &[
            col("name", "Range", Text),
            col("kernels", "Kernels", Count),
            col("gpu_us", "GPU time", Duration),
            col("share", "Share of kernel time", Share),
        ],
    );
    for g in &doc.explain.nvtx.gpu_time {
        t.row(vec![
            g.name.clone().into(),
            g.kernels.into(),
            g.gpu_us.into(),
            g.share.into(),
        ]);
    }
    t
}

/// Processes, most GPU time first, then most CUDA API time (ties by pid).
pub fn processes(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "processes",
        "Per-process breakdown (whole capture, most kernel time first)",
        &[
            col("pid", "PID", Key),
            col("name", "Process", Text),
            col("devices", "Devices", Key),
            col("kernels", "Kernels", Count),
            col("kernel_us", "Kernel time", Duration),
            col("launch_calls", "Launch calls", Count),
            col("api_calls", "API calls", Count),
            col("api_us", "API time", Duration),
            col("sync_calls", "Sync calls", Count),
            col("sync_us", "Sync time", Duration),
            col("memcpy", "Copies", Count),
            col("memcpy_bytes", "Copied", Bytes),
            col("nvtx_ranges", "NVTX ranges", Count),
        ],
    );
    let mut procs: Vec<_> = doc.explain.processes.iter().collect();
    procs.sort_by(|a, b| {
        b.kernel_us
            .total_cmp(&a.kernel_us)
            .then(b.api_us.total_cmp(&a.api_us))
            .then(a.pid.cmp(&b.pid))
    });
    for p in procs {
        let devices: Vec<String> = p.devices.iter().map(u32::to_string).collect();
        t.row(vec![
            Cell::Text(p.pid.to_string()),
            p.name.clone().into(),
            devices.join(" ").into(),
            p.kernels.into(),
            p.kernel_us.into(),
            p.launch_calls.into(),
            p.api_calls.into(),
            p.api_us.into(),
            p.sync_calls.into(),
            p.sync_us.into(),
            p.memcpy.into(),
            p.memcpy_bytes.into(),
            p.nvtx_ranges.into(),
        ]);
    }
    t
}

pub fn coverage(doc: &Document) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "coverage",
        "Not computed, and why",
        &[col("subject", "Subject", Key), col("reason", "Why", Text)],
    );
    for c in &doc.coverage {
        t.row(vec![c.subject.clone().into(), c.reason.clone().into()]);
    }
    t
}
