//! Function time per line_profiler round: one stacked bar per round, one segment per function
//! (the heaviest ones; the rest summed), so a fix shows as a shrinking segment and a shifted
//! bottleneck as another segment taking the lead. Drawn by hand like the other plots.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::{DrawResult, GRID, INK, err, text_width};
use crate::lprof::LprofReport;

/// Functions drawn as their own segment; the others are summed as "other functions".
pub const CHART_FUNCTIONS: usize = 6;

/// What the chart draws, computed from a report (the page gets it with the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundChart {
    /// Round labels, in order.
    pub rounds: Vec<String>,
    /// One series per function: its total (s) in each round (0 when not profiled there).
    pub series: Vec<ChartSeries>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartSeries {
    pub label: String,
    pub seconds: Vec<f64>,
}

impl RoundChart {
    /// The heaviest functions over all rounds, then the rest summed.
    pub fn of(report: &LprofReport) -> RoundChart {
        let n = report.rounds.len();
        let mut by_fn: Vec<ChartSeries> = Vec::new();
        for (i, round) in report.rounds.iter().enumerate() {
            for f in &round.functions {
                let pos = by_fn.iter().position(|s| s.label == f.key);
                let s = match pos {
                    Some(p) => &mut by_fn[p],
                    None => {
                        by_fn.push(ChartSeries {
                            label: f.key.clone(),
                            seconds: vec![0.0; n],
                        });
                        let last = by_fn.len() - 1;
                        &mut by_fn[last]
                    }
                };
                s.seconds[i] += f.total_s;
            }
        }
        by_fn.sort_by(|a, b| {
            let sum = |s: &ChartSeries| s.seconds.iter().sum::<f64>();
            sum(b).total_cmp(&sum(a))
        });
        if by_fn.len() > CHART_FUNCTIONS {
            let rest = by_fn.split_off(CHART_FUNCTIONS - 1);
            let mut other = ChartSeries {
                label: format!("{} other functions", rest.len()),
                seconds: vec![0.0; n],
            };
            for s in rest {
                for (o, v) in other.seconds.iter_mut().zip(s.seconds) {
                    *o += v;
                }
            }
            by_fn.push(other);
        }
        RoundChart {
            rounds: report.rounds.iter().map(|r| r.label.clone()).collect(),
            series: by_fn,
        }
    }
}

const COLOURS: [RGBColor; CHART_FUNCTIONS] = [
    RGBColor(37, 99, 235),
    RGBColor(217, 119, 6),
    RGBColor(22, 163, 74),
    RGBColor(147, 51, 234),
    RGBColor(220, 38, 38),
    RGBColor(100, 116, 139),
];

/// Left (y labels), right, top (title + legend rows), bottom (round labels).
const MARGIN: (f64, f64, f64, f64) = (64.0, 12.0, 30.0, 36.0);
const LEGEND_ROW: f64 = 18.0;

/// The height the chart needs at `width` px: the legend wraps onto rows.
pub fn round_chart_height(chart: &RoundChart, width: u32) -> u32 {
    let rows = legend_rows(chart, f64::from(width)).len().max(1);
    (MARGIN.2 + rows as f64 * LEGEND_ROW + 200.0 + MARGIN.3) as u32
}

fn legend_rows(chart: &RoundChart, width: f64) -> Vec<Vec<(usize, f64)>> {
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new()];
    let mut x = MARGIN.0;
    for (i, s) in chart.series.iter().enumerate() {
        let w = 18.0 + text_width(&s.label, 12.0) + 16.0;
        if x + w > width - MARGIN.1 && !rows.last().is_some_and(Vec::is_empty) {
            rows.push(Vec::new());
            x = MARGIN.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w;
    }
    rows
}

/// Stacked bars of function time per round, with the total above each bar.
pub fn draw_round_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &RoundChart,
) -> DrawResult {
    let title = "Profiled time per round, by function";
    let (w, h) = super::start_chart(root, title, MARGIN.0 as i32)?;
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    let rows = legend_rows(chart, f64::from(w));
    for (r, row) in rows.iter().enumerate() {
        let y = (MARGIN.2 + r as f64 * LEGEND_ROW) as i32;
        for &(i, x) in row {
            let colour = COLOURS[i % COLOURS.len()];
            root.draw(&Rectangle::new(
                [(x as i32, y + 2), (x as i32 + 12, y + 12)],
                colour.filled(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(
                chart.series[i].label.clone(),
                (x as i32 + 18, y),
                font(12),
            ))
            .map_err(err)?;
        }
    }
    let top = MARGIN.2 + rows.len() as f64 * LEGEND_ROW + 14.0;
    let plot_w = (f64::from(w) - MARGIN.0 - MARGIN.1).max(10.0);
    let plot_h = (f64::from(h) - top - MARGIN.3).max(10.0);
    let totals: Vec<f64> = (0..chart.rounds.len())
        .map(|i| {
            chart
                .series
                .iter()
                .map(|s| s.seconds.get(i).copied().unwrap_or(0.0))
                .sum()
        })
        .collect();
    let max = totals.iter().copied().fold(0.0, f64::max);
    let (unit, scale) = if max >= 2.0 {
        ("s", 1.0)
    } else if max >= 2e-3 {
        ("ms", 1e3)
    } else {
        ("µs", 1e6)
    };
    let tick = super::ticks::round_step(max * scale / 4.0);
    let y_max = ((max * scale * 1.1 / tick).ceil() * tick).max(1e-9);
    let y_of = |v: f64| (top + plot_h - v * scale / y_max * plot_h) as i32;
    for t in 0..=(y_max / tick).round() as u32 {
        let v = tick * f64::from(t);
        let y = y_of(v / scale);
        root.draw(&PathElement::new(
            vec![(MARGIN.0 as i32, y), ((MARGIN.0 + plot_w) as i32, y)],
            GRID,
        ))
        .map_err(err)?;
        let label = format!("{} {unit}", tick_label(v, tick));
        let x = (MARGIN.0 - 6.0 - text_width(&label, 11.0)) as i32;
        root.draw(&Text::new(label, (x, y - 6), font(11)))
            .map_err(err)?;
    }
    let slot = plot_w / chart.rounds.len().max(1) as f64;
    for (i, label) in chart.rounds.iter().enumerate() {
        let x0 = MARGIN.0 + slot * i as f64;
        let (bx0, bx1) = ((x0 + slot * 0.25) as i32, (x0 + slot * 0.75) as i32);
        let mut base = 0.0;
        for (k, s) in chart.series.iter().enumerate() {
            let v = s.seconds.get(i).copied().unwrap_or(0.0);
            if v <= 0.0 {
                continue;
            }
            root.draw(&Rectangle::new(
                [(bx0, y_of(base + v)), (bx1, y_of(base))],
                COLOURS[k % COLOURS.len()].mix(0.9).filled(),
            ))
            .map_err(err)?;
            base += v;
        }
        let total = format!("{:.1} {unit}", totals[i] * scale);
        let tx = (x0 + (slot - text_width(&total, 11.0)) / 2.0) as i32;
        root.draw(&Text::new(total, (tx, y_of(base) - 15), font(11)))
            .map_err(err)?;
        let name = format!("{} · {}", i + 1, short(label, (slot / 6.5) as usize));
        let lx = (x0 + (slot - text_width(&name, 11.0)) / 2.0) as i32;
        root.draw(&Text::new(name, (lx, (top + plot_h) as i32 + 8), font(11)))
            .map_err(err)?;
    }
    let axis = vec![
        (MARGIN.0 as i32, top as i32),
        (MARGIN.0 as i32, y_of(0.0)),
        ((MARGIN.0 + plot_w) as i32, y_of(0.0)),
    ];
    root.draw(&PathElement::new(axis, INK)).map_err(err)
}

/// A grid value with as many decimals as the tick step needs.
fn tick_label(v: f64, tick: f64) -> String {
    let decimals = if tick >= 1.0 {
        0
    } else {
        (-tick.log10()).ceil() as usize
    };
    format!("{v:.decimals$}")
}

fn short(s: &str, max: usize) -> String {
    let max = max.max(6);
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> RoundChart {
        RoundChart {
            rounds: vec!["r1.txt".into(), "r2.txt".into()],
            series: vec![
                ChartSeries {
                    label: "_update_requests".into(),
                    seconds: vec![1.0, 0.5],
                },
                ChartSeries {
                    label: "_handle_responses".into(),
                    seconds: vec![0.18, 0.18],
                },
            ],
        }
    }

    #[test]
    fn each_round_is_a_stack_of_its_functions_with_its_total() {
        let c = chart();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (600, round_chart_height(&c, 600)))
                .into_drawing_area();
            draw_round_chart(&root, &c).expect("draw");
        }
        // background + 2 legend swatches + 2 rounds × 2 segments
        assert_eq!(svg.matches("<rect").count(), 1 + 2 + 4, "{svg}");
        assert!(
            svg.contains("1180.0 ms") && svg.contains("680.0 ms"),
            "totals above the bars"
        );
        assert!(svg.contains("_handle_responses"));
    }
}
