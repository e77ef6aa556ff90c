//! The same scenario with one cost scaled: every other duration is the unscaled run's, read back
//! with plain SQL from the written files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::Connection;
use serde_json::Value;

use super::Costs;
use crate::error::Error;
use crate::synth::{GenOptions, MarkerStyle, generate_with_costs};

fn write(dir: &Path, scenario: &str, costs: &Costs) -> (PathBuf, Value) {
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let n = FILES.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{scenario}-{n}.sqlite"));
    let opts = GenOptions::default();
    let answers = generate_with_costs(scenario, &path, &opts, MarkerStyle::TensorrtLlm, costs)
        .expect("generate");
    (path, answers)
}

/// `(name, duration)` of each row of `sql`'s `(name, start, end)`, in rowid order.
fn durations(path: &Path, sql: &str) -> Vec<(String, i64)> {
    let conn = Connection::open(path).expect("open");
    let mut stmt = conn.prepare(sql).expect("prepare");
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(2)? - r.get::<_, i64>(1)?,
        ))
    })
    .expect("query")
    .map(|r| r.expect("row"))
    .collect()
}

fn kernels(path: &Path) -> Vec<(String, i64)> {
    durations(
        path,
        "SELECT s.value, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k \
         JOIN StringIds s ON s.id = k.shortName ORDER BY k.rowid",
    )
}

fn calls(path: &Path) -> Vec<(String, i64)> {
    durations(
        path,
        "SELECT s.value, r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
         JOIN StringIds s ON s.id = r.nameId ORDER BY r.rowid",
    )
}

/// Push/pop ranges (eventType 59) by name.
fn ranges(path: &Path) -> Vec<(String, i64)> {
    durations(
        path,
        "SELECT coalesce(n.text, s.value), n.start, n.end FROM NVTX_EVENTS n \
         LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 ORDER BY n.rowid",
    )
}

fn half(ns: i64) -> i64 {
    (ns as f64 * 0.5).round() as i64
}

fn is_launch(name: &str) -> bool {
    name.starts_with("cudaLaunchKernel") || name.starts_with("cudaGraphLaunch")
}

/// Each row of `scaled` is its row of `base`, its duration halved.
fn assert_halved(base: &[(String, i64)], scaled: &[(String, i64)]) {
    assert_eq!(base.len(), scaled.len());
    for (b, s) in base.iter().zip(scaled) {
        assert_eq!((&b.0, half(b.1)), (&s.0, s.1));
    }
}

/// Every CUDA call of `scaled` but the stream syncs (which wait for the GPU) lasts as in `base`.
fn assert_calls_kept(base: &Path, scaled: &Path) {
    let (bc, sc) = (calls(base), calls(scaled));
    assert_eq!(bc.len(), sc.len());
    for (b, s) in bc.iter().zip(&sc) {
        if !b.0.starts_with("cudaStreamSynchronize") {
            assert_eq!(b, s);
        }
    }
}

/// Host-work ranges of the decode loop: leaves, so their self time is their duration.
const HOST_OPS: [&str; 5] = [
    "_schedule",
    "_fetch_new_requests",
    "_prepare_tp_inputs",
    "_update_requests",
    "_handle_responses",
];

#[test]
fn factors_of_one_write_the_same_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ones = Costs {
        kernel_classes: vec![("gemm".into(), 1.0)],
        ops: vec![("_prepare_tp_inputs".into(), 1.0)],
        ..Costs::default()
    };
    for scenario in ["host-bound", "tp2-straggler", "serving-graphs", "gaps"] {
        let (plain, a) = write(dir.path(), scenario, &Costs::default());
        let (same, b) = write(dir.path(), scenario, &ones);
        let bytes = |p: &Path| std::fs::read(p).expect("read");
        assert!(bytes(&plain) == bytes(&same), "{scenario}: bytes differ");
        assert_eq!(a, b, "{scenario}: answers differ");
        assert!(a.get("costs").is_none());
    }
}

#[test]
fn host_half_or_none_scales_the_host_ops_and_keeps_every_kernel_and_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, plain) = write(dir.path(), "host-bound", &Costs::default());
    let window = |a: &Value| a["profiles"]["standard"]["bound"]["window_ns"].as_i64();
    for f in [0.5, 0.0] {
        let host = Costs {
            host: f,
            ..Costs::default()
        };
        let (scaled, answers) = write(dir.path(), "host-bound", &host);
        assert_eq!(kernels(&base), kernels(&scaled));
        let (bc, sc) = (calls(&base), calls(&scaled));
        assert_eq!(bc.len(), sc.len());
        for (b, s) in bc.iter().zip(&sc) {
            // A stream sync waits for the GPU: it ends when the GPU work does, not by a factor.
            if !b.0.starts_with("cudaStreamSynchronize") {
                assert_eq!(b, s);
            }
        }
        let (br, sr) = (ranges(&base), ranges(&scaled));
        assert_eq!(br.len(), sr.len());
        let mut seen = 0;
        for (b, s) in br.iter().zip(&sr) {
            assert_eq!(b.0, s.0);
            if HOST_OPS.contains(&b.0.as_str()) {
                assert_eq!(s.1, (b.1 as f64 * f).round() as i64, "{} ×{f}", b.0);
                seen += 1;
            }
        }
        assert_eq!(seen, 64 * 5);
        assert_eq!(answers["costs"]["host"], f);
        // The steps are shorter: the host bounds them.
        assert!(window(&answers) < window(&plain), "×{f}");
    }
}

#[test]
fn kernels_half_halves_every_kernel_and_keeps_the_host() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, _) = write(dir.path(), "host-bound", &Costs::default());
    let costs = Costs {
        kernels: 0.5,
        ..Costs::default()
    };
    let (scaled, answers) = write(dir.path(), "host-bound", &costs);
    let sk = kernels(&scaled);
    assert_halved(&kernels(&base), &sk);
    assert_calls_kept(&base, &scaled);
    assert_eq!(ranges(&base).len(), ranges(&scaled).len());
    for (b, s) in ranges(&base).iter().zip(&ranges(&scaled)) {
        if HOST_OPS.contains(&b.0.as_str()) {
            assert_eq!(b, s);
        }
    }
    // The answers are the scaled run's: its compute time is the placed kernels' (one stream).
    let compute = answers["profiles"]["standard"]["bound"]["compute_ns"].as_i64();
    assert_eq!(compute, Some(sk.iter().map(|k| k.1).sum::<i64>()));
}

#[test]
fn launch_and_class_factors_scale_only_their_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = "cuda-graphs";
    let (base, _) = write(dir.path(), scenario, &Costs::default());
    let costs = Costs {
        launch: 0.5,
        kernel_classes: vec![("gemm".into(), 2.0)],
        ..Costs::default()
    };
    let (scaled, _) = write(dir.path(), scenario, &costs);
    let gemm = crate::synth::kinds::GEMM.short;
    let (bk, sk) = (kernels(&base), kernels(&scaled));
    assert_eq!(bk.len(), sk.len());
    for (b, s) in bk.iter().zip(&sk) {
        let want = if b.0 == gemm { 2 * b.1 } else { b.1 };
        assert_eq!((&b.0, want), (&s.0, s.1));
    }
    let mut launches = 0;
    for (b, s) in calls(&base).iter().zip(&calls(&scaled)) {
        if is_launch(&b.0) {
            assert_eq!(s.1, half(b.1), "{}", b.0);
            launches += 1;
        } else if !b.0.starts_with("cudaStreamSynchronize") {
            assert_eq!(b, s);
        }
    }
    assert!(launches > 0);
}

/// `copies`: every copy's and memset's GPU duration halved, every kernel and every call's
/// duration as drawn (the copies are async from pinned memory: their calls do not wait).
#[test]
fn copies_half_halves_every_copy_and_memset_and_keeps_kernels_and_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, _) = write(dir.path(), "copy-bound", &Costs::default());
    let costs = Costs {
        copies: 0.5,
        ..Costs::default()
    };
    let (scaled, answers) = write(dir.path(), "copy-bound", &costs);
    let memory = |path: &Path| {
        let mut rows = durations(
            path,
            "SELECT 'copy', start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY rowid",
        );
        rows.extend(durations(
            path,
            "SELECT 'memset', start, end FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY rowid",
        ));
        rows
    };
    let base_memory = memory(&base);
    assert!(
        base_memory.len() > 4,
        "{} copies and memsets",
        base_memory.len()
    );
    assert_halved(&base_memory, &memory(&scaled));
    assert_eq!(kernels(&base), kernels(&scaled));
    assert_calls_kept(&base, &scaled);
    assert_eq!(answers["costs"]["copies"].as_f64(), Some(0.5));
}

/// A copy from pageable memory: its call stages it and returns once it ends, so a halved copy
/// ends its call as much sooner (a call returns as long after its copy's end in both runs).
#[test]
fn copies_half_halves_a_pageable_copy_and_its_call_still_ends_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = "copy-bound-pageable";
    let (base, _) = write(dir.path(), scenario, &Costs::default());
    let costs = Costs {
        copies: 0.5,
        ..Costs::default()
    };
    let (scaled, _) = write(dir.path(), scenario, &costs);
    // (copy, its call's start, its call's end - the copy's end)
    let staged = |path: &Path| {
        durations(
            path,
            "SELECT 'copy', m.start, m.end FROM CUPTI_ACTIVITY_KIND_MEMCPY m \
             WHERE m.srcKind = 0 ORDER BY m.rowid",
        )
    };
    let returns = |path: &Path| {
        durations(
            path,
            "SELECT 'return', m.end, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
             JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId \
             WHERE m.srcKind = 0 AND r.start < m.start ORDER BY m.rowid",
        )
    };
    let (bm, sm) = (staged(&base), staged(&scaled));
    assert!(bm.len() > 4, "{} pageable copies", bm.len());
    assert_halved(&bm, &sm);
    let (br, sr) = (returns(&base), returns(&scaled));
    assert_eq!(br.len(), bm.len(), "each call starts before its copy");
    assert_eq!(br, sr);
    assert!(br.iter().all(|r| r.1 > 0 && r.1 == br[0].1), "{br:?}");
}

#[test]
fn an_op_factor_scales_that_op_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, _) = write(dir.path(), "layers", &Costs::default());
    // `_sample_async` holds a copy, a sync and host work: only the host work is its self time.
    for op in ["_prepare_tp_inputs", "_sample_async"] {
        let costs = Costs {
            ops: vec![(op.into(), 0.5)],
            ..Costs::default()
        };
        let (scaled, _) = write(dir.path(), "layers", &costs);
        assert_eq!(kernels(&base), kernels(&scaled));
        let (br, sr) = (ranges(&base), ranges(&scaled));
        let mut seen = 0;
        for (b, s) in br.iter().zip(&sr) {
            assert_eq!(b.0, s.0);
            if b.0 == op {
                // A leaf's self time is its duration; `_sample_async` also waits for the GPU.
                if op == "_prepare_tp_inputs" {
                    assert_eq!(s.1, half(b.1), "{op}");
                }
                assert!(s.1 < b.1, "{op}");
                seen += 1;
            } else if !b.0.starts_with("[Executor]") {
                assert_eq!(b.1, s.1, "{}", b.0);
            }
        }
        assert!(seen > 0, "{op}");
    }
}

#[test]
fn scaling_a_cost_a_scenario_does_not_support_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.sqlite");
    let gen_with = |scenario: &str, costs: &Costs| {
        let opts = GenOptions::default();
        generate_with_costs(scenario, &path, &opts, MarkerStyle::TensorrtLlm, costs)
    };
    let host = Costs {
        host: 0.5,
        ..Costs::default()
    };
    let kernels = Costs {
        kernels: 0.5,
        ..Costs::default()
    };
    for (scenario, costs) in [("gaps", &kernels), ("indexed-layers-baseline", &host)] {
        match gen_with(scenario, costs) {
            Err(Error::Usage(m)) => assert!(m.contains("does not support"), "{m}"),
            other => panic!("{scenario}: {other:?}"),
        }
    }
    assert!(gen_with("indexed-layers-baseline", &kernels).is_ok());
    for bad in [-1.0, f64::NAN, 1e9] {
        let c = Costs {
            kernels: bad,
            ..Costs::default()
        };
        assert!(matches!(gen_with("host-bound", &c), Err(Error::Usage(_))));
    }
    let c = Costs {
        kernel_classes: vec![("tensor".into(), 0.5)],
        ..Costs::default()
    };
    assert!(matches!(gen_with("host-bound", &c), Err(Error::Usage(_))));
}
