//! `cargo xtask setup`: install what the build needs beyond cargo's own crates.
//!
//! Each tool is one row of [`TOOLS`]: how to tell it is there, how to install it, and what to
//! run by hand when that fails: clang and the wasm32 target for the core; wasm-bindgen-cli
//! (pinned, via `cargo install`) and npm's binaryen for the page; maturin (in a virtual
//! environment under `target/tools`) for the pip wheel, and Python's jsonschema beside it for the
//! schema test and `dask[distributed]` for the Dask example's test; Debian's chromium and
//! chromedriver and npm's playwright-core, Debian's firefox-esr and npm's puppeteer-core for the
//! browser tests. Tools from different sources ([`Source`]) install at once.

use std::process::Command;
use std::sync::Mutex;

use crate::{Result, WASM_TARGET, run, succeeds};

/// One external tool the build depends on.
pub struct Tool {
    pub name: &'static str,
    /// Why the project needs it (printed, so a failed install is understandable).
    pub why: &'static str,
    /// True when the tool is usable as is.
    pub check: fn() -> bool,
    /// Installs the tool; afterwards `check` is asked again.
    pub install: fn() -> Result<()>,
    /// What a person can run when `install` is not possible here.
    pub manual: &'static str,
    /// Needed to build the page (`web`, `dist`, `serve`); the others only run tests.
    pub builds_page: bool,
    /// Needed to compile the core at all, natively and for wasm32 (lint included): what
    /// `cargo xtask test` installs before anything else, the rest beside its lint.
    pub compiles_core: bool,
    /// Where it comes from: tools from different sources install at once.
    pub source: Source,
}

/// Where a tool comes from. A fresh machine's set-up is downloads for the most part (Debian's
/// packages, PyPI, npm) beside one compile (wasm-bindgen-cli): each source installs on a thread
/// of its own, its tools in turn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Apt,
    Rustup,
    Cargo,
    Npm,
    Pip,
}

impl Source {
    /// The sources, each installed on a thread of its own.
    const ALL: [Source; 5] = [
        Source::Apt,
        Source::Rustup,
        Source::Cargo,
        Source::Npm,
        Source::Pip,
    ];
}

pub const TOOLS: &[Tool] = &[
    Tool {
        name: "clang",
        why: "compiles SQLite's C sources for wasm32 (gcc cannot target wasm32)",
        check: || succeeds("clang", &["--version"]),
        install: || apt_install(&["clang"]),
        manual: "sudo apt-get install -y clang",
        builds_page: true,
        compiles_core: true,
        source: Source::Apt,
    },
    Tool {
        name: "rust target wasm32-unknown-unknown",
        why: "the analysis core is built for the browser",
        check: wasm32_target_installed,
        install: || run(Command::new("rustup").args(["target", "add", WASM_TARGET])),
        manual: "rustup target add wasm32-unknown-unknown",
        builds_page: true,
        compiles_core: true,
        source: Source::Rustup,
    },
    Tool {
        name: "wasm-bindgen-cli 0.2.130",
        why: "turns the wasm32 build into the page's ES module (must equal the wasm-bindgen crate's version); its wasm-bindgen-test-runner runs the browser tests",
        check: || crate::web::wasm_bindgen_path().is_some(),
        install: || {
            // Not optimised: its build is most of a fresh machine's set-up. Built at level 0 it
            // took 78 s of CPU against 188 s at level 1 (and twice that at 3), and turns the
            // test build's 7.8 MB wasm into the page's module in 2.2 s against 0.7 s: CI runs it
            // twice (`dist`, the wasm tests' runner).
            run(crate::cargo().args([
                "--config",
                "profile.release.opt-level=0",
                "install",
                "wasm-bindgen-cli",
                "--version",
                crate::web::WASM_BINDGEN_VERSION,
            ]))
        },
        manual: "cargo install wasm-bindgen-cli --version 0.2.130   (not --locked: it fails)",
        builds_page: true,
        compiles_core: false,
        source: Source::Cargo,
    },
    Tool {
        name: "wasm-opt (npm binaryen)",
        why: "optimizes the page's wasm module (Debian's and crates.io's wasm-opt reject wasm-bindgen's output)",
        check: || crate::web::wasm_opt_path().is_some(),
        install: install_binaryen,
        manual: "npm install --prefix target/tools --no-save binaryen",
        builds_page: true,
        compiles_core: false,
        source: Source::Npm,
    },
    Tool {
        name: "maturin (pip, in target/tools/py)",
        why: "builds the pip wheel (pyproject.toml) whose install the tests check",
        check: || crate::wheel::maturin_path().is_some(),
        install: crate::wheel::install_maturin,
        manual: "python3 -m venv target/tools/py && target/tools/py/bin/pip install 'maturin>=1.5,<2'   (or any maturin on PATH)",
        builds_page: false,
        compiles_core: false,
        source: Source::Pip,
    },
    Tool {
        name: "jsonschema (pip, in target/tools/py)",
        why: "validates the CLI's JSON against schemas/ offline, as a user's Python would (crate/tests/json_schemas.rs)",
        check: crate::wheel::jsonschema_present,
        install: crate::wheel::install_jsonschema,
        manual: "python3 -m venv target/tools/py && target/tools/py/bin/pip install 'jsonschema>=4.18,<5'",
        builds_page: false,
        compiles_core: false,
        source: Source::Pip,
    },
    Tool {
        name: "dask[distributed] (pip, in target/tools/py)",
        why: "runs examples/ranks_dask.py (the map of `ranks` over many exports) on a local cluster (crate/tests/ranks_merge.rs)",
        check: crate::wheel::dask_present,
        install: crate::wheel::install_dask,
        manual: "python3 -m venv target/tools/py && target/tools/py/bin/pip install 'dask[distributed]>=2024.1'",
        builds_page: false,
        compiles_core: false,
        source: Source::Pip,
    },
    Tool {
        name: "chromium",
        why: "runs the wasm tests and the page's end-to-end tests headless",
        check: || succeeds("chromium", &["--version"]),
        install: || apt_install(&["chromium"]),
        manual: "sudo apt-get install -y chromium",
        builds_page: false,
        compiles_core: false,
        source: Source::Apt,
    },
    Tool {
        name: "chromedriver",
        why: "wasm-bindgen-test-runner drives Chromium through it",
        check: || succeeds("chromedriver", &["--version"]),
        install: || apt_install(&["chromium-driver"]),
        manual: "sudo apt-get install -y chromium-driver",
        builds_page: false,
        compiles_core: false,
        source: Source::Apt,
    },
    Tool {
        name: "playwright-core (npm)",
        why: "drives Chromium in the page's end-to-end tests (tests/e2e/); it downloads no browser",
        check: || {
            crate::root()
                .join("node_modules/playwright-core/package.json")
                .is_file()
        },
        install: || install_npm_dev("playwright-core"),
        manual: "npm install --save-dev playwright-core   (in the repository root)",
        builds_page: false,
        compiles_core: false,
        source: Source::Npm,
    },
    Tool {
        name: "firefox-esr",
        why: "runs the page's end-to-end tests in Firefox too (tests/e2e/firefox.test.mjs)",
        check: || succeeds("firefox-esr", &["--version"]),
        install: || apt_install(&["firefox-esr"]),
        manual: "sudo apt-get install -y firefox-esr",
        builds_page: false,
        compiles_core: false,
        source: Source::Apt,
    },
    Tool {
        name: "puppeteer-core (npm)",
        why: "drives stock Firefox over WebDriver BiDi in the end-to-end tests; it downloads no browser",
        check: || {
            crate::root()
                .join("node_modules/puppeteer-core/package.json")
                .is_file()
        },
        install: || install_npm_dev("puppeteer-core"),
        manual: "npm install --save-dev puppeteer-core   (in the repository root)",
        builds_page: false,
        compiles_core: false,
        source: Source::Npm,
    },
];

/// Checks every tool, installs the missing ones, and fails listing those still missing.
pub fn setup() -> Result<()> {
    install(TOOLS.iter())
}

/// Only the tools that compiling the core needs (clang, the wasm32 target).
pub fn setup_compilers() -> Result<()> {
    install(TOOLS.iter().filter(|t| t.compiles_core))
}

/// Only the tools that building the page needs (what `serve` must install on a fresh machine).
pub fn setup_page_build() -> Result<()> {
    install(TOOLS.iter().filter(|t| t.builds_page))
}

fn install<'a>(tools: impl Iterator<Item = &'a Tool>) -> Result<()> {
    let mut wanted = Vec::new();
    for tool in tools {
        if (tool.check)() {
            println!("  present    {}", tool.name);
        } else {
            wanted.push(tool);
        }
    }
    let outcomes: Vec<(&Tool, Result<()>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = Source::ALL
            .iter()
            .map(|&source| {
                let of_source: Vec<&Tool> = wanted
                    .iter()
                    .copied()
                    .filter(|t| t.source == source)
                    .collect();
                let thread = scope.spawn({
                    let of_source = of_source.clone();
                    move || install_in_turn(&of_source)
                });
                (of_source, thread)
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|(of_source, thread)| {
                thread.join().unwrap_or_else(|_| {
                    let failed = || Err("its install panicked".to_string());
                    of_source.into_iter().map(|t| (t, failed())).collect()
                })
            })
            .collect()
    });
    let mut missing = Vec::new();
    for (tool, outcome) in outcomes {
        match outcome {
            Ok(()) => println!("  installed  {}", tool.name),
            Err(e) => {
                println!("  MISSING    {}: could not install it: {e}", tool.name);
                println!(
                    "             needed because it {}; install it by hand: {}",
                    tool.why, tool.manual
                );
                missing.push(tool.name);
            }
        }
    }
    if missing.is_empty() {
        println!("  all tools present");
        Ok(())
    } else {
        Err(format!(
            "could not install: {} (see above for how to install by hand)",
            missing.join(", ")
        ))
    }
}

/// Installs `tools` (of one source) one after another.
fn install_in_turn<'a>(tools: &[&'a Tool]) -> Vec<(&'a Tool, Result<()>)> {
    tools
        .iter()
        .map(|&tool| {
            println!("  installing {} ({})", tool.name, tool.why);
            let outcome = (tool.install)().and_then(|()| match (tool.check)() {
                true => Ok(()),
                false => Err("installed, but the check still fails".into()),
            });
            (tool, outcome)
        })
        .collect()
}

/// `rustup target list --installed` for the active toolchain. Without rustup (a distribution's
/// Rust), look for the target's standard library in the sysroot instead.
fn wasm32_target_installed() -> bool {
    match Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == WASM_TARGET),
        _ => Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .is_ok_and(|out| {
                let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
                std::path::Path::new(&sysroot)
                    .join("lib/rustlib")
                    .join(WASM_TARGET)
                    .is_dir()
            }),
    }
}

/// One `apt-get` at a time (it holds dpkg's lock), and `apt-get update` at most once per xtask
/// run (a fresh machine has no package lists): whether it ran.
static APT: Mutex<bool> = Mutex::new(false);

/// `apt-get install -y PACKAGES`, as root or through sudo (only when not root and sudo exists).
pub fn apt_install(packages: &[&str]) -> Result<()> {
    if !succeeds("apt-get", &["--version"]) {
        return Err("apt-get not found (not a Debian/Ubuntu machine)".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let apt = || {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg("apt-get");
            sudo
        };
        cmd.env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    if !root && !succeeds("sudo", &["--version"]) {
        return Err("not root and sudo is not installed".into());
    }
    let mut updated = APT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !*updated {
        *updated = true;
        run(apt().args(["update", "-q"]))?;
    }
    run(apt().args(["install", "-y", "-q"]).args(packages))
}

/// npm's `binaryen` into `target/tools` (build-only; kept out of the page's package.json).
fn install_binaryen() -> Result<()> {
    npm_present()?;
    let dir = crate::web::tools_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    run(Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-fund",
            "--no-audit",
            "--prefix",
        ])
        .arg(&dir)
        .arg("binaryen"))
}

/// An npm test tool in the repository's `node_modules`: `npm install` when package.json lists
/// it (versions from package-lock.json), else added to package.json as a dev dependency.
fn install_npm_dev(package: &str) -> Result<()> {
    npm_present()?;
    let root = crate::root();
    let listed = std::fs::read_to_string(root.join("package.json"))
        .is_ok_and(|text| text.contains(&format!("\"{package}\"")));
    let mut cmd = Command::new("npm");
    cmd.current_dir(&root)
        .args(["install", "--no-fund", "--no-audit"]);
    if !listed {
        cmd.args(["--save-dev", package]);
    }
    run(&mut cmd)
}

fn npm_present() -> Result<()> {
    if succeeds("npm", &["--version"]) {
        Ok(())
    } else {
        Err("npm not found (install Node.js: sudo apt-get install -y nodejs npm)".into())
    }
}
