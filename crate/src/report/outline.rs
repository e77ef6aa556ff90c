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
use crate::format::{count, duration_us as dur, percent};

/// A plot of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Bars(BarChart),
    Gaps(GapHistogram),
    Classes(crate::plot::kernel_classes::ClassBars),
    Skew(crate::plot::skew::SkewSeries),
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
            out.push(super::capture::section(detect));
            out.extend(whatif(doc));
            out.extend([
                gaps(d, detect),
                graphs(doc, d),
                patterns(doc, d),
                stragglers(doc, d),
                kernels(doc),
            ]);
            // Two ranks or more: who waits for whom at the collectives.
            out.extend(
                doc.ranks
                    .as_ref()
                    .filter(|r| r.ranks.len() > 1)
                    .map(ranks_section),
            );
            out.extend(kernel_classes(doc));
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

/// What bounds the run, first in the summary: the kind and the shares that decide it.
fn bound_line(b: &crate::detect::bound::Bound) -> String {
    format!("What bounds the run: {}.", b.sentence())
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

/// The summary's verdict without kernel records: the capture advice is stated once, in the
/// verdict's own section (`verdict_line`), and this line points there.
fn not_computed_line(doc: &Document) -> String {
    match &doc.verdict_not_computed {
        Some(n) => format!(
            "Host overhead verdict: {} ({}); how to capture kernels is said under Host-overhead verdict.",
            n.verdict, n.why
        ),
        None => "Host overhead verdict: not computed.".into(),
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
            not_computed_line(doc),
        ],
    };
    text.push(format!(
        "{}, {} on what could not be computed.",
        plural(doc.findings.len() as u64, "finding", "findings"),
        plural(doc.coverage.len() as u64, "note", "notes")
    ));
    section("Summary", text, Vec::new())
}

fn kernel_summary(doc: &Document, detect: &DetectReport, drill: &DrillReport) -> Vec<String> {
    let f = &detect.trace;
    let mut text: Vec<String> = detect.bound.iter().map(bound_line).collect();
    text.extend([
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
    ]);
    let idle = &drill.gaps.device_idle;
    if let Some(r) = &idle.reading {
        text.push(format!(
            "GPU-idle gaps: {}, {} ({} of device time), {r}.",
            plural(idle.gaps, "gap", "gaps"),
            dur(idle.total_us),
            percent(idle.idle_share)
        ));
    }
    text
}

fn gaps(d: &DrillReport, detect: &DetectReport) -> Section {
    let g = &d.gaps;
    let idle = &g.device_idle;
    let mut text = vec![format!(
        "Device-idle gaps (no kernel, graph replay, copy or memset on any stream): {}, {} = {} of {} device time; {}.",
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
            t::idle_causes(&d.idle),
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
    let sec = section("Stragglers", text, vec![t::stragglers(d)]);
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
    if e.launch_latency.queued {
        text.push(queued_launch_note(d.p50_us));
    }
    let s = section("Kernels and launches", text, vec![t::top_kernels(doc)]);
    with_charts(s, doc, "Top kernels")
}

/// What a fix would buy: the critical path of the steady steps, what bounds them by it next to
/// the verdict, and the standard set's predictions (`nsys-lens whatif`).
fn whatif(doc: &Document) -> Option<Section> {
    doc.whatif.as_ref().map(whatif_section)
}

/// The report's "What would it buy" of one what-if answer (the page's card shows it too).
pub fn whatif_section(w: &crate::whatif::WhatIf) -> Section {
    let p = &w.critical_path;
    let per_step = |v: Option<f64>| v.map_or_else(|| "—".to_string(), dur);
    let mut text = vec![match w.steps {
        0 => format!(
            "The GPU window ({}), replayed with unchanged costs: {} (error {:+.3} %); each prediction replays the export with one cost changed and its dependencies kept, and its gain is of the window.",
            dur(w.measured.window_us),
            dur(w.replayed.window_us),
            w.replay_error_pct
        ),
        n => format!(
            "The critical path of the {}: {} per step (measured {}, replayed with unchanged costs {}, error {:+.3} %), split by what it waited on below; each prediction replays the export with one cost changed and its dependencies kept.",
            plural(n as u64, "steady step", "steady steps"),
            dur(p.per_step_us),
            per_step(w.measured.wall_time_per_step_us),
            per_step(w.replayed.wall_time_per_step_us),
            w.replay_error_pct
        ),
    }];
    // Without steady steps there is no critical path to compare with the verdict.
    if w.steps > 0 {
        text.push(format!(
            "What bounds the steps: {} by their critical path; {} by the verdict's busy shares (host-overhead verdict {}).",
            w.bound.path.label(),
            w.bound.verdict.map_or("—", |b| b.label()),
            w.bound.host_verdict
        ));
        text.extend(w.bound.note.iter().map(|n| format!("Note: {n}.")));
    }
    if let Some(best) = w
        .predicted
        .iter()
        .filter_map(|x| x.gain_pct.map(|g| (g, x)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
    {
        let span = if w.steps == 0 { "window" } else { "step" };
        text.push(match best.0 < 0.0 {
            true => format!(
                "Of the changes below, {} buys most: the {span} {:.1} % shorter.",
                best.1.change, -best.0
            ),
            false => format!("None of the changes below shortens the {span}."),
        });
    }
    text.extend(w.notes.iter().map(|n| format!("Note: {n}.")));
    let mut tables = vec![t::whatif_predicted(w)];
    if w.steps > 0 {
        tables.extend([t::whatif_path(p), t::whatif_names(p)]);
    }
    section("What would it buy", text, tables)
}

/// Where a regression lies on the critical path (`whatif TARGET --baseline BASE`): the step
/// time's change split by part, and the names whose time on the path changed most.
pub fn regression_section(r: &crate::whatif::compare::PathRegression) -> Section {
    let pct = r
        .delta_pct
        .map_or_else(String::new, |p| format!(" ({p:+.1} %)"));
    let mut text = vec![format!(
        "The critical path per step went from {} to {}: {}{pct}; bound by the path: {} → {}. The parts' changes below sum to it.",
        dur(r.baseline_per_step_us),
        dur(r.target_per_step_us),
        signed_dur(r.delta_us),
        r.baseline_bound.label(),
        r.target_bound.label()
    )];
    if let Some(top) = r
        .parts
        .iter()
        .filter(|p| p.delta_us * r.delta_us > 0.0)
        .max_by(|a, b| a.delta_us.abs().total_cmp(&b.delta_us.abs()))
    {
        text.push(format!(
            "Most of the change lies in {}: {}{}.",
            top.label,
            signed_dur(top.delta_us),
            top.share_of_delta
                .map_or_else(String::new, |s| format!(", {:.0} % of it", 100.0 * s))
        ));
    }
    section(
        "Where the regression lies on the critical path",
        text,
        vec![t::regression_parts(r), t::regression_names(r)],
    )
}

/// Every rank, one answer (`nsys-lens ranks`): who arrives last at the collectives and by how
/// much, how long the ranks wait for each other vs transfer, and the clock each file was put on.
pub fn ranks_section(r: &crate::ranks::RanksReport) -> Section {
    let c = &r.collectives;
    let mut text = vec![format!(
        "{} over {}, {} matched collectives: skew (last arrival − first) mean {}, median {}, p90 {}, largest {}; transfer (the shortest duration across ranks) mean {}.",
        plural(r.ranks.len() as u64, "rank", "ranks"),
        plural(r.files.len() as u64, "file", "files"),
        count(c.count),
        dur(c.skew_us.mean),
        dur(c.skew_us.median),
        dur(c.skew_us.p90),
        dur(c.skew_us.max),
        dur(c.transfer_us.mean),
    )];
    text.push(match r.straggler.and_then(|i| r.ranks.get(i)) {
        Some(k) => format!(
            "{} arrives last in {} of its {} collectives, {} late on average (worst {}).",
            k.rank,
            percent(k.last_share),
            count(k.collectives),
            dur(k.mean_lateness_us),
            dur(k.worst_lateness_us)
        ),
        None => format!(
            "No straggler: no rank is last in more than {} of its collectives.",
            percent(r.threshold)
        ),
    });
    text.extend(r.cause.iter().map(|c| c.sentence.clone()));
    if r.files.len() > 1 {
        text.push(format!("Clock: {}.", r.clock.method));
    }
    text.extend(r.notes.iter().map(|n| format!("Note: {n}.")));
    let mut tables = vec![t::ranks_table(r), t::verdicts_table(r)];
    tables.extend(r.cause.as_ref().map(t::straggler_causes));
    tables.extend(
        r.cause
            .as_ref()
            .filter(|c| !c.ops.is_empty())
            .map(t::straggler_ops),
    );
    tables.push(t::worst_collectives(r));
    let mut s = section("Ranks at the collectives", text, tables);
    if r.files.len() > 1 {
        s.tables.push(t::clock_table(r));
    }
    s.charts.push(Chart::Skew(charts::skew_series(r)));
    s
}

fn signed_dur(us: f64) -> String {
    match us < 0.0 {
        true => format!("−{}", dur(-us)),
        false => format!("+{}", dur(us)),
    }
}

/// GPU time per kernel class over the whole kernel window: the table and its stacked bar.
fn kernel_classes(doc: &Document) -> Option<Section> {
    let k = doc.kernel_classes.as_ref()?;
    let text = vec![format!(
        "Summed GPU time of each class's rows over the whole kernel window ({}), per second of window: kernels by their name's class, copies, memsets and graph replays by their kind (the timeline's colours). Rows running at once on several streams each count, so the classes can add up to more than the GPU's busy time.",
        dur(k.divisor * 1e6)
    )];
    let mut s = section("Time per kernel class", text, vec![t::kernel_classes(k)]);
    let classes = crate::analyze::classes::KernelClasses {
        per_step: None,
        phases: Vec::new(),
        window: k.clone(),
    };
    s.charts.push(Chart::Classes(charts::kernel_class_bars(&[(
        doc.file.as_str(),
        &classes,
    )])));
    Some(s)
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
/// What a median launch latency of a millisecond or more means (`LaunchLatency::queued`).
fn queued_launch_note(p50_us: f64) -> String {
    format!(
        "Launches are queued: half of the kernels started {} or more after their launch call returned, so the host issues kernels that far ahead of the GPU and the GPU, not the launch path, sets the pace; this latency is time in the queue, not launch overhead.",
        dur(p50_us)
    )
}

fn negative_latency_note(min_us: f64) -> String {
    format!(
        "Some latencies are negative (down to {}): those kernels started before their launch call returned on the CPU, either because an idle GPU picked the kernel up while the call was still running or because the CPU and GPU clocks are skewed by up to that much; differences smaller than {} are not meaningful here.",
        dur(min_us),
        dur(min_us.abs())
    )
}
