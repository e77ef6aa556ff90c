//! The explainer report of one trace (spec §5): the verdict, the explainer and the drill-down,
//! with every finding in one prioritized list. Built once, then written as Markdown, JSON, CSV
//! tables and HTML by the sibling modules — in memory, so the page exports client-side.

use serde::Serialize;

use crate::detect::{self, DetectConfig, DetectReport};
use crate::drill;
use crate::drill::DrillOptions;
use crate::error::Result;
use crate::explain::{self, ExplainReport};
use crate::findings::{DrillFindings, Finding};
use crate::index::TraceIndex;
use crate::model::{CoverageNote, Trace};

/// Everything the report shows, derived results only (no event rows).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    pub file: String,
    pub generated_by: String,
    /// All findings (explainer and drill-down), most severe first: the drill-down's list, the
    /// one `nsys-lens drill` and the page show.
    pub findings: Vec<Finding>,
    pub detect: DetectReport,
    pub explain: ExplainReport,
    /// The drill-down as `nsys-lens drill --json` gives it, with the same findings.
    pub drill: DrillFindings,
    /// What could not be computed, and why (each note once).
    pub coverage: Vec<CoverageNote>,
}

/// Builds the report of one loaded trace. Fails only for a trace without kernels.
pub fn build(trace: &Trace, label: &str, opts: &DrillOptions) -> Result<Document> {
    trace.require_kernels(label)?;
    let cfg = DetectConfig {
        file_label: label.to_string(),
        ..DetectConfig::default()
    };
    let detect = detect::detect(trace, &cfg)?;
    let ix = TraceIndex::new(trace, label);
    let explain = explain::explain(&ix, explain::DEFAULT_TOP.max(opts.top));
    let drill = drill::drill_indexed(std::slice::from_ref(&ix), opts);
    let drill = DrillFindings::of(drill, std::slice::from_ref(&explain));
    let mut coverage: Vec<CoverageNote> = Vec::new();
    for note in detect
        .coverage
        .iter()
        .chain(&explain.coverage)
        .chain(&drill.report.coverage)
    {
        if !coverage.contains(note) {
            coverage.push(note.clone());
        }
    }
    Ok(Document {
        file: label.to_string(),
        generated_by: format!("nsys-lens {}", env!("CARGO_PKG_VERSION")),
        findings: drill.findings.clone(),
        detect,
        explain,
        drill,
        coverage,
    })
}
