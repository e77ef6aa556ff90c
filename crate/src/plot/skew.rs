//! "Skew per collective": every matched collective of the ranks answer in order of its first
//! arrival, a bar its skew (last arrival − first), coloured by the rank that arrived last, the
//! straggler in the alert colour. The worst ten are a table beside it; the chart shows whether
//! the skew is steady, grows or comes in bursts, which ten rows cannot.
//!
//! A run has far more collectives than the chart has pixels: they are binned ([`bins`]), a bin
//! showing its largest skew and the rank last there, so a spike is never averaged away.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::ticks::{self, text_width};
use super::{DrawResult, INK, STRAGGLER, err};
use crate::model::Ns;

/// The other ranks' colours, in rank order (cycling): none of them red.
const PALETTE: [RGBColor; 8] = [
    RGBColor(37, 99, 235),
    RGBColor(13, 148, 136),
    RGBColor(124, 58, 237),
    RGBColor(202, 138, 4),
    RGBColor(100, 116, 139),
    RGBColor(219, 39, 119),
    RGBColor(22, 163, 74),
    RGBColor(146, 64, 14),
];

/// Ranks named in the legend at most (a legend of hundreds says nothing).
const LEGEND_RANKS: usize = 8;

/// Margins of the plot: left (the value axis' labels), right, top (title and legend), bottom
/// (the collective axis).
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 34.0;

/// The chart's height in pixels.
pub const SKEW_CHART_HEIGHT: u32 = 240;

/// The skew of every collective, in order of first arrival, and who arrived last at each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkewSeries {
    pub title: String,
    /// How many collectives the chart draws (`ranks --json`'s `collectives.count`).
    pub collectives: u64,
    /// Each collective's skew, ns.
    pub skew_ns: Vec<Ns>,
    /// The rank last at each (a place in `ranks`).
    pub last_rank: Vec<u32>,
    /// The ranks' names, as `ranks` gives them.
    pub ranks: Vec<String>,
    /// The straggler (a place in `ranks`), drawn in the alert colour.
    pub straggler: Option<u32>,
}

/// A run of consecutive collectives drawn as one bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkewBin {
    /// Its first collective (a place in the series) and how many it holds.
    pub first: usize,
    pub len: usize,
    /// The largest skew among them, and the rank last at that collective.
    pub max_ns: Ns,
    pub last_rank: u32,
}

/// The series in at most `columns` bars: one per collective when they fit, else consecutive
/// runs of nearly equal length (their sizes differ by one at most), each its largest skew.
pub fn bins(series: &SkewSeries, columns: usize) -> Vec<SkewBin> {
    let n = series.skew_ns.len().min(series.last_rank.len());
    let count = n.min(columns.max(1));
    (0..count)
        .filter_map(|j| {
            let (first, end) = (j * n / count, (j + 1) * n / count);
            let at = (first..end).max_by_key(|&i| (series.skew_ns[i], std::cmp::Reverse(i)))?;
            Some(SkewBin {
                first,
                len: end - first,
                max_ns: series.skew_ns[at],
                last_rank: series.last_rank[at],
            })
        })
        .collect()
}

/// The colour of rank `rank`: the alert colour for the straggler, else its place in the palette.
pub fn rank_colour(series: &SkewSeries, rank: u32) -> RGBColor {
    if series.straggler == Some(rank) {
        return STRAGGLER;
    }
    PALETTE[rank as usize % PALETTE.len()]
}

/// Draws the chart filling `root` (its height: [`SKEW_CHART_HEIGHT`]).
pub fn draw_skew_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &SkewSeries,
) -> DrawResult {
    let (w, h) = super::start_chart(root, &series.title, 8)?;
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    draw_legend(root, series)?;
    let plot_w = (f64::from(w) - LEFT - RIGHT).max(10.0);
    let plot_h = (f64::from(h) - TOP - BOTTOM).max(10.0);
    let bars = bins(series, plot_w as usize);
    let max = bars.iter().map(|b| b.max_ns).max().unwrap_or(0) as f64;
    let ticks = ticks::duration_ticks(max, plot_h, 28.0);
    let axis_top = ticks.last().map_or(1.0, |t| t.at).max(1.0);
    let y_of = |ns: f64| (TOP + plot_h - ns / axis_top * plot_h) as i32;
    super::draw_value_axis(root, &ticks, (LEFT, plot_w), &y_of)?;
    let slot = plot_w / bars.len().max(1) as f64;
    for (j, b) in bars.iter().enumerate() {
        let x0 = LEFT + slot * j as f64;
        // Wide slots keep a gap between bars; at a pixel or less a bar fills its slot.
        let gap = if slot >= 4.0 { slot * 0.15 } else { 0.0 };
        let (a, z) = (x0 + gap, (x0 + slot - gap).max(x0 + gap + 1.0));
        let colour = rank_colour(series, b.last_rank);
        root.draw(&Rectangle::new(
            [(a as i32, y_of(b.max_ns as f64)), (z as i32, y_of(0.0))],
            colour.filled(),
        ))
        .map_err(err)?;
    }
    draw_collective_axis(root, series, (plot_w, y_of(0.0), h))?;
    if bars.is_empty() {
        let note = "no matched collectives";
        let x = (LEFT + (plot_w - text_width(note, 13.0)) / 2.0) as i32;
        root.draw(&Text::new(note, (x, (TOP + plot_h / 2.0) as i32), font(13)))
            .map_err(err)?;
    }
    Ok(())
}

/// The collective axis: its line, the first and last collective's numbers, and what it counts.
fn draw_collective_axis<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &SkewSeries,
    (plot_w, y0, h): (f64, i32, u32),
) -> DrawResult {
    let font = ("sans-serif", 11).into_font().color(&INK);
    let axis = vec![
        (LEFT as i32, TOP as i32),
        (LEFT as i32, y0),
        ((LEFT + plot_w) as i32, y0),
    ];
    root.draw(&PathElement::new(axis, INK)).map_err(err)?;
    let n = series.skew_ns.len();
    if n == 0 {
        return Ok(());
    }
    let last = crate::format::count(n as u64);
    let lx = (LEFT + plot_w - text_width(&last, 11.0)) as i32;
    root.draw(&Text::new("1", (LEFT as i32, y0 + 4), font.clone()))
        .map_err(err)?;
    root.draw(&Text::new(last, (lx, y0 + 4), font.clone()))
        .map_err(err)?;
    let per = if n > plot_w as usize {
        " (each bar: the largest skew of its run)"
    } else {
        ""
    };
    let title = format!("collectives in order of first arrival{per}");
    let tx = (LEFT + (plot_w - text_width(&title, 11.0)) / 2.0) as i32;
    root.draw(&Text::new(title, (tx, h as i32 - 15), font))
        .map_err(err)?;
    Ok(())
}

/// One swatch and name per rank (the first [`LEGEND_RANKS`], then how many more), the
/// straggler marked, on a line under the title; a line too long for the width stops early.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &SkewSeries,
) -> DrawResult {
    let (w, _) = root.dim_in_pixel();
    let font = ("sans-serif", 11).into_font().color(&INK);
    root.draw(&Text::new("last rank:", (8, 28), font.clone()))
        .map_err(err)?;
    let mut x = 8.0 + text_width("last rank:", 11.0) + 8.0;
    for (i, name) in series.ranks.iter().enumerate().take(LEGEND_RANKS) {
        let rank = i as u32;
        let text = if series.straggler == Some(rank) {
            format!("{name} (straggler)")
        } else {
            name.clone()
        };
        let width = 14.0 + text_width(&text, 11.0) + 6.0;
        if x + width > f64::from(w) {
            break;
        }
        root.draw(&Rectangle::new(
            [(x as i32, 29), (x as i32 + 10, 39)],
            rank_colour(series, rank).filled(),
        ))
        .map_err(err)?;
        root.draw(&Text::new(text, (x as i32 + 14, 28), font.clone()))
            .map_err(err)?;
        x += width;
    }
    let more = series.ranks.len().saturating_sub(LEGEND_RANKS);
    if more > 0 && x + 60.0 <= f64::from(w) {
        root.draw(&Text::new(format!("+{more} more"), (x as i32, 28), font))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(skews: &[Ns], last: &[u32]) -> SkewSeries {
        SkewSeries {
            title: "t".into(),
            collectives: skews.len() as u64,
            skew_ns: skews.to_vec(),
            last_rank: last.to_vec(),
            ranks: vec!["rank 0".into(), "rank 1".into()],
            straggler: Some(1),
        }
    }

    #[test]
    fn few_collectives_are_a_bar_each() {
        let s = series(&[5, 9, 1], &[0, 1, 0]);
        let b = bins(&s, 100);
        assert_eq!(b.len(), 3);
        assert_eq!(
            b.iter()
                .map(|b| (b.first, b.len, b.max_ns, b.last_rank))
                .collect::<Vec<_>>(),
            vec![(0, 1, 5, 0), (1, 1, 9, 1), (2, 1, 1, 0)]
        );
    }

    #[test]
    fn more_collectives_than_columns_keep_each_runs_largest_skew() {
        // 10 collectives in 3 bars: runs of 3, 3, 4; the spike at 7 is kept, with its rank.
        let skews: Vec<Ns> = (0..10).map(|i| if i == 7 { 1_000 } else { i }).collect();
        let last: Vec<u32> = (0..10).map(|i| u32::from(i == 7)).collect();
        let b = bins(&series(&skews, &last), 3);
        let runs: Vec<(usize, usize)> = b.iter().map(|b| (b.first, b.len)).collect();
        assert_eq!(runs, vec![(0, 3), (3, 3), (6, 4)]);
        assert_eq!(
            b.iter().map(|b| b.len).sum::<usize>(),
            10,
            "every collective once"
        );
        assert_eq!((b[2].max_ns, b[2].last_rank), (1_000, 1));
        assert_eq!((b[0].max_ns, b[1].max_ns), (2, 5));
        assert!(bins(&series(&[], &[]), 3).is_empty());
    }

    #[test]
    fn the_chart_draws_a_bar_per_bin_in_the_last_ranks_colours() {
        let s = series(&[5, 9, 1], &[0, 1, 0]);
        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (400, SKEW_CHART_HEIGHT)).into_drawing_area();
            draw_skew_chart(&root, &s).expect("draws");
            root.present().expect("present");
        }
        // The straggler's bar and swatch in the alert colour, rank 0's two bars and swatch blue.
        assert_eq!(svg.matches("#DC2626").count(), 2, "{svg}");
        assert_eq!(svg.matches("#2563EB").count(), 3, "{svg}");
        assert!(svg.contains("rank 1 (straggler)"), "{svg}");
    }
}
