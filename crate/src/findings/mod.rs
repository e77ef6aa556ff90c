//! "What to do next": findings with severity, evidence (numbers) and a fix mapped to the
//! optimization patterns of the reference (§9.5): CUSTOM_OP, GRAPH_EXPAND, GRAPH_SPLIT, SYNC,
//! HOIST, ALLOC, and targeted work on a straggler's coordinator-only paths.
//!
//! Severity follows the share of device (or step) time at stake: ≥ 25 % high, ≥ 10 % medium,
//! ≥ 2 % low, else informational.

mod bound;
mod drill_down;
mod explained;
mod idle;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::drill::gap_report::SweptGaps;
use crate::drill::idle::CauseKind;
use crate::drill::{self, DrillInput, DrillOptions, DrillReport};
use crate::error;
use crate::explain::{self, ExplainReport, Explainer};
use crate::format;
use crate::index::kernel_pass::Rider;
use crate::index::rows::RowIndex;
use crate::index::steady_spans;
use crate::model::Ns;
pub use bound::transfer_finding;
use drill_down::{graph_findings, pattern_finding, straggler_finding};
pub use explained::explain_findings;
use idle::idle_findings;

/// How much a finding matters; sorts most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    /// From the share of the relevant time (device time, step time, kernel time).
    pub fn of_share(share: f64) -> Severity {
        if share >= 0.25 {
            Severity::High
        } else if share >= 0.10 {
            Severity::Medium
        } else if share >= 0.02 {
            Severity::Low
        } else {
            Severity::Info
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub title: String,
    /// The numbers behind it.
    pub evidence: String,
    /// The reference §9.5 pattern(s) the fix follows, when one applies.
    pub pattern: Option<String>,
    pub fix: String,
    /// Which analysis found it (`gaps`, `graphs`, `patterns`, `stragglers`, `launches` …).
    pub source: String,
    /// Time at stake, µs (for ordering within a severity).
    pub impact_us: f64,
}

fn finding(
    severity: Severity,
    source: &str,
    title: String,
    evidence: String,
    pattern: Option<&str>,
    fix: &str,
    impact_us: f64,
) -> Finding {
    Finding {
        severity,
        title,
        evidence,
        pattern: pattern.map(str::to_string),
        fix: fix.to_string(),
        source: source.to_string(),
        impact_us,
    }
}

/// Most severe first, then most time at stake.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.impact_us.total_cmp(&a.impact_us))
            .then_with(|| a.title.cmp(&b.title))
    });
}

/// The drill-down with every finding about its traces: what `nsys-lens drill --json` writes, the
/// page's Drill-down shows and every report format lists — one list, in one order, so the three
/// never disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillFindings {
    pub report: DrillReport,
    pub findings: Vec<Finding>,
}

impl Serialize for DrillFindings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = &self.report;
        let mut out = s.serialize_struct("DrillReport", 11)?;
        out.serialize_field("gaps", &r.gaps)?;
        out.serialize_field("graphs", &r.graphs)?;
        out.serialize_field("patterns", &r.patterns)?;
        out.serialize_field("stragglers", &r.stragglers)?;
        out.serialize_field("findings", &self.findings)?;
        out.serialize_field("files", &r.files)?;
        out.serialize_field("options", &r.options)?;
        out.serialize_field("step_markers", &r.step_markers)?;
        out.serialize_field("coverage", &r.coverage)?;
        out.serialize_field("idle", &r.idle)?;
        out.serialize_field("gpu_work", &r.gpu_work)?;
        out.end()
    }
}

impl DrillFindings {
    /// The drill-down and the findings of it and of the explainer of each of its traces.
    pub fn of(report: DrillReport, explains: &[ExplainReport]) -> DrillFindings {
        let mut findings = drill_findings(&report);
        let several = explains.len() > 1;
        for e in explains {
            let mut more = explain_findings(e, Some(&report));
            if several {
                for f in &mut more {
                    f.evidence = format!("{}: {}", e.file, f.evidence);
                }
            }
            findings.extend(more);
        }
        sort(&mut findings);
        DrillFindings { report, findings }
    }

    /// Drills into `indexed` (one trace, or one per rank) and explains each trace: the whole
    /// drill-down as the CLI, the page and the report show it. Fails when a read failed.
    pub fn build(indexed: &[RowIndex<'_>], opts: &DrillOptions) -> error::Result<DrillFindings> {
        DrillFindings::explained(indexed, opts).map(|(d, _)| d)
    }

    /// [`DrillFindings::build`] and the explainer report of each trace it read (the report of
    /// one trace shows both: the page keeps them for its export). The explainer rides on the
    /// drill-down's passes over the kernels.
    pub fn explained(
        indexed: &[RowIndex<'_>],
        opts: &DrillOptions,
    ) -> error::Result<(DrillFindings, Vec<ExplainReport>)> {
        DrillFindings::explained_after(indexed, opts, None)
    }

    /// [`DrillFindings::explained`] with the gaps another pass over the one trace swept
    /// (`drill::drill_riding`).
    pub fn explained_after(
        indexed: &[RowIndex<'_>],
        opts: &DrillOptions,
        swept: Option<&SweptGaps>,
    ) -> error::Result<(DrillFindings, Vec<ExplainReport>)> {
        let top = explain::DEFAULT_TOP.max(opts.top);
        let steady: Vec<Vec<(Ns, Ns)>> = indexed
            .iter()
            .map(|ix| steady_spans(&ix.steps.steps).0)
            .collect();
        let mut explainers: Vec<Explainer<'_>> = indexed
            .iter()
            .zip(&steady)
            .map(|(ix, steady)| Explainer::riding(ix, steady, top))
            .collect();
        let mut riders: Vec<&mut dyn Rider> =
            explainers.iter_mut().map(|e| e as &mut dyn Rider).collect();
        let report = drill::drill_riding(indexed, opts, &mut riders, swept)?;
        let explains = explainers
            .into_iter()
            .map(Explainer::report)
            .collect::<error::Result<Vec<ExplainReport>>>()?;
        Ok((DrillFindings::of(report, &explains), explains))
    }

    /// [`DrillFindings::build`] over `inputs`. Fails when there is no input, an input has no
    /// kernels or a read failed.
    pub fn drill(inputs: &[DrillInput<'_>], opts: &DrillOptions) -> error::Result<DrillFindings> {
        DrillFindings::build(&drill::index_inputs(inputs)?, opts)
    }
}

/// Findings supported by the drill-down alone: where the idle time went, graphs, the per-layer
/// pattern and stragglers.
pub fn drill_findings(d: &DrillReport) -> Vec<Finding> {
    let mut out = idle_findings(d);
    out.extend(transfer_finding(&d.gpu_work));
    out.extend(graph_findings(d));
    out.extend(pattern_finding(d));
    out.extend(straggler_finding(d));
    sort(&mut out);
    out
}

/// A duration (µs) in the unit that fits it, as every table shows it.
fn ms(us: f64) -> String {
    format::duration_us(us)
}

fn ms_ns(ns: Ns) -> String {
    ms(ns as f64 / 1000.0)
}

fn pct(share: f64) -> String {
    format::percent(share)
}

/// Idle time (ns, all devices) held by `kind` under labels that `matches`.
fn idle_held(d: &DrillReport, kind: CauseKind, matches: impl Fn(&str) -> bool) -> Ns {
    d.idle
        .per_device
        .iter()
        .flat_map(|dev| &dev.causes)
        .filter(|c| c.kind == kind)
        .flat_map(|c| &c.labels)
        .filter(|l| matches(&l.label))
        .map(|l| l.ns)
        .sum()
}

/// The share of device time `ns` of idle time is.
fn device_share(d: &DrillReport, ns: Ns) -> f64 {
    let device_us = d.gaps.device_idle.device_time_us;
    if device_us > 0.0 {
        (ns as f64 / 1000.0 / device_us).min(1.0)
    } else {
        0.0
    }
}
