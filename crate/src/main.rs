//! The `nsys-lens` command-line tool: the same analysis core as the page, for CI and scripts.
//!
//! Exit status: 0 for any analysed trace (YES or NO), 2 for usage errors, 3 for input that
//! cannot be analysed (with one line on stderr saying what is wrong and what to do).

// The CLI is native only. `cargo test --target wasm32-unknown-unknown --test web` still builds
// the package's binaries, so on wasm32 this crate is empty (and has no `main`).
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use nsys_lens::detect::names::{StepMarker, StepsPhase};
use nsys_lens::detect::{self, DetectConfig, Profile, ThresholdOverrides};
use nsys_lens::error::{Error, Result};
use nsys_lens::report;
use nsys_lens::synth;
use nsys_lens::trace::{self, LoadOptions};

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
    /// Give the host-overhead verdict for one trace (SPEC §2).
    Detect(DetectArgs),
    /// Write a synthetic nsys export with known answers (for tests and benchmarks).
    Gen(GenArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum ProfileArg {
    /// The reference rules measured correctly on multi-rank exports (default).
    Standard,
    /// The reference scripts' numbers and JSON exactly.
    TrtllmSkill,
}

#[derive(Clone, Copy, ValueEnum)]
enum StepsPhaseArg {
    Context,
    Generation,
}

#[derive(Args)]
struct DetectArgs {
    /// The SQLite export (`nsys export --type sqlite -o trace.sqlite trace.nsys-rep`).
    trace: PathBuf,
    /// Metric definitions to use.
    #[arg(long, value_enum, default_value = "standard")]
    profile: ProfileArg,
    /// Print the JSON result instead of the readable report.
    #[arg(long)]
    json: bool,
    /// Write the output to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Skip the host-prep metrics (M3a/b/c).
    #[arg(long)]
    no_m3: bool,
    /// M1 threshold (aggregate and context; default 0.30).
    #[arg(long, value_name = "F", value_parser = ratio)]
    gpu_idle_threshold: Option<f64>,
    /// M2 threshold (all scopes; default 0.10).
    #[arg(long, value_name = "F", value_parser = ratio)]
    launch_threshold: Option<f64>,
    /// M4 threshold (aggregate and context; default 0.60).
    #[arg(long, value_name = "F", value_parser = ratio)]
    gpu_util_threshold: Option<f64>,
    /// Generation-phase M1 threshold (standard profile; default 0.15).
    #[arg(long, value_name = "F", value_parser = ratio)]
    gen_gpu_idle_threshold: Option<f64>,
    /// Generation-phase M4 threshold (standard profile; default 0.80).
    #[arg(long, value_name = "F", value_parser = ratio)]
    gen_gpu_util_threshold: Option<f64>,
    /// M3a threshold (standard profile; default 0.50).
    #[arg(long, value_name = "F", value_parser = ratio)]
    host_prep_exposed_threshold: Option<f64>,
    /// M3b threshold (standard profile; default 0.05).
    #[arg(long, value_name = "F", value_parser = ratio)]
    host_prep_impact_threshold: Option<f64>,
    /// M3c threshold (standard profile; default 0.50).
    #[arg(long, value_name = "F", value_parser = ratio)]
    host_prep_idle_threshold: Option<f64>,
    /// Step markers of another framework: `pytorch` (ProfilerStep#N). Standard profile only.
    #[arg(long, value_name = "NAME", conflicts_with = "step_regex")]
    phase_map: Option<String>,
    /// Custom step marker: a regex over NVTX range names with optional named groups `step`,
    /// `ctx` and `gen` (request counts). Standard profile only.
    #[arg(long, value_name = "REGEX")]
    step_regex: Option<String>,
    /// Phase of steps whose marker has no `ctx`/`gen` counts.
    #[arg(long, value_enum, default_value = "generation")]
    steps_phase: StepsPhaseArg,
    /// Analyse only this window instead of first-kernel..last-kernel (ns, as in the export).
    #[arg(long, value_name = "START_NS:END_NS", value_parser = window)]
    window: Option<(i64, i64)>,
}

#[derive(Args)]
struct GenArgs {
    /// Scenario name (`--list` shows them).
    #[arg(required_unless_present = "list")]
    scenario: Option<String>,
    /// Output SQLite file; the answers go to `<OUT minus .sqlite>.answers.json`.
    #[arg(required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Multiply the number of steps (≥ 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    scale: u32,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// List the scenarios.
    #[arg(long)]
    list: bool,
}

fn ratio(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a ratio between 0 and 1"))
    }
}

fn window(s: &str) -> std::result::Result<(i64, i64), String> {
    let (a, b) = s.split_once(':').ok_or("expected START_NS:END_NS")?;
    let start: i64 = a
        .trim()
        .parse()
        .map_err(|_| format!("`{a}` is not an integer ns timestamp"))?;
    let end: i64 = b
        .trim()
        .parse()
        .map_err(|_| format!("`{b}` is not an integer ns timestamp"))?;
    if end <= start {
        return Err("the window's end must be after its start".into());
    }
    Ok((start, end))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Detect(args) => run_detect(&args),
        Command::Gen(args) => run_gen(&args),
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

fn run_detect(args: &DetectArgs) -> Result<()> {
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
        let marker = args.phase_map.is_some() || args.step_regex.is_some();
        if marker {
            return Err(Error::Usage(
                "--phase-map and --step-regex apply to the standard profile only: the reference scripts (trtllm-skill) know only TensorRT-LLM's _forward_step ranges".into(),
            ));
        }
        if let Some((flag, _)) = standard_only.iter().find(|(_, v)| v.is_some()) {
            return Err(Error::Usage(format!(
                "{flag} applies to the standard profile only: the reference scripts (trtllm-skill) fix that threshold"
            )));
        }
    }
    let label = args.trace.display().to_string();
    let loaded = trace::load_path(&args.trace, LoadOptions::detect())?;
    let cfg = DetectConfig {
        profile: match args.profile {
            ProfileArg::Standard => Profile::Standard,
            ProfileArg::TrtllmSkill => Profile::TrtllmSkill,
        },
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
        step_marker: step_marker(args)?,
    };
    let result = detect::detect(&loaded, &cfg)?;
    let text = if args.json {
        serde_json::to_string_pretty(&result)
            .map_err(|e| Error::Usage(format!("cannot serialize the result: {e}")))?
            + "\n"
    } else {
        report::text::detect_report(&result)
    };
    emit(&text, args.output.as_deref())
}

fn run_gen(args: &GenArgs) -> Result<()> {
    if args.list {
        for (name, about) in synth::scenarios() {
            println!("{name:<22} {about}");
        }
        return Ok(());
    }
    let (Some(scenario), Some(out)) = (args.scenario.as_deref(), args.out.as_deref()) else {
        return Err(Error::Usage(
            "gen needs SCENARIO and OUT (or --list)".into(),
        ));
    };
    let opts = synth::GenOptions {
        scale: args.scale,
        seed: args.seed,
    };
    let answers = synth::generate(scenario, out, &opts)?;
    let kernels = answers.get("kernels").and_then(|k| k.as_u64()).unwrap_or(0);
    eprintln!(
        "wrote {} ({kernels} kernels) and {}",
        out.display(),
        synth::answers_path(out).display()
    );
    Ok(())
}

/// The step marker chosen with `--phase-map` or `--step-regex`, if any.
fn step_marker(args: &DetectArgs) -> Result<Option<StepMarker>> {
    let phase = match args.steps_phase {
        StepsPhaseArg::Context => StepsPhase::Context,
        StepsPhaseArg::Generation => StepsPhase::Generation,
    };
    if let Some(name) = &args.phase_map {
        return StepMarker::builtin(name).map(Some).ok_or_else(|| {
            Error::Usage(format!(
                "unknown --phase-map `{name}` (known: pytorch; or give --step-regex)"
            ))
        });
    }
    args.step_regex
        .as_deref()
        .map(|re| StepMarker::new(re, phase).map_err(Error::Usage))
        .transpose()
}

/// Writes to the file given with `-o`, or to stdout.
fn emit(text: &str, output: Option<&Path>) -> Result<()> {
    let io = |path: String| {
        move |e: std::io::Error| Error::Io {
            path,
            detail: e.to_string(),
        }
    };
    match output {
        Some(path) => std::fs::write(path, text).map_err(io(path.display().to_string())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(io("stdout".into())),
            }
        }
    }
}
