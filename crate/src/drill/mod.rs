//! Kernel-level drill-down (spec §4, reference §9): inter-kernel gaps and where the GPU-idle
//! time went, CUDA-graph coverage, the per-layer kernel pattern and straggler ranks, over one
//! trace or several (one per rank).
//!
//! Every analysis is a fold over a trace's rows in start order ([`EventRows`]): the loaded
//! trace in the CLI, the file read row by row in the page, with the same code. Its state is per
//! device, stream, process, step or distinct name (and what is open or in flight at the
//! clock), never per kernel, call or range. [`RowIndex`] reads what several analyses need once
//! (devices, name classes, steps); each analysis is its own module; [`drill`] runs them all
//! ([`crate::findings`] reads what they found).

pub mod attribution;
pub mod gap_report;
pub mod gaps;
pub mod graphs;
pub mod idle;
pub mod patterns;
pub mod stragglers;
mod topk;

use serde::{Deserialize, Serialize};

use crate::detect::sweep::work::{WorkSummary, WorkTally};
use crate::error::{Error, Result};
use crate::index::Fold;
use crate::index::kernel_pass::{Rider, kernel_pass_riding};
use crate::model::rows::EventRows;
use crate::model::{CoverageNote, Ns};

pub use crate::index::rows::RowIndex;

/// Largest gaps (and eager kernel names) listed by default.
pub const DEFAULT_TOP: usize = 10;

/// What to drill into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DrillOptions {
    /// How many largest gaps and eager kernel names to list.
    pub top: usize,
    /// Count idle time in `[start, end)` ns (each file's own clock) instead of the trace's
    /// window (its first GPU operation to its last): each device's idle stretches cut to it,
    /// per-stream gaps kept when wholly inside it.
    pub window: Option<(Ns, Ns)>,
}

impl Default for DrillOptions {
    fn default() -> DrillOptions {
        DrillOptions {
            top: DEFAULT_TOP,
            window: None,
        }
    }
}

/// One trace given to the drill-down, with the name to show for it.
#[derive(Clone, Copy)]
pub struct DrillInput<'t> {
    /// Its rows: the loaded trace, or the file read row by row.
    pub rows: &'t dyn EventRows,
    pub label: &'t str,
    /// The user's step marker (`None`: the first built-in marker the trace shows).
    pub step_marker: Option<&'t crate::names::steps::StepSource>,
}

/// The drill-down's result: the analyses and what was not computed (its findings are
/// [`crate::findings::DrillFindings`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DrillReport {
    pub gaps: gap_report::GapReport,
    pub graphs: graphs::GraphReport,
    pub patterns: patterns::PatternReport,
    pub stragglers: stragglers::StragglerReport,
    pub files: Vec<String>,
    pub options: DrillOptions,
    /// Per file (as `files`), the step marker its steps were read under (`null`: none).
    pub step_markers: Vec<Option<crate::names::steps::StepMarkerReport>>,
    pub coverage: Vec<CoverageNote>,
    /// Where each device's idle time went (the gaps' causes come from the same attribution).
    pub idle: idle::IdleAttribution,
    /// What the GPU did: each device's busy time by kind and its copies, and what bounds the run
    /// by its GPU work alone (the drill-down has no verdict: never `host-bound`).
    pub gpu_work: crate::detect::bound::Bound,
}

/// Runs every drill-down over `inputs`. Fails when there is no input, an input has no kernels
/// or a read failed.
pub fn drill(inputs: &[DrillInput<'_>], opts: &DrillOptions) -> Result<DrillReport> {
    let indexed = index_inputs(inputs)?;
    drill_indexed(&indexed, opts)
}

/// Each input's [`RowIndex`]. Fails when there is no input, an input has no kernels or a read
/// failed.
pub fn index_inputs<'t>(inputs: &[DrillInput<'t>]) -> Result<Vec<RowIndex<'t>>> {
    if inputs.is_empty() {
        return Err(Error::Usage("drill needs at least one trace".into()));
    }
    let indexed = inputs
        .iter()
        .map(|i| RowIndex::new(i.rows, i.label, i.step_marker))
        .collect::<Result<Vec<RowIndex<'t>>>>()?;
    require_kernels(&indexed)?;
    Ok(indexed)
}

/// Fails when an indexed trace has no kernels, saying why.
pub fn require_kernels(indexed: &[RowIndex<'_>]) -> Result<()> {
    match indexed
        .iter()
        .find_map(|ix| Some((ix, ix.kernel_absence()?)))
    {
        Some((ix, absence)) => Err(absence.error(&ix.label)),
        None => Ok(()),
    }
}

/// [`drill`] over traces already indexed: per trace, one pass over its kernels feeds the gaps,
/// graphs, stragglers and the pattern's vote (each kernel joined to its launch call once); the
/// pattern's count and the top gaps' host activity take a pass each. Fails when a read failed.
pub fn drill_indexed(indexed: &[RowIndex<'_>], opts: &DrillOptions) -> Result<DrillReport> {
    drill_riding(indexed, opts, &mut [], None)
}

/// [`drill_indexed`], `riders[i]` riding on the passes over trace `i`'s kernels: its first
/// pass, then (for the first trace) the pattern's count when it is made. The gaps and idle
/// time are `swept`'s when given for one trace under the same options (another pass swept
/// them): the pass then does not sweep them again.
pub fn drill_riding(
    indexed: &[RowIndex<'_>],
    opts: &DrillOptions,
    riders: &mut [&mut dyn Rider],
    swept: Option<&gap_report::SweptGaps>,
) -> Result<DrillReport> {
    let swept = swept.filter(|s| indexed.len() == 1 && s.top == opts.top && opts.window.is_none());
    let mut gaps = gap_report::GapFolds::new(indexed, opts.top, opts.window);
    let offsets = stragglers::clock_offsets(indexed);
    let plan = indexed.first().map(patterns::PatternPlan::of);
    let (mut tallies, mut ranks, mut votes) = (Vec::new(), Vec::new(), None);
    let mut works: Vec<WorkSummary> = Vec::new();
    for (input, ix) in indexed.iter().enumerate() {
        let host = idle::HostCauses::new(ix);
        let mut input_gaps = swept.is_none().then(|| gaps.input((ix, input), &host));
        let mut graph = graphs::GraphFold::new(ix);
        let mut rank =
            stragglers::RankFold::new(ix, input, offsets.0.get(input).copied().unwrap_or(0));
        let mut vote = plan
            .as_ref()
            .filter(|_| input == 0)
            .map(|plan| patterns::VoteFold::new(ix, plan));
        let mut work = WorkFold::new(ix, opts.window);
        let mut folds: Vec<&mut dyn Fold> = vec![&mut graph, &mut rank, &mut work];
        if let Some(g) = input_gaps.as_mut() {
            folds.push(g);
        }
        if let Some(v) = vote.as_mut() {
            folds.push(v);
        }
        kernel_pass_riding(ix, &mut folds, riders.get_mut(input).map(|r| &mut **r));
        if let Some(g) = input_gaps {
            g.finish();
        }
        tallies.push(graph.finish());
        works.push(work.0.finish());
        ranks.extend(rank.finish());
        votes = votes.or(vote.map(patterns::VoteFold::finish));
    }
    riders.iter_mut().for_each(|r| r.first_pass_done());
    let (gaps, idle) = match (swept, indexed.first()) {
        (Some(swept), Some(ix)) => swept.labeled(&ix.label),
        _ => gaps.finish(indexed),
    };
    let patterns = match (indexed.first(), &plan, votes) {
        (Some(ix), Some(plan), Some(votes)) => {
            patterns::report_of(ix, plan, votes, riders.first_mut().map(|r| &mut **r))
        }
        _ => patterns::pattern_report(indexed),
    };
    let report = DrillReport {
        gaps,
        graphs: graphs::report_of(indexed, &tallies, opts.top),
        patterns,
        stragglers: stragglers::report_of(ranks, offsets.1),
        files: indexed.iter().map(|ix| ix.label.clone()).collect(),
        options: *opts,
        step_markers: indexed.iter().map(|ix| ix.steps.marker.clone()).collect(),
        coverage: indexed.iter().flat_map(coverage).collect(),
        idle,
        gpu_work: work_bound(indexed, works, opts.window),
    };
    for ix in indexed {
        ix.rows.check()?;
    }
    Ok(report)
}

/// Every GPU operation of one trace into its devices' busy time by kind (NCCL by the index's
/// collective names), inside the drill-down's window when it has one.
pub(crate) struct WorkFold<'i>(pub(crate) WorkTally, &'i RowIndex<'i>);

impl<'i> WorkFold<'i> {
    pub(crate) fn new(
        ix: &'i RowIndex<'i>,
        window: Option<(crate::model::Ns, crate::model::Ns)>,
    ) -> Self {
        WorkFold(WorkTally::new(window), ix)
    }
}

impl Fold for WorkFold<'_> {
    fn kernel(
        &mut self,
        k: &crate::model::rows::KernelRow,
        _: Option<&crate::model::rows::CallRow>,
    ) {
        let nccl = k.work == crate::model::Work::Kernel && self.1.names.is_collective(k.short_name);
        self.0.push(k, nccl);
    }
}

/// The bound of the inputs' GPU work over the window (the user's, or each trace's extent),
/// devices of every input summed.
fn work_bound(
    indexed: &[RowIndex<'_>],
    works: Vec<WorkSummary>,
    window: Option<(crate::model::Ns, crate::model::Ns)>,
) -> crate::detect::bound::Bound {
    let len = match window {
        Some((s, e)) => e - s,
        None => indexed
            .iter()
            .map(|ix| ix.extent.1 - ix.extent.0)
            .max()
            .unwrap_or(0),
    };
    let devices = works.into_iter().flat_map(|w| w.devices).collect();
    crate::detect::bound::classify(false, &WorkSummary { devices }, len)
}

/// What the drill-down could not see in one trace, each note with the trace's label: what
/// loading recorded (a missing table, once), then what the drill-down itself could not compute.
fn coverage(ix: &RowIndex<'_>) -> Vec<CoverageNote> {
    let t = ix.meta();
    let mut notes = Vec::new();
    let mut note = |subject: &str, reason: String| {
        notes.push(CoverageNote {
            subject: format!("{}: {subject}", ix.label),
            reason,
        })
    };
    for n in &t.coverage {
        note(&n.subject, n.reason.clone());
    }
    if !ix.rows.columns().kernel_streams {
        note(
            "gaps",
            "kernel streams not loaded: per-stream gaps treat each device as one stream".into(),
        );
    }
    if let Some(n) = call_coverage(ix) {
        note(&n.subject, n.reason);
    }
    if !t.present.osrt {
        note(
            "idle",
            "no OSRT_API table (capture without -t osrt): no idle time is given to blocking OS calls (osrt); it counts as nvtx, cpu_busy, cpu_waiting or untraced".into(),
        );
    }
    if t.present.nvtx && ix.steps.steps.is_empty() {
        note(
            "patterns, phases",
            "no forward-step NVTX ranges: the per-layer pattern is searched in the device's kernel sequence and no phase is reported".into(),
        );
    }
    notes
}

/// Steps in the context and generation phases, summed over inputs.
pub(crate) fn phase_steps(inputs: &[RowIndex<'_>]) -> [u64; 2] {
    let count = |p: &Option<crate::index::Phase>| p.as_ref().map_or(0, |p| p.steps);
    inputs.iter().fold([0, 0], |acc, ix| {
        [
            acc[0] + count(&ix.steps.context),
            acc[1] + count(&ix.steps.generation),
        ]
    })
}

/// What the runtime calls cannot show ([`crate::index::call_facts::coverage_note`]).
fn call_coverage(ix: &RowIndex<'_>) -> Option<CoverageNote> {
    let runtime = ix.meta().present.runtime;
    let correlations = ix.rows.columns().call_correlations;
    ix.calls.facts.coverage(runtime, correlations)
}
