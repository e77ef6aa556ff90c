//! The browser-side tests `cargo xtask test` runs: the wasm-bindgen-test suite
//! (`crate/tests/web.rs`, in a dedicated worker of headless Chromium through chromedriver) and the
//! page's end-to-end tests (`tests/e2e/`, Node's test runner driving Chromium with playwright-core
//! and Firefox with puppeteer-core). Every browser runs with its default settings: no switch that
//! lets a page do more than it would for a user.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use crate::{Result, cargo, root, run};

/// Generated export the wasm tests embed (`include_bytes!`) with its answers file: written here,
/// at a fixed path below the repository's `target/`, by the native generator.
pub const FIXTURE: &str = "target/web-fixtures/host-bound.sqlite";
/// `host-bound --scale 16`: about 3 MB, 20 480 kernels — large enough to see lazy reads.
const FIXTURE_SCALE: &str = "16";

/// chromedriver's own switches that change what a page may do or how it is scheduled (popups
/// allowed, timers never throttled, …), removed from the wasm tests' Chromium. The test runner
/// adds `headless`, `no-sandbox` and `disable-dev-shm-usage`; chromedriver keeps the switches it
/// needs (`enable-automation`, `remote-debugging-port`, a fresh `user-data-dir`) and quiet-network
/// ones.
const CHROMEDRIVER_SWITCHES_REMOVED: &[&str] = &[
    "disable-popup-blocking",
    "allow-pre-commit-input",
    "disable-background-timer-throttling",
    "disable-backgrounding-occluded-windows",
    "disable-client-side-phishing-detection",
    "disable-features",
    "disable-hang-monitor",
    "disable-prompt-on-repost",
];

/// Writes the fixture, then `cargo test -p nsys-lens --target wasm32-unknown-unknown --test web`
/// with the capabilities of [`CHROMEDRIVER_SWITCHES_REMOVED`] (`webdriver.json`, which
/// wasm-bindgen-test-runner reads).
pub fn wasm_tests() -> Result<()> {
    write_fixture()?;
    let capabilities = root().join("target/web-fixtures/webdriver.json");
    let excluded: Vec<String> = CHROMEDRIVER_SWITCHES_REMOVED
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect();
    std::fs::write(
        &capabilities,
        format!(
            "{{\"goog:chromeOptions\": {{\"excludeSwitches\": [{}]}}}}\n",
            excluded.join(", ")
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", capabilities.display()))?;
    run(cargo()
        .args([
            "test",
            "-p",
            "nsys-lens",
            "--target",
            crate::WASM_TARGET,
            "--test",
            "web",
        ])
        .env("CHROMEDRIVER", chromedriver())
        .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &capabilities)
        .env("PATH", path_with_cargo_bin()))
}

/// The generator's output for the wasm tests (regenerated so it always matches the generator).
pub fn write_fixture() -> Result<()> {
    let out = root().join(FIXTURE);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    run(cargo()
        .args([
            "run",
            "--quiet",
            "-p",
            "nsys-lens",
            "--",
            "gen",
            "host-bound",
        ])
        .arg(&out)
        .args(["--scale", FIXTURE_SCALE]))
}

/// Whether `tests/e2e/` holds test modules yet (the page's engineer writes them).
pub fn e2e_present() -> bool {
    std::fs::read_dir(root().join("tests/e2e")).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".mjs") || name.ends_with(".js")
        })
    })
}

/// `node --test tests/e2e/` against the assembled `dist/` (one file at a time: each starts a browser).
pub fn e2e() -> Result<()> {
    run(Command::new("node").current_dir(root()).args([
        "--test",
        "--test-concurrency=1",
        "tests/e2e/",
    ]))
}

fn chromedriver() -> OsString {
    std::env::var_os("CHROMEDRIVER").unwrap_or_else(|| "/usr/bin/chromedriver".into())
}

/// `PATH` with cargo's bin directory first, where `cargo install` put wasm-bindgen-test-runner.
fn path_with_cargo_bin() -> OsString {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("CARGO_HOME").map(PathBuf::from) {
        dirs.push(home.join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}
