//! The `nsys-lens` command-line tool: the same analysis core as the page, for CI and scripts.
//!
//! Exit status: 0 for any analysed trace (YES or NO), 2 for usage errors, 3 for input that
//! cannot be analysed (with one line on stderr saying what is wrong and what to do).

// The CLI is native only. `cargo test --target wasm32-unknown-unknown --test web` still builds
// the package's binaries, so on wasm32 this crate is empty (and has no `main`).
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Give the host-overhead verdict for one trace (spec §2).
    Detect(cli::detect::DetectArgs),
    /// Find the root cause per step: one trace, or a baseline vs a target (spec §3).
    Analyze(cli::analyze::AnalyzeArgs),
    /// Kernel-level drill-down: gaps, CUDA-graph coverage, per-layer pattern, stragglers (spec §4).
    Drill(cli::drill::DrillArgs),
    /// Write the explainer report of one trace: Markdown, JSON, CSV tables, HTML (spec §5).
    Report(cli::report::ReportArgs),
    /// Hot lines, next functions to profile and rounds compared, from line_profiler text outputs.
    Lprof(cli::lprof::LprofArgs),
    /// Write a synthetic nsys export with known answers (for tests and benchmarks).
    Gen(cli::generate::GenArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Detect(args) => cli::detect::run(&args),
        Command::Analyze(args) => cli::analyze::run(&args),
        Command::Drill(args) => cli::drill::run(&args),
        Command::Report(args) => cli::report::run(&args),
        Command::Lprof(args) => cli::lprof::run(&args),
        Command::Gen(args) => cli::generate::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nsys-lens: {}", one_line(&e.to_string()));
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
