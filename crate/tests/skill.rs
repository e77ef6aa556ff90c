//! The agent skill (`skills/nsys-lens/SKILL.md`) against the CLI it describes.
//!
//! Every `nsys-lens …` line of a ```sh / ```bash block runs as written, through `sh`, with its
//! placeholders (`TRACE`, `BASE`, `TARGET`, `OUT_DIR`, `ROUND1`…, `RANK0`…, `HANDOFF`,
//! `START_NS:END_NS`) replaced by real inputs: public exports, generated scenarios and the
//! line_profiler fixtures. Each must exit 0. Every field path of the skill's Fields table must
//! then lead to a non-null value in that command's JSON: in every output when the table says
//! "always", in at least one otherwise (the inputs are chosen so that each condition holds in
//! one of them).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

use common::{BIN, cli_dir, generate_in, public_trace};

fn skill_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills/nsys-lens/SKILL.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `nsys-lens` command lines of the skill's ```sh and ```bash blocks (`\` continuations
/// joined), in order.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut runnable = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            if in_block {
                in_block = false;
            } else {
                in_block = true;
                runnable = matches!(info.trim(), "sh" | "bash");
            }
            pending.clear();
            continue;
        }
        if !in_block || !runnable {
            continue;
        }
        pending.push_str(trimmed.trim_end_matches('\\'));
        if trimmed.ends_with('\\') {
            pending.push(' ');
            continue;
        }
        let full = std::mem::take(&mut pending);
        if full.starts_with("nsys-lens ") {
            out.push(full);
        }
    }
    out
}

/// The outputs the Fields table names, by its first column.
const KEYS: [&str; 8] = [
    "detect",
    "analyze (one)",
    "analyze (pair)",
    "drill",
    "ranks",
    "whatif",
    "report",
    "lprof",
];

#[derive(Debug)]
struct Field {
    key: String,
    path: String,
    always: bool,
}

/// The Fields table: `| key | `path` | when | meaning |` rows whose key is one of [`KEYS`].
fn fields(text: &str) -> Vec<Field> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
            let key = cells.first()?.trim();
            if cells.len() < 4 || !KEYS.contains(&key) {
                return None;
            }
            let path = cells[1].trim().strip_prefix('`')?.strip_suffix('`')?;
            Some(Field {
                key: key.to_string(),
                path: path.to_string(),
                always: cells[2].trim() == "always",
            })
        })
        .collect()
}

/// The values `path` leads to in `v`, nulls left out. `a.b[].c`: each element of the list
/// `b`; `<name>`: each value of the object.
fn resolve<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut at: Vec<&Value> = vec![v];
    for seg in path.split('.') {
        let (name, each) = match seg.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (seg, false),
        };
        let mut next: Vec<&Value> = Vec::new();
        for v in at {
            let found: Vec<&Value> = if name.starts_with('<') && name.ends_with('>') {
                v.as_object()
                    .map(|o| o.values().collect())
                    .unwrap_or_default()
            } else {
                v.get(name).into_iter().collect()
            };
            for f in found {
                if each {
                    next.extend(f.as_array().into_iter().flatten());
                } else {
                    next.push(f);
                }
            }
        }
        at = next.into_iter().filter(|v| !v.is_null()).collect();
    }
    at
}

/// Which Fields-table output a command line produces.
fn key_of(command: &str) -> &'static str {
    let words: Vec<&str> = command.split_whitespace().collect();
    match words[1] {
        "detect" => "detect",
        "drill" => "drill",
        "ranks" => "ranks",
        "report" => "report",
        "lprof" => "lprof",
        "whatif" => "whatif",
        // The generator writes an export for the commands after it; it prints no JSON.
        "gen" => "gen",
        "analyze" => {
            let traces = words[2..]
                .iter()
                .take_while(|w| !w.starts_with('-'))
                .count();
            if traces >= 2 {
                "analyze (pair)"
            } else {
                "analyze (one)"
            }
        }
        other => panic!("the skill shows an unknown subcommand `{other}` in `{command}`"),
    }
}

/// The placeholders an input set gives; the others (line_profiler files, the hand-off line,
/// `OUT_DIR`) are the same for every set.
const TRACE_PLACEHOLDERS: [&str; 4] = ["TRACE", "BASE", "TARGET", "START_NS:END_NS"];

fn placeholders() -> Regex {
    Regex::new(r"\b(?:START_NS:END_NS|TRACE|BASE|TARGET|OUT_DIR|ROUND\d|RANK\d|HANDOFF)\b")
        .expect("regex")
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn json_of(args: &[&str]) -> Value {
    let out = Command::new(BIN).args(args).output().expect("nsys-lens");
    assert!(out.status.success(), "nsys-lens {args:?}: {:?}", out);
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `START:END` of a trace's analysed window, from `detect --json`.
fn window_of(trace: &Path) -> String {
    let d = json_of(&["detect", trace.to_str().unwrap(), "--json"]);
    let (s, e) = (&d["window"]["start_ns"], &d["window"]["end_ns"]);
    assert!(s.is_i64() && e.is_i64(), "window of {}", trace.display());
    format!("{s}:{e}")
}

/// One set of inputs: the placeholders it defines, and which commands run with it.
struct InputSet {
    label: &'static str,
    values: BTreeMap<&'static str, String>,
    /// Also run the commands that use none of `values`' placeholders (lprof).
    runs_the_rest: bool,
    /// Only these subcommands (a kernel-less export has only a report).
    only: Option<&'static str>,
}

struct Run {
    key: &'static str,
    set: &'static str,
    command: String,
    json: Value,
}

#[test]
fn every_command_of_the_skill_runs_and_every_field_it_names_exists() {
    let text = skill_text();
    let cmds = commands(&text);
    let table = fields(&text);
    assert!(
        cmds.len() >= 10,
        "only {} commands found: {cmds:#?}",
        cmds.len()
    );
    assert!(table.len() >= 80, "only {} fields parsed", table.len());
    for key in KEYS {
        assert!(
            table.iter().any(|f| f.key == key),
            "no field listed for {key}"
        );
        assert!(
            cmds.iter().any(|c| key_of(c) == key),
            "no command of the skill produces the {key} output"
        );
    }

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lprof");
    let (base, target) = (
        generate_in(dir, "regression-baseline"),
        generate_in(dir, "regression-target"),
    );
    // The hand-off line exactly as `analyze` prints it for the generated regression pair.
    let pair = json_of(&[
        "analyze",
        base.to_str().unwrap(),
        target.to_str().unwrap(),
        "--json",
    ]);
    let handoff = pair["comparison"]["handoff"]["line_profiler"]
        .as_str()
        .expect("the regression pair's hand-off line")
        .to_string();
    assert!(handoff.starts_with("TLLM_LINE_PROFILER_FUNCTIONS=\""));

    let trace_set = |label, trace: PathBuf, base: &Path, target: &Path| {
        let mut values = BTreeMap::new();
        values.insert("START_NS:END_NS", window_of(&trace));
        values.insert("TRACE", trace.to_string_lossy().into_owned());
        values.insert("BASE", base.to_string_lossy().into_owned());
        values.insert("TARGET", target.to_string_lossy().into_owned());
        InputSet {
            label,
            values,
            runs_the_rest: false,
            only: None,
        }
    };
    let public_base = public_trace("NVIDIA_Fuser__df8f397__report1.sqlite");
    let public_target = public_trace("NVIDIA_Fuser__ee4fcf3__report1.sqlite");
    let mut sets = vec![
        // A real CuPy capture with CPU samples and no step marker; a real pair on two GPU models.
        trace_set(
            "public",
            public_trace("brycelelbach_nsightful__power_iteration__baseline.sqlite"),
            &public_base,
            &public_target,
        ),
        // TensorRT-LLM markers, host prep, a regression with a hand-off.
        trace_set("generated", generate_in(dir, "host-bound"), &base, &target),
        // Two ranks with NCCL: a straggler.
        trace_set("tp2", generate_in(dir, "tp2-straggler"), &base, &target),
        // A JIT warm-up before the steady loop: a steady window.
        trace_set(
            "warm-up",
            generate_in(dir, "capture-warmup"),
            &base,
            &target,
        ),
        // CUDA graphs traced at graph level: the graph advice.
        trace_set(
            "graph-level",
            generate_in(dir, "capture-graph-level"),
            &base,
            &target,
        ),
        // Copies staged through pageable memory: the thresholds call the host a bottleneck,
        // the critical path says transfers (what-if's `bound.note`).
        trace_set(
            "pageable",
            generate_in(dir, "copy-bound-pageable"),
            &base,
            &target,
        ),
    ];
    sets[1].runs_the_rest = true;
    // A real export without kernel records: only its report's host side.
    sets.push(InputSet {
        label: "kernel-less",
        values: BTreeMap::from([(
            "TRACE",
            public_trace("davidev886_tutorial_vqe__report1.sqlite")
                .to_string_lossy()
                .into_owned(),
        )]),
        runs_the_rest: false,
        only: Some("report"),
    });
    let shared: BTreeMap<&str, String> = [
        ("ROUND1", "round1.txt"),
        ("ROUND2", "round2.txt"),
        ("ROUND3", "round3.txt"),
        ("RANK0", "rank0.txt"),
        ("RANK1", "rank1.txt"),
    ]
    .into_iter()
    .map(|(k, f)| (k, fixtures.join(f).to_string_lossy().into_owned()))
    .chain([("HANDOFF", handoff)])
    .collect();

    // `nsys-lens` on PATH is the binary cargo built for this test.
    let bin_dir = cli_dir(dir);
    let path = std::env::join_paths(
        std::iter::once(bin_dir.clone()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();

    let re = placeholders();
    let mut runs: Vec<Run> = Vec::new();
    let mut n = 0;
    for set in &sets {
        for cmd in &cmds {
            let used: Vec<&str> = re.find_iter(cmd).map(|m| m.as_str()).collect();
            let own = used.iter().any(|p| set.values.contains_key(p));
            let trace_free = !used.iter().any(|p| TRACE_PLACEHOLDERS.contains(p));
            if !(own || set.runs_the_rest && trace_free) {
                continue;
            }
            if set
                .only
                .is_some_and(|only| cmd.split_whitespace().nth(1) != Some(only))
            {
                continue;
            }
            n += 1;
            let out_dir = dir.join(format!("out{n}"));
            let line = re
                .replace_all(cmd, |c: &regex::Captures<'_>| {
                    let p = &c[0];
                    let value = match p {
                        "OUT_DIR" => out_dir.to_string_lossy().into_owned(),
                        _ => set
                            .values
                            .get(p)
                            .or_else(|| shared.get(p))
                            .unwrap_or_else(|| panic!("{}: no value for {p} in `{cmd}`", set.label))
                            .clone(),
                    };
                    quote(&value)
                })
                .into_owned();
            let out = Command::new("sh")
                .arg("-c")
                .arg(&line)
                .current_dir(dir)
                .env("PATH", &path)
                .output()
                .expect("sh");
            assert!(
                out.status.success(),
                "[{}] `{cmd}` exited with {:?}\n$ {line}\n{}",
                set.label,
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            );
            let key = key_of(cmd);
            let json = if key == "report" {
                let file = out_dir.join("report.json");
                let text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("[{}] {}: {e}", set.label, file.display()));
                serde_json::from_str(&text).expect("report.json")
            } else if cmd.split_whitespace().any(|w| w == "--json") {
                serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("[{}] `{cmd}` printed no JSON: {e}", set.label))
            } else {
                continue;
            };
            runs.push(Run {
                key,
                set: set.label,
                command: cmd.clone(),
                json,
            });
        }
    }

    let mut missing = Vec::new();
    for f in &table {
        let outputs: Vec<&Run> = runs.iter().filter(|r| r.key == f.key).collect();
        assert!(!outputs.is_empty(), "no JSON output for {}", f.key);
        let found: Vec<bool> = outputs
            .iter()
            .map(|r| !resolve(&r.json, &f.path).is_empty())
            .collect();
        if f.always {
            for (r, ok) in outputs.iter().zip(&found) {
                if !ok {
                    missing.push(format!(
                        "{} `{}` (always) is missing or null in [{}] `{}`",
                        f.key, f.path, r.set, r.command
                    ));
                }
            }
        } else if !found.iter().any(|&ok| ok) {
            missing.push(format!(
                "{} `{}` is missing or null in all {} outputs",
                f.key,
                f.path,
                outputs.len()
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_skill_cites_the_thresholds_the_code_uses() {
    use nsys_lens::detect::{Thresholds, verdict::MIN_CROSSED};
    let text = skill_text();
    let (d, g) = (Thresholds::DEFAULT, Thresholds::GENERATION);
    let rows = [
        ("M1", d.gpu_idle_ratio, g.gpu_idle_ratio),
        ("M2", d.launch_overhead_ratio, g.launch_overhead_ratio),
        ("M3a", d.host_prep_exposed_ratio, g.host_prep_exposed_ratio),
        ("M3b", d.host_prep_perf_impact, g.host_prep_perf_impact),
        (
            "M3c",
            d.host_prep_idle_attribution,
            g.host_prep_idle_attribution,
        ),
        ("M4", d.gpu_utilization, g.gpu_utilization),
        ("M5", d.nccl_ratio_caveat, g.nccl_ratio_caveat),
    ];
    for (id, agg, gen_) in rows {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| {id} |")))
            .unwrap_or_else(|| panic!("no threshold row for {id}"));
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let n = cells.len();
        assert_eq!(
            (cells[n - 2], cells[n - 1]),
            (format!("{agg:.2}").as_str(), format!("{gen_:.2}").as_str()),
            "{row}"
        );
    }
    assert!(
        text.contains(&format!(
            "at least **{MIN_CROSSED}** applicable metrics cross"
        )),
        "the verdict rule's count"
    );
}
