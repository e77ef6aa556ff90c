//! Replays the page's analysis flow natively (sequential load with the page's options, timeline
//! summary, detect, gap histogram) and prints heap high-water marks after each step: the wasm
//! worker runs the same code, so this is where its memory goes. Then times timeline views from
//! full extent down to a deep zoom (summary or re-read rows). With `views`, the whole load is
//! replaced by the deeper views over the file's rows (Root cause in both profiles, Drill-down,
//! the report), as the page runs them on a streamed trace: nothing is loaded (the drill-down
//! twice: indexing the rows itself, and over the index Root cause read, as the page runs it).
//! With `DRILL_ONLY` set, only Root cause, then the drill-down over its index, with and without
//! the explainer riding on it (for profiling that step); with `SKILL_ONLY`, only the
//! `trtllm-skill` Root cause, then the drill-down over the index it kept. Not a test; prints
//! figures.
//! Usage: cargo run --release -p nsys-lens --example page_memory -- TRACE.sqlite [detect|views]
use std::time::Instant;

#[path = "../tests/common/counting.rs"]
mod counting;
use counting::mark;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: page_memory TRACE.sqlite")?;
    let path = std::path::Path::new(&path);
    let t = Instant::now();
    let conn = nsys_lens::trace::open_path(path)?;
    nsys_lens::trace::configure(&conn, "trace")?;
    let mut quiet = |_: nsys_lens::trace::Progress| true;
    if std::env::args().nth(2).as_deref() == Some("views") {
        return deeper_views(&conn, t);
    }
    let opts = if std::env::args().nth(2).as_deref() == Some("detect") {
        nsys_lens::trace::LoadOptions::detect()
    } else {
        nsys_lens::trace::LoadOptions::page()
    };
    let trace = nsys_lens::trace::load(&conn, "trace", opts, &mut quiet)?;
    drop(conn);
    mark("load (page options)", t);
    println!(
        "  kernels {}  runtime {}  nvtx {}",
        trace.kernels.len(),
        trace.runtime.len(),
        trace.nvtx.len()
    );
    let built = Instant::now();
    let timeline = nsys_lens::timeline::Timeline::new(&trace);
    mark("timeline summary", t);
    println!("  built in {:.2} s", built.elapsed().as_secs_f64());
    let report = nsys_lens::detect::detect(&trace, &Default::default())?;
    mark("detect", t);
    let gaps = nsys_lens::drill::gaps::idle_gap_histogram(&trace, None);
    mark("gap histogram", t);
    println!(
        "  timeline summary {} KiB ({} lanes), row-block index {} KiB",
        timeline.summary_bytes() / 1024,
        timeline.lane_count(),
        timeline.index_bytes() / 1024
    );
    let (s, e) = timeline.extent();
    let view = timeline.view(&trace, s, e, 1200)?;
    mark("timeline view", t);
    std::hint::black_box((report, gaps, view));
    time_views(&timeline, &trace, (s, e))
}

/// Root cause, Drill-down and the report over the file's rows (`FileRows`: nothing loaded), as
/// the page's views call them on a streamed trace.
fn deeper_views(conn: &rusqlite::Connection, t: Instant) -> Result<(), Box<dyn std::error::Error>> {
    use nsys_lens::model::rows::EventRows;
    let page = nsys_lens::trace::LoadOptions::page();
    // The page keeps up to 256 MiB of rows (`web::indexed::row_cache_budget`); `ROW_CACHE_MIB`
    // sets another budget.
    let cache_mib = std::env::var("ROW_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(256);
    let scan = nsys_lens::trace::FileScan::keeping_rows(
        conn,
        "trace",
        page,
        &mut |_| true,
        cache_mib << 20,
    )?;
    let rows = nsys_lens::trace::FileRows::over(conn, &scan);
    mark("file scan (strings, processes, runs)", t);
    println!(
        "  rows kept: {} MiB ({})",
        scan.cached_bytes() >> 20,
        scan.cached_rows()
            .iter()
            .map(|(table, rows, all)| format!("{table} {rows}{}", if *all { " (all)" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let counted = Counted {
        rows: &rows,
        passes: Default::default(),
    };
    let rows: &dyn EventRows = &counted;
    let skill = nsys_lens::analyze::AnalyzeConfig {
        profile: nsys_lens::profile::Profile::TrtllmSkill,
        ..Default::default()
    };
    if std::env::var_os("SKILL_ONLY").is_some() {
        // As the page runs them: Root cause keeping drill's index, the drill-down over it.
        let (root_cause, read) = nsys_lens::analyze::analyze_rows_indexed(rows, &skill)?;
        mark("root cause (trtllm-skill)", t);
        counted.report();
        if let Some(read) = read {
            drill_after(&counted, read, Instant::now())?;
        }
        std::hint::black_box(root_cause);
        return Ok(());
    }
    let window = nsys_lens::analyze::window::window_figures(rows)?;
    mark("root cause's window figures", t);
    counted.report();
    std::hint::black_box(window);
    let cfg = nsys_lens::analyze::AnalyzeConfig::default();
    let (root_cause, read) = nsys_lens::analyze::analyze_rows_indexed(rows, &cfg)?;
    mark("root cause (analyze)", t);
    counted.report();
    let drill_only = std::env::var_os("DRILL_ONLY").is_some();
    let opts = nsys_lens::drill::DrillOptions::default();
    if drill_only {
        if let Some(read) = read {
            let indexed = drill_after(&counted, read, Instant::now())?;
            let t = Instant::now();
            std::hint::black_box(nsys_lens::drill::drill_indexed(&indexed, &opts)?);
            mark("drill-down without the explainer", t);
            counted.report();
        }
        return Ok(());
    }
    std::hint::black_box(nsys_lens::analyze::analyze_rows(rows, &skill)?);
    mark("root cause (trtllm-skill)", t);
    counted.report();
    let input = nsys_lens::drill::DrillInput {
        rows,
        label: "trace",
        step_marker: None,
    };
    let drill = nsys_lens::findings::DrillFindings::drill(&[input], &opts)?;
    mark("drill-down with findings", t);
    counted.report();
    if let Some(read) = read {
        drill_after(&counted, read, t)?;
    }
    let verdict = |cfg: &nsys_lens::detect::DetectConfig| nsys_lens::detect::detect_rows(rows, cfg);
    let doc = nsys_lens::report::document::build_rows(rows, "trace", &opts, &verdict)?;
    mark("report document (verdict over the rows)", t);
    counted.report();
    println!("  rows cached: {} MiB", scan.cached_bytes() >> 20);
    std::hint::black_box((root_cause, drill, doc));
    Ok(())
}

/// The drill-down as the page runs it after Root cause: over the index (and the gaps) Root
/// cause read, under the default options; its figures printed from `t`. Gives the index back.
fn drill_after<'r>(
    counted: &'r Counted<'r>,
    read: nsys_lens::analyze::DrillRead,
    t: Instant,
) -> Result<[nsys_lens::drill::RowIndex<'r>; 1], Box<dyn std::error::Error>> {
    let indexed = [nsys_lens::drill::RowIndex::with_facts(
        counted, "trace", read.index,
    )];
    std::hint::black_box(nsys_lens::findings::DrillFindings::explained_after(
        &indexed,
        &nsys_lens::drill::DrillOptions::default(),
        read.gaps.as_ref(),
    )?);
    mark("drill-down after root cause", t);
    counted.report();
    Ok(indexed)
}

/// Times views centred on the middle of the trace, each 10× narrower than the previous one.
fn time_views(
    timeline: &nsys_lens::timeline::Timeline,
    trace: &nsys_lens::model::Trace,
    (s, e): (i64, i64),
) -> Result<(), Box<dyn std::error::Error>> {
    let mid = s + (e - s) / 2;
    let mut span = e - s;
    while span >= 1_000 {
        let t = Instant::now();
        let view = timeline.view(trace, mid - span / 2, mid + span / 2, 1200)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let rows = timeline.rows_covering(mid - span / 2, mid + span / 2);
        let how = if rows <= nsys_lens::timeline::EXACT_ROWS {
            "exact"
        } else {
            "summary"
        };
        println!("  view span {span:>14} ns  {ms:>8.2} ms  {how:<7} ({rows} rows cover it)");
        std::hint::black_box(view);
        span /= 10;
    }
    summary_error(timeline, trace, (s, e))?;
    let k = &trace.kernels;
    let i = k.len() / 2;
    if i >= k.len() {
        return Ok(());
    }
    let at = k.start[i] + (k.end[i] - k.start[i]) / 2;
    let t = Instant::now();
    let hits = (0..timeline.lane_count() as u32)
        .map(|lane| timeline.hit(trace, lane, at, 1_000))
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "  hits on every lane at the middle kernel {:>6.2} ms  ({:?})",
        t.elapsed().as_secs_f64() * 1e3,
        hits.iter().flatten().map(|h| &h.name).collect::<Vec<_>>()
    );
    Ok(())
}

/// The full-extent view from the summary against the exact one: the largest busy difference
/// and the largest documented bound over all columns.
fn summary_error(
    timeline: &nsys_lens::timeline::Timeline,
    trace: &nsys_lens::model::Trace,
    (s, e): (i64, i64),
) -> Result<(), Box<dyn std::error::Error>> {
    use nsys_lens::timeline::Detail;
    let t = Instant::now();
    let exact = timeline.view_with(trace, s, e, 1200, Detail::Exact)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let approx = timeline.view_with(trace, s, e, 1200, Detail::Summary)?;
    let bound = timeline
        .busy_error_bounds(s, e, 1200)
        .into_iter()
        .fold(0.0, f64::max);
    let worst = exact
        .lanes
        .iter()
        .zip(&approx.lanes)
        .flat_map(|(x, y)| x.busy.iter().zip(&y.busy).map(|(a, b)| (a - b).abs()))
        .fold(0.0f32, f32::max);
    println!(
        "  full extent, 1200 columns: exact view {ms:.1} ms; summary busy error max {worst:.4} (bound max {bound:.4})"
    );
    Ok(())
}

/// With `PASS_TRACE` set, each pass prints on its end the rows it read, the seconds spent
/// reading them and the analysis that asked (the first frame of the library outside `model::rows`).
fn traced<'a, T: 'a>(
    table: &'static str,
    rows: nsys_lens::model::rows::Rows<'a, T>,
) -> nsys_lens::model::rows::Rows<'a, T> {
    if std::env::var_os("PASS_TRACE").is_none() {
        return rows;
    }
    let bt = std::backtrace::Backtrace::force_capture().to_string();
    let caller = bt
        .lines()
        .filter(|l| {
            l.contains("nsys_lens::")
                && !l.contains("page_memory")
                && !l.contains("model::rows")
                && !l.contains("{closure")
                && !l.contains("traced<")
                && !l.contains(" at ")
        })
        .map(|l| {
            l.trim()
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == ':')
                .trim()
                .to_string()
        })
        .take(2)
        .collect::<Vec<_>>()
        .join(" < ");
    Box::new(Traced {
        table,
        caller,
        rows,
        n: 0,
        secs: 0.0,
    })
}

struct Traced<'a, T> {
    table: &'static str,
    caller: String,
    rows: nsys_lens::model::rows::Rows<'a, T>,
    n: u64,
    secs: f64,
}

impl<T> Iterator for Traced<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let t = Instant::now();
        let r = self.rows.next();
        self.secs += t.elapsed().as_secs_f64();
        self.n += u64::from(r.is_some());
        r
    }
}

impl<T> Drop for Traced<'_, T> {
    fn drop(&mut self) {
        println!(
            "    pass {:<7} {:>9} rows {:>6.2} s  {}",
            self.table, self.n, self.secs, self.caller
        );
    }
}

/// Counts the passes over each table (kernels, calls, ranges, memcpy, memset, syncs).
struct Counted<'a> {
    rows: &'a dyn nsys_lens::model::rows::EventRows,
    passes: std::cell::Cell<[u32; 6]>,
}

impl Counted<'_> {
    fn count(&self, i: usize) {
        let mut p = self.passes.get();
        p[i] += 1;
        self.passes.set(p);
    }

    /// Prints the passes since the last report.
    fn report(&self) {
        let p = self.passes.take();
        println!(
            "  passes: kernels {} calls {} ranges {} memcpy {} memset {} syncs {}",
            p[0], p[1], p[2], p[3], p[4], p[5]
        );
    }
}

impl nsys_lens::model::rows::EventRows for Counted<'_> {
    fn meta(&self) -> &nsys_lens::model::Trace {
        self.rows.meta()
    }
    fn columns(&self) -> nsys_lens::model::rows::Columns {
        self.rows.columns()
    }
    fn kernels(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::KernelRow> {
        self.count(0);
        traced("kernels", self.rows.kernels())
    }
    fn replays(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::KernelRow> {
        traced("replays", self.rows.replays())
    }
    fn calls(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::CallRow> {
        self.count(1);
        traced("calls", self.rows.calls())
    }
    fn ranges(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::NvtxRow> {
        self.count(2);
        traced("ranges", self.rows.ranges())
    }
    fn memcpy(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::MemOpRow> {
        self.count(3);
        traced("memcpy", self.rows.memcpy())
    }
    fn memset(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::MemOpRow> {
        self.count(4);
        traced("memset", self.rows.memset())
    }
    fn syncs(&self) -> nsys_lens::model::rows::Rows<'_, nsys_lens::model::rows::SyncRow> {
        self.count(5);
        traced("syncs", self.rows.syncs())
    }
    fn check(&self) -> nsys_lens::error::Result<()> {
        self.rows.check()
    }
}
