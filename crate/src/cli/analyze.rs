//! `nsys-lens analyze`: the root cause, per step, of one trace or of a baseline vs a target,
//! and the regression gate (`--fail-on-regression`).

use std::path::{Path, PathBuf};

use clap::Args;

use nsys_lens::analyze::{self, AnalyzeConfig, AnalyzeReport, Comparison, TraceBreakdown};
use nsys_lens::error::Result;
use nsys_lens::profile::Profile;
use nsys_lens::report;
use nsys_lens::trace::LoadOptions;

use super::{Gate, MarkerArgs, OutputArgs, ProfileArg};

#[derive(Args)]
pub struct AnalyzeArgs {
    /// The baseline SQLite export (or the only trace).
    pub baseline: PathBuf,
    /// The target SQLite export to compare with the baseline.
    pub target: Option<PathBuf>,
    /// Metric definitions to use.
    #[arg(long, value_enum, default_value = "standard")]
    pub profile: ProfileArg,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Divide NVTX totals and counts by N, as the reference does for TP-duplicated ranges
    /// (trtllm-skill profile only; standard merges the ranks' copies itself).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub tp_size: Option<u32>,
    /// Label of the baseline in the report.
    #[arg(long, value_name = "L", default_value = "baseline")]
    pub baseline_label: String,
    /// Label of the target in the report.
    #[arg(long, value_name = "L", default_value = "target")]
    pub target_label: String,
    #[command(flatten)]
    pub marker: MarkerArgs,
    /// Exit 1 when the target regressed by more than PCT percent: wall time per step, or
    /// without steps in both traces the whole kernel window's time per kernel launched. Exit 4
    /// when the two traces cannot be compared (different workloads, no figure measured in
    /// both), saying why.
    #[arg(long, value_name = "PCT", value_parser = super::percent, requires = "target")]
    pub fail_on_regression: Option<f64>,
}

pub fn run(args: &AnalyzeArgs) -> Result<Gate> {
    let profile: Profile = args.profile.into();
    let tp_size = analyze::tp_size_for(profile, args.tp_size)?;
    args.marker.check_profile(profile)?;
    let step_marker = args.marker.source()?;
    let cfg = |label: &str, path: &Path| AnalyzeConfig {
        profile,
        tp_size,
        label: label.to_string(),
        source: path.display().to_string(),
        step_marker: step_marker.clone(),
    };
    let baseline = breakdown(&args.baseline, &cfg(&args.baseline_label, &args.baseline))?;
    let target = args
        .target
        .as_ref()
        .map(|path| breakdown(path, &cfg(&args.target_label, path)))
        .transpose()?;
    let result = AnalyzeReport::new(profile, baseline, target);
    args.out.write(&result, report::analyze::analyze_report)?;
    Ok(match (args.fail_on_regression, &result.comparison) {
        (Some(pct), Some(c)) => gate(c, pct),
        _ => Gate::Pass,
    })
}

/// The regression gate over a comparison: not comparable, regressed beyond `pct`, or passed.
fn gate(c: &Comparison, pct: f64) -> Gate {
    let why = c.incomparable();
    let figure = match c.regression_figure() {
        Some(f) if why.is_empty() => f,
        _ => {
            return Gate::NotComparable(format!(
                "the traces cannot be compared for --fail-on-regression: {}",
                why.join("; ")
            ));
        }
    };
    let change = format!(
        "{} {:.1} → {:.1} µs ({:+.2}%)",
        figure.figure, figure.baseline, figure.target, figure.regressed_pct
    );
    if figure.regressed_pct > pct {
        Gate::Failed(format!("regression beyond {pct}%: {change}"))
    } else {
        eprintln!("nsys-lens: no regression beyond {pct}%: {change}");
        Gate::Pass
    }
}

/// Loads every runtime call (API time per step needs them all, not only launches) and the copies
/// (the window's idle causes give an async copy from pageable memory to `sync`, as the page and
/// `drill` do).
fn breakdown(path: &Path, cfg: &AnalyzeConfig) -> Result<TraceBreakdown> {
    let opts = LoadOptions {
        memory_ops: true,
        syncs: false,
        event_details: true,
        launch_calls_only: false,
    };
    let export = super::OpenExport::open(path, opts)?;
    analyze::analyze_rows(&export.rows(), cfg)
}
