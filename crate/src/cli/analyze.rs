//! `nsys-lens analyze`: the root cause, per step, of one trace or of a baseline vs a target
//! (SPEC §3).

use std::path::{Path, PathBuf};

use clap::Args;

use nsys_lens::analyze::{self, AnalyzeConfig, AnalyzeReport, TraceBreakdown};
use nsys_lens::detect::Profile;
use nsys_lens::error::{Error, Result};
use nsys_lens::report;
use nsys_lens::trace::{self, LoadOptions};

use super::{ProfileArg, emit};

#[derive(Args)]
pub struct AnalyzeArgs {
    /// The baseline SQLite export (or the only trace).
    pub baseline: PathBuf,
    /// The target SQLite export to compare with the baseline.
    pub target: Option<PathBuf>,
    /// Metric definitions to use.
    #[arg(long, value_enum, default_value = "standard")]
    pub profile: ProfileArg,
    /// Print the JSON result instead of the readable report.
    #[arg(long)]
    pub json: bool,
    /// Write the output to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
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
}

pub fn run(args: &AnalyzeArgs) -> Result<()> {
    let profile: Profile = args.profile.into();
    if profile == Profile::Standard && args.tp_size.is_some() {
        return Err(Error::Usage(
            "--tp-size applies to the trtllm-skill profile only: standard merges TP ranks' NVTX copies itself instead of dividing".into(),
        ));
    }
    let cfg = |label: &str, path: &Path| AnalyzeConfig {
        profile,
        tp_size: args.tp_size.unwrap_or(1),
        label: label.to_string(),
        source: path.display().to_string(),
    };
    let baseline = breakdown(&args.baseline, &cfg(&args.baseline_label, &args.baseline))?;
    let target = args
        .target
        .as_ref()
        .map(|path| breakdown(path, &cfg(&args.target_label, path)))
        .transpose()?;
    let result = AnalyzeReport::new(profile, baseline, target);
    let text = if args.json {
        serde_json::to_string_pretty(&result)
            .map_err(|e| Error::Usage(format!("cannot serialize the result: {e}")))?
            + "\n"
    } else {
        report::analyze::analyze_report(&result)
    };
    emit(&text, args.output.as_deref())
}

/// Loads every runtime call (API time per step needs them all, not only launches).
fn breakdown(path: &Path, cfg: &AnalyzeConfig) -> Result<TraceBreakdown> {
    let opts = LoadOptions {
        memory_ops: false,
        syncs: false,
        event_details: true,
        launch_calls_only: false,
    };
    let loaded = trace::load_path(path, opts)?;
    analyze::analyze_trace(&loaded, cfg)
}
