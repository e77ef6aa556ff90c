//! `nsys-lens ranks`: every rank of one export or of one file per rank, on one clock — who
//! arrives last at the collectives, by how much, and how long the ranks wait for each other.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::error::Result;
use nsys_lens::ranks;
use nsys_lens::trace::LoadOptions;

use super::{MarkerArgs, OutputArgs};

#[derive(Args)]
pub struct RanksArgs {
    /// SQLite exports: one holding several ranks, or one file per rank or node (put on one
    /// clock by their session start times, then by their collectives' ends).
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub marker: MarkerArgs,
}

pub fn run(args: &RanksArgs) -> Result<()> {
    let step_marker = args.marker.source()?;
    let result = super::drill::with_inputs(
        &args.traces,
        LoadOptions::all(),
        step_marker.as_ref(),
        ranks::ranks,
    )?;
    args.out.write(&result, ranks::text::text)
}
