//! Plots drawn by the core with plotters, generic over the backend: a `<canvas>` in the page
//! (plotters-canvas), SVG natively (tests, reports).
//!
//! Inputs are already aggregated ([`TimelineView`], [`GapHistogram`]), so drawing costs one
//! rectangle per run of equal pixel columns, never one per kernel.

pub mod idle_causes;
pub mod lprof_rounds;
pub mod step_times;

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

/// Approximate width of `text` at `px` font size. Text is only ever drawn left/top-anchored
/// at positions computed from this estimate: plotters' exact measurement needs the DOM (a
/// styled `<span>`), which the page's Content-Security-Policy forbids.
fn text_width(text: &str, px: f64) -> f64 {
    text.chars().count() as f64 * px * 0.56
}

/// Bars of idle time per bucket, labelled with their gap counts; axes drawn by hand.
pub fn draw_gap_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    hist: &GapHistogram,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let (left, right, top, bottom) = (52.0, 10.0, 30.0, 40.0);
    let plot_w = (f64::from(w) - left - right).max(10.0);
    let plot_h = (f64::from(h) - top - bottom).max(10.0);
    let max_ms = hist
        .buckets
        .iter()
        .map(|b| b.total_us / 1000.0)
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.15;
    let y_of = |ms: f64| (top + plot_h - ms / max_ms * plot_h) as i32;
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    root.draw(&Text::new(
        "GPU idle time by gap size (ms), gap counts above bars",
        (left as i32, 6),
        font(13),
    ))
    .map_err(err)?;
    for t in 0..=4 {
        let ms = max_ms / 1.15 * f64::from(t) / 4.0;
        let y = y_of(ms);
        root.draw(&PathElement::new(
            vec![(left as i32, y), ((left + plot_w) as i32, y)],
            GRID,
        ))
        .map_err(err)?;
        let label = format!("{ms:.1}");
        let x = (left - 6.0 - text_width(&label, 11.0)) as i32;
        root.draw(&Text::new(label, (x, y - 6), font(11)))
            .map_err(err)?;
    }
    let slot = plot_w / hist.buckets.len().max(1) as f64;
    for (i, b) in hist.buckets.iter().enumerate() {
        let x0 = left + slot * i as f64;
        let (bx0, bx1) = ((x0 + slot * 0.14) as i32, (x0 + slot * 0.86) as i32);
        let y = y_of(b.total_us / 1000.0);
        root.draw(&Rectangle::new(
            [(bx0, y), (bx1, y_of(0.0))],
            KERNEL.mix(0.85).filled(),
        ))
        .map_err(err)?;
        let count = b.count.to_string();
        let cx = (x0 + (slot - text_width(&count, 11.0)) / 2.0) as i32;
        root.draw(&Text::new(count, (cx, y - 15), font(11)))
            .map_err(err)?;
        // Alternate two label rows when the slots are too narrow for the labels.
        let row = if text_width(&b.label, 11.0) > slot * 0.95 && i % 2 == 1 {
            14
        } else {
            0
        };
        let lx = (x0 + (slot - text_width(&b.label, 11.0)) / 2.0) as i32;
        root.draw(&Text::new(
            b.label.clone(),
            (lx, (top + plot_h) as i32 + 6 + row),
            font(11),
        ))
        .map_err(err)?;
    }
    let axis = vec![
        (left as i32, top as i32),
        (left as i32, y_of(0.0)),
        ((left + plot_w) as i32, y_of(0.0)),
    ];
    root.draw(&PathElement::new(axis, INK)).map_err(err)?;
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
    fn histogram_draws_nine_bars_with_labels() {
        let trace = crate::model::Trace::default();
        let mut hist = crate::drill::gaps::idle_gap_histogram(&trace, None);
        hist.buckets[2].count = 4;
        hist.buckets[2].total_us = 30.0;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (420, 240)).into_drawing_area();
            draw_gap_histogram(&root, &hist).expect("draw");
        }
        assert_eq!(
            svg.matches("<rect").count(),
            1 + 9,
            "background + one bar per bucket"
        );
        assert!(svg.contains("500 µs–1 ms"), "{svg}");
        assert!(
            svg.lines().any(|l| l.trim() == "4"),
            "the count of the populated bucket: {svg}"
        );
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
