//! Timeline level of detail: aggregated columns preserve busy time, mark idle columns, and hit
//! testing finds the kernel under the pointer. Busy time comes from the generator's answers.

use std::collections::BTreeMap;

use crate::common;

use nsys_lens::model::{KernelRow, Trace};
use nsys_lens::synth::{GenOptions, generate};
use nsys_lens::timeline::columns::Grid;
use nsys_lens::timeline::{Detail, Timeline, TimelineBuilder, TimelineView};
use nsys_lens::trace::{LoadOptions, load_path};

#[test]
fn columns_preserve_busy_time_per_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tp2.sqlite");
    let answers =
        generate("tp2-straggler", &path, &GenOptions { scale: 1, seed: 42 }).expect("generate");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    let window_ns = (end - start) as f64;
    for columns in [1200u32, 333] {
        let view = timeline.view(&trace, start, end, columns).expect("view");
        assert_eq!(view.lanes[0].kind, "steps", "forward steps first");
        for device in answers["profiles"]["standard"]["per_device"]
            .as_array()
            .expect("per_device")
        {
            let id = device["device"].as_u64().expect("device") as u32;
            let util = device["gpu_utilization"].as_f64().expect("util");
            let lanes: Vec<_> = view.lanes.iter().filter(|l| l.device == Some(id)).collect();
            assert_eq!(lanes.len(), 1, "one stream per device in this scenario");
            let col = window_ns / f64::from(columns);
            let busy: f64 = lanes[0].busy.iter().map(|&b| f64::from(b) * col).sum();
            assert!(
                (busy / window_ns - util).abs() < 2e-3,
                "device {id}: {} vs {util}",
                busy / window_ns
            );
            assert!(
                lanes[0].idle.iter().any(|&i| i),
                "device {id} has idle columns"
            );
            assert!(
                lanes[0]
                    .idle
                    .iter()
                    .zip(&lanes[0].count)
                    .all(|(&i, &c)| !i || c == 0)
            );
        }
    }
}

#[test]
fn zoomed_views_and_hits_find_the_kernel_under_the_pointer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hb.sqlite");
    generate("host-bound", &path, &GenOptions { scale: 1, seed: 1 }).expect("generate");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    let timeline = Timeline::new(&trace);
    let k = &trace.kernels;
    let i = k.len() / 2;
    let (s, e) = (k.start[i], k.end[i]);
    let lane = (0..timeline.lane_count() as u32).find(|&l| {
        timeline
            .hit(&trace, l, (s + e) / 2, 0)
            .expect("hit")
            .is_some_and(|h| h.start_ns == s)
    });
    let lane = lane.expect("a kernel lane holds the kernel");
    let hit = timeline
        .hit(&trace, lane, (s + e) / 2, 0)
        .expect("read")
        .expect("hit");
    assert_eq!((hit.start_ns, hit.end_ns), (s, e));
    assert_eq!(hit.name, trace.strings.get(k.short_name[i]));
    // Zoomed to the kernel alone: its columns are fully busy.
    let view = timeline.view(&trace, s, e, 10).expect("view");
    let kernels = &view.lanes[lane as usize];
    assert!(
        kernels.busy.iter().all(|&b| (b - 1.0).abs() < 1e-6),
        "{:?}",
        kernels.busy
    );
    assert_eq!(view.names[kernels.top[0] as usize], hit.name);
    // Far from any kernel, nothing is hit.
    assert!(
        timeline
            .hit(
                &trace,
                lane,
                k.start.iter().copied().min().unwrap_or(0) - 10_000_000,
                1_000
            )
            .expect("read")
            .is_none()
    );
}

/// A generated trace loaded with everything the page reads.
fn generated(scenario: &str, scale: u32) -> (tempfile::TempDir, Trace) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{scenario}.sqlite"));
    generate(scenario, &path, &GenOptions { scale, seed: 3 }).expect("generate");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    (dir, trace)
}

/// The timeline as it was computed before the summary existed: every row of GPU work of a lane
/// (kernels, graph replays, copies, memsets), in (start, table, row) order, spread over the
/// columns it touches. Device lanes only, names resolved as nsys's timeline labels them.
fn brute_force_lanes(trace: &Trace, grid: &Grid) -> Vec<(Vec<f32>, Vec<u32>, Vec<String>)> {
    use nsys_lens::model::Work;
    use nsys_lens::model::rows::{EventRows, KernelRow};
    let table = |w: Work| match w {
        Work::Kernel => 0,
        Work::Replay => 1,
        Work::Copy { .. } => 2,
        Work::Memset => 3,
    };
    let name = |r: &KernelRow| {
        let base = trace.strings.get(r.short_name).to_string();
        match r.work {
            Work::Kernel => base,
            Work::Replay if r.graph_id != 0 => format!("{base} graph {}", r.graph_id),
            Work::Replay => base,
            _ => format!("{base} {}", nsys_lens::format::bytes(r.bytes)),
        }
    };
    let mut lanes: BTreeMap<(u32, u32), Vec<KernelRow>> = BTreeMap::new();
    for r in trace.gpu_work() {
        lanes.entry((r.device, r.stream)).or_default().push(r);
    }
    lanes
        .into_values()
        .map(|mut rows| {
            rows.sort_by_key(|r| (r.start, table(r.work), r.row));
            let n = grid.columns as usize;
            let (mut covered, mut count) = (vec![0.0f64; n], vec![0u32; n]);
            let mut top: Vec<(i64, String)> = vec![(0, String::new()); n];
            for r in rows {
                let (s, e) = (r.start.max(grid.start), r.end.min(grid.end));
                if e <= s {
                    continue;
                }
                for c in grid.column(s)..=grid.column(e - 1) {
                    let (cs, ce) = grid.bounds(c);
                    covered[c] += (e.min(ce) - s.max(cs)).max(0) as f64;
                    count[c] += 1;
                    if e - s > top[c].0 {
                        top[c] = (e - s, name(&r));
                    }
                }
            }
            let busy = (0..n)
                .map(|c| {
                    let (cs, ce) = grid.bounds(c);
                    (covered[c] / (ce - cs).max(1) as f64).min(1.0) as f32
                })
                .collect();
            (busy, count, top.into_iter().map(|t| t.1).collect())
        })
        .collect()
}

/// A view's kernel lanes with `top` resolved to names.
fn kernel_lanes(view: &TimelineView) -> Vec<(Vec<f32>, Vec<u32>, Vec<String>)> {
    let name = |t: i32| usize::try_from(t).map_or(String::new(), |t| view.names[t].clone());
    view.lanes
        .iter()
        .filter(|l| l.kind == "kernels")
        .map(|l| {
            let top = l.top.iter().map(|&t| name(t)).collect();
            (l.busy.clone(), l.count.clone(), top)
        })
        .collect()
}

#[test]
fn zoomed_views_re_read_rows_and_equal_the_brute_force_aggregation() {
    let (_dir, trace) = generated("host-bound", 20);
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    for (at, span) in [(0.5, 0.01), (0.1, 0.3), (0.93, 0.0001), (0.0, 0.02)] {
        // From the start of a kernel, so that every window holds some.
        let a = trace.kernels.start[(trace.kernels.len() as f64 * at) as usize];
        let b = a + ((end - start) as f64 * span) as i64 + 1;
        // The row-block indexes narrow the rows read (a table of few rows spread over the
        // trace, as copies here, is one block and read whole).
        let rows = trace.kernels.len() + trace.memcpy.len() + trace.memset.len();
        assert!(timeline.rows_covering(a, b) < rows as i64 * 3 / 4);
        let view = timeline.view(&trace, a, b, 700).expect("view");
        let grid = Grid {
            start: a,
            end: b,
            columns: 700,
        };
        assert_eq!(
            kernel_lanes(&view),
            brute_force_lanes(&trace, &grid),
            "{at} {span}"
        );
        assert!(view.lanes.iter().any(|l| l.count.iter().any(|&c| c > 0)));
    }
}

#[test]
fn exact_full_view_equals_the_brute_force_aggregation() {
    let (_dir, trace) = generated("tp2-straggler", 1);
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    let view = timeline
        .view_with(&trace, start, end, 1200, Detail::Exact)
        .expect("view");
    let grid = Grid {
        start,
        end,
        columns: 1200,
    };
    assert_eq!(kernel_lanes(&view), brute_force_lanes(&trace, &grid));
    let auto = timeline.view(&trace, start, end, 1200).expect("view");
    assert_eq!(auto, view, "few kernels: the automatic view is exact");
}

#[test]
fn full_extent_summary_stays_within_the_documented_bound() {
    let (_dir, trace) = generated("host-bound", 20);
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    for columns in [1200u32, 333, 4000] {
        let exact = timeline
            .view_with(&trace, start, end, columns, Detail::Exact)
            .expect("exact");
        let approx = timeline
            .view_with(&trace, start, end, columns, Detail::Summary)
            .expect("summary");
        let bounds = timeline.busy_error_bounds(start, end, columns);
        let step_bounds = timeline.step_busy_error_bounds(start, end, columns);
        let worst = bounds
            .iter()
            .chain(&step_bounds)
            .copied()
            .fold(0.0, f64::max);
        assert!(worst < 0.5, "{columns} columns: bound {worst}");
        let mut total_error = 0.0;
        for (x, y) in exact.lanes.iter().zip(&approx.lanes) {
            let bounds = if x.kind == "steps" {
                &step_bounds
            } else {
                &bounds
            };
            for (c, &bound) in bounds.iter().enumerate() {
                let err = f64::from((x.busy[c] - y.busy[c]).abs());
                assert!(err <= bound + 1e-4, "{} col {c}: {err} > {bound}", x.label);
                assert!(
                    y.count[c] >= x.count[c],
                    "{} col {c}: counts widen",
                    x.label
                );
                assert!(
                    !y.idle[c] || x.idle[c],
                    "summary idle only where truly idle"
                );
                if x.kind != "steps" {
                    total_error += err;
                }
            }
        }
        // Kernel lanes: the step lane's bins span its own steps, within its bound above.
        let kernel_lanes = exact.lanes.iter().filter(|l| l.kind != "steps").count();
        let mean = total_error / f64::from(columns) / kernel_lanes as f64;
        assert!(mean < 0.05, "{columns} columns: mean busy error {mean}");
    }
}

#[test]
fn summary_memory_does_not_grow_with_the_kernel_count() {
    let (_small_dir, small) = generated("host-bound", 2);
    let (_large_dir, large) = generated("host-bound", 20);
    assert!(large.kernels.len() >= 10 * small.kernels.len());
    let (a, b) = (Timeline::new(&small), Timeline::new(&large));
    assert_eq!(a.lane_count(), b.lane_count());
    assert_eq!(a.summary_bytes(), b.summary_bytes());
    let block = std::mem::size_of::<nsys_lens::timeline::summary::Block>();
    assert!(b.index_bytes() <= nsys_lens::timeline::summary::MAX_BLOCKS * block);
}

#[test]
fn a_kernel_out_of_start_order_is_refused() {
    let (_dir, trace) = generated("tp2-straggler", 1);
    let mut builder = TimelineBuilder::new(&trace, true);
    let first = trace.kernels.event(0);
    let earlier = KernelRow {
        row: 1,
        start: first.start - 1,
        ..first
    };
    builder.push(first).expect("first kernel");
    let refused = builder.push(earlier).expect_err("earlier start");
    assert_eq!((refused.row, refused.previous), (1, first.start));
    builder.push(first).expect("same start is in order");
    let timeline = builder.finish();
    assert_eq!(timeline.extent(), (first.start, first.end));
}

/// Events as `(start, end, name)`.
type Rows = Vec<(i64, i64, String)>;

/// The kernels of each (device, stream) overlapping `[a, b)`, by plain SQL on the export:
/// `(device, stream) → [(start, end, short name)]` in start order.
fn kernels_by_sql(path: &std::path::Path, a: i64, b: i64) -> BTreeMap<(u32, u32), Rows> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let mut stmt = conn
        .prepare(
            "SELECT k.deviceId, k.streamId, k.start, k.end, s.value
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
             WHERE k.start < ?1 AND k.end > ?2 ORDER BY k.start, k.rowid",
        )
        .expect("prepare");
    let mut out: BTreeMap<(u32, u32), Rows> = BTreeMap::new();
    let rows = stmt
        .query_map([b, a], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, u32>(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            ))
        })
        .expect("query");
    for row in rows {
        let (d, st, s, e, name) = row.expect("row");
        out.entry((d, st)).or_default().push((s, e, name));
    }
    out
}

#[test]
fn at_deep_zoom_each_kernel_is_an_item_with_its_name_as_sql_reads_it() {
    let path = common::public_trace("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    // 40 µs from just before the median kernel, over 1290 columns: a few dozen kernels.
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let median: i64 = conn
        .query_row(
            "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start
             LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            [],
            |r| r.get(0),
        )
        .expect("median");
    let a = median - 5_000;
    let b = a + 40_000;
    let view = timeline.view(&trace, a, b, 1290).expect("view");
    assert_eq!(view.origin_ns, start, "ticks read from the trace start");
    let expected = kernels_by_sql(&path, a, b);
    assert!(
        expected.values().map(Vec::len).sum::<usize>() >= 5,
        "{expected:?}"
    );
    let mut drawn = 0;
    for lane in view.lanes.iter().filter(|l| l.kind == "kernels") {
        let key = (lane.device.expect("device"), lane.stream.expect("stream"));
        let items: Vec<(i64, i64, String)> = lane
            .items
            .iter()
            .map(|i| (i.start_ns, i.end_ns, view.names[i.name as usize].clone()))
            .collect();
        let want = expected.get(&key).cloned().unwrap_or_default();
        assert_eq!(items, want, "lane {}", lane.label);
        drawn += items.len();
        for i in &lane.items {
            let name = &view.names[i.name as usize];
            let class = nsys_lens::names::kernels::kernel_category(name);
            let json = serde_json::to_value(class).expect("class");
            assert_eq!(view.classes[i.name as usize], json.as_str().expect("str"));
        }
    }
    assert_eq!(drawn, expected.values().map(Vec::len).sum::<usize>());
    // The whole trace is far too many kernels to draw one by one: columns only.
    let whole = timeline.view(&trace, start, end, 1290).expect("view");
    assert!(whole.lanes.iter().all(|l| l.items.is_empty()));
}

/// The rows of a host table overlapping `[a, b)` by plain SQL, as `(start, end, name)` sorted:
/// CUDA API calls named by `StringIds`, NVTX ranges by their text, else `StringIds`.
fn host_rows_by_sql(
    path: &std::path::Path,
    table: &str,
    a: i64,
    b: i64,
) -> Vec<(i64, i64, String)> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let sql = if table == "api" {
        "SELECT r.start, r.end, COALESCE(s.value, '') FROM CUPTI_ACTIVITY_KIND_RUNTIME r
         LEFT JOIN StringIds s ON s.id = r.nameId
         WHERE r.start < ?1 AND MAX(r.end, r.start + 1) > ?2"
    } else {
        "SELECT n.start, n.end, COALESCE(n.text, s.value, '') FROM NVTX_EVENTS n
         LEFT JOIN StringIds s ON s.id = n.textId
         WHERE n.end IS NOT NULL AND n.eventType IN (59, 60, 70, 71)
           AND n.start < ?1 AND MAX(n.end, n.start + 1) > ?2"
    };
    let mut stmt = conn.prepare(sql).expect("prepare");
    let mut rows: Vec<(i64, i64, String)> = stmt
        .query_map([b, a], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    rows.sort();
    rows
}

/// A view's items on the lanes of `kind`, as `(start, end, name)` sorted.
fn host_items(view: &TimelineView, kind: &str) -> Vec<(i64, i64, String)> {
    let mut items: Vec<(i64, i64, String)> = view
        .lanes
        .iter()
        .filter(|l| l.kind == kind)
        .flat_map(|l| l.items.iter())
        .map(|i| (i.start_ns, i.end_ns, view.names[i.name as usize].clone()))
        .collect();
    items.sort();
    items
}

/// Runs `f` on the export at `path` loaded for the page and read again through the page's
/// SQLite source (host rows, launch links), as the page's zoomed-in views read it.
fn with_sqlite_source(
    path: &std::path::Path,
    f: impl FnOnce(&Trace, &nsys_lens::reread::SqliteKernels, &rusqlite::Connection),
) {
    use nsys_lens::reread::FileReads;
    use nsys_lens::trace::{Schema, open_path};
    let trace = load_path(path, LoadOptions::page()).expect("load");
    let label = path.display().to_string();
    let conn = open_path(path).expect("open");
    let schema = Schema::probe(&conn, &label).expect("schema");
    let reads = FileReads::new(&schema);
    let source = reads.source(&conn, &trace.strings, &label);
    f(&trace, &source, &conn);
}

#[test]
fn host_tracks_show_the_api_calls_and_nvtx_ranges_sql_finds_in_the_view() {
    // h100_2gpu: one sorted runtime table; mfu_2gpu_before: five sorted runs.
    let mut nvtx_seen = 0;
    let dir = tempfile::tempdir().expect("tempdir");
    let generated = dir.path().join("host-bound.sqlite");
    generate("host-bound", &generated, &GenOptions { scale: 1, seed: 5 }).expect("generate");
    for path in [
        common::public_trace("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite"),
        common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite"),
        generated.clone(),
    ] {
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        with_sqlite_source(&path, |trace, source, conn| {
            let timeline = Timeline::new(trace);
            let median: i64 = conn
                .query_row(
                    "SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start
                 LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
                    [],
                    |r| r.get(0),
                )
                .expect("median");
            let (a, b) = (median - 50_000, median + 250_000);
            let view = timeline.view(source, a, b, 4000).expect("view");
            let kinds: Vec<&str> = view.lanes.iter().map(|l| l.kind.as_str()).collect();
            let first_kernel = kinds.iter().position(|&k| k == "kernels").expect("kernels");
            assert!(
                kinds[..first_kernel].iter().all(|&k| k != "kernels") && kinds.contains(&"api"),
                "{name}: host lanes above the GPU lanes: {kinds:?}"
            );
            let api = host_rows_by_sql(&path, "api", a, b);
            assert!(api.len() >= 5, "{name}: {api:?}");
            assert_eq!(host_items(&view, "api"), api, "{name}: API calls");
            let ranges = host_rows_by_sql(&path, "nvtx", a, b);
            assert_eq!(host_items(&view, "nvtx"), ranges, "{name}: NVTX ranges");
            // Hover on an API lane names the call under the pointer.
            let lane = kinds.iter().position(|&k| k == "api").expect("api lane");
            let call = &view.lanes[lane].items[0];
            let t = call.start_ns + (call.end_ns - call.start_ns) / 2;
            let hit = timeline
                .hit(source, lane as u32, t, 0)
                .expect("hit")
                .expect("a call");
            assert_eq!(hit.name, view.names[call.name as usize], "{name}: hover");
            assert!(
                hit.track
                    .as_deref()
                    .is_some_and(|t| t.ends_with("CUDA API"))
            );
            nvtx_seen += ranges.len();
            // A kernel's hover names its launch call, and the call's hover its kernel: as SQL joins
            // them (same correlation id, same process).
            let (start, end, device, stream, call): (i64, i64, u32, u32, (i64, i64, String)) = conn
                .query_row(
                    "SELECT k.start, k.end, k.deviceId, k.streamId, r.start, r.end, s.value
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                   AND (r.globalTid >> 24) = (k.globalPid >> 24)
                 JOIN StringIds s ON s.id = r.nameId
                 WHERE k.rowid >= (SELECT MAX(rowid) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL)
                 ORDER BY k.rowid LIMIT 1",
                    [],
                    |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            (r.get(4)?, r.get(5)?, r.get(6)?),
                        ))
                    },
                )
                .expect("a kernel and its launch call");
            let view = timeline
                .view(source, start - 10_000, end + 10_000, 1000)
                .expect("view");
            let lane = view
                .lanes
                .iter()
                .position(|l| l.device == Some(device) && l.stream == Some(stream))
                .expect("the kernel's lane");
            let hit = timeline
                .hit(source, lane as u32, start + (end - start) / 2, 0)
                .expect("hit")
                .expect("the kernel");
            let link = hit.link.expect("its launch call");
            assert_eq!(
                (link.start_ns, link.end_ns, link.name.clone()),
                call,
                "{name}: launch call"
            );
            let api_lane = link.lane.expect("the call's lane is shown");
            let back = timeline
                .hit(
                    source,
                    api_lane,
                    link.start_ns + (link.end_ns - link.start_ns) / 2,
                    0,
                )
                .expect("hit")
                .expect("the call");
            let kernel = back.link.expect("its kernel");
            assert_eq!(
                (kernel.start_ns, kernel.end_ns),
                (start, end),
                "{name}: kernel of the call"
            );
            assert_eq!(kernel.lane, Some(lane as u32));
        });
    }
    assert!(nvtx_seen > 0, "NVTX ranges compared");
}

#[test]
fn folding_a_process_or_a_device_leaves_one_lane_for_it_and_unfolding_restores_the_view() {
    let path = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    with_sqlite_source(&path, |trace, source, conn| {
        let timeline = Timeline::new(trace);
        let sql_count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).expect(sql) };
        // Processes with host rows and devices with kernels, as plain SQL counts them.
        let processes = sql_count(
            "SELECT COUNT(DISTINCT globalTid >> 24) FROM (
               SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME
               UNION SELECT globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL)",
        );
        let devices = sql_count("SELECT COUNT(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        let median = sql_count(
            "SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start
             LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
        );
        let (a, b) = (median - 50_000, median + 250_000);
        let open = timeline
            .view_folded(source, (a, b), 1200, Detail::Auto, &[])
            .expect("view");
        let groups = groups_of(&open);
        assert!(
            groups.iter().any(|g| g.starts_with("process:")),
            "a process with several lanes: {groups:?}"
        );
        let folded = timeline
            .view_folded(source, (a, b), 1200, Detail::Auto, &groups)
            .expect("folded view");
        let steps = usize::from(open.lanes.iter().any(|l| l.kind == "steps"));
        assert_eq!(
            folded.lanes.len() as i64,
            steps as i64 + processes + devices,
            "one lane per process and per device: {:?}",
            folded.lanes.iter().map(|l| &l.label).collect::<Vec<_>>()
        );
        // A folded lane counts its members' events.
        for group in &groups {
            let members = open.lanes.iter().filter(|l| &l.group == group);
            let sum: u64 = members.flat_map(|l| &l.count).map(|&c| u64::from(c)).sum();
            let lane = folded
                .lanes
                .iter()
                .find(|l| &l.group == group)
                .expect(group);
            let merged: u64 = lane.count.iter().map(|&c| u64::from(c)).sum();
            assert_eq!(merged, sum, "{group}");
            assert!(
                lane.folded >= 2 && lane.label.starts_with('▸'),
                "{}",
                lane.label
            );
        }
        // Hover on a folded process lane finds the call its API lane shows there.
        let api = open
            .lanes
            .iter()
            .position(|l| l.kind == "api")
            .expect("api");
        let call = open.lanes[api]
            .items
            .first()
            .copied()
            .expect("calls drawn one by one");
        let row = folded
            .lanes
            .iter()
            .position(|l| l.group == open.lanes[api].group)
            .expect("its process lane");
        let t = call.start_ns + (call.end_ns - call.start_ns) / 2;
        let hit = timeline
            .hit_folded(source, (row as u32, None), (t, 0), &groups)
            .expect("hit")
            .expect("the call");
        assert_eq!(
            (hit.lane, hit.start_ns, hit.name.as_str()),
            (
                row as u32,
                call.start_ns,
                open.names[call.name as usize].as_str()
            )
        );
        let reopened = timeline
            .view_folded(source, (a, b), 1200, Detail::Auto, &[])
            .expect("view");
        assert_eq!(reopened, open, "unfolding restores the view");
    });
}

/// One NVTX range with its nesting depth counted by plain SQL: the ranges of its thread open
/// at its start (opened before it, or at the same instant in an earlier row, and not closed).
#[derive(Debug, Clone, PartialEq)]
struct SqlRange {
    start: i64,
    end: i64,
    thread: i64,
    name: String,
    depth: u8,
}

/// Every NVTX range of the export (the types the timeline draws) with its depth, by SQL: a
/// running count per thread of range starts (+1) and ends (−1) in time order (at one instant
/// ends first, a zero-length range's own end after its start), read at each start.
fn nvtx_ranges_by_sql(conn: &rusqlite::Connection) -> Vec<SqlRange> {
    let sql = "WITH r AS (
           SELECT n.rowid AS id, n.start, n.end, n.globalTid AS tid,
                  COALESCE(n.text, s.value, '') AS name
           FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
           WHERE n.end IS NOT NULL AND n.eventType IN (59, 60, 70, 71)),
         ev AS (
           SELECT tid, start AS t, 1 AS kind, id, 1 AS delta FROM r
           UNION ALL
           SELECT tid, end, CASE WHEN end = start THEN 2 ELSE 0 END, id, -1 FROM r),
         run AS (
           SELECT id, kind, SUM(delta) OVER (PARTITION BY tid ORDER BY t, kind, id
             ROWS UNBOUNDED PRECEDING) AS open
           FROM ev)
         SELECT r.start, r.end, r.tid, r.name, run.open - 1
         FROM r JOIN run ON run.id = r.id AND run.kind = 1
         ORDER BY r.start, r.id";
    let mut stmt = conn.prepare(sql).expect("prepare");
    stmt.query_map([], |r| {
        Ok(SqlRange {
            start: r.get(0)?,
            end: r.get(1)?,
            thread: r.get(2)?,
            name: r.get(3)?,
            depth: u8::try_from(r.get::<_, i64>(4)?).unwrap_or(u8::MAX),
        })
    })
    .expect("query")
    .map(|r| r.expect("row"))
    .collect()
}

/// The label nsys-lens gives a thread's NVTX lane: `pid/tid NVTX` from the packed `globalTid`.
fn nvtx_lane_label(thread: i64) -> String {
    format!("{}/{} NVTX", (thread >> 24) & 0xFF_FFFF, thread & 0xFF_FFFF)
}

#[test]
fn nvtx_lanes_grow_a_named_row_per_nesting_depth_sql_counts_on_their_thread() {
    use nsys_lens::plot::{NAME_MIN_PX, lane_layout};
    use nsys_lens::timeline::{DEPTH_ROWS, NAMED_DEPTHS};
    // h100_2gpu_1s: PyTorch emit_nvtx, 5 levels on both threads; ee4fcf3: nvFuser host code,
    // 6 to 19 levels over nine threads (the deeper ones past the named rows).
    let mut deepest_seen = 0;
    for file in [
        "GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite",
        "NVIDIA_Fuser__ee4fcf3__report1.sqlite",
    ] {
        let path = common::public_trace(file);
        with_sqlite_source(&path, |trace, source, conn| {
            let mut levels: BTreeMap<String, u8> = BTreeMap::new();
            for r in nvtx_ranges_by_sql(conn) {
                let l = levels.entry(nvtx_lane_label(r.thread)).or_default();
                *l = (*l).max(r.depth + 1);
            }
            let timeline = Timeline::new(trace);
            let (start, end) = timeline.extent();
            let view = timeline.view(source, start, end, 1200).expect("view");
            let layout = lane_layout(&view);
            assert_eq!(layout.lanes.len(), view.lanes.len());
            let mut nvtx: Vec<(u8, u32)> = Vec::new();
            for (lane, place) in view.lanes.iter().zip(&layout.lanes) {
                let rows = &place.rows;
                // Rows fill the lane from its top, one after the other.
                assert_eq!(rows[0].top_px, place.top_px, "{file}: {}", lane.label);
                for w in rows.windows(2) {
                    assert_eq!(w[1].top_px, w[0].top_px + w[0].height_px);
                }
                let last = rows.last().expect("a row");
                assert!(last.top_px + last.height_px < place.top_px + place.height_px);
                if lane.kind != "nvtx" {
                    assert_eq!((rows.len(), place.height_px), (1, 24), "{}", lane.label);
                    continue;
                }
                let want = levels[&lane.label];
                assert_eq!(lane.depths, want, "{file}: {} nesting levels", lane.label);
                assert_eq!(
                    rows.len(),
                    usize::from(want.min(DEPTH_ROWS)),
                    "{}",
                    lane.label
                );
                let named = usize::from(want.min(NAMED_DEPTHS));
                for row in &rows[..named] {
                    // The row minus the 1 px seam below it holds a name.
                    assert!(row.height_px > NAME_MIN_PX + 1, "{}: {row:?}", lane.label);
                }
                nvtx.push((want, place.height_px));
                deepest_seen = deepest_seen.max(want);
            }
            assert!(!nvtx.is_empty(), "{file}: NVTX lanes");
            // Deeper nesting, a taller lane (up to the cap), and never taller than a screenful.
            nvtx.sort();
            for w in nvtx.windows(2) {
                let ((d0, h0), (d1, h1)) = (w[0], w[1]);
                assert!(
                    h1 >= h0 && (d0 == d1 || d0 >= DEPTH_ROWS || h1 > h0),
                    "{nvtx:?}"
                );
            }
            assert!(nvtx.iter().all(|&(_, h)| h <= 160), "{file}: {nvtx:?}");
            // Lanes follow one another below the ruler; the canvas holds them.
            for w in layout.lanes.windows(2) {
                assert_eq!(w[1].top_px, w[0].top_px + w[0].height_px);
            }
            let bottom = layout.lanes.last().map_or(0, |l| l.top_px + l.height_px);
            assert!(layout.height_px >= bottom);
        });
    }
    assert_eq!(deepest_seen, 19, "ee4fcf3's deepest thread, 18 ranges deep");
}

#[test]
fn hovering_a_depth_row_of_an_nvtx_lane_finds_the_range_drawn_there_not_its_parent() {
    let path = common::public_trace("GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite");
    with_sqlite_source(&path, |trace, source, conn| {
        let ranges = nvtx_ranges_by_sql(conn);
        // A depth-2 range of a millisecond or more, and the ranges enclosing it by SQL.
        let inner = ranges
            .iter()
            .find(|r| r.depth == 2 && r.end - r.start >= 1_000_000)
            .expect("a long depth-2 range")
            .clone();
        let t = inner.start + (inner.end - inner.start) / 2;
        let enclosing = |depth: u8| {
            ranges
                .iter()
                .rfind(|r| {
                    r.thread == inner.thread
                        && r.depth == depth
                        && r.start <= inner.start
                        && r.end >= inner.end
                })
                .expect("an enclosing range")
                .clone()
        };
        let (parent, root) = (enclosing(1), enclosing(0));
        let innermost = ranges
            .iter()
            .filter(|r| r.thread == inner.thread && r.start <= t && r.end > t)
            .max_by_key(|r| r.depth)
            .expect("the innermost range at t");
        let timeline = Timeline::new(trace);
        let pad = inner.end - inner.start;
        let view = timeline
            .view(source, inner.start - pad, inner.end + pad, 1290)
            .expect("view");
        let lane = view
            .lanes
            .iter()
            .position(|l| l.label == nvtx_lane_label(inner.thread))
            .expect("the thread's NVTX lane");
        let drawn = view.lanes[lane]
            .items
            .iter()
            .find(|i| i.start_ns == inner.start && i.end_ns == inner.end)
            .expect("the range drawn on its own");
        assert_eq!(drawn.depth, 2, "drawn in the depth row SQL counts");
        let hit = |row: Option<u8>| {
            timeline
                .hit_folded(source, (lane as u32, row), (t, 0), &[])
                .expect("hit")
                .map(|h| (h.start_ns, h.end_ns, h.name))
        };
        let named = |r: &SqlRange| Some((r.start, r.end, r.name.clone()));
        assert_eq!(hit(Some(2)), named(&inner), "row 2: the range itself");
        assert_eq!(hit(Some(1)), named(&parent), "row 1: its parent");
        assert_eq!(hit(Some(0)), named(&root), "row 0: the outermost");
        assert_eq!(hit(None), named(innermost), "no row: the innermost");
        // A row below the deepest range at `t` holds nothing there.
        assert_eq!(hit(Some(innermost.depth + 1)), None);
    });
}

/// Busy share of each column of `[start, end)` (`columns` of them, bounds rounded as the
/// timeline's grid rounds them) covered by the union of `spans`.
fn covered_per_column(spans: &[(i64, i64)], (start, end): (i64, i64), columns: u32) -> Vec<f64> {
    let mut merged: Vec<(i64, i64)> = Vec::new();
    let mut sorted = spans.to_vec();
    sorted.sort();
    for (s, e) in sorted {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let span = (end - start) as f64;
    let at = |c: u32| start + (span * f64::from(c) / f64::from(columns)).round() as i64;
    (0..columns)
        .map(|c| {
            let (a, b) = (at(c), at(c + 1));
            let covered: i64 = merged
                .iter()
                .map(|&(s, e)| (e.min(b) - s.max(a)).max(0))
                .sum();
            covered as f64 / (b - a).max(1) as f64
        })
        .collect()
}

#[test]
fn a_crowded_nvtx_lane_draws_each_depth_row_from_its_own_ranges() {
    use nsys_lens::timeline::{DEPTH_ROWS, depth_row};
    // ee4fcf3's busiest thread: 10 242 nvFuser ranges up to 19 deep, too many to draw one by
    // one at full extent, so each depth row is drawn from its columns.
    let path = common::public_trace("NVIDIA_Fuser__ee4fcf3__report1.sqlite");
    with_sqlite_source(&path, |trace, source, conn| {
        let label = "50556/50556 NVTX";
        let ranges: Vec<SqlRange> = nvtx_ranges_by_sql(conn)
            .into_iter()
            .filter(|r| nvtx_lane_label(r.thread) == label)
            .collect();
        assert_eq!(ranges.len(), 10_242, "{label}'s ranges by SQL");
        let timeline = Timeline::new(trace);
        let (start, end) = timeline.extent();
        let view = timeline.view(source, start, end, 1200).expect("view");
        let lane = view
            .lanes
            .iter()
            .find(|l| l.label == label)
            .unwrap_or_else(|| {
                panic!(
                    "{label}: {:?}",
                    view.lanes.iter().map(|l| &l.label).collect::<Vec<_>>()
                )
            });
        assert!(lane.items.is_empty(), "too many ranges to draw one by one");
        assert_eq!(
            lane.depth_busy.len(),
            usize::from(lane.depths.min(DEPTH_ROWS))
        );
        for (row, digits) in lane.depth_busy.iter().enumerate() {
            let spans: Vec<(i64, i64)> = ranges
                .iter()
                .filter(|r| usize::from(depth_row(r.depth)) == row)
                .map(|r| (r.start, r.end))
                .collect();
            let want = covered_per_column(&spans, (start, end), 1200);
            assert_eq!(digits.chars().count(), 1200);
            for (c, (d, f)) in digits.chars().zip(&want).enumerate() {
                let d = d.to_digit(10).expect("a digit");
                let ninths = (f * 9.0).ceil();
                // Rounding at a column's edge may move a share by a hair: one digit at most.
                assert!(
                    (f64::from(d) - ninths).abs() <= 1.0 && (d == 0) == (*f == 0.0) || *f < 1e-4,
                    "row {row} column {c}: digit {d}, SQL share {f}"
                );
            }
        }
        // Deeper rows are busy only inside shallower ones (nvFuser's ranges nest).
        let first: u32 = lane.depth_busy[0]
            .chars()
            .filter_map(|d| d.to_digit(10))
            .sum();
        let third: u32 = lane.depth_busy[2]
            .chars()
            .filter_map(|d| d.to_digit(10))
            .sum();
        assert!(first > third && third > 0, "{first} vs {third}");
    });
}

#[test]
fn every_stretch_of_a_steps_critical_path_finds_the_lane_it_ran_on_open_or_folded() {
    use nsys_lens::analyze::AnalyzeConfig;
    use nsys_lens::whatif::{PathPlace, step_path};
    let path = common::public_trace("GindaChen_nsys-ai__mfu_2gpu_before.sqlite");
    let export = nsys_lens::trace::load_path(&path, LoadOptions::all()).expect("load");
    let step = step_path(&export, &AnalyzeConfig::default(), 3).expect("step path");
    // The path crosses both the host threads and both GPUs' streams.
    let threads: std::collections::BTreeSet<&str> = step
        .segments
        .iter()
        .filter_map(|s| match &s.place {
            PathPlace::Thread { tid } => Some(tid.as_str()),
            PathPlace::Stream { .. } => None,
        })
        .collect();
    assert!(!threads.is_empty(), "host time on the path");
    with_sqlite_source(&path, |trace, source, _| {
        let timeline = Timeline::new(trace);
        let window = (step.start_ns, step.end_ns);
        let open = timeline
            .view_folded(source, window, 1200, Detail::Auto, &[])
            .expect("view");
        for s in &step.segments {
            match &s.place {
                PathPlace::Thread { tid } => {
                    let lane = open
                        .thread_lane(tid.parse().expect("tid"))
                        .expect("a lane for the thread");
                    let lane = &open.lanes[lane as usize];
                    assert_eq!(lane.kind, "api", "{s:?}");
                    assert_eq!(lane.thread.as_deref(), Some(tid.as_str()), "{s:?}");
                }
                PathPlace::Stream { device, stream } => {
                    let lane = open
                        .stream_lane(*device, *stream)
                        .expect("a lane for the stream");
                    let lane = &open.lanes[lane as usize];
                    assert_eq!((lane.device, lane.stream), (Some(*device), Some(*stream)));
                }
            }
        }
        // Every group folded: each stretch lands on its process's or its device's one lane.
        let groups = groups_of(&open);
        let folded = timeline
            .view_folded(source, window, 1200, Detail::Auto, &groups)
            .expect("folded view");
        for s in &step.segments {
            let lane = match &s.place {
                PathPlace::Thread { tid } => {
                    let tid: i64 = tid.parse().expect("tid");
                    let lane = folded.thread_lane(tid).expect("a lane");
                    let l = &folded.lanes[lane as usize];
                    let pid = (tid >> 24) & 0xFF_FFFF;
                    assert!(
                        l.thread.as_deref() == Some(tid.to_string().as_str())
                            || l.group == format!("process:{pid}"),
                        "{s:?} on {}",
                        l.label
                    );
                    l
                }
                PathPlace::Stream { device, stream } => {
                    let lane = folded.stream_lane(*device, *stream).expect("a lane");
                    &folded.lanes[lane as usize]
                }
            };
            assert!(lane.kind != "steps", "{s:?}");
        }
    });
}

/// The foldable groups of a view's lanes, each once.
fn groups_of(view: &TimelineView) -> Vec<String> {
    view.lanes
        .iter()
        .map(|l| l.group.clone())
        .filter(|g| !g.is_empty())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}
