//! The CLI's whole load against the file's rows (`trace::FileRows`, the page's deeper views'
//! engine) on one export: seconds and peak resident memory of `detect`, `analyze` and `drill`
//! each way. Prints figures; not a test. Linux only (reads /proc/self/status).
//! Usage: cargo run --release -p nsys-lens --example engines -- TRACE.sqlite [load|rows|cached]
use std::time::Instant;

use nsys_lens::analyze::{AnalyzeConfig, analyze_rows};
use nsys_lens::detect::{DetectConfig, detect_rows};
use nsys_lens::drill::{DrillInput, DrillOptions};
use nsys_lens::findings::DrillFindings;
use nsys_lens::model::rows::EventRows;
use nsys_lens::trace::{self, FileRows, LoadOptions};

#[path = "peak/mod.rs"]
mod peak;
use peak::{Res, peak_mib};

fn views(rows: &dyn EventRows, label: &str) -> Res<()> {
    let t = Instant::now();
    let verdict = detect_rows(rows, &DetectConfig::default())?;
    println!(
        "detect  {:>7.2} s  peak {:>7.0} MiB  verdict {}",
        t.elapsed().as_secs_f64(),
        peak_mib()?,
        verdict.verdict
    );
    let t = Instant::now();
    analyze_rows(rows, &AnalyzeConfig::default())?;
    println!(
        "analyze {:>7.2} s  peak {:>7.0} MiB",
        t.elapsed().as_secs_f64(),
        peak_mib()?
    );
    let t = Instant::now();
    let input = DrillInput {
        rows,
        label,
        step_marker: None,
    };
    DrillFindings::drill(&[input], &DrillOptions::default())?;
    println!(
        "drill   {:>7.2} s  peak {:>7.0} MiB",
        t.elapsed().as_secs_f64(),
        peak_mib()?
    );
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(
        args.get(1)
            .ok_or("usage: engines TRACE.sqlite [load|rows|cached]")?,
    );
    let label = path.display().to_string();
    let t = Instant::now();
    match args.get(2).map(String::as_str) {
        Some("load") => {
            let loaded = trace::load_path(path, LoadOptions::all())?;
            println!(
                "load    {:>7.2} s  peak {:>7.0} MiB",
                t.elapsed().as_secs_f64(),
                peak_mib()?
            );
            views(&loaded, &label)
        }
        mode => {
            let conn = trace::open_path(path)?;
            let keep: usize = match mode {
                Some("cached") => 256 << 20,
                _ => 0,
            };
            let scan = trace::FileScan::of_file(&conn, path, LoadOptions::all(), keep)?;
            let rows = FileRows::over(&conn, &scan);
            println!(
                "scan    {:>7.2} s  peak {:>7.0} MiB",
                t.elapsed().as_secs_f64(),
                peak_mib()?
            );
            views(&rows, &label)?;
            rows.check()?;
            Ok(())
        }
    }
}
