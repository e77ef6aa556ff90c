//! Plots drawn by the core with plotters, generic over the backend: a `<canvas>` in the page
//! (plotters-canvas), SVG natively (tests, reports).
//!
//! Inputs are already aggregated ([`TimelineView`], [`GapHistogram`]), so drawing costs one
//! rectangle per run of equal pixel columns, never one per kernel.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use crate::drill::gaps::GapHistogram;
use crate::timeline::{LaneView, TimelineView};

/// Geometry of the timeline in pixels, shared with the page to map the pointer to lane and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimelineLayout {
    /// Width of the lane-label column; the time axis starts here.
    pub label_width_px: u32,
    /// Height of the time ruler above the first lane.
    pub top_px: u32,
    /// Height of one lane including its gap.
    pub lane_height_px: u32,
    /// Blank space at the bottom of each lane.
    pub lane_gap_px: u32,
}

pub const TIMELINE_LAYOUT: TimelineLayout = TimelineLayout {
    label_width_px: 150,
    top_px: 22,
    lane_height_px: 24,
    lane_gap_px: 4,
};

const INK: RGBColor = RGBColor(40, 44, 52);
const GRID: RGBColor = RGBColor(225, 228, 234);
const IDLE: RGBColor = RGBColor(253, 226, 222);
const KERNEL: RGBColor = RGBColor(37, 99, 235);
const STEP: RGBColor = RGBColor(217, 119, 6);

type DrawResult = Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// The pixel height a view needs: ruler plus one row per lane.
pub fn timeline_height(view: &TimelineView) -> u32 {
    let l = TIMELINE_LAYOUT;
    l.top_px + l.lane_height_px * view.lanes.len().max(1) as u32 + 4
}

/// Draws lanes (labels, idle shading, busy columns) and a time ruler.
pub fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let l = TIMELINE_LAYOUT;
    draw_ruler(root, view)?;
    for (i, lane) in view.lanes.iter().enumerate() {
        let y0 = (l.top_px + l.lane_height_px * i as u32) as i32;
        let y1 = y0 + (l.lane_height_px - l.lane_gap_px) as i32;
        draw_lane(root, lane, y0, y1)?;
        let label = Text::new(
            lane.label.clone(),
            (6, y0 + 5),
            ("sans-serif", 12).into_font().color(&INK),
        );
        root.draw(&label).map_err(err)?;
    }
    Ok(())
}

fn draw_lane<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lane: &LaneView,
    y0: i32,
    y1: i32,
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let base = if lane.kind == "steps" { STEP } else { KERNEL };
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + lane.busy.len() as i32, y1)],
        GRID.filled(),
    ))
    .map_err(err)?;
    for (start, end, idle) in runs(&lane.idle, |&v| v) {
        if idle {
            root.draw(&Rectangle::new(
                [(x0 + start as i32, y0), (x0 + end as i32, y1)],
                IDLE.filled(),
            ))
            .map_err(err)?;
        }
    }
    let level = |b: &f32| {
        if *b <= 0.0 {
            0
        } else {
            1 + (b.clamp(0.0, 1.0) * 4.0).round() as u8
        }
    };
    for (start, end, lvl) in runs(&lane.busy, level) {
        if lvl == 0 {
            continue;
        }
        let alpha = 0.2 + 0.8 * f64::from(lvl - 1) / 4.0;
        let style = base.mix(alpha).filled();
        root.draw(&Rectangle::new(
            [(x0 + start as i32, y0), (x0 + end as i32, y1)],
            style,
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// Runs of equal keys: `(first column, one past the last, key)`.
fn runs<T, K: PartialEq + Copy>(values: &[T], key: impl Fn(&T) -> K) -> Vec<(usize, usize, K)> {
    let mut out: Vec<(usize, usize, K)> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let k = key(v);
        match out.last_mut() {
            Some(last) if last.2 == k => last.1 = i + 1,
            _ => out.push((i, i + 1, k)),
        }
    }
    out
}

/// Tick labels relative to the view start, in a unit that suits the span.
fn draw_ruler<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let width = view.columns as i32;
    let span = (view.end_ns - view.start_ns).max(1) as f64;
    let (unit, scale) = if span >= 2e9 {
        ("s", 1e9)
    } else if span >= 2e6 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    };
    let ticks = 6;
    for t in 0..=ticks {
        let x = x0 + width * t / ticks;
        let at = span * f64::from(t) / f64::from(ticks) / scale;
        root.draw(&PathElement::new(vec![(x, 14), (x, 20)], INK))
            .map_err(err)?;
        let text = format!("+{at:.3} {unit}");
        let anchor = if t == ticks { x - 70 } else { x + 2 };
        root.draw(&Text::new(
            text,
            (anchor, 2),
            ("sans-serif", 11).into_font().color(&INK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// Bars of idle time per bucket, labelled with their gap counts.
pub fn draw_gap_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    hist: &GapHistogram,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let max = hist
        .buckets
        .iter()
        .map(|b| b.total_us)
        .fold(0.0, f64::max)
        .max(1.0)
        / 1000.0;
    let n = hist.buckets.len().max(1) as f64;
    let labels: Vec<String> = hist.buckets.iter().map(|b| b.label.clone()).collect();
    let mut chart = ChartBuilder::on(root)
        .margin(10)
        .caption(
            "GPU idle gaps by size",
            ("sans-serif", 15).into_font().color(&INK),
        )
        .x_label_area_size(34)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..max * 1.15)
        .map_err(err)?;
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(labels.len() * 2 + 1)
        .x_label_formatter(&label_of)
        .y_desc("idle time (ms)")
        .label_style(("sans-serif", 11).into_font().color(&INK))
        .draw()
        .map_err(err)?;
    let bars = hist.buckets.iter().enumerate().map(|(i, b)| {
        let x = i as f64;
        Rectangle::new(
            [(x - 0.38, 0.0), (x + 0.38, b.total_us / 1000.0)],
            KERNEL.mix(0.8).filled(),
        )
    });
    chart.draw_series(bars).map_err(err)?;
    let counts = hist.buckets.iter().enumerate().map(|(i, b)| {
        Text::new(
            format!("{}", b.count),
            (i as f64 - 0.2, b.total_us / 1000.0 + max * 0.08),
            ("sans-serif", 11).into_font().color(&INK),
        )
    });
    chart.draw_series(counts).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::LaneView;

    fn lane(busy: Vec<f32>, idle: Vec<bool>) -> LaneView {
        let n = busy.len();
        LaneView {
            label: "GPU 0 · stream 7".into(),
            kind: "kernels".into(),
            device: Some(0),
            stream: Some(7),
            busy,
            count: vec![1; n],
            top: vec![-1; n],
            idle,
        }
    }

    #[test]
    fn runs_merge_equal_neighbours() {
        assert_eq!(
            runs(&[1, 1, 2, 2, 2, 1], |&v| v),
            vec![(0, 2, 1), (2, 5, 2), (5, 6, 1)]
        );
        assert!(runs::<u8, u8>(&[], |&v| v).is_empty());
    }

    #[test]
    fn timeline_draws_one_rectangle_per_run() {
        let view = TimelineView {
            start_ns: 0,
            end_ns: 1_000,
            columns: 6,
            lanes: vec![lane(
                vec![0.0, 1.0, 1.0, 0.5, 0.0, 0.0],
                vec![true, false, false, false, true, true],
            )],
            names: vec![],
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (200, timeline_height(&view)))
                .into_drawing_area();
            draw_timeline(&root, &view).expect("draw");
        }
        // background lane + 2 idle runs + 2 busy runs (full, half) = 5 lane rectangles + canvas fill.
        assert_eq!(svg.matches("<rect").count(), 6, "{svg}");
        assert!(svg.contains("GPU 0 · stream 7"));
    }
}
