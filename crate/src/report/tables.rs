//! The report's tables, once, as rows of cells: Markdown, CSV and HTML render the same tables.

use super::document::Document;
use crate::detect::DetectReport;
use crate::detect::catalogue::METRICS;
use crate::drill::DrillReport;
use crate::drill::attribution::Overlap;
use crate::drill::gap_report::TopGap;
use crate::drill::gaps::GapBucket;
use crate::explain::api::CallSummary;
use crate::format::{self, TimeUnit};

/// What a column holds, which decides how it reads in Markdown and HTML (CSV keeps raw values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text that may wrap (names, readings).
    Text,
    /// A key, label or id that must not be split (metric keys, buckets, pids, devices).
    Key,
    /// A duration in µs: one unit per column, named once in the header.
    Duration,
    /// A session timestamp in ns, shown in ms from the session start.
    Timestamp,
    /// A share (0–1), shown as a percentage.
    Share,
    /// A count, with thousands separators.
    Count,
    /// A byte count, in the binary unit that fits it.
    Bytes,
}

impl Kind {
    /// Numbers are right-aligned and never wrap.
    pub fn is_number(self) -> bool {
        !matches!(self, Kind::Text | Kind::Key)
    }
}

/// A column: its CSV key, its header for people and what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub key: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    /// Left out of the Markdown and HTML when every row holds the same value (the file of a
    /// one-file report, already in the report's title).
    pub once: bool,
    /// Only in the CSV: what the Markdown and HTML already say otherwise (a bucket's bounds are
    /// its label; a gap's end is its start plus its length).
    pub csv_only: bool,
    /// Only in the Markdown and HTML: what the CSV has in columns of its own, put together for
    /// reading (a gap's kernels either side).
    pub shown_only: bool,
}

/// One cell's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// Items, most important first: all of them in the CSV, the first [`LIST_SHOWN`] and how many
    /// more for people, one per line.
    List(Vec<String>),
    Num(f64),
    Int(u64),
    Missing,
}

impl Cell {
    /// The CSV form: full precision, no unit (the unit is in the column key).
    fn raw(&self, kind: Kind) -> String {
        match (self, kind) {
            (Cell::Text(s), _) => s.clone(),
            (Cell::List(items), _) => items.join("; "),
            (Cell::Num(v), Kind::Duration) => us3(*v),
            (Cell::Num(v), Kind::Share) => r4(*v),
            (Cell::Num(v), _) => v.to_string(),
            (Cell::Int(n), _) => n.to_string(),
            (Cell::Missing, _) => String::new(),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Cell::Text(s) => s.is_empty(),
            Cell::List(items) => items.is_empty(),
            Cell::Missing => true,
            _ => false,
        }
    }

    fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(v) => Some(*v),
            Cell::Int(n) => Some(*n as f64),
            _ => None,
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        Cell::Num(v)
    }
}

impl From<u64> for Cell {
    fn from(n: u64) -> Cell {
        Cell::Int(n)
    }
}

impl From<u32> for Cell {
    fn from(n: u32) -> Cell {
        Cell::Int(u64::from(n))
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Missing, Into::into)
    }
}

/// One table: a file stem for CSV, a title, columns and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub title: &'static str,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl serde::Serialize for Table {
    /// As people read it (the page's host side renders it): `{name, title, headers, rows}`
    /// with the display headers and cells of [`Table::shown`].
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let shown = self.shown();
        let mut out = s.serialize_struct("Table", 4)?;
        out.serialize_field("name", self.name)?;
        out.serialize_field("title", self.title)?;
        out.serialize_field("headers", &shown.headers)?;
        out.serialize_field("rows", &shown.rows)?;
        out.end()
    }
}

/// A table as people read it: the columns kept, headers with their unit, display cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub headers: Vec<String>,
    pub kinds: Vec<Kind>,
    pub rows: Vec<Vec<String>>,
}

/// How the cells of one column read.
type CellFormat = Box<dyn Fn(&Cell) -> String>;

pub(crate) const fn col(key: &'static str, label: &'static str, kind: Kind) -> Column {
    Column {
        key,
        label,
        kind,
        once: false,
        csv_only: false,
        shown_only: false,
    }
}

const fn csv_only(key: &'static str, kind: Kind) -> Column {
    Column {
        csv_only: true,
        ..col(key, key, kind)
    }
}

const fn shown_only(label: &'static str, kind: Kind) -> Column {
    Column {
        shown_only: true,
        ..col("", label, kind)
    }
}

/// The file a row comes from: shown only when the rows come from several files.
const FILE: Column = Column {
    key: "file",
    label: "File",
    kind: Kind::Text,
    once: true,
    csv_only: false,
    shown_only: false,
};

impl Table {
    pub(crate) fn new(name: &'static str, title: &'static str, columns: &[Column]) -> Table {
        Table {
            name,
            title,
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// The CSV header: the columns' keys.
    pub fn keys(&self) -> Vec<&'static str> {
        self.columns
            .iter()
            .filter(|c| !c.shown_only)
            .map(|c| c.key)
            .collect()
    }

    /// The CSV rows: raw values.
    pub fn raw_rows(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&self.columns)
                    .filter(|(_, col)| !col.shown_only)
                    .map(|(c, col)| c.raw(col.kind))
                    .collect()
            })
            .collect()
    }

    fn cells(&self, i: usize) -> impl Iterator<Item = &Cell> {
        self.rows.iter().filter_map(move |r| r.get(i))
    }

    /// Whether column `i` says nothing: every cell empty, or a `once` column with one value.
    fn omitted(&self, i: usize) -> bool {
        let mut cells = self.cells(i);
        if self.columns[i].csv_only || self.cells(i).all(Cell::is_empty) {
            return true;
        }
        self.columns[i].once && cells.next().is_some_and(|f| self.cells(i).all(|c| c == f))
    }

    /// The table for people: empty columns and a one-valued `once` column left out, one unit per
    /// duration column named in its header, every number through `crate::format`.
    pub fn shown(&self) -> Shown {
        let keep: Vec<usize> = (0..self.columns.len())
            .filter(|&i| !self.omitted(i))
            .collect();
        let mut headers = Vec::new();
        let mut kinds = Vec::new();
        let mut fmts: Vec<CellFormat> = Vec::new();
        for &i in &keep {
            let c = self.columns[i];
            kinds.push(c.kind);
            match c.kind {
                Kind::Duration => match TimeUnit::shared(self.cells(i).filter_map(Cell::num)) {
                    Some(unit) => {
                        headers.push(format!("{} ({})", c.label, unit.symbol()));
                        fmts.push(Box::new(move |x| {
                            x.num().map_or(String::new(), |v| unit.number(v))
                        }));
                    }
                    None => {
                        headers.push(c.label.to_string());
                        fmts.push(Box::new(|x| {
                            x.num().map_or(String::new(), format::duration_us)
                        }));
                    }
                },
                Kind::Timestamp => {
                    headers.push(format!("{} (ms)", c.label));
                    fmts.push(Box::new(|x| {
                        x.num().map_or(String::new(), |v| format::mean(v / 1e6, 3))
                    }));
                }
                _ => {
                    headers.push(c.label.to_string());
                    fmts.push(Box::new(move |x| shown_cell(x, c.kind)));
                }
            }
        }
        let rows = self
            .rows
            .iter()
            .map(|r| {
                keep.iter()
                    .zip(&fmts)
                    .map(|(&i, f)| r.get(i).map_or(String::new(), f))
                    .collect()
            })
            .collect();
        Shown {
            headers,
            kinds,
            rows,
        }
    }
}

/// How many items of a list cell the Markdown and HTML show.
pub const LIST_SHOWN: usize = 3;

fn shown_cell(c: &Cell, kind: Kind) -> String {
    match (c, kind) {
        (Cell::Text(s), _) => s.clone(),
        (Cell::List(items), _) => {
            let mut shown: Vec<String> = items.iter().take(LIST_SHOWN).cloned().collect();
            if items.len() > LIST_SHOWN {
                shown.push(format!("+{} more", items.len() - LIST_SHOWN));
            }
            shown.join("\n")
        }
        (Cell::Missing, _) => String::new(),
        (Cell::Num(v), Kind::Share) => format::percent(*v),
        (Cell::Num(v), Kind::Duration) => format::duration_us(*v),
        (Cell::Int(n), Kind::Count) => format::count(*n),
        (Cell::Int(n), Kind::Bytes) => format::bytes(*n),
        (Cell::Num(v), Kind::Count) => format::mean(*v, 1),
        (Cell::Num(v), _) => v.to_string(),
        (Cell::Int(n), _) => n.to_string(),
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

/// `name ×count (overlap)`, `; `-separated.
pub fn overlaps(v: &[Overlap]) -> String {
    overlap_items(v).join("; ")
}

/// Each overlap as `name ×count (overlap)`, the count left out when 1.
fn overlap_items(v: &[Overlap]) -> Vec<String> {
    v.iter()
        .map(|o| {
            let count = if o.count > 1 {
                format!(" ×{}", format::count(o.count))
            } else {
                String::new()
            };
            format!("{}{count} ({})", o.name, format::duration_us(o.overlap_us))
        })
        .collect()
}

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
            col("cause", "Typical cause", Text),
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
            x.cause.clone().into(),
        ]);
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
            Cell::List(vec![g.prev_kernel.clone(), format!("→ {}", g.next_kernel)]),
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
