//! The `trtllm-skill` profile: `analyze_host_overhead.py`'s `analyze_single_trace` (reference
//! §8.2), number for number, including its known defects (§4 rows 12–15): steady state over
//! the whole trace, TP duplicates divided by `--tp-size`, top-15 kernels and APIs only.

use super::breakdown::{OpRow, SteadyInfo, TraceBreakdown, WindowNs};
use super::ops::Tallies;
use super::stats::Stats;
use super::window::DrillRead;
use super::workload::Workload;
use super::{AnalyzeConfig, KernelFacts, finish, isolation_info};
use crate::error::Result;
use crate::index::Fold;
use crate::index::rows::RowIndex;
use crate::iterations::forward_steps::{
    ReferenceSteps, Steady, iteration, merged_steps, steady_reference,
};
use crate::iterations::{Isolation, Iteration, isolate};
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{NO_NAME, NameId, Ns, NvtxRow, Strings};
use crate::profile::Profile;
use crate::pyfmt;
use crate::sqlike::Like;
use crate::steps::{Step, visible_row_name};

/// NVTX rows kept in the breakdown, kernel and API rows kept (the script's `LIMIT`s).
const NVTX_LIMIT: usize = 30;
const KERNEL_LIMIT: usize = 15;
const API_LIMIT: usize = 15;
/// The script analyses the steady state only with at least this many unique steady steps.
const MIN_STEADY: usize = 5;

/// The `trtllm-skill` breakdown of `rows`; with `kept`, drill's index is read on its first
/// passes and left there (the page keeps it for the drill-down of the same trace).
pub fn breakdown(
    rows: &dyn EventRows,
    cfg: &AnalyzeConfig,
    kept: Option<&mut Option<DrillRead>>,
) -> Result<TraceBreakdown> {
    let t0 = rows.kernels().next().map_or(0, |k| k.start);
    let steps = ReferenceSteps::new(&rows.meta().strings);
    let FirstPasses { facts, ranges, .. } = FirstPasses::read(rows, cfg, &steps, kept)?;
    let (allreduce, spread) = facts.finish();
    let (raw, marker) = steps.read(rows, ranges.steps);
    drop(steps); // its parsed step per string
    let (iterations, context) = merged_iterations(&raw);
    let generation = iterations.len() - context;
    let iso = isolate(allreduce, iterations.into_iter(), raw.len(), None);
    // The raw steps become the steady ones: all that is read below.
    let steady = (!raw.is_empty()).then(|| steady_reference(raw));
    let workload = Workload::from_spread(
        rows.meta(),
        spread,
        steady.as_ref().map(|s| s.max_gen),
        context,
        generation,
    );
    let mut b = empty(cfg, &iso, t0, workload, ranges.inline_only);
    b.step_marker = marker;
    if b.isolation.benchmark_phase.is_none() {
        b.warnings.push(format!(
            "Could not identify benchmark phase: no phase of ≥ 5 iterations with at least half at the most common size ({} iterations in {} phases); the reference skips the steady-state analysis",
            iso.iterations.len(),
            iso.phases.len()
        ));
        return Ok(finish(b));
    }
    b.iterations = Some(iso.benchmark_iterations().len());
    b.benchmark_window = iso
        .benchmark_window()
        .map(|(start_ns, end_ns)| WindowNs { start_ns, end_ns });
    let Some(steady) = steady else {
        b.warnings
            .push("No [Executor] _forward_step NVTX ranges found.".into());
        b.steady_steps = Some(0);
        return Ok(finish(b));
    };
    let n = steady.steps.len();
    b.steady_steps = Some(n);
    if n < MIN_STEADY {
        b.steady = Some(SteadyInfo {
            max_gen: steady.max_gen,
            ranges: steady.raw_count,
            per_step_divisor: n,
            step_duration_us: Stats::default(),
            inter_step_gap_us: Stats::default(),
            window: WindowNs {
                start_ns: 0,
                end_ns: 0,
            },
            window_us: 0.0,
        });
        b.warnings.push(format!(
            "only {n} unique steady-state steps (0 ctx, {} gen): the reference needs at least {MIN_STEADY} for per-step figures",
            steady.max_gen
        ));
        return Ok(finish(b));
    }
    if let Some(w) = outside_benchmark(&steady.steps, iso.benchmark_window()) {
        b.warnings.push(w);
    }
    per_step(rows, cfg, &mut b, &steady);
    Ok(finish(b))
}

/// The reference takes the steady state from the whole trace (§4 row 13): say so when that
/// pulls in steps outside the benchmark window (warm-up, teardown), and the pauses with them.
fn outside_benchmark(steady: &[Step], window: Option<(Ns, Ns)>) -> Option<String> {
    let (ws, we) = window?;
    let outside = steady
        .iter()
        .filter(|m| m.end <= ws || m.start >= we)
        .count();
    (outside > 0).then(|| {
        format!(
            "{outside} of the {} steady-state steps lie outside the benchmark window: the reference's steady-state span covers them and the pauses around them, inflating the per-step figures (the standard profile measures inside the benchmark window only)",
            steady.len()
        )
    })
}

/// What a pass over the kernels and one over the NVTX ranges fold before the steps are read:
/// passes of their own, or drill's index's.
struct FirstPasses<'s> {
    facts: KernelFacts,
    ranges: RangeCounts,
    steps: &'s ReferenceSteps,
}

impl<'s> FirstPasses<'s> {
    /// Folded over drill's index's passes when `kept` asks for the index (left there), else
    /// over a pass of their own over each table.
    fn read(
        rows: &dyn EventRows,
        cfg: &AnalyzeConfig,
        steps: &'s ReferenceSteps,
        kept: Option<&mut Option<DrillRead>>,
    ) -> Result<FirstPasses<'s>> {
        let mut first = FirstPasses {
            facts: KernelFacts::new(rows.meta()),
            ranges: RangeCounts::default(),
            steps,
        };
        match kept {
            Some(kept) => {
                let marker = cfg.step_marker.as_ref();
                let index = RowIndex::visiting(rows, "trace", marker, &mut first)?;
                *kept = Some(DrillRead {
                    index: index.into_facts(),
                    gaps: None,
                });
            }
            None => {
                rows.kernels().for_each(|k| first.kernel(&k, None));
                rows.ranges().for_each(|r| first.range(&r));
            }
        }
        Ok(first)
    }
}

/// The iteration of each step `raw` merges into over TP ranks, and how many of those steps
/// carry context requests. The merged steps are read as they come, twice (to count them, then
/// to list their iterations): a long trace has a step per range, and no list of them is held
/// beside `raw`.
fn merged_iterations(raw: &[Step]) -> (Vec<Iteration>, usize) {
    let (mut count, mut context) = (0, 0);
    for m in merged_steps(raw) {
        count += 1;
        context += usize::from(m.step.name.ctx > 0);
    }
    let mut iterations = Vec::with_capacity(count);
    iterations.extend(merged_steps(raw).map(|m| iteration(&m.step, m.longest_ns)));
    (iterations, context)
}

impl Fold for FirstPasses<'_> {
    fn kernel(&mut self, k: &KernelRow, _launch: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            return;
        }
        self.facts.kernel(k, None);
    }

    fn range(&mut self, r: &NvtxRow) {
        self.ranges.steps += usize::from(self.steps.step(r).is_some());
        self.ranges.inline_only += usize::from(r.text_id_name == NO_NAME && r.name != NO_NAME);
    }
}

/// What the pass over the NVTX ranges counts.
#[derive(Default)]
struct RangeCounts {
    /// The forward-step ranges ([`ReferenceSteps::step`]).
    steps: usize,
    /// Ranges named in the `text` column only, which the reference's join on `textId` drops.
    inline_only: usize,
}

/// Everything but the per-step figures.
fn empty(
    cfg: &AnalyzeConfig,
    iso: &Isolation,
    t0: Ns,
    workload: Workload,
    inline_only: usize,
) -> TraceBreakdown {
    let mut warnings = Vec::new();
    if inline_only > 0 {
        warnings.push(format!(
            "{inline_only} NVTX ranges carry their name only in the `text` column: the reference joins on textId and does not see them (the standard profile does)"
        ));
    }
    let mut b = TraceBreakdown::new(
        &cfg.label,
        Profile::TrtllmSkill,
        cfg.tp_size,
        iso.method,
        isolation_info(iso, t0, None),
        workload,
    );
    b.warnings = warnings;
    b
}

/// Reference §8.2 step 6, for at least five unique steady steps.
fn per_step(rows: &dyn EventRows, cfg: &AnalyzeConfig, b: &mut TraceBreakdown, steady: &Steady) {
    let unique = &steady.steps;
    let n = unique.len() as f64;
    let durations: Vec<f64> = steady
        .longest_ns
        .iter()
        .map(|&ns| ns as f64 / 1000.0)
        .collect();
    let gaps: Vec<f64> = unique
        .windows(2)
        .map(|w| (w[1].start - w[0].end) as f64 / 1000.0)
        .collect();
    let (ss_start, ss_end) = match (unique.first(), unique.last()) {
        (Some(f), Some(l)) => (f.start, l.end),
        _ => return,
    };
    let ss_wall = (ss_end - ss_start) as f64 / 1000.0;
    let gap_stats = Stats::of(&gaps);
    b.steady = Some(SteadyInfo {
        max_gen: steady.max_gen,
        ranges: steady.raw_count,
        per_step_divisor: unique.len(),
        step_duration_us: Stats::of(&durations),
        inter_step_gap_us: gap_stats,
        window: WindowNs {
            start_ns: ss_start,
            end_ns: ss_end,
        },
        window_us: ss_wall,
    });
    b.wall_time_per_step_us = Some(ss_wall / n);
    b.inter_step_gap_us = Some(gap_stats.percentiles());
    b.step_wall_times_us = unique
        .windows(2)
        .map(|w| (w[1].start - w[0].start) as f64 / 1000.0)
        .collect::<Vec<f64>>()
        .into();
    let tp = f64::from(cfg.tp_size);
    b.nvtx_ops = nvtx_rows(rows, ss_start, ss_end, |v| v / tp / n);
    let (strings, span) = (&rows.meta().strings, (ss_start, ss_end));
    let kernels = rows.kernels().map(|k| (k.short_name, k.start, k.end));
    b.kernel_ops = top_rows(strings, kernels, span, KERNEL_LIMIT, n);
    let calls = rows.calls().map(|c| (c.name, c.start, c.end));
    b.api_ops = top_rows(strings, calls, span, API_LIMIT, n);
    b.gpu_time_per_step_us = Some(pyfmt::naive_sum(b.kernel_ops.iter().map(|r| r.total_us)) / n);
    b.kernels_per_step = Some(b.kernel_ops.iter().map(|r| r.calls).sum::<u64>() as f64 / n);
}

/// Ranges fully inside `[ss_start, ss_end]` not named `LIKE '%[Executor]%'`, top 30 by total.
fn nvtx_rows(
    rows: &dyn EventRows,
    ss_start: Ns,
    ss_end: Ns,
    per_step: impl Fn(f64) -> f64,
) -> Vec<OpRow> {
    let sw = Profile::TrtllmSkill.switches();
    let executor = Like::new("%[Executor]%");
    let strings = &rows.meta().strings;
    let excluded = strings.classify(|s| executor.matches(s));
    let mut t = Tallies::default();
    for r in rows.ranges() {
        let Some(name) = visible_row_name(&r, &sw) else {
            continue;
        };
        let (s, e) = (r.start, r.end);
        if s >= ss_start && e <= ss_end && !crate::model::flag(&excluded, name) {
            t.add(strings.get(name), e - s);
            t.instance(strings.get(name), (s, e));
        }
    }
    t.rows(Some(NVTX_LIMIT), per_step)
}

/// Events `(name, start, end)` starting in `[ss_start, ss_end)` with a name, by name, the top
/// `limit` by total (kernels by short name, CUDA API calls).
fn top_rows(
    strings: &Strings,
    events: impl Iterator<Item = (NameId, Ns, Ns)>,
    (ss_start, ss_end): (Ns, Ns),
    limit: usize,
    n: f64,
) -> Vec<OpRow> {
    let kept =
        events.filter(|&(name, start, _)| (ss_start..ss_end).contains(&start) && name != NO_NAME);
    Tallies::of(strings, kept).rows(Some(limit), |v| v / n)
}
