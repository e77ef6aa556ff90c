//! The report's Capture section: the capture checks of the verdict (`detect::capture`) as a
//! table, with the steady window after a warm-up beside the whole window.

use super::outline::Section;
use super::tables::{Kind, Table, col};
use crate::detect::DetectReport;
use crate::detect::capture::{CaptureReport, Status};

fn status(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Warn => "warn",
        Status::Unknown => "unknown",
    }
}

/// The checks, one row each: id, status, what was checked, evidence, fix.
fn table(cap: &CaptureReport) -> Table {
    use Kind::*;
    let mut t = Table::new(
        "capture",
        "Capture checks",
        &[
            col("check", "Check", Key),
            col("status", "Status", Key),
            col("what", "What", Text),
            col("evidence", "Evidence", Text),
            col("fix", "Fix", Text),
        ],
    );
    for c in &cap.checks {
        t.row(vec![
            c.id.to_string().into(),
            status(c.status).into(),
            c.title.to_string().into(),
            c.evidence.clone().into(),
            c.fix.clone().unwrap_or_default().into(),
        ]);
    }
    t
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{:.1} %", v * 100.0))
}

/// The section: how many checks warn, the steady window when there is one, the table.
pub fn section(detect: &DetectReport) -> Section {
    let cap = &detect.capture;
    let count = |s: Status| cap.checks.iter().filter(|c| c.status == s).count();
    let mut text = vec![format!(
        "{} of {} capture checks warn, {} cannot be told from this export.",
        count(Status::Warn),
        cap.checks.len(),
        count(Status::Unknown)
    )];
    if let Some(s) = &cap.steady_window {
        text.push(format!(
            "Steady window after the warm-up ({}): {:.3} ms from {} ns; GPU idle {} there against {} over the whole window, utilization {} against {}; by these two metrics: {}. Full verdict of the window: `{}`.",
            s.after,
            s.duration_us / 1000.0,
            s.start_ns,
            pct(Some(s.gpu_idle_ratio)),
            pct(s.whole_gpu_idle_ratio),
            pct(Some(s.gpu_utilization)),
            pct(s.whole_gpu_utilization),
            s.verdict,
            s.command
        ));
    }
    Section {
        title: "Capture",
        text,
        findings: Vec::new(),
        charts: Vec::new(),
        tables: vec![table(cap)],
    }
}

/// The checks as lines of the CLI's readable report: the ones to fix and the ones the export
/// cannot tell, each with its fix, then how many are ok, and the steady window.
pub fn text_lines(cap: &CaptureReport) -> Vec<String> {
    let mut out = vec!["Capture checks:".to_string()];
    for c in cap.checks.iter().filter(|c| c.status != Status::Ok) {
        out.push(format!(
            "  [{}] {}: {}",
            status(c.status),
            c.title,
            c.evidence
        ));
        if let Some(fix) = &c.fix {
            out.push(format!("      fix: {fix}"));
        }
    }
    let ok: Vec<&str> = cap
        .checks
        .iter()
        .filter(|c| c.status == Status::Ok)
        .map(|c| c.id)
        .collect();
    if !ok.is_empty() {
        out.push(format!("  ok: {}", ok.join(", ")));
    }
    if let Some(s) = &cap.steady_window {
        out.push(format!(
            "  Steady window after the warm-up: {:.3} ms from {} ns, GPU idle {} (whole window {}): {} by GPU idle and utilization; full verdict: {}",
            s.duration_us / 1000.0,
            s.start_ns,
            pct(Some(s.gpu_idle_ratio)),
            pct(s.whole_gpu_idle_ratio),
            s.verdict,
            s.command
        ));
    }
    out
}
