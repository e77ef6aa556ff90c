//! The page's verdict on two workers (`detect::beside`): the analysis worker folds the host
//! facts from the NVTX ranges as its host side reads them (keeping them too), the reader
//! worker sweeps the GPU work from the kernel rows it kept, the inputs and the summary crossing
//! as bytes, and the join assembles the verdict. It equals the verdict of the passes over the
//! same file, output for output, and comes through exactly where plain SQL says a fold can
//! (`scan_fold::foldable`) and the reader kept every kernel.

use std::path::{Path, PathBuf};

use crate::common;
use crate::scan_fold::{Json, assert_same, configs, foldable, json, passes, scenarios};

use nsys_lens::detect::beside::{FactsFold, detect_joined, from_bytes, sweep_beside, to_bytes};
use nsys_lens::detect::{DetectConfig, KernelSummary, SweepInputs, detect_rows};
use nsys_lens::trace::{self, FileRows, FileScan, KernelPart, LoadOptions, ReaderScan, RowBudget};

/// The page's open and verdict of `path`, the reader keeping up to `reader_bytes` of its rows:
/// the verdict, and whether the reader's sweep came through.
fn beside(path: &Path, cfg: &DetectConfig, reader_bytes: usize) -> (Json, bool) {
    let label = "s";
    let opts = LoadOptions::page();
    let conn = trace::open_path(path).expect("open");
    let mut fold = FactsFold::new(cfg);
    let budget = RowBudget::new(1 << 30);
    let host = FileScan::host_side_folding(&conn, label, (opts, &budget), &mut |_| true, &mut fold);
    let host = match host {
        Ok(host) => host,
        Err(e) => return (Err(e.to_string()), false),
    };
    let inputs = fold
        .sweep_inputs()
        .map(|i| to_bytes(&i).expect("inputs as bytes"));
    // The reader worker: its own connection, the inputs as the page relays them.
    let reader_conn = trace::open_path(path).expect("open");
    let mut reader =
        ReaderScan::read(&reader_conn, label, opts, reader_bytes, &mut |_| true).expect("reader");
    let summary = inputs.and_then(|bytes| {
        let inputs: SweepInputs = from_bytes(&bytes).expect("inputs read back");
        let swept = sweep_beside(&mut reader, (&reader_conn, label), inputs).expect("sweep");
        swept.map(|s| to_bytes(&s).expect("summary as bytes"))
    });
    let (shape, blocks) = reader.into_part().into_bytes().expect("part as bytes");
    let part = KernelPart::from_bytes(&shape, blocks).expect("part read back");
    let scan = host.finish(&conn, &mut |_| true, Some(part)).expect("join");
    let rows = FileRows::over(&conn, &scan);
    let through = summary.is_some();
    let verdict = match (fold.into_folded(), summary) {
        (Some(folded), Some(bytes)) => {
            let summary: KernelSummary = from_bytes(&bytes).expect("summary read back");
            detect_joined(&rows, folded, summary, cfg)
        }
        _ => detect_rows(&rows, cfg),
    };
    (json(verdict), through)
}

#[test]
fn the_pages_verdict_on_two_workers_equals_the_verdict_of_its_passes() {
    let (_dirs, generated) = scenarios();
    let inputs: Vec<PathBuf> = common::sweep_exports()
        .into_iter()
        .chain(generated.iter().cloned())
        .collect();
    let mut swept = Vec::new();
    for path in &inputs {
        let expect = foldable(path);
        for cfg in configs() {
            let what = format!("{}: {:?} {:?}", path.display(), cfg.profile, cfg.window);
            let (got, through) = beside(path, &cfg, 1 << 30);
            assert_same(&got, &passes(path, &cfg), &what);
            // A file without GPU work has nothing to sweep: its verdict says so.
            let has_work = got.is_ok();
            assert_eq!(through, expect && has_work, "{what}: swept beside");
        }
        swept.push(expect);
    }
    let single_rank = &swept[swept.len() - 3..];
    assert_eq!(
        single_rank, [true; 3],
        "the single-rank scenarios sweep beside"
    );
    // A reader that could not keep every kernel leaves the sweep to the analysis worker.
    let path = &generated[4];
    let cfg = DetectConfig::default();
    let (got, through) = beside(path, &cfg, 1 << 16);
    assert!(
        !through,
        "{}: swept from a part of the kernels",
        path.display()
    );
    assert_same(&got, &passes(path, &cfg), "a part kept");
}

#[test]
fn an_export_out_of_start_order_is_swept_by_the_passes() {
    let (_dir, path, _) = common::generated("tp2-phases", 1, 3);
    let tmp = tempfile::tempdir().expect("tempdir");
    for order in common::ROW_ORDERS {
        let copy = common::reordered(&path, tmp.path(), order);
        let cfg = DetectConfig::default();
        let (got, through) = beside(&copy, &cfg, 1 << 30);
        assert!(!through, "{order} order: swept rows out of start order");
        assert_same(&got, &passes(&copy, &cfg), order);
    }
}
