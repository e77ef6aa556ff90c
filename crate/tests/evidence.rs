//! Every metric shows the figures its value is computed from (spec §2: "every ratio is shown
//! with its numerator and denominator"): in every scope of the verdict, under both profiles, on
//! every public export and scenario, a metric's value is its numerator ÷ denominator, or — a
//! mean of ratios with their own denominators over several devices or processes — the mean of
//! its `parts`, each its own numerator ÷ denominator. M5's parts are checked against plain SQL
//! over the public exports: per device, the union of its NCCL kernels and of its GPU work.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use nsys_lens::detect::result::Evidence;
use nsys_lens::detect::{DetectConfig, DetectReport, detect_rows};
use nsys_lens::profile::Profile;
use nsys_lens::trace::{LoadOptions, load_path};

/// `a` and `b` equal to a relative 1e-9 (µs sums in another order), or 5e-5 apart when
/// `rounded` (the `trtllm-skill` profile's reference keys carry 4-decimal values).
fn same(a: f64, b: f64, rounded: bool) -> bool {
    match rounded {
        true => (a - b).abs() <= 5e-5 + 1e-12,
        false => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
    }
}

/// A ratio as the metrics define it: 0 over a zero denominator.
fn ratio(n: f64, d: f64) -> f64 {
    if d != 0.0 { n / d } else { 0.0 }
}

/// Checks one metric's evidence; returns how many parts it shows.
fn check_metric(key: &str, e: &Evidence, what: &str, rounded: bool) -> usize {
    let Some(value) = e.value else {
        assert!(e.parts.is_empty(), "{what} {key}: parts of no value");
        return 0;
    };
    if e.parts.is_empty() {
        let (Some(n), Some(d)) = (e.numerator_us, e.denominator_us) else {
            panic!("{what} {key}: a value {value} without the figures it is computed from");
        };
        assert!(
            same(value, ratio(n, d), rounded),
            "{what} {key}: value {value} is not {n} / {d} = {}",
            ratio(n, d)
        );
        return 0;
    }
    assert!(
        e.numerator_us.is_none() && e.denominator_us.is_none(),
        "{what} {key}: summed figures beside the parts divide to another number: {e:?}"
    );
    assert!(e.parts.len() > 1, "{what} {key}: a mean of one part");
    for p in &e.parts {
        assert!(
            same(p.value, ratio(p.numerator_us, p.denominator_us), false),
            "{what} {key}: part {p:?}"
        );
        assert!(p.device.is_some() != p.pid.is_some(), "{what} {key}: {p:?}");
    }
    let mean = e.parts.iter().map(|p| p.value).sum::<f64>() / e.parts.len() as f64;
    assert!(
        same(value, mean, rounded),
        "{what} {key}: value {value} is not the mean of its parts, {mean}"
    );
    e.parts.len()
}

/// Every metric of every scope of `report`; returns how many parts they show.
fn check_report(report: &DetectReport, what: &str, rounded: bool) -> usize {
    let mut parts = 0;
    let phases = [
        ("context", &report.phases.context),
        ("generation", &report.phases.generation),
    ];
    let scopes = std::iter::once(("aggregate", &report.evidence)).chain(
        phases
            .into_iter()
            .filter_map(|(name, p)| Some((name, &p.as_ref()?.evidence))),
    );
    for (scope, evidence) in scopes {
        assert_eq!(evidence.len(), 7, "{what} {scope}: every metric");
        for (key, e) in evidence {
            parts += check_metric(key, e, &format!("{what} {scope}"), rounded);
        }
    }
    parts
}

/// The verdict of the export at `path` under `profile`.
fn verdict(path: &Path, profile: Profile) -> DetectReport {
    let trace = load_path(path, LoadOptions::all()).expect("load");
    let cfg = DetectConfig {
        profile,
        ..DetectConfig::default()
    };
    detect_rows(&trace, &cfg).expect("detect")
}

/// Total length of the union of `spans`.
fn union_ns(mut spans: Vec<(i64, i64)>) -> i64 {
    spans.retain(|s| s.1 > s.0);
    spans.sort_unstable();
    let (mut total, mut until) = (0, i64::MIN);
    for (s, e) in spans {
        let from = s.max(until);
        if e > from {
            total += e - from;
        }
        until = until.max(e);
    }
    total
}

/// Per device, `(NCCL kernel time, busy time)` in ns as plain SQL finds them: the union of its
/// kernels whose short name contains `nccl` (any case), and of all its GPU work.
fn sql_nccl_and_busy(path: &Path) -> BTreeMap<u32, (i64, i64)> {
    let conn = common::open_export(path);
    let mut nccl: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    let mut st = conn
        .prepare(
            "SELECT k.deviceId, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE '%nccl%'",
        )
        .expect("NCCL kernels");
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows");
    for row in rows {
        let (d, s, e): (u32, i64, i64) = row.expect("row");
        nccl.entry(d).or_default().push((s, e));
    }
    let mut busy: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    for (d, s, e) in common::gpu_work_rows(&conn, "").0 {
        busy.entry(d as u32).or_default().push((s, e));
    }
    busy.into_iter()
        .map(|(d, b)| {
            let n = nccl.remove(&d).unwrap_or_default();
            (d, (union_ns(n), union_ns(b)))
        })
        .collect()
}

#[test]
fn every_metric_shows_what_its_value_is_computed_from_on_every_public_export() {
    let mut nccl_parts = Vec::new();
    for path in common::public_exports_with_kernels() {
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        let standard = verdict(&path, Profile::Standard);
        check_report(&standard, &name, false);
        let skill = verdict(&path, Profile::TrtllmSkill);
        check_report(&skill, &format!("{name} trtllm-skill"), true);
        let m5 = &standard.evidence["nccl_ratio"];
        if m5.parts.is_empty() {
            continue;
        }
        // Each device's NCCL time over its busy time, as SQL finds them (the window is the
        // whole GPU work: nothing to clip).
        let sql = sql_nccl_and_busy(&path);
        let ns = |us: f64| (us * 1000.0).round() as i64;
        let got: BTreeMap<u32, (i64, i64)> = m5
            .parts
            .iter()
            .map(|p| {
                let device = p.device.expect("M5 is per device");
                (device, (ns(p.numerator_us), ns(p.denominator_us)))
            })
            .collect();
        assert_eq!(got, sql, "{name}: M5 per device");
        nccl_parts.push((name, m5.value, m5.parts.clone()));
    }
    // The case: mfu_2gpu_before's M5 is the mean of two devices' ratios, not the
    // ratio of their sums (0.046752 against 0.046945).
    let before = nccl_parts
        .iter()
        .find(|p| p.0.contains("mfu_2gpu_before"))
        .expect("mfu_2gpu_before shows M5 per device");
    let (n, d): (f64, f64) = before.2.iter().fold((0.0, 0.0), |a, p| {
        (a.0 + p.numerator_us, a.1 + p.denominator_us)
    });
    let value = before.1.expect("M5");
    assert!((value - n / d).abs() > 1e-4, "{value} vs {}", n / d);
}

#[test]
fn every_metric_shows_what_its_value_is_computed_from_on_every_scenario() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut parts = 0;
    for &(scenario, _) in nsys_lens::synth::scenarios() {
        let path = common::generate_in(dir.path(), scenario);
        parts += check_report(&verdict(&path, Profile::Standard), scenario, false);
        check_report(
            &verdict(&path, Profile::TrtllmSkill),
            &format!("{scenario} trtllm-skill"),
            true,
        );
    }
    assert!(
        parts > 0,
        "no scenario has a metric that is a mean of parts"
    );
}
