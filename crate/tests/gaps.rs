//! The GPU-idle gap histogram against the `gaps` scenario, whose generator placed gaps of known
//! sizes in every bucket and recorded their counts and totals.

use nsys_lens::drill::gaps::{GapSweep, bucket_of, idle_gap_histogram};
use nsys_lens::model::Trace;
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

#[test]
fn the_one_pass_sweep_equals_brute_force_per_device_gaps() {
    let trace = gaps_trace(2, 11);
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
