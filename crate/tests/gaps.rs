//! The GPU-idle gap histogram against the `gaps` scenario, whose generator placed gaps of known
//! sizes in every bucket and recorded their counts and totals.

mod common;

use std::path::Path;

use nsys_lens::drill::gap_report::gap_report;
use nsys_lens::drill::gaps::{GapBucket, GapSweep, bucket_of, idle_gap_histogram};
use nsys_lens::index::rows::RowIndex;
use nsys_lens::model::{Kernels, Trace};
use nsys_lens::synth::{GenOptions, generate};
use nsys_lens::trace::{LoadOptions, load_path};

#[test]
fn every_bucket_matches_the_generated_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gaps.sqlite");
    for seed in [42, 7] {
        let answers = generate("gaps", &path, &GenOptions { scale: 1, seed }).expect("generate");
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let hist = idle_gap_histogram(&trace, None);
        let expected = answers["gap_buckets"].as_array().expect("gap_buckets");
        assert_eq!(hist.buckets.len(), expected.len());
        for (got, want) in hist.buckets.iter().zip(expected) {
            assert_eq!(
                Some(got.count),
                want["count"].as_u64(),
                "{} count",
                got.label
            );
            let total = want["total_us"].as_f64().expect("total_us");
            assert!(
                (got.total_us - total).abs() < 1e-6,
                "{}: {} vs {total}",
                got.label,
                got.total_us
            );
            assert_eq!(Some(got.lo_us), want["lo_us"].as_f64(), "{} lo", got.label);
            assert_eq!(got.hi_us, want["hi_us"].as_f64(), "{} hi", got.label);
            assert!(got.count > 0, "every bucket is populated");
        }
        let shares: f64 = hist.buckets.iter().map(|b| b.share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
    }
}

/// Per device: the kernels' intervals sorted and merged, the holes between them bucketed.
fn brute_force(trace: &Trace, window: Option<(i64, i64)>) -> ([u64; 9], [i64; 9]) {
    let k = &trace.kernels;
    let (mut counts, mut totals) = ([0u64; 9], [0i64; 9]);
    for d in k.devices() {
        let mut spans: Vec<(i64, i64)> = (0..k.len())
            .filter(|&i| k.device[i] == d && k.end[i] > k.start[i])
            .map(|i| (k.start[i], k.end[i]))
            .collect();
        spans.sort_unstable();
        let mut busy_until: Option<i64> = None;
        for (s, e) in spans {
            if let Some(p) = busy_until
                && s > p
                && window.is_none_or(|(ws, we)| p >= ws && s <= we)
            {
                counts[bucket_of(s - p)] += 1;
                totals[bucket_of(s - p)] += s - p;
            }
            busy_until = Some(busy_until.map_or(e, |p| p.max(e)));
        }
    }
    (counts, totals)
}

/// The `gaps` scenario, generated and loaded.
fn gaps_trace(scale: u32, seed: u64) -> Trace {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gaps.sqlite");
    generate("gaps", &path, &GenOptions { scale, seed }).expect("generate");
    load_path(&path, LoadOptions::all()).expect("load")
}

/// The `gaps` scenario places kernels alone, so the sweep over its kernels is the histogram of
/// its GPU work.
#[test]
fn the_one_pass_sweep_equals_brute_force_per_device_gaps() {
    let trace = gaps_trace(2, 11);
    assert!(
        trace.replays.start.is_empty()
            && trace.memcpy.start.is_empty()
            && trace.memset.start.is_empty()
    );
    let k = &trace.kernels;
    let (lo, hi) = (k.start[k.len() / 4], k.start[3 * k.len() / 4]);
    for window in [None, Some((lo, hi))] {
        let mut sweep = GapSweep::new(window);
        for ev in k.events_in_start_order() {
            sweep.push(&ev).expect("in start order");
        }
        let hist = sweep.finish();
        let (counts, totals) = brute_force(&trace, window);
        for (i, b) in hist.buckets.iter().enumerate() {
            assert_eq!(b.count, counts[i], "{}", b.label);
            assert!(
                (b.total_us - totals[i] as f64 / 1000.0).abs() < 1e-6,
                "{}",
                b.label
            );
            assert!(window.is_some() || b.count > 0, "every bucket is populated");
        }
        assert_eq!(hist.devices, k.devices());
        assert_eq!(hist, idle_gap_histogram(&trace, window));
    }
}

#[test]
fn the_sweep_refuses_a_kernel_out_of_start_order() {
    let trace = gaps_trace(1, 1);
    let mut sweep = GapSweep::new(None);
    let late = trace.kernels.event(trace.kernels.len() - 1);
    let early = trace.kernels.event(0);
    sweep.push(&late).expect("first");
    let err = sweep.push(&early).expect_err("earlier start");
    assert_eq!(err.start, early.start);
}

/// Name of the kernels [`with_timeless_kernels`] adds.
const TIMELESS: &str = "timeless_marker_kernel";

/// `trace` (kernels in start order) with a kernel that takes no time inside every gap between a
/// device's kernels: zero-length in the middle, and in the first gap also one ending before it starts
/// (a damaged row). Returns how many were added.
fn with_timeless_kernels(trace: &Trace) -> (Trace, usize) {
    let mut out = trace.clone();
    let name = out.strings.intern(TIMELESS);
    let k = &trace.kernels;
    out.kernels = Kernels::default();
    let mut added = 0;
    let mut busy_until: Vec<(u32, i64)> = Vec::new();
    for i in 0..k.len() {
        let (s, e, d) = (k.start[i], k.end[i], k.device[i]);
        let until = busy_until.iter_mut().find(|b| b.0 == d);
        let timeless = match until {
            Some(b) if s > b.1 + 2 => {
                let mid = b.1 + (s - b.1) / 2;
                let damaged = (added == 0).then_some((mid + 1, mid - 5));
                b.1 = b.1.max(e);
                std::iter::once((mid, mid)).chain(damaged).collect()
            }
            Some(b) => {
                b.1 = b.1.max(e);
                Vec::new()
            }
            None => {
                busy_until.push((d, e));
                Vec::new()
            }
        };
        for (ts, te) in timeless {
            push_kernel(&mut out.kernels, k, i, (ts, te, name));
            added += 1;
        }
        push_kernel(&mut out.kernels, k, i, (s, e, k.short_name[i]));
    }
    (out, added)
}

/// Appends a copy of row `i` of `from` with another start, end and name.
fn push_kernel(to: &mut Kernels, from: &Kernels, i: usize, (s, e, name): (i64, i64, u32)) {
    to.start.push(s);
    to.end.push(e);
    to.device.push(from.device[i]);
    to.stream.push(from.stream[i]);
    to.process.push(from.process[i]);
    to.correlation.push(0);
    to.short_name.push(name);
    to.demangled_name.push(name);
}

/// `(count, total ns)` per bucket.
fn counts(buckets: &[GapBucket]) -> Vec<(u64, i64)> {
    let ns = |us: f64| (us * 1000.0).round() as i64;
    buckets.iter().map(|b| (b.count, ns(b.total_us))).collect()
}

/// A kernel that takes no time leaves its device idle: it splits no gap, in the verdict's
/// histogram, the drill-down's device-idle histogram or its per-stream one. The `gaps` trace
/// (one device, one stream) with such kernels in every gap gives the generator's buckets in all
/// three, and no listed gap has one as a neighbour.
#[test]
fn kernels_that_take_no_time_split_no_gap_in_any_histogram() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gaps.sqlite");
    let answers = generate("gaps", &path, &GenOptions::default()).expect("generate");
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let (timeless, added) = with_timeless_kernels(&trace);
    assert!(added > 100, "{added} kernels added");
    let ns = |v: &serde_json::Value| (v.as_f64().expect("total_us") * 1000.0).round() as i64;
    let want: Vec<(u64, i64)> = answers["gap_buckets"]
        .as_array()
        .expect("gap_buckets")
        .iter()
        .map(|b| (b["count"].as_u64().expect("count"), ns(&b["total_us"])))
        .collect();
    let verdict = idle_gap_histogram(&timeless, None);
    let drill = gap_report(&[RowIndex::loaded(&timeless, "gaps", None)], 20, None);
    assert_eq!(counts(&verdict.buckets), want, "verdict histogram");
    assert_eq!(
        counts(&drill.device_idle.buckets),
        want,
        "drill-down, device idle"
    );
    assert_eq!(counts(&drill.buckets), want, "drill-down, per stream");
    let top = drill.top.iter().chain(&drill.device_idle.top);
    for gap in top {
        assert!(
            gap.prev_kernel != TIMELESS && gap.next_kernel != TIMELESS,
            "a gap listed beside a kernel that takes no time: {gap:?}"
        );
    }
}

/// `(count, total ns)` per bucket of every device's idle gaps as plain SQL and brute force find
/// them in the export at `path`: its GPU work rows ([`common::gpu_work_select`]: kernels, graph
/// replays, copies, memsets) per device in start order, rows that take no time skipped, each gap
/// between the busy time so far and the next row's start, kept when wholly inside `window`.
fn sql_device_gaps(path: &Path, window: Option<(i64, i64)>) -> Vec<(u64, i64)> {
    let conn = common::open_export(path);
    let Some(work) = common::gpu_work_select(&conn) else {
        return vec![(0, 0); 9];
    };
    let sql = format!(
        "SELECT deviceId, start, end FROM ({work}) WHERE end > start ORDER BY deviceId, start, end"
    );
    let mut st = conn.prepare(&sql).expect("GPU work");
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .expect("rows");
    let (mut counts, mut totals) = ([0u64; 9], [0i64; 9]);
    let mut busy: Option<(i64, i64)> = None;
    for row in rows {
        let (device, s, e) = row.expect("row");
        match busy {
            Some((d, until)) if d == device => {
                if s > until && window.is_none_or(|(ws, we)| until >= ws && s <= we) {
                    counts[bucket_of(s - until)] += 1;
                    totals[bucket_of(s - until)] += s - until;
                }
                busy = Some((d, until.max(e)));
            }
            _ => busy = Some((device, e)),
        }
    }
    counts.into_iter().zip(totals).collect()
}

/// The first start and last end of the GPU work rows of the export at `path`, if it has any.
fn sql_work_extent(path: &Path) -> Option<(i64, i64)> {
    let conn = common::open_export(path);
    let sql = format!(
        "SELECT min(start), max(end) FROM ({})",
        common::gpu_work_select(&conn)?
    );
    conn.query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
        .ok()
}

/// The verdict's histogram and the drill-down's device-idle one of `trace` (read from `path`,
/// possibly changed since), whole and in the middle half of the extent of its GPU work, are
/// the same and those of [`sql_device_gaps`] over the file; returns their gap counts.
fn assert_same_device_histograms(trace: &Trace, path: &Path, label: &str) -> [u64; 2] {
    let Some((s, e)) = sql_work_extent(path) else {
        assert_eq!(
            idle_gap_histogram(trace, None).gaps,
            0,
            "{label}: no GPU work"
        );
        return [0; 2];
    };
    let index = [RowIndex::loaded(trace, label, None)];
    [None, Some((s + (e - s) / 4, e - (e - s) / 4))].map(|window| {
        let verdict = idle_gap_histogram(trace, window);
        let drill = gap_report(&index, 5, window).device_idle;
        assert_eq!(verdict.buckets, drill.buckets, "{label} {window:?}");
        assert_eq!(verdict.gaps, drill.gaps, "{label} {window:?}");
        assert_eq!(verdict.total_us, drill.total_us, "{label} {window:?}");
        assert_eq!(
            counts(&verdict.buckets),
            sql_device_gaps(path, window),
            "{label} {window:?}: the gaps between GPU work rows"
        );
        verdict.gaps
    })
}

/// On every scenario, as generated and with kernels that take no time in every gap between a
/// device's kernels (which change neither histogram).
#[test]
fn verdict_and_drill_down_device_idle_histograms_agree_on_every_scenario() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut gaps = [0; 2];
    for &(scenario, _) in nsys_lens::synth::scenarios() {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        generate(scenario, &path, &GenOptions::default()).expect("generate");
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let [whole, windowed] = assert_same_device_histograms(&trace, &path, scenario);
        assert!(
            whole > windowed && windowed > 0,
            "{scenario}: {whole}, {windowed}"
        );
        let (timeless, added) = with_timeless_kernels(&trace);
        assert!(added > 0, "{scenario}");
        let same = assert_same_device_histograms(&timeless, &path, scenario);
        assert_eq!(
            same,
            [whole, windowed],
            "{scenario}: kernels that take no time"
        );
        gaps = [gaps[0] + whole, gaps[1] + windowed];
    }
    assert!(gaps[0] > 1000, "{gaps:?}");
}

#[test]
fn verdict_and_drill_down_device_idle_histograms_agree_on_every_public_export() {
    let mut compared = 0;
    for entry in std::fs::read_dir(common::public_traces_dir()).expect("public traces") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "sqlite") {
            continue;
        }
        let label = path.display().to_string();
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let [whole, _] = assert_same_device_histograms(&trace, &path, &label);
        compared += usize::from(whole > 0);
    }
    assert!(compared >= 8, "only {compared} exports with idle gaps");
}
