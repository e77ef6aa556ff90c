//! Replays the page's flow over many rank files natively and prints heap high-water marks after
//! each step (the wasm worker runs the same code, and its memory only grows, so a step's peak is
//! what the page must hold): each file opened as the page opens it (a scan keeping rows on the
//! budget every open file shares, `trace::RowBudget`) and its verdict, then the
//! Drill-down over every file, then the ranks answer (one file indexed at a time). Not a test;
//! prints figures.
//! Usage: cargo run --release -p nsys-lens --example ranks_memory -- RANK.sqlite…
//! Set `KEEP_NONE` to keep no row (as the page opens a 10 GB export), `VERDICT_ONLY` to stop
//! after the verdicts, `RANKS_ONLY` to skip the Drill-down.
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

#[path = "../tests/common/counting.rs"]
mod counting;
use counting::{LIVE, mib};

/// [`counting::mark`]; the most any step reached is the wasm memory the page grows to.
fn mark(step: &str, t: Instant, most: &mut usize) {
    *most = (*most).max(counting::mark(step, t));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("usage: ranks_memory RANK.sqlite…".into());
    }
    let t = Instant::now();
    let mut most = 0usize;
    let mut conns = Vec::new();
    let mut scans = Vec::new();
    // As the page: the first file sets the budget every file's kept rows share
    // (`web::indexed::shared_row_budget`).
    let mut shared: Option<nsys_lens::trace::SharedBudget> = None;
    for path in &paths {
        let conn = nsys_lens::trace::open_path(std::path::Path::new(path))?;
        nsys_lens::trace::configure(&conn, path)?;
        let bytes = std::fs::metadata(path)?.len();
        // `KEEP_NONE` set: no row kept, as the page opens a file too large for any (10 GB).
        let budget = match &mut shared {
            _ if std::env::var_os("KEEP_NONE").is_some() => nsys_lens::trace::RowBudget::new(0),
            Some(shared) => shared.open_beside(bytes),
            None => {
                let first =
                    nsys_lens::trace::SharedBudget::first(bytes, LIVE.load(Relaxed), paths.len());
                let budget = first.budget();
                shared = Some(first);
                budget
            }
        };
        let scan = nsys_lens::trace::FileScan::keeping_rows_within(
            &conn,
            path,
            nsys_lens::trace::LoadOptions::page(),
            &mut |_| true,
            &budget,
        )?;
        let kept = mib(scan.cached_bytes());
        conns.push(conn);
        scans.push(scan);
        mark(
            &format!("open {} (keeps {kept})", short(path)),
            t,
            &mut most,
        );
    }
    let rows: Vec<nsys_lens::trace::FileRows<'_>> = conns
        .iter()
        .zip(&scans)
        .map(|(c, s)| nsys_lens::trace::FileRows::over(c, s))
        .collect();
    // The verdicts the page keeps (by their options' text), which `ranks` reads again.
    let mut verdicts = Vec::new();
    for (path, r) in paths.iter().zip(&rows) {
        let cfg = nsys_lens::detect::DetectConfig {
            file_label: path.clone(),
            ..Default::default()
        };
        verdicts.push((format!("{cfg:?}"), nsys_lens::detect::detect_rows(r, &cfg)?));
        mark(
            &format!(
                "verdict {} (keeps {})",
                short(path),
                mib(r.scan().cached_bytes())
            ),
            t,
            &mut most,
        );
    }
    // `VERDICT_ONLY` set: what the page holds to give its verdict, and no more.
    if std::env::var_os("VERDICT_ONLY").is_some() {
        println!("most held: {}", mib(most));
        return Ok(());
    }
    let inputs: Vec<nsys_lens::drill::DrillInput<'_>> = paths
        .iter()
        .zip(&rows)
        .map(|(p, r)| nsys_lens::drill::DrillInput {
            rows: r,
            label: p,
            step_marker: None,
        })
        .collect();
    // `RANKS_ONLY` set: no Drill-down (its heap is given back before `ranks`).
    if std::env::var_os("RANKS_ONLY").is_none() {
        drill_down(&inputs, t, &mut most)?;
    }
    let kept = |i: usize, cfg: &nsys_lens::detect::DetectConfig| {
        let (key, report) = verdicts.get(i)?;
        (*key == format!("{cfg:?}")).then(|| report.clone())
    };
    let ranks = nsys_lens::ranks::ranks_seeing(&inputs, |_, _| None, |_, _| {}, kept)?;
    std::hint::black_box(ranks);
    mark("ranks", t, &mut most);
    println!("most held: {}", mib(most));
    Ok(())
}

/// The Drill-down over every file, as the page runs it before the Ranks panel.
fn drill_down(
    inputs: &[nsys_lens::drill::DrillInput<'_>],
    t: Instant,
    most: &mut usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let opts = nsys_lens::drill::DrillOptions::default();
    let indexed = nsys_lens::drill::index_inputs(inputs)?;
    mark("index every file", t, most);
    std::hint::black_box(nsys_lens::findings::DrillFindings::explained_after(
        &indexed, &opts, None,
    )?);
    drop(indexed);
    mark("drill-down over every file", t, most);
    Ok(())
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
