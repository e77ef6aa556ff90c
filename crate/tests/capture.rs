//! The capture checks (`capture` in `detect --json`) against the generator's answers for the
//! captures they must flag, and on every public export against what its rows say, read here
//! with plain SQL (joins and all) and brute force, independently of the loader and the sweep.

use crate::common::{self, has_table};

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use nsys_lens::detect::capture::CaptureReport;
use nsys_lens::detect::{DetectConfig, DetectReport, detect};
use nsys_lens::trace::{LoadOptions, load_path};

fn detect_file(path: &Path) -> DetectReport {
    let trace = load_path(path, LoadOptions::detect()).expect("load");
    let cfg = DetectConfig {
        file_label: path.display().to_string(),
        ..DetectConfig::default()
    };
    detect(&trace, &cfg).expect("detect")
}

fn status(capture: &CaptureReport, id: &str) -> String {
    let check = capture
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    serde_json::to_value(check.status)
        .expect("json")
        .as_str()
        .expect("status")
        .to_string()
}

fn assert_statuses(capture: &CaptureReport, answers: &Value, what: &str) {
    let want = answers["capture"]["status"]
        .as_object()
        .expect("statuses in the answers");
    for (id, s) in want {
        assert_eq!(&status(capture, id), s, "{what}: check {id}");
    }
}

#[test]
fn a_46_kernel_2_ms_capture_is_flagged_too_short_beside_its_verdict() {
    let (_dir, path, answers) = common::generated("capture-short", 1, 7);
    let report = detect_file(&path);
    assert_statuses(&report.capture, &answers, "capture-short");
    assert_eq!(report.trace.kernels, answers["capture"]["kernels"]);
    let window = answers["capture"]["window_ns"].as_i64().expect("window");
    assert_eq!(report.window.end_ns - report.window.start_ns, window);
    // The verdict stays the reference's, but never again with no warning.
    assert!(
        report.warnings.iter().any(|w| w.contains("too short")),
        "{:?}",
        report.warnings
    );
    assert!(report.summary.contains("Caution"), "{}", report.summary);
}

#[test]
fn a_jit_warm_up_at_the_start_is_flagged_with_the_steady_window_after_it() {
    for seed in [3, 11] {
        let (_dir, path, answers) = common::generated("capture-warmup", 1, seed);
        let report = detect_file(&path);
        let cap = &report.capture;
        let want = &answers["capture"];
        assert_statuses(cap, &answers, "capture-warmup");
        let fig = cap.warmup.expect("warm-up figures");
        assert_eq!(
            Value::from(fig.idle_ns),
            want["idle_ns"],
            "idle between kernels"
        );
        assert_eq!(
            Value::from(fig.warmup_ns),
            want["warmup_ns"],
            "idle covered by warm-up"
        );
        let steady = cap.steady_window.as_ref().expect("steady window");
        assert_eq!(
            Value::from(steady.start_ns),
            want["steady_window"]["start_ns"]
        );
        assert_eq!(Value::from(steady.end_ns), want["steady_window"]["end_ns"]);
        let util = want["steady_window"]["gpu_utilization"]
            .as_f64()
            .expect("utilization");
        assert!((steady.gpu_utilization - util).abs() < 1e-12, "{steady:?}");
        // The whole window reads host-bound; the steady one does not.
        assert_eq!(report.verdict, "YES");
        assert_eq!(steady.verdict, "NO");
        // The command it gives measures the same window with the full verdict.
        let trace = load_path(&path, LoadOptions::detect()).expect("load");
        let cfg = DetectConfig {
            window: Some((steady.start_ns, steady.end_ns)),
            ..DetectConfig::default()
        };
        let windowed = detect(&trace, &cfg).expect("detect in the steady window");
        let idle = windowed.aggregate_metrics.gpu_idle_ratio.expect("M1");
        assert!(
            (idle - steady.gpu_idle_ratio).abs() < 1e-9,
            "{idle} vs {steady:?}"
        );
        assert!(
            steady
                .command
                .contains(&format!("--window {}:{}", steady.start_ns, steady.end_ns))
        );
        let markers = |id: &str| {
            cap.checks
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.evidence.clone())
                .unwrap_or_default()
        };
        let gc = want["gc_ranges"].as_u64().expect("gc");
        assert!(markers("gc_markers").starts_with(&format!("{gc} ")));
        let gil = want["gil_ranges"].as_u64().expect("gil");
        assert!(markers("gil_markers").starts_with(&format!("{gil} ")));
        assert!(report.warnings.iter().any(|w| w.contains("warm-up")));
    }
}

#[test]
fn graph_level_tracing_and_a_capture_without_nvtx_name_their_flags() {
    for scenario in ["capture-graph-level", "capture-no-nvtx"] {
        let (_dir, path, answers) = common::generated(scenario, 1, 5);
        let report = detect_file(&path);
        assert_statuses(&report.capture, &answers, scenario);
    }
    let (_dir, path, _) = common::generated("capture-graph-level", 1, 5);
    let graph = detect_file(&path);
    let fix = graph
        .capture
        .checks
        .iter()
        .find(|c| c.id == "cuda_graph_trace")
        .and_then(|c| c.fix.clone());
    assert_eq!(fix.as_deref(), Some("nsys profile --cuda-graph-trace=node"));
    let (_dir, path, _) = common::generated("capture-no-nvtx", 1, 5);
    let bare = detect_file(&path);
    let fix = bare
        .capture
        .checks
        .iter()
        .find(|c| c.id == "nvtx")
        .and_then(|c| c.fix.clone())
        .unwrap_or_default();
    assert!(fix.contains("-t cuda,nvtx") && fix.contains("TLLM_LLMAPI_ENABLE_NVTX=1"));
}

#[test]
fn launch_calls_traced_without_kernel_records_get_the_flush_fix_not_cuda_tracing() {
    let path = common::public_trace("ZhangXin8069_qcu__test_report1.e5c172f.sqlite");
    let conn = open(&path);
    let launches: i64 = conn
        .query_row(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
             WHERE s.value LIKE 'cudaLaunch%' OR s.value LIKE 'cuLaunch%' OR s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cuGraphLaunch%'",
            [],
            |r| r.get(0),
        )
        .expect("launch calls");
    assert!(launches > 0);
    let trace = load_path(&path, LoadOptions::detect()).expect("load");
    let err = detect(&trace, &DetectConfig::default()).expect_err("no kernels");
    let text = err.to_string();
    assert!(
        text.contains(&format!("{launches} kernel-launch API calls")),
        "{text}"
    );
    assert!(text.contains("--cuda-flush-interval"), "{text}");
    assert!(!text.contains("Capture with CUDA tracing on"), "{text}");
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open")
}

/// Rows of `sql` as `(start, end, name)`.
fn spans(conn: &Connection, sql: &str) -> Vec<(i64, i64, String)> {
    let mut stmt = conn.prepare(sql).expect("prepare");
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<i64>>(0)?.unwrap_or(0),
            r.get::<_, Option<i64>>(1)?.unwrap_or(0),
            r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        ))
    })
    .expect("query")
    .map(|r| r.expect("row"))
    .collect()
}

/// The issue's warm-up rules written against names: module loading and its lazy lookups,
/// run-time compilers, and NVTX compile / autotune ranges (`compiled` is compiled code running).
fn module_load(name: &str) -> bool {
    [
        "cuModuleLoad",
        "cuModuleUnload",
        "cuLibraryLoad",
        "cuLibraryUnload",
        "cuModuleGetFunction",
        "cuLibraryGetKernel",
        "cuLibraryGetModule",
        "cudaGetFuncBySymbol",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

fn jit_call(name: &str) -> bool {
    ["nvrtc", "cuLink", "nvJitLink", "nvPTXCompiler"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// A compile range by its words outside file paths (DLProf's dict texts name
/// `torch/_jit_internal.py` in their call stacks: no compilation).
fn jit_range(name: &str) -> bool {
    let name = name.to_lowercase();
    let lower = name
        .split(|c: char| c.is_whitespace() || "'\"[](){},;".contains(c))
        .filter(|w| !w.contains('/') && !w.contains('\\') && !w.contains(".py"))
        .collect::<Vec<_>>()
        .join(" ");
    let compile = lower
        .match_indices("compile")
        .any(|(i, m)| !lower[i + m.len()..].starts_with('d'));
    compile || lower.contains("nvrtc") || lower.contains("jit") || lower.contains("autotun")
}

/// Per device, the gaps between its merged GPU-work intervals (kernels, copies, memsets, graph
/// replays; zero-length rows skipped).
fn device_gaps(conn: &Connection) -> (Vec<(i64, i64)>, (i64, i64)) {
    let (rows, hull) = common::gpu_work_rows(conn, "WHERE \"end\" > start");
    let mut gaps = Vec::new();
    let mut open: Option<(i64, i64)> = None;
    for (device, s, e) in rows {
        match open {
            Some((d, busy)) if d == device => {
                if s > busy {
                    gaps.push((busy, s));
                }
                open = Some((d, busy.max(e)));
            }
            _ => open = Some((device, e)),
        }
    }
    (gaps, hull)
}

/// Time of `[s, e)` covered by the union of `spans`, cut at every span boundary.
fn covered(spans: &[(i64, i64)], s: i64, e: i64) -> i64 {
    let mut cuts = vec![s, e];
    for &(a, b) in spans.iter().filter(|&&(a, b)| a < e && b > s) {
        cuts.extend([a.clamp(s, e), b.clamp(s, e)]);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .filter(|w| spans.iter().any(|&(a, b)| a <= w[0] && w[1] <= b))
        .map(|w| w[1] - w[0])
        .sum()
}

/// The warm-up spans of an export, by the rules above: module loads and compiles, NVTX compile
/// ranges, and launch calls of ≥ 5 ms starting in the first tenth of the kernel window or by
/// the end of the last load or compile.
fn warmup_spans(conn: &Connection, hull: (i64, i64)) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut launches = Vec::new();
    if has_table(conn, "CUPTI_ACTIVITY_KIND_RUNTIME") {
        let calls = spans(
            conn,
            "SELECT r.start, r.\"end\", s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId",
        );
        for (s, e, name) in calls {
            if e <= s {
                continue;
            }
            if module_load(&name) || jit_call(&name) {
                out.push((s, e));
            } else if (name.starts_with("cudaLaunch")
                || name.starts_with("cuLaunch")
                || name.contains("GraphLaunch"))
                && e - s >= 5_000_000
            {
                launches.push((s, e));
            }
        }
    }
    if has_table(conn, "NVTX_EVENTS") {
        let ranges = spans(
            conn,
            "SELECT n.start, n.\"end\", coalesce(n.text, s.value) FROM NVTX_EVENTS n \
             LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60, 70, 71)",
        );
        out.extend(
            ranges
                .into_iter()
                .filter(|(s, e, name)| e > s && jit_range(name))
                .map(|(s, e, _)| (s, e)),
        );
    }
    let loads_end = out.iter().map(|s| s.1).max().unwrap_or(i64::MIN);
    let early = hull.0 + ((hull.1 - hull.0) as f64 * 0.1) as i64;
    out.extend(launches.into_iter().filter(|l| l.0 <= early.max(loads_end)));
    out
}

/// The GPU operations of an export by table, counted by plain SQL.
#[derive(Debug)]
struct GpuOps {
    kernels: i64,
    replays: i64,
    copies: i64,
    memsets: i64,
}

impl GpuOps {
    fn of(conn: &Connection) -> GpuOps {
        let rows = |table: &str| {
            if has_table(conn, table) {
                count(conn, &format!("SELECT count(*) FROM {table}"))
            } else {
                0
            }
        };
        GpuOps {
            kernels: rows("CUPTI_ACTIVITY_KIND_KERNEL"),
            replays: rows("CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
            copies: rows("CUPTI_ACTIVITY_KIND_MEMCPY"),
            memsets: rows("CUPTI_ACTIVITY_KIND_MEMSET"),
        }
    }

    fn total(&self) -> i64 {
        self.kernels + self.replays + self.copies + self.memsets
    }

    /// How the length check words them: the total, then each kind present (kernels always).
    fn phrase(&self) -> String {
        let n = |v: i64, one: &str, many: &str| {
            let digits = v.to_string();
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            format!("{grouped} {}", if v == 1 { one } else { many })
        };
        let mut kinds = vec![n(self.kernels, "kernel", "kernels")];
        for (v, one, many) in [
            (self.replays, "graph replay", "graph replays"),
            (self.copies, "copy", "copies"),
            (self.memsets, "memset", "memsets"),
        ] {
            if v > 0 {
                kinds.push(n(v, one, many));
            }
        }
        format!(
            "{} ({})",
            n(self.total(), "GPU operation", "GPU operations"),
            kinds.join(", ")
        )
    }
}

fn check<'c>(capture: &'c CaptureReport, id: &str) -> &'c nsys_lens::detect::capture::CaptureCheck {
    capture
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn every_public_exports_capture_checks_follow_from_its_rows() {
    for path in common::public_exports_with_kernels() {
        let what = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let conn = open(&path);
        let report = detect_file(&path);
        let cap = &report.capture;

        // Length: every GPU operation (kernels, replays, copies, memsets) and their hull; few
        // operations are short only in a window under 1 s.
        let ops = GpuOps::of(&conn);
        let (gaps, hull) = device_gaps(&conn);
        let window = hull.1 - hull.0;
        let short = (ops.total() < 1000 && window < 1_000_000_000) || window < 100_000_000;
        let want = if short { "warn" } else { "ok" };
        assert_eq!(status(cap, "length"), want, "{what}: length ({ops:?})");
        let evidence = &check(cap, "length").evidence;
        assert!(evidence.contains(&ops.phrase()), "{what}: {evidence}");

        // NVTX: warn when the table is absent or holds no range.
        let ranges = if has_table(&conn, "NVTX_EVENTS") {
            count(
                &conn,
                "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)",
            )
        } else {
            0
        };
        let want = if ranges == 0 { "warn" } else { "ok" };
        assert_eq!(status(cap, "nvtx"), want, "{what}: nvtx ({ranges} ranges)");

        // Capture range: META_DATA_CAPTURE's START_TRIGGER.
        let trigger: Option<String> = if has_table(&conn, "META_DATA_CAPTURE") {
            conn.query_row(
                "SELECT value FROM META_DATA_CAPTURE WHERE name = 'START_TRIGGER'",
                [],
                |r| r.get(0),
            )
            .ok()
        } else {
            None
        };
        let want = match trigger.as_deref() {
            None => "unknown",
            Some("Immediate") => "warn",
            Some(_) => "ok",
        };
        assert_eq!(status(cap, "capture_range"), want, "{what}: capture range");

        // GC / GIL markers: ranges named so.
        if ranges > 0 {
            let named = |like: &str| {
                count(
                    &conn,
                    &format!(
                        "SELECT count(*) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId \
                         WHERE n.eventType IN (59, 60, 70, 71) AND coalesce(n.text, s.value) LIKE '{like}'"
                    ),
                )
            };
            let gc = if named("%python gc%") > 0 {
                "ok"
            } else {
                "unknown"
            };
            assert_eq!(status(cap, "gc_markers"), gc, "{what}: gc");
            let gil = named("%waiting for gil%") + named("%holding gil%");
            let want = if gil > 0 { "ok" } else { "unknown" };
            assert_eq!(status(cap, "gil_markers"), want, "{what}: gil");
        }

        // Warm-up: idle between kernels covered by the warm-up spans, over every gap. The
        // tool reads the largest gaps only, so its figure is a lower bound of this one.
        let spans = warmup_spans(&conn, hull);
        let idle: i64 = gaps.iter().map(|g| g.1 - g.0).sum();
        let warm: i64 = gaps.iter().map(|g| covered(&spans, g.0, g.1)).sum();
        let fig = cap.warmup.expect("warm-up figures");
        assert_eq!(fig.idle_ns, idle, "{what}: idle between kernels");
        assert!(fig.warmup_ns <= warm, "{what}: {} > {warm}", fig.warmup_ns);
        // The tool reads each device's 64 largest gaps: warm-up spans over thousands of
        // µs-sized gaps (a copy-filled run's short idle stretches) escape it by up to 2 %.
        assert!(
            warm - fig.warmup_ns <= idle / 50,
            "{what}: the largest gaps miss {} of {warm} ns of warm-up",
            warm - fig.warmup_ns
        );
        let share = if idle > 0 {
            warm as f64 / idle as f64
        } else {
            0.0
        };
        let want = if share >= 0.5 { "warn" } else { "ok" };
        assert_eq!(
            status(cap, "warmup"),
            want,
            "{what}: warm-up share {share:.3}"
        );

        // CUDA graphs: warn when graph launches were traced at graph level.
        let mode: Option<String> = if has_table(&conn, "META_DATA_CAPTURE") {
            conn.query_row(
                "SELECT value FROM META_DATA_CAPTURE WHERE name = 'CUDA_GRAPH_TRACE_OPTIONS:MODE'",
                [],
                |r| r.get(0),
            )
            .ok()
        } else {
            None
        };
        let graph_names = count(
            &conn,
            "SELECT count(*) FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'",
        );
        let want = match (mode.as_deref(), graph_names > 0) {
            (Some("Graph"), true) => "warn",
            (None, true) => "unknown",
            _ => "ok",
        };
        assert_eq!(status(cap, "cuda_graph_trace"), want, "{what}: graph trace");

        // Kernel records and their launch calls.
        let launches = if has_table(&conn, "CUPTI_ACTIVITY_KIND_RUNTIME") {
            count(
                &conn,
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
                 WHERE s.value LIKE 'cudaLaunch%' OR s.value LIKE 'cuLaunch%' OR s.value LIKE 'cudaGraphLaunch%' OR s.value LIKE 'cuGraphLaunch%'",
            )
        } else {
            0
        };
        let want = if launches > 0 { "ok" } else { "warn" };
        assert_eq!(
            status(cap, "kernel_records"),
            want,
            "{what}: {launches} launch calls"
        );

        // CPU samples and scheduling of the processes that launch kernels (a thread's process
        // is its globalTid's bits above the 24 of the thread id).
        let of_launchers = |table: &str| {
            if !has_table(&conn, table) {
                return None;
            }
            Some(count(
                &conn,
                &format!(
                    "SELECT count(*) FROM {table} WHERE globalTid >> 24 IN \
                     (SELECT globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_KERNEL)"
                ),
            ))
        };
        let samples = has_table(&conn, "SAMPLING_CALLCHAINS")
            .then(|| of_launchers("COMPOSITE_EVENTS"))
            .flatten();
        let sched = of_launchers("SCHED_EVENTS");
        let has = |n: Option<i64>| n.is_some_and(|n| n > 0);
        let cpu = check(cap, "cpu_records");
        let want = if has(samples) && has(sched) {
            "ok"
        } else {
            "unknown"
        };
        assert_eq!(
            status(cap, "cpu_records"),
            want,
            "{what}: {samples:?} samples, {sched:?} switches"
        );
        for (n, table, flag) in [
            (samples, "COMPOSITE_EVENTS", "--sample=process-tree"),
            (sched, "SCHED_EVENTS", "--cpuctxsw=process-tree"),
        ] {
            let said = match n {
                None => format!("({table} absent)"),
                Some(0) => format!("({table} holds none)"),
                Some(_) => String::new(),
            };
            assert!(cpu.evidence.contains(&said), "{what}: {}", cpu.evidence);
            let fix = cpu.fix.as_deref().unwrap_or_default();
            assert_eq!(fix.contains(flag), !has(n), "{what}: {fix}");
        }

        // GPU metrics: the table `--gpu-metrics-devices` fills.
        let want = if has_table(&conn, "GPU_METRICS") {
            "ok"
        } else {
            "unknown"
        };
        assert_eq!(status(cap, "gpu_metrics"), want, "{what}: gpu metrics");
    }
}

/// `detect --json` and the readable `detect` on a public export with CPU samples and scheduling
/// of its launching process (power_iteration: 893 samples, 430 switches) and on one with neither
/// table (h100_2gpu): the check is `ok` on the first; on the second it is `unknown`, an info for
/// the capture, not a failure (the verdict is given), naming the three flags.
#[test]
fn the_cpu_records_check_says_when_untraced_host_time_cannot_be_explained() {
    for (name, want) in [
        (
            "brycelelbach_nsightful__power_iteration__baseline.sqlite",
            "ok",
        ),
        ("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite", "unknown"),
    ] {
        let path = common::public_trace(name);
        let out = common::nsys_lens(["detect".as_ref(), "--json".as_ref(), path.as_os_str()]);
        assert!(out.status.success(), "{name}");
        let json: Value = serde_json::from_slice(&out.stdout).expect("detect --json");
        let checks = json["capture"]["checks"].as_array().expect("checks");
        let cpu = checks
            .iter()
            .find(|c| c["id"] == "cpu_records")
            .expect("the cpu_records check");
        assert_eq!(cpu["status"], want, "{name}: {cpu}");
        let text = common::nsys_lens(["detect".as_ref(), path.as_os_str()]);
        let text = String::from_utf8_lossy(&text.stdout);
        if want == "ok" {
            assert!(cpu["fix"].is_null(), "{name}: {cpu}");
            assert!(text.contains("cpu_records"), "{name}: listed as ok\n{text}");
            continue;
        }
        let fix = cpu["fix"].as_str().unwrap_or_default();
        for flag in [
            "--sample=process-tree",
            "--cpuctxsw=process-tree",
            "--python-sampling=true",
        ] {
            assert!(fix.contains(flag), "{name}: {fix}");
        }
        assert!(
            cpu["evidence"]
                .as_str()
                .is_some_and(|e| e.contains("cannot be explained")),
            "{name}: {cpu}"
        );
        assert!(
            text.contains("[unknown] CPU samples and thread scheduling recorded"),
            "{text}"
        );
        assert!(!json["verdict"].is_null(), "{name}: a verdict is given");
    }
    // The generator's host-records scenario writes both for its launching thread.
    let (_dir, path, _) = common::generated("host-records", 1, 5);
    assert_eq!(status(&detect_file(&path).capture, "cpu_records"), "ok");
}

#[test]
fn the_nvfuser_exports_are_warm_up_dominated_and_the_short_ones_flagged() {
    // Read from the rows above: nvFuser's JIT (compileFusion / NVRTC) holds most of the idle
    // time of df8f397 and f6ab0c3; mock has 2 kernels.
    for (name, warmup) in [
        ("NVIDIA_Fuser__df8f397__report1.sqlite", "warn"),
        ("NVIDIA_Fuser__f6ab0c3__report1.sqlite", "warn"),
        ("GindaChen_nsys-ai__mock.sqlite", "warn"),
        ("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite", "ok"),
    ] {
        let report = detect_file(&common::public_trace(name));
        assert_eq!(status(&report.capture, "warmup"), warmup, "{name}");
        if warmup == "warn" {
            assert!(
                report.summary.contains("Caution"),
                "{name}: {}",
                report.summary
            );
        }
    }
}

#[test]
fn the_report_has_a_capture_section_with_every_check_and_the_steady_window() {
    use nsys_lens::drill::DrillOptions;
    use nsys_lens::report::{document, html, markdown, outline};
    let (_dir, path, answers) = common::generated("capture-warmup", 1, 3);
    let trace = load_path(&path, LoadOptions::all()).expect("load");
    let doc = document::build(&trace, "capture-warmup", &DrillOptions::default()).expect("doc");
    let md = markdown::render(&doc);
    assert!(md.contains("## Capture"), "no Capture section");
    let start = answers["capture"]["steady_window"]["start_ns"]
        .as_i64()
        .expect("start");
    assert!(
        md.contains(&format!("from {start} ns")),
        "steady window start"
    );
    let table = outline::tables(&doc)
        .into_iter()
        .find(|t| t.name == "capture")
        .expect("capture table");
    assert_eq!(
        table.rows.len(),
        doc.detect.as_ref().expect("verdict").capture.checks.len()
    );
    let shown = table.shown();
    let warm = shown
        .rows
        .iter()
        .find(|r| r[0] == "warmup")
        .expect("warmup row");
    assert_eq!(warm[1], "warn");
    assert!(html::render(&doc).contains("Capture checks"));
}

#[test]
fn gpu_metrics_are_averaged_per_device_over_the_kernel_window_with_their_pattern() {
    let (_dir, path, answers) = common::generated("capture-gpu-metrics", 1, 9);
    let report = detect_file(&path);
    let want = &answers["capture"]["gpu_metrics"];
    assert_statuses(&report.capture, &answers, "capture-gpu-metrics");
    let gm = report.capture.gpu_metrics.as_ref().expect("gpu metrics");
    // Matched by name prefix: the five classes, not the clock.
    assert_eq!(gm.metrics.len(), 5, "{:?}", gm.metrics);
    assert!(!gm.metrics.iter().any(|m| m.contains("Clock")));
    let d = &gm.per_device[0];
    assert_eq!(Value::from(d.device), want["device"]);
    // Bins cut by the window's edges count in proportion: within half a point of the exact
    // mean of the samples placed inside the window.
    let close = |got: Option<f64>, key: &str| {
        let w = want[key].as_f64().expect(key);
        let g = got.expect(key);
        assert!((g - w).abs() < 0.5, "{key}: {g} vs {w}");
    };
    close(d.window.sm_active, "sm_active");
    close(d.window.sm_issue, "sm_issue");
    close(d.window.tensor_active, "tensor_active");
    close(d.window.dram_bandwidth, "dram_bandwidth");
    let samples = want["samples_in_window"].as_f64().expect("samples");
    assert!(
        (d.window.samples - samples).abs() <= 2.0,
        "{} vs {samples}",
        d.window.samples
    );
    assert_eq!(
        serde_json::to_value(&d.patterns).expect("json"),
        want["patterns"]
    );
}

/// The capture facts are gathered from the rows each load reads for itself (every runtime call,
/// or only the launch calls the verdict keeps): both loads give the same facts, equal to the
/// generator's counts and to the rows' own, GC ranges left open (no `end`, as a capture stopped
/// inside one leaves them) included.
#[test]
fn capture_facts_are_the_same_whichever_rows_the_load_reads() {
    let (_dir, path, answers) = common::generated("capture-warmup", 1, 3);
    let gc_rows = "SELECT n.rowid FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId \
                   WHERE n.eventType IN (59, 60, 70, 71) AND coalesce(n.text, s.value) LIKE '%python gc%'";
    let conn = Connection::open(&path).expect("open");
    let opened = conn
        .execute(
            &format!("UPDATE NVTX_EVENTS SET \"end\" = NULL WHERE rowid IN ({gc_rows})"),
            [],
        )
        .expect("open the GC ranges");
    drop(conn);
    let want_gc = answers["capture"]["gc_ranges"].as_u64().expect("gc");
    assert_eq!(opened as u64, want_gc, "every GC range left open");
    assert!(want_gc > 0);

    let verdict = load_path(&path, LoadOptions::detect())
        .expect("load")
        .capture;
    let whole = load_path(&path, LoadOptions::all()).expect("load").capture;
    assert_eq!(verdict, whole);
    assert_eq!(verdict.gc_ranges, want_gc);
    assert_eq!(
        verdict.gil_ranges,
        answers["capture"]["gil_ranges"].as_u64().expect("gil")
    );

    // Every warm-up span, by the rules written against names above.
    let conn = open(&path);
    let calls = spans(
        &conn,
        "SELECT r.start, r.\"end\", s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId",
    );
    let launch = |n: &str| n.starts_with("cudaLaunch") || n.starts_with("cuLaunch");
    let mut want: Vec<(i64, i64)> = calls
        .iter()
        .filter(|(s, e, n)| {
            e > s && (module_load(n) || jit_call(n) || (launch(n) && e - s >= 5_000_000))
        })
        .map(|&(s, e, _)| (s, e))
        .collect();
    let ranges = spans(
        &conn,
        "SELECT n.start, n.\"end\", coalesce(n.text, s.value) FROM NVTX_EVENTS n \
         LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60, 70, 71)",
    );
    want.extend(
        ranges
            .iter()
            .filter(|(s, e, n)| e > s && jit_range(n))
            .map(|&(s, e, _)| (s, e)),
    );
    want.sort_unstable();
    let mut got: Vec<(i64, i64)> = verdict.warmup.iter().map(|w| (w.start, w.end)).collect();
    got.sort_unstable();
    assert_eq!(verdict.warmup_dropped, 0);
    assert!(got.len() > 1, "{got:?}");
    assert_eq!(got, want);
}
