//! The GitHub Action (`action.yml` at the repository root) without GitHub and without network:
//! the file read as YAML (a composite action whose steps use only declared inputs), each step's
//! script checked by `bash -n`, and the gate step run by bash the way the runner runs it (its
//! `env` filled from the inputs, `GITHUB_OUTPUT` a file): with a stub `nsys-lens` that records
//! the command line it gets, and with the real CLI on a public export and the generated
//! regression pair.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use yaml_rust2::{Yaml, YamlLoader};

use common::{BIN, cli_dir, generate_in, public_trace};

fn action() -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../action.yml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut docs = YamlLoader::load_from_str(&text).expect("action.yml is YAML");
    assert_eq!(docs.len(), 1, "one YAML document");
    docs.remove(0)
}

fn map_keys(y: &Yaml) -> Vec<String> {
    y.as_hash()
        .map(|h| {
            h.keys()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn step<'a>(a: &'a Yaml, name: &str) -> &'a Yaml {
    a["runs"]["steps"]
        .as_vec()
        .expect("runs.steps")
        .iter()
        .find(|s| s["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no step named {name}"))
}

/// The `${{ … }}` expressions of a text.
fn expressions(text: &str) -> Vec<String> {
    text.match_indices("${{")
        .map(|(i, _)| {
            let rest = &text[i + 3..];
            rest[..rest.find("}}").expect("closed expression")]
                .trim()
                .to_string()
        })
        .collect()
}

#[test]
fn the_action_is_a_composite_action_whose_steps_use_its_inputs() {
    let a = action();
    assert!(a["name"].as_str().is_some() && a["description"].as_str().is_some());
    assert_eq!(a["runs"]["using"].as_str(), Some("composite"));
    let inputs = map_keys(&a["inputs"]);
    for want in [
        "command",
        "trace",
        "baseline",
        "target",
        "fail-on",
        "fail-on-regression",
        "args",
        "install",
    ] {
        assert!(inputs.contains(&want.to_string()), "input {want}");
    }
    for name in &inputs {
        let input = &a["inputs"][name.as_str()];
        assert!(
            input["description"].as_str().is_some(),
            "{name}: description"
        );
        assert!(input["default"].as_str().is_some(), "{name}: a default");
    }
    assert_eq!(
        expressions(
            a["outputs"]["exit-code"]["value"]
                .as_str()
                .expect("exit-code")
        ),
        ["steps.gate.outputs.exit-code"]
    );
    let steps = a["runs"]["steps"].as_vec().expect("steps");
    let mut used = Vec::new();
    for s in steps {
        let name = s["name"].as_str().expect("every step is named");
        assert_eq!(s["shell"].as_str(), Some("bash"), "{name}: shell");
        let script = s["run"].as_str().unwrap_or_else(|| panic!("{name}: run"));
        // Inputs reach scripts through `env` only (no expression inside a script: injection).
        assert!(expressions(script).is_empty(), "{name}: expression in run");
        let syntax = Command::new("bash")
            .args(["-n", "-c", script])
            .output()
            .expect("bash");
        assert!(
            syntax.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&syntax.stderr)
        );
        for var in map_keys(&s["env"]) {
            let value = s["env"][var.as_str()].as_str().expect("env value");
            for e in expressions(value) {
                match e.strip_prefix("inputs.") {
                    Some(input) => {
                        assert!(inputs.contains(&input.to_string()), "{name}: unknown {e}");
                        used.push(input.to_string());
                    }
                    None => assert_eq!(e, "github.action_path", "{name}: {e}"),
                }
            }
        }
    }
    for name in &inputs {
        assert!(used.contains(name), "input {name} is used by no step");
    }
    assert_eq!(
        step(&a, "Run the nsys-lens gate")["id"].as_str(),
        Some("gate")
    );
}

/// Runs a step's script as the runner would: `env` from `inputs` (or the inputs' defaults),
/// `GITHUB_OUTPUT` a file, `path` as PATH. Returns the output and what the step wrote to
/// `GITHUB_OUTPUT`.
fn run_step(
    name: &str,
    inputs: &[(&str, &str)],
    path: &std::ffi::OsStr,
    extra_env: &[(&str, &Path)],
) -> (Output, String) {
    let a = action();
    let given: BTreeMap<&str, &str> = inputs.iter().copied().collect();
    let s = step(&a, name);
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = tmp.path().join("github_output");
    std::fs::write(&output, "").unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(s["run"].as_str().unwrap())
        .env_clear()
        .env("PATH", path)
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_PATH", tmp.path().join("github_path"))
        .env("RUNNER_TEMP", tmp.path())
        .current_dir(tmp.path());
    for (k, p) in extra_env {
        cmd.env(k, p);
    }
    for var in map_keys(&s["env"]) {
        let template = s["env"][var.as_str()].as_str().unwrap();
        let e = &expressions(template)[0];
        let value = match e.strip_prefix("inputs.") {
            Some(input) => given
                .get(input)
                .map(|v| v.to_string())
                .unwrap_or_else(|| a["inputs"][input]["default"].as_str().unwrap().to_string()),
            None => env!("CARGO_MANIFEST_DIR").to_string() + "/..",
        };
        cmd.env(var, value);
    }
    let out = cmd.output().expect("bash");
    let written = std::fs::read_to_string(&output).unwrap();
    (out, written)
}

fn gate(inputs: &[(&str, &str)], bin_dir: &Path) -> (Output, String) {
    run_step("Run the nsys-lens gate", inputs, &path_with(bin_dir), &[])
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    std::env::join_paths([dir, Path::new("/usr/bin"), Path::new("/bin")]).unwrap()
}

/// A stub `nsys-lens` that writes its arguments, one a line, to `$STUB_ARGS` and exits with
/// `$STUB_EXIT`.
fn stub(dir: &Path, exit: i32) -> (PathBuf, PathBuf) {
    let bin = dir.join(format!("stub{exit}"));
    std::fs::create_dir_all(&bin).unwrap();
    let args = bin.join("args");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit {exit}\n",
        args.display()
    );
    let exe = bin.join("nsys-lens");
    std::fs::write(&exe, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, args)
}

fn recorded(args: &Path) -> Vec<String> {
    std::fs::read_to_string(args)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Inputs, the stub's exit status, and the command line the gate must give the CLI.
type Case<'a> = (&'a [(&'a str, &'a str)], i32, &'a [&'a str]);

#[test]
fn the_gate_builds_the_documented_command_lines_and_passes_the_exit_status_on() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [Case<'_>; 5] = [
        (
            &[("command", "detect"), ("trace", "t.sqlite")],
            0,
            &["detect", "t.sqlite", "--fail-on", "host-bound"],
        ),
        (
            &[("baseline", "b.sqlite"), ("target", "t b.sqlite")],
            1,
            &[
                "analyze",
                "b.sqlite",
                "t b.sqlite",
                "--fail-on-regression",
                "5",
            ],
        ),
        (
            &[
                ("baseline", "b.sqlite"),
                ("target", "t.sqlite"),
                ("fail-on-regression", "12.5"),
                ("args", " --phase-map vllm  --profile trtllm-skill "),
            ],
            3,
            &[
                "analyze",
                "b.sqlite",
                "t.sqlite",
                "--fail-on-regression",
                "12.5",
                "--phase-map",
                "vllm",
                "--profile",
                "trtllm-skill",
            ],
        ),
        (
            &[
                ("command", "detect"),
                ("trace", "t.sqlite"),
                ("fail-on", ""),
            ],
            0,
            &["detect", "t.sqlite"],
        ),
        (
            &[
                ("baseline", "b.sqlite"),
                ("target", "t.sqlite"),
                ("fail-on-regression", ""),
            ],
            2,
            &["analyze", "b.sqlite", "t.sqlite"],
        ),
    ];
    for (inputs, exit, want) in cases {
        let (bin, args) = stub(tmp.path(), exit);
        let _ = std::fs::remove_file(&args);
        let (out, written) = gate(inputs, &bin);
        assert_eq!(out.status.code(), Some(exit), "{inputs:?}: {out:?}");
        assert_eq!(recorded(&args), want, "{inputs:?}");
        assert_eq!(written, format!("exit-code={exit}\n"), "{inputs:?}");
        let stderr_or_out = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stderr_or_out.contains("::error"),
            exit != 0,
            "{inputs:?}: {stderr_or_out}"
        );
    }
    // Inputs missing or wrong: exit 2, nothing run.
    for inputs in [
        &[("command", "detect")][..],
        &[("baseline", "b.sqlite")][..],
        &[("command", "drill"), ("trace", "t.sqlite")][..],
    ] {
        let (bin, args) = stub(tmp.path(), 0);
        let _ = std::fs::remove_file(&args);
        let (out, written) = gate(inputs, &bin);
        assert_eq!(out.status.code(), Some(2), "{inputs:?}: {out:?}");
        assert!(!args.exists(), "{inputs:?}: nsys-lens ran");
        assert_eq!(written, "exit-code=2\n");
    }
}

#[test]
fn the_install_step_with_install_none_uses_the_nsys_lens_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = cli_dir(tmp.path());
    let (out, _) = run_step(
        "Install nsys-lens",
        &[("install", "none")],
        &path_with(&bin),
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    let version = format!("nsys-lens {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), version);
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (out, _) = run_step(
        "Install nsys-lens",
        &[("install", "none")],
        &path_with(&empty),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// What the gate printed after its `+ command` line.
fn report_of(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let (first, rest) = text
        .split_once('\n')
        .expect("the command line, then the report");
    assert!(first.starts_with("+ nsys-lens "), "{first}");
    rest.to_string()
}

fn direct(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("nsys-lens")
}

#[test]
fn the_gate_runs_the_real_cli_on_real_exports() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = cli_dir(tmp.path());
    let public = public_trace("brycelelbach_nsightful__power_iteration__baseline.sqlite");
    let public = public.to_str().unwrap();
    let base = generate_in(tmp.path(), "regression-baseline");
    let target = generate_in(tmp.path(), "regression-target");
    let (base, target) = (base.to_str().unwrap(), target.to_str().unwrap());

    // Report only (no gate option): the CLI's own output, exit 0.
    let (out, written) = gate(
        &[("command", "detect"), ("trace", public), ("fail-on", "")],
        &bin,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(written, "exit-code=0\n");
    let alone = direct(&["detect", public]);
    assert_eq!(report_of(&out), String::from_utf8_lossy(&alone.stdout));
    let (out, _) = gate(
        &[
            ("command", "detect"),
            ("trace", public),
            ("fail-on", ""),
            ("args", "--json"),
        ],
        &bin,
    );
    let ours: serde_json::Value = serde_json::from_str(&report_of(&out)).expect("JSON");
    let theirs: serde_json::Value =
        serde_json::from_slice(&direct(&["detect", public, "--json"]).stdout).unwrap();
    assert_eq!(ours["verdict"], "NO");
    assert_eq!(ours, theirs);
    let (out, _) = gate(
        &[
            ("baseline", base),
            ("target", target),
            ("fail-on-regression", ""),
        ],
        &bin,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report = report_of(&out);
    assert_eq!(
        report,
        String::from_utf8_lossy(&direct(&["analyze", base, target]).stdout)
    );
    assert!(report.contains("+35.5%"), "{report}");
    // An unreadable export: the CLI's exit 3, passed on.
    let (out, written) = gate(
        &[
            ("command", "detect"),
            ("trace", "/nonexistent.sqlite"),
            ("fail-on", ""),
        ],
        &bin,
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(written, "exit-code=3\n");

    // The gates themselves: the generated pair regressed by +35.5 % per step; `host-bound` is,
    // `gpu-bound` is not.
    let host = generate_in(tmp.path(), "host-bound");
    let gpu = generate_in(tmp.path(), "gpu-bound");
    let cases: [(&[(&str, &str)], i32); 4] = [
        (&[("baseline", base), ("target", target)], 1),
        (
            &[
                ("baseline", base),
                ("target", target),
                ("fail-on-regression", "50"),
            ],
            0,
        ),
        (
            &[("command", "detect"), ("trace", host.to_str().unwrap())],
            1,
        ),
        (
            &[("command", "detect"), ("trace", gpu.to_str().unwrap())],
            0,
        ),
    ];
    for (inputs, exit) in cases {
        let (out, written) = gate(inputs, &bin);
        assert_eq!(out.status.code(), Some(exit), "{inputs:?}: {out:?}");
        assert_eq!(written, format!("exit-code={exit}\n"));
    }
}
