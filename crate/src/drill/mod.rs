//! Kernel-level drill-down (spec §4, reference §9): inter-kernel gaps and where the GPU-idle
//! time went, CUDA-graph coverage, the per-layer kernel pattern and straggler ranks, over one
//! trace or several (one per rank).
//!
//! [`crate::index::TraceIndex`] prepares each trace once (kernels per device in time order, the
//! launch-call join, name classes, steps); each analysis is its own module; [`drill`] runs them
//! all ([`crate::findings`] reads what they found). Pure functions over loaded traces: the page calls
//! the same code as the CLI.

pub mod attribution;
pub mod gap_report;
pub mod gaps;
pub mod graphs;
pub mod idle;
pub mod patterns;
pub mod stragglers;
mod topk;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{CoverageNote, Ns, Trace};

pub use crate::index::TraceIndex;

/// Largest gaps (and eager kernel names) listed by default.
pub const DEFAULT_TOP: usize = 10;

/// What to drill into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DrillOptions {
    /// How many largest gaps and eager kernel names to list.
    pub top: usize,
    /// Keep only gaps fully inside `[start, end)` ns (each file's own clock).
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
#[derive(Debug, Clone, Copy)]
pub struct DrillInput<'t> {
    pub trace: &'t Trace,
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
}

/// Runs every drill-down over `inputs`. Fails when there is no input or an input has no kernels.
pub fn drill(inputs: &[DrillInput<'_>], opts: &DrillOptions) -> Result<DrillReport> {
    check_inputs(inputs)?;
    let indexed: Vec<TraceIndex<'_>> = inputs
        .iter()
        .map(|i| TraceIndex::with_marker(i.trace, i.label, i.step_marker))
        .collect();
    Ok(drill_indexed(&indexed, opts))
}

/// Fails when there is no input or an input has no kernels.
pub fn check_inputs(inputs: &[DrillInput<'_>]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::Usage("drill needs at least one trace".into()));
    }
    for i in inputs {
        i.trace.require_kernels(i.label)?;
    }
    Ok(())
}

/// [`drill`] over traces already indexed (the page keeps its index between calls).
pub fn drill_indexed(indexed: &[TraceIndex<'_>], opts: &DrillOptions) -> DrillReport {
    let (gaps, idle) = gap_report::gaps_and_idle(indexed, opts.top, opts.window);
    DrillReport {
        gaps,
        graphs: graphs::graph_report(indexed, opts.top),
        patterns: patterns::pattern_report(indexed),
        stragglers: stragglers::straggler_report(indexed),
        files: indexed.iter().map(|ix| ix.label.clone()).collect(),
        options: *opts,
        step_markers: indexed.iter().map(|ix| ix.steps.marker.clone()).collect(),
        coverage: indexed.iter().flat_map(coverage).collect(),
        idle,
    }
}

/// What the drill-down could not see in one trace, each note with the trace's label: what
/// loading recorded (a missing table, once), then what the drill-down itself could not compute.
fn coverage(ix: &TraceIndex<'_>) -> Vec<CoverageNote> {
    let t = ix.trace;
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
    if t.kernels.stream.len() != t.kernels.len() {
        note(
            "gaps",
            "kernel streams not loaded: per-stream gaps treat each device as one stream".into(),
        );
    }
    if let Some(n) = ix.call_coverage() {
        note(&n.subject, n.reason);
    }
    note(
        "idle",
        if t.present.osrt {
            "the OSRT_API table (OS runtime calls) is not loaded: no idle time is given to blocking OS calls (osrt); it counts as nvtx or untraced".into()
        } else {
            "no OSRT_API table (capture without -t osrt): no idle time is given to blocking OS calls (osrt); it counts as nvtx or untraced".into()
        },
    );
    if t.present.nvtx && ix.steps.steps.is_empty() {
        note(
            "patterns, phases",
            "no forward-step NVTX ranges: the per-layer pattern is searched in the device's kernel sequence and no phase is reported".into(),
        );
    }
    notes
}

/// Steps in the context and generation phases, summed over inputs.
pub(crate) fn phase_steps(inputs: &[TraceIndex<'_>]) -> [u64; 2] {
    let count = |p: &Option<crate::index::Phase>| p.as_ref().map_or(0, |p| p.steps);
    inputs.iter().fold([0, 0], |acc, ix| {
        [
            acc[0] + count(&ix.steps.context),
            acc[1] + count(&ix.steps.generation),
        ]
    })
}
