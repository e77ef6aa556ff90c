//! The page's bounded-memory open, natively: the host side loaded in steps on one connection,
//! the kernel table streamed on another through the one-pass analyses (the plan arriving while
//! kernels already wait in the buffer), the results crossing as bytes — and the verdict, the
//! timeline and the gap histogram equal those of a whole load, on generated scenarios and on
//! every public export that has kernels.

mod common;

use std::path::Path;

use nsys_lens::detect::{DetectConfig, detect};
use nsys_lens::drill::gaps::idle_gap_histogram;
use nsys_lens::model::{HostTable, Trace};
use nsys_lens::profile::Profile;
use nsys_lens::streamed::feed::FeedChunk;
use nsys_lens::streamed::{
    Action, HostPlans, KernelPass, KernelPlan, KernelResults, LoaderMachine, Message, PROFILES,
    Schedule, SqliteKernels, Streamed, TailReader,
};
use nsys_lens::timeline::{Detail, Timeline};
use nsys_lens::trace::{self, LoadOptions, StagedLoad};

/// Opens `path` the way the page's two workers do and returns the joined trace.
fn stream_open(path: &Path, chunk: u32, plan_after_chunks: usize) -> Streamed {
    stream_open_with(path, chunk, plan_after_chunks, None)
}

/// [`stream_open`], driven the way the page drives its loader: the loader's
/// [`LoaderMachine`] is handed the analysis worker's messages (the plan after
/// `plan_after_chunks` chunks of `chunk` rows, then, with `tail_share`, the offer to read that
/// share of the rows left) and its actions are answered until it is done.
fn stream_open_with(
    path: &Path,
    chunk: u32,
    plan_after_chunks: usize,
    tail_share: Option<f64>,
) -> Streamed {
    let label = path.display().to_string();
    let host_conn = trace::open_path(path).expect("open (host)");
    let kernel_conn = trace::open_path(path).expect("open (kernels)");
    let (staged, plans, plan, feed) = host_plans(&host_conn, &label);
    let graph_nodes = KernelPlan::from_bytes(&plan).expect("plan").graph_nodes;
    let mut host = HostSide::new(staged, plans, feed.clone());
    let mut feed = feed.into_iter();

    let schema = trace::probe_export(&kernel_conn, &label).expect("probe (k)");
    let pass = KernelPass::new(&kernel_conn, &schema, &label).expect("kernel pass");
    let schedule = Schedule {
        chunk_rows: chunk,
        tail_share: tail_share.unwrap_or(0.0),
        min_tail_rows: 1,
        wait_for_offer: false,
    };
    let mut machine = LoaderMachine::new(pass, schedule);
    // With the plan first, the offer comes before it (the answer follows the plan at once);
    // else right after it.
    let offer_first = tail_share.is_some() && plan_after_chunks == 0;
    let (mut chunks, mut plan_sent, mut offer_sent) = (0, false, offer_first);
    let mut tail: Option<TailReader> = None;
    let mut tail_chunks = 0;
    let first = if offer_first {
        Message::Offer
    } else {
        Message::Continue
    };
    let mut next = machine.next(&kernel_conn, first).expect("start");
    let bytes = loop {
        let tail_bytes;
        let message = match next {
            Action::Continue => {
                chunks += 1;
                if !plan_sent && chunks > plan_after_chunks {
                    plan_sent = true;
                    Message::Plan(&plan)
                } else if plan_sent && tail_share.is_some() && !offer_sent {
                    offer_sent = true;
                    Message::Offer
                } else {
                    Message::Continue
                }
            }
            Action::NeedPlan => {
                plan_sent = true;
                Message::Plan(&plan)
            }
            Action::NeedFeed => {
                let chunk = feed
                    .next()
                    .expect("a chunk of windows when the sweeps wait");
                tail_bytes = chunk;
                Message::Feed(&tail_bytes)
            }
            Action::NeedOffer => panic!("{label}: no test hook here"),
            Action::Answer(range) => {
                let range = range.map(|r| {
                    TailReader::new(&host_conn, &schema, &label, graph_nodes, r).expect("tail")
                });
                tail = range;
                Message::Continue
            }
            Action::NeedTail => {
                let host = host.loaded(&host_conn, &label);
                let reader = tail.as_mut().expect("a tail was given");
                tail_bytes = reader
                    .next_chunk(&host_conn, chunk, |id| host.strings.resolve(id))
                    .expect("tail chunk")
                    .expect("the tail is not over while the pass waits for it");
                tail_chunks += 1;
                Message::Tail(&tail_bytes)
            }
            Action::Done(bytes) => break bytes,
        };
        next = machine.next(&kernel_conn, message).expect("loader step");
    };
    assert_eq!(
        tail.is_some(),
        tail_chunks > 0,
        "{label}: the rows given away came"
    );
    host.loaded(&host_conn, &label);
    let (host, plans) = host.finish();
    let results = KernelResults::from_bytes(&bytes).expect("results");
    Streamed::attach(host, plans, results).expect("attach")
}

/// The analysis worker's side after its plans: launch calls swept (or loaded) and the rest of
/// the host side loaded, once.
struct HostSide {
    staged: Option<StagedLoad>,
    plans: HostPlans,
    /// The chunks of windows, which the launch sweep reads again by index.
    kept: Vec<Vec<u8>>,
    host: Option<Trace>,
}

impl HostSide {
    fn new(staged: StagedLoad, plans: HostPlans, kept: Vec<Vec<u8>>) -> HostSide {
        HostSide {
            staged: Some(staged),
            plans,
            kept,
            host: None,
        }
    }

    fn loaded(&mut self, conn: &rusqlite::Connection, label: &str) -> &Trace {
        if let Some(mut staged) = self.staged.take() {
            let kept = &self.kept;
            let swept = self
                .plans
                .sweep_launches(conn, label, (&mut staged, &mut |_| true), &mut |i| {
                    kept.get(i).cloned()
                })
                .expect("sweep launches");
            let host = staged
                .finish(conn, label, LoadOptions::detect(), &mut |_| true)
                .expect("host");
            if swept {
                assert!(
                    host.runtime.is_empty(),
                    "{label}: swept launch calls are not held"
                );
            } else {
                self.plans.sweep_loaded_launches(&host);
            }
            self.host = Some(host);
        }
        self.host.as_ref().expect("loaded")
    }

    fn finish(self) -> (Trace, HostPlans) {
        (self.host.expect("loaded"), self.plans)
    }
}

/// The analysis worker's side up to the plans: strings, then the plans read from the NVTX ranges
/// as they stream (none kept), the kernel pass's plan as bytes and the chunks of windows fed to
/// it on the way.
fn host_plans(
    conn: &rusqlite::Connection,
    label: &str,
) -> (StagedLoad, HostPlans, Vec<u8>, Vec<Vec<u8>>) {
    host_plans_chunked(conn, label, nsys_lens::streamed::feed::CHUNK_ROWS)
}

/// [`host_plans`], `chunk_rows` NVTX ranges per chunk of windows.
fn host_plans_chunked(
    conn: &rusqlite::Connection,
    label: &str,
    chunk_rows: u64,
) -> (StagedLoad, HostPlans, Vec<u8>, Vec<Vec<u8>>) {
    let mut staged = StagedLoad::begin(conn, label, &mut |_| true).expect("begin");
    let mut feed = Vec::new();
    let mut out = |c| feed.push(c);
    let mut plans = HostPlans::load_chunked(
        &mut staged,
        (conn, label),
        &mut |_| true,
        (&mut out, chunk_rows),
    )
    .expect("plans");
    assert!(
        staged.trace().nvtx.is_empty(),
        "{label}: no NVTX range is held"
    );
    let plan = plans.kernel_plan(staged.trace());
    (staged, plans, plan, feed)
}

/// A whole load: what `nsys-lens detect` loads (`verdict`), or every column (timeline, gaps).
fn whole(path: &Path, verdict: bool) -> Trace {
    let opts = if verdict {
        LoadOptions::detect()
    } else {
        LoadOptions::all()
    };
    trace::load_path(path, opts).expect("load")
}

/// The page's verdict: the streamed pass's, or, for an export with copies, memsets or graph
/// replays under a profile counting them, the file's rows measured (as `web::Indexed` does).
fn page_verdict(
    streamed: &Streamed,
    label: &str,
    cfg: &DetectConfig,
) -> nsys_lens::error::Result<nsys_lens::detect::DetectReport> {
    if streamed.needs_rows(cfg.profile) {
        assert!(
            matches!(streamed.detect(cfg), Err(nsys_lens::error::Error::Usage(m)) if m == nsys_lens::streamed::NEEDS_ROWS),
            "{label}: the streamed pass refuses a verdict it cannot measure"
        );
        let conn = trace::open_path(Path::new(label)).expect("open (rows)");
        let rows = trace::FileRows::open(&conn, label, LoadOptions::page(), &mut |_| true)
            .expect("file rows");
        return nsys_lens::detect::detect_rows(&rows, cfg);
    }
    streamed.detect(cfg)
}

/// The page's GPU-idle gap histogram (`web::Indexed::gaps`): the streamed pass's, or the file's
/// rows' when it holds GPU work besides kernels.
fn page_gaps(streamed: &Streamed, path: &Path) -> nsys_lens::drill::gaps::GapHistogram {
    if !streamed.views_need_rows() {
        return streamed.gaps.clone();
    }
    let label = path.display().to_string();
    let conn = trace::open_path(path).expect("open (rows)");
    let rows = trace::FileRows::open(&conn, &label, LoadOptions::page(), &mut |_| true)
        .expect("file rows");
    idle_gap_histogram(&rows, None)
}

fn assert_same_verdict(streamed: &Streamed, full: &Trace, label: &str, what: &str) {
    assert_close_verdict(streamed, full, (label, what), 0.0);
}

/// [`assert_same_verdict`], floats equal within `rel` (relative).
fn assert_close_verdict(streamed: &Streamed, full: &Trace, (label, what): (&str, &str), rel: f64) {
    for profile in PROFILES {
        let cfg = DetectConfig {
            profile,
            file_label: label.to_string(),
            ..DetectConfig::default()
        };
        let want = detect(full, &cfg).map(|r| serde_json::to_value(r).expect("json"));
        let got =
            page_verdict(streamed, label, &cfg).map(|r| serde_json::to_value(r).expect("json"));
        match (want, got) {
            (Ok(w), Ok(g)) => assert!(
                common::json_close(&g, &w, rel),
                "{what}: {profile:?} verdict differs at {}",
                common::json_diff(&g, &w)
            ),
            (Err(w), Err(g)) => assert_eq!(g.to_string(), w.to_string(), "{what}: error"),
            (w, g) => panic!("{what} {profile:?}: whole load {w:?}, streamed {g:?}"),
        }
    }
}

/// Timeline views through the file's rowids equal those of the loaded table, zoomed out
/// (summary) and in (rows re-read), and so do hovers; returns how many hovers hit.
fn assert_same_timeline(streamed: &Streamed, full: &Trace, path: &Path, what: &str) -> usize {
    let label = path.display().to_string();
    let conn = trace::open_path(path).expect("open");
    let schema = trace::Schema::probe(&conn, &label).expect("schema");
    let work = trace::WorkRows::new(&schema);
    let nvtx = trace::NvtxRows::new(&schema);
    // The loaded table shows no host tracks: compared without them (crate/tests/timeline.rs
    // checks them against SQL).
    let host = [
        trace::HostRows::none(HostTable::Api),
        trace::HostRows::none(HostTable::Nvtx),
    ];
    let links = trace::Links::none();
    let source = SqliteKernels {
        conn: &conn,
        work: &work,
        nvtx: &nvtx,
        host: &host,
        links: &links,
        strings: &streamed.host.strings,
        label: &label,
    };
    let loaded = Timeline::new(full);
    // The page's timeline: the kernel pass's, or built again over the file's rows when the
    // export holds GPU work besides kernels (as `web::Indexed` does).
    let rebuilt = streamed.views_need_rows().then(|| {
        let rows = trace::FileRows::open(&conn, &label, LoadOptions::page(), &mut |_| true)
            .expect("file rows");
        streamed
            .work_timeline(&rows, &label)
            .expect("work timeline")
    });
    let page = rebuilt.as_ref().unwrap_or(&streamed.timeline);
    assert_eq!(page.extent(), loaded.extent(), "{what}: extent");
    let (s, e) = loaded.extent();
    let span = (e - s).max(1);
    for (a, b, detail) in [
        (s, e, Detail::Summary),
        (s, e, Detail::Exact),
        (s + span / 3, s + span / 3 + span / 50, Detail::Auto),
    ] {
        let got = page
            .view_with(&source, a, b.max(a + 1), 600, detail)
            .expect("streamed view");
        let want = loaded
            .view_with(full, a, b.max(a + 1), 600, detail)
            .expect("loaded view");
        if got != want {
            let [g, w] = [&got, &want].map(|v| serde_json::to_value(v).expect("json"));
            panic!(
                "{what}: view [{a}, {b}) {detail:?} differs at {}",
                common::json_diff(&g, &w)
            );
        }
    }
    // Hovers on every lane, at a few times: the forward-step lane's names are read back whole.
    let mut hits = 0;
    for lane in 0..loaded.lane_count() as u32 {
        for k in 1..8 {
            let t = s + span / 8 * k;
            let got = page.hit(&source, lane, t, span / 50).expect("hit");
            let want = loaded.hit(full, lane, t, span / 50).expect("hit");
            assert_eq!(got, want, "{what}: hover on lane {lane} at {t}");
            hits += usize::from(got.is_some());
        }
    }
    hits
}

#[test]
fn streamed_open_equals_a_whole_load_on_generated_scenarios() {
    for scenario in [
        "host-bound",
        "tp2-phases",
        "tp2-straggler",
        "cuda-graphs",
        "gaps",
        "capture-warmup",
        "capture-short",
        "serving-graphs",
        "copy-bound",
    ] {
        let (_dir, path, _) = common::generated(scenario, 2, 5);
        let full = whole(&path, false);
        let label = path.display().to_string();
        // Small chunks, the plan arriving after three of them: the buffered kernels are
        // renumbered into the plan's processes.
        let streamed = stream_open_with(&path, 97, 3, Some(0.6));
        assert_same_verdict(&streamed, &whole(&path, true), &label, scenario);
        let hits = assert_same_timeline(&streamed, &full, &path, scenario);
        assert!(hits > 0, "{scenario}: some hovers hit");
        assert_eq!(
            page_gaps(&streamed, &path),
            idle_gap_histogram(&full, None),
            "{scenario}: gap histogram"
        );
    }
}

/// Without a step marker the page's passes find the steps a whole load infers: the kernel
/// stream's unit in the kernel pass (`host-bound`), the CUDA-graph launches in the launch sweep
/// (`cuda-graphs`), whatever the chunking.
#[test]
fn streamed_open_infers_the_steps_a_whole_load_infers() {
    use nsys_lens::synth::{GenOptions, MarkerStyle, generate_with_markers};
    let dir = tempfile::tempdir().expect("tempdir");
    for (scenario, method) in [
        ("host-bound", "kernel-sequence"),
        ("cuda-graphs", "graph-launch"),
    ] {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        let opts = GenOptions { scale: 2, seed: 5 };
        generate_with_markers(scenario, &path, &opts, MarkerStyle::Unmarked).expect("generate");
        let label = path.display().to_string();
        let streamed = stream_open_with(&path, 97, 3, Some(0.6));
        assert_same_verdict(&streamed, &whole(&path, true), &label, scenario);
        let cfg = DetectConfig {
            file_label: label.clone(),
            ..DetectConfig::default()
        };
        let report = page_verdict(&streamed, &label, &cfg).expect("detect");
        let unit = report.inferred_steps.expect("inferred steps");
        assert_eq!(unit.method.name(), method, "{scenario}");
    }
}

#[test]
fn streamed_open_equals_a_whole_load_on_every_public_export() {
    let dir = common::public_traces_dir();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("public traces") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("sqlite") {
            continue;
        }
        let what = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let full = whole(&path, false);
        // The plan first, or after the whole table (every kernel's name and process renumbered).
        let plan_after = if checked % 2 == 0 { 0 } else { usize::MAX };
        // Half of them with part of the kernel table read by the analysis worker.
        let share = (checked % 4 < 2).then_some(0.5);
        let chunk = if share.is_some() { 200 } else { 1000 };
        let streamed = stream_open_with(&path, chunk, plan_after, share);
        let label = path.display().to_string();
        assert_same_verdict(&streamed, &whole(&path, true), &label, &what);
        if !full.kernels.is_empty() {
            assert_same_timeline(&streamed, &full, &path, &what);
            assert_eq!(
                page_gaps(&streamed, &path),
                idle_gap_histogram(&full, None),
                "{what}: gaps"
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} public exports with kernels");
}

/// A copy of `src` whose `table` is stored in reverse start order (not as nsys writes it).
fn reversed_table(src: &Path, dst: &Path, table: &str) {
    std::fs::copy(src, dst).expect("copy");
    let conn = rusqlite::Connection::open(dst).expect("open copy");
    conn.execute_batch(&format!(
        "CREATE TABLE k AS SELECT * FROM {table} ORDER BY start DESC;
         DELETE FROM {table};
         INSERT INTO {table} SELECT * FROM k;
         DROP TABLE k;"
    ))
    .expect("reorder");
}

/// Plan and results bytes that were cut short or are not ours decode to an error, never a
/// panic or an allocation the bytes announce but do not hold.
#[test]
fn damaged_plan_and_result_bytes_are_an_error() {
    let (_dir, path, _) = common::generated("tp2-phases", 2, 5);
    let conn = trace::open_path(&path).expect("open");
    let (_, _, plan, feed) = host_plans(&conn, &path.display().to_string());
    assert!(KernelPlan::from_bytes(&plan).is_ok());
    let chunk = feed.last().expect("a chunk of windows");
    assert!(FeedChunk::from_bytes(chunk).is_ok());
    for bytes in [&chunk[..chunk.len() / 2], &chunk[..1], &[][..]] {
        assert!(
            FeedChunk::from_bytes(bytes).is_err(),
            "{} bytes",
            bytes.len()
        );
    }
    let mut junk = [0xffu8; 64];
    junk[0] = 2;
    for bytes in [&plan[..plan.len() / 2], &plan[..1], &[][..], &junk[..]] {
        assert!(
            KernelPlan::from_bytes(bytes).is_err(),
            "{} bytes",
            bytes.len()
        );
        assert!(
            KernelResults::from_bytes(bytes).is_err(),
            "{} bytes",
            bytes.len()
        );
    }
}

/// NVTX ranges out of start order cannot be folded as they stream: the plans are built from
/// the table loaded whole instead, the kernel pass gets the windows whole in its plan rather
/// than fed, and the verdict still equals a whole load's.
#[test]
fn an_nvtx_table_out_of_start_order_is_read_whole_for_the_plans() {
    let (dir, sorted, _) = common::generated("tp2-phases", 2, 5);
    let reversed = dir.path().join("reversed.sqlite");
    reversed_table(&sorted, &reversed, "NVTX_EVENTS");
    let label = reversed.display().to_string();
    let streamed = stream_open(&reversed, 1000, 0);
    assert_same_verdict(&streamed, &whole(&reversed, true), &label, "reversed NVTX");
    let [fed, whole_plan] = [&sorted, &reversed].map(|path| {
        let conn = trace::open_path(path).expect("open");
        let (_, _, bytes, feed) = host_plans(&conn, &path.display().to_string());
        let plan = KernelPlan::from_bytes(&bytes).expect("plan");
        let sweeps = serde_json::to_value(&plan.sweeps).expect("json");
        let windows =
            [0, 1].map(|i| !sweeps[i]["context"].is_null() && !sweeps[i]["generation"].is_null());
        (plan.fed, windows, feed.len())
    });
    assert!(fed.0, "sorted NVTX: the windows are fed");
    assert_eq!(fed.1, [false; 2], "and not in the plan");
    assert!(fed.2 > 0, "chunks of windows");
    assert!(!whole_plan.0, "reversed NVTX: no feed");
    assert_eq!(whole_plan.1, [true; 2], "both phases' windows in the plan");
}

/// nsys does not promise rows in start order (2025.6 release notes): on the first kernel out of
/// order the pass stops reading, and the page's verdict, gap histogram and timeline are measured
/// over the file's rows (as `web::Indexed` does), equal to a whole load of the same file, which
/// equals the sorted original's.
#[test]
fn a_kernel_table_out_of_start_order_is_read_as_sorted_runs_not_refused() {
    let (dir, sorted, _) = common::generated("tp2-straggler", 1, 5);
    let reversed = dir.path().join("reversed.sqlite");
    reversed_table(&sorted, &reversed, "CUPTI_ACTIVITY_KIND_KERNEL");
    let label = reversed.display().to_string();
    let conn = trace::open_path(&reversed).expect("open");
    let schema = trace::probe_export(&conn, &label).expect("probe");
    let mut pass = KernelPass::new(&conn, &schema, &label).expect("pass");
    let mut host = StagedLoad::begin(&conn, &label, &mut |_| true).expect("begin");
    host.nvtx(&conn, &label, true, &mut |_| true).expect("nvtx");
    let plan = KernelPlan::of(host.trace(), &HostPlans::of(host.trace())).expect("plan");
    pass.set_plan(plan).expect("plan");
    let mut steps = 0;
    while pass.step(&conn, 10).expect("step") {
        steps += 1;
    }
    let kernels: i64 = conn
        .query_row("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert!(
        steps * 10 < kernels / 2,
        "the pass stopped early: {steps} steps of 10 rows"
    );
    assert!(pass.finish().expect("finish").unordered);

    let streamed = stream_open(&reversed, 1000, 0);
    assert!(streamed.unordered);
    let loaded = whole(&reversed, false);
    assert_same_verdict(
        &streamed,
        &whole(&reversed, true),
        &label,
        "reversed kernels",
    );
    assert_same_timeline(&streamed, &loaded, &reversed, "reversed kernels");
    assert_eq!(
        page_gaps(&streamed, &reversed),
        idle_gap_histogram(&loaded, None)
    );
    let cfg = DetectConfig::default();
    let want = serde_json::to_value(detect(&whole(&sorted, true), &cfg).expect("detect"));
    let got = serde_json::to_value(detect(&whole(&reversed, true), &cfg).expect("detect"));
    let strip = |mut v: serde_json::Value| {
        v["trace"]["file"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(got.expect("json")), strip(want.expect("json")));
}

/// A whole-graph capture of a trace that launches CUDA graphs: the verdict warns when no kernel
/// carries a `graphNodeId`, so the pass reads that column there (and only there), and the
/// streamed verdict says the same as a whole load with and without graph nodes.
#[test]
fn whole_graph_captures_get_the_same_graph_warning_as_a_whole_load() {
    let (dir, nodes, _) = common::generated("cuda-graphs", 1, 5);
    let set_graph_mode = "UPDATE META_DATA_CAPTURE SET value = 'Graph' WHERE name LIKE '%CUDA_GRAPH_TRACE_OPTIONS:MODE'";
    let no_nodes = dir.path().join("graph-mode-no-nodes.sqlite");
    std::fs::copy(&nodes, &no_nodes).expect("copy");
    let sql = |path: &Path, sql: &str| {
        rusqlite::Connection::open(path)
            .expect("open")
            .execute(sql, [])
            .expect("update")
    };
    assert!(sql(&nodes, set_graph_mode) > 0, "the capture option exists");
    sql(&no_nodes, set_graph_mode);
    sql(
        &no_nodes,
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = NULL",
    );
    let warned = |s: &Streamed, label: &str| {
        page_verdict(s, label, &DetectConfig::default())
            .expect("detect")
            .warnings
            .iter()
            .any(|w| w.contains("traced as whole graphs"))
    };
    for (path, warns) in [(&nodes, false), (&no_nodes, true)] {
        let label = path.display().to_string();
        let streamed = stream_open(path, 1000, 0);
        assert_eq!(warned(&streamed, &label), warns, "{label}");
        assert_same_verdict(&streamed, &whole(path, true), &label, &label);
    }
}

/// Launch calls after the last kernel row's end wait in the launch sweep until the kernel hull's
/// end is known: here the last row is cut short so an earlier kernel sets the hull's end, and
/// calls are added before, across and after it. The streamed verdict equals the whole load's in
/// both profiles, and those calls do change the aggregate launch overhead.
#[test]
fn launch_calls_past_the_last_kernel_row_count_up_to_the_hull_end() {
    let (dir, cut, _) = common::generated("tp2-phases", 1, 5);
    let db = rusqlite::Connection::open(&cut).expect("open");
    db.execute_batch(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start + 1
           WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);",
    )
    .expect("cut the last kernel");
    let (last_end, hull_end): (i64, i64) = db
        .query_row(
            "SELECT (SELECT \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid DESC LIMIT 1),
                    (SELECT max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("edges");
    assert!(last_end < hull_end - 100, "an earlier kernel ends the hull");
    drop(db);
    let late = dir.path().join("late-launches.sqlite");
    std::fs::copy(&cut, &late).expect("copy");
    let db = rusqlite::Connection::open(&late).expect("open");
    let mid = last_end + (hull_end - last_end) / 2;
    for (start, end) in [
        // Long enough (50 ms) to move the rounded trtllm-skill ratio, which sums durations.
        (last_end + 1, hull_end + 50_000_000),
        (mid, hull_end + 1_000),
        (hull_end - 1, hull_end + 5),
        (hull_end + 10, hull_end + 20),
    ] {
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
               SELECT ?1, ?2, eventClass, globalTid, correlationId, nameId, returnValue, callchainId
               FROM CUPTI_ACTIVITY_KIND_RUNTIME
               WHERE nameId = (SELECT id FROM StringIds WHERE value = 'cudaLaunchKernel')
               ORDER BY rowid LIMIT 1",
            [start, end],
        )
        .expect("add a launch call");
    }
    drop(db);
    for profile in PROFILES {
        let cfg = DetectConfig {
            profile,
            ..DetectConfig::default()
        };
        let m2 = |path: &Path| {
            detect(&whole(path, true), &cfg)
                .expect("detect")
                .aggregate_metrics
                .launch_overhead_ratio
        };
        assert_ne!(m2(&cut), m2(&late), "{profile:?}: the late calls count");
    }
    let label = late.display().to_string();
    let streamed = stream_open(&late, 1000, 0);
    assert_same_verdict(&streamed, &whole(&late, true), &label, "late launches");
}

/// The plans keep step counts, not steps: the TP warnings still count them as placed — each of
/// the generator's forward steps on every rank (device), merged (standard) or counted twice
/// (`trtllm-skill`) — and the streamed open says the same as a whole load.
#[test]
fn tp_copies_of_forward_steps_are_counted_as_placed() {
    let (_dir, path, answers) = common::generated("tp2-phases", 1, 5);
    let steps = common::placed_steps(&answers);
    let ranks = answers["devices"].as_array().expect("devices").len() as u64;
    assert!(steps > 0 && ranks == 2);
    let label = path.display().to_string();
    let streamed = stream_open(&path, 1000, 0);
    let want = [
        (
            Profile::Standard,
            format!(
                "{} forward-step ranges were merged into {steps} steps",
                ranks * steps
            ),
        ),
        (
            Profile::TrtllmSkill,
            format!("({} ranges for {steps} distinct steps;", ranks * steps),
        ),
    ];
    for (profile, warning) in want {
        let cfg = DetectConfig {
            profile,
            file_label: label.clone(),
            ..DetectConfig::default()
        };
        let report = page_verdict(&streamed, &label, &cfg).expect("detect");
        assert!(
            report.warnings.iter().any(|w| w.contains(&warning)),
            "{profile:?}: {warning:?} not in {:?}",
            report.warnings
        );
    }
    assert_same_verdict(&streamed, &whole(&path, true), &label, "tp2-phases");
}

/// Kernel rows read by the analysis worker join the pass only whole and in order: a chunk out
/// of order, cut, foreign or before the pass's own rows are read is an error, and a pass whose
/// given rows never came does not finish.
#[test]
fn kernel_rows_read_for_the_pass_join_it_only_whole_and_in_order() {
    let (_dir, path, _) = common::generated("host-bound", 2, 5);
    let label = path.display().to_string();
    let conn = trace::open_path(&path).expect("open");
    let (staged, _, plan, feed) = host_plans(&conn, &label);
    let plan = KernelPlan::from_bytes(&plan).expect("plan");
    let graph_nodes = plan.graph_nodes;
    let schema = trace::probe_export(&conn, &label).expect("probe");
    let mut pass = KernelPass::new(&conn, &schema, &label).expect("pass");
    pass.set_plan(plan).expect("set plan");
    for chunk in &feed {
        pass.feed(chunk).expect("feed");
    }
    assert!(pass.step(&conn, 50).expect("step"));
    let (first, last) = pass.split_tail(0.5, 1).expect("split");
    assert!(pass.split_tail(0.5, 1).is_none(), "split once");
    let names = |id| staged.trace().strings.resolve(id);
    let mut reader =
        TailReader::new(&conn, &schema, &label, graph_nodes, (first, last)).expect("r");
    let one = reader
        .next_chunk(&conn, 40, names)
        .expect("read")
        .expect("a chunk");
    let two = reader
        .next_chunk(&conn, 40, names)
        .expect("read")
        .expect("a chunk");
    assert!(pass.push_tail(&one).is_err(), "before the pass's own rows");
    while pass.step(&conn, 1000).expect("step") {}
    assert!(pass.push_tail(&two).is_err(), "out of order");
    assert!(pass.push_tail(&one[..one.len() / 2]).is_err(), "cut");
    assert!(pass.push_tail(&[7u8; 40]).is_err(), "foreign");
    pass.push_tail(&one).expect("in order");
    pass.push_tail(&two).expect("in order");
    assert!(pass.tail_pending());
    assert!(
        pass.finish().is_err(),
        "the rest of the given rows never came"
    );
}

/// The page's kernel pass, fed chunks of windows only when its sweeps wait for them, holds as
/// many window and host-prep spans on a trace with four times the forward steps: what it holds
/// is what lies around the kernels it is at, not the trace's steps. `gpu-bound` names its steps
/// inline, which the `trtllm-skill` profile does not read: its sweep moves on all the same.
#[test]
fn the_kernel_pass_holds_as_many_window_spans_on_a_trace_four_times_longer() {
    for scenario in ["host-bound", "gpu-bound"] {
        kernel_pass_holds_as_many_window_spans(scenario);
    }
}

fn kernel_pass_holds_as_many_window_spans(scenario: &str) {
    let most_held = |scale: u32| {
        let (_dir, path, answers) = common::generated(scenario, scale, 5);
        let label = path.display().to_string();
        let conn = trace::open_path(&path).expect("open");
        let (_, _, plan, feed) = host_plans_chunked(&conn, &label, 64);
        let schema = trace::probe_export(&conn, &label).expect("probe");
        let mut pass = KernelPass::new(&conn, &schema, &label).expect("pass");
        pass.set_plan(KernelPlan::from_bytes(&plan).expect("plan"))
            .expect("set plan");
        assert!(feed.len() >= scale as usize, "{} chunks", feed.len());
        let mut feed = feed.into_iter();
        let mut most = 0;
        loop {
            let more = pass.step(&conn, 1000).expect("step");
            while pass.needs_feed() {
                let Some(chunk) = feed.next() else { break };
                pass.feed(&chunk).expect("feed");
                most = most.max(pass.held_spans());
            }
            if !more {
                break;
            }
        }
        assert!(pass.finish().is_ok(), "{label}: the pass ends");
        (common::placed_steps(&answers), most)
    };
    let (steps, most) = most_held(8);
    let (long_steps, long_most) = most_held(32);
    assert_eq!(long_steps, 4 * steps, "{scenario}");
    assert!(most > 0, "{scenario}: spans are fed");
    assert!(
        long_most <= most + most / 4,
        "{scenario}: {most} spans held at {steps} steps, {long_most} at {long_steps}"
    );
}

/// The analysis worker holds no string per forward step, whether the steps are named through
/// `StringIds` (`host-bound`) or by inline text (`gpu-bound`, as most real exports): four times
/// the steps, the same values held. Their rows still get ids, a bit and a half each.
#[test]
fn a_streamed_open_holds_no_string_per_forward_step() {
    for scenario in ["host-bound", "gpu-bound"] {
        let held = |scale: u32| {
            let (_dir, path, answers) = common::generated(scenario, scale, 5);
            let label = path.display().to_string();
            let conn = trace::open_path(&path).expect("open");
            let (staged, _, _, _) = host_plans(&conn, &label);
            let strings = &staged.trace().strings;
            let unheld = (0..strings.len() as u32)
                .filter(|&id| strings.is_unheld(id))
                .count();
            (
                common::placed_steps(&answers),
                strings.held_values(),
                unheld as u64,
            )
        };
        let (steps, values, unheld) = held(4);
        let (long_steps, long_values, long_unheld) = held(16);
        assert_eq!(long_steps, 4 * steps, "{scenario}");
        assert!(steps > 100, "{scenario}: {steps} steps");
        assert_eq!(values, long_values, "{scenario}: values held");
        if scenario == "host-bound" {
            assert_eq!(
                (unheld, long_unheld),
                (steps, long_steps),
                "{scenario}: a StringIds row per step, none held"
            );
        }
    }
}

/// Under the page's test hook the loader reads nothing before the plan, then waits for the
/// offer, and answers it with rows to read; a second plan or offer changes nothing.
#[test]
fn the_loader_under_the_test_hook_waits_for_the_plan_then_the_offer() {
    let (_dir, path, _) = common::generated("host-bound", 2, 5);
    let label = path.display().to_string();
    let host_conn = trace::open_path(&path).expect("open (host)");
    let conn = trace::open_path(&path).expect("open (kernels)");
    let (_staged, _plans, plan, _feed) = host_plans(&host_conn, &label);
    let schema = trace::probe_export(&conn, &label).expect("probe");
    let pass = KernelPass::new(&conn, &schema, &label).expect("pass");
    let schedule = Schedule {
        chunk_rows: 100,
        min_tail_rows: 1,
        ..Schedule::page(true)
    };
    let mut machine = LoaderMachine::new(pass, schedule);
    let mut next = |m: Message<'_>| machine.next(&conn, m).expect("step");
    assert_eq!(next(Message::Continue), Action::NeedPlan);
    assert_eq!(next(Message::Continue), Action::NeedPlan, "still no plan");
    assert_eq!(next(Message::Plan(&plan)), Action::NeedOffer);
    match next(Message::Offer) {
        Action::Answer(Some((first, last))) => assert!(first <= last, "{first}..={last}"),
        other => panic!("the offer is answered with rows: {other:?}"),
    }
    assert_ne!(next(Message::Offer), Action::NeedOffer, "answered once");
}

/// M2 (launch overhead) of every scope of a report: the value, its evidence (numerator,
/// denominator, threshold, crossed), each process's launch figures, the launch-call count and
/// the warnings read from the launch calls' names.
fn m2_figures(report: &nsys_lens::detect::DetectReport) -> serde_json::Value {
    let v = serde_json::to_value(report).expect("json");
    let processes = |scope: &serde_json::Value| -> Vec<serde_json::Value> {
        let rows = scope["per_process"].as_array().cloned().unwrap_or_default();
        rows.iter()
            .map(|p| {
                serde_json::json!([
                    p["pid"],
                    p["launch_calls"],
                    p["launch_us"],
                    p["launch_overhead_ratio"]
                ])
            })
            .collect()
    };
    let scope = |metrics: &serde_json::Value, s: &serde_json::Value| {
        serde_json::json!({
            "value": metrics["launch_overhead_ratio"],
            "evidence": s["evidence"]["launch_overhead_ratio"],
            "per_process": processes(s),
        })
    };
    let phase = |name: &str| {
        let p = &v["phases"][name];
        (!p.is_null()).then(|| scope(&p["metrics"], p))
    };
    let launch_warnings: Vec<&serde_json::Value> = v["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| w.as_str().is_some_and(|w| w.contains("launch")))
        .collect();
    serde_json::json!({
        "aggregate": scope(&v["aggregate_metrics"], &v),
        "context": phase("context"),
        "generation": phase("generation"),
        "launch_api_calls": v["trace"]["launch_api_calls"],
        "warnings": launch_warnings,
    })
}

/// What the M2 comparisons saw, so that they cannot pass on figures that are all zero.
#[derive(Default)]
struct M2Seen {
    /// Scopes with a positive launch overhead, per profile.
    positive: [usize; 2],
    /// Phase scopes compared.
    phases: usize,
    /// Processes with launch figures compared (standard).
    processes: usize,
}

/// Native `detect` (the loaded launch calls swept) and the page's streamed open (the launch
/// calls swept from the file in start order, not held) give the same M2 figures in every scope
/// and both profiles; the native figures per profile, or `None` for an export without kernels.
fn assert_same_m2(path: &Path, seen: &mut M2Seen) -> Option<Vec<serde_json::Value>> {
    let label = path.display().to_string();
    let loaded = whole(path, true);
    if loaded.kernels.is_empty() {
        return None;
    }
    let streamed = stream_open(path, 1000, 0);
    let mut figures = Vec::new();
    for (i, profile) in PROFILES.into_iter().enumerate() {
        let cfg = DetectConfig {
            profile,
            file_label: label.clone(),
            ..DetectConfig::default()
        };
        let native = m2_figures(&detect(&loaded, &cfg).expect("native detect"));
        let paged = m2_figures(&page_verdict(&streamed, &label, &cfg).expect("streamed detect"));
        assert!(
            native == paged,
            "{label} {profile:?}: M2 differs at {}",
            common::json_diff(&native, &paged)
        );
        for s in ["aggregate", "context", "generation"] {
            let value = native[s]["value"].as_f64();
            seen.positive[i] += usize::from(value.is_some_and(|v| v > 0.0));
            seen.phases += usize::from(s != "aggregate" && !native[s].is_null());
            seen.processes += native[s]["per_process"].as_array().map_or(0, Vec::len);
        }
        figures.push(native);
    }
    Some(figures)
}

/// Native `detect` and the page's streamed open give the same M2 figures on every scenario,
/// and their values in every scope are the generator's answers, computed from what it placed.
#[test]
fn native_m2_equals_the_page_sweep_and_the_answers_on_every_scenario() {
    let mut seen = M2Seen::default();
    for &(scenario, _) in nsys_lens::synth::scenarios() {
        let (_dir, path, answers) = common::generated(scenario, 2, 5);
        let figures = assert_same_m2(&path, &mut seen).expect("kernels");
        for (m2, profile) in figures.iter().zip(["standard", "trtllm-skill"]) {
            let want = &answers["profiles"][profile];
            let scopes = [
                ("aggregate", &want["aggregate_metrics"]),
                ("context", &want["phases"]["context"]["metrics"]),
                ("generation", &want["phases"]["generation"]["metrics"]),
            ];
            for (scope, metrics) in scopes {
                let want = metrics["launch_overhead_ratio"].as_f64();
                let got = m2[scope]["value"].as_f64();
                let close = match (want, got) {
                    (Some(w), Some(g)) => (w - g).abs() <= 1e-9,
                    (w, g) => w.is_none() && g.is_none(),
                };
                assert!(
                    close,
                    "{scenario} {profile} {scope}: {got:?}, answer {want:?}"
                );
            }
        }
    }
    assert!(
        seen.positive.iter().all(|&n| n >= 10),
        "{:?}",
        seen.positive
    );
    assert!(seen.phases >= 10 && seen.processes >= 10);
}

#[test]
fn native_m2_equals_the_page_sweep_on_every_public_export() {
    let mut seen = M2Seen::default();
    let mut compared = 0;
    for entry in std::fs::read_dir(common::public_traces_dir()).expect("public traces") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "sqlite") {
            compared += usize::from(assert_same_m2(&path, &mut seen).is_some());
        }
    }
    assert!(compared >= 8, "only {compared} exports with kernels");
    // Most exports launch through versioned names, which `trtllm-skill` does not count.
    assert!(
        seen.positive[0] >= 8 && seen.positive[1] >= 1,
        "{:?}",
        seen.positive
    );
}

/// The page's streamed verdict and timeline read every built-in step marker as a whole load
/// does, and report the same marker, holding none of the step names.
#[test]
fn streamed_open_reads_every_builtin_step_marker_as_a_whole_load() {
    use nsys_lens::synth::MarkerStyle;
    for (style, key) in [
        (MarkerStyle::Vllm, "vllm"),
        (MarkerStyle::VllmOld, "vllm"),
        (MarkerStyle::Sglang, "sglang"),
        (MarkerStyle::Pytorch, "pytorch"),
    ] {
        for scenario in ["host-bound", "tp2-straggler"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join(format!("{scenario}.sqlite"));
            let opts = nsys_lens::synth::GenOptions { scale: 2, seed: 5 };
            nsys_lens::synth::generate_with_markers(scenario, &path, &opts, style)
                .expect("generate");
            let what = format!("{scenario} {key}");
            let label = path.display().to_string();
            let streamed = stream_open_with(&path, 97, 3, Some(0.6));
            assert_same_verdict(&streamed, &whole(&path, true), &label, &what);
            let report = page_verdict(&streamed, &label, &DetectConfig::default()).expect("detect");
            let marker = report.step_marker.expect("a marker");
            assert_eq!(marker.marker.as_deref(), Some(key), "{what}");
            assert!(report.trace.forward_steps > 0, "{what}");
            let full = whole(&path, false);
            assert_same_timeline(&streamed, &full, &path, &what);
        }
    }
}

/// nsys promises no row order (2025.6 release notes): the page's verdict, gap histogram and
/// timeline of every input rewritten in every order ([`common::ROW_ORDERS`]) equal the CLI's of
/// the same file, whose verdict equals the original's (`trtllm-skill` adds host-prep ranges in the
/// reference's order, so ranges starting together add in another order: floats equal to 1e-12).
/// A kernel table out of order stops the pass
/// and is read as a merge of its sorted runs; one in order (a single stream, `grouped`) is not.
#[test]
fn the_page_verdict_of_an_export_in_any_row_order_equals_the_originals() {
    let (_dirs, paths) = common::row_order_inputs();
    let tmp = tempfile::tempdir().expect("tempdir");
    let strip = |mut v: serde_json::Value| {
        v["trace"]["file"] = serde_json::Value::Null;
        v
    };
    let (mut unordered, mut checked) = (0, 0);
    for path in &paths {
        let original = whole(path, true);
        for order in common::ROW_ORDERS {
            let copy = common::reordered(path, tmp.path(), order);
            let label = copy.display().to_string();
            let what = format!("{} in {order} order", path.display());
            let loaded = whole(&copy, true);
            for profile in PROFILES {
                let cfg = DetectConfig {
                    profile,
                    ..DetectConfig::default()
                };
                let want =
                    detect(&original, &cfg).map(|r| strip(serde_json::to_value(r).expect("json")));
                let got =
                    detect(&loaded, &cfg).map(|r| strip(serde_json::to_value(r).expect("json")));
                match (want, got) {
                    (Ok(w), Ok(g)) => assert!(
                        common::json_close(&g, &w, 1e-12),
                        "{what}: {}",
                        common::json_diff(&g, &w)
                    ),
                    (Err(w), Err(g)) => assert_eq!(g.to_string(), w.to_string(), "{what}"),
                    (w, g) => panic!("{what}: original {w:?}, reordered {g:?}"),
                }
            }
            let streamed = stream_open(&copy, 1000, 0);
            unordered += usize::from(streamed.unordered);
            assert_close_verdict(&streamed, &loaded, (&label, &what), 1e-12);
            let full = whole(&copy, false);
            if !full.kernels.is_empty() {
                assert_same_timeline(&streamed, &full, &copy, &what);
                assert_eq!(
                    page_gaps(&streamed, &copy),
                    idle_gap_histogram(&whole(path, false), None),
                    "{what}: gaps"
                );
                checked += 1;
            }
        }
    }
    assert!(
        unordered >= paths.len(),
        "{unordered} kernel tables out of order"
    );
    assert!(checked >= 30, "{checked} timelines compared");
}
