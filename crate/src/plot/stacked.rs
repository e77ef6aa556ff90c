//! Rows of stacked horizontal bars under a title and a legend of colours: one row per device
//! ("where the idle time went") or per trace ("time per kernel class"). Each row is a label,
//! its segments as fractions of the bar's full width, and a text after the bar.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawResult, GRID, INK, err, text_width};

const TITLE_PX: u32 = 24;
const LEGEND_ROW_PX: u32 = 18;
const ROW_PX: u32 = 24;

/// A chart of stacked bars, already in colours and fractions.
#[derive(Debug, Clone, PartialEq)]
pub struct Stacked {
    pub title: String,
    /// The legend: a colour and what it stands for, in order.
    pub legend: Vec<(RGBColor, String)>,
    pub rows: Vec<StackedRow>,
    /// Drawn under the title instead of rows when set (nothing to show).
    pub empty: Option<String>,
    /// Width of the label column and of the text after each bar, px.
    pub label_px: f64,
    pub text_px: f64,
}

/// One bar: its label, its segments (colour, fraction of the full width) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct StackedRow {
    pub label: String,
    pub segments: Vec<(RGBColor, f64)>,
    pub text: String,
}

/// Legend entries laid out in rows that fit `width`: (x, row) of each.
fn legend_layout(labels: &[&str], width: f64) -> Vec<(f64, u32)> {
    let (mut x, mut row) = (8.0, 0);
    labels
        .iter()
        .map(|label| {
            let w = 16.0 + text_width(label, 11.0) + 18.0;
            if x + w > width && x > 8.0 {
                (x, row) = (8.0, row + 1);
            }
            let at = (x, row);
            x += w;
            at
        })
        .collect()
}

/// `label` cut to fit `width` px at 11 px (its middle replaced by `…`, so a file's name and
/// what follows it both show), else whole.
fn fit(label: &str, width: f64) -> String {
    if text_width(label, 11.0) <= width {
        return label.to_string();
    }
    let keep = ((width / text_width("m", 11.0)).floor() as usize).saturating_sub(1);
    let chars: Vec<char> = label.chars().collect();
    let tail = keep / 2;
    let head = keep - tail;
    let start: String = chars.iter().take(head).collect();
    let end: String = chars[chars.len().saturating_sub(tail)..].iter().collect();
    format!("{start}…{end}")
}

impl Stacked {
    fn labels(&self) -> Vec<&str> {
        self.legend.iter().map(|(_, l)| l.as_str()).collect()
    }

    /// The height in pixels the chart needs at `width`.
    pub fn height(&self, width: u32) -> u32 {
        let rows = legend_layout(&self.labels(), f64::from(width))
            .last()
            .map_or(1, |l| l.1 + 1);
        TITLE_PX + LEGEND_ROW_PX * rows + 6 + ROW_PX * self.rows.len().max(1) as u32 + 4
    }

    /// The width of a full bar at `width`, px.
    pub fn plot_width(&self, width: u32) -> f64 {
        (f64::from(width) - self.label_px - self.text_px - 8.0).max(40.0)
    }

    /// Draws the chart filling `root`.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        root.fill(&WHITE).map_err(err)?;
        let (w, _) = root.dim_in_pixel();
        let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
        root.draw(&Text::new(self.title.clone(), (8, 6), font(13)))
            .map_err(err)?;
        if let Some(empty) = &self.empty {
            return root
                .draw(&Text::new(
                    empty.clone(),
                    (8, TITLE_PX as i32 + 4),
                    font(12),
                ))
                .map_err(err);
        }
        let legend = legend_layout(&self.labels(), f64::from(w));
        for ((colour, label), &(x, row)) in self.legend.iter().zip(&legend) {
            let y = (TITLE_PX + LEGEND_ROW_PX * row) as i32;
            let x = x as i32;
            root.draw(&Rectangle::new(
                [(x, y + 2), (x + 11, y + 13)],
                colour.filled(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(label.clone(), (x + 16, y + 1), font(11)))
                .map_err(err)?;
        }
        let legend_rows = legend.last().map_or(1, |l| l.1 + 1);
        let top = (TITLE_PX + LEGEND_ROW_PX * legend_rows + 6) as i32;
        let plot_w = self.plot_width(w);
        let x0 = self.label_px as i32;
        for (i, r) in self.rows.iter().enumerate() {
            let y = top + (ROW_PX as i32) * i as i32;
            let (y0, y1) = (y + 2, y + ROW_PX as i32 - 4);
            root.draw(&Text::new(
                fit(&r.label, self.label_px - 14.0),
                (8, y + 5),
                font(11),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + plot_w as i32, y1)],
                GRID.filled(),
            ))
            .map_err(err)?;
            let mut at = 0.0;
            for &(colour, fraction) in &r.segments {
                let from = x0 + (at * plot_w) as i32;
                at += fraction.max(0.0);
                let to = x0 + (at.min(1.0) * plot_w) as i32;
                if to > from {
                    root.draw(&Rectangle::new([(from, y0), (to, y1)], colour.filled()))
                        .map_err(err)?;
                }
            }
            root.draw(&Text::new(
                r.text.clone(),
                (x0 + plot_w as i32 + 6, y + 5),
                font(11),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}
