//! Phase 1: is host (CPU) overhead the bottleneck? Metrics M1–M5, verdicts, phases (spec §2).
//!
//! One implementation serves both profiles; [`crate::profile::Switches`] say where they differ:
//! [`crate::steps`] finds the phases, [`sweep`] folds the kernels (one pass, start order) into a
//! [`KernelSummary`], [`measure`] computes a scope's metrics from it and the host part,
//! [`verdict`] applies thresholds, and this module assembles the [`DetectReport`].
//!
//! Thresholds act only in assembly: a summary can be re-assembled under edited thresholds.

pub mod beside;
pub mod bound;
pub mod capture;
pub mod catalogue;
pub mod config;
mod evidence;
#[cfg(not(target_arch = "wasm32"))]
pub mod folded;
pub mod host_facts;
pub mod launch_sweep;
pub mod measure;
pub mod name_tables;
pub mod result;
pub mod sweep;
pub mod verdict;

pub use crate::model::OutOfOrder;
pub use config::{DetectConfig, ScopeThresholds, ThresholdOverrides, Thresholds};
pub use host_facts::{HostFacts, HostFactsBuilder};
pub use result::DetectReport;
pub use sweep::{KernelSummary, KernelSweep, SweepInputs};

use crate::steps::PhaseCounts;
use crate::steps::spans::WindowFacts;
use launch_sweep::{LaunchSweepResult, Scope};
use measure::{Prepared, ScopeMeasure};
use result::{Metrics, PhaseResult, Phases, TraceFacts, WindowInfo};

use crate::error::{Error, Result};
use crate::model::rows::EventRows;
use crate::model::{CoverageNote, KernelAbsence, Trace};
use crate::profile::{Profile, Switches};
use crate::pyfmt;

/// Runs detection on a loaded trace. Fails only when there are no kernels to measure.
pub fn detect(trace: &Trace, cfg: &DetectConfig) -> Result<DetectReport> {
    // The host facts read NVTX in table order, as the reference's SQL sums do.
    detect_over(trace, HostFacts::new(trace, cfg), cfg)
}

/// Runs detection over the event rows of a trace, loaded or read from the file (the page's
/// verdict under another step marker or window): NVTX ranges into the host facts as they come,
/// then [`detect`]'s kernel pass and assembly. Gives [`detect`]'s report (a `trtllm-skill` sum
/// over an NVTX table not in start order may differ in its last digit: the rows come sorted).
pub fn detect_rows(rows: &dyn EventRows, cfg: &DetectConfig) -> Result<DetectReport> {
    let host = rows.meta();
    let mut builder = HostFactsBuilder::new(&host.strings, cfg);
    for range in rows.ranges() {
        // Ranges come in start order, so their steps do too; say so if they ever did not.
        builder
            .push(&range, &host.strings, &host.threads, &mut ())
            .map_err(|_| corrupt(cfg, "forward steps out of start order"))?;
    }
    rows.check()?;
    detect_over(rows, builder.finish(host.processes.len(), &mut ()), cfg)
}

/// The rows [`detect_rows`] reads under `profile`, from each table's count
/// (`FileScan::table_rows`): every CUDA API call and NVTX range once, and the GPU work its busy
/// time is made of (every kernel, graph replay, copy and memset; `trtllm-skill`: kernels only);
/// no sync. The page's progress while the verdict is computed counts against it.
pub fn rows_read(table_rows: &[(&str, u64)], profile: Profile) -> u64 {
    verdict_passes(table_rows, &[], profile)
        .iter()
        .map(|p| p.rows)
        .sum()
}

/// A pass of [`detect_rows`]: the rows it reads and its time per row against an API call read
/// from the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerdictPass {
    pub rows: u64,
    pub weight: f64,
}

/// A pass's time per row against an API call read from the file: read from the file, and
/// unpacked from the rows the scan kept.
struct PassCost {
    read: f64,
    kept: f64,
}

/// Measured in the page (`docs/performance.md`): read from the file, on the 10 GB generated
/// export, which keeps no row; an NVTX range 1.45, a GPU operation 2.0. A GPU operation kept,
/// on a 445 MiB TP=4 rank file that keeps its kernels: 0.35. Kept NVTX ranges and calls, on
/// the 1 GB generated export, which keeps every row: 0.57 and 0.22 of a kept GPU operation's
/// time (0.182, 0.319 and 0.069 µs a row).
const RANGE: PassCost = PassCost {
    read: 1.45,
    kept: 0.20,
};
const GPU_WORK: PassCost = PassCost {
    read: 2.0,
    kept: 0.35,
};
const CALL: PassCost = PassCost {
    read: 1.0,
    kept: 0.076,
};

/// The passes of [`detect_rows`] under `profile` in the order they run: the NVTX ranges (the
/// steps), the GPU work (the kernel sweep over the rows `profile` counts as busy: kernels, graph
/// replays, copies, memsets; `trtllm-skill` kernels only), the CUDA API calls (the launch
/// sweep); `kept_rows`: the rows of each table the scan kept (`FileScan::kept_rows`; none when
/// empty). The page's time estimate places the passes not yet begun by their weights; a pass's
/// cost per row depends on the export too (its folds), which only its own pace shows.
pub fn verdict_passes(
    table_rows: &[(&str, u64)],
    kept_rows: &[(&str, u64)],
    profile: Profile,
) -> [VerdictPass; 3] {
    let sum = |counts: &[(&str, u64)], tables: &[&str]| -> u64 {
        counts
            .iter()
            .filter(|(table, _)| tables.contains(table))
            .map(|(_, rows)| rows)
            .sum()
    };
    let pass = |tables: &[&str], cost: PassCost| {
        let rows = sum(table_rows, tables);
        let kept = match rows {
            0 => 0.0,
            _ => (sum(kept_rows, tables) as f64 / rows as f64).clamp(0.0, 1.0),
        };
        VerdictPass {
            rows,
            weight: cost.read + (cost.kept - cost.read) * kept,
        }
    };
    let busy: Vec<&str> = profile
        .switches()
        .busy_tables()
        .iter()
        .map(|&table| crate::trace::work_table_name(table))
        .collect();
    [
        pass(&[crate::trace::NVTX_TABLE], RANGE),
        pass(&busy, GPU_WORK),
        pass(&[crate::trace::RUNTIME_TABLE], CALL),
    ]
}

/// One kernel pass over `rows` for `host_facts`, then the report (M2 swept from the rows' launch
/// calls in the aggregate window).
fn detect_over(
    rows: &dyn EventRows,
    mut host_facts: HostFacts,
    cfg: &DetectConfig,
) -> Result<DetectReport> {
    let mut sweep = KernelSweep::of(host_facts.sweep_inputs(cfg));
    for k in host_facts.sw.busy_rows(rows) {
        // The rows come in start order (a table's sorted runs merged): this fails only when the
        // file reads back otherwise than it was scanned (a damaged b-tree: rows whose rowids
        // repeat or run backwards).
        sweep.push(k).map_err(|e| {
            let detail = format!(
                "the kernel table reads back otherwise than it was scanned: row {} at {} ns came after one at {} ns",
                e.row, e.start, e.previous
            );
            corrupt(cfg, &detail)
        })?;
    }
    rows.check()?;
    detect_summarized(rows, host_facts, (sweep.finish(), None), cfg)
}

/// [`detect_over`] once the kernels are swept (and the launch calls, if they were as they were
/// read: else the launch sweep is a pass).
fn detect_summarized(
    rows: &dyn EventRows,
    host_facts: HostFacts,
    (kernels, launches): (KernelSummary, Option<LaunchSweepResult>),
    cfg: &DetectConfig,
) -> Result<DetectReport> {
    if kernels.facts.gpu_ops == 0 {
        let launches = Prepared::new(rows, &host_facts, &kernels).launch_api_calls();
        rows.check()?;
        return Err(KernelAbsence::of(&rows.meta().present, launches).error(&cfg.file_label));
    }
    let report = assemble(rows, &host_facts, (&kernels, launches), cfg);
    rows.check()?;
    report
}

/// A row source broke an ordering it guarantees.
fn corrupt(cfg: &DetectConfig, detail: &str) -> Error {
    Error::Corrupt {
        path: cfg.file_label.clone(),
        detail: detail.to_string(),
    }
}

/// The report from the host part, its facts and the kernel summary.
fn assemble(
    rows: &dyn EventRows,
    host_facts: &HostFacts,
    (kernels, launches): (&KernelSummary, Option<LaunchSweepResult>),
    cfg: &DetectConfig,
) -> Result<DetectReport> {
    let host = rows.meta();
    let sw = host_facts.sw;
    let thresholds = cfg.thresholds.resolve(&sw);
    let prepared = Prepared::with_launches(rows, host_facts, kernels, launches);
    let window_source = match (cfg.window.is_some(), sw.gpu_work) {
        (true, _) => "user",
        (false, true) => "gpu-work",
        (false, false) => "kernels",
    };
    let aggregate = prepared.measure(Scope::Aggregate, &kernels.aggregate);
    let phase =
        |which: Scope, p: &Option<PhaseCounts>, s: &Option<sweep::ScopeSummary>, t: &Thresholds| {
            p.as_ref()
                .zip(s.as_ref())
                .map(|(p, s)| phase_result(&prepared, which, p, s, t))
        };
    let phases = Phases {
        context: phase(
            Scope::Context,
            &host_facts.context,
            &kernels.context,
            &thresholds.context,
        ),
        generation: phase(
            Scope::Generation,
            &host_facts.generation,
            &kernels.generation,
            &thresholds.generation,
        ),
    };

    let outcome = verdict::apply(&aggregate.metrics, &thresholds.aggregate);
    let overall = verdict::overall(
        [
            Some(outcome.verdict),
            phases.context.as_ref().map(|p| p.verdict),
            phases.generation.as_ref().map(|p| p.verdict),
        ]
        .into_iter()
        .flatten(),
    );
    // The verdict reads no synchronization: a note on that table belongs to the views that do,
    // whichever load (the CLI's for the verdict, or every table's) the rows came from.
    let mut coverage: Vec<_> = host
        .coverage
        .iter()
        .filter(|n| n.subject != crate::trace::SYNC_TABLE)
        .cloned()
        .collect();
    coverage.extend(detect_coverage(
        &prepared,
        &aggregate,
        host_facts.steps.steps,
        host_facts.step_marker.as_ref().is_some_and(|m| !m.auto),
    ));
    let mut warnings = evidence::warnings(&prepared, &aggregate, host_facts.steps);
    let capture = capture::check(&capture::CaptureInputs {
        file: &cfg.file_label,
        host,
        kernels,
        forward_steps: host_facts.steps.steps,
        launch_api_calls: prepared.launch_api_calls(),
        metrics: &aggregate.metrics,
        thresholds: &thresholds.aggregate,
        phase_spans: [&host_facts.context, &host_facts.generation]
            .map(|p| p.as_ref().and_then(|p| p.facts.hull)),
    });
    let cautions: Vec<String> = capture
        .verdict_cautions()
        .iter()
        .map(|c| c.evidence.clone())
        .collect();
    warnings.extend(cautions.iter().map(|c| format!("capture: {c}")));

    // As `analyze` infers: graph launches first, then the kernel stream.
    let inferred = host_facts
        .step_marker
        .is_none()
        .then(|| prepared.graph_steps().cloned().or(kernels.inferred.clone()))
        .flatten();
    let mut report = DetectReport {
        verdict: overall,
        aggregate_metrics: output_metrics(&aggregate.metrics, &sw),
        crossed_count: outcome.crossed_count,
        applicable_count: outcome.applicable_count,
        host_prep_confirmed: outcome.host_prep_confirmed,
        nccl_caveat: outcome.nccl_caveat,
        crossed_details: outcome.crossed,
        phases,
        bound: kernels
            .work
            .as_ref()
            .map(|w| bound::classify(overall == "YES", w, kernels.aggregate.window.measure)),
        profile: cfg.profile.name(),
        window: window_info(
            &kernels.aggregate.window,
            aggregate.window_us,
            window_source,
        ),
        step_marker: host_facts.step_marker.clone(),
        inferred_steps: inferred.clone(),
        step_source: catalogue::step_source(host_facts.step_marker.as_ref(), inferred.as_ref()),
        thresholds,
        evidence: evidence::table(&prepared, &aggregate, &thresholds.aggregate, &outcome),
        per_device: evidence::devices(&prepared, &aggregate),
        per_process: evidence::processes(&prepared, &aggregate),
        trace: facts(
            host,
            kernels,
            cfg,
            host_facts.steps.steps,
            prepared.launch_api_calls(),
        ),
        coverage,
        warnings,
        summary: String::new(),
        capture,
    };
    report.summary = catalogue::summary(&report);
    if !cautions.is_empty() {
        report.summary = format!(
            "{} Caution, the capture cannot fully support this verdict: {}.",
            report.summary,
            cautions.join("; ")
        );
    }
    Ok(report)
}

fn phase_result(
    prepared: &Prepared<'_>,
    which: Scope,
    p: &PhaseCounts,
    scope: &sweep::ScopeSummary,
    t: &Thresholds,
) -> PhaseResult {
    let m = prepared.measure(which, scope);
    let o = verdict::apply(&m.metrics, t);
    let source = if prepared.sw.phase_window == crate::profile::PhaseWindow::Span {
        "steps-span"
    } else {
        "steps-union"
    };
    PhaseResult {
        iteration_count: p.steps,
        verdict: o.verdict,
        crossed_count: o.crossed_count,
        applicable_count: o.applicable_count,
        host_prep_confirmed: o.host_prep_confirmed,
        metrics: output_metrics(&m.metrics, &prepared.sw),
        nccl_caveat: o.nccl_caveat,
        crossed_details: o.crossed,
        window: window_info(&p.facts, m.window_us, source),
        thresholds: *t,
        evidence: evidence::table(prepared, &m, t, &o),
        per_device: evidence::devices(prepared, &m),
        per_process: evidence::processes(prepared, &m),
        raw_step_count: p.raw_steps,
        bound: scope
            .work
            .as_ref()
            .map(|w| bound::classify(o.verdict == "YES", w, scope.window.measure)),
    }
}

/// Reference keys carry 4-decimal values in `trtllm-skill`, unrounded values in `standard`.
fn output_metrics(m: &Metrics, sw: &Switches) -> Metrics {
    if !sw.round_4dp {
        return *m;
    }
    let r = |v: Option<f64>| v.map(|x| pyfmt::round(x, 4));
    Metrics {
        gpu_idle_ratio: r(m.gpu_idle_ratio),
        launch_overhead_ratio: r(m.launch_overhead_ratio),
        gpu_utilization: r(m.gpu_utilization),
        nccl_ratio: r(m.nccl_ratio),
        host_prep_exposed_ratio: r(m.host_prep_exposed_ratio),
        host_prep_perf_impact: r(m.host_prep_perf_impact),
        host_prep_idle_attribution: r(m.host_prep_idle_attribution),
    }
}

fn window_info(w: &WindowFacts, duration_us: f64, source: &'static str) -> WindowInfo {
    let (start_ns, end_ns) = w.hull.unwrap_or((0, 0));
    WindowInfo {
        start_ns,
        end_ns,
        duration_us,
        intervals: w.pieces,
        source,
    }
}

/// What detection itself could not compute, beyond what loading recorded.
fn detect_coverage(
    p: &Prepared<'_>,
    agg: &ScopeMeasure,
    steps: usize,
    custom_marker: bool,
) -> Vec<CoverageNote> {
    let mut notes = Vec::new();
    let mut note = |subject: &str, reason: String| {
        notes.push(CoverageNote {
            subject: subject.into(),
            reason,
        })
    };
    if p.trace.present.nvtx && steps == 0 && custom_marker {
        note(
            "phases",
            "no NVTX range matches the chosen step marker: context/generation phases not computed"
                .into(),
        );
    } else if p.trace.present.nvtx && steps == 0 {
        let how = if p.sw.nvtx_text_fallback {
            ""
        } else {
            " with a textId name (this profile ignores inline NVTX text)"
        };
        let markers = if p.sw.name_match == crate::names::patterns::NameMatch::SqliteLike {
            "`[Executor] _forward_step N: C ctx reqs, G gen reqs`".to_string()
        } else {
            crate::names::steps::StepStyle::ALL
                .map(|s| format!("`{}`", s.pattern()))
                .join(", ")
        };
        note(
            "phases",
            format!(
                "no step-marker NVTX ranges ({markers}){how}: context/generation phases not computed; give --step-regex or --phase-map"
            ),
        );
    }
    if p.skip_m3 {
        note(
            "host_prep",
            "--no-m3: host-prep metrics (M3a/b/c) skipped".into(),
        );
    } else if p.kernels.device_masks_overflow {
        note(
            "host_prep",
            format!(
                "more than {} devices ran kernels: per-process host-prep exposure (M3a/b/c) needs a set of busy devices per instant and was not computed",
                sweep::MAX_MASK_DEVICES
            ),
        );
    } else if agg.metrics.host_prep_exposed_ratio.is_none() && p.trace.present.nvtx {
        note(
            "host_prep",
            "no NVTX range named *_prepare_tp_inputs / *_prepare_inputs / *prepare_inputs in the window: host-prep metrics (M3a/b/c) not applicable".into(),
        );
    }
    notes
}

/// Processes that launched at least one kernel (the export also lists every other process).
fn gpu_processes(host: &Trace, kernels: &KernelSummary) -> usize {
    let known = host.processes.len();
    kernels
        .facts
        .processes
        .iter()
        .filter(|&&p| (p as usize) < known)
        .count()
}

fn facts(
    trace: &Trace,
    kernels: &KernelSummary,
    cfg: &DetectConfig,
    steps: usize,
    launch_api_calls: u64,
) -> TraceFacts {
    TraceFacts {
        file: cfg.file_label.clone(),
        nsys_version: trace.meta.nsys_version.clone(),
        export_schema_version: trace.meta.schema_version.clone(),
        gpus: trace.gpus.iter().map(|g| g.name.clone()).collect(),
        devices: kernels.facts.devices.clone(),
        processes: gpu_processes(trace, kernels),
        kernels: kernels.facts.kernels,
        launch_api_calls,
        nvtx_ranges: trace.nvtx.total(),
        forward_steps: steps as u64,
        cuda_graph_trace: trace
            .meta
            .capture_option("CUDA_GRAPH_TRACE_OPTIONS:MODE")
            .map(str::to_string),
    }
}
