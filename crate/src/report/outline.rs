//! The report's structure, once: sections with their sentences, findings, charts and tables.
//! Markdown and HTML render this outline; the CSV export is its tables.

use serde::Serialize;

use super::charts::{self, BarChart};
use super::document::Document;
use super::tables::{self as t, Table};
use crate::detect::DetectReport;
use crate::drill::DrillReport;
use crate::drill::gaps::GapHistogram;
use crate::explain::WindowBasis;
use crate::explain::api::CallSummary;
use crate::findings::Finding;

/// A plot of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Bars(BarChart),
    Gaps(GapHistogram),
}

/// One section of the report (as JSON, the page's host-side view renders it: charts left out,
/// the tables as headers and rows of display cells).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub title: &'static str,
    /// Sentences stating the section's numbers.
    pub text: Vec<String>,
    pub findings: Vec<Finding>,
    #[serde(skip)]
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

/// The sections of the report, in reading order: without kernel records, the host side only.
pub fn outline(doc: &Document) -> Vec<Section> {
    let mut next = section("What to do next", Vec::new(), Vec::new());
    next.findings = doc.findings.clone();
    if doc.findings.is_empty() {
        next.text
            .push("No finding: nothing in this trace crossed a finding's threshold.".into());
    }
    let mut out = vec![summary(doc), next];
    match (&doc.detect, &doc.drill) {
        (Some(detect), Some(drill)) => {
            let d = &drill.report;
            out.push(section(
                "Host-overhead verdict",
                vec![verdict_line(doc)],
                vec![t::verdict(detect)],
            ));
            out.extend([
                super::capture::section(detect),
                gaps(d, detect),
                graphs(doc, d),
                patterns(doc, d),
                stragglers(doc, d),
                kernels(doc),
            ]);
        }
        _ => out.push(section(
            "Host-overhead verdict",
            vec![verdict_line(doc)],
            Vec::new(),
        )),
    }
    out.extend(host_sections(doc));
    out
}

/// The host side: every CUDA API call, syncs and allocations, copies, NVTX, processes, and
/// what could not be computed.
fn host_sections(doc: &Document) -> Vec<Section> {
    let e = &doc.explain;
    vec![
        section(
            "CUDA API calls",
            vec![api_line(doc)],
            vec![t::calls(
                "api_calls",
                "CUDA API calls by name (whole capture)",
                &e.api_calls,
            )],
        ),
        section(
            "Synchronization and allocation",
            vec![calls_line(doc)],
            vec![
                t::calls(
                    "syncs",
                    "Blocking synchronization calls (whole capture)",
                    &e.syncs,
                ),
                t::calls(
                    "allocations",
                    "Object creation and allocation calls (whole capture)",
                    &e.allocations,
                ),
            ],
        ),
        section("Memory", vec![memory_line(doc)], vec![t::memory(doc)]),
        section(
            "NVTX",
            vec![nvtx_line(doc)],
            match doc.drill {
                Some(_) => vec![t::nvtx_ranges(doc), t::nvtx_gpu(doc)],
                None => vec![t::nvtx_ranges(doc)],
            },
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
    match (&doc.detect, &doc.verdict_not_computed) {
        (Some(d), _) => format!(
            "Host overhead verdict: {} ({} of {} applicable aggregate metrics crossed; standard profile).",
            d.verdict, d.crossed_count, d.applicable_count
        ),
        (None, Some(n)) => format!(
            "Host overhead verdict: {} ({}). {}.",
            n.verdict, n.why, n.advice
        ),
        (None, None) => "Host overhead verdict: not computed.".into(),
    }
}

/// What the window of the explainer's figures covers, for the sentences that use it.
fn window_words(doc: &Document) -> String {
    let w = &doc.explain.window;
    match w.basis {
        WindowBasis::Kernels => format!("the kernel window ({:.3} ms)", w.duration_us / 1000.0),
        WindowBasis::Capture => format!(
            "the whole capture ({:.3} ms from the first to the last host event)",
            w.duration_us / 1000.0
        ),
    }
}

fn summary(doc: &Document) -> Section {
    let mut text = match (&doc.detect, &doc.drill) {
        (Some(detect), Some(drill)) => kernel_summary(doc, detect, &drill.report),
        _ => vec![
            format!(
                "{}: no kernel records; {} CUDA API call(s) in {} process(es) over {}.",
                doc.file,
                doc.explain.api_calls.calls,
                doc.explain.processes.len(),
                window_words(doc)
            ),
            verdict_line(doc),
        ],
    };
    text.push(format!(
        "{} finding(s), {} note(s) on what could not be computed.",
        doc.findings.len(),
        doc.coverage.len()
    ));
    section("Summary", text, Vec::new())
}

fn kernel_summary(doc: &Document, detect: &DetectReport, drill: &DrillReport) -> Vec<String> {
    let f = &detect.trace;
    let mut text = vec![
        format!(
            "{}: nsys {}, {} kernel(s) on {} device(s) ({}), {} process(es), {} forward step(s), window {:.3} ms.",
            doc.file,
            f.nsys_version.as_deref().unwrap_or("version unknown"),
            f.kernels,
            f.devices.len(),
            if f.gpus.is_empty() {
                "GPU models unknown".to_string()
            } else {
                f.gpus.join(", ")
            },
            f.processes,
            f.forward_steps,
            doc.explain.window.duration_us / 1000.0
        ),
        verdict_line(doc),
    ];
    let idle = &drill.gaps.device_idle;
    if let Some(r) = &idle.reading {
        text.push(format!(
            "GPU-idle gaps: {} gaps, {:.3} ms ({:.1} % of device time), {r}.",
            idle.gaps,
            idle.total_us / 1000.0,
            idle.idle_share * 100.0
        ));
    }
    text
}

fn gaps(d: &DrillReport, detect: &DetectReport) -> Section {
    let g = &d.gaps;
    let idle = &g.device_idle;
    let mut text = vec![format!(
        "Device-idle gaps (no kernel on any stream): {} gaps, {:.3} ms = {:.1} % of {:.3} ms device time; {}.",
        idle.gaps,
        idle.total_us / 1000.0,
        idle.idle_share * 100.0,
        idle.device_time_us / 1000.0,
        idle.reading.as_deref().unwrap_or("no gap")
    )];
    text.push(format!(
        "Per (device, stream) gaps (reference §9.1): {} gaps, {:.3} ms; {}.",
        g.gaps,
        g.total_us / 1000.0,
        g.reading.as_deref().unwrap_or("no gap")
    ));
    if let Some((s, e)) = g.window {
        text.push(format!(
            "Only gaps inside the window {s}..{e} ns are counted."
        ));
    }
    for p in &g.phases {
        text.push(format!(
            "{} phase ({} steps): {} stream gaps inside its steps, {:.3} ms.",
            p.phase,
            p.steps,
            p.gaps,
            p.total_us / 1000.0
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
    s.charts
        .push(Chart::Gaps(charts::idle_histogram(d, detect)));
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

fn graphs(doc: &Document, d: &DrillReport) -> Section {
    let g = &d.graphs;
    let mut text = vec![format!(
        "Capture mode {}: {} of {} kernels graph-launched (coverage {:.1} %); {} graph launch call(s); eager GEMM/norm/collective time {:.3} ms.",
        g.capture_mode,
        g.graph_kernels,
        g.graph_kernels + g.eager_kernels,
        g.coverage * 100.0,
        g.graph_launch_calls,
        g.capturable_eager_us / 1000.0
    )];
    text.extend(g.advice.clone());
    let s = section(
        "CUDA graphs",
        text,
        vec![t::graph_phases(d), t::eager_kernels(d)],
    );
    with_charts(s, doc, "CUDA-graph")
}

fn patterns(doc: &Document, d: &DrillReport) -> Section {
    let p = &d.patterns;
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
        vec![t::pattern_kernels(d), t::pattern_blocks(d)],
    );
    with_charts(s, doc, "Per-layer")
}

fn stragglers(doc: &Document, d: &DrillReport) -> Section {
    let s = &d.stragglers;
    let mut text = vec![match &s.rank {
        Some(r) => format!(
            "Straggler: device {} (pid {}, {}) arrives last in {:.1} % of {} collectives, {:.1} µs late on average.",
            r.device,
            r.pid,
            r.file,
            s.share * 100.0,
            s.collectives,
            s.mean_lateness_us
        ),
        None => format!(
            "No straggler: {} collectives matched; the most-often-last rank was last in {:.1} % (flagged above {:.0} %).",
            s.collectives,
            s.share * 100.0,
            s.threshold * 100.0
        ),
    }];
    text.extend(s.alignment.clone());
    text.extend(s.note.clone());
    let sec = section("Stragglers", text, vec![t::stragglers(d)]);
    with_charts(sec, doc, "Share of collectives")
}

fn kernels(doc: &Document) -> Section {
    let e = &doc.explain;
    let l = &e.launch_storm;
    let d = &e.launch_latency.distribution;
    let text = vec![
        format!(
            "{} kernels, {} distinct names, {:.3} ms of kernel time.",
            e.kernels.kernels,
            e.kernels.distinct_names,
            e.kernels.total_us / 1000.0
        ),
        format!(
            "Launch rate {:.0}/s ({:.0}/s in the busiest process), {:.1} % of kernels shorter than {:.0} µs: {}.",
            l.launches_per_s,
            l.max_process_launches_per_s,
            l.tiny_share * 100.0,
            l.tiny_threshold_us,
            if l.storm {
                "launch storm"
            } else {
                "no launch storm"
            }
        ),
        format!(
            "Launch latency (launch call end → kernel start, {} eager kernels): p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs (min {:.1}, max {:.1}).",
            e.launch_latency.kernels, d.p50_us, d.p90_us, d.p99_us, d.min_us, d.max_us
        ),
    ];
    let s = section("Kernels and launches", text, vec![t::top_kernels(doc)]);
    with_charts(s, doc, "Top kernels")
}

fn api_line(doc: &Document) -> String {
    let a = &doc.explain.api_calls;
    let whole = format!(
        "{} CUDA API call(s), {:.3} ms over the whole capture",
        a.calls,
        a.total_us / 1000.0
    );
    match doc.explain.window.basis {
        WindowBasis::Kernels => format!(
            "{whole}; {} of them, {:.3} ms, in {}.",
            a.in_window.calls,
            a.in_window.total_us / 1000.0,
            window_words(doc)
        ),
        WindowBasis::Capture => format!(
            "{whole} ({:.3} ms from the first to the last host event).",
            doc.explain.window.duration_us / 1000.0
        ),
    }
}

fn calls_line(doc: &Document) -> String {
    let (s, a) = (&doc.explain.syncs, &doc.explain.allocations);
    let per_step =
        |v: Option<f64>| v.map_or(String::new(), |n| format!(", {n:.1} per steady step"));
    let in_window = doc.explain.window.basis == WindowBasis::Kernels;
    let counted = |c: &CallSummary| {
        let window = match in_window {
            true => format!(
                ", {} in the kernel window, {:.3} ms",
                c.in_window.calls,
                c.in_window.total_us / 1000.0
            ),
            false => String::new(),
        };
        format!(
            "{} call(s), {:.3} ms over the whole capture{window}{}",
            c.calls,
            c.total_us / 1000.0,
            per_step(c.calls_per_step)
        )
    };
    format!(
        "Blocking syncs: {}; object creation and allocation: {}. The window is {}.",
        counted(s),
        counted(a),
        window_words(doc)
    )
}

fn memory_line(doc: &Document) -> String {
    let m = &doc.explain.memory;
    format!(
        "{} copies ({} pageable async, {} synchronous), {} memsets ({} synchronous) over the whole capture.",
        m.memcpy.iter().map(|k| k.count).sum::<u64>(),
        m.pageable_async_copies,
        m.synchronous_copies,
        m.memset.count,
        m.synchronous_memsets
    )
}

fn nvtx_line(doc: &Document) -> String {
    let n = &doc.explain.nvtx;
    if doc.drill.is_none() {
        return format!(
            "{} NVTX ranges over the whole capture; no kernel records, so no GPU time is attributed to them.",
            n.ranges
        );
    }
    format!(
        "{} NVTX ranges; {:.3} ms of {:.3} ms kernel time launched inside a range ({:.1} % coverage).",
        n.ranges,
        n.attributed_us / 1000.0,
        n.kernel_us / 1000.0,
        n.coverage * 100.0
    )
}
