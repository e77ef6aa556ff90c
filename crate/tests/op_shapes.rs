//! Root cause's NVTX ops grouped by shape and nested as a tree (issue 40): names that differ
//! only in their numbers are one op, an op's self time is its time minus its direct children's
//! on the same thread, and the comparison ranks, labels and hands off by self time.
//!
//! Values come from what the generator placed (`indexed-layers-*`, `synth::answers`) and from
//! plain SQL over the public `mfu_2gpu_before` export with the tests' own name rule
//! (`common::nvtx_op_shape`) and nesting.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use regex::Regex;
use rusqlite::Connection;
use serde_json::Value;

use common::{describe, generated, nsys_lens, nvtx_op_shape as shape, public_trace, writable_copy};

const MFU_BEFORE: &str = "GindaChen_nsys-ai__mfu_2gpu_before.sqlite";

fn analyze(paths: &[&Path], extra: &[&str]) -> Value {
    let mut args: Vec<&OsStr> = vec![OsStr::new("analyze")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    args.push(OsStr::new("--json"));
    args.extend(extra.iter().map(OsStr::new));
    let out = nsys_lens(&args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)))
}

/// The `key` strings of an array of objects.
fn strs<'a>(rows: &'a Value, key: &str) -> Vec<&'a str> {
    rows.as_array()
        .map(|v| v.iter().filter_map(|r| r[key].as_str()).collect())
        .unwrap_or_default()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn row<'a>(rows: &'a Value, name: &str) -> &'a Value {
    rows.as_array()
        .and_then(|v| v.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no row {name}: {rows}"))
}

/// The generated pair and its answers: (baseline, target, baseline answers, target answers).
struct Pair {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    baseline: PathBuf,
    target: PathBuf,
    b: Value,
    t: Value,
}

fn pair() -> Pair {
    let (db, baseline, b) = generated("indexed-layers-baseline", 1, 42);
    let (dt, target, t) = generated("indexed-layers-target", 1, 42);
    Pair {
        _dirs: (db, dt),
        baseline,
        target,
        b: b["indexed_layers"].clone(),
        t: t["indexed_layers"].clone(),
    }
}

#[test]
fn layer_indexed_ranges_are_one_op_with_their_members_and_placed_self_times() {
    let p = pair();
    for (path, want) in [(&p.baseline, &p.b), (&p.target, &p.t)] {
        let json = analyze(&[path], &[]);
        let ops = &json["baseline"]["nvtx_ops"];
        let want_ops = want["ops"].as_object().expect("ops");
        for (name, w) in want_ops {
            let r = row(ops, name);
            for key in ["us_per_step", "self_us_per_step"] {
                assert!(
                    close(f(&r[key]), f(&w[key])),
                    "{name} {key}: {} vs {}",
                    r[key],
                    w[key]
                );
            }
            assert_eq!(r["depth"], w["depth"], "{name}");
            assert_eq!(
                r.get("parent").unwrap_or(&Value::Null),
                &w["parent"],
                "{name}"
            );
        }
        for (shape, names) in want["members"].as_object().expect("members") {
            let got: BTreeSet<&str> = row(ops, shape)["members"]
                .as_array()
                .expect("members listed")
                .iter()
                .filter_map(|m| m["name"].as_str())
                .collect();
            let want: BTreeSet<&str> = names
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(got, want, "{shape}");
        }
        // No layer's own name is a row: each is a member of its shape.
        assert!(
            ops.as_array()
                .unwrap()
                .iter()
                .all(|r| !r["name"].as_str().unwrap_or("").contains("blocks.1")),
            "{ops}"
        );
        let note = json["baseline"]["nvtx_note"].as_str().unwrap_or("");
        assert!(
            note.contains("differ only in their numbers") && note.contains("DurNonChild"),
            "{note}"
        );
    }
}

#[test]
fn only_an_op_one_trace_lacks_is_new_and_a_growing_child_leaves_its_parents_unchanged() {
    let p = pair();
    let json = analyze(&[&p.baseline, &p.target], &[]);
    let c = &json["comparison"];
    let want = &p.t["versus_baseline"];
    for (name, status) in want["status"].as_object().unwrap() {
        assert_eq!(&row(&c["nvtx"], name)["status"], status, "{name}");
    }
    let new_or_removed: Vec<&str> = c["nvtx"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "NEW" || r["status"] == "REMOVED")
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(new_or_removed, ["broadcast_requests"]);
    for key in ["self_delta_us", "delta_us"] {
        for (name, d) in want[key].as_object().unwrap() {
            assert!(close(f(&row(&c["nvtx"], name)[key]), f(d)), "{name} {key}");
        }
    }
    for shape in want["status"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|n| n.contains("blocks.*"))
    {
        let r = row(&c["nvtx"], shape);
        assert_eq!(r["instances"], want["instances"], "{shape}");
        let members = r["members"].as_array().unwrap();
        assert_eq!(members.len(), 12, "layers 0-11 across both: {r}");
    }
    // The table, the top regressions, the hand-off and the conclusion rank by self time.
    let top = want["top_regression"].as_str().unwrap();
    assert_eq!(c["nvtx"][0]["name"], "aten::copy_", "{}", c["nvtx"][0]);
    assert_eq!(c["top_regressions"][0]["name"], top);
    let grew: Vec<&str> = strs(&c["top_regressions"], "name");
    assert!(
        !grew.contains(&"aten::to") && !grew.contains(&"aten::_to_copy"),
        "{grew:?}"
    );
    let handoff: Vec<&str> = strs(&c["handoff"]["top_regressing_ops"], "nvtx_name");
    assert_eq!(handoff.first(), Some(&top), "{handoff:?}");
    assert!(!handoff.contains(&"aten::to"), "{handoff:?}");
    let conclusion = c["conclusion"].as_str().unwrap_or("");
    assert!(
        conclusion.contains(&format!("grew most: {top}")),
        "{conclusion}"
    );
}

#[test]
fn captures_of_different_layers_are_flagged_as_covering_different_instances() {
    let p = pair();
    let c = &analyze(&[&p.baseline, &p.target], &[])["comparison"];
    let coverage: Vec<&str> = c["coverage"]
        .as_array()
        .expect("coverage")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(coverage.len(), 1, "{coverage:?}");
    let w = coverage[0];
    assert!(
        w.contains("different instances (layers, blocks) of 2 ops"),
        "{w}"
    );
    assert!(
        w.contains("FSDP::pre_forward (blocks.*._checkpoint_wrapped_module) (8 in the baseline, 8 in the target, 4 in both)"),
        "{w}"
    );
    // Not a workload difference: the gate's comparability list is left alone.
    assert!(
        c["comparability"].as_array().unwrap().is_empty(),
        "{}",
        c["comparability"]
    );
    // The same pair against itself covers the same instances.
    let same = &analyze(&[&p.target, &p.target], &[])["comparison"];
    assert!(
        same.get("coverage")
            .is_none_or(|v| v.as_array().is_some_and(Vec::is_empty)),
        "{same}"
    );
}

#[test]
fn the_trtllm_skill_profile_keeps_the_reference_names_ungrouped() {
    let p = pair();
    let json = analyze(&[&p.baseline, &p.target], &["--profile", "trtllm-skill"]);
    let names: Vec<&str> = strs(&json["comparison"]["nvtx"], "name");
    assert!(
        names.contains(&"FSDP::pre_forward (blocks.0._checkpoint_wrapped_module)"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains('*')), "{names:?}");
    let c = &json["comparison"];
    for key in ["coverage", "nvtx_note"] {
        assert!(c.get(key).is_none(), "{key}: {}", c[key]);
    }
    assert!(
        c["nvtx"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("self_delta_us").is_none() && r.get("members").is_none())
    );
}

// ---- the public mfu_2gpu_before export ----

/// One NVTX range as SQL reads it: rowid, thread, start, end, name.
type Range = (i64, i64, i64, i64, String);

/// The ranges the standard profile counts (push/pop and start/end, with or without payload,
/// with a name and an end), plain SQL.
fn ranges(path: &Path) -> Vec<Range> {
    let conn = Connection::open(path).unwrap();
    let mut st = conn
        .prepare(
            "SELECT n.rowid, n.globalTid, n.start, n.end, coalesce(n.text, s.value) FROM NVTX_EVENTS n \
             LEFT JOIN StringIds s ON s.id = n.textId \
             WHERE n.eventType IN (59, 60, 70, 71) AND n.end > 0 AND n.end >= n.start \
             AND coalesce(n.text, s.value) IS NOT NULL",
        )
        .unwrap();
    st.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The steady window `[start, end)` of a breakdown (its cycles are contiguous: checked).
fn window(b: &Value) -> (i64, i64) {
    let w = &b["steady"]["window"];
    let walls: f64 = b["step_wall_times_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .sum();
    assert!(
        close(walls, f(&b["steady"]["window_us"])),
        "cycles are contiguous"
    );
    (
        w["start_ns"].as_i64().unwrap(),
        w["end_ns"].as_i64().unwrap(),
    )
}

/// Overlapping the window, or starting in it (a zero-length range).
fn counted((ws, we): (i64, i64), r: &Range) -> bool {
    r.2 < we && (r.3 > ws || r.2 >= ws)
}

fn clipped((ws, we): (i64, i64), r: &Range) -> i64 {
    (r.3.min(we) - r.2.max(ws)).max(0)
}

/// The shapes of the ranges counted in the window.
fn shapes_in(path: &Path, w: (i64, i64)) -> BTreeSet<String> {
    ranges(path)
        .iter()
        .filter(|r| counted(w, r))
        .map(|r| shape(&r.4))
        .collect()
}

/// `mfu_2gpu_before` with every `blocks.N.` renamed `blocks.(N + 7).`: a capture of the same
/// step covering other blocks (blocks 9-26 where the export has 2-19).
fn other_blocks_copy(src: &Path, dir: &Path) -> PathBuf {
    let dst = writable_copy(src, &dir.join("mfu_2gpu_other_blocks.sqlite"));
    let mut conn = Connection::open(&dst).unwrap();
    let block = Regex::new(r"blocks\.(\d+)\.").unwrap();
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT rowid, text FROM NVTX_EVENTS WHERE text LIKE '%blocks.%'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!rows.is_empty());
    // One transaction: a commit per row would sync the file thousands of times.
    let tx = conn.transaction().unwrap();
    for (rowid, text) in rows {
        let shifted = block.replace_all(&text, |c: &regex::Captures| {
            format!("blocks.{}.", c[1].parse::<u32>().unwrap() + 7)
        });
        tx.execute(
            "UPDATE NVTX_EVENTS SET text = ?1 WHERE rowid = ?2",
            rusqlite::params![&*shifted, rowid],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    dst
}

#[test]
fn mfu_captures_of_other_blocks_show_no_new_or_removed_row_for_a_shape_both_have() {
    let dir = tempfile::TempDir::new().unwrap();
    let before = public_trace(MFU_BEFORE);
    let after = other_blocks_copy(&before, dir.path());
    let json = analyze(&[&before, &after], &[]);
    let b_shapes = shapes_in(&before, window(&json["baseline"]));
    let t_shapes = shapes_in(&after, window(&json["target"]));
    let both: BTreeSet<&String> = b_shapes.intersection(&t_shapes).collect();
    assert!(
        both.contains(&"FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)".to_string()),
        "{both:?}"
    );
    let rows = json["comparison"]["nvtx"].as_array().unwrap();
    for r in rows {
        let name = r["name"].as_str().unwrap_or("");
        if both.iter().any(|s| s.as_str() == name) {
            assert!(r["status"] != "NEW" && r["status"] != "REMOVED", "{r}");
        }
    }
    // Every row is one of the SQL shapes, and every shape both have is a row.
    let names: BTreeSet<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    for s in &both {
        assert!(names.contains(s.as_str()), "{s} has no row");
    }
    let fsdp = row(
        &json["comparison"]["nvtx"],
        "FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)",
    );
    let i = &fsdp["instances"];
    assert!(i["common"].as_u64() < i["baseline"].as_u64(), "{fsdp}");
    // The whole-window table groups the same way.
    let windowed = row(
        &json["comparison"]["window"]["nvtx"],
        "FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)",
    );
    assert!(
        windowed["status"] != "NEW" && windowed["status"] != "REMOVED",
        "{windowed}"
    );
    let coverage = json["comparison"]["coverage"]
        .as_array()
        .expect("coverage warned");
    assert!(
        coverage
            .iter()
            .any(|w| w.as_str().unwrap_or("").contains("FSDP::")),
        "{coverage:?}"
    );
}

#[test]
fn mfu_aten_to_self_time_is_its_total_minus_its_direct_childrens_from_sql() {
    let before = public_trace(MFU_BEFORE);
    let json = analyze(&[&before], &[]);
    let b = &json["baseline"];
    let w = window(b);
    // Per thread, in (start, rowid) order; a child of p: a range of p's thread inside p and
    // after it in that order, inside no other such range (its nearest enclosing range is p).
    let mut by_thread: HashMap<i64, Vec<Range>> = HashMap::new();
    for r in ranges(&before).into_iter().filter(|r| counted(w, r)) {
        by_thread.entry(r.1).or_default().push(r);
    }
    let (mut all, mut children) = (0i64, 0i64);
    for rs in by_thread.values_mut() {
        rs.sort_by_key(|r| (r.2, r.0));
        let rs: &[Range] = rs;
        let inside =
            |a: usize, b: usize, rs: &[Range]| a < b && rs[b].3 <= rs[a].3 && rs[b].2 >= rs[a].2;
        for p in 0..rs.len() {
            if shape(&rs[p].4) != "aten::to" {
                continue;
            }
            all += clipped(w, &rs[p]);
            let end = rs.partition_point(|r| r.2 <= rs[p].3);
            let within: Vec<usize> = (p + 1..end).filter(|&c| inside(p, c, rs)).collect();
            for &c in &within {
                if !within.iter().any(|&q| q != c && inside(q, c, rs)) {
                    children += clipped(w, &rs[c]);
                }
            }
        }
    }
    assert!(children > 0 && all > children, "{children} of {all}");
    let to = row(&b["nvtx_ops"], "aten::to");
    // Each instance counted once (one rank): self = total − children. The two ranks' copies
    // count once, at the longest, so the per-step total keeps the self share of all copies.
    let want = f(&to["us_per_step"]) * (all - children) as f64 / all as f64;
    assert!(
        close(f(&to["self_us_per_step"]), want),
        "{} vs {want}",
        to["self_us_per_step"]
    );
    assert_eq!(to["depth"], 0, "{to}");
    let to_copy = row(&b["nvtx_ops"], "aten::_to_copy");
    assert_eq!(to_copy["parent"], "aten::to", "{to_copy}");
}

/// One trace's hand-off lists its heaviest ops by self time, as its heading says: on mfu,
/// `aten::to` (21.4 ms per step in all, 0.14 ms its own) gives way to the `aten::copy_` inside it.
#[test]
fn the_single_trace_handoff_ranks_ops_by_self_time() {
    let json = analyze(&[&public_trace(MFU_BEFORE)], &[]);
    let b = &json["baseline"];
    let mut ops: Vec<(&str, f64)> = b["nvtx_ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), f(&r["self_us_per_step"])))
        .collect();
    ops.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let listed = strs(&b["handoff"]["top_ops"], "nvtx_name");
    let want: Vec<&str> = ops.iter().take(listed.len()).map(|o| o.0).collect();
    assert_eq!(listed, want);
    assert_eq!(listed[0], "aten::copy_");
    assert!(!listed.contains(&"aten::to"), "{listed:?}");
    let text = b["handoff"]["text"].as_str().unwrap();
    assert!(
        text.contains("top_ops (self µs/step, heaviest first):"),
        "{text}"
    );
}
