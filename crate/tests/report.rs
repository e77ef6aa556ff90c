//! `nsys-lens report`: the files it writes (Markdown, JSON, CSV tables, one HTML file), the HTML
//! being self-contained and well-formed, the CSV tables parsing, the zip export, every public
//! export reported (or refused with one line), and bad output directories.

mod common;

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
    for key in ["gaps", "graphs", "patterns", "stragglers", "findings"] {
        assert_eq!(json["drill"][key], drill[key], "{key}");
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
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
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

#[test]
fn every_public_export_is_reported_or_refused_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(public_traces_dir().join("MANIFEST.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let mut problems = Vec::new();
    for entry in manifest.as_array().expect("array") {
        let file = entry["file"].as_str().expect("file");
        let trace = public_traces_dir().join(file);
        let out = dir.path().join(file);
        let run = report(&trace, &out);
        let args = [OsStr::new("report"), trace.as_os_str()];
        let kernels = entry["counts"]
            .get("CUPTI_ACTIVITY_KIND_KERNEL")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if kernels == 0 {
            if let Err(e) = check_one_line_error(&args, &run, EXIT_INPUT, Some("no GPU kernels")) {
                problems.push(e);
            }
            continue;
        }
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
        let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
        if let Err(e) = check_self_contained(&page) {
            problems.push(format!("{file}: report.html: {e}"));
        }
        check_csv(&out.join("tables"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
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
        idle.starts_with("| Device | Start (ms) | Gap (ms) |"),
        "{idle}"
    );
    assert!(!idle.contains("Stream"), "device-idle gaps have no stream");
    // The largest gap: 155.87 ms in the table and in the finding that cites it.
    assert!(md.contains("| 155.87 |"), "the gap column is in ms");
    assert!(
        md.contains("largest: 155.87\u{a0}ms"),
        "the finding says it the same way"
    );
    assert!(!md.contains("155872"), "never in µs beside ms");
    // A negative launch latency is explained.
    let d = &doc.explain.launch_latency.distribution;
    assert!(d.min_us < 0.0, "this export has a negative launch latency");
    assert!(md.contains("Some latencies are negative"));
    let page = html::render(&doc);
    assert!(page.contains("<td class=\"num\">155.87</td>"));
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
