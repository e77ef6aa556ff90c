//! The what-if replay against runs it did not see: a scenario written with one cost scaled by
//! the generator (every other duration the unscaled run's) is the measured answer the replay of
//! the unscaled run must predict; the replay of unchanged costs must give the measured step
//! time, on generated runs and on every public export; the critical path's parts sum to the
//! steps' time to the nanosecond.

use crate::common;

use std::path::Path;

use nsys_lens::analyze::AnalyzeConfig;
use nsys_lens::costs::Costs;
use nsys_lens::names::steps::{StepSource, StepStyle};
use nsys_lens::trace::{self, FileRows, FileScan, LoadOptions};
use nsys_lens::whatif::{WhatIf, whatif_rows};

/// Predictions within this share of the scaled run's measured step time.
const PREDICTION_TOLERANCE_PCT: f64 = 5.0;
/// The unchanged replay within this share of the measured step time (generated runs).
const REPLAY_TOLERANCE_PCT: f64 = 2.0;
/// The unchanged replay within this share of the measured step time (real exports).
const REAL_REPLAY_TOLERANCE_PCT: f64 = 5.0;

fn whatif(
    path: &Path,
    marker: Option<&str>,
    changes: &[Costs],
) -> nsys_lens::error::Result<WhatIf> {
    let conn = trace::open_path(path)?;
    let scan = FileScan::of_file(&conn, path, LoadOptions::all(), 1 << 30)?;
    let rows = FileRows::over(&conn, &scan);
    let cfg = AnalyzeConfig {
        step_marker: marker
            .map(|m| StepSource::Builtin(StepStyle::from_key(m).expect("built-in marker"))),
        ..AnalyzeConfig::default()
    };
    whatif_rows(&rows, &cfg, changes)
}

/// `changes`, or the standard set for the trace at `path` when none (`whatif::asked`).
fn asked(path: &Path, changes: &[Costs]) -> Vec<Costs> {
    let conn = trace::open_path(path).expect("open");
    let scan = FileScan::of_file(&conn, path, LoadOptions::all(), 1 << 30).expect("scan");
    let rows = FileRows::over(&conn, &scan);
    let known = nsys_lens::whatif::Computed(&rows);
    nsys_lens::whatif::asked(&known, &AnalyzeConfig::default(), changes).expect("asked")
}

fn write(dir: &Path, scenario: &str, costs: &Costs) -> std::path::PathBuf {
    let path = dir.join(format!(
        "{scenario}-{}.sqlite",
        costs.label().replace(' ', "")
    ));
    let opts = nsys_lens::synth::GenOptions { scale: 1, seed: 42 };
    nsys_lens::synth::generate_with_costs(
        scenario,
        &path,
        &opts,
        nsys_lens::synth::MarkerStyle::default(),
        costs,
    )
    .unwrap_or_else(|e| panic!("generate {scenario} {}: {e}", costs.label()));
    path
}

fn costs(f: impl Fn(&mut Costs)) -> Costs {
    let mut c = Costs::default();
    f(&mut c);
    c
}

/// Writes `scenario` plain and under each change; the prediction of each from the plain run
/// must match the changed run's measured wall time per step.
fn predicts(scenario: &str, marker: Option<&str>, changes: &[Costs]) {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), scenario, &Costs::default());
    let w = whatif(&plain, marker, changes).unwrap();
    let measured = w.measured.wall_time_per_step_us.expect("steady steps");
    let replayed = w.replayed.wall_time_per_step_us.expect("replayed steps");
    let replay_err = 100.0 * (replayed - measured) / measured;
    println!(
        "{scenario}: measured {measured:.1} µs, replayed {replayed:.1} µs ({replay_err:+.3} %)"
    );
    assert!(
        replay_err.abs() <= REPLAY_TOLERANCE_PCT,
        "{scenario}: replay error {replay_err} %"
    );
    assert_eq!(
        w.critical_path.total_ns, w.replayed.steps_ns,
        "{scenario}: path ≠ steps"
    );
    for (change, p) in changes.iter().zip(&w.predicted) {
        let scaled = write(dir.path(), scenario, change);
        let m = whatif(&scaled, marker, &[]).unwrap();
        assert_eq!(m.steps, w.steps, "{scenario} {}: steps", change.label());
        let truth = m
            .measured
            .wall_time_per_step_us
            .expect("scaled run's steps");
        let predicted = p.wall_time_per_step_us.expect("predicted steps");
        let err = 100.0 * (predicted - truth) / truth;
        println!(
            "  {:<28} predicted {predicted:9.1} µs, measured {truth:9.1} µs, error {err:+.2} %",
            change.label()
        );
        assert!(
            err.abs() <= PREDICTION_TOLERANCE_PCT,
            "{scenario} {}: predicted {predicted}, measured {truth}",
            change.label()
        );
    }
}

#[test]
fn a_host_bound_loop_gains_from_host_time_not_from_launches() {
    let changes = [
        costs(|c| c.host = 0.5),
        costs(|c| c.launch = 0.5),
        costs(|c| c.kernels = 0.5),
        costs(|c| c.ops = vec![("_prepare_tp_inputs".into(), 0.5)]),
    ];
    predicts("host-bound", None, &changes);
    // What the thresholds cannot say: halving host time buys far more than halving launches.
    let dir = tempfile::tempdir().unwrap();
    let w = whatif(
        &write(dir.path(), "host-bound", &Costs::default()),
        None,
        &changes,
    )
    .unwrap();
    let gain = |i: usize| w.predicted[i].gain_pct.unwrap();
    assert!(
        gain(0) < -30.0 && gain(1) > -1.0,
        "host {} launch {}",
        gain(0),
        gain(1)
    );
    assert_eq!(w.bound.path, nsys_lens::detect::bound::BoundKind::Host);
}

#[test]
fn a_gpu_bound_loop_gains_from_kernels_only() {
    predicts(
        "gpu-bound",
        None,
        &[costs(|c| c.kernels = 0.5), costs(|c| c.host = 0.0)],
    );
}

#[test]
fn context_and_generation_steps_are_predicted() {
    predicts(
        "context-only",
        None,
        &[costs(|c| c.kernels = 0.5), costs(|c| c.host = 0.5)],
    );
}

#[test]
fn a_tp2_run_with_a_straggler_is_predicted() {
    // A larger host cut packs the steps' all-reduces closer than Root cause's 1 ms iteration
    // gap, and the scaled run then has no steady steps to measure.
    predicts(
        "tp2-straggler",
        Some("tensorrt-llm"),
        &[
            costs(|c| c.host = 0.8),
            costs(|c| c.launch = 0.5),
            costs(|c| c.ops = vec![("_prepare_tp_inputs".into(), 0.5)]),
        ],
    );
}

#[test]
fn cuda_graphs_at_graph_and_node_level_are_predicted() {
    for scenario in ["cuda-graphs", "serving-graphs", "serving-graphs-node"] {
        predicts(
            scenario,
            None,
            &[
                costs(|c| c.kernels = 0.5),
                costs(|c| c.launch = 0.5),
                costs(|c| c.host = 0.5),
            ],
        );
    }
}

/// A loop whose GPU mostly copies: halving its copies (as the generator writes the run with
/// them halved) buys most of what halving anything buys, its kernels almost nothing; the
/// standard set predicts halving them there, and not on a loop that copies nothing.
#[test]
fn a_copy_bound_loop_gains_from_copies_not_kernels() {
    let changes = [
        costs(|c| c.copies = 0.5),
        costs(|c| c.kernels = 0.5),
        costs(|c| c.host = 0.0),
    ];
    predicts("copy-bound", None, &changes);
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "copy-bound", &Costs::default());
    let w = whatif(&plain, None, &changes).unwrap();
    let gain = |i: usize| w.predicted[i].gain_pct.unwrap();
    assert!(
        gain(0) < -20.0 && gain(1) > -2.0,
        "copies {} kernels {}",
        gain(0),
        gain(1)
    );
    let halved = costs(|c| c.copies = 0.5);
    let standard = whatif(&plain, None, &[]).unwrap();
    let labels: Vec<&str> = standard
        .predicted
        .iter()
        .map(|p| p.change.as_str())
        .collect();
    assert_eq!(labels.last(), Some(&halved.label().as_str()), "{labels:?}");
    assert_eq!(
        standard.predicted.last().map(|p| p.gain_pct),
        Some(Some(gain(0)))
    );
    let host_bound = write(dir.path(), "host-bound", &Costs::default());
    let standard = whatif(&host_bound, None, &[]).unwrap();
    assert_eq!(standard.predicted.len(), 4, "no copies in host-bound");
}

#[test]
fn one_kernel_class_is_predicted() {
    predicts(
        "kernel-classes",
        None,
        &[costs(|c| c.kernel_classes = vec![("gemm".into(), 0.5)])],
    );
}

/// Copies from pageable memory: each call stages its copy and ends as it ends, so halving the
/// copies shortens the calls too. Predicted against the generator's run with its pageable
/// copies halved; on the real `SC23-OpenMP`, whose 200 copies are all pageable and fill most of
/// its window, the gain is half the copies' time over the window (plain SQL), within a point.
/// Either way a note says pinned memory would also free the host; pinned copies get none.
#[test]
fn calls_staging_pageable_copies_end_as_their_copies_end() {
    let note = |w: &WhatIf| {
        w.notes
            .iter()
            .find(|n| n.contains("pageable host side"))
            .cloned()
    };
    let halved = costs(|c| c.copies = 0.5);
    predicts(
        "copy-bound-pageable",
        None,
        &[halved.clone(), costs(|c| c.host = 0.5)],
    );
    // Its host waits out the copies: the thresholds say YES, the path says transfers.
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "copy-bound-pageable", &Costs::default());
    let w = whatif(&plain, None, &[]).expect("whatif");
    use nsys_lens::detect::bound::BoundKind;
    assert_eq!(
        (w.bound.path, w.bound.host_verdict),
        (BoundKind::Transfer, "YES")
    );
    let said = w.bound.note.as_deref().unwrap_or_default();
    assert!(
        said.starts_with("the thresholds call the host a bottleneck, yet the steady steps' critical path is transfer-bound"),
        "{said}"
    );
    let pageable = common::public_trace("RajaATAli_SC23-OpenMP__report3.sqlite");
    let conn = rusqlite::Connection::open(&pageable).expect("open");
    let (some, all, copies_ns): (i64, i64, i64) = conn
        .query_row(
            "SELECT sum(srcKind = 0 OR dstKind = 0), count(*), sum(end - start) \
             FROM CUPTI_ACTIVITY_KIND_MEMCPY",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("count");
    let w = whatif(&pageable, None, &[]).expect("whatif");
    let last = w.predicted.last().expect("predictions");
    assert_eq!(last.change, halved.label());
    let want = -100.0 * (copies_ns as f64 / 2.0) / (w.measured.window_us * 1e3);
    let gain = last.gain_pct.expect("a gain");
    println!("SC23-OpenMP copies ×0.5: {gain:.2} %, half the copies over the window {want:.2} %");
    assert!((gain - want).abs() < 1.0, "{gain} against {want}");
    let said = note(&w).expect("the pageable copies' note");
    assert!(
        said.starts_with(&format!("{some} of the {all} copies")),
        "{said}"
    );
    // `gpu4`'s pinned host-to-device copies run one after another and hold its window: halving
    // them shortens the window by half their union (plain SQL), within a point; no note.
    let pinned = common::public_trace("Lianhang666_gpu4__report2.sqlite");
    let w = whatif(&pinned, None, &[]).expect("whatif");
    let last = w.predicted.last().expect("predictions");
    assert_eq!(last.change, halved.label());
    let conn = rusqlite::Connection::open(&pinned).expect("open");
    let mut stmt = conn
        .prepare(
            "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 ORDER BY start",
        )
        .expect("prepare");
    let spans: Vec<(i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let mut union = 0;
    let mut open: Option<(i64, i64)> = None;
    for (s, e) in spans {
        open = match open {
            Some((a, b)) if s <= b => Some((a, b.max(e))),
            Some((a, b)) => {
                union += b - a;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    union += open.map_or(0, |(a, b)| b - a);
    let want = -100.0 * (union as f64 / 2.0) / (w.measured.window_us * 1e3);
    let gain = last.gain_pct.expect("a gain");
    println!("gpu4 copies ×0.5: {gain:.2} %, half the HtoD copies over the window {want:.2} %");
    assert!((gain - want).abs() < 1.0, "{gain} against {want}");
    assert_eq!(note(&w), None);
}

/// Every public export with kernels replays to its measured step time (or window), and its
/// critical path sums to its steps' time to the ns.
#[test]
fn every_public_export_replays_to_its_measured_step_time() {
    for path in common::public_exports_with_kernels() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let w = match whatif(&path, None, &[costs(|c| c.host = 0.5)]) {
            Ok(w) => w,
            Err(e) => panic!("{name}: {e}"),
        };
        println!(
            "{name}: {} steps, measured {:?} µs/step, window {:.1} µs, replay error {:+.4} %",
            w.steps, w.measured.wall_time_per_step_us, w.measured.window_us, w.replay_error_pct
        );
        assert!(
            w.replay_error_pct.abs() <= REAL_REPLAY_TOLERANCE_PCT,
            "{name}: replay error {} %",
            w.replay_error_pct
        );
        assert_eq!(w.critical_path.total_ns, w.replayed.steps_ns, "{name}");
        assert_eq!(w.replayed.steps_ns, w.measured.steps_ns, "{name}");
        let parts: i64 = w
            .critical_path
            .parts
            .iter()
            .map(|p| (p.per_step_us * 1000.0 * w.steps.max(1) as f64).round() as i64)
            .sum();
        assert!(
            (parts - w.critical_path.total_ns).abs() <= 8,
            "{name}: parts {parts}"
        );
    }
}

/// The replays of several changes read the rows once, side by side (natively on threads of
/// their own): each change predicts what replaying it alone predicts, and the unchanged replay
/// is the same, whatever is replayed beside them.
#[test]
fn a_change_replayed_beside_others_predicts_what_it_predicts_alone() {
    fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
        serde_json::to_value(v).expect("json")
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in ["host-bound", "tp2-straggler"] {
        let path = write(dir.path(), scenario, &Costs::default());
        let changes = [
            costs(|c| c.host = 0.5),
            costs(|c| c.launch = 0.5),
            costs(|c| c.kernels = 0.5),
            costs(|c| c.copies = 0.5),
            costs(|c| c.host = 0.0),
            costs(|c| c.kernel_classes = vec![("gemm".into(), 0.5)]),
        ];
        let together = whatif(&path, None, &changes).expect("whatif");
        assert_eq!(together.predicted.len(), changes.len());
        for (i, change) in changes.iter().enumerate() {
            let alone = whatif(&path, None, std::slice::from_ref(change)).expect("whatif");
            let what = format!("{scenario}: {}", change.label());
            assert_eq!(
                json(&together.predicted[i]),
                json(&alone.predicted[0]),
                "{what}"
            );
            assert_eq!(json(&together.replayed), json(&alone.replayed), "{what}");
            assert_eq!(
                json(&together.critical_path),
                json(&alone.critical_path),
                "{what}"
            );
        }
    }
}

/// The page's split: the analysis worker replays the unchanged costs and the first changes, a
/// helper that opened the file anew replays the rest with the analysis worker's steady cycles,
/// its predictions crossing as JSON; joined, the answer is the one replay's, byte for byte.
#[test]
fn changes_replayed_apart_and_joined_give_the_answer_of_one_replay() {
    use nsys_lens::whatif::apart::{self, Elsewhere, Plan};
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in [
        "host-bound",
        "tp2-straggler",
        "cuda-graphs",
        "copy-bound-pageable",
    ] {
        let path = write(dir.path(), scenario, &Costs::default());
        for changes in [
            vec![],
            vec![
                costs(|c| c.kernels = 0.25),
                costs(|c| c.host = 0.75),
                costs(|c| c.launch = 0.0),
            ],
        ] {
            let what = format!("{scenario}, {} changes", changes.len());
            let one = whatif(&path, None, &changes).expect("whatif");
            let (here, away) = apart::shared(&asked(&path, &changes));
            let mut joined = whatif(&path, None, &here).expect("whatif");
            if !away.is_empty() {
                let conn = trace::open_path(&path).expect("open");
                let scan =
                    FileScan::of_file(&conn, &path, LoadOptions::all(), 1 << 30).expect("scan");
                let rows = FileRows::over(&conn, &scan);
                let cycles = nsys_lens::analyze::analyze_rows(&rows, &AnalyzeConfig::default())
                    .expect("analyze")
                    .steady_cycles;
                let sent = Plan {
                    cycles: cycles.to_vec(),
                    changes: away.clone(),
                };
                let plan = Plan::from_bytes(&sent.to_bytes().expect("bytes")).expect("plan");
                assert_eq!(plan, sent, "{what}: the plan crosses as bytes");
                let mut cut = sent.to_bytes().expect("bytes");
                cut.truncate(cut.len() - 1);
                assert!(Plan::from_bytes(&cut).is_err(), "{what}: a plan cut short");
                let sent =
                    serde_json::to_string(&apart::replay_apart(&rows, &plan).expect("apart"))
                        .expect("json");
                let came: Elsewhere = serde_json::from_str(&sent).expect("elsewhere");
                joined = apart::join(joined, &away, came).expect("join");
            }
            assert_eq!(
                serde_json::to_string(&joined).expect("json"),
                serde_json::to_string(&one).expect("json"),
                "{what}"
            );
        }
    }
    // A helper that replayed other changes than asked is refused, not joined.
    let path = write(dir.path(), "host-bound", &Costs::default());
    let (here, away) = apart::shared(&asked(&path, &[]));
    let local = whatif(&path, None, &here).expect("whatif");
    let other = Elsewhere {
        predicted: local.predicted.clone(),
        peak_points: 0,
    };
    assert!(apart::join(local, &away, other).is_err());
}

/// The page's split when the helper reads no file: the analysis worker replays its share and
/// hands each batch of rows, packed, to the helper (`whatif::Feed`), which replays the rest with
/// the analysis worker's names; joined, the answer is the one replay's, byte for byte. A helper
/// that stops taking batches ends the analysis worker's replays with an error, and a damaged or
/// cut stream of batches ends the helper's with one.
#[test]
fn a_helper_fed_the_analysis_workers_rows_gives_the_answer_of_one_replay() {
    use nsys_lens::error::{Error, Result};
    use nsys_lens::model::rows::EventRows;
    use nsys_lens::whatif::apart::{self, Names, Plan};
    use nsys_lens::whatif::{Computed, Feed, whatif_feeding};
    struct Queue(Vec<Vec<u8>>);
    impl Feed for Queue {
        fn send(&mut self, batch: &[u8]) -> Result<()> {
            self.0.push(batch.to_vec());
            Ok(())
        }
    }
    struct Refusing;
    impl Feed for Refusing {
        fn send(&mut self, _: &[u8]) -> Result<()> {
            Err(Error::Usage("the helper stopped".into()))
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in [
        "host-bound",
        "tp2-straggler",
        "cuda-graphs",
        "copy-bound-pageable",
    ] {
        let path = write(dir.path(), scenario, &Costs::default());
        let one = whatif(&path, None, &[]).expect("whatif");
        let (here, away) = apart::shared(&asked(&path, &[]));
        let conn = trace::open_path(&path).expect("open");
        let scan = FileScan::of_file(&conn, &path, LoadOptions::all(), 1 << 30).expect("scan");
        let rows = FileRows::over(&conn, &scan);
        let cfg = AnalyzeConfig::default();
        let mut queue = Queue(Vec::new());
        let mine = whatif_feeding(&rows, &cfg, &here, &Computed(&rows), &mut queue).expect("feed");
        assert!(queue.0.len() > 1, "{scenario}: the rows crossed in batches");
        assert_eq!(
            queue.0.last().map(Vec::len),
            Some(0),
            "{scenario}: an empty batch ends them"
        );
        let cycles = nsys_lens::analyze::analyze_rows(&rows, &cfg)
            .expect("analyze")
            .steady_cycles;
        let plan = Plan {
            cycles: cycles.to_vec(),
            changes: away.clone(),
        };
        // The names cross in pieces of 7.
        let strings = &rows.meta().strings;
        let mut names = Names::default();
        for from in (0..strings.len()).step_by(7) {
            names
                .take_piece(&apart::names_piece(strings, from, 7))
                .expect("a piece of names");
        }
        let ids = 0..strings.len() as u32;
        assert!(
            ids.clone()
                .all(|id| names.strings().get(id) == strings.get(id))
        );
        assert!(Names::default().take_piece(&[9, 0, 0, 0, b'a']).is_err());
        assert!(
            Names::default()
                .take_piece(&[2, 0, 0, 0, 0xff, 0xfe])
                .is_err()
        );
        let mut batches = queue.0.clone().into_iter();
        let mut next = || -> Result<Vec<u8>> { Ok(batches.next().unwrap_or_default()) };
        let fed = apart::replay_fed_apart(&names, &plan, &mut next).expect("fed");
        assert_eq!(
            fed,
            apart::replay_apart(&rows, &plan).expect("apart"),
            "{scenario}"
        );
        let joined = apart::join(mine, &away, fed).expect("join");
        assert_eq!(
            serde_json::to_string(&joined).expect("json"),
            serde_json::to_string(&one).expect("json"),
            "{scenario}"
        );
        assert!(whatif_feeding(&rows, &cfg, &here, &Computed(&rows), &mut Refusing).is_err());
        // A batch cut short, a row of no kind, and a stream that fails before its end.
        let mut cut = queue.0[0].clone();
        cut.truncate(cut.len() - 1);
        for damaged in [cut, vec![9, 1, 2, 3]] {
            let mut once = Some(damaged);
            let mut next = || -> Result<Vec<u8>> { Ok(once.take().unwrap_or_default()) };
            assert!(
                apart::replay_fed_apart(&names, &plan, &mut next).is_err(),
                "{scenario}"
            );
        }
        let mut failing = || -> Result<Vec<u8>> { Err(Error::Usage("no batch came".into())) };
        assert!(apart::replay_fed_apart(&names, &plan, &mut failing).is_err());
    }
}

#[test]
fn a_bad_factor_or_class_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "host-bound", &Costs::default());
    for bad in [
        costs(|c| c.host = -1.0),
        costs(|c| c.kernels = f64::NAN),
        costs(|c| c.copies = 2000.0),
        costs(|c| c.kernel_classes = vec![("nonsense".into(), 0.5)]),
        costs(|c| c.ops = vec![(String::new(), 0.5)]),
    ] {
        let e = whatif(&plain, None, std::slice::from_ref(&bad)).unwrap_err();
        assert!(
            matches!(e, nsys_lens::error::Error::Usage(_)),
            "{}: {e}",
            bad.label()
        );
    }
}

/// A step's critical path, as the timeline highlights it: contiguous segments from the step's
/// start to the next step's, each on a thread or stream of the export, summing to the step.
#[test]
fn a_steps_critical_path_is_contiguous_and_spans_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "host-bound", &Costs::default());
    let conn = trace::open_path(&plain).unwrap();
    let scan = FileScan::of_file(&conn, &plain, LoadOptions::all(), 1 << 30).unwrap();
    let rows = FileRows::over(&conn, &scan);
    let cfg = AnalyzeConfig::default();
    let p = nsys_lens::whatif::step_path(&rows, &cfg, 3).unwrap();
    assert!(!p.segments.is_empty());
    assert_eq!(p.segments[0].start_ns, p.start_ns);
    assert_eq!(p.segments.last().unwrap().end_ns, p.end_ns);
    for w in p.segments.windows(2) {
        assert_eq!(w[0].end_ns, w[1].start_ns, "{:?}", w);
    }
    // The loop is host-bound: most of the step lies on a host thread, in host time.
    let on_host: i64 = p
        .segments
        .iter()
        .filter(|s| matches!(s.place, nsys_lens::whatif::PathPlace::Thread { .. }))
        .map(|s| s.end_ns - s.start_ns)
        .sum();
    assert!(2 * on_host > p.end_ns - p.start_ns, "{on_host}");
    let steps = p.steps;
    assert!(nsys_lens::whatif::step_path(&rows, &cfg, steps).is_err());
}

/// A collective ends when the last device has arrived: on the real two-rank
/// `mfu_2gpu_before`, a step's critical path crosses from one rank to the other through the
/// collectives they share, and it still spans the step exactly.
#[test]
fn a_steps_path_crosses_ranks_through_their_collectives() {
    let path = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let conn = trace::open_path(&path).unwrap();
    let scan = FileScan::of_file(&conn, &path, LoadOptions::all(), 1 << 30).unwrap();
    let rows = FileRows::over(&conn, &scan);
    let cfg = AnalyzeConfig::default();
    let (mut both_devices, mut both_hosts) = (0, 0);
    for step in 0..15 {
        let p = nsys_lens::whatif::step_path(&rows, &cfg, step).unwrap();
        let mut devices = std::collections::BTreeSet::new();
        let mut threads = std::collections::BTreeSet::new();
        for s in &p.segments {
            match &s.place {
                nsys_lens::whatif::PathPlace::Stream { device, .. } => devices.insert(*device),
                nsys_lens::whatif::PathPlace::Thread { tid } => threads.insert(tid.clone()),
            };
        }
        println!("step {step}: devices {devices:?}, threads {threads:?}");
        both_devices += usize::from(devices.len() == 2);
        both_hosts += usize::from(threads.len() == 2);
        let sum: i64 = p.segments.iter().map(|s| s.end_ns - s.start_ns).sum();
        assert_eq!(sum, p.end_ns - p.start_ns, "step {step}");
    }
    // Each rank's kernels wait in the collectives for the other's: many steps' paths run on
    // both devices, and some through the other rank's host.
    assert!(
        both_devices >= 8 && both_hosts >= 1,
        "{both_devices} {both_hosts}"
    );
}

fn path_of(path: &Path) -> WhatIf {
    let conn = trace::open_path(path).unwrap();
    let scan = FileScan::of_file(&conn, path, LoadOptions::all(), 1 << 30).unwrap();
    let rows = FileRows::over(&conn, &scan);
    nsys_lens::whatif::path_rows(&rows, &AnalyzeConfig::default()).unwrap()
}

/// Where a regression lies on the critical path: the parts' changes sum to the change of the
/// wall time per step; the generator's added host work (`broadcast_requests`, longer
/// `_update_requests`) is where the generated regression lies; the real pair's split adds up.
#[test]
fn a_regression_is_split_by_what_the_path_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let base = common::generate_in(dir.path(), "regression-baseline");
    let target = common::generate_in(dir.path(), "regression-target");
    let (b, t) = (path_of(&base), path_of(&target));
    let r = nsys_lens::whatif::compare::regression(&b, &t);
    let measured =
        t.measured.wall_time_per_step_us.unwrap() - b.measured.wall_time_per_step_us.unwrap();
    assert!(
        (r.delta_us - measured).abs() < 0.01,
        "{} vs {measured}",
        r.delta_us
    );
    let parts: f64 = r.parts.iter().map(|p| p.delta_us).sum();
    assert!(
        (parts - r.delta_us).abs() < 0.01,
        "{parts} vs {}",
        r.delta_us
    );
    let host = r
        .parts
        .iter()
        .find(|p| p.part == nsys_lens::whatif::graph::Part::Host)
        .unwrap();
    assert!(host.delta_us > 0.5 * r.delta_us, "{r:#?}");
    let broadcast = r
        .names
        .iter()
        .find(|n| n.name == "broadcast_requests")
        .expect("added op");
    assert_eq!(broadcast.baseline_us, 0.0);
    assert!(broadcast.delta_us > 0.0);

    let public = |n: &str| path_of(&common::public_trace(n));
    let (b, t) = (
        public("GindaChen_nsys-ai__mfu_2gpu_before.sqlite"),
        public("GindaChen_nsys-ai__mfu_2gpu_after.sqlite"),
    );
    let r = nsys_lens::whatif::compare::regression(&b, &t);
    let measured =
        t.measured.wall_time_per_step_us.unwrap() - b.measured.wall_time_per_step_us.unwrap();
    let parts: f64 = r.parts.iter().map(|p| p.delta_us).sum();
    println!("mfu pair: {:.1} µs per step, parts {parts:.1}", r.delta_us);
    assert!((r.delta_us - measured).abs() < 0.01 && (parts - measured).abs() < 0.01);
}

/// `--graphs`: each steady step's eager launches on a thread become one graph launch. On
/// `layers`, whose host pays 63 launch calls a step on the critical path, the gain is what
/// free launches would buy but the one graph launch a step (no generator run is graphed, so
/// this compares two predictions); on a run already launched as graphs it buys nothing.
#[test]
fn graphing_eager_launches_buys_what_their_calls_cost_on_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let layers = write(dir.path(), "layers", &Costs::default());
    let w = whatif(
        &layers,
        None,
        &[costs(|c| c.graphs = true), costs(|c| c.launch = 0.0)],
    )
    .unwrap();
    let (graphs, free) = (
        w.predicted[0].wall_time_per_step_us.unwrap(),
        w.predicted[1].wall_time_per_step_us.unwrap(),
    );
    let measured = w.measured.wall_time_per_step_us.unwrap();
    println!("layers: measured {measured:.1}, graphs {graphs:.1}, launches free {free:.1} µs");
    assert!(graphs < 0.9 * measured, "{graphs} vs {measured}");
    assert!(
        (graphs - free).abs() < 0.02 * measured,
        "{graphs} vs {free}"
    );
    let graphed = write(dir.path(), "cuda-graphs", &Costs::default());
    let w = whatif(&graphed, None, &[costs(|c| c.graphs = true)]).unwrap();
    let gain = w.predicted[0].gain_pct.unwrap();
    assert!(gain.abs() < 0.5, "{gain}");
}

/// The replay keeps a bounded number of graph points, whatever the run's length: outside the
/// steady cycles the last 4,096, inside them those since the open cycle's start, so the same
/// scenario ten times longer stays under that bound (the fold's memory does not grow with it).
#[test]
fn the_replays_points_do_not_grow_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let peak = |scale: u32| {
        let path = dir.path().join(format!("hb{scale}.sqlite"));
        let opts = nsys_lens::synth::GenOptions { scale, seed: 42 };
        nsys_lens::synth::generate("host-bound", &path, &opts).unwrap();
        let w = whatif(&path, None, &[]).unwrap();
        println!(
            "scale {scale}: {} steps, {} points at most",
            w.steps, w.peak_points
        );
        (w.steps, w.peak_points)
    };
    let (short, long) = (peak(1), peak(10));
    assert!(long.0 >= 9 * short.0, "{short:?} {long:?}");
    assert!(long.1 <= 4_200, "{long:?}");
}

/// `whatif --step N --json` prints the path the library walks for that step (what the page's
/// timeline draws); a step past the last, or a cost change with it, is a one-line usage error.
#[test]
fn whatif_step_prints_the_steps_critical_path() {
    use std::ffi::OsStr;
    let path = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let conn = trace::open_path(&path).unwrap();
    let scan = FileScan::of_file(&conn, &path, LoadOptions::all(), 1 << 30).unwrap();
    let rows = FileRows::over(&conn, &scan);
    let want = nsys_lens::whatif::step_path(&rows, &AnalyzeConfig::default(), 2).unwrap();
    let args = |extra: &[&str]| -> Vec<std::ffi::OsString> {
        let mut a = vec!["whatif".into(), path.clone().into_os_string()];
        a.extend(
            ["--step", "2"]
                .iter()
                .chain(extra)
                .map(std::ffi::OsString::from),
        );
        a
    };
    let run = |a: &[std::ffi::OsString]| {
        let a: Vec<&OsStr> = a.iter().map(|s| s.as_os_str()).collect();
        let out = common::nsys_lens(&a);
        (common::describe(&a, &out), out)
    };
    let json = args(&["--json"]);
    let (said, out) = run(&json);
    assert!(out.status.success(), "{said}");
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want = serde_json::to_value(&want).unwrap();
    want["schema_version"] = got["schema_version"].clone();
    assert_eq!(got, want);
    let (_, text) = run(&args(&[]));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("Critical path of steady step 2 of 15"),
        "{text}"
    );
    for (bad, needle) in [
        (args(&["--host", "0.5"]), "--step"),
        (
            {
                let mut a = args(&[]);
                a[3] = "15".into();
                a
            },
            "has 15",
        ),
    ] {
        let a: Vec<&OsStr> = bad.iter().map(|s| s.as_os_str()).collect();
        let out = common::nsys_lens(&a);
        common::assert_one_line_error(&a, &out, 2, Some(needle));
    }
}
