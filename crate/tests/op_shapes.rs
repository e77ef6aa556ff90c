//! Root cause's NVTX ops grouped by shape and nested as a tree (issue 40): names that differ
//! only in their numbers are one op, an op's self time is its time minus its direct children's
//! on the same thread, and the comparison ranks, labels and hands off by self time.
//!
//! Values come from what the generator placed (`indexed-layers-*`, `synth::answers`) and from
//! plain SQL over the public `mfu_2gpu_before` export with the tests' own name rule
//! (`common::nvtx_op_shape`) and nesting.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::Value;

use common::{
    describe, generated, nsys_lens, nvtx_op_name as op_name, nvtx_op_shape as shape, public_trace,
};

const MFU_BEFORE: &str = "GindaChen_nsys-ai__mfu_2gpu_before.sqlite";
/// The same job after a change: with `MFU_BEFORE`, the real pair nsys-ai's `diff` tests use.
const MFU_AFTER: &str = "GindaChen_nsys-ai__mfu_2gpu_after.sqlite";

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

/// The names (PyTorch's `emit_nvtx` suffixes dropped) of the ranges counted in the window, by
/// shape.
fn names_by_shape(path: &Path, w: (i64, i64)) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in ranges(path).iter().filter(|r| counted(w, r)) {
        out.entry(shape(&r.4))
            .or_default()
            .insert(op_name(&r.4).to_string());
    }
    out
}

/// Each name's time per step in the window, as the root cause counts it (`docs/spec.md` §3),
/// from the ranges SQL reads: each range clipped to the window; TP ranks' copies (the same name
/// in another process — `globalTid >> 24` — starting less than 100 µs after the first copy met)
/// count once, at the longest; divided by the window's step cycles.
fn us_per_step_by_name(path: &Path, w: (i64, i64), steps: usize) -> BTreeMap<String, f64> {
    let mut by_name: BTreeMap<String, Vec<&Range>> = BTreeMap::new();
    let all = ranges(path);
    for r in all.iter().filter(|r| counted(w, r)) {
        by_name
            .entry(op_name(&r.4).to_string())
            .or_default()
            .push(r);
    }
    by_name
        .into_iter()
        .map(|(name, mut rs)| {
            rs.sort_by_key(|r| (r.2, r.0));
            let (mut total, mut group) = (0i64, Vec::<&Range>::new());
            for r in rs {
                let joins = group.first().is_some_and(|first| {
                    r.2 - first.2 < 100_000 && group.iter().all(|g| g.1 >> 24 != r.1 >> 24)
                });
                if !joins {
                    total += group.iter().map(|g| clipped(w, g)).max().unwrap_or(0);
                    group.clear();
                }
                group.push(r);
            }
            total += group.iter().map(|g| clipped(w, g)).max().unwrap_or(0);
            (name, total as f64 / 1000.0 / steps as f64)
        })
        .collect()
}

/// Each shape's time per second of the kernel window (the first GPU operation's start to the
/// last one's end: kernels, copies, memsets), from the ranges SQL reads that start in it.
fn us_per_s_by_shape(path: &Path) -> BTreeMap<String, f64> {
    let conn = Connection::open(path).unwrap();
    let (mut start, mut end) = (i64::MAX, i64::MIN);
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let (s, e): (i64, i64) = conn
            .query_row(
                &format!("SELECT min(start), max(end) FROM {table}"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        (start, end) = (start.min(s), end.max(e));
    }
    let seconds = (end - start) as f64 / 1e9;
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for r in ranges(path).iter().filter(|r| r.2 >= start && r.2 < end) {
        *out.entry(shape(&r.4)).or_default() += (r.3 - r.2) as f64 / 1000.0 / seconds;
    }
    out
}

/// Asserts that a comparison row (or member) has the baseline and target figures SQL gives its
/// name (0 where a side lacks it), and returns them.
fn assert_both(r: &Value, b: &BTreeMap<String, f64>, t: &BTreeMap<String, f64>) -> (f64, f64) {
    let name = r["name"].as_str().unwrap();
    let (bv, tv) = (
        b.get(name).copied().unwrap_or(0.0),
        t.get(name).copied().unwrap_or(0.0),
    );
    assert!(close(f(&r["baseline_us_per_step"]), bv), "{r} vs {bv}");
    assert!(close(f(&r["target_us_per_step"]), tv), "{r} vs {tv}");
    (bv, tv)
}

/// The real pair (`mfu_2gpu_before` → `mfu_2gpu_after`): the same FSDP training step captured
/// before and after a change, the two 1-second slices covering other blocks (FSDP's
/// pre-forward: blocks 4-18 in the baseline's steady window, 9-22 in the target's). Every figure is recomputed from plain SQL over both
/// files: the ops (one row per shape, NEW or REMOVED only for a shape one window lacks), each
/// grouped op's instances and its members' time per step, the coverage warning, and the whole
/// windows' NVTX table.
#[test]
fn mfu_before_and_after_group_their_blocks_by_shape_as_plain_sql_does() {
    let before = public_trace(MFU_BEFORE);
    let after = public_trace(MFU_AFTER);
    let json = analyze(&[&before, &after], &[]);
    let (b, t) = (&json["baseline"], &json["target"]);
    let (wb, wt) = (window(b), window(t));
    let steps = |b: &Value| b["step_wall_times_us"].as_array().unwrap().len();
    let (b_names, t_names) = (names_by_shape(&before, wb), names_by_shape(&after, wt));
    let (b_time, t_time) = (
        us_per_step_by_name(&before, wb, steps(b)),
        us_per_step_by_name(&after, wt, steps(t)),
    );
    let c = &json["comparison"];
    let rows = c["nvtx"].as_array().unwrap();

    // One row per shape of either window; NEW / REMOVED only for a shape one lacks.
    let shapes: BTreeSet<&str> = b_names
        .keys()
        .chain(t_names.keys())
        .map(String::as_str)
        .collect();
    let listed: BTreeSet<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(listed, shapes);
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let want = match (b_names.contains_key(name), t_names.contains_key(name)) {
            (false, _) => Some("NEW"),
            (_, false) => Some("REMOVED"),
            _ => None,
        };
        match want {
            Some(status) => assert_eq!(r["status"], status, "{r}"),
            None => assert!(r["status"] != "NEW" && r["status"] != "REMOVED", "{r}"),
        }
    }

    // Grouped ops: their instances and members, each member's time per step.
    let mut differ: Vec<(usize, &str, [usize; 3])> = Vec::new();
    let empty = BTreeSet::new();
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let (bn, tn) = (
            b_names.get(name).unwrap_or(&empty),
            t_names.get(name).unwrap_or(&empty),
        );
        let names: BTreeSet<&String> = bn.union(tn).collect();
        if names.iter().all(|n| n.as_str() == name) {
            assert!(r.get("instances").is_none(), "{r}");
            continue;
        }
        let common = bn.intersection(tn).count();
        let want = [bn.len(), tn.len(), common];
        let i = &r["instances"];
        let got =
            [&i["baseline"], &i["target"], &i["common"]].map(|v| v.as_u64().unwrap() as usize);
        assert_eq!(got, want, "{name}");
        // Both windows have the op, and one has a name the other lacks.
        if !bn.is_empty() && !tn.is_empty() && bn != tn {
            differ.push((bn.len() + tn.len() - 2 * common, name, want));
        }
        let members = r["members"].as_array().unwrap();
        let listed: BTreeSet<&str> = members.iter().filter_map(|m| m["name"].as_str()).collect();
        assert_eq!(listed, names.iter().map(|n| n.as_str()).collect(), "{name}");
        let (mut b_sum, mut t_sum) = (0.0, 0.0);
        for m in members {
            let (bv, tv) = assert_both(m, &b_time, &t_time);
            (b_sum, t_sum) = (b_sum + bv, t_sum + tv);
        }
        assert!(close(f(&r["baseline_us_per_step"]), b_sum), "{r}");
        assert!(close(f(&r["target_us_per_step"]), t_sum), "{r}");
    }
    // The slices cover other blocks: FSDP's pre-forward in 15 blocks of the baseline's window,
    // 14 of the target's, 10 in both (SQL).
    let fsdp = "FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)";
    let (bn, tn) = (&b_names[fsdp], &t_names[fsdp]);
    assert!(
        bn.intersection(tn).count() < bn.len().min(tn.len()),
        "{bn:?} {tn:?}"
    );

    // The warning names the ops whose instances differ, most missing first, then by name.
    differ.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(y.1)));
    assert!(differ.iter().any(|d| d.1 == fsdp), "{differ:?}");
    let coverage: Vec<&str> = c["coverage"]
        .as_array()
        .expect("coverage warned")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let warning = coverage
        .iter()
        .find(|w| w.starts_with("the captures cover different instances"))
        .unwrap_or_else(|| panic!("{coverage:?}"));
    let plural = if differ.len() == 1 { "" } else { "s" };
    assert!(
        warning.contains(&format!(
            "of {} op{plural} both traces have: ",
            differ.len()
        )),
        "{warning}"
    );
    let examples: Vec<String> = differ
        .iter()
        .take(3)
        .map(|(_, name, [b, t, c])| {
            format!("{name} ({b} in the baseline, {t} in the target, {c} in both)")
        })
        .collect();
    assert!(
        warning.contains(&examples.join("; ")),
        "{warning} vs {examples:?}"
    );

    // The whole windows' NVTX table: every shape's time per second of kernel window.
    let (b_s, t_s) = (us_per_s_by_shape(&before), us_per_s_by_shape(&after));
    let windowed = c["window"]["nvtx"].as_array().unwrap();
    assert!(windowed.iter().any(|r| r["name"] == fsdp));
    for r in windowed {
        let (bv, tv) = assert_both(r, &b_s, &t_s);
        if bv > 0.0 && tv > 0.0 {
            assert!(r["status"] != "NEW" && r["status"] != "REMOVED", "{r}");
        }
    }
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
