//! "Time per kernel class": one stacked bar per trace (and per phase), its GPU time split by
//! kernel class in the timeline's class colours ([`super::class_color`]), with a legend
//! ([`super::stacked`]). Bars share one scale (the longest bar fills the width), so a trace
//! whose GPU time grew shows a longer bar; the text after a bar gives its total.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::DrawResult;
use super::class_color;
use super::stacked::{Stacked, StackedRow};
use crate::names::kernels::KernelCategory;

const LABEL_PX: f64 = 260.0;
const TEXT_PX: f64 = 120.0;

/// One bar: a trace (or one of its phases), its GPU time per class (µs per unit), the text
/// after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassBar {
    pub label: String,
    pub segments: Vec<(KernelCategory, f64)>,
    pub text: String,
}

/// The chart: a title and its bars, top to bottom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassBars {
    pub title: String,
    pub bars: Vec<ClassBar>,
}

/// The classes present in any bar, in [`KernelCategory::ALL`]'s order (the legend's).
fn present(chart: &ClassBars) -> Vec<KernelCategory> {
    KernelCategory::ALL
        .into_iter()
        .filter(|k| {
            chart
                .bars
                .iter()
                .any(|b| b.segments.iter().any(|(c, v)| c == k && *v > 0.0))
        })
        .collect()
}

/// The chart as stacked bars on one scale: the longest bar fills the width.
fn stacked(chart: &ClassBars) -> Stacked {
    let total = |b: &ClassBar| b.segments.iter().map(|s| s.1.max(0.0)).sum::<f64>();
    let longest = chart.bars.iter().map(total).fold(0.0, f64::max);
    let colour = |c: KernelCategory| class_color(c.key());
    Stacked {
        title: chart.title.clone(),
        legend: present(chart)
            .into_iter()
            .map(|k| (colour(k), k.label().to_string()))
            .collect(),
        rows: chart
            .bars
            .iter()
            .map(|b| StackedRow {
                label: b.label.clone(),
                segments: b
                    .segments
                    .iter()
                    .map(|&(c, v)| (colour(c), v / longest))
                    .collect(),
                text: b.text.clone(),
            })
            .collect(),
        empty: (longest <= 0.0).then(|| "no GPU work in this scope".to_string()),
        label_px: LABEL_PX,
        text_px: TEXT_PX,
    }
}

/// The height in pixels the chart needs at `width`.
pub fn class_bars_height(chart: &ClassBars, width: u32) -> u32 {
    stacked(chart).height(width)
}

/// Draws the chart filling `root`.
pub fn draw_class_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &ClassBars,
) -> DrawResult {
    stacked(chart).draw(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svg(chart: &ClassBars, width: u32) -> String {
        let mut out = String::new();
        {
            let height = class_bars_height(chart, width);
            let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
            draw_class_bars(&root, chart).expect("draws");
            root.present().expect("present");
        }
        out
    }

    /// Bars share one scale: the longer trace fills the width, the other is as long as its
    /// share of it; each class in its timeline colour.
    #[test]
    fn bars_share_one_scale_in_the_class_colours() {
        let chart = ClassBars {
            title: "t".into(),
            bars: vec![
                ClassBar {
                    label: "baseline".into(),
                    segments: vec![(KernelCategory::Gemm, 300.0), (KernelCategory::Norm, 100.0)],
                    text: "400 µs".into(),
                },
                ClassBar {
                    label: "target".into(),
                    segments: vec![(KernelCategory::Gemm, 600.0), (KernelCategory::Norm, 200.0)],
                    text: "800 µs".into(),
                },
            ],
        };
        let out = svg(&chart, 700);
        let plot_w = 700.0 - LABEL_PX - TEXT_PX - 8.0;
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let widths = |key: &str| -> Vec<f64> {
            out.lines()
                .filter(|l| l.contains("<rect") && l.contains(&fill(class_color(key))))
                .filter_map(|l| l.split("width=\"").nth(1)?.split('"').next()?.parse().ok())
                .collect()
        };
        let gemm = widths("gemm");
        for want in [0.375 * plot_w, 0.75 * plot_w] {
            assert!(
                gemm.iter().any(|&w| (w - want).abs() <= 1.5),
                "{gemm:?} {want}"
            );
        }
        assert!(out.contains("GEMM") && out.contains("norm") && out.contains("800 µs"));
    }
}
