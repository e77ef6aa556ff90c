//! `nsys-lens whatif`: the critical path of the steady steps and the step time predicted after
//! a change of costs, by a replay of the export with its dependencies kept.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::analyze::AnalyzeConfig;
use nsys_lens::error::{Error, Result};
use nsys_lens::report;
use nsys_lens::trace::LoadOptions;
use nsys_lens::whatif::{self, Costs};

use super::{MarkerArgs, OutputArgs};

#[derive(Args)]
pub struct WhatifArgs {
    /// The SQLite export (`nsys export --type sqlite -o trace.sqlite trace.nsys-rep`).
    pub trace: PathBuf,
    #[command(flatten)]
    pub costs: super::CostArgs,
    /// Replace each steady step's eager kernel launches on a thread by one graph launch (CUDA
    /// graphs: the launch calls' time paid once, the kernels queued back to back).
    #[arg(long)]
    pub graphs: bool,
    /// A baseline export of the same workload: also say where the step time's change from it
    /// lies on the critical path (part by part, op by op).
    #[arg(long, value_name = "BASELINE")]
    pub baseline: Option<PathBuf>,
    /// Instead of predictions: the critical path of steady step N (from 0) as it was measured,
    /// stretch by stretch — where each ran (a thread or a GPU stream), on what, for how long.
    #[arg(long, value_name = "N", conflicts_with_all = ["baseline", "graphs"])]
    pub step: Option<usize>,
    #[command(flatten)]
    pub marker: MarkerArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl WhatifArgs {
    /// The change asked for; none: the standard set.
    fn changes(&self) -> Vec<Costs> {
        let costs = Costs {
            graphs: self.graphs,
            ..self.costs.costs()
        };
        match costs == Costs::default() {
            true => Vec::new(),
            false => vec![costs],
        }
    }
}

pub fn run(args: &WhatifArgs) -> Result<()> {
    let cfg = AnalyzeConfig {
        label: args.trace.display().to_string(),
        source: args.trace.display().to_string(),
        step_marker: args.marker.source()?,
        ..AnalyzeConfig::default()
    };
    let export = super::OpenExport::open(&args.trace, LoadOptions::all())?;
    if let Some(step) = args.step {
        if !args.changes().is_empty() {
            return Err(Error::Usage(
                "--step shows the measured critical path: it takes no cost change".into(),
            ));
        }
        let path = whatif::step_path(&export.rows(), &cfg, step)?;
        return args.out.write(&path, report::whatif::step_text);
    }
    let mut result = whatif::whatif_rows(&export.rows(), &cfg, &args.changes())?;
    if let Some(base) = &args.baseline {
        let export = super::OpenExport::open(base, LoadOptions::all())?;
        let cfg = AnalyzeConfig {
            label: base.display().to_string(),
            source: base.display().to_string(),
            ..cfg
        };
        let baseline = whatif::path_rows(&export.rows(), &cfg)?;
        result.regression = Some(whatif::compare::regression(&baseline, &result));
    }
    args.out.write(&result, report::whatif::text)
}
