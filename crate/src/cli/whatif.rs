//! `nsys-lens whatif`: the critical path of the steady steps and the step time predicted after
//! a change of costs, by a replay of the export with its dependencies kept.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::analyze::AnalyzeConfig;
use nsys_lens::error::Result;
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
    #[command(flatten)]
    pub marker: MarkerArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl WhatifArgs {
    /// The change asked for; none: the standard set.
    fn changes(&self) -> Vec<Costs> {
        let costs = self.costs.costs();
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
    let result = whatif::whatif_rows(&export.rows(), &cfg, &args.changes())?;
    args.out.write(&result, report::whatif::text)
}
