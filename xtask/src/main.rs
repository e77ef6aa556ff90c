//! `cargo xtask`: the project's task runner (the alias is in `.cargo/config.toml`).
//!
//! One function per task, plain `std::process::Command`, no shell: a fresh Debian machine (or
//! CI) needs nothing but cargo to run it.
//!
//! - `setup`: install the tools the build needs but cargo cannot fetch (see [`setup::TOOLS`]).
//! - `test`:  setup, lint, every test of the workspace, the pip wheel, the wasm tests, `dist` and
//!   the page's tests; `--full` adds the exhaustive sweeps.
//! - `lint`:  rustfmt check and clippy with warnings denied.
//! - `bench`: the large-trace benchmark (figures for the README; not a pass/fail test).
//! - `fuzz`:  long runs of the native fuzz test (damaged exports; see [`fuzz`]).
//! - `web`, `dist`, `serve`: the static page (see [`web`] and [`serve`]).

mod bench;
mod fuzz;
mod serve;
mod setup;
mod web;
mod wheel;

use std::env;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The browser's target: the core is built, linted and documented for it too.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// A task's failure: one line saying which step failed and why.
pub type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  setup                 install missing tools (clang, the wasm32 target, wasm-bindgen-cli, binaryen,
                        maturin, chromium + chromedriver, playwright-core, firefox-esr,
                        puppeteer-core);
                        report what could not be installed
  test [--full]         setup, lint, the workspace's tests (cargo-nextest when installed, else
                        `cargo test --workspace`), the pip wheel (built, installed in a fresh venv,
                        run), the wasm tests in headless Chromium, `dist`, and the page's
                        end-to-end tests (tests/e2e/, when present) in headless Chromium and
                        Firefox; --full: the exhaustive sweeps too (every public export in every
                        row order and view, 2,000 fuzz cases), run before a release
  wheel                 build the pip wheel (pyproject.toml, maturin), install it in a fresh venv and
                        check its `nsys-lens detect --json` against cargo's (also part of `test`)
  web                   build the page into dist/ (wasm32 release build, wasm-bindgen, wasm-opt, www/ + static/)
  dist                  web, plus dist/nsys-lens-offline.html: one self-contained file for file:// use
  serve [--port N]      dist, then serve dist/ at http://127.0.0.1:N/ (default {PORT})
  lint                  `cargo fmt --check`, clippy (native and wasm32) and `cargo doc`, warnings denied
                        (also part of `test`)
  bench [--scale N] [--runs N]
                        generate a large host-bound trace (cached under target/bench/) and measure
                        the bare SQLite scan, `nsys-lens detect` wall time and peak RSS
                        (defaults: --scale {SCALE}, --runs 3)
  fuzz [--count N] [--seed S] [--case I] [--debug]
                        the native fuzz test (crate/tests/fuzz.rs, docs/fuzzing.md) over N damaged
                        copies of the public exports (default {COUNT}), optimised (--debug: the
                        unoptimised build, overflow checks on); prints the time per case, mean and
                        worst, and fails on a hang (a case over 30 s), a panic or an unclear refusal,
                        naming its case and seed (--case I runs that one alone)
  help                  this text";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some(task) = args.first() else {
        return usage_error("no task given");
    };
    let rest = &args[1..];
    if matches!(task.as_str(), "setup" | "lint" | "web" | "dist" | "wheel")
        && let Some(arg) = rest.first()
    {
        return usage_error(&format!("`{task}` takes no options (got `{arg}`)"));
    }
    let outcome = match task.as_str() {
        "setup" => setup::setup(),
        "test" => match rest {
            [] => test(Sweep::Ci),
            [full] if full == "--full" => test(Sweep::Full),
            [arg, ..] => return usage_error(&format!("`test` takes only --full (got `{arg}`)")),
        },
        "lint" => lint(),
        "wheel" => wheel::test(),
        "web" => web::web(),
        "dist" => web::dist(),
        "serve" => match serve::Options::parse(rest) {
            Ok(opts) => serve::serve(&opts),
            Err(msg) => return usage_error(&msg),
        },
        "bench" => match bench::Options::parse(rest) {
            Ok(opts) => bench::bench(&opts),
            Err(msg) => return usage_error(&msg),
        },
        "fuzz" => match fuzz::Options::parse(rest) {
            Ok(opts) => fuzz::fuzz(&opts),
            Err(msg) => return usage_error(&msg),
        },
        // Internal: a group of `test`'s steps run beside the others (`Beside`).
        BESIDE => match Group::ALL
            .iter()
            .find(|g| rest.first().is_some_and(|r| r == g.name()))
        {
            Some(group) => group.run(),
            None => return usage_error("__beside takes a group: tools, wasm-lint or wasm-build"),
        },
        "help" | "-h" | "--help" => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        other => return usage_error(&format!("unknown task `{other}`")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask {task}: FAILED: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> String {
    USAGE
        .replace("{SCALE}", &bench::DEFAULT_SCALE.to_string())
        .replace("{PORT}", &serve::DEFAULT_PORT.to_string())
        .replace("{COUNT}", &fuzz::DEFAULT_COUNT.to_string())
}

/// Unknown task or bad option: usage on stderr, exit 2 (as the product's CLI does).
fn usage_error(msg: &str) -> ExitCode {
    eprintln!("xtask: {msg}\n\n{}", usage());
    ExitCode::from(2)
}

/// How much a test run sweeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// One representative per behaviour: what CI runs.
    Ci,
    /// Every export × every row order × every view, every fuzz case (before a release):
    /// `NSYS_LENS_FULL=1` in the tests' environment (`crate/tests/common`'s `full`).
    Full,
}

/// `cargo xtask test [--full]`: what CI runs (`.ci/run`). Stops after the first failing stage.
///
/// The wasm32 builds (clippy, the wasm tests, `dist`) are part of the test because the analysis
/// core must stay portable to the browser: a native-only dependency or API in the library fails
/// here, not months later. The lint checks run first: CI holds the tree to them. The wasm32
/// builds run beside the native steps ([`Beside`]): the wasm tests and `dist` leave a core idle
/// for long stretches (one browser, SQLite's C compiled alone) that the native tests fill, as
/// the wasm build fills the one the native tests' last long test leaves; the two lints each
/// keep both cores busy, so side by side they take as long as in turn. Only
/// the compilers are installed before them; the rest of `setup` (downloads, mostly) runs beside.
fn test(sweep: Sweep) -> Result<()> {
    if sweep == Sweep::Full {
        // SAFETY: set before any thread of this process starts; the children inherit it.
        unsafe { env::set_var("NSYS_LENS_FULL", "1") };
    }
    if env::var_os("CARGO_INCREMENTAL").is_none()
        && !target_dir().join("debug/incremental").exists()
    {
        // A fresh target directory (CI's) compiles each crate once, where incremental
        // compilation's bookkeeping only costs: the tests' build took 66 s without it against
        // 85 s with it on 2 cores. A developer's existing incremental build keeps it.
        // SAFETY: set before any thread of this process starts; the children inherit it.
        unsafe { env::set_var("CARGO_INCREMENTAL", "0") };
    }
    let started = Instant::now();
    let mut summary = Summary::default();
    let result = (|| {
        summary.step("setup: what compiles the core", setup::setup_compilers)?;
        let tools = Beside::spawn(Group::Tools)?;
        let wasm_lint = Beside::spawn(Group::WasmLint)?;
        let native = checks(&mut summary, &native_checks(Lint::InTestBuild));
        let wasm = summary.join(wasm_lint);
        native.and(wasm)?;
        // The tests' build needs no tool but the compilers: it runs while the tools' downloads
        // finish, which on a fresh machine outlast the lint.
        let mut build = native_tests(Stage::Build);
        let built = summary.step(
            &format!("clippy -D warnings, as the compiler of: {}", show(&build)),
            || run(clippy_compiles(&mut build)),
        );
        let tools = summary.join(tools);
        built.and(tools)?;
        // The wasm tests embed a generated export: written by the CLI the tests' build made.
        // Their build then runs beside the native tests, filling the core a test binary leaves.
        web::test::write_fixture(&target_dir().join("debug/nsys-lens"))?;
        let wasm_build = Beside::spawn(Group::WasmBuild)?;
        let tests = summary.step(&show(&native_tests(Stage::Run)), || {
            run(clippy_compiles(&mut native_tests(Stage::Run)))
        });
        let wheel = summary.step("pip wheel: build, install in a fresh venv, run", || {
            wheel::test_built(clippy_compiles)
        });
        let wasm = summary.join(wasm_build);
        tests.and(wheel).and(wasm)?;
        if web::test::e2e_present() {
            summary.step(
                "page end-to-end tests (node --test tests/e2e/)",
                web::test::e2e,
            )?;
        } else {
            println!("\nnote: no tests/e2e/*.mjs yet; page end-to-end tests skipped");
        }
        Ok(())
    })();
    summary.print();
    println!(
        "  wall time {:.1} s (steps run beside each other overlap), CPU {:.1} s",
        started.elapsed().as_secs_f64(),
        children_cpu()
    );
    result
}

/// The workspace's tests: by cargo-nextest when it is installed (every test binary's tests on
/// both cores at once, where `cargo test` runs one binary after another), else `cargo test`.
/// The crates hold no doctests, which nextest would not run.
fn native_tests(stage: Stage) -> Command {
    let mut cmd = cargo();
    match succeeds("cargo", &["nextest", "--version"]) {
        true => cmd.args(["nextest", "run", "--workspace"]),
        false => cmd.args(["test", "--workspace"]),
    };
    match stage {
        Stage::Build => cmd.arg("--no-run"),
        Stage::Run => cmd.arg("--no-fail-fast"),
    };
    cmd
}

/// What a [`native_tests`] command does: build the tests, or run them (built already).
#[derive(Clone, Copy)]
enum Stage {
    Build,
    Run,
}

/// Makes clippy the compiler of the workspace's crates in `cmd`'s build, its lints denied as
/// `cargo clippy -- -D warnings` denies them: one build of the workspace both lints and tests it,
/// where `cargo clippy` then the tests built every dependency twice (checked, then compiled).
/// `cargo clippy` runs clippy the same way (`RUSTC_WORKSPACE_WRAPPER`, `CLIPPY_ARGS`); the
/// dependencies are compiled by rustc alone, as they are for `cargo clippy`.
fn clippy_compiles(cmd: &mut Command) -> &mut Command {
    cmd.env("RUSTC_WORKSPACE_WRAPPER", clippy_driver()).env(
        "CLIPPY_ARGS",
        "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
    )
}

/// The toolchain's `clippy-driver`: beside the cargo that started us, else on `PATH`.
fn clippy_driver() -> PathBuf {
    env::var_os("CARGO")
        .map(PathBuf::from)
        .and_then(|cargo| Some(cargo.parent()?.join("clippy-driver")))
        .filter(|driver| driver.is_file())
        .unwrap_or_else(|| PathBuf::from("clippy-driver"))
}

/// The steps `cargo xtask test` runs in a child of its own beside the native ones.
#[derive(Clone, Copy)]
enum Group {
    /// The rest of `setup` (the page's and the tests' tools: downloads mostly, where the lint
    /// keeps both cores busy compiling).
    Tools,
    /// clippy and the docs for wasm32.
    WasmLint,
    /// The wasm tests in headless Chromium, then `dist` (the module the page's tests load).
    WasmBuild,
}

impl Group {
    const ALL: [Group; 3] = [Group::Tools, Group::WasmLint, Group::WasmBuild];

    fn name(self) -> &'static str {
        match self {
            Group::Tools => "tools",
            Group::WasmLint => "wasm-lint",
            Group::WasmBuild => "wasm-build",
        }
    }

    /// Runs the group's steps in this process (the child's side of [`Beside`]).
    fn run(self) -> Result<()> {
        let mut summary = Summary::default();
        match self {
            Group::Tools => summary.step("setup: the page's and the tests' tools", setup::setup),
            Group::WasmLint => checks(&mut summary, &wasm_checks()),
            Group::WasmBuild => (|| {
                summary.step("wasm tests in headless Chromium", web::test::wasm_tests)?;
                summary.step("cargo xtask dist (test build)", || {
                    web::dist_built(web::Build::Test)
                })
            })(),
        }
    }
}

/// The hidden task a [`Beside`] child runs: `xtask __beside GROUP`.
const BESIDE: &str = "__beside";

/// A [`Group`] of steps running in a child `xtask` while this process runs others. Its output
/// goes to a log, printed whole when it ends, so the two never interleave; its steps' result
/// lines join the summary. Its cargo builds use a target directory of their own
/// ([`web::wasm_target_dir`]), so neither waits on the other's lock.
struct Beside {
    group: Group,
    child: std::process::Child,
    log: PathBuf,
}

impl Beside {
    fn spawn(group: Group) -> Result<Beside> {
        let dir = target_dir().join("ci-logs");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let log = dir.join(format!("{}.log", group.name()));
        let out = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let exe = env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
        let child = Command::new(exe)
            .args([BESIDE, group.name()])
            .current_dir(root())
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start the {} steps: {e}", group.name()))?;
        println!(
            "\n==> {} steps started beside (log: {})",
            group.name(),
            log.display()
        );
        Ok(Beside { group, child, log })
    }
}

/// `cargo xtask lint`: formatting, clippy (native and wasm32) and the docs, warnings denied.
/// Every check runs even if an earlier one fails, so one pass shows everything to fix.
fn lint() -> Result<()> {
    let mut summary = Summary::default();
    let native = checks(&mut summary, &native_checks(Lint::Alone));
    let wasm = checks(&mut summary, &wasm_checks());
    summary.print();
    native.and(wasm)
}

/// One lint check: its name, cargo's arguments, and whether it builds docs (warnings denied
/// through `RUSTDOCFLAGS`).
type Check = (&'static str, Vec<String>, bool);

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Where the native clippy runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lint {
    /// `cargo clippy` of its own (`cargo xtask lint`).
    Alone,
    /// As the compiler of the tests' build ([`clippy_compiles`]; `cargo xtask test`).
    InTestBuild,
}

/// The native checks: formatting, clippy over every target (unless the tests' build runs it),
/// the docs.
fn native_checks(lint: Lint) -> Vec<Check> {
    let mut checks = vec![(
        "cargo fmt --check",
        args(&["fmt", "--all", "--", "--check"]),
        false,
    )];
    if lint == Lint::Alone {
        checks.push((
            "cargo clippy -D warnings",
            args(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
            false,
        ));
    }
    checks.push((
        "cargo doc (warnings denied)",
        args(&["doc", "--workspace", "--no-deps"]),
        true,
    ));
    checks
}

/// The library's checks for wasm32, in the wasm32 builds' target directory.
fn wasm_checks() -> Vec<Check> {
    let dir = web::wasm_target_dir().to_string_lossy().into_owned();
    let wasm = ["--target", WASM_TARGET, "--target-dir", &dir];
    vec![
        (
            "cargo clippy -D warnings (wasm32)",
            [
                args(&["clippy", "-p", "nsys-lens", "--lib"]),
                args(&wasm),
                args(&["--", "-D", "warnings"]),
            ]
            .concat(),
            false,
        ),
        (
            "cargo doc (wasm32, warnings denied)",
            [args(&["doc", "-p", "nsys-lens", "--no-deps"]), args(&wasm)].concat(),
            true,
        ),
    ]
}

/// Runs every check as a step of `summary`, even after one fails; fails naming those that did.
fn checks(summary: &mut Summary, checks: &[Check]) -> Result<()> {
    let mut failed = Vec::new();
    for (name, args, docs) in checks {
        let outcome = summary.step(name, || {
            let mut cmd = cargo();
            cmd.args(args);
            if *docs {
                cmd.env("RUSTDOCFLAGS", "-D warnings");
            }
            run(&mut cmd)
        });
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(format!("lint found problems: {}", failed.join(", "))),
    }
}

/// Timed steps of a task, printed as one summary line each.
#[derive(Default)]
struct Summary {
    lines: Vec<String>,
}

impl Summary {
    /// Runs one step between a header and a result line, and records the result line.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        println!("\n==> {name}");
        let started = Instant::now();
        let cpu_before = children_cpu();
        let result = f();
        let secs = started.elapsed().as_secs_f64();
        let cpu = children_cpu() - cpu_before;
        let line = match &result {
            Ok(()) => format!("ok      {name} ({secs:.1} s, CPU {cpu:.1} s)"),
            Err(e) => format!("FAILED  {name} ({secs:.1} s, CPU {cpu:.1} s): {e}"),
        };
        println!("<== {line}");
        self.lines.push(line);
        result
    }

    /// Waits for `beside` to end, prints its log, and adds its steps' result lines.
    fn join(&mut self, mut beside: Beside) -> Result<()> {
        let name = beside.group.name();
        let status = beside.child.wait();
        let log = std::fs::read_to_string(&beside.log).unwrap_or_default();
        println!(
            "\n==> {name} steps, run beside (log: {})",
            beside.log.display()
        );
        print!("{log}");
        self.lines.extend(
            log.lines()
                .filter_map(|l| l.strip_prefix("<== "))
                .map(|l| format!("{l} (beside)")),
        );
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("the {name} steps failed ({s}); their log is above")),
            Err(e) => Err(format!("cannot wait for the {name} steps: {e}")),
        }
    }

    fn print(&self) {
        println!("\nsummary:");
        for line in &self.lines {
            println!("  {line}");
        }
    }
}

/// User and system CPU seconds of this process's children that ended and were waited for (and of
/// theirs): what a step's commands cost, where its wall time hides what ran beside it.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given, which is zeroed plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The repository root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// Cargo's target directory, honouring `CARGO_TARGET_DIR` like cargo does.
pub fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// The cargo that started us (`$CARGO`), so the same toolchain builds everything; runs in the root.
pub fn cargo() -> Command {
    let mut cmd = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// Runs a command with inherited stdio, echoing it first; a non-zero exit is an error.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = show(cmd);
    println!("$ {shown}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` exited with {status}"))
    }
}

/// Whether a command can be started and exits 0 (its output is discarded): tool detection.
pub fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command as a readable one-liner for logs.
pub fn show(cmd: &Command) -> String {
    let program = cmd.get_program();
    let program = Path::new(program).file_name().unwrap_or(program);
    std::iter::once(program)
        .chain(cmd.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}
