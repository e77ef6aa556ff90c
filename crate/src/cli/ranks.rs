//! `nsys-lens ranks`: every rank of one export or of one file per rank, on one clock — who
//! arrives last at the collectives, by how much, and how long the ranks wait for each other.
//! Over many files, a map and a reduce: `--summary` writes one export's summary, `--merge`
//! gives the answer from the summaries.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::error::{Error, Result};
use nsys_lens::ranks;
use nsys_lens::trace::LoadOptions;

use super::{MarkerArgs, OutputArgs};

#[derive(Args)]
pub struct RanksArgs {
    /// SQLite exports: one holding several ranks, or one file per rank or node (put on one
    /// clock by their session start times, then by their collectives' ends); with --merge, the
    /// summaries --summary wrote.
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The map: write what `ranks` needs from this one export (its ranks' collective kernels and
    /// what the span before each holds, names, bounds, session start) as a JSON summary, to -o
    /// FILE or stdout.
    #[arg(long, conflicts_with = "merge")]
    pub summary: bool,
    /// The reduce: the files are summaries written by --summary; the answer is the same as
    /// `ranks` over the exports they summarize, in the same order.
    #[arg(long)]
    pub merge: bool,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub marker: MarkerArgs,
}

pub fn run(args: &RanksArgs) -> Result<()> {
    if args.merge {
        let summaries = args
            .traces
            .iter()
            .map(|p| read_summary(p))
            .collect::<Result<Vec<_>>>()?;
        let result = ranks::merge(&summaries)?;
        return args.out.write(&result, ranks::text::text);
    }
    let step_marker = args.marker.source()?;
    if args.summary {
        let [trace] = &args.traces[..] else {
            return Err(Error::Usage(format!(
                "ranks --summary writes the summary of one export, but was given {}: run it once per file (-o FILE.json each), then ranks --merge the summaries",
                args.traces.len()
            )));
        };
        let summary = summary_of(trace, step_marker.as_ref())?;
        let json = serde_json::to_string(&nsys_lens::report::Versioned(&summary))
            .map_err(|e| Error::Usage(format!("cannot serialize the summary: {e}")))?
            + "\n";
        return super::emit(&json, args.out.output.as_deref());
    }
    // The map over each file in turn (each opened, summarized and closed before the next), then
    // the reduce: memory holds one open file and the summaries.
    let summaries = args
        .traces
        .iter()
        .map(|trace| summary_of(trace, step_marker.as_ref()))
        .collect::<Result<Vec<ranks::FileSummary>>>()?;
    let result = ranks::merge(&summaries)?;
    args.out.write(&result, ranks::text::text)
}

/// The map over one export: opened, indexed and summarized.
fn summary_of(
    trace: &PathBuf,
    step_marker: Option<&nsys_lens::names::steps::StepSource>,
) -> Result<ranks::FileSummary> {
    super::drill::with_inputs(
        std::slice::from_ref(trace),
        LoadOptions::all(),
        step_marker,
        |inputs| match inputs {
            [input] => ranks::summarize_input(input),
            _ => Err(Error::Usage("ranks --summary takes one export".into())),
        },
    )
}

/// The summary at `path`; a file that cannot be read is an input error, one that is not a
/// summary of this version a usage error.
fn read_summary(path: &std::path::Path) -> Result<ranks::FileSummary> {
    let label = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Io {
        path: label.clone(),
        detail: e.to_string(),
    })?;
    let text = String::from_utf8_lossy(&bytes);
    ranks::summary::read(&text, &label)
}
