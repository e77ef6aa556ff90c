//! `nsys-lens report`: the files it writes (Markdown, JSON, CSV tables, one HTML file), the HTML
//! being self-contained and well-formed, the CSV tables parsing, the zip export, every public
//! export reported (or refused with one line), and bad output directories.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;

use quick_xml::events::Event;
use serde_json::Value;

use common::{
    EXIT_INPUT, EXIT_USAGE, assert_one_line_error, check_one_line_error, describe, nsys_lens,
    public_traces_dir,
};
use nsys_lens::drill::DrillOptions;
use nsys_lens::report::csv as tables_csv;
use nsys_lens::report::{document, html, markdown, outline};
use nsys_lens::synth::{self, GenOptions};
use nsys_lens::trace::{LoadOptions, load_path};

fn report(trace: &Path, out: &Path) -> std::process::Output {
    nsys_lens([
        OsStr::new("report"),
        trace.as_os_str(),
        OsStr::new("--out"),
        out.as_os_str(),
    ])
}

/// Parses `text` as strict XML and returns every attribute as (element, name, value), failing
/// on any well-formedness error (unclosed or mismatched tags, bad escapes).
fn attributes(text: &str) -> Result<Vec<(String, String, String)>, String> {
    // The doctype is HTML's, not XML's; the rest must be well-formed.
    let body = text
        .strip_prefix("<!DOCTYPE html>")
        .ok_or("no <!DOCTYPE html>")?;
    let mut reader = quick_xml::Reader::from_str(body);
    reader.config_mut().check_end_names = true;
    let mut out = Vec::new();
    let mut depth = 0i32;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?;
        let element = match &event {
            Event::Start(e) | Event::Empty(e) => Some(e.clone()),
            _ => None,
        };
        if let Some(e) = element {
            let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
            for a in e.attributes() {
                let a = a.map_err(|e| format!("bad attribute: {e}"))?;
                let value = a
                    .unescape_value()
                    .map_err(|e| format!("bad attribute value: {e}"))?;
                out.push((
                    name.clone(),
                    String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                    value.into_owned(),
                ));
            }
        }
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Eof => break,
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("{depth} element(s) left open"));
    }
    Ok(out)
}

/// The self-containment rules: no network reference anywhere, no `src`, links only to anchors.
fn check_self_contained(text: &str) -> Result<(), String> {
    for needle in ["http://", "https://", "//cdn", "<script", "<link", "url("] {
        if text.contains(needle) {
            return Err(format!("the HTML contains {needle:?}"));
        }
    }
    for (element, name, value) in attributes(text)? {
        let external = match name.as_str() {
            "src" | "srcset" | "xlink:href" | "action" | "data" => true,
            "href" => !value.starts_with('#'),
            _ => false,
        };
        if external {
            return Err(format!(
                "<{element} {name}=\"{value}\"> refers outside the file"
            ));
        }
    }
    Ok(())
}

/// Every CSV file parses with the csv crate, with a header and rows of the header's width.
fn check_csv(dir: &Path) -> BTreeMap<String, Vec<csv::StringRecord>> {
    let mut tables = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("tables dir") {
        let path = entry.expect("entry").path();
        let mut r = csv::Reader::from_path(&path).expect("open csv");
        let width = r.headers().expect("header").len();
        let rows: Vec<csv::StringRecord> = r
            .records()
            .map(|x| x.unwrap_or_else(|e| panic!("{}: {e}", path.display())))
            .collect();
        assert!(rows.iter().all(|x| x.len() == width), "{}", path.display());
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        tables.insert(name, rows);
    }
    tables
}

#[test]
fn report_writes_every_file_with_the_drill_down_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("layers.sqlite");
    let answers = synth::generate("layers", &trace, &GenOptions::default()).expect("generate");
    let out = dir.path().join("out");
    let run = report(&trace, &out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for f in ["report.md", "report.json", "report.html"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("json"))
            .expect("report.json parses");
    // The report's drill-down is the same analysis as `drill --json`.
    let drill = nsys_lens([OsStr::new("drill"), trace.as_os_str(), OsStr::new("--json")]);
    let drill: Value = serde_json::from_slice(&drill.stdout).expect("drill JSON");
    for key in [
        "gaps",
        "graphs",
        "patterns",
        "stragglers",
        "findings",
        "idle",
    ] {
        assert_eq!(json["drill"][key], drill[key], "{key}");
    }
    // One findings list: the report's is the drill-down's, in the same order, in every format.
    assert_eq!(json["findings"], drill["findings"]);
    let titles: Vec<&str> = drill["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["title"].as_str())
        .collect();
    assert!(titles.len() >= 2, "{titles:?}");
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
    let html = std::fs::read_to_string(out.join("report.html")).expect("html");
    for (format, text) in [("md", &md), ("html", &html.replace("&amp;", "&"))] {
        let at: Vec<usize> = titles
            .iter()
            .map(|t| {
                text.find(t)
                    .unwrap_or_else(|| panic!("{format}: finding `{t}` missing"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{format}: order {at:?}");
    }
    assert_eq!(json["detect"]["verdict"], "YES");
    let blocks = &answers["layer_pattern"]["blocks"][0];
    assert_eq!(
        json["drill"]["patterns"]["blocks"][0]["first"],
        blocks["first"]
    );
    let tables = check_csv(&out.join("tables"));
    let pattern = &tables["pattern_blocks.csv"];
    assert_eq!(
        pattern.len(),
        answers["layer_pattern"]["blocks"]
            .as_array()
            .map_or(0, Vec::len)
    );
    assert_eq!(&pattern[0][3], "attention");
    let findings = &tables["findings.csv"];
    assert_eq!(
        findings.len(),
        json["findings"].as_array().map_or(0, Vec::len)
    );
    assert!(
        findings
            .iter()
            .any(|f| &f[3] == "ALLOC" && f[2].contains("cudaEventCreateWithFlags")),
        "the 6 ms event creations are found: {findings:?}"
    );
    assert!(md.starts_with("# nsys-lens report: "));
    assert!(md.contains("## What to do next") && md.contains("| Rank | Group | Kernels |"));
    let page = std::fs::read_to_string(out.join("report.html")).expect("html");
    check_self_contained(&page).unwrap_or_else(|e| panic!("report.html: {e}"));
    assert!(page.matches("<svg").count() >= 4, "plots are embedded");
    assert!(!page.contains("xmlns"), "no namespace URL");
}

#[test]
fn the_checks_catch_external_references_and_broken_markup() {
    let ok = "<!DOCTYPE html>\n<html><body><a href=\"#s1\">x</a><br/></body></html>";
    assert_eq!(check_self_contained(ok), Ok(()));
    for bad in [
        "<!DOCTYPE html>\n<html><body><img src=\"a.png\"/></body></html>",
        "<!DOCTYPE html>\n<html><body><a href=\"page.html\">x</a></body></html>",
        "<!DOCTYPE html>\n<html><body><p>see https://example.org</p></body></html>",
        "<!DOCTYPE html>\n<html><body><p>open</body></html>",
        "<!DOCTYPE html>\n<html><body><p>a & b</p></body></html>",
    ] {
        assert!(check_self_contained(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_csv_zip_holds_every_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tp2.sqlite");
    synth::generate("tp2-straggler", &path, &GenOptions::default()).expect("generate");
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "tp2.sqlite", &DrillOptions::default()).expect("report");
    let files = tables_csv::csv_files(&outline::tables(&doc)).expect("csv");
    let bytes = tables_csv::zip(&files).expect("zip");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip archive");
    assert_eq!(archive.len(), files.len());
    for (name, text) in &files {
        let mut entry = archive.by_name(&format!("tables/{name}")).expect("entry");
        let mut back = String::new();
        entry.read_to_string(&mut back).expect("read");
        assert_eq!(&back, text, "{name}");
    }
    let stragglers = files
        .iter()
        .find(|f| f.0 == "stragglers.csv")
        .expect("stragglers.csv");
    assert!(
        stragglers
            .1
            .lines()
            .nth(2)
            .is_some_and(|l| l.contains(",1,50002,")),
        "{}",
        stragglers.1
    );
    // The in-memory writers are what the page calls: same text as the CLI would write.
    assert!(markdown::render(&doc).contains("Straggler: device 1 (pid 50002"));
    check_self_contained(&html::render(&doc)).expect("self-contained");
}

/// The API findings of a report count the calls of their window only, say which window, and
/// give a share above 100 % only with the threads that overlap.
fn findings_within_their_window(file: &str, json: &Value) -> Vec<String> {
    let share = regex::Regex::new(r"([0-9]+(?:\.[0-9]+)?) % of").expect("regex");
    let mut problems = Vec::new();
    for f in json["findings"].as_array().into_iter().flatten() {
        let evidence = f["evidence"].as_str().unwrap_or_default();
        let title = f["title"].as_str().unwrap_or_default();
        for c in share.captures_iter(evidence) {
            let v: f64 = c[1].parse().expect("number");
            if v > 100.0 && !evidence.contains("above 100 % only because the threads overlap") {
                problems.push(format!("{file}: {v} % without saying why: {evidence}"));
            }
        }
        let source = f["source"].as_str().unwrap_or_default();
        if source != "syncs" && source != "allocations" {
            continue;
        }
        let in_window = json["explain"][source]["in_window"]["calls"].as_u64();
        let counted = evidence
            .split(' ')
            .next()
            .and_then(|n| n.replace(',', "").parse().ok());
        if counted != in_window || in_window == Some(0) {
            problems.push(format!(
                "{file}: {title} counts {counted:?}, the window {in_window:?}"
            ));
        }
        let says = [
            "(in the kernel window)",
            "per steady-state step",
            "(whole capture",
        ];
        if !says.iter().any(|w| title.contains(w)) {
            problems.push(format!(
                "{file}: the title does not say what was counted: {title}"
            ));
        }
    }
    problems
}

/// The swept exports (every public one under `--full`) are reported: coverage notes, the
/// manifest's kernel count, a verdict or the host side alone, a self-contained page, and CSV
/// tables that hold the JSON's figures.
#[test]
fn public_exports_are_reported() {
    let swept = common::sweep_exports();
    let mut reported = 0;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(public_traces_dir().join("MANIFEST.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let mut problems = Vec::new();
    for entry in manifest.as_array().expect("array") {
        let file = entry["file"].as_str().expect("file");
        let trace = public_traces_dir().join(file);
        if !swept.contains(&trace) {
            continue;
        }
        reported += 1;
        let out = dir.path().join(file);
        let run = report(&trace, &out);
        let args = [OsStr::new("report"), trace.as_os_str()];
        let kernels = entry["counts"]
            .get("CUPTI_ACTIVITY_KIND_KERNEL")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if run.status.code() != Some(0) {
            problems.push(describe(&args, &run));
            continue;
        }
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("report.json")).expect("report.json"),
        )
        .expect("report.json parses");
        if json["coverage"].as_array().is_none_or(Vec::is_empty) {
            problems.push(format!("{file}: no coverage notes stated"));
        }
        if json["explain"]["kernels"]["kernels"].as_u64() != Some(kernels) {
            problems.push(format!("{file}: kernel count differs from the manifest"));
        }
        // A verdict, or the host side with the verdict marked not computed: never both.
        let not_computed = &json["verdict_not_computed"]["verdict"];
        if (kernels == 0) != (not_computed == "not computed: no kernel records") {
            problems.push(format!("{file}: verdict_not_computed is {not_computed}"));
        }
        if (kernels == 0) != json["detect"].is_null() {
            problems.push(format!("{file}: detect is {}", json["detect"]));
        }
        if (kernels == 0) != json["whatif"].is_null() {
            problems.push(format!(
                "{file}: whatif is null: {}",
                json["whatif"].is_null()
            ));
        }
        if (kernels == 0) != json["ranks"].is_null() {
            problems.push(format!(
                "{file}: ranks is null: {}",
                json["ranks"].is_null()
            ));
        }
        let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
        if let Err(e) = check_self_contained(&page) {
            problems.push(format!("{file}: report.html: {e}"));
        }
        check_csv(&out.join("tables"));
        problems.extend(findings_within_their_window(file, &json));
        problems.extend(pageable_copies_hold_their_sync_time(file, &json));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert_eq!(reported, swept.len(), "exports reported");
}

/// A CSV cell as a number (empty: none).
fn csv_number(cell: &str) -> Option<f64> {
    (!cell.is_empty()).then(|| cell.parse().expect("a number"))
}

/// Whether a CSV cell holds `want` as the report writes it (durations to 3 decimals, shares to
/// 4), or is empty where the JSON holds none.
fn csv_holds(cell: &str, want: Option<f64>, decimals: i32) -> bool {
    match (csv_number(cell), want) {
        (Some(got), Some(want)) => (got - want).abs() <= 0.51 * 10f64.powi(-decimals),
        (None, None) => true,
        _ => false,
    }
}

/// What would it buy: `report.json`'s `whatif` is `nsys-lens whatif --json` of the same export
/// (its schema_version aside), and the section's tables hold its figures: the unchanged replay
/// and each prediction of the standard set (per step, window, gain, bound), the critical path
/// per part and the names on it; the Markdown shows the section. On a real export with steady
/// steps, a generated one, and a real one without steps (its window replayed, no path tables).
#[test]
fn the_reports_what_would_it_buy_equals_whatif_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = [
        common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite"),
        common::generate_in(dir.path(), "host-bound"),
        common::public_trace("NVIDIA_Fuser__df8f397__report1.sqlite"),
    ];
    for (i, trace) in traces.iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let json = report_json(trace, &out);
        let args = [
            OsStr::new("whatif"),
            trace.as_os_str(),
            OsStr::new("--json"),
        ];
        let cli = nsys_lens(args);
        assert!(cli.status.success(), "{}", describe(&args, &cli));
        let mut want: Value = serde_json::from_slice(&cli.stdout).expect("whatif JSON");
        want.as_object_mut().map(|o| o.remove("schema_version"));
        let w = &json["whatif"];
        assert_eq!(w, &want, "{}: report.json's whatif", trace.display());

        let tables = check_csv(&out.join("tables"));
        let predicted = &tables["whatif_predicted.csv"];
        let rows: Vec<&Value> = std::iter::once(&w["replayed"])
            .chain(w["predicted"].as_array().expect("predicted"))
            .collect();
        assert_eq!(predicted.len(), rows.len());
        let steps = w["steps"].as_u64().expect("steps");
        for (k, (row, p)) in predicted.iter().zip(&rows).enumerate() {
            if k > 0 {
                assert_eq!(&row[0], p["change"].as_str().expect("change"));
            }
            let gain = (k > 0).then(|| p["gain_pct"].as_f64()).flatten();
            assert!(
                csv_holds(&row[1], p["wall_time_per_step_us"].as_f64(), 3)
                    && csv_holds(&row[2], p["window_us"].as_f64(), 3)
                    && csv_holds(&row[3], gain.map(|g| g / 100.0), 4),
                "{}: {row:?} vs {p}",
                trace.display()
            );
            let bound = if k == 0 {
                &w["critical_path"]["bound"]
            } else {
                &p["bound"]
            };
            assert_eq!(row[4].is_empty(), steps == 0, "{row:?}");
            if steps > 0 {
                let kind = bound.as_str().expect("bound");
                assert_eq!(row[4].to_lowercase(), kind, "{row:?}");
            }
        }
        let md = std::fs::read_to_string(out.join("report.md")).expect("md");
        assert!(md.contains("## What would it buy"), "{}", trace.display());
        let path = &w["critical_path"];
        if steps == 0 {
            assert!(!tables.contains_key("whatif_path.csv"));
            continue;
        }
        let parts: Vec<&Value> = path["parts"]
            .as_array()
            .expect("parts")
            .iter()
            .filter(|p| p["per_step_us"].as_f64() != Some(0.0))
            .collect();
        let csv = &tables["whatif_path.csv"];
        assert_eq!(csv.len(), parts.len());
        for (row, p) in csv.iter().zip(parts) {
            assert_eq!(&row[0], p["part"].as_str().expect("part"));
            assert!(
                csv_holds(&row[2], p["per_step_us"].as_f64(), 3),
                "{row:?} vs {p}"
            );
            assert!(csv_holds(&row[3], p["share"].as_f64(), 4), "{row:?} vs {p}");
        }
        let names: Vec<&Value> = ["top_ops", "top_kernels"]
            .iter()
            .flat_map(|k| path[k].as_array().expect("names"))
            .collect();
        let csv = &tables["whatif_names.csv"];
        assert_eq!(csv.len(), names.len());
        for (row, n) in csv.iter().zip(names) {
            assert_eq!(&row[0], n["name"].as_str().expect("name"));
            assert_eq!(&row[1], n["part"].as_str().expect("part"));
            assert!(
                csv_holds(&row[2], n["per_step_us"].as_f64(), 3),
                "{row:?} vs {n}"
            );
        }
    }
}

/// The pageable-async-copy finding states the GPU-idle time the drill-down's `sync` cause gives
/// to async copy calls, runtime or driver API (`cudaMemcpyAsync`, `cuMemcpyHtoDAsync`): summed
/// here from the idle section's labels (checked between 1 ms and 1 s, written with two decimals).
fn pageable_copies_hold_their_sync_time(file: &str, json: &Value) -> Vec<String> {
    let async_copy = regex::Regex::new(r"^cu(da)?Memcpy\w*Async").expect("regex");
    let held: u64 = json["drill"]["idle"]["per_device"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["causes"].as_array().into_iter().flatten())
        .filter(|c| c["kind"] == "sync")
        .flat_map(|c| c["labels"].as_array().into_iter().flatten())
        .filter(|l| l["label"].as_str().is_some_and(|l| async_copy.is_match(l)))
        .filter_map(|l| l["ns"].as_u64())
        .sum();
    let findings = json["findings"].as_array().into_iter().flatten();
    let stated = findings
        .filter(|f| {
            f["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Async copies from pageable host memory"))
        })
        .filter_map(|f| f["evidence"].as_str())
        .filter(|e| e.contains("of GPU-idle time"));
    let want = format!(
        "they hold {:.2}\u{a0}ms of GPU-idle time",
        held as f64 / 1e6
    );
    stated
        .filter(|e| (1_000_000..1_000_000_000).contains(&held) && !e.contains(&want))
        .map(|e| format!("{file}: pageable copies: `{e}` does not say `{want}`"))
        .collect()
}

#[test]
fn bad_output_and_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("g.sqlite");
    synth::generate("gaps", &trace, &GenOptions::default()).expect("generate");
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"x").expect("write");
    let run = report(&trace, &blocker.join("sub"));
    let args = [OsStr::new("report"), trace.as_os_str()];
    assert_one_line_error(
        &args,
        &run,
        EXIT_INPUT,
        Some("cannot create the output directory"),
    );
    let no_out = nsys_lens([OsStr::new("report"), trace.as_os_str()]);
    assert_eq!(no_out.status.code(), Some(EXIT_USAGE));
    let missing = report(&dir.path().join("missing.sqlite"), &dir.path().join("o"));
    assert_one_line_error(&args, &missing, EXIT_INPUT, None);
    assert!(
        !dir.path().join("o").exists(),
        "nothing written for an unreadable trace"
    );
}

/// `SELECT` of one number on `conn`, 0 when the table is absent.
fn sql_count(conn: &rusqlite::Connection, table: &str, query: &str) -> i64 {
    let exists: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .expect("sqlite_master");
    match exists {
        true => conn.query_row(query, [], |r| r.get(0)).expect(query),
        false => 0,
    }
}

const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// Runtime rows whose name satisfies the SQL condition `on_name` (over `s.value`): count and
/// summed duration in ns.
fn runtime_where(conn: &rusqlite::Connection, on_name: &str) -> (i64, i64) {
    let q = |what: &str| {
        format!(
            "SELECT {what} FROM {RUNTIME} r JOIN StringIds s ON s.id = r.nameId WHERE {on_name}"
        )
    };
    (
        sql_count(conn, RUNTIME, &q("count(*)")),
        sql_count(conn, RUNTIME, &q("coalesce(sum(r.end - r.start), 0)")),
    )
}

#[test]
fn kernel_less_public_exports_get_a_host_side_report_equal_to_sql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(public_traces_dir().join("MANIFEST.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let mut seen = Vec::new();
    for entry in manifest.as_array().expect("array") {
        let kernels = entry["counts"].get("CUPTI_ACTIVITY_KIND_KERNEL");
        if kernels.and_then(Value::as_u64).unwrap_or(0) > 0 {
            continue;
        }
        let file = entry["file"].as_str().expect("file");
        let trace = public_traces_dir().join(file);
        let out = dir.path().join(file);
        let run = report(&trace, &out);
        let args = [OsStr::new("report"), trace.as_os_str()];
        assert_eq!(run.status.code(), Some(0), "{}", describe(&args, &run));
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("report.json")).expect("report.json"),
        )
        .expect("report.json parses");
        let e = &json["explain"];
        let conn = rusqlite::Connection::open_with_flags(
            &trace,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open");
        // Every CUDA API call, and per name.
        let api = sql_count(&conn, RUNTIME, &format!("SELECT count(*) FROM {RUNTIME}"));
        assert_eq!(
            e["api_calls"]["calls"].as_i64(),
            Some(api),
            "{file}: API calls"
        );
        for n in e["api_calls"]["by_name"].as_array().expect("by_name") {
            let name = n["name"].as_str().expect("name").replace('\'', "''");
            let (count, ns) = runtime_where(&conn, &format!("s.value = '{name}'"));
            assert_eq!(n["count"].as_i64(), Some(count), "{file}: {name}");
            let us = n["total_us"].as_f64().expect("total_us");
            assert!(
                (us - ns as f64 / 1000.0).abs() < 1e-6,
                "{file}: {name} {us} µs vs {ns} ns"
            );
        }
        // Blocking syncs: the names that wait for the device, any version suffix.
        let syncs = [
            "cudaDeviceSynchronize",
            "cudaStreamSynchronize",
            "cudaEventSynchronize",
            "cudaThreadSynchronize",
            "cuCtxSynchronize",
            "cuStreamSynchronize",
            "cuEventSynchronize",
        ];
        let on_sync: Vec<String> = syncs
            .iter()
            .map(|n| format!("s.value = '{n}' OR s.value GLOB '{n}_v[0-9]*'"))
            .collect();
        let (sync_calls, sync_ns) = runtime_where(&conn, &on_sync.join(" OR "));
        assert_eq!(
            e["syncs"]["calls"].as_i64(),
            Some(sync_calls),
            "{file}: syncs"
        );
        // Without kernels the window is the whole capture: every sync is counted in it.
        assert_eq!(
            e["syncs"]["in_window"]["calls"].as_i64(),
            Some(sync_calls),
            "{file}"
        );
        let sync_us = e["syncs"]["total_us"].as_f64().expect("total_us");
        assert!(
            (sync_us - sync_ns as f64 / 1000.0).abs() < 1e-3,
            "{file}: sync time"
        );
        // Object creation and allocation.
        let allocs = [
            "cudaEventCreate",
            "cuEventCreate",
            "cudaStreamCreate",
            "cuStreamCreate",
            "cudaMalloc",
            "cudaFree",
            "cudaHostAlloc",
            "cuMemAlloc",
            "cuMemFree",
            "cuMemCreate",
            "cuMemHostAlloc",
        ];
        let on_alloc: Vec<String> = allocs
            .iter()
            .map(|n| format!("s.value GLOB '{n}*'"))
            .collect();
        let (alloc_calls, _) = runtime_where(&conn, &on_alloc.join(" OR "));
        assert_eq!(
            e["allocations"]["calls"].as_i64(),
            Some(alloc_calls),
            "{file}: allocations"
        );
        // Copies, memsets and NVTX ranges.
        let copies: i64 = e["memory"]["memcpy"]
            .as_array()
            .expect("memcpy")
            .iter()
            .filter_map(|k| k["count"].as_i64())
            .sum();
        let memcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
        assert_eq!(
            copies,
            sql_count(&conn, memcpy, &format!("SELECT count(*) FROM {memcpy}"))
        );
        let memset = "CUPTI_ACTIVITY_KIND_MEMSET";
        let sets = sql_count(&conn, memset, &format!("SELECT count(*) FROM {memset}"));
        assert_eq!(
            e["memory"]["memset"]["count"].as_i64(),
            Some(sets),
            "{file}: memsets"
        );
        let ranges = sql_count(
            &conn,
            "NVTX_EVENTS",
            "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)",
        );
        assert_eq!(
            e["nvtx"]["ranges"].as_i64(),
            Some(ranges),
            "{file}: NVTX ranges"
        );
        // Per process: API and sync calls by pid.
        for p in e["processes"].as_array().expect("processes") {
            let pid = p["pid"].as_i64().expect("pid");
            let of_pid = format!("((r.globalTid >> 24) & 16777215) = {pid}");
            let (calls, _) = runtime_where(&conn, &of_pid);
            assert_eq!(
                p["api_calls"].as_i64(),
                Some(calls),
                "{file}: pid {pid} API calls"
            );
            let (syncs, _) =
                runtime_where(&conn, &format!("({}) AND {of_pid}", on_sync.join(" OR ")));
            assert_eq!(
                p["sync_calls"].as_i64(),
                Some(syncs),
                "{file}: pid {pid} syncs"
            );
        }
        // The verdict is marked not computed, with the capture advice that fits.
        let n = &json["verdict_not_computed"];
        assert_eq!(n["verdict"], "not computed: no kernel records", "{file}");
        let launches = runtime_where(&conn, "s.value GLOB 'cu*Launch*'").0;
        let advice = n["advice"].as_str().expect("advice");
        let expected = match (launches, sql_count(&conn, RUNTIME, "SELECT 1")) {
            (1.., _) => "cudaProfilerStop()",
            (0, 1) => "no kernel was launched while the capture ran",
            _ => "--trace=cuda",
        };
        assert!(advice.contains(expected), "{file}: {advice}");
        // The advice is stated once per format (with the verdict); the summary and the
        // coverage notes point to it.
        for name in ["report.md", "report.html"] {
            let text = std::fs::read_to_string(out.join(name)).expect(name);
            assert_eq!(text.matches(advice).count(), 1, "{file}: {name}");
        }
        let coverage = json["coverage"].to_string();
        assert!(!coverage.contains(advice), "{file}: {coverage}");
        assert!(
            json["detect"].is_null() && json["drill"].is_null(),
            "{file}"
        );
        // `detect` keeps exit 3, with the same line.
        let detect_args = [OsStr::new("detect"), trace.as_os_str()];
        let detect = nsys_lens(detect_args);
        check_one_line_error(&detect_args, &detect, EXIT_INPUT, Some(advice)).expect("detect");
        seen.push((file.to_string(), api, sync_calls));
    }
    // The exports this test is about: ZhangXin's 33 482 calls and 11 451 syncs among them.
    assert!(seen.len() >= 4, "{seen:?}");
    let zhang = seen
        .iter()
        .find(|(f, ..)| f.starts_with("ZhangXin8069_qcu"));
    assert_eq!(
        zhang.map(|z| (z.1, z.2)),
        Some((33_482, 11_451)),
        "{seen:?}"
    );
}

/// A real PyTorch `emit_nvtx` export: every call of an op (`aten::item, op_id = N`) is one row
/// of the NVTX table, its count and time those of plain SQL over the op's ranges.
#[test]
fn emit_nvtx_ops_are_one_row_each_with_the_sql_count_and_time() {
    let path = public_traces_dir().join("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "h100.sqlite", &DrillOptions::default()).expect("report");
    let ranges = &doc.explain.nvtx.top_ranges;
    assert!(
        ranges.iter().all(|r| !r.name.contains(", op_id = ")),
        "no per-call names: {:?}",
        ranges.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    for op in ["aten::item", "aten::mm", "aten::copy_"] {
        let (calls, ns): (i64, i64) = conn
            .query_row(
                "SELECT count(*), sum(end - start) FROM NVTX_EVENTS \
                 WHERE end IS NOT NULL AND (text = ?1 OR substr(text, 1, length(?1) + 2) = ?1 || ', ')",
                [op],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("sql");
        let row = ranges
            .iter()
            .find(|r| r.name == op)
            .unwrap_or_else(|| panic!("{op} is a row"));
        assert!(calls > 1, "{op}: several calls in the export");
        assert_eq!(row.count as i64, calls, "{op} calls");
        assert!(
            (row.total_us - ns as f64 / 1000.0).abs() < 1e-6,
            "{op}: {} µs vs SQL {} ns",
            row.total_us,
            ns
        );
    }
    let md = markdown::render(&doc);
    assert_eq!(
        md.matches("| aten::item |").count(),
        1,
        "one aten::item row"
    );
}

/// The Markdown and HTML report read as one formatter writes: one unit per duration column in
/// its header (never upper-cased `Μ`), no column that says nothing (the file of a one-file
/// report, the stream of device-idle gaps), no internal reference, numbers unbroken in HTML.
#[test]
fn report_tables_state_units_once_and_drop_columns_that_say_nothing() {
    let path = public_traces_dir().join("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "h100.sqlite", &DrillOptions::default()).expect("report");
    let md = markdown::render(&doc);
    assert!(!md.contains('\u{39c}'), "no Greek capital Mu");
    assert!(!md.contains("reference §"), "no internal reference");
    assert!(!md.contains("| File |"), "one file: no file column");
    let idle = md
        .split("**Largest device-idle gaps**")
        .nth(1)
        .and_then(|s| s.lines().nth(2))
        .expect("the device-idle gaps table");
    assert!(
        idle.starts_with("| Device | Start (ms) | Gap (µs) |"),
        "{idle}"
    );
    assert!(!idle.contains("Stream"), "device-idle gaps have no stream");
    // The largest gap: 761.9 µs (the 155.87 ms gaps of the kernel table alone were copies).
    assert!(md.contains("| 761.9 |"), "the gap column is in µs");
    assert!(
        !md.contains("GPU idle during"),
        "no host call is blamed for time the GPU spent copying"
    );
    assert!(!md.contains("761900"), "never in ns beside µs");
    // A negative launch latency is explained.
    let d = &doc.explain.launch_latency.distribution;
    assert!(d.min_us < 0.0, "this export has a negative launch latency");
    assert!(md.contains("Some latencies are negative"));
    let page = html::render(&doc);
    assert!(page.contains("<td class=\"num\">761.9</td>"));
    assert!(page.contains(".num{text-align:right;white-space:nowrap"));
    // Metrics in the catalogue's order, named as the page names them, never a split key.
    let m1 = page.find("GPU idle ratio (M1)").expect("M1 row");
    let m5 = page.find("NCCL share of GPU time (M5)").expect("M5 row");
    assert!(m1 < m5, "M1 before M5");
    assert!(
        !page.contains(">host_prep_idle_attribution<"),
        "no raw key in the HTML"
    );
}

/// The notes on what a public export lacks (which tables exist: `sqlite_master`), counted in
/// `report`'s JSON and in `drill --json`: a missing table, the missing kernel records, runtime
/// calls that are all kernel launches (`SELECT count(*)` of calls not named `cu*Launch*` is 0)
/// — each is one note, not one per module that reads it.
#[test]
fn each_missing_table_or_call_kind_is_one_coverage_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    for file in [
        "CO18326_uvmTorch__report1.sqlite",
        "amir-ghz_DynamicViT__nsys_profile.sqlite",
        "GindaChen_nsys-ai__healthy_1pct.v3.sqlite",
        "Lianhang666_gpu4__report2.sqlite",
    ] {
        let trace = public_traces_dir().join(file);
        let conn = rusqlite::Connection::open_with_flags(
            &trace,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open");
        let has = |table: &str| common::has_table(&conn, table);
        // (fact, the text every note on it holds)
        let mut facts: Vec<(&str, &str)> = [
            ("NVTX_EVENTS", "NVTX_EVENTS"),
            (RUNTIME, "runtime API table"),
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"),
            (
                "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_KERNEL table",
            ),
        ]
        .into_iter()
        .filter(|(table, _)| !has(table))
        .collect();
        let launches_only = has(RUNTIME)
            && sql_count(
                &conn,
                RUNTIME,
                &format!(
                    "SELECT count(*) FROM {RUNTIME} r JOIN StringIds s ON s.id = r.nameId \
                     WHERE s.value NOT GLOB 'cu*Launch*'"
                ),
            ) == 0;
        if launches_only {
            facts.push(("launch calls only", "kernel launches only"));
        }
        assert!(!facts.is_empty(), "{file}: lacks nothing");
        let out = dir.path().join(file);
        let run = report(&trace, &out);
        assert_eq!(run.status.code(), Some(0), "{file}");
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("report.json")).expect("report.json"),
        )
        .expect("report.json parses");
        let mut lists = vec![("report", json["coverage"].clone())];
        if has("CUPTI_ACTIVITY_KIND_KERNEL") {
            let drill = nsys_lens([OsStr::new("drill"), trace.as_os_str(), OsStr::new("--json")]);
            let drill: Value = serde_json::from_slice(&drill.stdout).expect("drill JSON");
            lists.push(("drill", drill["coverage"].clone()));
        }
        for (what, notes) in lists {
            let notes = notes.as_array().expect("coverage");
            for (fact, text) in &facts {
                let on_it: Vec<&Value> = notes
                    .iter()
                    .filter(|n| {
                        let all = format!("{} {}", n["subject"], n["reason"]);
                        all.to_lowercase().contains(&text.to_lowercase())
                    })
                    .collect();
                assert_eq!(on_it.len(), 1, "{file} {what}: {fact}: {on_it:#?}");
            }
        }
    }
}

/// `h100_2gpu_1s`: its first recorded launch call (correlation id 1452809 in process 111) runs
/// its kernel 421 ms later, and the 905 kernels of each device before it have no launch call in
/// the capture (their ids are below the runtime table's first): the calls were made before the
/// capture began and waited in the queue. The join is right (by process and correlation id, no
/// kernel starts before its call; 3 start up to 3.5 µs before it returns); the latency is
/// queueing, and the report says so.
/// The median is checked against plain SQL: kernel start − call end over the joined
/// `cudaLaunchKernel*` calls, each device's process by `globalPid >> 24`.
#[test]
fn a_median_launch_latency_of_hundreds_of_ms_is_reported_as_queued_launches() {
    let path = public_traces_dir().join("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let joined = "CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r \
        ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) \
        JOIN StringIds s ON s.id = r.nameId WHERE s.value GLOB 'cudaLaunchKernel*'";
    let before_call = sql_count(
        &conn,
        RUNTIME,
        &format!("SELECT count(*) FROM {joined} AND k.start < r.start"),
    );
    assert_eq!(
        before_call, 0,
        "no kernel starts before its launch call starts"
    );
    let mut lat: Vec<i64> = {
        let sql = format!("SELECT k.start - r.end FROM {joined}");
        let mut st = conn.prepare(&sql).expect(&sql);
        st.query_map([], |r| r.get(0))
            .expect("rows")
            .map(|r| r.expect("latency"))
            .collect()
    };
    lat.sort_unstable();
    assert_eq!(lat.len(), 1632);
    // Either middle value: the core takes one rank, SQL has no median.
    let (lo, hi) = (lat[lat.len() / 2 - 1], lat[lat.len() / 2]);
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "h100.sqlite", &DrillOptions::default()).expect("report");
    let l = &doc.explain.launch_latency;
    assert_eq!(l.kernels, 1632);
    let p50_ns = (l.distribution.p50_us * 1000.0).round() as i64;
    assert!((lo..=hi).contains(&p50_ns), "{p50_ns} not in {lo}..={hi}");
    assert!(p50_ns > 400_000_000, "{p50_ns}");
    assert!(l.queued);
    let md = markdown::render(&doc);
    assert!(
        md.contains("Launches are queued: half of the kernels started 421"),
        "{md}"
    );

    // A generated host-bound trace launches to a GPU that waits: no queue.
    let (_dir, path, _) = common::generated("host-bound", 1, 3);
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "hb.sqlite", &DrillOptions::default()).expect("report");
    assert!(doc.explain.launch_latency.distribution.count > 0);
    assert!(!doc.explain.launch_latency.queued);
    assert!(!markdown::render(&doc).contains("Launches are queued"));
}

/// Every rank, one answer, in the report: `report.json`'s `ranks` is `nsys-lens ranks --json` of
/// the same export (its schema_version and the file's name aside), and with two ranks or more
/// the Markdown and the CSV tables show them: a row per rank with its share of last arrivals,
/// the worst collectives. One rank only (host-bound): no section.
#[test]
fn the_reports_ranks_equal_ranks_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = [
        (
            common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite"),
            true,
        ),
        (common::generate_in(dir.path(), "tp2-straggler"), true),
        (common::generate_in(dir.path(), "host-bound"), false),
    ];
    for (i, (trace, shown)) in traces.iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let json = report_json(trace, &out);
        let args = [OsStr::new("ranks"), trace.as_os_str(), OsStr::new("--json")];
        let cli = nsys_lens(args);
        assert!(cli.status.success(), "{}", describe(&args, &cli));
        let mut want: Value = serde_json::from_slice(&cli.stdout).expect("ranks JSON");
        want.as_object_mut().map(|o| o.remove("schema_version"));
        // The report names its file by its label; the CLI by the path it was given.
        let label = json["file"].clone();
        want["files"] = serde_json::json!([label.clone()]);
        for r in want["ranks"].as_array_mut().into_iter().flatten() {
            r["file"] = label.clone();
        }
        assert_eq!(
            json["ranks"],
            want,
            "{}: report.json's ranks",
            trace.display()
        );
        let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
        assert_eq!(
            md.contains("Ranks at the collectives"),
            *shown,
            "{}",
            trace.display()
        );
        let tables = check_csv(&out.join("tables"));
        match shown {
            true => {
                let csv = &tables["ranks.csv"];
                let ranks = want["ranks"].as_array().expect("ranks");
                assert_eq!(csv.len(), ranks.len(), "{csv:?}");
                // Columns: rank, named_by, file, pid, device, collectives, last_share, ….
                for (row, r) in csv.iter().zip(ranks) {
                    assert_eq!(&row[0], r["rank"].as_str().expect("rank"));
                    assert!(
                        csv_holds(&row[6], r["last_share"].as_f64(), 4),
                        "{row:?} {r}"
                    );
                    assert!(
                        csv_holds(&row[7], r["mean_lateness_us"].as_f64(), 3),
                        "{row:?} {r}"
                    );
                }
            }
            false => assert!(!tables.contains_key("ranks.csv")),
        }
    }
}

/// `nsys-lens report TRACE --out OUT` run to success, and its `report.json`.
fn report_json(trace: &Path, out: &Path) -> Value {
    let run = report(trace, out);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("json"))
        .expect("report.json parses")
}
