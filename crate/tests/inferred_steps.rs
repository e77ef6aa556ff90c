//! Steps inferred from the kernel stream (issue 18 item 3) on a real export without any step
//! marker: `mfu_2gpu_before`, a 0.3 s slice of a FastVideo run on 2 GPUs (torchrun), whose
//! only collectives are `ncclDevKernel_SendRecv` and whose NVTX ranges are PyTorch ops and NCCL
//! calls, none of them a step.
//!
//! How the steps were read with plain SQL (the test repeats it): on each device the long
//! `flash_fwd_kernel` (> 1 ms, ≈ 7.8 ms) runs once per repeat, and between two consecutive ones
//! there are exactly 119 kernels, every time; each repeat also holds 2 `ncclDevKernel_SendRecv`.
//! The names of device 1's kernels (the busier device: 2017 kernels against 1993) equal the
//! kernel's 119 places earlier all along. A step starts at the place in the 119 where the GPU
//! idles longest on average (idle = start − the previous kernel's end).

use crate::common;

use std::ffi::OsStr;

use rusqlite::Connection;
use serde_json::Value;

use common::{describe, nsys_lens, public_trace, slowed_copy};

const MFU_BEFORE: &str = "GindaChen_nsys-ai__mfu_2gpu_before.sqlite";

fn analyze_json(path: &std::path::Path) -> Value {
    let args = [
        OsStr::new("analyze"),
        path.as_os_str(),
        OsStr::new("--json"),
    ];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)))
}

fn one(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
}

/// Device 1's kernels numbered by start (`rn` from 1), with each one's name and the previous
/// kernel's end.
const DEVICE1: &str = "WITH k AS (SELECT row_number() OVER (ORDER BY start) rn, start, end, \
     shortName, lag(end) OVER (ORDER BY start) pe FROM CUPTI_ACTIVITY_KIND_KERNEL \
     WHERE deviceId = 1)";

#[test]
fn mfu_2gpu_before_steps_are_inferred_from_its_119_kernel_repeat() {
    let path = public_trace(MFU_BEFORE);
    let conn = Connection::open(&path).unwrap();
    // The period, read from the long flash-attention kernel: 119 kernels between each two.
    let spacing: Vec<i64> = conn
        .prepare(&format!(
            "{DEVICE1}, f AS (SELECT rn FROM k JOIN StringIds s ON s.id = k.shortName \
             WHERE s.value = 'flash_fwd_kernel' AND end - start > 1000000) \
             SELECT lead(rn) OVER (ORDER BY rn) - rn FROM f"
        ))
        .unwrap()
        .query_map([], |r| r.get::<_, Option<i64>>(0))
        .unwrap()
        .filter_map(|r| r.unwrap())
        .collect();
    assert_eq!(spacing.len(), 16);
    assert!(spacing.iter().all(|&s| s == 119), "{spacing:?}");
    // Every kernel's name equals the one 119 earlier.
    let mismatches = one(
        &conn,
        &format!(
            "{DEVICE1} SELECT count(*) FROM k a JOIN k b ON b.rn = a.rn + 119 WHERE a.shortName != b.shortName"
        ),
    );
    assert_eq!(mismatches, 0);
    // The cut: the place in the 119 with the longest mean idle before its kernel.
    let offset = one(
        &conn,
        &format!(
            "{DEVICE1} SELECT (rn - 1) % 119 r FROM k WHERE pe IS NOT NULL GROUP BY r ORDER BY avg(start - pe) DESC LIMIT 1"
        ),
    );
    let kernels = one(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1",
    );
    let complete = (kernels - offset) / 119;
    let step_start = |k: i64| {
        one(
            &conn,
            &format!(
                "{DEVICE1} SELECT start FROM k WHERE rn = {}",
                offset + 1 + k * 119
            ),
        )
    };
    let sendrecv_per_step = one(
        &conn,
        &format!(
            "{DEVICE1} SELECT count(*) FROM k JOIN StringIds s ON s.id = k.shortName \
             WHERE s.value = 'ncclDevKernel_SendRecv' AND rn > {offset} AND rn <= {offset} + 119"
        ),
    );

    let json = analyze_json(&path);
    let b = &json["baseline"];
    let steps = &b["steps"];
    assert_eq!(steps["source"], "inferred", "{steps}");
    assert_eq!(steps["method"], "kernel-sequence");
    assert_eq!(
        steps["confidence"].as_f64(),
        Some(1.0),
        "no mismatch in SQL"
    );
    assert_eq!(steps["period_kernels"], 119);
    assert_eq!(steps["device"], 1);
    assert_eq!(steps["count"].as_i64(), Some(complete));
    assert_eq!(complete, 16);
    assert_eq!(
        steps["collectives_per_step"],
        serde_json::json!([["ncclDevKernel_SendRecv", sendrecv_per_step]])
    );
    assert_eq!(sendrecv_per_step, 2);
    assert_eq!(b["iteration_method"], "inferred");
    assert_eq!(
        b["benchmark_window"]["start_ns"].as_i64(),
        Some(step_start(0))
    );
    // Per-step figures: 15 complete cycles (a step's start to the next one's start).
    assert_eq!(b["steady"]["per_step_divisor"], 15);
    let wall = b["wall_time_per_step_us"].as_f64().unwrap_or(f64::NAN);
    let expected = (step_start(15) - step_start(0)) as f64 / 1000.0 / 15.0;
    assert!((wall - expected).abs() < 1e-6, "{wall} vs {expected}");
    let flash = b["kernel_ops"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "flash_fwd_kernel"))
        .cloned()
        .unwrap_or_default();
    // Two flash-attention kernels per repeat on each of the 2 devices.
    assert_eq!(flash["calls_per_step"].as_f64(), Some(4.0), "{flash}");
}

/// What the 119-kernel repeat of `mfu_2gpu_before` is (docs/inferred-steps.md): no larger unit
/// (every kernel equals the one 119 earlier, so nothing is left for a step-scale period to line
/// up), no distinct pause before a repeat (the longest mean idle before a place in the 119 is
/// less than twice the next one), and no backward or optimizer kernel in the whole capture: the
/// repeats are transformer blocks of one forward pass, reported as `unit: "repeat"`.
#[test]
fn mfu_2gpu_before_repeat_is_reported_as_back_to_back_blocks_not_steps() {
    let path = public_trace(MFU_BEFORE);
    let conn = Connection::open(&path).unwrap();
    let means: Vec<f64> = conn
        .prepare(&format!(
            "{DEVICE1} SELECT avg(start - pe) m FROM k WHERE pe IS NOT NULL \
             GROUP BY (rn - 1) % 119 ORDER BY m DESC LIMIT 2"
        ))
        .unwrap()
        .query_map([], |r| r.get::<_, f64>(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let ratio = means[0] / means[1];
    assert!(ratio < 2.0, "{means:?}");
    let backward = one(
        &conn,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName \
         WHERE s.value LIKE '%bwd%' OR s.value LIKE '%backward%' OR s.value LIKE '%adam%' \
         OR s.value LIKE '%multi_tensor%'",
    );
    assert_eq!(backward, 0);
    // The collective recurs with the sequence's period, twice per repeat: 104 then 15 kernels.
    let spacing: Vec<i64> = conn
        .prepare(&format!(
            "{DEVICE1}, c AS (SELECT rn FROM k JOIN StringIds s ON s.id = k.shortName \
             WHERE s.value = 'ncclDevKernel_SendRecv') \
             SELECT lead(rn) OVER (ORDER BY rn) - rn FROM c"
        ))
        .unwrap()
        .query_map([], |r| r.get::<_, Option<i64>>(0))
        .unwrap()
        .filter_map(|r| r.unwrap())
        .collect();
    assert!(
        spacing
            .chunks(2)
            .all(|p| p.iter().sum::<i64>() == 119 || p.len() == 1),
        "{spacing:?}"
    );

    let steps = &analyze_json(&path)["baseline"]["steps"];
    assert_eq!(steps["unit"], "repeat", "{steps}");
    assert!(steps.get("block_kernels").is_none(), "{steps}");
    let got = steps["pause_ratio"].as_f64().unwrap_or(f64::NAN);
    assert!(
        (got - (ratio * 100.0).round() / 100.0).abs() < 1e-9,
        "{got} vs {ratio}"
    );
    // detect's kernel pass finds the same unit.
    let args = [OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let detect: Value = serde_json::from_slice(&out.stdout).unwrap();
    let inferred = &detect["inferred_steps"];
    assert_eq!(inferred["period_kernels"], 119);
    assert_eq!(inferred["repeats"], steps["count"]);
    assert_eq!(inferred["unit"], "repeat");
    assert_eq!(inferred["pause_ratio"], steps["pause_ratio"]);
}

fn compare_json(baseline: &std::path::Path, target: &std::path::Path) -> Value {
    let args = [
        OsStr::new("analyze"),
        baseline.as_os_str(),
        target.as_os_str(),
        OsStr::new("--json"),
    ];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &out)))
}

/// Kernel time of `kernel` per second of kernel window, from SQL: its total time over the span
/// from the first kernel start to the last kernel end, in µs per s.
fn sql_us_per_s(path: &std::path::Path, kernel: &str) -> f64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row(
        "SELECT (SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds s ON s.id = k.shortName WHERE s.value = ?1) / 1000.0 \
              / ((max(end) - min(start)) / 1e9) FROM CUPTI_ACTIVITY_KIND_KERNEL",
        [kernel],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn mfu_2gpu_before_against_a_copy_with_layer_norm_slower_names_layer_norm() {
    let dir = tempfile::TempDir::new().unwrap();
    let before = public_trace(MFU_BEFORE);
    let op = "vectorized_layer_norm_kernel";
    let slow = slowed_copy(&before, dir.path(), op, 200_000);
    let json = compare_json(&before, &slow);
    let c = &json["comparison"];
    // Per step (inferred steps): layer norms per repeat (both devices, from SQL: against the
    // long flash-attention kernel, once per repeat per device), 200 µs more each.
    let conn = Connection::open(&before).unwrap();
    let per_repeat_per_device = one(
        &conn,
        "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName \
         WHERE s.value = 'vectorized_layer_norm_kernel') / (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
         JOIN StringIds s ON s.id = k.shortName WHERE s.value = 'flash_fwd_kernel' AND end - start > 1000000)",
    );
    assert_eq!(per_repeat_per_device, 3);
    assert_eq!(c["kernels"][0]["name"], op, "{}", c["kernels"][0]);
    let per_step = c["kernels"][0]["delta_us"].as_f64().unwrap_or(f64::NAN);
    let expected = (2 * per_repeat_per_device) as f64 * 200.0;
    assert!(
        (per_step - expected).abs() < 1e-6,
        "{per_step} vs {expected}"
    );
    // Over the whole windows: the same op is the top regression, at its SQL value per second.
    let w = &c["window"];
    assert_eq!(w["top_regression"]["kind"], "kernel");
    assert_eq!(w["top_regression"]["name"], op);
    let target = w["top_regression"]["target_us_per_step"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let baseline = w["top_regression"]["baseline_us_per_step"]
        .as_f64()
        .unwrap_or(f64::NAN);
    assert!((target - sql_us_per_s(&slow, op)).abs() < 1e-6, "{target}");
    assert!(
        (baseline - sql_us_per_s(&before, op)).abs() < 1e-6,
        "{baseline}"
    );
    assert!(
        w["note"]
            .as_str()
            .unwrap_or("")
            .starts_with("Window comparison: alongside"),
        "{}",
        w["note"]
    );
}

#[test]
fn traces_without_steps_are_compared_over_their_windows_and_name_the_slowed_kernel() {
    // nvFuser's benchmark export: no step marker, no allreduce, no repeating kernel sequence.
    let dir = tempfile::TempDir::new().unwrap();
    let before = public_trace("NVIDIA_Fuser__ee4fcf3__report1.sqlite");
    let op = "nvfuser_pointwise_f0_c1_r0_g0";
    let slow = slowed_copy(&before, dir.path(), op, 500_000);
    let json = compare_json(&before, &slow);
    assert!(
        json["baseline"]["steps"].is_null(),
        "{}",
        json["baseline"]["steps"]
    );
    let c = &json["comparison"];
    let conclusion = c["conclusion"].as_str().unwrap_or("");
    assert!(
        conclusion.starts_with("Window comparison: no per-step figures in baseline and target"),
        "{conclusion}"
    );
    assert!(
        conclusion.contains(&format!("kernel `{op}`")),
        "{conclusion}"
    );
    assert_eq!(c["primary_cause"], "GPU execution");
    assert_eq!(c["window"]["top_regression"]["name"], op);
    let target = c["window"]["top_regression"]["target_us_per_step"]
        .as_f64()
        .unwrap_or(f64::NAN);
    assert!((target - sql_us_per_s(&slow, op)).abs() < 1e-6, "{target}");
    // Idle time by cause, per second of window: the drill-down's own attribution of the
    // baseline, summed over devices by cause and divided by the kernel window from SQL.
    let args = [
        OsStr::new("drill"),
        before.as_os_str(),
        OsStr::new("--json"),
    ];
    let out = nsys_lens(args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    let drill: Value = serde_json::from_slice(&out.stdout).unwrap();
    let conn = Connection::open(&before).unwrap();
    let window_s = one(
        &conn,
        "SELECT max(end) - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL",
    ) as f64
        / 1e9;
    // Its launching thread is on a CPU through most gaps (SCHED_EVENTS): untraced code ran.
    let busy_ns: i64 = drill["idle"]["per_device"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["causes"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["kind"] == "cpu_busy")
        .map(|c| c["ns"].as_i64().unwrap_or(0))
        .sum();
    assert!(busy_ns > 0);
    let row = c["window"]["idle_causes"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "cpu_busy"))
        .cloned()
        .unwrap_or_default();
    let got = row["baseline_us_per_step"].as_f64().unwrap_or(f64::NAN);
    let want = busy_ns as f64 / 1000.0 / window_s;
    assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    // The hand-off follows: the slowed kernel leads it.
    assert_eq!(
        c["handoff"]["top_regressing_ops"][0]["nvtx_name"], op,
        "{}",
        c["handoff"]
    );
}

/// The starts of the `cudaGraphLaunch*` calls of a generated trace (one process), by SQL.
fn graph_launch_starts(path: &std::path::Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    conn.prepare(
        "SELECT r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
         WHERE s.value LIKE 'cudaGraphLaunch%' ORDER BY r.start",
    )
    .unwrap()
    .query_map([], |r| r.get::<_, i64>(0))
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

/// A trace whose step ranges no marker reads and that launches one CUDA graph per step: the
/// launches mark the steps (each from one launch to the next), in `detect` and `analyze`, with
/// node-level tracing (`cuda-graphs`: 3 eager context steps, then 40 graph steps) and with
/// graph-level tracing (`capture-graph-level`: the graphs' kernels are not in the kernel table).
#[test]
fn cuda_graph_launches_mark_the_steps_of_a_trace_without_markers() {
    use nsys_lens::synth::{GenOptions, MarkerStyle, generate_with_markers};
    let dir = tempfile::TempDir::new().unwrap();
    for (scenario, launches_key) in [
        ("cuda-graphs", "/cuda_graphs/graph_launches"),
        ("capture-graph-level", "/capture/graph_launches"),
    ] {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        let opts = GenOptions { scale: 1, seed: 9 };
        let answers = generate_with_markers(scenario, &path, &opts, MarkerStyle::Unmarked)
            .unwrap_or_else(|e| panic!("{scenario}: {e}"));
        let launches = answers.pointer(launches_key).and_then(Value::as_u64);
        let starts = graph_launch_starts(&path);
        assert_eq!(Some(starts.len() as u64), launches, "{scenario}");
        let mut intervals: Vec<i64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        intervals.sort_unstable();
        let median = intervals[intervals.len() / 2];

        let args = [OsStr::new("detect"), path.as_os_str(), OsStr::new("--json")];
        let out = nsys_lens(args);
        assert!(out.status.success(), "{}", describe(&args, &out));
        let detect: Value = serde_json::from_slice(&out.stdout).unwrap();
        let unit = &detect["inferred_steps"];
        assert_eq!(unit["method"], "graph-launch", "{scenario}: {unit}");
        assert_eq!(
            unit["repeats"].as_u64(),
            launches.map(|n| n - 1),
            "{scenario}"
        );
        assert_eq!(unit["interval_ns"].as_i64(), Some(median), "{scenario}");

        let b = &analyze_json(&path)["baseline"];
        assert_eq!(b["steps"]["method"], "graph-launch", "{scenario}");
        assert_eq!(b["steps"]["count"].as_u64(), launches.map(|n| n - 1));
        assert_eq!(b["iteration_method"], "inferred");
        // Per-step wall time over the complete cycles: first launch to the last step's start.
        let cycles = starts.len() - 2;
        let want = (starts[cycles] - starts[0]) as f64 / 1000.0 / cycles as f64;
        let wall = b["wall_time_per_step_us"].as_f64().unwrap_or(f64::NAN);
        assert!((wall - want).abs() < 1e-6, "{scenario}: {wall} vs {want}");
    }
}
