//! `trace::Lane` and `FileRows::reading_ranges`: the kernels and calls a scan did not keep,
//! read by other readers of the file in `rowid` ranges and handed over packed (the page's lane
//! workers), come as the pass's own reads give them, field by field and in start order; an
//! analysis over them equals the one over the pass's own reads; a pass dropped early leaves the
//! next one its own answers; a reader that fails ends the rows with its error; a catalog that
//! numbers threads otherwise is not asked.

use crate::common;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::Path;

use nsys_lens::analyze::{AnalyzeConfig, TraceBreakdown, analyze_rows};
use nsys_lens::error::{Error, Result};
use nsys_lens::model::rows::EventRows;
use nsys_lens::trace::{self, FileRows, FileScan, Lane, LoadOptions, RangeAsk, RangeReader};

/// Lanes in this process: each ask answered on `take` by a [`Lane`] over a connection of its
/// own, in the order asked (whichever pass asked it), as the page's lane workers answer.
struct InProcess {
    lane: Lane,
    asked: RefCell<VecDeque<RangeAsk>>,
    depth: usize,
    /// Asks answered, and their `rowid`s.
    answered: Cell<usize>,
    rowids: Cell<i64>,
    /// The ask, counted from 1, whose answer fails.
    fail_at: Option<usize>,
    /// `ready` says yes once in this many calls (a lane slower than the pass: it reads the next
    /// ranges itself meanwhile).
    ready_every: usize,
    readies: Cell<usize>,
    numbered: Option<(usize, usize)>,
}

impl InProcess {
    fn over(path: &Path, depth: usize) -> InProcess {
        let conn = trace::open_path(path).expect("the lane's connection");
        let lane = Lane::open(conn, "lane").expect("the lane's catalog");
        let numbered = Some(lane.numbered());
        InProcess {
            lane,
            asked: RefCell::default(),
            depth,
            answered: Cell::new(0),
            rowids: Cell::new(0),
            fail_at: None,
            ready_every: 1,
            readies: Cell::new(0),
            numbered,
        }
    }
}

impl RangeReader for InProcess {
    fn depth(&self) -> usize {
        self.depth
    }

    fn numbered(&self) -> Option<(usize, usize)> {
        self.numbered
    }

    fn ask(&self, ask: &RangeAsk) -> Result<()> {
        self.asked.borrow_mut().push_back(ask.clone());
        Ok(())
    }

    fn ready(&self) -> bool {
        self.readies.set(self.readies.get() + 1);
        self.readies.get().is_multiple_of(self.ready_every)
    }

    fn take(&self) -> Result<Vec<u8>> {
        let ask = self.asked.borrow_mut().pop_front().ok_or(Error::Internal {
            detail: "a take with nothing asked".into(),
        })?;
        self.answered.set(self.answered.get() + 1);
        self.rowids.set(self.rowids.get() + ask.high - ask.low + 1);
        if self.fail_at == Some(self.answered.get()) {
            return Err(Error::Internal {
                detail: "the lane stopped".into(),
            });
        }
        self.lane.answer(&ask)
    }
}

/// A scan keeping no row: every pass reads the file.
fn scan(conn: &rusqlite::Connection) -> FileScan {
    FileScan::new(conn, "export", LoadOptions::all(), &mut |_| true).expect("scan")
}

/// The tables lanes read that are in one sorted run (lanes read no merge of runs).
fn in_one_run(scan: &FileScan) -> Vec<&'static str> {
    let lane_tables = [trace::KERNEL_TABLE, trace::RUNTIME_TABLE];
    let runs = scan.run_counts();
    let one = |t: &&str| runs.iter().any(|(name, n)| name == t && *n == 1);
    lane_tables.into_iter().filter(one).collect()
}

#[test]
fn kernels_and_calls_read_by_lanes_equal_the_passes_own_reads() {
    for (scenario, scale) in [("host-bound", 8), ("tp2-straggler", 2), ("cuda-graphs", 2)] {
        let (_dir, path, _) = common::generated(scenario, scale, 5);
        let conn = trace::open_path(&path).expect("open");
        let scan = scan(&conn);
        let own = FileRows::over(&conn, &scan);
        for (depth, ready_every) in [(1, 1), (3, 1), (1, 3)] {
            let mut lanes = InProcess::over(&path, depth);
            lanes.ready_every = ready_every;
            let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
            let kernels: Vec<_> = own.kernels().collect();
            assert!(
                kernels.len() > 1000,
                "{scenario}: {} kernels",
                kernels.len()
            );
            assert_eq!(ranged.kernels().collect::<Vec<_>>(), kernels, "{scenario}");
            let calls: Vec<_> = own.calls().collect();
            assert_eq!(ranged.calls().collect::<Vec<_>>(), calls, "{scenario}");
            ranged.check().expect("no read error");
            // Every rowid of both tables was asked of the lanes, none twice; a lane never ready
            // left ranges to the pass.
            let count = |table: &str| -> i64 {
                let sql = format!("SELECT max(rowid) - min(rowid) + 1 FROM {table}");
                conn.query_row(&sql, [], |r| r.get(0)).expect("rowids")
            };
            let rowids: i64 = in_one_run(&scan).into_iter().map(count).sum();
            let what = format!("{scenario}, depth {depth}, ready 1 in {ready_every}");
            match ready_every {
                1 => assert_eq!(lanes.rowids.get(), rowids, "{what}: rowids asked"),
                _ if kernels.len() > trace::RANGE_ROWIDS as usize => {
                    assert!(lanes.rowids.get() < rowids, "{what}: rowids asked")
                }
                _ => assert!(lanes.rowids.get() <= rowids, "{what}: rowids asked"),
            }
            // A range per `RANGE_ROWIDS` rowids of each table.
            let ranges = kernels.len().div_ceil(trace::RANGE_ROWIDS as usize);
            if ready_every == 1 {
                assert!(
                    lanes.answered.get() >= ranges,
                    "{what}: {} asks",
                    lanes.answered.get()
                );
            }
        }
        // Two passes reading at once: each gets the ranges it asked.
        let lanes = InProcess::over(&path, 2);
        let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
        let pairs = |r: &FileRows<'_>| -> Vec<_> {
            r.kernels()
                .zip(r.calls())
                .map(|(k, c)| (k.row, c.row))
                .collect()
        };
        assert_eq!(
            pairs(&ranged),
            pairs(&own),
            "{scenario}: kernels and calls at once"
        );
        let lanes = InProcess::over(&path, 2);
        let cfg = AnalyzeConfig::default();
        let json = |b: &TraceBreakdown| serde_json::to_string(b).unwrap_or_default();
        let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
        assert_eq!(
            json(&analyze_rows(&ranged, &cfg).expect("over lanes")),
            json(&analyze_rows(&own, &cfg).expect("own reads")),
            "{scenario}: Root cause"
        );
        assert!(
            lanes.answered.get() > 0,
            "{scenario}: the analysis asked the lanes"
        );
    }
}

/// A pass that stops early (a fold that found what it wanted) takes the answers still owed, so
/// the next pass reads its own ranges, not the first one's.
#[test]
fn a_pass_dropped_early_leaves_the_next_its_own_answers() {
    let (_dir, path, _) = common::generated("host-bound", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let scan = scan(&conn);
    let lanes = InProcess::over(&path, 3);
    let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
    let first: Vec<_> = ranged.kernels().take(10).collect();
    assert_eq!(
        lanes.asked.borrow().len(),
        0,
        "the dropped pass took what it was owed"
    );
    let all: Vec<_> = ranged.kernels().collect();
    assert_eq!(all.get(..10), Some(first.as_slice()));
    assert_eq!(
        all,
        FileRows::over(&conn, &scan).kernels().collect::<Vec<_>>()
    );
}

/// A lane that fails mid-table ends the rows there, and `check` returns its error once.
#[test]
fn a_lane_that_fails_ends_the_rows_with_its_error() {
    let (_dir, path, _) = common::generated("host-bound", 8, 5);
    let conn = trace::open_path(&path).expect("open");
    let scan = scan(&conn);
    let mut lanes = InProcess::over(&path, 2);
    lanes.fail_at = Some(2);
    let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
    let read = ranged.kernels().count();
    let whole = FileRows::over(&conn, &scan).kernels().count();
    assert!(read > 0 && read < whole, "{read} of {whole} kernels");
    let err = ranged.check().expect_err("the lane's error");
    assert!(err.to_string().contains("the lane stopped"), "{err}");
    assert!(ranged.check().is_ok(), "the error is returned once");
}

/// Lanes whose catalog numbers processes or threads otherwise than the scan, or that failed
/// before (`numbered` is `None`), are not asked: the pass reads the file itself.
#[test]
fn lanes_that_number_otherwise_are_not_asked() {
    let (_dir, path, _) = common::generated("tp2-straggler", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let scan = scan(&conn);
    let own: Vec<_> = FileRows::over(&conn, &scan).calls().collect();
    for numbered in [None, Some((1, 1))] {
        let mut lanes = InProcess::over(&path, 2);
        lanes.numbered = numbered;
        let ranged = FileRows::over(&conn, &scan).reading_ranges(&lanes);
        assert_eq!(ranged.calls().collect::<Vec<_>>(), own, "{numbered:?}");
        assert_eq!(lanes.answered.get(), 0, "{numbered:?}: not asked");
    }
}
