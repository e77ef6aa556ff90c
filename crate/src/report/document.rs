//! The explainer report of one trace (spec §5): the verdict, the explainer, the drill-down and
//! what a fix would buy (the what-if replay), with every finding in one prioritized list; for a
//! trace without kernel records, its host side with the verdict marked not computed. Built once, then written as Markdown, JSON, CSV
//! tables and HTML by the sibling modules — in memory, so the page exports client-side.

use serde::Serialize;

use crate::analyze::AnalyzeConfig;
use crate::analyze::classes::{ClassTable, window_classes};
use crate::detect::{self, DetectConfig, DetectReport};
use crate::drill::DrillOptions;
use crate::error::Result;
use crate::explain::{self, ExplainReport};
use crate::findings::{self, DrillFindings, Finding};
use crate::index::rows::RowIndex;
use crate::model::rows::EventRows;
use crate::model::{CoverageNote, KernelAbsence, Trace};
use crate::ranks::RanksReport;
use crate::whatif::{self, WhatIf};

/// Everything the report shows, derived results only (no event rows).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    /// [`super::SCHEMA_VERSION`]: `report.json` is read by scripts as `--json` outputs are.
    pub schema_version: u32,
    pub file: String,
    pub generated_by: String,
    /// All findings (explainer and drill-down), most severe first: the drill-down's list, the
    /// one `nsys-lens drill` and the page show.
    pub findings: Vec<Finding>,
    /// The verdict; `null` when the trace has no kernel records (`verdict_not_computed` says
    /// why).
    pub detect: Option<DetectReport>,
    pub explain: ExplainReport,
    /// The drill-down as `nsys-lens drill --json` gives it, with the same findings; `null`
    /// without kernel records.
    pub drill: Option<DrillFindings>,
    /// Set when the trace has no kernel records: the report is its host side only.
    pub verdict_not_computed: Option<NotComputed>,
    /// What could not be computed, and why (each note once).
    pub coverage: Vec<CoverageNote>,
    /// GPU time per kernel class over the whole kernel window (summed GPU time, per second of
    /// window; `analyze`'s `kernel_classes.window`); `null` without kernel records.
    pub kernel_classes: Option<ClassTable>,
    /// What a fix would buy, as `nsys-lens whatif --json` gives it (without its
    /// schema_version): the critical path of the steady steps and the standard set's
    /// predictions ([`whatif_config`]); `null` without kernel records, and in a report
    /// assembled from parts ([`with_drill_down`]) until its caller sets it ([`add_whatif`]).
    pub whatif: Option<WhatIf>,
    /// The ranks at their collectives, as `nsys-lens ranks --json` gives it for this one export
    /// (without its schema_version); `null` without kernel records, and in a report assembled
    /// from parts until its caller sets it (the page's, over the index its trace kept).
    pub ranks: Option<RanksReport>,
}

/// Why a report has no verdict and no drill-down, and how to capture what they need.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotComputed {
    /// `"not computed: no kernel records"`.
    pub verdict: &'static str,
    /// Which table is missing or empty.
    pub why: String,
    /// The capture advice that fits what the trace holds.
    pub advice: String,
}

/// The verdict's status without kernel records, as the report and the CLI's error say it.
pub const NO_KERNEL_RECORDS: &str = "not computed: no kernel records";

/// Builds the report of one loaded trace: verdict, explainer and drill-down, or the host side
/// alone (CUDA API calls, syncs, copies, allocations, NVTX ranges, processes) when the trace has
/// no kernel records.
pub fn build(trace: &Trace, label: &str, opts: &DrillOptions) -> Result<Document> {
    build_rows(trace, label, opts, &|cfg| detect::detect(trace, cfg))
}

/// [`build`] over the rows of a trace, loaded or read from the file; `verdict` gives its
/// verdict under a config (the page's is the verdict it already shows).
pub fn build_rows(
    rows: &dyn EventRows,
    label: &str,
    opts: &DrillOptions,
    verdict: &dyn Fn(&DetectConfig) -> Result<DetectReport>,
) -> Result<Document> {
    let ix = RowIndex::new(rows, label, None)?;
    if let Some(a) = ix.kernel_absence() {
        let top = explain::DEFAULT_TOP.max(opts.top);
        let explain = explain::explain_rows(rows, label, &ix.steps.steps, top)?;
        return Ok(host_side(label, explain, a));
    }
    let detect = verdict(&verdict_config(label))?;
    let (drill, mut explains) = DrillFindings::explained(std::slice::from_ref(&ix), opts)?;
    let explain = explains
        .pop()
        .ok_or_else(|| crate::error::Error::Internal {
            detail: "the drill-down explained no trace".into(),
        })?;
    let classes = window_classes(rows)?;
    let mut doc = with_drill_down(label, detect, explain, drill, classes);
    add_whatif(&mut doc, rows)?;
    doc.ranks = Some(crate::ranks::ranks_indexed(std::slice::from_ref(&ix))?);
    Ok(doc)
}

/// Sets the report's `whatif` from the trace's rows: the standard set's predictions and the
/// critical path under [`whatif_config`] (what [`build_rows`] does; a report assembled from
/// parts by [`with_drill_down`] gets it this way).
pub fn add_whatif(doc: &mut Document, rows: &dyn EventRows) -> Result<()> {
    add_whatif_known(doc, rows, &whatif::Computed(rows))
}

/// [`add_whatif`] with the replay's analysis and verdict taken from `known` (the page's open
/// trace keeps them).
pub fn add_whatif_known(
    doc: &mut Document,
    rows: &dyn EventRows,
    known: &dyn whatif::Known,
) -> Result<()> {
    let cfg = whatif_config(&doc.file);
    doc.whatif = Some(whatif::whatif_known(rows, &cfg, &[], known)?);
    Ok(())
}

/// The configuration of the report's what-if replay: Root cause's defaults (the step marker
/// found in the trace), the trace's label; what `nsys-lens whatif TRACE` uses.
pub fn whatif_config(label: &str) -> AnalyzeConfig {
    AnalyzeConfig {
        label: label.to_string(),
        source: label.to_string(),
        ..AnalyzeConfig::default()
    }
}

/// The configuration of the report's verdict (the defaults, the trace's label).
pub fn verdict_config(label: &str) -> DetectConfig {
    DetectConfig {
        file_label: label.to_string(),
        ..DetectConfig::default()
    }
}

/// The report of a trace with kernels from its parts: the verdict (under [`verdict_config`]),
/// its explainer, its drill-down with the findings of both and its time per kernel class
/// ([`window_classes`]), as [`build_rows`] computes them (the page passes those its Drill-down
/// computed already); its `whatif` is left `None` for the caller to set ([`add_whatif`]).
pub fn with_drill_down(
    label: &str,
    detect: DetectReport,
    explain: ExplainReport,
    drill: DrillFindings,
    classes: ClassTable,
) -> Document {
    let all = drill.findings.clone();
    let mut doc = assemble(label, (Some(detect), explain, Some(drill)), None, all);
    doc.kernel_classes = Some(classes);
    doc
}

/// The report of a trace without kernel records: its host side, the verdict not computed.
fn host_side(label: &str, explain: ExplainReport, absence: KernelAbsence) -> Document {
    let not_computed = NotComputed {
        verdict: NO_KERNEL_RECORDS,
        why: absence.why,
        advice: absence.advice,
    };
    let all = findings::explain_findings(&explain, None);
    assemble(label, (None, explain, None), Some(not_computed), all)
}

fn assemble(
    label: &str,
    (detect, explain, drill): (Option<DetectReport>, ExplainReport, Option<DrillFindings>),
    not_computed: Option<NotComputed>,
    findings: Vec<Finding>,
) -> Document {
    let coverage = coverage(
        label,
        not_computed.as_ref(),
        detect.as_ref(),
        &explain,
        drill.as_ref(),
    );
    Document {
        schema_version: super::SCHEMA_VERSION,
        file: label.to_string(),
        generated_by: format!("nsys-lens {}", env!("CARGO_PKG_VERSION")),
        findings,
        detect,
        explain,
        drill,
        verdict_not_computed: not_computed,
        coverage,
        kernel_classes: None,
        whatif: None,
        ranks: None,
    }
}

/// The report's coverage notes, one per fact: the verdict and drill-down and explainer each
/// carry what loading recorded; the drill-down's notes name their file, which in a report of
/// one file is said once, in its title. Without kernel records, one note says so and points to
/// the capture advice, stated once with the verdict, in place of the loader's kernel-table note.
fn coverage(
    label: &str,
    not_computed: Option<&NotComputed>,
    detect: Option<&DetectReport>,
    explain: &ExplainReport,
    drill: Option<&DrillFindings>,
) -> Vec<CoverageNote> {
    let mut coverage: Vec<CoverageNote> = not_computed
        .iter()
        .map(|n| CoverageNote {
            subject: "verdict, drill-down, kernels".into(),
            reason: format!(
                "{} ({}); the verdict says how to capture them",
                n.verdict, n.why
            ),
        })
        .collect();
    let prefix = format!("{label}: ");
    let drill_notes = drill.iter().flat_map(|d| &d.report.coverage).map(|n| {
        let subject = n.subject.strip_prefix(&prefix).unwrap_or(&n.subject);
        CoverageNote {
            subject: subject.to_string(),
            reason: n.reason.clone(),
        }
    });
    let notes = detect
        .iter()
        .flat_map(|d| d.coverage.iter().cloned())
        .chain(explain.coverage.iter().cloned())
        .chain(drill_notes)
        .filter(|n| not_computed.is_none() || !KernelAbsence::noted_by(n));
    for note in notes {
        if !coverage.contains(&note) {
            coverage.push(note);
        }
    }
    coverage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    #[test]
    fn allocations_outside_the_kernel_window_make_no_finding() {
        let b = TraceBuilder::setup_and_teardown();
        let doc = build(&b.trace, "t", &DrillOptions::default()).expect("report");
        let a = &doc.explain.allocations;
        // 100 + 200 + 300 + 300 µs of allocation over the whole capture, against a 101 µs kernel window.
        assert_eq!((a.calls, a.total_us, a.in_window.calls), (4, 900.0, 0));
        let text: Vec<String> = doc
            .findings
            .iter()
            .map(|f| format!("{} {}", f.title, f.evidence))
            .collect();
        assert!(
            !text
                .iter()
                .any(|t| t.contains("Alloc") || t.contains("cudaFree")),
            "{text:?}"
        );
        // The sync inside the window holds 98 of the 99 µs idle gap, 97.0 % of the 101 µs
        // device time: the first finding, from the idle-time attribution.
        let sync = &doc.findings[0];
        assert_eq!(
            sync.title,
            "GPU idle during host-device synchronization (cudaStreamSynchronize): 97.0% of device time"
        );
        assert!(
            sync.evidence
                .starts_with("98.0\u{a0}µs of GPU-idle time (99.0% of the 99.0\u{a0}µs idle)"),
            "{}",
            sync.evidence
        );
    }

    #[test]
    fn a_trace_without_kernels_gets_its_host_side_with_the_verdict_not_computed() {
        let mut b = TraceBuilder::setup_and_teardown();
        b.trace.kernels = Default::default();
        let doc = build(&b.trace, "t", &DrillOptions::default()).expect("report");
        assert!(doc.detect.is_none() && doc.drill.is_none());
        let n = doc.verdict_not_computed.as_ref().expect("not computed");
        assert_eq!(n.verdict, NO_KERNEL_RECORDS);
        assert!(
            n.advice.contains("2 kernel-launch API calls"),
            "{}",
            n.advice
        );
        // The whole capture is the window: every allocation counts, 900 of 1 200 µs.
        let a = &doc.explain.allocations;
        assert_eq!((a.in_window.calls, a.in_window.busy_us), (4, 900.0));
        let alloc = doc
            .findings
            .iter()
            .find(|f| f.source == "allocations")
            .expect("alloc");
        assert_eq!(
            alloc.title,
            "Runtime object creation or allocation (whole capture: no kernel records)"
        );
    }
}
