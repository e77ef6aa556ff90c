//! The CLI's subcommands, one file each; shared argument parsers and output here.

pub mod analyze;
pub mod detect;
pub mod drill;
pub mod generate;
pub mod lprof;
pub mod ranks;
pub mod report;
pub mod whatif;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;

use nsys_lens::costs::Costs;
use nsys_lens::error::{Error, Result};
use nsys_lens::names::phase_map::PhaseMap;
use nsys_lens::names::steps::{StepMarker, StepSource, StepStyle, StepsPhase};
use nsys_lens::profile::Profile;
use nsys_lens::report::Versioned;
use nsys_lens::trace::{self, FileRows, FileScan, LoadOptions, ScanFold};

#[derive(Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// The reference rules measured correctly on multi-rank exports (default).
    Standard,
    /// The reference scripts' numbers and JSON exactly.
    TrtllmSkill,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Standard => Profile::Standard,
            ProfileArg::TrtllmSkill => Profile::TrtllmSkill,
        }
    }
}

/// `--json` and `-o FILE`, shared by the commands that print a result.
#[derive(Args)]
pub struct OutputArgs {
    /// Print the JSON result instead of the readable report.
    #[arg(long)]
    pub json: bool,
    /// Write the output to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Writes `result` as pretty JSON (`--json`, its `schema_version` first) or as the readable
    /// `text(result)`.
    pub fn write<T: Serialize>(&self, result: &T, text: impl FnOnce(&T) -> String) -> Result<()> {
        let out = if self.json {
            serde_json::to_string_pretty(&Versioned(result))
                .map_err(|e| Error::Usage(format!("cannot serialize the result: {e}")))?
                + "\n"
        } else {
            text(result)
        };
        emit(&out, self.output.as_deref())
    }
}

/// What a command's gate found (`analyze --fail-on-regression`, `detect --fail-on`); commands
/// without a gate pass.
pub enum Gate {
    Pass,
    /// The gate's condition held: exit [`EXIT_GATE`], saying why on stderr.
    Failed(String),
    /// The pair cannot be held to the gate: exit [`EXIT_NOT_COMPARABLE`], saying why.
    NotComparable(String),
}

/// Exit status when a gate's condition held (a regression beyond the threshold, a run bounded
/// by a `--fail-on` kind).
pub const EXIT_GATE: u8 = 1;
/// Exit status when `--fail-on-regression` was given two traces that cannot be compared.
pub const EXIT_NOT_COMPARABLE: u8 = 4;

/// A percentage argument: a finite number ≥ 0.
pub fn percent(s: &str) -> std::result::Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` must be a percentage ≥ 0, such as 5 or 2.5")),
    }
}

/// A ratio argument in [0, 1].
pub fn ratio(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a ratio between 0 and 1"))
    }
}

/// A `START_NS:END_NS` window argument.
pub fn window(s: &str) -> std::result::Result<(i64, i64), String> {
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

#[derive(Clone, Copy, ValueEnum)]
pub enum StepsPhaseArg {
    Context,
    Generation,
}

/// Cost factors, shared by `whatif` (what it predicts) and `gen` (what it writes).
#[derive(Args)]
pub struct CostArgs {
    /// The host's own time between CUDA calls × F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub host: f64,
    /// Kernel-launch calls (cudaLaunchKernel*, cudaGraphLaunch) × F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub launch: f64,
    /// Every kernel's, CUDA-graph replay's and graph node's GPU duration × F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub kernels: f64,
    /// Every copy's (memcpy) and memset's GPU duration × F (pinned host memory, fewer bytes).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub copies: f64,
    /// The kernels of one class (gemm, attention, collective, norm, elementwise, reduction,
    /// sampling, memory, other, …) × F, on top of --kernels; repeatable.
    #[arg(long, value_name = "CLASS=F", value_parser = named_factor)]
    pub kernel_class: Vec<(String, f64)>,
    /// One NVTX op's self time (e.g. _prepare_tp_inputs=0.5) × F, on top of --host; repeatable.
    #[arg(long, value_name = "NAME=F", value_parser = named_factor)]
    pub op: Vec<(String, f64)>,
}

impl CostArgs {
    pub fn costs(&self) -> Costs {
        Costs {
            host: self.host,
            launch: self.launch,
            kernels: self.kernels,
            copies: self.copies,
            kernel_classes: self.kernel_class.clone(),
            ops: self.op.clone(),
            graphs: false,
        }
    }
}

/// `NAME=F`; the last `=` splits, so a name may hold one.
fn named_factor(s: &str) -> std::result::Result<(String, f64), String> {
    let (name, f) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=F"))?;
    let f: f64 = f.parse().map_err(|_| format!("{f:?} is not a number"))?;
    Ok((name.to_string(), f))
}

/// The user's step marker, shared by detect, analyze and drill (standard profile only).
#[derive(Args)]
pub struct MarkerArgs {
    /// Step markers: a built-in one (`tensorrt-llm`, `vllm`, `sglang`, `pytorch`) instead of
    /// the one found in the trace, or a phase map FILE.json, `{"phase": ["pattern", …]}`
    /// (`re:` = regex search, else case-insensitive substring; first match wins).
    #[arg(long, value_name = "NAME|FILE.json", conflicts_with = "step_regex")]
    pub phase_map: Option<String>,
    /// Custom step marker: a regex over NVTX range names with optional named groups `step`,
    /// `ctx` and `gen` (request counts).
    #[arg(long, value_name = "REGEX")]
    pub step_regex: Option<String>,
    /// Phase of steps whose marker has no `ctx`/`gen` counts.
    #[arg(long, value_enum, default_value = "generation")]
    pub steps_phase: StepsPhaseArg,
}

impl MarkerArgs {
    /// Whether the user gave a marker.
    pub fn given(&self) -> bool {
        self.phase_map.is_some() || self.step_regex.is_some()
    }

    /// The marker chosen with `--phase-map` or `--step-regex`, if any.
    pub fn source(&self) -> Result<Option<StepSource>> {
        let phase = match self.steps_phase {
            StepsPhaseArg::Context => StepsPhase::Context,
            StepsPhaseArg::Generation => StepsPhase::Generation,
        };
        if let Some(name) = &self.phase_map {
            return phase_map(name).map(Some);
        }
        self.step_regex
            .as_deref()
            .map(|re| {
                StepMarker::new(re, phase)
                    .map(StepSource::Regex)
                    .map_err(Error::Usage)
            })
            .transpose()
    }

    /// Refuses a marker under `trtllm-skill`, whose reference scripts know one marker only.
    pub fn check_profile(&self, profile: Profile) -> Result<()> {
        if profile == Profile::TrtllmSkill && self.given() {
            return Err(Error::Usage(
                "--phase-map and --step-regex apply to the standard profile only: the reference scripts (trtllm-skill) know only TensorRT-LLM's _forward_step ranges".into(),
            ));
        }
        Ok(())
    }
}

/// A built-in marker by name, or a phase map read from a JSON file.
fn phase_map(arg: &str) -> Result<StepSource> {
    if let Some(style) = StepStyle::from_key(arg) {
        return Ok(StepSource::Builtin(style));
    }
    let path = Path::new(arg);
    if !arg.ends_with(".json") && !path.exists() {
        let known: Vec<&str> = StepStyle::ALL.iter().map(|s| s.key()).collect();
        return Err(Error::Usage(format!(
            "unknown --phase-map `{arg}`: give a built-in marker ({}) or a phase map FILE.json",
            known.join(", ")
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: arg.to_string(),
        detail: e.to_string(),
    })?;
    PhaseMap::from_json(&text)
        .map(StepSource::PhaseMap)
        .map_err(|e| Error::Usage(format!("{arg}: {e}")))
}

/// The rows an export's scan may keep: `trace::row_budget` of its size.
fn budget_of(path: &Path) -> usize {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    trace::row_budget(bytes, 0)
}

/// An export opened the way every command and the page read it: its tables scanned once
/// (`trace::FileScan`, the kernel table on a thread of its own, as many of their rows kept as `trace::row_budget` allows the file under
/// 512 MiB, the page's bound), each pass a fold over the rows read
/// again in start order (`trace::FileRows`, sorted runs merged), so memory does not grow with the
/// file and no row order is assumed.
pub struct OpenExport {
    conn: rusqlite::Connection,
    scan: FileScan,
}

impl OpenExport {
    /// Scans `path` for the tables `opts` reads, keeping as many rows as `trace::row_budget`
    /// allows, and lets the passes keep the rows they read from the file within what is left:
    /// for commands whose passes read a table more than once (Root cause, the drill-down, the
    /// report), where a row unpacked from memory costs a tenth of one read again through SQLite.
    pub fn open(path: &Path, opts: LoadOptions) -> Result<OpenExport> {
        OpenExport::scan(path, opts, budget_of(path))
    }

    /// [`OpenExport::open`] for a command whose passes read each table once (`detect`),
    /// folding `fold` while the scan reads (`trace::FileScan::of_file_folding`): the event
    /// rows are folded, not kept, and the passes keep nothing — no pass follows them, so a
    /// row they packed would never be unpacked. The export, and the fold's GPU side if it came
    /// through (else the passes read the rows from the file, decoded ahead on threads of their
    /// own: `trace::FileRows`).
    pub fn read_once_folding<F: ScanFold>(
        path: &Path,
        opts: LoadOptions,
        fold: &mut F,
    ) -> Result<(OpenExport, Option<F::Gpu>)> {
        let conn = trace::open_path(path)?;
        let (mut scan, gpu) = FileScan::of_file_folding(&conn, path, opts, budget_of(path), fold)?;
        scan.cache_rows_up_to(0);
        Ok((OpenExport { conn, scan }, gpu))
    }

    fn scan(path: &Path, opts: LoadOptions, budget: usize) -> Result<OpenExport> {
        let conn = trace::open_path(path)?;
        let scan = FileScan::of_file(&conn, path, opts, budget)?;
        Ok(OpenExport { conn, scan })
    }

    /// Bytes of rows kept: by the scan, and by the passes so far.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn kept_bytes(&self) -> usize {
        self.scan.cached_bytes()
    }

    /// The export's rows in start order.
    pub fn rows(&self) -> FileRows<'_> {
        FileRows::over(&self.conn, &self.scan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsys_lens::detect::{DetectConfig, detect_rows};
    use nsys_lens::synth::{GenOptions, generate};

    /// `detect`'s one read: the scan folds the event rows and keeps none of them, whether the
    /// fold came through (one rank, in start order) or gave way to the passes (a multi-rank
    /// file, a run per rank), which keep nothing either; the verdicts agree with those over an
    /// export opened the way commands that read rows again open it.
    #[test]
    fn a_one_shot_detect_keeps_no_event_row_and_agrees_with_an_open_export() {
        use nsys_lens::detect::folded::{VerdictFold, came_through, detect_folded};
        let dir = std::env::temp_dir().join(format!("nsys-lens-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let cfg = DetectConfig::default();
        let events = ["kernels", "calls", "ranges"];
        for (scenario, folds) in [("host-bound", true), ("tp2-straggler", false)] {
            let path = dir.join(format!("{scenario}.sqlite"));
            generate(scenario, &path, &GenOptions::default()).expect("an export");
            let mut fold = VerdictFold::new(&cfg);
            let (once, gpu) =
                OpenExport::read_once_folding(&path, LoadOptions::detect(), &mut fold)
                    .expect("scanned");
            assert_eq!(
                came_through(&fold, &gpu, once.scan.meta()),
                folds,
                "{scenario}"
            );
            let kept = once.scan.cached_rows();
            assert!(
                kept.iter().all(|&(t, n, _)| n == 0 || !events.contains(&t)),
                "{scenario}: {kept:?}"
            );
            let scanned = once.kept_bytes();
            let a = detect_folded(&once.rows(), fold, gpu, &cfg).expect("a verdict");
            assert_eq!(
                once.kept_bytes(),
                scanned,
                "{scenario}: the passes kept rows"
            );
            let open = OpenExport::open(&path, LoadOptions::detect()).expect("scanned");
            let b = detect_rows(&open.rows(), &cfg).expect("a verdict");
            let json = |r| serde_json::to_string(r).expect("json");
            assert_eq!(json(&a), json(&b), "{scenario}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
