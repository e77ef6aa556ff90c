//! The report's structure, once: sections with their sentences, findings, charts and tables.
//! Markdown and HTML render this outline; the CSV export is its tables.

use super::charts::{self, BarChart};
use super::document::Document;
use super::tables::{self as t, Table};
use crate::drill::gaps::GapHistogram;
use crate::findings::Finding;
use crate::format::{count, duration_us as dur, percent};

/// A plot of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Bars(BarChart),
    Gaps(GapHistogram),
}

/// One section of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: &'static str,
    /// Sentences stating the section's numbers.
    pub text: Vec<String>,
    pub findings: Vec<Finding>,
    pub charts: Vec<Chart>,
    pub tables: Vec<Table>,
}

fn section(title: &'static str, text: Vec<String>, tables: Vec<Table>) -> Section {
    Section {
        title,
        text,
        findings: Vec::new(),
        charts: Vec::new(),
        tables,
    }
}

/// Every table of the report, in reading order (the CSV export).
pub fn tables(doc: &Document) -> Vec<Table> {
    let mut out = vec![t::findings(doc)];
    out.extend(outline(doc).into_iter().flat_map(|s| s.tables));
    out
}

/// The sections of the report, in reading order.
pub fn outline(doc: &Document) -> Vec<Section> {
    let mut next = section("What to do next", Vec::new(), Vec::new());
    next.findings = doc.findings.clone();
    if doc.findings.is_empty() {
        next.text
            .push("No finding: nothing in this trace crossed a finding's threshold.".into());
    }
    vec![
        summary(doc),
        next,
        section(
            "Host-overhead verdict",
            vec![verdict_line(doc)],
            vec![t::verdict(doc)],
        ),
        gaps(doc),
        graphs(doc),
        patterns(doc),
        stragglers(doc),
        kernels(doc),
        section(
            "Synchronization and allocation",
            vec![calls_line(doc)],
            vec![
                t::calls(
                    "syncs",
                    "Blocking synchronization calls",
                    &doc.explain.syncs,
                ),
                t::calls(
                    "allocations",
                    "Object creation and allocation calls",
                    &doc.explain.allocations,
                ),
            ],
        ),
        section("Memory", vec![memory_line(doc)], vec![t::memory(doc)]),
        section(
            "NVTX",
            vec![nvtx_line(doc)],
            vec![t::nvtx_ranges(doc), t::nvtx_gpu(doc)],
        ),
        section("Processes", Vec::new(), vec![t::processes(doc)]),
        section(
            "Coverage",
            vec!["What could not be computed from this export, and why.".into()],
            vec![t::coverage(doc)],
        ),
    ]
}

fn verdict_line(doc: &Document) -> String {
    let d = &doc.detect;
    format!(
        "Host overhead verdict: {} ({} of {} applicable aggregate metrics crossed; standard profile).",
        d.verdict, d.crossed_count, d.applicable_count
    )
}

fn summary(doc: &Document) -> Section {
    let f = &doc.detect.trace;
    let mut text = vec![
        format!(
            "{}: nsys {}, {} on {} ({}), {}, {}, window {}.",
            doc.file,
            f.nsys_version.as_deref().unwrap_or("version unknown"),
            plural(f.kernels, "kernel", "kernels"),
            plural(f.devices.len() as u64, "device", "devices"),
            if f.gpus.is_empty() {
                "GPU models unknown".to_string()
            } else {
                f.gpus.join(", ")
            },
            plural(f.processes as u64, "process", "processes"),
            plural(f.forward_steps, "forward step", "forward steps"),
            dur(doc.explain.window.duration_us)
        ),
        verdict_line(doc),
    ];
    let idle = &doc.drill.report.gaps.device_idle;
    if let Some(r) = &idle.reading {
        text.push(format!(
            "GPU-idle gaps: {}, {} ({} of device time), {r}.",
            plural(idle.gaps, "gap", "gaps"),
            dur(idle.total_us),
            percent(idle.idle_share)
        ));
    }
    text.push(format!(
        "{}, {} on what could not be computed.",
        plural(doc.findings.len() as u64, "finding", "findings"),
        plural(doc.coverage.len() as u64, "note", "notes")
    ));
    section("Summary", text, Vec::new())
}

fn gaps(doc: &Document) -> Section {
    let g = &doc.drill.report.gaps;
    let idle = &g.device_idle;
    let mut text = vec![format!(
        "Device-idle gaps (no kernel on any stream): {}, {} = {} of {} device time; {}.",
        plural(idle.gaps, "gap", "gaps"),
        dur(idle.total_us),
        percent(idle.idle_share),
        dur(idle.device_time_us),
        idle.reading.as_deref().unwrap_or("no gap")
    )];
    text.push(format!(
        "Gaps per (device, stream), each stream on its own: {}, {}; {}.",
        plural(g.gaps, "gap", "gaps"),
        dur(g.total_us),
        g.reading.as_deref().unwrap_or("no gap")
    ));
    if let Some((s, e)) = g.window {
        text.push(format!(
            "Only gaps inside the window {}–{} from the session start are counted.",
            crate::format::duration_ns(s),
            crate::format::duration_ns(e)
        ));
    }
    for p in &g.phases {
        text.push(format!(
            "{} phase ({}): {} inside its steps, {}.",
            p.phase,
            plural(p.steps, "step", "steps"),
            plural(p.gaps, "stream gap", "stream gaps"),
            dur(p.total_us)
        ));
    }
    let mut s = section(
        "GPU idle gaps",
        text,
        vec![
            t::buckets(
                "idle_gap_buckets",
                "Device-idle gaps by bucket",
                &idle.buckets,
            ),
            t::top_gaps("top_idle_gaps", "Largest device-idle gaps", &idle.top),
            t::buckets(
                "gap_buckets",
                "Gaps per (device, stream) by bucket",
                &g.buckets,
            ),
            t::top_gaps("top_gaps", "Largest gaps per (device, stream)", &g.top),
        ],
    );
    s.charts.push(Chart::Gaps(charts::idle_histogram(doc)));
    s
}

fn with_charts(mut s: Section, doc: &Document, prefix: &str) -> Section {
    s.charts.extend(
        charts::charts(doc)
            .into_iter()
            .filter(|c| c.title.starts_with(prefix))
            .map(Chart::Bars),
    );
    s
}

fn graphs(doc: &Document) -> Section {
    let g = &doc.drill.report.graphs;
    let mut text = vec![format!(
        "Capture mode {}: {} of {} kernels graph-launched (coverage {}); {}; eager GEMM/norm/collective time {}.",
        g.capture_mode,
        count(g.graph_kernels),
        count(g.graph_kernels + g.eager_kernels),
        percent(g.coverage),
        plural(
            g.graph_launch_calls,
            "graph launch call",
            "graph launch calls"
        ),
        dur(g.capturable_eager_us)
    )];
    text.extend(g.advice.clone());
    let s = section(
        "CUDA graphs",
        text,
        vec![t::graph_phases(doc), t::eager_kernels(doc)],
    );
    with_charts(s, doc, "CUDA-graph")
}

fn patterns(doc: &Document) -> Section {
    let p = &doc.drill.report.patterns;
    let text = if p.found {
        vec![format!(
            "A {}-kernel layer repeats {} times in {} ({:.2} layers per step, device {}).",
            p.kernels.len(),
            p.layers,
            p.source,
            p.layers_per_step,
            p.device.map_or(String::new(), |d| d.to_string())
        )]
    } else {
        vec![format!(
            "Searched {}: {}",
            p.source,
            p.note.as_deref().unwrap_or("no pattern")
        )]
    };
    let s = section(
        "Per-layer pattern",
        text,
        vec![t::pattern_kernels(doc), t::pattern_blocks(doc)],
    );
    with_charts(s, doc, "Per-layer")
}

fn stragglers(doc: &Document) -> Section {
    let s = &doc.drill.report.stragglers;
    let mut text = vec![match &s.rank {
        Some(r) => format!(
            "Straggler: device {} (pid {}, {}) arrives last in {} of {} collectives, {} late on average.",
            r.device,
            r.pid,
            r.file,
            percent(s.share),
            count(s.collectives),
            dur(s.mean_lateness_us)
        ),
        None => format!(
            "No straggler: {} collectives matched; the most-often-last rank was last in {} (flagged above {}).",
            count(s.collectives),
            percent(s.share),
            crate::format::percent_digits(s.threshold, 0)
        ),
    }];
    text.extend(s.alignment.clone());
    text.extend(s.note.clone());
    let sec = section("Stragglers", text, vec![t::stragglers(doc)]);
    with_charts(sec, doc, "Share of collectives")
}

fn kernels(doc: &Document) -> Section {
    let e = &doc.explain;
    let l = &e.launch_storm;
    let d = &e.launch_latency.distribution;
    let mut text = vec![
        format!(
            "{} kernels, {} distinct names, {} of kernel time.",
            count(e.kernels.kernels),
            count(e.kernels.distinct_names),
            dur(e.kernels.total_us)
        ),
        format!(
            "Launch rate {}/s ({}/s in the busiest process), {} of kernels shorter than {}: {}.",
            crate::format::mean(l.launches_per_s, 0),
            crate::format::mean(l.max_process_launches_per_s, 0),
            percent(l.tiny_share),
            dur(l.tiny_threshold_us),
            if l.storm {
                "launch storm"
            } else {
                "no launch storm"
            }
        ),
        format!(
            "Launch latency (launch call end → kernel start, {} eager kernels): p50 {}, p90 {}, p99 {} (min {}, max {}).",
            count(e.launch_latency.kernels),
            dur(d.p50_us),
            dur(d.p90_us),
            dur(d.p99_us),
            dur(d.min_us),
            dur(d.max_us)
        ),
    ];
    if d.count > 0 && d.min_us < 0.0 {
        text.push(negative_latency_note(d.min_us));
    }
    let s = section("Kernels and launches", text, vec![t::top_kernels(doc)]);
    with_charts(s, doc, "Top kernels")
}

fn calls_line(doc: &Document) -> String {
    let (s, a) = (&doc.explain.syncs, &doc.explain.allocations);
    let per_step = |v: Option<f64>| {
        v.map_or(String::new(), |n| {
            format!(", {} per steady step", crate::format::mean(n, 1))
        })
    };
    format!(
        "{}, {}{}; {}, {}{}.",
        plural(s.calls, "blocking sync call", "blocking sync calls"),
        dur(s.total_us),
        per_step(s.calls_per_step),
        plural(
            a.calls,
            "object-creation/allocation call",
            "object-creation/allocation calls"
        ),
        dur(a.total_us),
        per_step(a.calls_per_step)
    )
}

fn memory_line(doc: &Document) -> String {
    let m = &doc.explain.memory;
    format!(
        "{} ({} pageable async, {} synchronous), {} ({} synchronous).",
        plural(
            m.memcpy.iter().map(|k| k.count).sum::<u64>(),
            "copy",
            "copies"
        ),
        count(m.pageable_async_copies),
        count(m.synchronous_copies),
        plural(m.memset.count, "memset", "memsets"),
        count(m.synchronous_memsets)
    )
}

fn nvtx_line(doc: &Document) -> String {
    let n = &doc.explain.nvtx;
    format!(
        "{}; {} of {} kernel time launched inside a range ({} coverage).",
        plural(n.ranges, "NVTX range", "NVTX ranges"),
        dur(n.attributed_us),
        dur(n.kernel_us),
        percent(n.coverage)
    )
}

/// `1 kernel`, `2,048 kernels`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// Why a launch latency can be negative: the kernel's start is a GPU timestamp, the launch
/// call's end a CPU one, put on one timeline by nsys.
fn negative_latency_note(min_us: f64) -> String {
    format!(
        "Some latencies are negative (down to {}): those kernels started before their launch call returned on the CPU, either because an idle GPU picked the kernel up while the call was still running or because the CPU and GPU clocks are skewed by up to that much; differences smaller than {} are not meaningful here.",
        dur(min_us),
        dur(min_us.abs())
    )
}
