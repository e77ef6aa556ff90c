//! The pip package: `pyproject.toml` (maturin, `bindings = "bin"`) turns the workspace's
//! `nsys-lens` binary into a wheel, so `pip install .` or `pip install <wheel>` puts it on PATH.
//!
//! `cargo xtask test` builds the wheel, installs it into a fresh virtual environment (offline:
//! the wheel has no dependencies) and checks that the installed `nsys-lens`, found on PATH the
//! way an activated environment finds it, prints the same `detect --json` as the binary cargo
//! built. The suite's wheel uses cargo's `dev` profile so that it reuses what `cargo test` has
//! just compiled (a release wheel means a release build of the whole crate and its
//! dependencies, minutes on a 2-core machine); the packaging is the same for both
//! (`maturin build --release` for the one to publish).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Result, root, run, target_dir};

/// The maturin the project installs (`cargo xtask setup`): a virtual environment of its own
/// under `target/tools`, so that no system Python is changed (Debian's refuses `pip install`).
fn tools_venv() -> PathBuf {
    crate::web::tools_dir().join("py")
}

/// A working maturin: the project's, else one on PATH.
pub fn maturin_path() -> Option<PathBuf> {
    let ours = tools_venv().join("bin/maturin");
    [ours, PathBuf::from("maturin")]
        .into_iter()
        .find(|p| crate::succeeds(&p.to_string_lossy(), &["--version"]))
}

/// `pip install maturin` into the tools' environment.
pub fn install_maturin() -> Result<()> {
    pip_install("maturin>=1.5,<2")
}

/// Whether the tools' environment has Python's `jsonschema`, with which
/// `crate/tests/json_schemas.rs` validates the CLI's JSON against `schemas/` as a user would.
pub fn jsonschema_present() -> bool {
    let python = tools_venv().join("bin/python");
    crate::succeeds(&python.to_string_lossy(), &["-c", "import jsonschema"])
}

/// `pip install jsonschema` into the tools' environment (4.18 resolves `$ref`s with
/// `referencing`, the current way).
pub fn install_jsonschema() -> Result<()> {
    pip_install("jsonschema>=4.18,<5")
}

/// Whether the tools' environment has Dask's `distributed`, with which
/// `crate/tests/ranks_merge.rs` runs `examples/ranks_dask.py` on a local cluster.
pub fn dask_present() -> bool {
    let python = tools_venv().join("bin/python");
    crate::succeeds(
        &python.to_string_lossy(),
        &["-c", "import dask.distributed"],
    )
}

/// `pip install dask[distributed]` into the tools' environment.
pub fn install_dask() -> Result<()> {
    pip_install("dask[distributed]>=2024.1")
}

/// `pip install SPEC` into `target/tools/py`, made first if missing (`python3 -m venv`; on Debian
/// without `ensurepip`, after installing `python3-venv`).
fn pip_install(spec: &str) -> Result<()> {
    let venv = tools_venv();
    if !venv.join("bin/python").is_file() {
        let make_venv = || run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        if make_venv().is_err() {
            crate::setup::apt_install(&["python3-venv"])?;
            make_venv()?;
        }
    }
    run(Command::new(venv.join("bin/python")).args(["-m", "pip", "install", "--quiet", spec]))
}

/// The public export the check runs on (a real capture, verdict NO, CPU samples).
const PUBLIC_EXPORT: &str = "brycelelbach_nsightful__power_iteration__baseline.sqlite";

fn public_export() -> Result<PathBuf> {
    let dir = match std::env::var_os("NSYS_LENS_SHARED") {
        Some(shared) => PathBuf::from(shared).join("traces/public"),
        None => root().join("../shared/traces/public"),
    };
    let path = dir.join(PUBLIC_EXPORT);
    match path.is_file() {
        true => Ok(path),
        false => Err(format!(
            "{} not found (put the shared folder beside the repository or set NSYS_LENS_SHARED)",
            path.display()
        )),
    }
}

/// Builds the wheel, installs it into a fresh virtual environment and compares its
/// `nsys-lens detect --json` with cargo's binary's.
pub fn test() -> Result<()> {
    test_built(|cmd| cmd)
}

/// [`test()`], maturin's cargo set up by `build` (`cargo xtask test` makes it compile the
/// workspace as its tests' build did, so the binary is that build's, not compiled again).
pub fn test_built(build: fn(&mut Command) -> &mut Command) -> Result<()> {
    let maturin = maturin_path().ok_or("maturin not found; run `cargo xtask setup`")?;
    let work = target_dir().join("wheel-test");
    let wheels = work.join("wheels");
    let _ = std::fs::remove_dir_all(&work);
    run(build(&mut Command::new(&maturin))
        .current_dir(root())
        .args([
            "build",
            "--profile",
            "dev",
            "--manifest-path",
            "crate/Cargo.toml",
        ])
        .arg("--target-dir")
        .arg(target_dir())
        .arg("--out")
        .arg(&wheels))?;
    let wheel = only_wheel(&wheels)?;

    let venv = work.join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps"])
        .arg(&wheel))?;

    let export = public_export()?;
    // As an activated environment runs it: by name, the environment's bin first on PATH.
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .map_err(|e| e.to_string())?;
    let mut installed = Command::new("nsys-lens");
    installed.env("PATH", &path).current_dir(&work);
    let found = which_in(&path, "nsys-lens")
        .ok_or("the wheel put no `nsys-lens` on the environment's PATH")?;
    if found != venv.join("bin/nsys-lens") {
        return Err(format!(
            "`nsys-lens` resolves to {}, not the environment's",
            found.display()
        ));
    }
    let cargo_built = target_dir().join("debug/nsys-lens");
    let mut reference = Command::new(&cargo_built);
    reference.current_dir(&work);
    let ours = stdout(installed.args(["detect"]).arg(&export).arg("--json"))?;
    let theirs = stdout(reference.args(["detect"]).arg(&export).arg("--json"))?;
    let verdict = |json: &str| -> Result<String> {
        let v: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("detect --json: {e}"))?;
        v["verdict"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "detect --json has no verdict".into())
    };
    let (v_ours, v_theirs) = (verdict(&ours)?, verdict(&theirs)?);
    if v_ours != v_theirs || ours != theirs {
        return Err(format!(
            "the wheel's nsys-lens says {v_ours}, cargo's {} says {v_theirs}{}",
            cargo_built.display(),
            if v_ours == v_theirs {
                " (other figures differ)"
            } else {
                ""
            }
        ));
    }
    println!(
        "wheel {} installed in a fresh venv: `nsys-lens detect {PUBLIC_EXPORT} --json` = cargo's (verdict {v_ours})",
        wheel.file_name().unwrap_or_default().to_string_lossy()
    );
    Ok(())
}

fn only_wheel(dir: &Path) -> Result<PathBuf> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "expected one wheel in {}, found {}",
            dir.display(),
            wheels.len()
        )),
    }
}

fn which_in(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn stdout(cmd: &mut Command) -> Result<String> {
    let shown = crate::show(cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{shown}` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("`{shown}`: {e}"))
}
