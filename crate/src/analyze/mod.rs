//! Phase 2, root cause (spec §3, reference §7–§8): per-step breakdown of one trace, and the
//! comparison of a baseline with a target.
//!
//! [`crate::iterations`] isolates the benchmark; [`analyze_trace`] measures its steady state
//! per step (wall time, gaps, NVTX ops, kernels, CUDA APIs) in one of two profiles:
//! `trtllm-skill` reproduces `analyze_host_overhead.py` number for number (`skill`), `standard`
//! measures the same quantities with the reference's defects fixed (`standard`). [`compare()`]
//! turns two breakdowns into deltas, statuses, a conclusion and comparability warnings. Pure
//! folds over the trace's rows in start order ([`analyze_rows`], `crate::model::rows`): the
//! CLI runs them over the loaded [`Trace`], the page as the CLI does.

pub mod breakdown;
pub mod classes;
pub mod compare;
pub mod handoff;
mod nesting;
mod ops;
mod skill;
mod standard;
pub mod stats;
pub mod window;
pub mod workload;

pub use breakdown::TraceBreakdown;
pub use compare::{Comparison, compare};

use serde::Serialize;

use breakdown::{IsolationInfo, OpRow, PhaseInfo, per_step_map};
use handoff::{Criteria, Handoff, HandoffOp};
use stats::Stats;
use workload::KernelSpread;

use crate::error::{Error, Result};
use crate::index::Fold;
use crate::iterations::Isolation;
use crate::iterations::allreduce::{AllreduceFold, AllreduceIterations};
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{KernelAbsence, Ns, Trace, flag};
use crate::names::api::api_kind;
use crate::profile::Profile;
pub use window::DrillRead;

/// Settings of one trace's analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzeConfig {
    pub profile: Profile,
    /// `trtllm-skill` only: divides NVTX totals and counts (the reference's `--tp-size`).
    pub tp_size: u32,
    /// The trace's label in reports (`baseline`, `target`, a version …).
    pub label: String,
    /// Where the trace came from, for error messages (a path or a file name).
    pub source: String,
    /// The user's step marker (standard profile); `None`: the first built-in marker met.
    pub step_marker: Option<crate::names::steps::StepSource>,
}

impl Default for AnalyzeConfig {
    fn default() -> AnalyzeConfig {
        AnalyzeConfig {
            profile: Profile::Standard,
            tp_size: 1,
            label: "baseline".into(),
            source: "trace".into(),
            step_marker: None,
        }
    }
}

/// The whole result: `{"profile", "baseline", "target", "comparison"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalyzeReport {
    pub profile: &'static str,
    pub baseline: TraceBreakdown,
    pub target: Option<TraceBreakdown>,
    pub comparison: Option<Comparison>,
}

impl AnalyzeReport {
    /// Assembles the report, comparing when there is a target.
    pub fn new(
        profile: Profile,
        baseline: TraceBreakdown,
        target: Option<TraceBreakdown>,
    ) -> AnalyzeReport {
        let comparison = target.as_ref().map(|t| compare(&baseline, t, profile));
        AnalyzeReport {
            profile: profile.name(),
            baseline,
            target,
            comparison,
        }
    }
}

/// The `--tp-size` divisor to use: only the `trtllm-skill` profile divides NVTX totals by it
/// (the reference's rule); `standard` merges the ranks' copies itself, so asking for it there is
/// a usage error. `None` means 1.
pub fn tp_size_for(profile: Profile, tp_size: Option<u32>) -> Result<u32> {
    match (profile, tp_size) {
        (Profile::Standard, Some(_)) => Err(Error::Usage(
            "--tp-size applies to the trtllm-skill profile only: standard merges TP ranks' NVTX copies itself instead of dividing".into(),
        )),
        (_, Some(0)) => Err(Error::Usage("--tp-size must be at least 1".into())),
        (_, n) => Ok(n.unwrap_or(1)),
    }
}

/// The per-step breakdown of one loaded trace ([`analyze_rows`] over its tables).
pub fn analyze_trace(trace: &Trace, cfg: &AnalyzeConfig) -> Result<TraceBreakdown> {
    analyze_rows(trace, cfg)
}

/// The per-step breakdown of one trace, folded over its rows in start order (a few passes over
/// each table; what is held is per device, process, step and distinct name, plus the launches
/// in flight). Fails without kernels (nothing to isolate), with a zero `tp_size`, or when a
/// read of the rows failed.
pub fn analyze_rows(rows: &dyn EventRows, cfg: &AnalyzeConfig) -> Result<TraceBreakdown> {
    analyze_rows_measured(rows, cfg).map(|(b, _)| b)
}

/// What the folds of one analysis held at most: bounded by launches in flight and distinct
/// names, never by the kernels, calls or ranges of the trace (the boundedness tests read it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FoldPeaks {
    /// Launch calls held at once while joined to their kernels (`CallJoin::peak`).
    pub pending_launches: usize,
    /// NVTX ops with a group of TP ranks' copies open at once.
    pub open_op_groups: usize,
    /// NVTX ranges held open at once on one thread's stack (the nesting depth).
    pub nvtx_stack_depth: usize,
}

/// [`analyze_rows`] and the peaks of its folds.
pub fn analyze_rows_measured(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
) -> Result<(TraceBreakdown, FoldPeaks)> {
    let mut peaks = FoldPeaks::default();
    let b = analyze_rows_with(rows, cfg, &mut peaks, None)?;
    Ok((b, peaks))
}

/// [`analyze_rows`] and what a drill-down of the same rows would read of them again: drill's
/// index (read on the passes both profiles make anyway) and, under the standard profile, the
/// gaps its window pass swept. The page keeps it for the drill-down of the same trace.
pub fn analyze_rows_indexed(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
) -> Result<(TraceBreakdown, Option<DrillRead>)> {
    let mut kept = None;
    let b = analyze_rows_with(rows, cfg, &mut FoldPeaks::default(), Some(&mut kept))?;
    Ok((b, kept))
}

fn analyze_rows_with(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    peaks: &mut FoldPeaks,
    kept: Option<&mut Option<DrillRead>>,
) -> Result<TraceBreakdown> {
    require_kernels(rows, &cfg.source)?;
    if cfg.tp_size == 0 {
        return Err(Error::Usage("--tp-size must be at least 1".into()));
    }
    let b = match cfg.profile {
        Profile::TrtllmSkill => skill::breakdown(rows, cfg, kept)?,
        Profile::Standard => standard::breakdown(rows, cfg, peaks, kept.unwrap_or(&mut None))?,
    };
    rows.check()?;
    Ok(b)
}

/// Fails when the trace has no kernel, saying why (from the tables present and the launch
/// calls recorded).
fn require_kernels(rows: &dyn EventRows, source: &str) -> Result<()> {
    if rows.kernels().next().is_some() {
        return Ok(());
    }
    rows.check()?;
    let strings = &rows.meta().strings;
    let launches_kernels = strings.classify(|s| api_kind(s).launches_kernels());
    let launches = rows
        .calls()
        .filter(|c| flag(&launches_kernels, c.name))
        .count() as u64;
    rows.check()?;
    Err(KernelAbsence::of(&rows.meta().present, launches).error(source))
}

/// The allreduce iterations and the kernels' spread over processes and devices, folded over
/// a pass over the kernels (both profiles need both).
struct KernelFacts {
    allreduce: AllreduceFold,
    spread: KernelSpread,
}

impl KernelFacts {
    fn new(trace: &Trace) -> KernelFacts {
        KernelFacts {
            allreduce: AllreduceFold::new(&trace.strings),
            spread: KernelSpread::new(trace),
        }
    }

    fn finish(self) -> (AllreduceIterations, KernelSpread) {
        (self.allreduce.finish(), self.spread)
    }
}

impl Fold for KernelFacts {
    fn kernel(&mut self, k: &KernelRow, _launch: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            return;
        }
        self.allreduce.push(k);
        self.spread.push(k);
    }
}

/// Phases, benchmark iteration statistics and the explanation of the method.
fn isolation_info(
    iso: &Isolation,
    t0_ns: Ns,
    nvtx_steps_in_window: Option<usize>,
) -> IsolationInfo {
    let phases = iso
        .phases
        .iter()
        .map(|p| PhaseInfo {
            first: p.first,
            last: p.last,
            start_ns: iso.iterations.get(p.first).map_or(0, |i| i.start),
            end_ns: iso.iterations.get(p.last).map_or(0, |i| i.end),
            at_common_size: iso.common_count(p),
        })
        .collect();
    let bench = iso.benchmark_iterations();
    let walls: Vec<f64> = bench.iter().map(|i| i.wall_ns as f64 / 1000.0).collect();
    let gaps: Vec<f64> = bench
        .windows(2)
        .map(|w| (w[1].start - w[0].end) as f64 / 1000.0)
        .collect();
    IsolationInfo {
        reason: iso.reason.clone(),
        total_iterations: iso.iterations.len(),
        common_size: iso.common_size,
        phases,
        benchmark_phase: iso.benchmark,
        t0_ns,
        iteration_wall_us: Stats::of(&walls),
        iteration_gap_us: Stats::of(&gaps),
        nvtx_steps_in_window,
    }
}

/// The single-trace hand-off block: the heaviest NVTX ops per step, by self time where the rows
/// carry it (`standard`), so a parent is not listed for its children's work.
fn single_handoff(nvtx: &[OpRow], c: Criteria) -> Handoff {
    let own = |r: &OpRow| r.self_us_per_step.unwrap_or(r.us_per_step);
    let mut rows: Vec<&OpRow> = nvtx.iter().collect();
    rows.sort_by(|a, b| own(b).total_cmp(&own(a)).then(a.name.cmp(&b.name)));
    let ops = rows
        .iter()
        .map(|r| HandoffOp::new(&r.name, own(r), None))
        .collect();
    let seen_prep = nvtx.iter().any(|r| r.name.contains("_prepare_tp_inputs"));
    let self_time = nvtx.iter().any(|r| r.self_us_per_step.is_some());
    Handoff::new(ops, false, seen_prep, c).measured_as(self_time)
}

/// Fills the per-name maps and the hand-off block from the rows.
fn finish(mut b: TraceBreakdown) -> TraceBreakdown {
    b.nvtx_per_step_us = per_step_map(&b.nvtx_ops);
    b.kernel_time_per_step_us = per_step_map(&b.kernel_ops);
    b.api_time_per_step_us = per_step_map(&b.api_ops);
    b.handoff = single_handoff(
        &b.nvtx_ops,
        Criteria {
            wall_time_per_step_us: b.wall_time_per_step_us,
            inter_step_gap_p50_us: b.inter_step_gap_us.map(|g| g.p50),
            kernels_per_step: b.kernels_per_step,
        },
    );
    b
}
