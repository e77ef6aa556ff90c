//! `cargo xtask fuzz`: long runs of the native fuzz test (`crate/tests/fuzz.rs`, see
//! `docs/fuzzing.md`), optimised: the same cases as `cargo xtask test` runs 2,000 of, by the
//! same code (the test reads its run from `NSYS_LENS_FUZZ_CASES`, `NSYS_LENS_FUZZ_SEED` and
//! `NSYS_LENS_FUZZ_CASE`). The test prints the time per case, mean and worst, and fails on the
//! first case running over its budget (a hang) or on any panic or unclear refusal, naming the
//! case and the seed.

use crate::{Result, cargo, run};

/// Cases of a run unless `--count` says otherwise.
pub const DEFAULT_COUNT: u64 = 100_000;

/// The test `cargo xtask fuzz` runs (the other tests of `tests/fuzz.rs` are not seeded runs).
const TEST: &str = "corrupted_exports_end_in_an_answer_or_a_clear_refusal";

pub struct Options {
    count: u64,
    seed: Option<u64>,
    case: Option<u64>,
    /// The unoptimised build, with overflow checks (slower, finds overflows a release wraps).
    debug: bool,
}

impl Options {
    /// Parses `[--count N] [--seed S] [--case I] [--debug]`; the error is a usage message.
    pub fn parse(args: &[String]) -> std::result::Result<Options, String> {
        let mut opts = Options {
            count: DEFAULT_COUNT,
            seed: None,
            case: None,
            debug: false,
        };
        let mut args = args.iter().map(String::as_str);
        while let Some(arg) = args.next() {
            if arg == "--debug" {
                opts.debug = true;
                continue;
            }
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None if ["--count", "--seed", "--case"].contains(&arg) => (arg, args.next()),
                None => return Err(format!("fuzz: unknown option `{arg}`")),
            };
            let value = value.ok_or(format!("fuzz: `{name}` needs a value"))?;
            let number = value
                .parse::<u64>()
                .map_err(|_| format!("fuzz: `{name} {value}`: not a whole number"))?;
            match name {
                "--count" if number > 0 => opts.count = number,
                "--seed" => opts.seed = Some(number),
                "--case" => opts.case = Some(number),
                "--count" => return Err("fuzz: `--count` must be at least 1".to_string()),
                _ => return Err(format!("fuzz: unknown option `{arg}`")),
            }
        }
        Ok(opts)
    }
}

/// Runs the fuzz test over `--count` cases (or the one `--case`), as `cargo test` would.
pub fn fuzz(opts: &Options) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["test", "-p", "nsys-lens", "--test", "fuzz"]);
    if !opts.debug {
        cmd.arg("--release");
    }
    cmd.args(["--", TEST, "--exact", "--nocapture"]);
    cmd.env("NSYS_LENS_FUZZ_CASES", opts.count.to_string());
    if let Some(seed) = opts.seed {
        cmd.env("NSYS_LENS_FUZZ_SEED", seed.to_string());
    }
    if let Some(case) = opts.case {
        cmd.env("NSYS_LENS_FUZZ_CASE", case.to_string());
    }
    println!(
        "fuzz: {} of seed {}",
        opts.case
            .map_or(format!("{} cases", opts.count), |c| format!("case {c}")),
        opts.seed
            .map_or("the test's own".to_string(), |s| s.to_string())
    );
    run(&mut cmd)
}
