//! The page's verdict on two workers (`detect::beside`): the analysis worker folds the host
//! facts from the NVTX ranges as its host side reads them (keeping them too), the reader
//! worker sweeps the GPU work from the kernel rows it kept, the inputs and the summary crossing
//! as bytes, and the join assembles the verdict. It equals the verdict of the passes over the
//! same file, output for output, and comes through exactly where plain SQL says a fold can
//! (`scan_fold::foldable_with`, the copies and memsets in any order) and the reader kept every kernel.

use std::path::{Path, PathBuf};

use crate::common;
use crate::scan_fold::{Json, assert_same, configs, foldable_with, json, passes, scenarios};

use nsys_lens::detect::beside::{
    FactsFold, SWEEP_RANGES_MOST, detect_joined, from_bytes, read_sweeping, sweep_beside, to_bytes,
};
use nsys_lens::detect::{DetectConfig, KernelSummary, SweepInputs, detect_rows};
use nsys_lens::drill::gaps::idle_gap_histogram;
use nsys_lens::model::rows::EventRows;
use nsys_lens::riders::{ReaderSweep, Riders};
use nsys_lens::timeline::Timeline;
use nsys_lens::trace::{self, FileRows, FileScan, KernelPart, LoadOptions, ReaderScan, RowBudget};

/// When the kernel sweep's inputs reach the reader worker: before it reads the kernel table
/// (it sweeps as it reads), between two slices of it (the rows kept so far, then as it reads),
/// or after (it sweeps the rows it kept); or when it waits for them, as the page's reader does
/// once the next slice would not be kept (`ReaderScan::waits_for_sweep`).
#[derive(Debug, Clone, Copy)]
enum InputsCome {
    Before,
    Between,
    After,
    WhenWaited,
}

/// Kernels a slice of the reader's scan reads here: small, so that the scenarios' tables take
/// several.
const SLICE: u64 = 97;

/// The page's open and verdict of `path`, the reader keeping up to `reader_bytes` of its rows:
/// the verdict, and whether the reader's sweep came through.
fn beside(path: &Path, cfg: &DetectConfig, reader_bytes: usize, when: InputsCome) -> (Json, bool) {
    let open = beside_within(path, cfg, (reader_bytes, SWEEP_RANGES_MOST), when);
    (open.verdict, open.swept)
}

/// What the page's open and verdict of a file gave.
struct Beside {
    verdict: Json,
    /// The reader's sweep of the GPU work came through.
    swept: bool,
    /// The analysis worker swept the launch calls as its host side read them.
    launches_folded: bool,
    /// Rows the verdict read after the join.
    rows_after_join: u64,
}

/// When the analysis worker sweeps the launch calls: as its host side reads them (the page
/// keeping no row), or from the calls it kept once it read them, while the reader reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum LaunchesSwept {
    AsRead,
    FromKept,
}

/// [`beside`] with the host facts' fold holding at most `most_ranges` ranges.
fn beside_within(
    path: &Path,
    cfg: &DetectConfig,
    limits: (usize, usize),
    when: InputsCome,
) -> Beside {
    beside_sweeping(path, cfg, limits, (when, LaunchesSwept::AsRead))
}

/// [`beside_within`], the launch calls swept as `launches` says.
fn beside_sweeping(
    path: &Path,
    cfg: &DetectConfig,
    (reader_bytes, most_ranges): (usize, usize),
    (when, launches): (InputsCome, LaunchesSwept),
) -> Beside {
    let label = "s";
    let opts = LoadOptions::page();
    let conn = trace::open_path(path).expect("open");
    let work = (launches == LaunchesSwept::AsRead).then(|| trace::WorkEnds::read(&conn));
    let mut fold = FactsFold::new(cfg, most_ranges, work);
    let budget = RowBudget::new(1 << 30);
    let host = FileScan::host_side_folding(&conn, label, (opts, &budget), &mut |_| true, &mut fold);
    let host = match host {
        Ok(host) => host,
        Err(e) => {
            return Beside {
                verdict: Err(e.to_string()),
                swept: false,
                launches_folded: false,
                rows_after_join: 0,
            };
        }
    };
    let fold_swept = fold.swept_launches();
    let inputs = fold
        .sweep_inputs()
        .map(|i| to_bytes(&i).expect("inputs as bytes"));
    let mut folded = fold.into_folded();
    let launches_folded = match (&mut folded, launches) {
        (Some(folded), LaunchesSwept::FromKept) => {
            let work = trace::WorkEnds::read(&conn);
            let complete = folded.begin_launches(cfg, work)
                && host
                    .fold_kept_calls(&mut |call| folded.launch_call(call))
                    .expect("kept calls");
            folded.launches_read(complete);
            complete
        }
        (Some(_), LaunchesSwept::AsRead) => fold_swept,
        (None, _) => false,
    };
    // The reader worker: its own connection, the inputs as the page relays them.
    let inputs = || -> Option<SweepInputs> {
        let bytes = inputs.as_ref()?;
        Some(from_bytes(bytes).expect("inputs read back"))
    };
    let rc = trace::open_path(path).expect("open");
    // As the page's reader: room for the other GPU work, read once the inputs come.
    let mut reader = ReaderScan::begin(&rc, label, (opts, reader_bytes), &mut |_| true, true)
        .expect("reader")
        .with_slice_rows(SLICE);
    let swept = match (when, inputs()) {
        (InputsCome::Before, Some(inputs)) => {
            read_sweeping(&mut reader, (&rc, label), &mut |_| true, (inputs, &mut ()))
                .expect("read")
        }
        (InputsCome::Between, Some(inputs)) => {
            for _ in 0..3 {
                reader
                    .read_slice(&rc, label, &mut |_| true, None)
                    .expect("slice");
            }
            read_sweeping(&mut reader, (&rc, label), &mut |_| true, (inputs, &mut ()))
                .expect("read")
        }
        (InputsCome::WhenWaited, Some(inputs)) => {
            let mut done = false;
            while !done && !reader.waits_for_sweep() {
                done = reader
                    .read_slice(&rc, label, &mut |_| true, None)
                    .expect("slice");
            }
            read_sweeping(&mut reader, (&rc, label), &mut |_| true, (inputs, &mut ()))
                .expect("read")
        }
        (_, inputs) => {
            reader
                .read_kernels(&rc, label, &mut |_| true, None)
                .expect("read");
            let at = (&rc, label);
            inputs.and_then(|i| {
                sweep_beside(&mut reader, at, &mut |_| true, (i, &mut ())).expect("sweep")
            })
        }
    };
    let summary = swept.map(|s| to_bytes(&s).expect("summary as bytes"));
    let (shape, blocks) = reader.into_part().into_bytes().expect("part as bytes");
    let part = KernelPart::from_bytes(&shape, blocks).expect("part read back");
    let scan = host.finish(&conn, &mut |_| true, Some(part)).expect("join");
    let rows = FileRows::over(&conn, &scan);
    assert_eq!(
        rows.kernels().count() as u64,
        kernels_in(&conn),
        "{}: the joined scan's kernels ({when:?}, {reader_bytes} B kept)",
        path.display()
    );
    let swept = summary.is_some();
    let before = trace::rows_handed_out();
    let verdict = match (folded, summary) {
        (Some(folded), Some(bytes)) => {
            let summary: KernelSummary = from_bytes(&bytes).expect("summary read back");
            detect_joined(&rows, folded, summary, cfg)
        }
        _ => detect_rows(&rows, cfg),
    };
    Beside {
        verdict: json(verdict),
        swept,
        launches_folded,
        rows_after_join: trace::rows_handed_out() - before,
    }
}

/// The kernels plain SQL counts (none without the table).
fn kernels_in(conn: &rusqlite::Connection) -> u64 {
    conn.query_row(
        &format!("SELECT count(*) FROM {}", trace::KERNEL_TABLE),
        [],
        |r| r.get::<_, i64>(0),
    )
    .map_or(0, |n| n as u64)
}

const WHEN: [InputsCome; 3] = [InputsCome::Before, InputsCome::Between, InputsCome::After];

#[test]
fn the_pages_verdict_on_two_workers_equals_the_verdict_of_its_passes() {
    let (_dirs, generated) = scenarios();
    let inputs: Vec<PathBuf> = common::sweep_exports()
        .into_iter()
        .chain(generated.iter().cloned())
        .collect();
    let mut swept = Vec::new();
    for path in &inputs {
        // The reader sorts the copies and memsets it merges in.
        let expect = foldable_with(path, false);
        for (cfg, when) in configs().into_iter().zip(WHEN.iter().cycle()) {
            let what = format!(
                "{}: {:?} {:?} {when:?}",
                path.display(),
                cfg.profile,
                cfg.window
            );
            let (got, through) = beside(path, &cfg, 1 << 30, *when);
            assert_same(&got, &passes(path, &cfg), &what);
            // A file without GPU work has nothing to sweep: its verdict says so, swept or not.
            if got.is_ok() {
                assert_eq!(through, expect, "{what}: swept beside");
            }
        }
        swept.push(expect);
    }
    let single_rank = &swept[swept.len() - 3..];
    assert_eq!(
        single_rank, [true; 3],
        "the single-rank scenarios sweep beside"
    );
    // A reader that could not keep every kernel sweeps as it reads, or leaves the sweep to the
    // analysis worker; waiting for the inputs once the next slice would not be kept, it sweeps
    // (keeping a part, or none).
    let path = &generated[4];
    let cfg = DetectConfig::default();
    let kept = [
        (1 << 16, InputsCome::Before, true),
        (1 << 16, InputsCome::Between, false),
        (1 << 16, InputsCome::After, false),
        (1 << 16, InputsCome::WhenWaited, true),
        (0, InputsCome::WhenWaited, true),
        (0, InputsCome::Between, false),
    ];
    for (bytes, when, sweeps) in kept {
        let (got, through) = beside(path, &cfg, bytes, when);
        let what = format!("{}: {when:?}, {bytes} B kept", path.display());
        assert_eq!(through, sweeps, "{what}");
        assert_same(&got, &passes(path, &cfg), &what);
    }
}

/// The ranges the kernel sweep's inputs of `path` hold under `cfg`, folded without a cap.
fn sweep_ranges(path: &Path, cfg: &DetectConfig) -> usize {
    let conn = trace::open_path(path).expect("open");
    let mut fold = FactsFold::new(cfg, usize::MAX, None);
    let budget = RowBudget::new(0);
    let opts = (LoadOptions::page(), &budget);
    FileScan::host_side_folding(&conn, "s", opts, &mut |_| true, &mut fold).expect("host side");
    fold.sweep_inputs().expect("inputs").ranges()
}

#[test]
fn a_fold_holding_more_ranges_than_its_cap_leaves_the_verdict_to_the_passes() {
    let (_dir, path, _) = common::generated("host-bound", 120, 40);
    let cfg = DetectConfig::default();
    let ranges = sweep_ranges(&path, &cfg);
    // Over `COUNT_EVERY` (4,096): the fold counts while it reads, not only at the end.
    assert!(ranges > 3 * 4096, "{ranges} ranges");
    let expect = passes(&path, &cfg);
    for (most, sweeps) in [(ranges, true), (ranges - 1, false), (ranges / 3, false)] {
        let open = beside_within(&path, &cfg, (0, most), InputsCome::WhenWaited);
        assert_eq!(open.swept, sweeps, "{ranges} ranges, at most {most}");
        assert_same(
            &open.verdict,
            &expect,
            &format!("at most {most} of {ranges} ranges"),
        );
    }
}

#[test]
fn an_export_out_of_start_order_is_swept_by_the_passes() {
    let (_dir, path, _) = common::generated("tp2-phases", 1, 3);
    let tmp = tempfile::tempdir().expect("tempdir");
    for order in common::ROW_ORDERS {
        let copy = common::reordered(&path, tmp.path(), order);
        let cfg = DetectConfig::default();
        for when in WHEN {
            let (got, through) = beside(&copy, &cfg, 1 << 30, when);
            assert!(
                !through,
                "{order} order, {when:?}: swept rows out of start order"
            );
            assert_same(&got, &passes(&copy, &cfg), order);
        }
        // The calls kept in several runs are left to the pass after the join.
        let at = (InputsCome::Before, LaunchesSwept::FromKept);
        let open = beside_sweeping(&copy, &cfg, (1 << 30, SWEEP_RANGES_MOST), at);
        assert_same(&open.verdict, &passes(&copy, &cfg), order);
    }
}

#[test]
fn the_readers_slices_count_the_kernels_read_on_from_the_slices_before() {
    let (_dir, path, _) = common::generated("host-bound", 2, 3);
    let conn = trace::open_path(&path).expect("open");
    let kernels = kernels_in(&conn);
    let mut reader = ReaderScan::begin(&conn, "s", (LoadOptions::page(), 0), &mut |_| true, true)
        .expect("reader")
        .with_slice_rows(SLICE);
    let (mut slices, mut said) = (0, Vec::new());
    let mut heard = |p: trace::Progress| {
        if p.step == "loading kernels" {
            said.push((p.done, p.total));
        }
        true
    };
    while !reader
        .read_slice(&conn, "s", &mut heard, None)
        .expect("slice")
    {
        slices += 1;
    }
    assert!(slices > 3, "{kernels} kernels in {slices} slices");
    let (done, total) = *said.last().expect("progress");
    assert_eq!(
        (done, total),
        (kernels, kernels),
        "the last slice's progress"
    );
    assert!(
        said.windows(2).all(|w| w[0].0 <= w[1].0),
        "never counts back"
    );
}

/// The analysis worker sweeps the launch calls as its host side reads them, over the window
/// the GPU-work tables' first and last rows give (`trace::WorkEnds`, or the user's); the join
/// keeps that sweep where the reader's sweep found the same start, and the verdict then reads
/// no row again.
#[test]
fn the_launch_calls_swept_as_the_host_side_reads_them_spare_the_verdict_a_pass() {
    assert_launches_spare_a_pass((InputsCome::Before, LaunchesSwept::AsRead));
}

/// The page's analysis worker keeps its rows, so it sweeps the launch calls it kept once its
/// host side is read, while the reader worker reads on (`HostScan::fold_kept_calls`), not as it
/// reads them: the verdict is the passes', and where the reader's sweep came through it reads
/// no row after the join.
#[test]
fn the_launch_calls_kept_are_swept_before_the_join_and_spare_the_verdict_a_pass() {
    assert_launches_spare_a_pass((InputsCome::Between, LaunchesSwept::FromKept));
}

/// Every scenario under every configuration opened as `at` says gives the passes' verdict, and
/// reads no row after the join where the reader's sweep came through.
fn assert_launches_spare_a_pass(at: (InputsCome, LaunchesSwept)) {
    let (_dirs, generated) = scenarios();
    let mut joined = 0;
    for path in &generated {
        for cfg in configs() {
            let what = format!(
                "{}: {:?} {:?} {at:?}",
                path.display(),
                cfg.profile,
                cfg.window
            );
            let open = beside_sweeping(path, &cfg, (1 << 30, SWEEP_RANGES_MOST), at);
            assert_same(&open.verdict, &passes(path, &cfg), &what);
            if !open.swept {
                continue;
            }
            assert!(open.launches_folded, "{what}: launch calls not swept");
            assert_eq!(open.rows_after_join, 0, "{what}: rows read after the join");
            joined += 1;
        }
    }
    // The three single-rank scenarios under every configuration, at least.
    assert!(joined >= 12, "{joined} verdicts joined");
}

/// Where a GPU-work table's first row is not its earliest (a copy moved before every other GPU
/// work, last in its table), the launch sweep's window began too late: the join reads the
/// launch calls again, and the verdict is the passes'. The kernels alone (`trtllm-skill`) still
/// begin at their first row.
#[test]
fn a_launch_sweep_over_a_window_the_gpu_work_did_not_have_is_read_again() {
    let (_tmp, copy) = crate::scan_fold::altered_copy_bound("early-copy.sqlite", |conn| {
        let sql = "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY \
             SET start = (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY) - 2000, \
                 \"end\" = (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY) - 1000 \
             WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)";
        conn.execute(sql, []).expect("move a copy");
    });
    for (cfg, reads_again) in configs().into_iter().zip([true, false, true, false]) {
        let what = format!("{:?} {:?}", cfg.profile, cfg.window);
        let open = beside_within(
            &copy,
            &cfg,
            (1 << 30, SWEEP_RANGES_MOST),
            InputsCome::Before,
        );
        assert!(open.swept && open.launches_folded, "{what}");
        assert_eq!(open.rows_after_join > 0, reads_again, "{what}: read again");
        assert_same(&open.verdict, &passes(&copy, &cfg), &what);
    }
}

/// Above about 2 GB the page's reader keeps no kernel: it sweeps each as it reads it, so it reads
/// the columns a pass reads (the device, the stream, the name), not only the scan's. Reading
/// the scan's alone, `mfu_2gpu_before`'s two GPUs swept as one: GPU idle 4.4 % against 9.8 %.
#[test]
fn a_reader_keeping_no_kernel_sweeps_them_as_a_pass_reads_them() {
    for path in common::sweep_exports() {
        let cfg = DetectConfig::default();
        let (got, through) = beside(&path, &cfg, 0, InputsCome::WhenWaited);
        let what = path.display().to_string();
        assert_same(&got, &passes(&path, &cfg), &what);
        if got.is_ok() {
            assert_eq!(through, foldable_with(&path, false), "{what}: swept beside");
        }
    }
}

/// A reader that keeps no kernel folds the timeline's GPU lanes and the gap histogram beside
/// its sweep, taking every row the passes over the joined scan hand out, in their order: the
/// same lanes, bins, row blocks and names (the copies' and memsets' too, which each worker
/// names in its own catalog) and the same histogram.
#[test]
fn the_views_folded_beside_the_readers_sweep_equal_their_passes() {
    let (_dirs, generated) = scenarios();
    let inputs: Vec<PathBuf> = common::sweep_exports()
        .into_iter()
        .chain(generated.iter().cloned())
        .collect();
    let mut rode = 0;
    for path in &inputs {
        let what = path.display().to_string();
        let (label, opts) = ("s", LoadOptions::page());
        let conn = trace::open_path(path).expect("open");
        let cfg = DetectConfig::default();
        let mut fold = FactsFold::new(&cfg, usize::MAX, Some(trace::WorkEnds::read(&conn)));
        let budget = RowBudget::new(1 << 30);
        let Ok(host) =
            FileScan::host_side_folding(&conn, label, (opts, &budget), &mut |_| true, &mut fold)
        else {
            continue;
        };
        let Some(inputs) = fold.sweep_inputs() else {
            continue;
        };
        let rc = trace::open_path(path).expect("open");
        let mut reader = ReaderScan::begin(&rc, label, (opts, 0), &mut |_| true, true)
            .expect("reader")
            .with_slice_rows(SLICE);
        let mut riders = Riders::new(opts.event_details);
        let swept = read_sweeping(
            &mut reader,
            (&rc, label),
            &mut |_| true,
            (inputs, &mut riders),
        )
        .expect("read");
        let Some(swept) = swept else {
            continue;
        };
        let part = reader.into_part();
        let scan = host.finish(&conn, &mut |_| true, Some(part)).expect("join");
        let rows = FileRows::over(&conn, &scan);
        // As the summary and the views cross to the analysis worker.
        let crossed = to_bytes(&riders.finish(swept)).expect("as bytes");
        let crossed: ReaderSweep = from_bytes(&crossed).expect("read back");
        let passed = Timeline::of_rows(&rows, label).expect("timeline");
        let bytes = |t: &Timeline| postcard::to_allocvec(t).expect("timeline as bytes");
        let timeline = crossed.timeline.as_ref().expect(&what);
        assert!(
            bytes(timeline) == bytes(&passed),
            "{what}: the timeline's lanes"
        );
        let gaps = crossed.gaps().expect(&what);
        assert_eq!(gaps, idle_gap_histogram(&rows, None), "{what}: the gaps");
        rode += 1;
    }
    assert!(
        rode >= 8,
        "{rode} exports folded the views beside the sweep"
    );
}
