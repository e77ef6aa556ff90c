//! Replays the page's views of one open trace natively, in the page's order and keeping what
//! its open trace keeps (`web::indexed::Indexed`): the verdict, the timeline summary and the
//! gap histogram, then the what-if card (Root cause's analysis and drill's index kept), Root
//! cause's JSON, the drill-down over the kept index and its JSON, the Markdown report from the
//! kept drill-down (and the Drill-down view's ranks panel over the kept index). Prints the live heap and each step's high-water mark: the analysis worker's
//! wasm memory never shrinks, so the largest of them (and what the allocator cannot reuse) is
//! what the page needs. Not a test; prints figures.
//! Usage: cargo run --release -p nsys-lens --example views_memory -- TRACE.sqlite
//! (`ROW_CACHE_MIB`: the rows the scan keeps, 0 by default: none above about 2 GB, as the page)
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use nsys_lens::analyze::{self, AnalyzeConfig, AnalyzeReport, DrillRead, TraceBreakdown};
use nsys_lens::detect::{DetectConfig, DetectReport, detect_rows};
use nsys_lens::drill::{DrillOptions, RowIndex};
use nsys_lens::findings::DrillFindings;
use nsys_lens::model::rows::EventRows;
use nsys_lens::report::{document, markdown};

#[path = "../tests/common/counting.rs"]
mod counting;
use counting::mark;

/// What the page's open trace keeps of Root cause (`Indexed::analysis`, `keep_drill_read`).
struct Kept<'r> {
    rows: &'r dyn EventRows,
    analysis: RefCell<Option<Rc<TraceBreakdown>>>,
    read: RefCell<Option<DrillRead>>,
    verdict: DetectReport,
}

impl nsys_lens::whatif::Known for Kept<'_> {
    fn analysis(&self, cfg: &AnalyzeConfig) -> nsys_lens::error::Result<Rc<TraceBreakdown>> {
        if let Some(b) = &*self.analysis.borrow() {
            return Ok(Rc::clone(b));
        }
        let (b, read) = analyze::analyze_rows_indexed(self.rows, cfg)?;
        self.read.replace(read);
        let b = Rc::new(b);
        self.analysis.replace(Some(Rc::clone(&b)));
        Ok(b)
    }

    fn verdict(&self, _: &DetectConfig) -> nsys_lens::error::Result<DetectReport> {
        Ok(self.verdict.clone())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: views_memory TRACE.sqlite")?;
    let label = "trace";
    let cache_mib = std::env::var("ROW_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let t = Instant::now();
    let conn = nsys_lens::trace::open_path(std::path::Path::new(&path))?;
    nsys_lens::trace::configure(&conn, label)?;
    let opts = nsys_lens::trace::LoadOptions::page();
    let scan = nsys_lens::trace::FileScan::keeping_rows(
        &conn,
        label,
        opts,
        &mut |_| true,
        cache_mib << 20,
    )?;
    let file_rows = nsys_lens::trace::FileRows::over(&conn, &scan);
    let rows: &dyn EventRows = &file_rows;
    mark("scan", t);
    let t = Instant::now();
    let verdict = detect_rows(rows, &document::verdict_config(label))?;
    mark("verdict", t);
    let t = Instant::now();
    let timeline = nsys_lens::timeline::Timeline::of_rows_with_steps(rows, label)?;
    mark("timeline summary", t);
    let t = Instant::now();
    let gaps = nsys_lens::drill::gaps::idle_gap_histogram(rows, None);
    mark("gap histogram", t);
    let kept = Kept {
        rows,
        analysis: RefCell::new(None),
        read: RefCell::new(None),
        verdict,
    };
    let t = Instant::now();
    let cfg = document::whatif_config(label);
    let card = nsys_lens::whatif::whatif_known(rows, &cfg, &[], &kept)?;
    let card_json = serde_json::to_string(&card)?;
    mark("what-if card (analysis kept)", t);
    let t = Instant::now();
    let analysis = nsys_lens::whatif::Known::analysis(&kept, &cfg)?;
    let labelled = TraceBreakdown {
        label: label.to_string(),
        ..(*analysis).clone()
    };
    let report = AnalyzeReport::new(cfg.profile, labelled, None);
    let root_cause_json = serde_json::to_string(&report)?;
    drop(report);
    mark("Root cause JSON", t);
    let t = Instant::now();
    let read = kept.read.take().ok_or("Root cause kept no index")?;
    let swept = read.gaps.clone();
    let indexed = [RowIndex::with_facts(rows, label, read.index)];
    let drill_opts = DrillOptions::default();
    let (drill, explains) = DrillFindings::explained_after(&indexed, &drill_opts, swept.as_ref())?;
    let drill_json = serde_json::to_string(&drill)?;
    let explain = explains.first().ok_or("no explainer")?.clone();
    drop(explains);
    let [index] = indexed;
    mark("Drill-down (index kept, JSON)", t);
    // The Drill-down view's ranks panel, over the kept index (`RANKS_AFRESH`: its own, as
    // before 2026-12-02).
    let t = Instant::now();
    let input = nsys_lens::drill::DrillInput {
        rows,
        label,
        step_marker: None,
    };
    let afresh = std::env::var_os("RANKS_AFRESH").is_some();
    let mut index = Some(index);
    let ranks = ranks_over(&input, &mut index, afresh, &kept.verdict)?;
    let ranks_json = serde_json::to_string(&ranks)?;
    mark("ranks panel", t);
    let t = Instant::now();
    let classes = analyze::classes::window_classes(rows)?;
    let mut doc = document::with_drill_down(
        label,
        kept.verdict.clone(),
        explain.clone(),
        drill.clone(),
        classes,
    );
    doc.whatif = Some(card.clone());
    doc.ranks = Some(ranks_over(&input, &mut index, afresh, &kept.verdict)?);
    let md = markdown::render(&doc);
    mark("report (Markdown)", t);
    println!(
        "  JSON: card {} KiB, Root cause {} KiB, drill {} KiB, ranks {} KiB; Markdown {} KiB",
        card_json.len() >> 10,
        root_cause_json.len() >> 10,
        drill_json.len() >> 10,
        ranks_json.len() >> 10,
        md.len() >> 10
    );
    std::hint::black_box((timeline, gaps, index, read.gaps, drill, explain, doc, md));
    Ok(())
}

/// The ranks of `input` as the page computes them: over the `index` it kept, taken and given
/// back; with `afresh`, over an index of their own beside it (as before 2026-12-02).
fn ranks_over<'r>(
    input: &nsys_lens::drill::DrillInput<'r>,
    index: &mut Option<RowIndex<'r>>,
    afresh: bool,
    verdict: &DetectReport,
) -> Result<nsys_lens::ranks::RanksReport, Box<dyn std::error::Error>> {
    let mut taken = if afresh { None } else { index.take() };
    let mut given_back = None;
    let (ranks, _) = nsys_lens::ranks::ranks_seeing(
        std::slice::from_ref(input),
        |_, _| taken.take(),
        |_, ix| given_back = Some(ix).filter(|_| !afresh),
        |_, _| Some(verdict.clone()),
    )?;
    if given_back.is_some() {
        *index = given_back;
    }
    Ok(ranks)
}
