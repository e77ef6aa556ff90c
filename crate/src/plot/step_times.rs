//! Per-step wall time of a baseline and a target (spec §6): one line per trace, step index on x,
//! the duration on y (round ticks in the unit that fits, `ticks::duration_ticks`), drawn by hand (axes, labels and legend placed by estimated text width, as the rest of
//! this module, so the page's canvas never needs DOM text measurement).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::ticks::{Tick, duration_ticks};
use super::{DrawResult, GRID, INK, KERNEL, STEP, err, text_width};

/// One trace's per-step wall times (µs), in step order.
#[derive(Debug, Clone, Copy)]
pub struct StepSeries<'a> {
    pub label: &'a str,
    pub wall_us: &'a [f64],
}

/// Series colours in order: baseline, target, then any further trace.
const COLOURS: [RGBColor; 3] = [KERNEL, STEP, RGBColor(22, 163, 74)];

/// Plot margins in pixels: left (y labels), right, top (title, legend), bottom (x labels).
const MARGIN: (f64, f64, f64, f64) = (64.0, 12.0, 44.0, 34.0);

/// Draws the series as lines with point marks, a y grid of round durations, step ticks and a
/// legend.
pub fn draw_step_times<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[StepSeries<'_>],
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    root.draw(&Text::new(
        "Wall time per step, step by step",
        (MARGIN.0 as i32, 6),
        font(13),
    ))
    .map_err(err)?;
    let steps = series.iter().map(|s| s.wall_us.len()).max().unwrap_or(0);
    if steps == 0 {
        let msg = "no steady-state steps to plot";
        return root
            .draw(&Text::new(
                msg,
                (MARGIN.0 as i32, MARGIN.2 as i32),
                font(12),
            ))
            .map_err(err);
    }
    let frame = Frame::new(root.dim_in_pixel(), steps, max_value(series));
    frame.axes(root)?;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points = s.wall_us.iter().enumerate().map(|(x, &v)| frame.at(x, v));
        let line = column_envelope(points);
        root.draw(&PathElement::new(line, colour.stroke_width(2)))
            .map_err(err)?;
        if s.wall_us.len() <= 200 {
            for (x, &v) in s.wall_us.iter().enumerate() {
                root.draw(&Circle::new(frame.at(x, v), 2, colour.filled()))
                    .map_err(err)?;
            }
        }
    }
    legend(root, series, frame.width)
}

/// The polyline through `points` (x never decreasing) with at most four points per pixel
/// column: its first, its highest and lowest in the order met, and its last. It covers the
/// pixels the whole polyline does, yet a canvas strokes a few thousand points, not one per step
/// of a long trace (1.4 M steps took the page's main thread seconds).
fn column_envelope(points: impl Iterator<Item = (i32, i32)>) -> Vec<(i32, i32)> {
    let mut line: Vec<(i32, i32)> = Vec::new();
    let mut column: Option<Column> = None;
    for p in points {
        match &mut column {
            Some(c) if c.x == p.0 => c.add(p.1),
            _ => {
                if let Some(c) = column.take() {
                    c.extend(&mut line);
                }
                column = Some(Column::new(p));
            }
        }
    }
    if let Some(c) = column {
        c.extend(&mut line);
    }
    line
}

/// One pixel column's points: the first, the last, and the extremes with the order they came in.
struct Column {
    x: i32,
    first: i32,
    last: i32,
    /// `(y, index)` of the smallest and the largest y.
    low: (i32, usize),
    high: (i32, usize),
    count: usize,
}

impl Column {
    fn new((x, y): (i32, i32)) -> Column {
        Column {
            x,
            first: y,
            last: y,
            low: (y, 0),
            high: (y, 0),
            count: 1,
        }
    }

    fn add(&mut self, y: i32) {
        if y < self.low.0 {
            self.low = (y, self.count);
        }
        if y > self.high.0 {
            self.high = (y, self.count);
        }
        self.last = y;
        self.count += 1;
    }

    /// Appends the column's points in the order met, each once in a row.
    fn extend(self, line: &mut Vec<(i32, i32)>) {
        let (a, b) = if self.low.1 <= self.high.1 {
            (self.low.0, self.high.0)
        } else {
            (self.high.0, self.low.0)
        };
        for y in [self.first, a, b, self.last] {
            if line.last() != Some(&(self.x, y)) {
                line.push((self.x, y));
            }
        }
    }
}

fn max_value(series: &[StepSeries<'_>]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.wall_us.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// Pixel mapping of the plot area.
struct Frame {
    width: f64,
    height: f64,
    steps: usize,
    /// The y grid: round durations (ns) from 0 to the axis' top, at or above the largest value.
    ticks: Vec<Tick>,
    /// Top of the y axis (µs).
    y_max: f64,
}

impl Frame {
    fn new((w, h): (u32, u32), steps: usize, max_us: f64) -> Frame {
        let height = (f64::from(h) - MARGIN.2 - MARGIN.3).max(10.0);
        let ticks = duration_ticks(max_us * 1e3, height, 28.0);
        let top_ns = ticks.last().map_or(1e3, |t| t.at);
        Frame {
            width: (f64::from(w) - MARGIN.0 - MARGIN.1).max(10.0),
            height,
            steps,
            ticks,
            y_max: (top_ns / 1e3).max(1e-3),
        }
    }

    fn x(&self, step: usize) -> i32 {
        let span = self.steps.saturating_sub(1).max(1) as f64;
        (MARGIN.0 + step as f64 / span * self.width) as i32
    }

    fn y(&self, us: f64) -> i32 {
        let v = if us.is_finite() {
            us.clamp(0.0, self.y_max)
        } else {
            0.0
        };
        (MARGIN.2 + self.height - v / self.y_max * self.height) as i32
    }

    fn at(&self, step: usize, us: f64) -> (i32, i32) {
        (self.x(step), self.y(us))
    }

    /// Grid lines with duration labels, the axes, and up to eight step ticks.
    fn axes<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        let font = ("sans-serif", 11).into_font().color(&INK);
        let (left, right) = (MARGIN.0 as i32, (MARGIN.0 + self.width) as i32);
        for tick in &self.ticks {
            let y = self.y(tick.at / 1e3);
            root.draw(&PathElement::new(vec![(left, y), (right, y)], GRID))
                .map_err(err)?;
            let x = (MARGIN.0 - 6.0 - text_width(&tick.label, 11.0)) as i32;
            root.draw(&Text::new(tick.label.clone(), (x, y - 6), font.clone()))
                .map_err(err)?;
        }
        let bottom = self.y(0.0);
        let axis = vec![(left, MARGIN.2 as i32), (left, bottom), (right, bottom)];
        root.draw(&PathElement::new(axis, INK)).map_err(err)?;
        // Steps are counted from 1, as the page's step tables number them.
        let every = self.steps.div_ceil(8).max(1);
        for step in (0..self.steps).step_by(every) {
            let x = self.x(step);
            root.draw(&PathElement::new(vec![(x, bottom), (x, bottom + 4)], INK))
                .map_err(err)?;
            let label = (step + 1).to_string();
            let lx = x - (text_width(&label, 11.0) / 2.0) as i32;
            root.draw(&Text::new(label, (lx, bottom + 7), font.clone()))
                .map_err(err)?;
        }
        let caption = "step";
        let cx = (MARGIN.0 + self.width - text_width(caption, 11.0)) as i32;
        root.draw(&Text::new(caption, (cx, bottom + 19), font))
            .map_err(err)
    }
}

/// A colour swatch and the label of each series, right-aligned on the title row's line below.
fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &[StepSeries<'_>],
    width: f64,
) -> DrawResult {
    let font = ("sans-serif", 12).into_font().color(&INK);
    let entry_width = |s: &StepSeries<'_>| 22.0 + text_width(s.label, 12.0) + 14.0;
    let total: f64 = series.iter().map(entry_width).sum();
    let mut x = MARGIN.0 + width - total;
    let y = 26;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let x0 = x as i32;
        root.draw(&PathElement::new(
            vec![(x0, y + 6), (x0 + 16, y + 6)],
            colour.stroke_width(3),
        ))
        .map_err(err)?;
        root.draw(&Text::new(s.label.to_string(), (x0 + 22, y), font.clone()))
            .map_err(err)?;
        x += entry_width(s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svg(series: &[StepSeries<'_>]) -> String {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (640, 280)).into_drawing_area();
            draw_step_times(&root, series).expect("draw");
        }
        svg
    }

    fn colour(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    #[test]
    fn both_series_are_drawn_with_a_legend() {
        let base = [2642.0, 2642.0, 2650.0, 2640.0];
        let target = [3580.0, 3581.0, 3579.0];
        let svg = svg(&[
            StepSeries {
                label: "v1.1",
                wall_us: &base,
            },
            StepSeries {
                label: "main",
                wall_us: &target,
            },
        ]);
        assert!(
            svg.contains("v1.1") && svg.contains("main"),
            "legend labels"
        );
        for (c, points) in [(KERNEL, base.len()), (STEP, target.len())] {
            let hex = colour(c);
            let lines = svg
                .lines()
                .filter(|l| l.contains("<polyline") && l.contains(&hex))
                .count();
            assert_eq!(lines, 2, "the series line and its legend swatch in {hex}");
            let marks = svg
                .lines()
                .filter(|l| l.contains("<circle") && l.contains(&hex))
                .count();
            assert_eq!(marks, points, "one mark per step in {hex}");
        }
        assert!(svg.lines().any(|l| l.trim() == "step"), "x axis caption");
    }

    #[test]
    fn the_larger_series_sits_higher() {
        let frame = Frame::new((640, 280), 4, 3581.0);
        assert!(
            frame.y(3580.0) < frame.y(2642.0),
            "larger µs is higher on the canvas"
        );
        assert_eq!(frame.y(0.0), (MARGIN.2 + frame.height) as i32);
        assert!(frame.x(3) > frame.x(0));
        assert_eq!(
            frame.y(f64::NAN),
            frame.y(0.0),
            "non-finite values sit on the axis"
        );
    }

    #[test]
    fn the_y_grid_reads_round_durations_in_the_unit_that_fits() {
        // 17.4 ms steps: a grid of ms, not of tens of thousands of µs.
        let frame = Frame::new((640, 280), 16, 17_390.0);
        let labels: Vec<&str> = frame.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels.first(), Some(&"0 ms"), "{labels:?}");
        assert!(labels.iter().all(|l| l.ends_with(" ms")), "{labels:?}");
        assert!(
            frame.y_max >= 17_390.0,
            "the top tick is above the largest step"
        );
        let svg = svg(&[StepSeries {
            label: "before",
            wall_us: &[17_390.0, 17_100.0],
        }]);
        assert!(!svg.contains(">20000<"), "no µs grid labels");
        assert!(svg.contains("20 ms"), "a round ms label");
        let x_labels: Vec<&str> = svg
            .lines()
            .map(str::trim)
            .filter(|l| *l == "1" || *l == "0")
            .collect();
        assert_eq!(
            x_labels,
            ["1"],
            "steps are numbered from 1, as the step tables number them"
        );
    }

    #[test]
    fn a_long_series_is_drawn_with_at_most_four_points_per_pixel_column() {
        // 100 k steps on a 564-pixel-wide plot: a zigzag whose every column spans 100..900 µs.
        let wall: Vec<f64> = (0..100_000)
            .map(|i| if i % 2 == 0 { 100.0 } else { 900.0 })
            .collect();
        let frame = Frame::new((640, 280), wall.len(), 900.0);
        let all: Vec<(i32, i32)> = wall
            .iter()
            .enumerate()
            .map(|(x, &v)| frame.at(x, v))
            .collect();
        let line = column_envelope(all.iter().copied());
        let columns = frame.width as usize + 1;
        assert!(line.len() <= 4 * columns, "{} points", line.len());
        assert_eq!((line.first(), line.last()), (all.first(), all.last()));
        for x in MARGIN.0 as i32..(MARGIN.0 + frame.width) as i32 {
            let ys = |p: &[(i32, i32)]| -> Option<(i32, i32)> {
                let ys = p.iter().filter(|q| q.0 == x).map(|q| q.1);
                Some((ys.clone().min()?, ys.max()?))
            };
            assert_eq!(ys(&line), ys(&all), "column {x}: the same extent");
        }
        let svg = svg(&[StepSeries {
            label: "long",
            wall_us: &wall,
        }]);
        let polyline = svg
            .lines()
            .find(|l| l.contains("<polyline") && l.contains(&colour(KERNEL)))
            .expect("the series line");
        let drawn = polyline.matches(',').count();
        assert!(drawn <= 4 * columns, "{drawn} points drawn");
        assert!(!svg.contains("<circle"), "no marks on a long series");
    }

    #[test]
    fn a_short_series_keeps_every_point_in_order() {
        let points = [(10, 5), (11, 7), (11, 3), (11, 9), (11, 4), (12, 6)];
        assert_eq!(
            column_envelope(points.into_iter()),
            [(10, 5), (11, 7), (11, 3), (11, 9), (11, 4), (12, 6)]
        );
        assert_eq!(
            column_envelope([(1, 2), (1, 2), (2, 2)].into_iter()),
            [(1, 2), (2, 2)],
            "a point repeated in a row is drawn once"
        );
    }

    #[test]
    fn no_steps_draws_a_message_not_a_panic() {
        let svg = svg(&[StepSeries {
            label: "baseline",
            wall_us: &[],
        }]);
        assert!(svg.contains("no steady-state steps"));
    }
}
