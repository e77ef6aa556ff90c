//! The GPU-idle gap histogram against the `gaps` scenario, whose generator placed gaps of known
//! sizes in every bucket and recorded their counts and totals; the verdict's and the
//! drill-down's idle time over one window, against plain SQL over every public export and
//! scenario.

use crate::common;

use std::path::Path;

use nsys_lens::detect::{DetectConfig, detect_rows};
use nsys_lens::drill::gap_report::{fold_gaps, gap_report};
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

/// The stretches of `window` (`[ws, we)`) that no interval of `busy` (sorted by start, each
/// taking time) covers: the window minus their union.
fn uncovered(busy: &[(i64, i64)], (ws, we): (i64, i64)) -> Vec<i64> {
    let mut out = Vec::new();
    let mut from = ws;
    for &(s, e) in busy {
        if s.min(we) > from {
            out.push(s.min(we) - from);
        }
        from = from.max(e);
    }
    if we > from {
        out.push(we - from);
    }
    out
}

/// Per device: the window (`window`, else the first kernel's start to the last end) minus the
/// union of the device's kernels, bucketed stretch by stretch.
fn brute_force(trace: &Trace, window: Option<(i64, i64)>) -> ([u64; 9], [i64; 9]) {
    let k = &trace.kernels;
    let extent = (0..k.len()).fold((i64::MAX, i64::MIN), |(lo, hi), i| {
        (lo.min(k.start[i]), hi.max(k.end[i]))
    });
    let (mut counts, mut totals) = ([0u64; 9], [0i64; 9]);
    for d in k.devices() {
        let mut spans: Vec<(i64, i64)> = (0..k.len())
            .filter(|&i| k.device[i] == d && k.end[i] > k.start[i])
            .map(|i| (k.start[i], k.end[i]))
            .collect();
        spans.sort_unstable();
        for ns in uncovered(&spans, window.unwrap_or(extent)) {
            counts[bucket_of(ns)] += 1;
            totals[bucket_of(ns)] += ns;
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
            gap.prev_kernel.as_deref() != Some(TIMELESS)
                && gap.next_kernel.as_deref() != Some(TIMELESS),
            "a gap listed beside a kernel that takes no time: {gap:?}"
        );
    }
}

/// Per device (ascending) of the export at `path`, its idle stretches in `window`, else in the
/// verdict's window (spec §2: the first GPU operation's start to the last one's end), as plain
/// SQL and brute force find them: its GPU work rows ([`common::gpu_work_select`]: kernels,
/// graph replays, copies, memsets) that take time, sorted by start, and the window minus their
/// union.
fn sql_device_stretches(path: &Path, window: Option<(i64, i64)>) -> Vec<(i64, Vec<i64>)> {
    let (busy, extent) = sql_busy(&common::open_export(path));
    let Some(window) = window.or(extent) else {
        return Vec::new();
    };
    busy.into_iter()
        .map(|(device, busy)| (device, uncovered(&busy, window)))
        .collect()
}

/// A device and its GPU work rows that take time, `(start, end)` sorted.
type DeviceBusy = (i64, Vec<(i64, i64)>);

/// Per device of an export (every device with GPU work), its GPU work rows that take time,
/// `(start, end)` sorted; and the first start and last end of all rows, if there are any.
fn sql_busy(conn: &rusqlite::Connection) -> (Vec<DeviceBusy>, Option<(i64, i64)>) {
    let (rows, hull) = common::gpu_work_rows(conn, "");
    let mut per: Vec<(i64, Vec<(i64, i64)>)> = Vec::new();
    for (device, s, e) in rows.iter().copied() {
        if per.last().is_none_or(|p| p.0 != device) {
            per.push((device, Vec::new()));
        }
        if let Some(p) = per.last_mut().filter(|_| e > s) {
            p.1.push((s, e));
        }
    }
    per.iter_mut().for_each(|p| p.1.sort_unstable());
    (per, (!rows.is_empty()).then_some(hull))
}

/// `(count, total ns)` per bucket of every device's idle stretches ([`sql_device_stretches`]).
fn sql_device_gaps(path: &Path, window: Option<(i64, i64)>) -> Vec<(u64, i64)> {
    let (mut counts, mut totals) = ([0u64; 9], [0i64; 9]);
    for ns in sql_device_stretches(path, window)
        .into_iter()
        .flat_map(|d| d.1)
    {
        counts[bucket_of(ns)] += 1;
        totals[bucket_of(ns)] += ns;
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
        let mut drill = gap_report(&index, 5, window).device_idle;
        // The same buckets; the drill-down's also carry the causes it measured in them.
        assert!(verdict.buckets.iter().all(|b| b.causes.is_empty()));
        drill.buckets.iter_mut().for_each(|b| b.causes.clear());
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

/// One window for idle time (spec §2): per device, the drill-down's idle time (`idle.per_device`,
/// which its causes add up to) and the verdict's (`per_device`: window − busy) are the window
/// minus the device's busy time as plain SQL finds it ([`sql_device_stretches`]); the
/// drill-down's device-idle histogram holds that time, as a share of device time equal to the
/// verdict's M1. Returns the idle time the devices spend before their first operation or after
/// their last (what a per-device window would not count), ns.
fn assert_one_idle_window(trace: &Trace, path: &Path, label: &str) -> i64 {
    let want: Vec<(u32, i64)> = sql_device_stretches(path, None)
        .into_iter()
        .map(|(d, v)| (d as u32, v.iter().sum()))
        .collect();
    let index = [RowIndex::loaded(trace, label, None)];
    let (gaps, idle) = fold_gaps(&index, 5, None);
    let drill: Vec<(u32, i64)> = idle
        .per_device
        .iter()
        .map(|d| (d.device, d.idle_ns))
        .collect();
    assert_eq!(drill, want, "{label}: drill's idle.per_device");
    for d in &idle.per_device {
        let causes: i64 = d.causes.iter().map(|c| c.ns).sum();
        assert_eq!(causes, d.idle_ns, "{label}: device {} causes", d.device);
    }
    let verdict = detect_rows(trace, &DetectConfig::default()).expect("detect");
    let detect: Vec<(u32, i64)> = verdict
        .per_device
        .iter()
        .map(|d| {
            (
                d.device,
                ((d.window_us - d.busy_us) * 1000.0).round() as i64,
            )
        })
        .collect();
    assert_eq!(detect, want, "{label}: detect's per_device idle");
    let total: i64 = want.iter().map(|d| d.1).sum();
    let ns = |us: f64| (us * 1000.0).round() as i64;
    assert_eq!(ns(gaps.device_idle.total_us), total, "{label}: histogram");
    let m1 = verdict.evidence["gpu_idle_ratio"].value.expect("M1");
    assert!(
        (gaps.device_idle.idle_share - m1).abs() < 1e-9,
        "{label}: idle share {} vs M1 {m1}",
        gaps.device_idle.idle_share
    );
    // What a window per device (first to last operation of each) would leave out.
    let mut inner = 0;
    for (_, busy) in sql_busy(&common::open_export(path)).0 {
        let Some(first) = busy.first() else { continue };
        let own = (first.0, busy.iter().map(|b| b.1).max().unwrap_or(0));
        inner += uncovered(&busy, own).iter().sum::<i64>();
    }
    total - inner
}

#[test]
fn drill_and_detect_count_idle_over_one_window_on_every_public_export() {
    let mut edges = Vec::new();
    for path in common::public_exports_with_kernels() {
        let label = path.display().to_string();
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        let edge = assert_one_idle_window(&trace, &path, &label);
        edges.push((label, edge));
    }
    // The case: GPU 1 of h100_2gpu_1s.v2 starts after GPU 0 and ends before it.
    let h100 = edges.iter().find(|e| e.0.contains("h100_2gpu_1s.v2"));
    assert!(h100.is_some_and(|e| e.1 > 0), "{edges:?}");
}

#[test]
fn drill_and_detect_count_idle_over_one_window_on_every_scenario() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut edges = 0;
    for &(scenario, _) in nsys_lens::synth::scenarios() {
        let path = common::generate_in(dir.path(), scenario);
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        edges += assert_one_idle_window(&trace, &path, scenario);
    }
    assert!(
        edges > 0,
        "no scenario has a device idle at the window's edges"
    );
}
