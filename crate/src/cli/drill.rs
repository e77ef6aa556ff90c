//! `nsys-lens drill`: the kernel-level drill-down over one trace or one file per rank.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::drill::{self, DrillInput, DrillOptions};
use nsys_lens::error::Result;
use nsys_lens::findings::DrillFindings;
use nsys_lens::report;
use nsys_lens::trace::LoadOptions;

use super::{MarkerArgs, OutputArgs, window};

#[derive(Args)]
pub struct DrillArgs {
    /// SQLite exports: one trace, or one file per rank (aligned on their session start times).
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// How many largest gaps and eager kernel names to list.
    #[arg(long, default_value_t = drill::DEFAULT_TOP, value_parser = top_count)]
    pub top: usize,
    /// Count idle time in this window (ns, as in the export): each device's idle stretches cut to it, stream gaps wholly inside it
    #[arg(long, value_name = "START_NS:END_NS", value_parser = window)]
    pub window: Option<(i64, i64)>,
    #[command(flatten)]
    pub marker: MarkerArgs,
}

/// What the drill-down reads: every column of kernels, runtime calls and NVTX ranges (the API
/// calls during a gap may be any call) and memory operations (an async copy with a pageable
/// host side is a synchronous one for the idle-time attribution), but not sync events.
fn drill_columns() -> LoadOptions {
    LoadOptions {
        syncs: false,
        ..LoadOptions::all()
    }
}

/// A `--top` count: 1 to 10 000.
pub fn top_count(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` must be a whole number from 1 to 10000")),
    }
}

pub fn run(args: &DrillArgs) -> Result<()> {
    let step_marker = args.marker.source()?;
    let opts = DrillOptions {
        top: args.top,
        window: args.window,
    };
    let result = with_inputs(
        &args.traces,
        drill_columns(),
        step_marker.as_ref(),
        |inputs| DrillFindings::drill(inputs, &opts),
    )?;
    args.out.write(&result, report::drill::drill_report)
}

/// `f` over the exports at `paths`, each opened for the tables `columns` reads and labelled by
/// its path (the drill-down's and the ranks' inputs).
pub fn with_inputs<T>(
    paths: &[PathBuf],
    columns: LoadOptions,
    step_marker: Option<&nsys_lens::names::steps::StepSource>,
    f: impl FnOnce(&[DrillInput<'_>]) -> Result<T>,
) -> Result<T> {
    let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let exports = paths
        .iter()
        .map(|p| super::OpenExport::open(p, columns))
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<_> = exports.iter().map(super::OpenExport::rows).collect();
    let inputs: Vec<DrillInput<'_>> = rows
        .iter()
        .zip(&labels)
        .map(|(rows, label)| DrillInput {
            rows,
            label,
            step_marker,
        })
        .collect();
    f(&inputs)
}
