//! `nsys-lens detect`: the host-overhead verdict, what bounds the run, and the bound gate
//! (`--fail-on`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use nsys_lens::detect::bound::BoundKind;
use nsys_lens::detect::folded::{VerdictFold, detect_folded};
use nsys_lens::detect::{DetectConfig, DetectReport, ThresholdOverrides};
use nsys_lens::error::{Error, Result};
use nsys_lens::report;
use nsys_lens::trace::LoadOptions;

use super::{Gate, MarkerArgs, OutputArgs, ProfileArg, ratio, window};

#[derive(Args)]
pub struct DetectArgs {
    /// The SQLite export (`nsys export --type sqlite -o trace.sqlite trace.nsys-rep`).
    pub trace: PathBuf,
    /// Metric definitions to use.
    #[arg(long, value_enum, default_value = "standard")]
    pub profile: ProfileArg,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Skip the host-prep metrics (M3a/b/c).
    #[arg(long)]
    pub no_m3: bool,
    /// M1 threshold (aggregate and context; default 0.30).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub gpu_idle_threshold: Option<f64>,
    /// M2 threshold (all scopes; default 0.10).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub launch_threshold: Option<f64>,
    /// M4 threshold (aggregate and context; default 0.60).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub gpu_util_threshold: Option<f64>,
    /// Generation-phase M1 threshold (standard profile; default 0.15).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub gen_gpu_idle_threshold: Option<f64>,
    /// Generation-phase M4 threshold (standard profile; default 0.80).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub gen_gpu_util_threshold: Option<f64>,
    /// M3a threshold (standard profile; default 0.50).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub host_prep_exposed_threshold: Option<f64>,
    /// M3b threshold (standard profile; default 0.05).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub host_prep_impact_threshold: Option<f64>,
    /// M3c threshold (standard profile; default 0.50).
    #[arg(long, value_name = "F", value_parser = ratio)]
    pub host_prep_idle_threshold: Option<f64>,
    #[command(flatten)]
    pub marker: MarkerArgs,
    /// Analyse only this window instead of first-kernel..last-kernel (ns, as in the export).
    #[arg(long, value_name = "START_NS:END_NS", value_parser = window)]
    pub window: Option<(i64, i64)>,
    /// Exit 1 when the run is bounded by one of these kinds (comma-separated), for pipelines
    /// that must stay GPU-bound: `--fail-on host-bound`. Kinds other than host-bound need the
    /// standard profile (trtllm-skill does not split the GPU work).
    #[arg(long, value_enum, value_name = "KIND", value_delimiter = ',')]
    pub fail_on: Vec<BoundArg>,
}

/// What bounds a run, as `bound.kind` of `detect --json` names it.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BoundArg {
    HostBound,
    GpuComputeBound,
    TransferBound,
    CommunicationBound,
    Mixed,
}

impl From<BoundArg> for BoundKind {
    fn from(b: BoundArg) -> BoundKind {
        match b {
            BoundArg::HostBound => BoundKind::Host,
            BoundArg::GpuComputeBound => BoundKind::Compute,
            BoundArg::TransferBound => BoundKind::Transfer,
            BoundArg::CommunicationBound => BoundKind::Communication,
            BoundArg::Mixed => BoundKind::Mixed,
        }
    }
}

pub fn run(args: &DetectArgs) -> Result<Gate> {
    if matches!(args.profile, ProfileArg::TrtllmSkill) {
        let standard_only = [
            ("--gen-gpu-idle-threshold", args.gen_gpu_idle_threshold),
            ("--gen-gpu-util-threshold", args.gen_gpu_util_threshold),
            (
                "--host-prep-exposed-threshold",
                args.host_prep_exposed_threshold,
            ),
            (
                "--host-prep-impact-threshold",
                args.host_prep_impact_threshold,
            ),
            ("--host-prep-idle-threshold", args.host_prep_idle_threshold),
        ];
        args.marker.check_profile(args.profile.into())?;
        if let Some((flag, _)) = standard_only.iter().find(|(_, v)| v.is_some()) {
            return Err(Error::Usage(format!(
                "{flag} applies to the standard profile only: the reference scripts (trtllm-skill) fix that threshold"
            )));
        }
        if args.fail_on.iter().any(|&k| k != BoundArg::HostBound) {
            return Err(Error::Usage(
                "--fail-on accepts only host-bound under the trtllm-skill profile: the reference scripts do not split the GPU work by kind".into(),
            ));
        }
    }
    let label = args.trace.display().to_string();
    let cfg = DetectConfig {
        profile: args.profile.into(),
        thresholds: ThresholdOverrides {
            gpu_idle_ratio: args.gpu_idle_threshold,
            launch_overhead_ratio: args.launch_threshold,
            gpu_utilization: args.gpu_util_threshold,
            host_prep_exposed_ratio: args.host_prep_exposed_threshold,
            host_prep_perf_impact: args.host_prep_impact_threshold,
            host_prep_idle_attribution: args.host_prep_idle_threshold,
            nccl_ratio_caveat: None,
            generation_gpu_idle_ratio: args.gen_gpu_idle_threshold,
            generation_gpu_utilization: args.gen_gpu_util_threshold,
        },
        skip_m3: args.no_m3,
        window: args.window,
        file_label: label,
        step_marker: args.marker.source()?,
    };
    let mut fold = VerdictFold::new(&cfg);
    let (export, gpu) =
        super::OpenExport::read_once_folding(&args.trace, LoadOptions::detect(), &mut fold)?;
    let result = detect_folded(&export.rows(), fold, gpu, &cfg)?;
    args.out.write(&result, report::text::detect_report)?;
    Ok(gate(&result, &args.fail_on))
}

/// The bound gate: fails when the run's bound is one of `kinds` (host-bound: the verdict's YES,
/// in either profile).
fn gate(result: &DetectReport, kinds: &[BoundArg]) -> Gate {
    if kinds.is_empty() {
        return Gate::Pass;
    }
    let kind = match &result.bound {
        Some(b) => Some(b.kind),
        None => (result.verdict == "YES").then_some(BoundKind::Host),
    };
    match kind {
        Some(kind) if kinds.iter().any(|&k| BoundKind::from(k) == kind) => Gate::Failed(format!(
            "the run is {} (--fail-on): {}",
            kind.label(),
            result.summary
        )),
        _ => Gate::Pass,
    }
}
