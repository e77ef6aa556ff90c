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
/// Seconds the wasm test suite may take in all (`WASM_BINDGEN_TEST_TIMEOUT`).
const WASM_TESTS_TIMEOUT_S: &str = "180";
/// Small public exports the wasm tests damage (`corrupted_public_exports_…` in
/// `crate/tests/web.rs`), copied beside the fixture from the shared folder.
pub const PUBLIC_FIXTURES: [&str; 3] = [
    "GindaChen_nsys-ai__healthy_1pct.v3.sqlite",
    "GindaChen_nsys-ai__mock.sqlite",
    "MohanadOdema_DLProf__w_Relu_nsys_profile.sqlite",
];

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

/// `cargo test -p nsys-lens --release --target wasm32-unknown-unknown --test web` (built as
/// `dist`'s test build, see [`super::Build::profile`]) over the fixture
/// [`write_fixture`] wrote, with the capabilities of [`CHROMEDRIVER_SWITCHES_REMOVED`]
/// (`webdriver.json`, which wasm-bindgen-test-runner reads).
pub fn wasm_tests() -> Result<()> {
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
    run(super::Build::Test
        .profile(&mut cargo())
        .args([
            "test",
            "-p",
            "nsys-lens",
            "--release",
            "--target",
            crate::WASM_TARGET,
            "--test",
            "web",
        ])
        .arg("--target-dir")
        .arg(super::wasm_target_dir())
        .env("CHROMEDRIVER", chromedriver())
        // The whole suite's time limit (the runner's default, 20 s, is the fuzz test's order
        // of magnitude on a 2-core machine); a hang fails after it, naming its case.
        .env("WASM_BINDGEN_TEST_TIMEOUT", WASM_TESTS_TIMEOUT_S)
        .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &capabilities)
        .env("PATH", path_with_cargo_bin()))
}

/// The generator's output for the wasm tests, which embed it (regenerated so it always matches
/// the generator), and the public exports they damage. `cli` is the native `nsys-lens` of this
/// tree (`cargo xtask test` has just built it for the native tests).
pub fn write_fixture(cli: &std::path::Path) -> Result<()> {
    let out = root().join(FIXTURE);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        copy_public_fixtures(dir)?;
    }
    run(Command::new(cli)
        .current_dir(root())
        .args(["gen", "host-bound"])
        .arg(&out)
        .args(["--scale", FIXTURE_SCALE]))
}

/// [`PUBLIC_FIXTURES`] into `dir/public/`, from `$NSYS_LENS_SHARED/traces/public` or the
/// `shared` folder beside the repository (as the native tests find them).
fn copy_public_fixtures(dir: &std::path::Path) -> Result<()> {
    let shared = std::env::var_os("NSYS_LENS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared"));
    let from = shared.join("traces/public");
    let to = dir.join("public");
    std::fs::create_dir_all(&to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    for name in PUBLIC_FIXTURES {
        let (src, dst) = (from.join(name), to.join(name));
        // The shared folder's files are read-only, and so is the copy a previous run made.
        let _ = std::fs::remove_file(&dst);
        std::fs::copy(&src, &dst).map_err(|e| {
            format!(
                "cannot copy the public export {} for the wasm tests: {e}. Put the shared folder \
                 beside the repository (../shared) or set NSYS_LENS_SHARED to it",
                src.display()
            )
        })?;
    }
    Ok(())
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

/// `node --test tests/e2e/` against the assembled `dist/`: as many test files at once as
/// [`e2e_jobs`] says, each with a browser, a server and a temporary folder of its own.
pub fn e2e() -> Result<()> {
    run(Command::new("node").current_dir(root()).args([
        "--test",
        &format!("--test-concurrency={}", e2e_jobs()),
        "tests/e2e/",
    ]))
}

/// Test files run at once: `NSYS_LENS_E2E_JOBS`, else one per core up to two. A page's analysis
/// runs on one worker at a time: one file at a time kept 1.3 of 2 cores busy (275 s), two keep
/// both (181–200 s; three took 190 s, the cores already full).
fn e2e_jobs() -> usize {
    std::env::var("NSYS_LENS_E2E_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(2)))
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
