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
    /// Scale the host's own time between CUDA calls (every host range and gap) by F; every
    /// random draw stays the unscaled run's.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub host: f64,
    /// Scale kernel-launch calls (cudaLaunchKernel*, cudaGraphLaunch) by F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub launch: f64,
    /// Scale every kernel's and graph node's GPU duration by F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub kernels: f64,
    /// Scale the kernels of one class (gemm, attention, collective, norm, elementwise,
    /// reduction, sampling, memory, other) by F, on top of --kernels; repeatable.
    #[arg(long, value_name = "CLASS=F", value_parser = named_factor)]
    pub kernel_class: Vec<(String, f64)>,
    /// Scale one NVTX op's self time (e.g. _prepare_tp_inputs=0.5) by F, on top of --host;
    /// repeatable.
    #[arg(long, value_name = "NAME=F", value_parser = named_factor)]
    pub op: Vec<(String, f64)>,
}

/// `NAME=F`; the last `=` splits, so a name may hold one.
fn named_factor(s: &str) -> std::result::Result<(String, f64), String> {
    let (name, f) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=F"))?;
    let f: f64 = f.parse().map_err(|_| format!("{f:?} is not a number"))?;
    Ok((name.to_string(), f))
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
    let costs = synth::Costs {
        host: args.host,
        launch: args.launch,
        kernels: args.kernels,
        kernel_classes: args.kernel_class.clone(),
        ops: args.op.clone(),
    };
    let answers = synth::generate_with_costs(scenario, out, &opts, style, &costs)?;
    let kernels = answers.get("kernels").and_then(|k| k.as_u64()).unwrap_or(0);
    eprintln!(
        "wrote {} ({kernels} kernels) and {}",
        out.display(),
        synth::answers_path(out).display()
    );
    Ok(())
}
