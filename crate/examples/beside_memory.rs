//! Replays the page's verdict on two workers natively, one step after the other, and prints the
//! heap's high-water mark of each (the wasm workers run the same code, and a worker's memory only
//! grows): the analysis worker's host side folding the host facts, the reader worker's kernel
//! table swept as it is read (its own heap: the step's peak less what the host side holds), the
//! bytes that cross, the join, the verdict's passes and the timeline's summary. Not a test;
//! prints figures.
//! Usage: cargo run --release -p nsys-lens --example beside_memory -- TRACE.sqlite
//! Set `KEEP_BYTES` to the rows each side may keep (default none, as the page opens a file of
//! several GB), `MOST_RANGES` to cap the host facts' fold (the page's cap by default), `STOP` to
//! `host` or `reader` to stop after that step (for a heap profile of its peak).
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

#[path = "../tests/common/counting.rs"]
mod counting;
use counting::{LIVE, mark, mib};

use nsys_lens::detect::beside::{
    FactsFold, SWEEP_RANGES_MOST, detect_joined, from_bytes, read_sweeping, to_bytes,
};
use nsys_lens::detect::{DetectConfig, KernelSummary, SweepInputs};
use nsys_lens::trace::{self, FileRows, FileScan, KernelPart, LoadOptions, ReaderScan, RowBudget};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: beside_memory TRACE.sqlite")?;
    let path = std::path::Path::new(&path);
    let keep: usize = std::env::var("KEEP_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let label = "trace";
    let t = Instant::now();
    let cfg = DetectConfig {
        file_label: label.into(),
        ..Default::default()
    };
    let opts = LoadOptions::page();
    let conn = trace::open_path(path)?;
    trace::configure(&conn, label)?;
    // `MOST_RANGES`: the fold's cap (the page's `SWEEP_RANGES_MOST` by default).
    let most = std::env::var("MOST_RANGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SWEEP_RANGES_MOST);
    let mut fold = FactsFold::new(&cfg, most, Some(trace::WorkEnds::read(&conn)));
    let budget = RowBudget::new(keep);
    let host =
        FileScan::host_side_folding(&conn, label, (opts, &budget), &mut |_| true, &mut fold)?;
    let inputs = fold.sweep_inputs();
    let ranges = inputs.as_ref().map(SweepInputs::ranges);
    let inputs = inputs.map(|i| to_bytes(&i)).transpose()?;
    let host_live = LIVE.load(Relaxed);
    mark("analysis: host side, facts folded", t);
    match (ranges, &inputs) {
        (Some(ranges), Some(bytes)) => {
            println!(
                "  sweep inputs: {ranges} ranges, {} as bytes",
                mib(bytes.len())
            )
        }
        _ => println!("  no sweep inputs: the fold gave up"),
    }
    let stop = std::env::var("STOP").unwrap_or_default();
    if stop == "host" {
        return Ok(());
    }

    let rc = trace::open_path(path)?;
    trace::configure(&rc, label)?;
    let mut reader = ReaderScan::begin(&rc, label, (opts, keep), &mut |_| true, true)?;
    let inputs: Option<SweepInputs> = inputs.as_deref().map(from_bytes).transpose()?;
    let summary = match inputs {
        Some(inputs) => read_sweeping(&mut reader, (&rc, label), &mut |_| true, (inputs, &mut ()))?,
        None => {
            reader.read_kernels(&rc, label, &mut |_| true, None)?;
            None
        }
    };
    let summary = summary.map(|s| to_bytes(&s)).transpose()?;
    let (shape, blocks) = reader.into_part().into_bytes()?;
    drop(rc);
    let peak = mark("reader: kernels read and swept", t);
    println!(
        "  the reader's own peak {} (the step's less the host side's {}); part {} in {} blocks",
        mib(peak.saturating_sub(host_live)),
        mib(host_live),
        mib(shape.len() + blocks.iter().map(Vec::len).sum::<usize>()),
        blocks.len()
    );
    if stop == "reader" {
        return Ok(());
    }

    let part = KernelPart::from_bytes(&shape, blocks)?;
    drop(shape);
    let scan = host.finish(&conn, &mut |_| true, Some(part))?;
    mark("analysis: joined", t);
    let rows = FileRows::over(&conn, &scan);
    let verdict = match (fold.into_folded(), summary) {
        (Some(folded), Some(bytes)) => {
            let summary: KernelSummary = from_bytes(&bytes)?;
            detect_joined(&rows, folded, summary, &cfg)?
        }
        _ => nsys_lens::detect::detect_rows(&rows, &cfg)?,
    };
    mark("analysis: verdict", t);
    println!("  bound: {:?}", verdict.bound.map(|b| b.kind));
    // The page's next view: the timeline's summary, over the file's rows.
    let timeline = nsys_lens::timeline::Timeline::of_rows_with_steps(&rows, label)?;
    mark("analysis: timeline summary", t);
    println!(
        "  summary {} KiB, row-block index {} KiB",
        timeline.summary_bytes() / 1024,
        timeline.index_bytes() / 1024
    );
    Ok(())
}
