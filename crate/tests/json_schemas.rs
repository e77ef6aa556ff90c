//! Every `--json` output validates against its JSON Schema in `schemas/` (draft 2020-12): `detect`
//! (both profiles), `analyze` (one trace and a pair, both profiles), `drill`, `whatif` (the
//! standard set, every cost flag, a baseline), `report.json` and `lprof`, over the exports of a
//! sweep (every public export under `cargo xtask test --full`) and the generator's scenarios
//! (every one under `--full`, which checks that CI's few show every path and kind of value). The
//! results are computed in-process as the CLI computes them (the export scanned once, its rows
//! read in start order) and versioned as the CLI writes them (`report::Versioned`), then
//! validated all at once by Python's `jsonschema` (`tests/tools/schemas.py validate`), as a
//! user would check them; no validator is compiled into the tests.
//!
//! Every schema is self-contained: a definition used from another file is copied in
//! (`#/$defs/detect.bound`, by `tests/tools/schemas.py bundle`), each copy equal to its source,
//! so that a stock validator needs no registry and fetches nothing. The CLI's own output, read
//! back by Python's `jsonschema` with the network cut, validates as a user would check it.

#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use nsys_lens::analyze::{self, AnalyzeConfig, AnalyzeReport};
use nsys_lens::detect::{self, DetectConfig};
use nsys_lens::drill::{DrillInput, DrillOptions};
use nsys_lens::error::Result;
use nsys_lens::findings::DrillFindings;
use nsys_lens::lprof::{self, LprofInput};
use nsys_lens::profile::Profile;
use nsys_lens::report::{SCHEMA_VERSION, Versioned, document};
use nsys_lens::trace::{self, FileRows, FileScan, LoadOptions};
use nsys_lens::whatif::{self, Costs};

const SCHEMAS: [&str; 8] = [
    "detect",
    "analyze",
    "drill",
    "report",
    "lprof",
    "whatif",
    "ranks",
    "ranks-summary",
];

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas")
}

/// The schemas are named as the CLI's documents say: draft 2020-12, an `$id` of their own file,
/// the `schema_version` the CLI writes.
fn schemas_are_named_as_written() {
    for name in SCHEMAS {
        let path = schema_dir().join(format!("{name}.schema.json"));
        let text = std::fs::read_to_string(&path).expect("schema file");
        let doc: Value = serde_json::from_str(&text).expect("schema JSON");
        assert_eq!(
            doc["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        let id = doc["$id"].as_str().expect("$id");
        assert!(
            id.ends_with(&format!("/{name}.schema.json")),
            "{name}: {id}"
        );
        assert_eq!(
            doc["properties"]["schema_version"]["const"], SCHEMA_VERSION,
            "{name}: the schema names the version the CLI writes"
        );
    }
}

/// A document written for validation: its schema, its file, what it is, and whether the schema
/// must reject it.
struct Doc {
    schema: &'static str,
    path: PathBuf,
    what: String,
    reject: bool,
}

/// Documents as `--json` writes them, each validated against its schema file by Python's
/// `jsonschema` (`tests/tools/schemas.py validate`, the network cut), all in one process.
struct Check {
    dir: tempfile::TempDir,
    docs: Vec<Doc>,
    validated: BTreeMap<&'static str, usize>,
    /// `whatif --step` outputs among the `whatif` ones.
    step_paths: usize,
    /// The trace the documents now written come from, and each trace's [`shapes`].
    from: String,
    shapes: BTreeMap<String, BTreeSet<String>>,
    /// Each schema's [`maps_of`].
    maps: BTreeMap<&'static str, BTreeSet<String>>,
}

impl Check {
    fn new() -> Check {
        schemas_are_named_as_written();
        Check {
            dir: tempfile::tempdir().expect("tempdir"),
            docs: Vec::new(),
            validated: BTreeMap::new(),
            step_paths: 0,
            from: String::new(),
            shapes: BTreeMap::new(),
            maps: BTreeMap::new(),
        }
    }

    fn write(&mut self, schema: &'static str, what: &str, json: &Value, reject: bool) {
        let path = self
            .dir
            .path()
            .join(format!("{}.{schema}.json", self.docs.len()));
        std::fs::write(&path, json.to_string()).expect("write the document");
        self.docs.push(Doc {
            schema,
            path,
            what: what.to_string(),
            reject,
        });
    }

    /// A document the schema must accept.
    fn json(&mut self, schema: &'static str, what: &str, json: &Value) {
        let maps = self.maps.entry(schema).or_insert_with(|| maps_of(schema));
        shapes(
            schema,
            json,
            maps,
            self.shapes.entry(self.from.clone()).or_default(),
        );
        self.write(schema, what, json, false);
        *self.validated.entry(schema).or_default() += 1;
    }

    fn versioned<T: Serialize>(&mut self, schema: &'static str, what: &str, result: &T) {
        let json = serde_json::to_value(Versioned(result)).expect("serializes");
        self.json(schema, what, &json);
    }

    /// A document the schema must reject.
    fn rejects(&mut self, schema: &'static str, what: &str, json: &Value) {
        self.write(schema, what, json, true);
    }

    /// Validates every document written so far: one line per document that its schema judged
    /// otherwise than expected (accepted where it must reject, or rejected and why).
    fn errors(&self) -> Vec<String> {
        let python = python_with_jsonschema();
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(schemas_py()).arg("validate");
        for doc in &self.docs {
            cmd.arg(schema_dir().join(format!("{}.schema.json", doc.schema)));
            if doc.reject {
                cmd.arg("--reject");
            }
            cmd.arg(&doc.path);
        }
        let out = cmd.output().expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let want = format!("validated {} documents;", self.docs.len());
        assert!(
            stdout.contains(&want),
            "{} validate:\n{stdout}{}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let name = |line: &str| {
            let doc = self
                .docs
                .iter()
                .find(|d| line.starts_with(&*d.path.to_string_lossy()));
            doc.map_or_else(String::new, |d| format!("{} of {}: ", d.schema, d.what))
        };
        stdout
            .lines()
            .filter(|l| !l.starts_with("validated "))
            .map(|l| format!("{}{l}", name(l)))
            .collect()
    }
}

/// An export opened as the CLI opens it: scanned once, its rows read again per pass.
struct Open {
    conn: rusqlite::Connection,
    scan: FileScan,
}

/// The paths (as [`shapes`] writes them) where `schema` holds a map, an object whose keys are
/// the trace's (kernels, calls, classes): `additionalProperties` with a schema of its own. Its
/// `$ref`s are followed within the file (each schema is self-contained), to a depth of 24.
fn maps_of(schema: &str) -> BTreeSet<String> {
    fn walk(
        node: &Value,
        root: &Value,
        path: &mut String,
        depth: usize,
        out: &mut BTreeSet<String>,
    ) {
        if depth > 24 {
            return;
        }
        if node["additionalProperties"].is_object() {
            out.insert(path.clone());
        }
        let mut at = |sub: &Value, suffix: &str, out: &mut BTreeSet<String>| {
            let len = path.len();
            path.push_str(suffix);
            walk(sub, root, path, depth + 1, out);
            path.truncate(len);
        };
        if let Some(target) = node["$ref"]
            .as_str()
            .and_then(|r| root.pointer(r.strip_prefix('#')?))
        {
            at(target, "", out);
        }
        for branches in ["oneOf", "anyOf", "allOf"] {
            for branch in node[branches].as_array().into_iter().flatten() {
                at(branch, "", out);
            }
        }
        for (key, sub) in node["properties"].as_object().into_iter().flatten() {
            at(sub, &format!(".{key}"), out);
        }
        if node["additionalProperties"].is_object() {
            at(&node["additionalProperties"], ".{}", out);
        }
        if node["items"].is_object() {
            at(&node["items"], "[]", out);
        }
    }
    let text = std::fs::read_to_string(schema_dir().join(format!("{schema}.schema.json")))
        .expect("schema file");
    let root: Value = serde_json::from_str(&text).expect("schema JSON");
    let mut out = BTreeSet::new();
    walk(&root, &root, &mut schema.to_string(), 0, &mut out);
    out
}

/// What a document shows a schema: each key's path (arrays' items as `[]`, a map's keys as
/// `{}`: [`maps_of`]) with the kind of value there (`null`, `bool:true`, `number`, `string` …),
/// added to `into`. A scenario whose outputs show a path and kind no other's show is one a sweep
/// must keep.
fn shapes(schema: &str, json: &Value, maps: &BTreeSet<String>, into: &mut BTreeSet<String>) {
    fn walk(path: &mut String, v: &Value, maps: &BTreeSet<String>, into: &mut BTreeSet<String>) {
        let kind = match v {
            Value::Null => "null".to_string(),
            Value::Bool(b) => format!("bool:{b}"),
            Value::Number(_) => "number".into(),
            Value::String(_) => "string".into(),
            Value::Array(items) => {
                let len = path.len();
                path.push_str("[]");
                items.iter().for_each(|item| walk(path, item, maps, into));
                path.truncate(len);
                "array".into()
            }
            Value::Object(map) => {
                let keyed = maps.contains(path.as_str());
                for (key, item) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(if keyed { "{}" } else { key });
                    walk(path, item, maps, into);
                    path.truncate(len);
                }
                "object".into()
            }
        };
        into.insert(format!("{path} {kind}"));
    }
    walk(&mut schema.to_string(), json, maps, into);
}

fn open(path: &Path) -> Result<Open> {
    let label = path.display().to_string();
    let conn = trace::open_path(path)?;
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let budget = trace::row_budget(bytes, 0);
    let scan = FileScan::keeping_rows(&conn, &label, LoadOptions::all(), &mut |_| true, budget)?;
    Ok(Open { conn, scan })
}

fn analyze_cfg(profile: Profile, label: &str) -> AnalyzeConfig {
    AnalyzeConfig {
        profile,
        label: label.into(),
        source: label.into(),
        ..AnalyzeConfig::default()
    }
}

/// `detect` in both profiles, `analyze` of the one trace in both, `whatif` (the standard set and
/// every cost flag at once), the report and its drill-down.
fn check_trace(check: &mut Check, path: &Path) {
    let what = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let export = open(path).expect("the export opens");
    let rows = FileRows::over(&export.conn, &export.scan);
    let doc = document::build_rows(&rows, &what, &DrillOptions::default(), &|cfg| {
        detect::detect_rows(&rows, cfg)
    })
    .expect("every export gets a report");
    check.json("report", &what, &serde_json::to_value(&doc).expect("json"));
    let (Some(verdict), Some(drill)) = (&doc.detect, &doc.drill) else {
        return; // No kernel records: the report is the host side; the other commands refuse it.
    };
    check.versioned("detect", &what, verdict);
    check.versioned("drill", &what, drill);
    let one = [DrillInput {
        rows: &rows,
        label: &what,
        step_marker: None,
    }];
    let ranks = nsys_lens::ranks::ranks(&one).expect("ranks");
    check.versioned("ranks", &what, &ranks);
    check_summaries(check, &what, &one);
    let skill = DetectConfig {
        profile: Profile::TrtllmSkill,
        file_label: what.clone(),
        ..DetectConfig::default()
    };
    let skill = detect::detect_rows(&rows, &skill).expect("trtllm-skill verdict");
    check.versioned("detect", &format!("{what} (trtllm-skill)"), &skill);
    for profile in [Profile::Standard, Profile::TrtllmSkill] {
        let b = analyze::analyze_rows(&rows, &analyze_cfg(profile, "baseline")).expect("analyze");
        let report = AnalyzeReport::new(profile, b, None);
        check.versioned("analyze", &format!("{what} ({})", profile.name()), &report);
    }
    let cfg = analyze_cfg(Profile::Standard, &what);
    let w = whatif::whatif_rows(&rows, &cfg, &[]).expect("whatif");
    check.versioned("whatif", &what, &w);
    // `whatif --step N`: the first and the last steady step's path.
    for step in [0, w.steps.saturating_sub(1)]
        .into_iter()
        .take(w.steps.min(2))
    {
        let path = whatif::step_path(&rows, &cfg, step).expect("step path");
        check.versioned("whatif", &format!("{what} (--step {step})"), &path);
        check.step_paths += 1;
    }
    let every_flag = Costs {
        host: 0.5,
        launch: 0.5,
        kernels: 0.8,
        kernel_classes: vec![("gemm".into(), 0.5)],
        ops: vec![("_prepare_tp_inputs".into(), 0.0)],
        ..Costs::default()
    };
    let w = whatif::whatif_rows(&rows, &cfg, &[every_flag]).expect("whatif");
    check.versioned("whatif", &format!("{what} (every cost flag)"), &w);
}

/// `analyze BASE TARGET` in both profiles, and `whatif TARGET --baseline BASE`.
fn check_pair(check: &mut Check, base: &Path, target: &Path) {
    let (b, t) = (open(base).expect("base"), open(target).expect("target"));
    let (b_rows, t_rows) = (
        FileRows::over(&b.conn, &b.scan),
        FileRows::over(&t.conn, &t.scan),
    );
    for profile in [Profile::Standard, Profile::TrtllmSkill] {
        let bb = analyze::analyze_rows(&b_rows, &analyze_cfg(profile, "baseline")).expect("base");
        let tb = analyze::analyze_rows(&t_rows, &analyze_cfg(profile, "target")).expect("target");
        let report = AnalyzeReport::new(profile, bb, Some(tb));
        assert!(report.comparison.is_some());
        let what = format!(
            "{} vs {} ({})",
            base.display(),
            target.display(),
            profile.name()
        );
        check.versioned("analyze", &what, &report);
    }
    let cfg = analyze_cfg(Profile::Standard, "target");
    let baseline = whatif::path_rows(&b_rows, &cfg).expect("baseline path");
    let mut w = whatif::whatif_rows(&t_rows, &cfg, &[]).expect("whatif");
    w.regression = Some(whatif::compare::regression(&baseline, &w));
    let what = format!("{} --baseline {}", target.display(), base.display());
    check.versioned("whatif", &what, &w);
}

/// `drill A B` and `ranks A B`: one file per rank.
fn check_ranks(check: &mut Check, paths: &[&Path]) {
    let exports: Vec<Open> = paths.iter().map(|p| open(p).expect("open")).collect();
    let rows: Vec<FileRows<'_>> = exports
        .iter()
        .map(|e| FileRows::over(&e.conn, &e.scan))
        .collect();
    let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let inputs = crate::common::drill_inputs(&rows, &labels);
    let drill = DrillFindings::drill(&inputs, &DrillOptions::default()).expect("drill");
    check.versioned("drill", &labels.join(" "), &drill);
    let ranks = nsys_lens::ranks::ranks(&inputs).expect("ranks");
    check.versioned("ranks", &labels.join(" "), &ranks);
    check_summaries(check, &labels.join(" "), &inputs);
}

/// `ranks --summary` of each input (the map of `ranks` over many files).
fn check_summaries(check: &mut Check, what: &str, inputs: &[DrillInput<'_>]) {
    let indexed = nsys_lens::drill::index_inputs(inputs).expect("indexed");
    for ix in &indexed {
        let summary = nsys_lens::ranks::summarize(ix).expect("summary");
        check.versioned("ranks-summary", &format!("{what}: {}", ix.label), &summary);
    }
}

fn check_lprof(check: &mut Check) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lprof");
    let input = |name: &str| LprofInput {
        name: name.into(),
        text: std::fs::read_to_string(dir.join(name)).expect("fixture"),
    };
    let runs: [(&[&str], bool); 5] = [
        (
            &["round1.txt", "round2.txt", "round3.txt", "round4.txt"],
            false,
        ),
        (&["classify.txt"], false),
        (&["rank0.txt", "rank1.txt"], true),
        (&["v3_us.txt", "v4_ns_summary.txt", "rich_ansi.txt"], false),
        (&["missing_source.txt", "truncated.txt"], false),
    ];
    for (files, ranks) in runs {
        let inputs: Vec<LprofInput> = files.iter().map(|f| input(f)).collect();
        let options = lprof::Options {
            ranks,
            handoff_functions: vec!["PyExecutor._update_requests".into()],
            ..lprof::Options::default()
        };
        let report = lprof::analyze(&inputs, &options).expect("lprof");
        check.versioned("lprof", &files.join(" "), &report);
    }
}

/// The scenarios whose outputs CI validates: between them, and with the pairs, ranks and lprof
/// runs, their outputs show every path and kind of value that every scenario's outputs show
/// ([`shapes`]; `cargo xtask test --full` validates every scenario and checks it).
const SCENARIOS_IN_CI: [&str; 8] = [
    "copy-bound-pageable",
    "tp4-straggler",
    "host-records",
    "indexed-layers-target",
    "capture-gpu-metrics",
    "capture-graph-level",
    "copy-bound",
    "serving-graphs-node",
];

/// Under `--full`: every path and kind of value some scenario's outputs show, the outputs of
/// [`SCENARIOS_IN_CI`] (and the pairs, ranks and lprof runs) show too; else the scenarios that
/// would show the rest, picked greedily.
fn shown_by_the_scenarios_in_ci(shapes: &BTreeMap<String, BTreeSet<String>>) {
    let scenario_names: BTreeSet<&str> =
        nsys_lens::synth::scenarios().iter().map(|s| s.0).collect();
    let mut shown: BTreeSet<&String> = BTreeSet::new();
    let mut every: BTreeSet<&String> = BTreeSet::new();
    for (from, set) in shapes {
        let scenario = scenario_names.contains(from.as_str());
        if !scenario || SCENARIOS_IN_CI.contains(&from.as_str()) {
            shown.extend(set);
        }
        if scenario {
            every.extend(set);
        }
    }
    let mut missing: BTreeSet<&String> = every.difference(&shown).copied().collect();
    let unshown = missing.len();
    let mut add: Vec<&str> = Vec::new();
    while !missing.is_empty() {
        let Some((name, set)) = shapes
            .iter()
            .filter(|(from, _)| scenario_names.contains(from.as_str()))
            .max_by_key(|(_, set)| set.iter().filter(|s| missing.contains(s)).count())
        else {
            break;
        };
        add.push(name);
        missing.retain(|s| !set.contains(*s));
    }
    assert!(
        add.is_empty(),
        "{unshown} paths and kinds some scenario's outputs show are not shown by SCENARIOS_IN_CI's; add {add:?}:\n{}",
        every
            .difference(&shown)
            .take(40)
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_json_output_of_the_swept_exports_and_scenarios_validates_against_its_schema() {
    let started = std::time::Instant::now();
    let mut check = Check::new();
    let exports = common::sweep_exports();
    for path in &exports {
        check.from = path.display().to_string();
        check_trace(&mut check, path);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = nsys_lens::synth::GenOptions::default();
    let scenario = |name: &str, seed: u64| {
        let path = dir.path().join(format!("{name}-{seed}.sqlite"));
        if !path.exists() {
            let opts = nsys_lens::synth::GenOptions { seed, ..opts };
            nsys_lens::synth::generate(name, &path, &opts).expect("generate");
        }
        path
    };
    let every: Vec<&str> = nsys_lens::synth::scenarios().iter().map(|s| s.0).collect();
    let scenarios: &[&str] = if common::full() {
        &every
    } else {
        &SCENARIOS_IN_CI
    };
    for &name in scenarios {
        check.from = name.to_string();
        check_trace(&mut check, &scenario(name, 42));
    }
    check.from = "pairs, ranks and lprof".into();
    // The regression pair both ways; steps in neither trace (the window comparison); ranks.
    let paths: BTreeMap<&str, PathBuf> = [
        "regression-baseline",
        "regression-target",
        "capture-no-nvtx",
        "tp2-phases",
        "tp2-straggler",
        "host-bound",
    ]
    .into_iter()
    .map(|name| (name, scenario(name, 42)))
    .collect();
    let p = |name: &str| paths[name].as_path();
    check_pair(&mut check, p("regression-baseline"), p("regression-target"));
    check_pair(&mut check, p("regression-target"), p("regression-baseline"));
    check_pair(
        &mut check,
        p("capture-no-nvtx"),
        &scenario("capture-no-nvtx", 7),
    );
    check_pair(&mut check, p("tp2-phases"), p("tp2-straggler"));
    check_ranks(&mut check, &[p("tp2-straggler"), p("host-bound")]);
    check_lprof(&mut check);

    let errors = check.errors();
    assert!(
        errors.is_empty(),
        "{} outputs do not match their schema:\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Every command checked, on every trace with kernels.
    let exports_with_kernels = common::public_exports_with_kernels();
    let read = exports
        .iter()
        .filter(|p| exports_with_kernels.contains(p))
        .count();
    let with_kernels = read + scenarios.len();
    if common::full() {
        shown_by_the_scenarios_in_ci(&check.shapes);
    }
    let n = |s: &str| check.validated.get(s).copied().unwrap_or(0);
    assert_eq!(n("report"), exports.len() + scenarios.len());
    assert_eq!(n("detect"), 2 * with_kernels);
    assert_eq!(n("drill"), with_kernels + 1);
    assert_eq!(n("ranks"), with_kernels + 1);
    assert_eq!(n("ranks-summary"), with_kernels + 2);
    assert_eq!(n("analyze"), 2 * with_kernels + 8);
    assert_eq!(n("lprof"), 5);
    assert!(
        check.step_paths > scenarios.len(),
        "{} step paths",
        check.step_paths
    );
    assert_eq!(n("whatif"), 2 * with_kernels + 4 + check.step_paths);
    eprintln!(
        "validated {:?} in {:.1} s",
        check.validated,
        started.elapsed().as_secs_f64()
    );
}

/// A change to a valid output.
type Change = fn(&mut Value);

/// The schemas are not vacuous: a changed type, an unknown verdict or bound kind, a missing key
/// or version fail.
#[test]
fn the_schemas_reject_what_the_cli_never_writes() {
    let mut check = Check::new();
    let (_dir, path, _) = common::generated("host-bound", 1, 42);
    let export = open(&path).expect("open");
    let rows = FileRows::over(&export.conn, &export.scan);
    let verdict = detect::detect_rows(&rows, &DetectConfig::default()).expect("detect");
    let good = serde_json::to_value(Versioned(&verdict)).expect("json");
    check.json("detect", "as written", &good);
    let broken: [(&str, Change); 6] = [
        ("verdict MAYBE", |v| v["verdict"] = "MAYBE".into()),
        ("bound kind", |v| v["bound"]["kind"] = "cpu-bound".into()),
        ("no schema_version", |v| {
            v.as_object_mut().map(|o| o.remove("schema_version"));
        }),
        ("schema_version 2", |v| v["schema_version"] = 2.into()),
        ("metric as text", |v| {
            v["aggregate_metrics"]["gpu_idle_ratio"] = "0.3".into()
        }),
        ("no per_device", |v| {
            v.as_object_mut().map(|o| o.remove("per_device"));
        }),
    ];
    for (what, change) in broken {
        let mut bad = good.clone();
        change(&mut bad);
        check.rejects("detect", what, &bad);
    }
    // The ranks of tp2-straggler: a source that never names a rank, a share above 1.
    let (_dir, path, _) = common::generated("tp2-straggler", 1, 42);
    let export = open(&path).expect("open");
    let rows = FileRows::over(&export.conn, &export.scan);
    let one = [DrillInput {
        rows: &rows,
        label: "tp2",
        step_marker: None,
    }];
    let ranks = nsys_lens::ranks::ranks(&one).expect("ranks");
    let good = serde_json::to_value(Versioned(&ranks)).expect("json");
    check.json("ranks", "as written", &good);
    let broken: [(&str, Change); 3] = [
        ("named by a guess", |v| {
            v["ranks"][0]["named_by"] = "guess".into()
        }),
        ("share above 1", |v| {
            v["ranks"][0]["last_share"] = 1.5.into()
        }),
        ("no clock", |v| {
            v.as_object_mut().map(|o| o.remove("clock"));
        }),
    ];
    for (what, change) in broken {
        let mut bad = good.clone();
        change(&mut bad);
        check.rejects("ranks", what, &bad);
    }
    // Its summary (`ranks --summary`): another kind, a kernel without its name, a name place
    // below 0.
    let indexed = nsys_lens::drill::index_inputs(&one).expect("indexed");
    let summary = nsys_lens::ranks::summarize(&indexed[0]).expect("summary");
    let good = serde_json::to_value(Versioned(&summary)).expect("json");
    check.json("ranks-summary", "as written", &good);
    let broken: [(&str, Change); 3] = [
        ("another kind", |v| v["kind"] = "ranks".into()),
        ("a kernel without its name", |v| {
            v["ranks"][0]["kernels"][0] = serde_json::json!([1, 2])
        }),
        ("a name place below 0", |v| {
            v["ranks"][0]["kernels"][0][2] = (-1).into()
        }),
    ];
    for (what, change) in broken {
        let mut bad = good.clone();
        change(&mut bad);
        check.rejects("ranks-summary", what, &bad);
    }
    // A step's critical path (`whatif --step`): a place that is neither a thread nor a stream,
    // a tid as a number (it exceeds 2^53), a stretch without its part.
    let (_dir, path, _) = common::generated("host-bound", 1, 42);
    let export = open(&path).expect("open");
    let rows = FileRows::over(&export.conn, &export.scan);
    let cfg = analyze_cfg(Profile::Standard, "host-bound");
    let step = whatif::step_path(&rows, &cfg, 1).expect("step path");
    let good = serde_json::to_value(Versioned(&step)).expect("json");
    check.json("whatif", "a step's path as written", &good);
    let broken: [(&str, Change); 3] = [
        ("a place on a host", |v| {
            v["segments"][0]["place"]["kind"] = "host".into()
        }),
        ("tid as a number", |v| {
            v["segments"][0]["place"] = serde_json::json!({"kind": "thread", "tid": 7})
        }),
        ("no part", |v| {
            v["segments"][0].as_object_mut().map(|o| o.remove("part"));
        }),
    ];
    for (what, change) in broken {
        let mut bad = good.clone();
        change(&mut bad);
        check.rejects("whatif", what, &bad);
    }
    let errors = check.errors();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// `tests/tools/schemas.py`, which bundles the schemas and validates with Python's `jsonschema`.
fn schemas_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tools/schemas.py")
}

/// Every `$ref` of a schema stays in its file, and every definition copied from another file
/// equals its source (`schemas.py check`; `schemas.py bundle` rewrites the copies).
#[test]
fn every_schema_is_self_contained_and_its_copies_equal_their_source() {
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => out.push(r),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    for name in SCHEMAS {
        let path = schema_dir().join(format!("{name}.schema.json"));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("schema")).expect("JSON");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(!found.is_empty(), "{name}");
        for r in found {
            let def = r.strip_prefix("#/$defs/");
            assert!(
                def.is_some_and(|d| doc["$defs"].get(d).is_some()),
                "{name}.schema.json: $ref {r} is not one of the file's own $defs"
            );
        }
    }
    let out = std::process::Command::new("python3")
        .arg(schemas_py())
        .arg("check")
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Python with `jsonschema`: the one `cargo xtask setup` makes (`target/tools/py`, found from
/// this test binary's place in the target folder), else `python3` if it has the package.
fn python_with_jsonschema() -> PathBuf {
    common::python_with("jsonschema")
}

/// The CLI's JSON on real exports, as a user would check it: each document and its schema file
/// read from disk and given to Python's `jsonschema.validate(doc, schema)`, every network
/// connection refused (a schema that needed another file would fail: "Unresolvable"). Covers
/// `detect` in both profiles, `drill` of one file and of two ranks, `analyze` of one trace and of
/// the real before/after pair, `whatif` (the standard set, cost flags, a baseline),
/// `report.json` with and without kernel records, and `lprof`; a document the CLI never writes
/// is rejected.
#[test]
fn the_clis_json_validates_with_pythons_jsonschema_offline() {
    let python = python_with_jsonschema();
    let dir = tempfile::tempdir().expect("tempdir");
    let before = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let after = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_after.sqlite");
    let samples = common::public_trace("brycelelbach_nsightful__power_iteration__baseline.sqlite");
    let no_kernels = common::public_trace("CO18326_uvmTorch__report1.sqlite");
    let mut pairs: Vec<(String, PathBuf)> = Vec::new();
    let mut n = 0;
    let mut run = |schema: &str, args: &[&std::ffi::OsStr]| {
        n += 1;
        let path = dir.path().join(format!("{n}.{schema}.json"));
        let mut all: Vec<&std::ffi::OsStr> = args.to_vec();
        all.extend(["--json".as_ref(), "-o".as_ref(), path.as_os_str()]);
        let out = common::nsys_lens(&all);
        assert!(out.status.success(), "{}", common::describe(&all, &out));
        pairs.push((schema.to_string(), path));
    };
    // Each command on the newest schema and on CPU samples; the real pair's other half (the
    // same shape) under `--full`.
    let singles = match common::full() {
        true => vec![&before, &after, &samples],
        false => vec![&before, &samples],
    };
    for trace in singles {
        let t = trace.as_os_str();
        run("detect", &["detect".as_ref(), t]);
        run(
            "detect",
            &[
                "detect".as_ref(),
                t,
                "--profile".as_ref(),
                "trtllm-skill".as_ref(),
            ],
        );
        run("drill", &["drill".as_ref(), t]);
        run("ranks", &["ranks".as_ref(), t]);
        run(
            "ranks-summary",
            &["ranks".as_ref(), "--summary".as_ref(), t],
        );
        run("analyze", &["analyze".as_ref(), t]);
        run("whatif", &["whatif".as_ref(), t]);
    }
    let flags = "--host 0.5 --launch 0.5 --kernels 0.8 --kernel-class gemm=0.5 --op aten::mul=0";
    let mut args: Vec<&std::ffi::OsStr> = vec!["whatif".as_ref(), before.as_os_str()];
    args.extend(flags.split(' ').map(std::ffi::OsStr::new));
    run("whatif", &args);
    run(
        "whatif",
        &[
            "whatif".as_ref(),
            after.as_os_str(),
            "--baseline".as_ref(),
            before.as_os_str(),
        ],
    );
    run(
        "whatif",
        &[
            "whatif".as_ref(),
            before.as_os_str(),
            "--step".as_ref(),
            "3".as_ref(),
        ],
    );
    run(
        "drill",
        &["drill".as_ref(), before.as_os_str(), after.as_os_str()],
    );
    run(
        "ranks",
        &["ranks".as_ref(), before.as_os_str(), after.as_os_str()],
    );
    for profile in ["standard", "trtllm-skill"] {
        run(
            "analyze",
            &[
                "analyze".as_ref(),
                before.as_os_str(),
                after.as_os_str(),
                "--profile".as_ref(),
                profile.as_ref(),
            ],
        );
    }
    let lprof = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lprof");
    let rounds: Vec<PathBuf> = (1..=4)
        .map(|i| lprof.join(format!("round{i}.txt")))
        .collect();
    let mut args: Vec<&std::ffi::OsStr> = vec!["lprof".as_ref()];
    args.extend(rounds.iter().map(|p| p.as_os_str()));
    run("lprof", &args);
    for (i, trace) in [&samples, &no_kernels].into_iter().enumerate() {
        let out_dir = dir.path().join(format!("report{i}"));
        let args = [
            "report".as_ref(),
            trace.as_os_str(),
            "--out".as_ref(),
            out_dir.as_os_str(),
        ];
        let out = common::nsys_lens(args);
        assert!(out.status.success(), "{}", common::describe(&args, &out));
        pairs.push(("report".into(), out_dir.join("report.json")));
    }
    // Not vacuous: a verdict the CLI never writes must fail.
    let mut bad: Value =
        serde_json::from_str(&std::fs::read_to_string(&pairs[0].1).expect("detect json"))
            .expect("JSON");
    bad["verdict"] = "MAYBE".into();
    let bad_path = dir.path().join("bad.detect.json");
    std::fs::write(&bad_path, bad.to_string()).expect("write");
    // Nor a part of the critical path that `whatif` never names.
    let whatif_doc = &pairs.iter().find(|(s, _)| s == "whatif").expect("whatif").1;
    let mut bad: Value =
        serde_json::from_str(&std::fs::read_to_string(whatif_doc).expect("whatif json"))
            .expect("JSON");
    bad["critical_path"]["parts"][0]["part"] = "cpu".into();
    let bad_whatif = dir.path().join("bad.whatif.json");
    std::fs::write(&bad_whatif, bad.to_string()).expect("write");

    let mut cmd = std::process::Command::new(&python);
    cmd.arg(schemas_py()).arg("validate");
    for (schema, doc) in &pairs {
        cmd.arg(schema_dir().join(format!("{schema}.schema.json")))
            .arg(doc);
    }
    cmd.arg(schema_dir().join("detect.schema.json"))
        .arg("--reject")
        .arg(&bad_path);
    cmd.arg(schema_dir().join("whatif.schema.json"))
        .arg("--reject")
        .arg(&bad_whatif);
    let out = cmd.output().expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} validate:\n{stdout}{}",
        python.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!("validated {} documents; 0 unexpected", pairs.len() + 2);
    assert!(stdout.contains(&want), "{stdout}");
    let schemas: std::collections::BTreeSet<&str> = pairs.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        schemas.len(),
        SCHEMAS.len(),
        "every schema used: {schemas:?}"
    );
}
