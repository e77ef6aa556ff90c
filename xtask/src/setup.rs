//! `cargo xtask setup`: install what the build needs beyond cargo's own crates.
//!
//! Each tool is one row of [`TOOLS`]: how to tell it is there, how to install it, and what to
//! run by hand when that fails. Later tasks add rows (wasm-bindgen-cli of a pinned version via
//! `cargo install`, npm packages for the page, Debian's chromium for browser tests) without
//! touching the loop.

use std::cell::Cell;
use std::process::Command;

use crate::{Result, run, succeeds};

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
}

pub const TOOLS: &[Tool] = &[
    Tool {
        name: "clang",
        why: "compiles SQLite's C sources for wasm32 (gcc cannot target wasm32)",
        check: || succeeds("clang", &["--version"]),
        install: || apt_install(&["clang"]),
        manual: "sudo apt-get install -y clang",
    },
    Tool {
        name: "rust target wasm32-unknown-unknown",
        why: "the analysis core is built for the browser",
        check: wasm32_target_installed,
        install: || run(Command::new("rustup").args(["target", "add", WASM32])),
        manual: "rustup target add wasm32-unknown-unknown",
    },
];

const WASM32: &str = "wasm32-unknown-unknown";

/// Checks every tool, installs the missing ones, and fails listing those still missing.
pub fn setup() -> Result<()> {
    let mut missing = Vec::new();
    for tool in TOOLS {
        if (tool.check)() {
            println!("  present    {}", tool.name);
            continue;
        }
        println!("  installing {} ({})", tool.name, tool.why);
        let outcome = (tool.install)().and_then(|()| {
            if (tool.check)() {
                Ok(())
            } else {
                Err("installed, but the check still fails".into())
            }
        });
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

/// `rustup target list --installed` for the active toolchain. Without rustup (a distribution's
/// Rust), look for the target's standard library in the sysroot instead.
fn wasm32_target_installed() -> bool {
    match Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == WASM32),
        _ => Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .is_ok_and(|out| {
                let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
                std::path::Path::new(&sysroot)
                    .join("lib/rustlib")
                    .join(WASM32)
                    .is_dir()
            }),
    }
}

thread_local! {
    /// `apt-get update` runs at most once per xtask run (a fresh machine has no package lists).
    static APT_UPDATED: Cell<bool> = const { Cell::new(false) };
}

/// `apt-get install -y PACKAGES`, as root or through sudo (only when not root and sudo exists).
fn apt_install(packages: &[&str]) -> Result<()> {
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
    if !APT_UPDATED.get() {
        APT_UPDATED.set(true);
        run(apt().args(["update", "-q"]))?;
    }
    run(apt().args(["install", "-y", "-q"]).args(packages))
}
