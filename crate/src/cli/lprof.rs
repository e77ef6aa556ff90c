//! `nsys-lens lprof FILE…`: line_profiler rounds (the optimization loop's second half).

use std::path::PathBuf;

use clap::Args;

use nsys_lens::error::{Error, Result};
use nsys_lens::lprof::{self, LprofInput, Options, names};

use super::OutputArgs;

#[derive(Args)]
pub struct LprofArgs {
    /// line_profiler text outputs: rounds in order (first = baseline), or with --ranks the rank
    /// files of one round.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The files are the ranks of one round: merge them instead of comparing them.
    #[arg(long)]
    pub ranks: bool,
    /// Hot lines and changed lines listed per round.
    #[arg(long, default_value_t = lprof::DEFAULT_TOP)]
    pub top: usize,
    /// The nsys hand-off's functions to keep in the next line (its `TLLM_LINE_PROFILER_FUNCTIONS="…"`
    /// line, or the comma-separated names).
    #[arg(long, value_name = "LIST")]
    pub handoff: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(args: &LprofArgs) -> Result<()> {
    let inputs = args
        .files
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
            Ok(LprofInput {
                name: path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                ),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let options = Options {
        top: args.top,
        ranks: args.ranks,
        handoff_functions: args
            .handoff
            .as_deref()
            .map(names::functions_of_line)
            .unwrap_or_default(),
    };
    let report = lprof::analyze(&inputs, &options)?;
    args.output.write(&report, lprof::report::markdown)
}
