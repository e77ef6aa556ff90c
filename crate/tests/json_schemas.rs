//! Every `--json` output validates against its JSON Schema in `schemas/` (draft 2020-12): `detect`
//! (both profiles), `analyze` (one trace and a pair, both profiles), `drill`, `report.json` and
//! `lprof`, over every public export and every generator scenario. The results are computed
//! in-process as the CLI computes them (the export scanned once, its rows read in start order)
//! and versioned as the CLI writes them (`report::Versioned`).

#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jsonschema::{Registry, Validator};
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

const SCHEMAS: [&str; 5] = ["detect", "analyze", "drill", "report", "lprof"];

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas")
}

/// One validator per command, the schemas' cross-references resolved among themselves (no
/// retrieval).
fn validators() -> BTreeMap<&'static str, Validator> {
    let docs: Vec<(&str, Value)> = SCHEMAS
        .iter()
        .map(|&name| {
            let path = schema_dir().join(format!("{name}.schema.json"));
            let text = std::fs::read_to_string(&path).expect("schema file");
            (name, serde_json::from_str(&text).expect("schema JSON"))
        })
        .collect();
    for (name, doc) in &docs {
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
    let registry = Registry::new()
        .extend(
            docs.iter()
                .map(|(_, doc)| (doc["$id"].as_str().unwrap_or(""), doc)),
        )
        .expect("schema ids")
        .prepare()
        .expect("registry");
    docs.iter()
        .map(|(name, doc)| {
            let v = jsonschema::options()
                .with_registry(&registry)
                .build(doc)
                .unwrap_or_else(|e| panic!("{name}.schema.json is not a valid schema: {e}"));
            (*name, v)
        })
        .collect()
}

/// Collects every validation error of `result` (as `--json` writes it) against `schema`.
struct Check {
    validators: BTreeMap<&'static str, Validator>,
    errors: Vec<String>,
    validated: BTreeMap<&'static str, usize>,
}

impl Check {
    fn new() -> Check {
        Check {
            validators: validators(),
            errors: Vec::new(),
            validated: BTreeMap::new(),
        }
    }

    fn json(&mut self, schema: &'static str, what: &str, json: &Value) {
        let v = &self.validators[schema];
        for e in v.iter_errors(json).take(5) {
            self.errors
                .push(format!("{schema} of {what}: at {}: {e}", e.instance_path()));
        }
        *self.validated.entry(schema).or_default() += 1;
    }

    fn versioned<T: Serialize>(&mut self, schema: &'static str, what: &str, result: &T) {
        let json = serde_json::to_value(Versioned(result)).expect("serializes");
        self.json(schema, what, &json);
    }
}

/// An export opened as the CLI opens it: scanned once, its rows read again per pass.
struct Open {
    conn: rusqlite::Connection,
    scan: FileScan,
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

/// `detect` in both profiles, `analyze` of the one trace in both, the report and its drill-down.
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
}

/// `analyze BASE TARGET` in both profiles.
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
}

/// `drill A B`: one file per rank.
fn check_ranks(check: &mut Check, paths: &[&Path]) {
    let exports: Vec<Open> = paths.iter().map(|p| open(p).expect("open")).collect();
    let rows: Vec<FileRows<'_>> = exports
        .iter()
        .map(|e| FileRows::over(&e.conn, &e.scan))
        .collect();
    let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let inputs: Vec<DrillInput<'_>> = rows
        .iter()
        .zip(&labels)
        .map(|(rows, label)| DrillInput {
            rows,
            label,
            step_marker: None,
        })
        .collect();
    let drill = DrillFindings::drill(&inputs, &DrillOptions::default()).expect("drill");
    check.versioned("drill", &labels.join(" "), &drill);
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

#[test]
fn every_json_output_of_every_public_export_and_scenario_validates_against_its_schema() {
    let started = std::time::Instant::now();
    let mut check = Check::new();
    let exports = common::public_exports();
    for path in &exports {
        check_trace(&mut check, path);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = nsys_lens::synth::GenOptions::default();
    let scenario = |name: &str, seed: u64| {
        let path = dir.path().join(format!("{name}-{seed}.sqlite"));
        let opts = nsys_lens::synth::GenOptions { seed, ..opts };
        nsys_lens::synth::generate(name, &path, &opts).expect("generate");
        path
    };
    let scenarios = nsys_lens::synth::scenarios();
    let mut paths: BTreeMap<&str, PathBuf> = BTreeMap::new();
    for &(name, _) in scenarios {
        let path = scenario(name, 42);
        check_trace(&mut check, &path);
        paths.insert(name, path);
    }
    // The regression pair both ways; steps in neither trace (the window comparison); ranks.
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

    assert!(
        check.errors.is_empty(),
        "{} outputs do not match their schema:\n{}",
        check.errors.len(),
        check.errors.join("\n")
    );
    // Every command checked, on every trace with kernels.
    let with_kernels = common::public_exports_with_kernels().len() + scenarios.len();
    let n = |s: &str| check.validated.get(s).copied().unwrap_or(0);
    assert_eq!(n("report"), exports.len() + scenarios.len());
    assert_eq!(n("detect"), 2 * with_kernels);
    assert_eq!(n("drill"), with_kernels + 1);
    assert_eq!(n("analyze"), 2 * with_kernels + 8);
    assert_eq!(n("lprof"), 5);
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
    assert!(check.errors.is_empty(), "{:?}", check.errors);
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
        let before = check.errors.len();
        check.json("detect", what, &bad);
        assert!(check.errors.len() > before, "{what} should fail the schema");
    }
}
