//! The report's plots: horizontal bar charts (top kernels, pattern blocks, per-rank lateness,
//! graph coverage) drawn by plotters generic over the backend — inline SVG in the HTML report,
//! a canvas in the page — plus the gap histogram of [`crate::plot`].

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use super::document::Document;
use crate::detect::DetectReport;
use crate::drill::DrillReport;
use crate::drill::gaps::GapHistogram;

const INK: RGBColor = RGBColor(40, 44, 52);
const GRID: RGBColor = RGBColor(225, 228, 234);
const BAR: RGBColor = RGBColor(37, 99, 235);
const FLAG: RGBColor = RGBColor(220, 38, 38);

/// One bar: its label, length and the text printed after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub text: String,
    /// Drawn in the alert colour (a flagged straggler, the top-priority block).
    pub flagged: bool,
}

/// A titled horizontal bar chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BarChart {
    pub title: String,
    pub bars: Vec<Bar>,
}

/// Row height of a bar chart, and the height a chart of `bars` bars needs.
const ROW_PX: u32 = 22;

pub fn bar_chart_height(chart: &BarChart) -> u32 {
    34 + ROW_PX * chart.bars.len().max(1) as u32 + 8
}

/// Approximate text width (plotters' exact measurement needs a DOM, which the page's CSP
/// forbids, so text is placed from this estimate).
fn estimate_width(text: &str, px: f64) -> f64 {
    text.chars().count() as f64 * px * 0.56
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// Labels truncated to this many characters.
const LABEL_CHARS: usize = 38;

fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let head: String = label.chars().take(LABEL_CHARS - 1).collect();
        head + "…"
    }
}

/// Draws `chart` filling `root`.
pub fn draw_bar_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &BarChart,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let (w, _) = root.dim_in_pixel();
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    root.draw(&Text::new(chart.title.clone(), (8, 8), font(13)))
        .map_err(err)?;
    let labels: Vec<String> = chart.bars.iter().map(|b| short(&b.label)).collect();
    let label_w = labels
        .iter()
        .map(|l| estimate_width(l, 11.0))
        .fold(40.0, f64::max)
        + 16.0;
    let text_w = chart
        .bars
        .iter()
        .map(|b| estimate_width(&b.text, 11.0))
        .fold(0.0, f64::max)
        + 12.0;
    let plot_w = (f64::from(w) - label_w - text_w - 8.0).max(20.0);
    let max = chart.bars.iter().map(|b| b.value).fold(0.0, f64::max);
    for (i, (b, label)) in chart.bars.iter().zip(&labels).enumerate() {
        let y = 34 + ROW_PX as i32 * i as i32;
        root.draw(&Text::new(label.clone(), (8, y + 4), font(11)))
            .map_err(err)?;
        let x0 = label_w as i32;
        let len = if max > 0.0 && b.value.is_finite() {
            (b.value.max(0.0) / max * plot_w) as i32
        } else {
            0
        };
        root.draw(&Rectangle::new(
            [(x0, y + 2), (x0 + plot_w as i32, y + ROW_PX as i32 - 4)],
            GRID.filled(),
        ))
        .map_err(err)?;
        let colour = if b.flagged { FLAG } else { BAR };
        root.draw(&Rectangle::new(
            [(x0, y + 2), (x0 + len, y + ROW_PX as i32 - 4)],
            colour.mix(0.85).filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            b.text.clone(),
            (x0 + plot_w as i32 + 6, y + 4),
            font(11),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn bar(label: impl Into<String>, value: f64, text: String, flagged: bool) -> Bar {
    Bar {
        label: label.into(),
        value,
        text,
        flagged,
    }
}

/// The bar charts of a report, in reading order (empty charts left out).
pub fn charts(doc: &Document) -> Vec<BarChart> {
    let mut out = Vec::new();
    if let Some(drill) = &doc.drill {
        drill_charts(&drill.report, &mut out);
    }
    kernel_chart(doc, &mut out);
    out
}

/// The drill-down's charts: graph coverage, per-layer blocks, stragglers.
fn drill_charts(d: &DrillReport, out: &mut Vec<BarChart>) {
    let g = &d.graphs;
    if g.graph_kernels + g.eager_kernels > 0 {
        out.push(BarChart {
            title: format!(
                "CUDA-graph coverage: {:.1} % of kernels",
                g.coverage * 100.0
            ),
            bars: vec![
                bar(
                    "graph-launched kernels",
                    g.graph_kernels as f64,
                    g.graph_kernels.to_string(),
                    false,
                ),
                bar(
                    "eager kernels",
                    g.eager_kernels as f64,
                    g.eager_kernels.to_string(),
                    false,
                ),
            ],
        });
    }
    if !d.patterns.blocks.is_empty() {
        let mut blocks = d.patterns.blocks.clone();
        blocks.sort_by_key(|b| b.first);
        out.push(BarChart {
            title: "Per-layer blocks: host gap per step (gap per layer × layers)".into(),
            bars: blocks
                .iter()
                .map(|b| {
                    bar(
                        format!("{} {} ({})", b.group, b.operation, b.kernels),
                        b.total_gap_us,
                        format!("{:.1} µs", b.total_gap_us),
                        b.rank == 1,
                    )
                })
                .collect(),
        });
    }
    if d.stragglers.ranks.len() >= 2 {
        out.push(BarChart {
            title: "Share of collectives each rank arrived last (mean lateness)".into(),
            bars: d
                .stragglers
                .ranks
                .iter()
                .map(|r| {
                    bar(
                        format!("device {} · pid {}", r.rank.device, r.rank.pid),
                        r.share,
                        format!("{:.1} % ({:.1} µs)", r.share * 100.0, r.mean_lateness_us),
                        d.stragglers.rank.as_ref() == Some(&r.rank),
                    )
                })
                .collect(),
        });
    }
}

fn kernel_chart(doc: &Document, out: &mut Vec<BarChart>) {
    let k = &doc.explain.kernels;
    if !k.top.is_empty() {
        out.push(BarChart {
            title: "Top kernels by total time".into(),
            bars: k
                .top
                .iter()
                .take(10)
                .map(|t| {
                    bar(
                        t.name.clone(),
                        t.total_us,
                        format!("{:.2} ms ({:.1} %)", t.total_us / 1000.0, t.share * 100.0),
                        false,
                    )
                })
                .collect(),
        });
    }
}

/// The device-idle gap histogram of a report, in the shape [`crate::plot`] draws.
pub fn idle_histogram(drill: &DrillReport, detect: &DetectReport) -> GapHistogram {
    let idle = &drill.gaps.device_idle;
    GapHistogram {
        buckets: idle.buckets.clone(),
        gaps: idle.gaps,
        total_us: idle.total_us,
        devices: detect.trace.devices.clone(),
    }
}

/// Renders a drawing into an SVG string for inline use in HTML (no XML namespace URL: inline SVG
/// needs none, and the report must hold no external reference).
pub fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(text.replace(" xmlns=\"http://www.w3.org/2000/svg\"", ""))
}

/// The stacked bars of time per kernel class of `traces` (`(label, classes)`, each trace's
/// [`crate::analyze::classes::KernelClasses::main`] table then its phases), on one scale: a figure per step when every
/// trace has one, else per second of kernel window.
pub fn kernel_class_bars(
    traces: &[(&str, &crate::analyze::classes::KernelClasses)],
) -> crate::plot::kernel_classes::ClassBars {
    use crate::analyze::classes::{ClassTable, PER_STEP};
    use crate::plot::kernel_classes::{ClassBar, ClassBars};
    let per_step = traces.iter().all(|(_, k)| k.per_step.is_some());
    let bar = |label: String, t: &ClassTable| ClassBar {
        label,
        segments: t.classes.iter().map(|r| (r.class, r.gpu_us)).collect(),
        text: format!(
            "{:.1} µs/{}",
            t.gpu_us,
            if t.per == PER_STEP { "step" } else { "s" }
        ),
    };
    let mut bars = Vec::new();
    for (label, k) in traces {
        let main = if per_step { k.main() } else { &k.window };
        bars.push(bar(label.to_string(), main));
        if per_step {
            for p in &k.phases {
                let phase = p.scope.trim_end_matches(" steps");
                bars.push(bar(format!("{label} · {phase}"), p));
            }
        }
    }
    let per = if per_step {
        "per step"
    } else {
        "per second of kernel window"
    };
    ClassBars {
        title: format!("GPU time per kernel class, {per} (summed GPU time)"),
        bars,
    }
}

/// Every collective's skew in order of first arrival, coloured by the rank that arrived last
/// (the straggler in the alert colour): what [`crate::plot::skew`] draws.
pub fn skew_series(r: &crate::ranks::RanksReport) -> crate::plot::skew::SkewSeries {
    let seq = &r.collectives.sequence;
    crate::plot::skew::SkewSeries {
        title: "Skew per collective (last arrival − first), coloured by the rank that arrived last"
            .into(),
        collectives: seq.len() as u64,
        skew_ns: seq.iter().map(|c| c.skew_ns).collect(),
        last_rank: seq.iter().map(|c| c.last_rank as u32).collect(),
        ranks: r.ranks.iter().map(|k| k.rank.clone()).collect(),
        straggler: r.straggler.map(|i| i as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drill::RowIndex;
    use crate::index::testing::TraceBuilder;

    /// A rank's file: collective kernels `(name, start, end)` on `device`.
    fn rank_file(device: u32, kernels: &[(&str, i64, i64)]) -> crate::model::Trace {
        let mut b = TraceBuilder::new();
        for &(name, start, end) in kernels {
            b.kernel_on((device, 7), name, (start, end), 0);
        }
        b.trace.meta.session_start_utc_ns = Some(0);
        b.trace
    }

    #[test]
    fn the_skew_series_is_every_collective_in_order_of_first_arrival() {
        // Two names interleaved in time: all-reduce #0 (skew 300, rank 1 last), all-gather #0
        // (skew 50, rank 0 last), all-reduce #1 (skew 200, rank 1 last).
        let (ar, ag) = (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            "ncclDevKernel_AllGather_RING_LL",
        );
        let a = rank_file(
            0,
            &[(ar, 1_000, 2_000), (ag, 3_050, 4_000), (ar, 5_000, 6_000)],
        );
        let b = rank_file(
            1,
            &[(ar, 1_300, 2_000), (ag, 3_000, 4_000), (ar, 5_200, 6_000)],
        );
        let ix = [
            RowIndex::loaded(&a, "trace_rank0.sqlite", None),
            RowIndex::loaded(&b, "trace_rank1.sqlite", None),
        ];
        let r = crate::ranks::ranks_indexed(&ix).expect("ranks");
        let s = skew_series(&r);
        assert_eq!(s.collectives, r.collectives.count);
        assert_eq!(s.skew_ns, vec![300, 50, 200]);
        assert_eq!(s.last_rank, vec![1, 0, 1]);
        assert_eq!(s.ranks, vec!["rank 0", "rank 1"]);
        assert_eq!(s.straggler, r.straggler.map(|i| i as u32));
    }
}
