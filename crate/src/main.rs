//! The `nsys-lens` command-line tool: the same analysis core as the page, for CI and scripts.
//!
//! Exit status: 0 for any analysed trace (YES or NO), 1 when a gate's condition held
//! (`analyze --fail-on-regression`, `detect --fail-on`), 2 for usage errors, 3 for input that
//! cannot be analysed (with one line on stderr saying what is wrong and what to do), 4 when
//! `analyze --fail-on-regression` was given traces that cannot be compared.

// The CLI is native only. `cargo test --target wasm32-unknown-unknown --test web` still builds
// the package's binaries, so on wasm32 this crate is empty (and has no `main`).
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::Gate;

#[derive(Parser)]
#[command(
    name = "nsys-lens",
    version,
    about = "Is the CPU the bottleneck? Host-overhead analysis of Nsight Systems SQLite exports."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Give the host-overhead verdict for one trace, and what bounds the run.
    #[command(after_help = concat!(
        "Exit codes: 0 analysed (YES or NO), 1 the run is bounded by a --fail-on kind, 2 usage error, 3 input that cannot be analysed (one line on stderr says what to do).\n\n",
        "Example: nsys-lens detect trace.sqlite --json --fail-on host-bound"
    ))]
    Detect(cli::detect::DetectArgs),
    /// Find the root cause per step: one trace, or a baseline vs a target.
    #[command(after_help = concat!(
        "Exit codes: 0 analysed, 1 the target regressed by more than --fail-on-regression PCT, 2 usage error, 3 input that cannot be analysed, 4 --fail-on-regression was given traces that cannot be compared (stderr says why).\n\n",
        "Example: nsys-lens analyze baseline.sqlite target.sqlite --fail-on-regression 5"
    ))]
    Analyze(cli::analyze::AnalyzeArgs),
    /// Kernel-level drill-down: gaps, CUDA-graph coverage, per-layer pattern, stragglers.
    #[command(after_help = concat!(
        "Exit codes: 0 done, 2 usage error, 3 input that cannot be analysed (one line on stderr says what to do).\n\n",
        "Example: nsys-lens drill rank0.sqlite rank1.sqlite --json"
    ))]
    Drill(cli::drill::DrillArgs),
    /// Every rank on one clock: who arrives last at the collectives, by how much, and how long
    /// the ranks wait for each other (one export with several ranks, or one file per rank).
    #[command(after_help = concat!(
        "Exit codes: 0 done, 2 usage error, 3 input that cannot be analysed (one line on stderr says what to do).\n\n",
        "Example: nsys-lens ranks trace_rank0.sqlite trace_rank1.sqlite --json\n\n",
        "Over many files, the map where each export lies, then the reduce (the same JSON):\n",
        "  nsys-lens ranks --summary trace_rank0.sqlite -o trace_rank0.ranks.json\n",
        "  nsys-lens ranks --merge trace_rank0.ranks.json trace_rank1.ranks.json --json"
    ))]
    Ranks(cli::ranks::RanksArgs),
    /// Write the explainer report of one trace: Markdown, JSON, CSV tables, HTML.
    #[command(after_help = concat!(
        "Exit codes: 0 done, 2 usage error, 3 input that cannot be analysed (one line on stderr says what to do).\n\n",
        "Example: nsys-lens report trace.sqlite --out report/"
    ))]
    Report(cli::report::ReportArgs),
    /// Hot lines, next functions to profile and rounds compared, from line_profiler text outputs.
    #[command(after_help = concat!(
        "Exit codes: 0 done, 2 usage error, 3 input that is not line_profiler output (one line on stderr says what to do).\n\n",
        "Example: nsys-lens lprof round1.txt round2.txt --json"
    ))]
    Lprof(cli::lprof::LprofArgs),
    /// Write a synthetic nsys export with known answers (for tests and benchmarks).
    #[command(after_help = concat!(
        "Exit codes: 0 done, 2 usage error or unknown scenario, 3 the file cannot be written.\n\n",
        "Example: nsys-lens gen host-bound host-bound.sqlite"
    ))]
    Gen(cli::generate::GenArgs),
    /// What a fix would buy: the critical path of the steady steps and the step time after a
    /// change of costs (host time, launches, kernels, copies, one NVTX op), by replaying the
    /// export.
    #[command(after_help = concat!(
        "Without a change, predicts the standard set: host ×0.5, launches ×0.5, kernels ×0.5, host ×0; copies ×0.5 too when copies and memsets fill at least 5 % of the window's device time.\n\n",
        "Exit codes: 0 done, 2 usage error, 3 input that cannot be analysed.\n\n",
        "Example: nsys-lens whatif trace.sqlite --host 0.5 --json"
    ))]
    Whatif(cli::whatif::WhatifArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Detect(args) => cli::detect::run(&args),
        Command::Analyze(args) => cli::analyze::run(&args),
        Command::Drill(args) => cli::drill::run(&args).map(|()| Gate::Pass),
        Command::Ranks(args) => cli::ranks::run(&args).map(|()| Gate::Pass),
        Command::Report(args) => cli::report::run(&args).map(|()| Gate::Pass),
        Command::Lprof(args) => cli::lprof::run(&args).map(|()| Gate::Pass),
        Command::Gen(args) => cli::generate::run(&args).map(|()| Gate::Pass),
        Command::Whatif(args) => cli::whatif::run(&args).map(|()| Gate::Pass),
    };
    match result {
        Ok(Gate::Pass) => ExitCode::SUCCESS,
        Ok(Gate::Failed(why)) => {
            eprintln!("nsys-lens: {}", one_line(&why));
            ExitCode::from(cli::EXIT_GATE)
        }
        Ok(Gate::NotComparable(why)) => {
            eprintln!("nsys-lens: {}", one_line(&why));
            ExitCode::from(cli::EXIT_NOT_COMPARABLE)
        }
        Err(e) => {
            eprintln!("nsys-lens: {}", one_line(&e.to_string()));
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
