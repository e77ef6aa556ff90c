//! `nsys-lens gen`: synthetic exports with known answers.

use std::path::PathBuf;

use clap::Args;

use nsys_lens::error::{Error, Result};
use nsys_lens::synth;

#[derive(Args)]
pub struct GenArgs {
    /// Scenario name (`--list` shows them).
    #[arg(required_unless_present = "list")]
    pub scenario: Option<String>,
    /// Output SQLite file; the answers go to `<OUT minus .sqlite>.answers.json`.
    #[arg(required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Multiply the number of steps (≥ 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub scale: u32,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// List the scenarios.
    #[arg(long)]
    pub list: bool,
    /// Name the steps as this framework does: tensorrt-llm, vllm, vllm-old, sglang, pytorch,
    /// or none (`decode_iteration`, a range no built-in marker reads); the answers stay the
    /// TensorRT-LLM run's.
    #[arg(long, value_name = "STYLE", default_value = "tensorrt-llm")]
    pub markers: String,
    #[command(flatten)]
    pub costs: super::CostArgs,
}

pub fn run(args: &GenArgs) -> Result<()> {
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
    let style = synth::MarkerStyle::from_key(&args.markers)?;
    let costs = args.costs.costs();
    let answers = synth::generate_with_costs(scenario, out, &opts, style, &costs)?;
    let kernels = answers.get("kernels").and_then(|k| k.as_u64()).unwrap_or(0);
    eprintln!(
        "wrote {} ({kernels} kernels) and {}",
        out.display(),
        synth::answers_path(out).display()
    );
    Ok(())
}
