//! The GPU-idle gap histogram against the `gaps` scenario, whose generator placed gaps of known
//! sizes in every bucket and recorded their counts and totals.

use nsys_lens::drill::gaps::idle_gap_histogram;
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
