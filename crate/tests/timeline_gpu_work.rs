//! The timeline draws what the GPU did: CUDA-graph replays, copies and memsets on their
//! (device, stream) lanes next to kernels. Checked against plain SQL over generated exports:
//! each lane's busy fraction per column is the union of the rows of the four tables on its
//! stream, a device's idle shading leaves out every column a copy covers, and a hovered replay
//! or copy is named (graph id, direction, bytes) and linked to the API call that launched it.

use crate::common;

use std::path::Path;

use nsys_lens::model::Direction;
use nsys_lens::model::rows::EventRows;
use nsys_lens::reread::{FileReads, SqliteKernels};
use nsys_lens::timeline::columns::Grid;
use nsys_lens::timeline::{Detail, Hit, Timeline, TimelineView};
use nsys_lens::trace::{FileRows, LoadOptions, Schema, open_path};

/// Runs `f` on the page's timeline of the export at `path` — built over the file's rows, read
/// back by `rowid` through the page's SQLite source — and an open connection for SQL.
fn with_page_timeline(
    path: &Path,
    f: impl FnOnce(&Timeline, &SqliteKernels, &rusqlite::Connection),
) {
    let label = path.display().to_string();
    let conn = open_path(path).expect("open");
    let schema = Schema::probe(&conn, &label).expect("schema");
    let rows = FileRows::open(&conn, &label, LoadOptions::page(), &mut |_| true).expect("rows");
    let timeline = Timeline::of_rows(&rows, &label).expect("timeline");
    let reads = FileReads::new(&schema);
    f(
        &timeline,
        &reads.source(&conn, &rows.meta().strings, &label),
        &conn,
    );
}

fn has_table(conn: &rusqlite::Connection, table: &str) -> bool {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .expect("sqlite_master")
        > 0
}

/// `(start, end)` of every row of `tables` on `device` (and `stream`, when given), by SQL.
fn spans_by_sql(
    conn: &rusqlite::Connection,
    tables: &[&str],
    device: u32,
    stream: Option<u32>,
) -> Vec<(i64, i64)> {
    let mut spans = Vec::new();
    for table in tables.iter().filter(|t| has_table(conn, t)) {
        let sql = format!(
            "SELECT start, \"end\" FROM {table} WHERE deviceId = ?1 AND (?2 IS NULL OR streamId = ?2)"
        );
        let mut st = conn.prepare(&sql).expect("prepare");
        let rows = st
            .query_map(rusqlite::params![device, stream], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("query");
        spans.extend(rows.map(|r| r.expect("row")));
    }
    spans
}

/// The union of `spans`: sorted, disjoint.
fn union(mut spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    spans.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for (s, e) in spans.into_iter().filter(|(s, e)| e > s) {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Ns of `union` inside `[a, b)`.
fn covered(union: &[(i64, i64)], (a, b): (i64, i64)) -> i64 {
    union
        .iter()
        .map(|&(s, e)| (e.min(b) - s.max(a)).max(0))
        .sum()
}

/// The view's column grid.
fn grid_of(view: &TimelineView) -> Grid {
    Grid {
        start: view.start_ns,
        end: view.end_ns,
        columns: view.columns,
    }
}

/// Every device lane's busy fraction equals, column by column, the union of the rows of the
/// four tables on its (device, stream) as SQL reads them; a column is shaded idle only when no
/// row of its device covers it, and never where a copy does.
fn assert_lanes_match_sql(conn: &rusqlite::Connection, view: &TimelineView, what: &str) -> usize {
    let grid = grid_of(view);
    let columns: Vec<(i64, i64)> = (0..view.columns as usize).map(|c| grid.bounds(c)).collect();
    let mut copy_only_columns = 0;
    for lane in view.lanes.iter().filter(|l| l.kind == "kernels") {
        let (Some(device), Some(stream)) = (lane.device, lane.stream) else {
            panic!("{what}: a device lane without its device and stream");
        };
        let mine = union(spans_by_sql(
            conn,
            &common::GPU_WORK_TABLES,
            device,
            Some(stream),
        ));
        let on_device = union(spans_by_sql(conn, &common::GPU_WORK_TABLES, device, None));
        let kernels = union(spans_by_sql(
            conn,
            &common::GPU_WORK_TABLES[..1],
            device,
            None,
        ));
        let copies = union(spans_by_sql(
            conn,
            &["CUPTI_ACTIVITY_KIND_MEMCPY"],
            device,
            None,
        ));
        for (c, &(cs, ce)) in columns.iter().enumerate() {
            let want = covered(&mine, (cs, ce)) as f64 / (ce - cs) as f64;
            let got = f64::from(lane.busy[c]);
            assert!(
                (got - want.min(1.0)).abs() < 1e-3,
                "{what}: GPU {device} stream {stream} column {c}: busy {got} vs SQL {want}"
            );
            // A row within a nanosecond or two of a column edge may fall either side of it.
            let device_ns = covered(&on_device, (cs, ce));
            if lane.idle[c] {
                assert!(
                    device_ns <= 2,
                    "{what}: GPU {device} column {c} is shaded idle with {device_ns} ns of work"
                );
            } else {
                assert!(
                    covered(&on_device, (cs - 2, ce + 2)) > 0,
                    "{what}: GPU {device} column {c} is not idle with no work"
                );
            }
            let copy_ns = covered(&copies, (cs, ce));
            if copy_ns > 2 {
                assert!(!lane.idle[c], "{what}: a copy's column {c} is shaded idle");
                if covered(&kernels, (cs - 2, ce + 2)) == 0 {
                    copy_only_columns += 1;
                }
            }
        }
    }
    copy_only_columns
}

/// Views of a scenario: the whole extent, and a zoomed window around a third of it.
fn views(timeline: &Timeline, source: &SqliteKernels) -> Vec<(String, TimelineView)> {
    let (s, e) = timeline.extent();
    let span = (e - s).max(1);
    let third = s + span / 3;
    [
        (s, e, 997, Detail::Exact),
        (third, third + span / 40, 400, Detail::Auto),
    ]
    .into_iter()
    .map(|(a, b, columns, detail)| {
        let view = timeline
            .view_with(source, a, b, columns, detail)
            .expect("view");
        (format!("[{a}, {b}) in {columns}"), view)
    })
    .collect()
}

#[test]
fn lanes_hold_replays_copies_and_memsets_as_sql_finds_them() {
    for scenario in ["serving-graphs", "copy-bound", "serving-graphs-node"] {
        let (_dir, path, _) = common::generated(scenario, 1, 7);
        with_page_timeline(&path, |timeline, source, conn| {
            let first_start: i64 = conn
                .query_row(
                    &format!("SELECT MIN(start) FROM ({})", common::gpu_work_sql(conn)),
                    [],
                    |r| r.get(0),
                )
                .expect("first start");
            assert_eq!(
                timeline.extent().0,
                first_start,
                "{scenario}: the timeline starts at the first GPU operation"
            );
            let mut copy_only = 0;
            for (what, view) in views(timeline, source) {
                copy_only += assert_lanes_match_sql(conn, &view, &format!("{scenario} {what}"));
            }
            if scenario == "copy-bound" {
                assert!(
                    copy_only > 0,
                    "copy-bound: columns with copies and no kernel are drawn busy, not idle"
                );
            }
        });
    }
}

/// A row of GPU work chosen by SQL: the longest of `table`, with its lane and the label and
/// launch call (name, start, end) SQL gives it.
struct Chosen {
    start: i64,
    end: i64,
    device: u32,
    stream: u32,
    label: String,
    call: (String, i64, i64),
}

fn longest(conn: &rusqlite::Connection, table: &str) -> Chosen {
    let detail = match table {
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" => "graphId, 0",
        "CUPTI_ACTIVITY_KIND_MEMCPY" => "bytes, copyKind",
        _ => "bytes, -1",
    };
    let sql = format!(
        "SELECT w.start, w.\"end\", w.deviceId, w.streamId, {detail}, s.value, r.start, r.\"end\"
         FROM {table} w
         JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
           ON r.correlationId = w.correlationId AND (r.globalTid >> 24) = (w.globalPid >> 24)
         JOIN StringIds s ON s.id = r.nameId
         ORDER BY w.\"end\" - w.start DESC, w.rowid LIMIT 1"
    );
    conn.query_row(&sql, [], |r| {
        let (value, kind): (i64, i64) = (r.get(4)?, r.get(5)?);
        let label = match table {
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" => format!("[CUDA graph replay] graph {value}"),
            "CUPTI_ACTIVITY_KIND_MEMCPY" => format!(
                "{} {}",
                Direction::of(kind as u8).copy_name(),
                nsys_lens::format::bytes(value as u64)
            ),
            _ => format!("[CUDA memset] {}", nsys_lens::format::bytes(value as u64)),
        };
        Ok(Chosen {
            start: r.get(0)?,
            end: r.get(1)?,
            device: r.get(2)?,
            stream: r.get(3)?,
            label,
            call: (r.get(6)?, r.get(7)?, r.get(8)?),
        })
    })
    .expect(&sql)
}

/// Hovers `(lane, t)` of the view's full lane list.
fn hover(timeline: &Timeline, source: &SqliteKernels, lane: usize, t: i64) -> Option<Hit> {
    timeline.hit(source, lane as u32, t, 0).expect("hit")
}

#[test]
fn a_hovered_replay_or_copy_is_named_and_linked_to_its_launch_call() {
    for (scenario, table, kind, api) in [
        (
            "serving-graphs",
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
            "graph replay",
            "cudaGraphLaunch",
        ),
        (
            "copy-bound",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "copy",
            "cudaMemcpy",
        ),
    ] {
        let (_dir, path, _) = common::generated(scenario, 1, 7);
        with_page_timeline(&path, |timeline, source, conn| {
            let chosen = longest(conn, table);
            assert!(
                chosen.call.0.starts_with(api),
                "{scenario}: {}",
                chosen.call.0
            );
            let pad = (chosen.end - chosen.start) / 2;
            let view = timeline
                .view_with(
                    source,
                    chosen.start - pad,
                    chosen.end + pad,
                    200,
                    Detail::Exact,
                )
                .expect("view");
            let lane = view
                .lanes
                .iter()
                .position(|l| l.device == Some(chosen.device) && l.stream == Some(chosen.stream))
                .expect("the row's lane");
            let items: Vec<&str> = view.lanes[lane]
                .items
                .iter()
                .map(|it| view.names[it.name as usize].as_str())
                .collect();
            assert!(
                items.contains(&chosen.label.as_str()),
                "{scenario}: drawn as {:?}, not {items:?}",
                chosen.label
            );
            let hit = hover(timeline, source, lane, (chosen.start + chosen.end) / 2)
                .expect("a hit on the row");
            assert_eq!(hit.name, chosen.label, "{scenario}: hover names it");
            assert_eq!(hit.work.as_deref(), Some(kind), "{scenario}: its kind");
            assert_eq!((hit.start_ns, hit.end_ns), (chosen.start, chosen.end));
            let link = hit.link.expect("its launch call");
            assert_eq!(link.kind, "api");
            assert_eq!(
                (link.name.as_str(), link.start_ns),
                (chosen.call.0.as_str(), chosen.call.1),
                "{scenario}: launched by the call SQL joins by correlation id"
            );
            // From the call back: the host lane's hover links the row.
            let call_lane = link.lane.expect("the call's lane is shown") as usize;
            let back = hover(
                timeline,
                source,
                call_lane,
                (chosen.call.1 + chosen.call.2) / 2,
            )
            .expect("a hit on the call")
            .link
            .expect("the call's work");
            assert_eq!(back.kind, "kernels");
            assert_eq!(back.lane, Some(lane as u32));
            assert_eq!(
                (back.name, back.start_ns),
                (chosen.label.clone(), chosen.start)
            );
        });
    }
}
