//! `cargo xtask web` and `cargo xtask dist`: the static page.
//!
//! `web` builds the core for wasm32, runs the wasm-bindgen CLI (`--target web`) and binaryen's
//! `wasm-opt`, and assembles `dist/` = `www/**` + `static/**` + `pkg/`. No bundler: the page is
//! plain ES modules.
//!
//! `dist` also writes `dist/nsys-lens-offline.html`, one self-contained file that works from
//! `file://` with no network (see [`offline`] for what it inlines and the contract with `www/`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Result, WASM_TARGET, cargo, root, run, target_dir};

mod codec;
pub mod offline;
pub mod test;

/// The wasm-bindgen CLI must be exactly the version of the `wasm-bindgen` crate in Cargo.lock.
pub const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// The module's name as wasm-bindgen writes it: `pkg/nsys_lens.js`, `pkg/nsys_lens_bg.wasm`.
pub const MODULE: &str = "nsys_lens";

/// Where every wasm32 build goes (clippy, docs, the wasm tests, the page's module): a target
/// directory of its own, so cargo's lock on a target directory lets a wasm32 build run beside a
/// native one (`cargo xtask test` runs them at once).
pub fn wasm_target_dir() -> PathBuf {
    target_dir().join("wasm")
}

/// `dist/` at the repository root.
pub fn dist_dir() -> PathBuf {
    root().join("dist")
}

/// `cargo xtask web`: build and assemble `dist/`.
pub fn web() -> Result<()> {
    web_built(Build::Deploy)
}

/// How the page's wasm module is built: as deployed, or for the test suite.
#[derive(Clone, Copy)]
pub enum Build {
    /// Fat LTO and one codegen unit: the smallest, fastest module (`web`, `dist`, `serve`).
    Deploy,
    /// No LTO and 16 codegen units, then `wasm-opt` with no optimising pass (it reads,
    /// validates and writes the module with the deployed build's features): the same code,
    /// built on every core (`cargo xtask test`; on 2 cores the crate compiles in 44 s where thin
    /// LTO over 4 units took 63 s and fat LTO over one far longer). `-O1` took 20 s of one core
    /// (npm's wasm-opt runs in node) for no page test faster. Run `dist` before measuring the
    /// page.
    Test,
}

fn web_built(build: Build) -> Result<()> {
    crate::setup::setup_page_build()?;
    let wasm = build_wasm(build)?;
    let pkg = target_dir().join("web/pkg");
    bindgen(&wasm, &pkg)?;
    optimize(&pkg.join(format!("{MODULE}_bg.wasm")), build)?;
    assemble(&pkg, &dist_dir())?;
    println!("page assembled in {}", dist_dir().display());
    Ok(())
}

/// `cargo xtask dist`: `web`, then the single-file offline page.
pub fn dist() -> Result<()> {
    dist_built(Build::Deploy)
}

/// [`dist`] built as `build` says.
pub fn dist_built(build: Build) -> Result<()> {
    web_built(build)?;
    let out = offline::write(&dist_dir())?;
    println!("offline page: {}", out.display());
    Ok(())
}

impl Build {
    /// Sets the release profile of a wasm32 build of this kind through the environment, so the
    /// native release profile is untouched. The wasm tests run under [`Build::Test`]'s too
    /// (`cargo test --release`, whose test harness takes the bench profile): their build of the
    /// library and its dependencies is then the one `dist` links, compiled once.
    pub fn profile(self, cmd: &mut Command) -> &mut Command {
        let (lto, units) = match self {
            Build::Deploy => ("fat", "1"),
            Build::Test => ("off", "16"),
        };
        cmd.env("CARGO_PROFILE_RELEASE_LTO", lto)
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", units)
            .env("CARGO_PROFILE_BENCH_LTO", lto)
            .env("CARGO_PROFILE_BENCH_CODEGEN_UNITS", units)
    }
}

/// Release build of the library for wasm32, as `build` says.
fn build_wasm(build: Build) -> Result<PathBuf> {
    run(build.profile(
        cargo()
            .args([
                "build",
                "-p",
                "nsys-lens",
                "--lib",
                "--release",
                "--target",
                WASM_TARGET,
            ])
            .arg("--target-dir")
            .arg(wasm_target_dir()),
    ))?;
    let wasm = wasm_target_dir()
        .join(WASM_TARGET)
        .join("release")
        .join(format!("{MODULE}.wasm"));
    if wasm.is_file() {
        Ok(wasm)
    } else {
        Err(format!("the build did not produce {}", wasm.display()))
    }
}

/// `wasm-bindgen --target web`: the JS glue and the processed module, in a fresh `pkg`.
fn bindgen(wasm: &Path, pkg: &Path) -> Result<()> {
    let tool = wasm_bindgen_path().ok_or_else(|| {
        format!(
            "wasm-bindgen {WASM_BINDGEN_VERSION} not found; run `cargo xtask setup` \
             (or `cargo install wasm-bindgen-cli --version {WASM_BINDGEN_VERSION}`)"
        )
    })?;
    remove_dir(pkg)?;
    run(Command::new(tool)
        .args(["--target", "web", "--out-name", MODULE, "--out-dir"])
        .arg(pkg)
        .arg(wasm))?;
    if pkg.join("snippets").exists() {
        return Err(
            "wasm-bindgen wrote JS snippets (pkg/snippets): the offline page cannot inline them; \
                    remove the inline_js / module= binding that needs them"
                .into(),
        );
    }
    Ok(())
}

/// The wasm-bindgen CLI of the pinned version: on `PATH` or in cargo's bin directory.
pub fn wasm_bindgen_path() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("wasm-bindgen")];
    if let Some(home) = cargo_home() {
        candidates.push(home.join("bin/wasm-bindgen"));
    }
    candidates
        .into_iter()
        .find(|c| tool_version(c, "--version").is_some_and(|v| v.contains(WASM_BINDGEN_VERSION)))
}

fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// What `TOOL ARG` prints on stdout, when it runs and exits 0.
fn tool_version(tool: &Path, arg: &str) -> Option<String> {
    let out = Command::new(tool).arg(arg).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where npm's `binaryen` puts `wasm-opt`: the repository's `node_modules` or `target/tools`.
/// (Debian's and crates.io's wasm-opt are too old for wasm-bindgen's output.)
pub fn wasm_opt_path() -> Option<PathBuf> {
    [
        root().join("node_modules"),
        tools_dir().join("node_modules"),
    ]
    .into_iter()
    .map(|dir| dir.join(".bin/wasm-opt"))
    .find(|p| tool_version(p, "--version").is_some())
}

/// Tools installed for the build only (npm `binaryen`), outside the page's `package.json`.
pub fn tools_dir() -> PathBuf {
    target_dir().join("tools")
}

/// `wasm-opt` in place (`-O3` deployed, `-O1` tested), with the features rustc's wasm32 target
/// emits by default.
fn optimize(wasm: &Path, build: Build) -> Result<()> {
    let tool = wasm_opt_path()
        .ok_or("wasm-opt (npm package binaryen) not found; run `cargo xtask setup`")?;
    let before = file_size(wasm);
    let tmp = wasm.with_extension("opt.wasm");
    run(Command::new(tool)
        .arg(match build {
            Build::Deploy => "-O3",
            Build::Test => "--strip-debug",
        })
        .args([
            "--enable-bulk-memory",
            "--enable-mutable-globals",
            "--enable-nontrapping-float-to-int",
            "--enable-sign-ext",
            "--enable-reference-types",
            "--enable-multivalue",
        ])
        .arg(wasm)
        .arg("-o")
        .arg(&tmp))?;
    fs::rename(&tmp, wasm).map_err(|e| format!("cannot replace {}: {e}", wasm.display()))?;
    println!("wasm-opt: {} → {} bytes", before, file_size(wasm));
    Ok(())
}

fn file_size(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// `dist/` = `www/**` + `static/**` + `pkg/` (rebuilt from scratch so no stale file survives).
fn assemble(pkg: &Path, dist: &Path) -> Result<()> {
    remove_dir(dist)?;
    for dir in ["www", "static"] {
        let src = root().join(dir);
        if src.is_dir() {
            copy_tree(&src, dist)?;
        } else {
            println!("note: {dir}/ does not exist yet; nothing copied from it");
        }
    }
    copy_tree(pkg, &dist.join("pkg"))?;
    version_service_worker(dist)
}

/// The line of `www/sw.js` that names its cache; `dist` names it after the site's content.
const CACHE_LINE: &str = "const CACHE = 'nsys-lens-v1';";

/// Names the service worker's cache after a hash of every other file of the site, so a new
/// deployment gets a new cache (and the old one is dropped) instead of serving stale assets.
fn version_service_worker(dist: &Path) -> Result<()> {
    let sw = dist.join("sw.js");
    let text = fs::read_to_string(&sw).map_err(|e| format!("cannot read {}: {e}", sw.display()))?;
    if !text.contains(CACHE_LINE) {
        return Err(format!(
            "{} no longer has the line `{CACHE_LINE}` that dist versions",
            sw.display()
        ));
    }
    let mut files = Vec::new();
    list_files(dist, &mut files)?;
    files.sort();
    uncached_scripts(dist, &files, &text)?;
    let mut all = Vec::new();
    for f in files.iter().filter(|f| **f != sw) {
        all.extend_from_slice(
            f.strip_prefix(dist)
                .unwrap_or(f)
                .to_string_lossy()
                .as_bytes(),
        );
        all.extend(fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?);
    }
    let digest: String = codec::sha256(&all)[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let versioned = text.replace(CACHE_LINE, &format!("const CACHE = 'nsys-lens-{digest}';"));
    fs::write(&sw, versioned).map_err(|e| format!("cannot write {}: {e}", sw.display()))
}

/// Fails when a script of the site is missing from the service worker's `ASSETS`: offline, the
/// page would then load without it and never start.
fn uncached_scripts(dist: &Path, files: &[PathBuf], sw_text: &str) -> Result<()> {
    let missing: Vec<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix(dist).ok())
        .map(|f| f.to_string_lossy().replace('\\', "/"))
        .filter(|f| f.ends_with(".js") && f != "sw.js" && !f.starts_with("pkg/snippets/"))
        .filter(|f| !sw_text.contains(&format!("'./{f}'")))
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "www/sw.js does not cache {} (add each to its ASSETS): the page would not start offline",
            missing.join(", ")
        )),
    }
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_dir() {
            list_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}

/// Copies the files below `src` into `dst` (created), keeping the relative layout.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    fs::create_dir_all(dst).map_err(|e| format!("cannot create {}: {e}", dst.display()))?;
    let entries = fs::read_dir(src).map_err(|e| format!("cannot list {}: {e}", src.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", src.display()))?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        if from.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            fs::copy(&from, &to)
                .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
        }
    }
    Ok(())
}
