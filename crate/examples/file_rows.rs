//! `trace::FileRows` against the whole load on one export: per event table, the rows, the
//! seconds of a full read in start order and the growth of the process's peak resident memory
//! (`VmHWM`), first from the file (after its scan), then from the loaded trace. Prints
//! figures; not a test. Linux only (reads /proc/self/status).
//! Usage: cargo run --release -p nsys-lens --example file_rows -- TRACE.sqlite
use std::time::Instant;

use nsys_lens::model::rows::{EventRows, Rows};
use nsys_lens::trace::{self, FileRows, LoadOptions};

#[path = "peak/mod.rs"]
mod peak;
use peak::{Res, peak_mib};

/// Reads every row of `rows`, summing starts so the read is not optimised away.
fn drain<T>(rows: Rows<'_, T>, start: impl Fn(&T) -> i64) -> (u64, i64) {
    rows.fold((0, 0), |(n, sum), r| (n + 1, sum.wrapping_add(start(&r))))
}

/// Reads each table of `rows` in start order: rows, seconds, peak growth over `base` MiB.
fn read_tables(rows: &dyn EventRows, base: f64) -> Res<Vec<(&'static str, u64, f64, f64)>> {
    let mut out = Vec::new();
    let mut time = |name: &'static str, read: &dyn Fn() -> (u64, i64)| -> Res<()> {
        let t = Instant::now();
        let (n, _) = std::hint::black_box(read());
        out.push((name, n, t.elapsed().as_secs_f64(), peak_mib()? - base));
        Ok(())
    };
    time("kernels", &|| drain(rows.kernels(), |k| k.start))?;
    time("calls", &|| drain(rows.calls(), |c| c.start))?;
    time("ranges", &|| drain(rows.ranges(), |r| r.start))?;
    time("memcpy", &|| drain(rows.memcpy(), |m| m.start))?;
    time("memset", &|| drain(rows.memset(), |m| m.start))?;
    time("syncs", &|| drain(rows.syncs(), |s| s.start))?;
    rows.check()?;
    Ok(out)
}

fn main() -> Res<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: file_rows TRACE.sqlite")?;
    let path = std::path::Path::new(&path);
    let base = peak_mib()?;
    let conn = trace::open_path(path)?;
    let t = Instant::now();
    let file = FileRows::open(
        &conn,
        &path.display().to_string(),
        LoadOptions::all(),
        &mut |_| true,
    )?;
    let scan_s = t.elapsed().as_secs_f64();
    let scan_mib = peak_mib()? - base;
    let from_file = read_tables(&file, base)?;
    let runs = file.scan().run_counts();
    drop(file);
    drop(conn);

    let before_load = peak_mib()?;
    let t = Instant::now();
    let loaded = trace::load_path(path, LoadOptions::all())?;
    let load_s = t.elapsed().as_secs_f64();
    let load_mib = peak_mib()? - before_load;
    let from_trace = read_tables(&loaded, before_load)?;

    println!("{}", path.display());
    println!(
        "FileRows scan  {scan_s:>7.2} s  peak +{scan_mib:>7.1} MiB   |   whole load {load_s:>7.2} s  peak +{load_mib:>7.1} MiB"
    );
    println!(
        "{:<8} {:>11} {:>5} | {:>9} {:>13} | {:>9} {:>13}",
        "table", "rows", "runs", "file s", "file peak+", "loaded s", "loaded peak+"
    );
    for ((f, l), (_, runs)) in from_file.iter().zip(&from_trace).zip(runs) {
        println!(
            "{:<8} {:>11} {:>5} | {:>9.2} {:>9.1} MiB | {:>9.2} {:>9.1} MiB",
            f.0, f.1, runs, f.2, f.3, l.2, l.3
        );
        if f.1 != l.1 {
            return Err(format!("{}: {} rows from the file, {} loaded", f.0, f.1, l.1).into());
        }
    }
    Ok(())
}
