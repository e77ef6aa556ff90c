//! Plots drawn by the core with plotters, generic over the backend: a `<canvas>` in the page
//! (plotters-canvas), SVG natively (tests, reports).
//!
//! Inputs are already aggregated ([`TimelineView`], [`GapHistogram`]), so drawing costs one
//! rectangle per run of equal pixel columns, never one per kernel.

pub mod groups;
pub mod idle_causes;
pub mod kernel_classes;
pub mod lprof_rounds;
pub mod skew;
pub mod stacked;
pub mod step_times;
pub mod ticks;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use crate::drill::gaps::GapHistogram;
use crate::timeline::{Item, LaneView, NAMED_DEPTHS, TimelineView, depth_row, digit_busy};

/// Geometry of the timeline in pixels. The page reads the label column's width and the ruler's
/// height (to map the pointer to a time); the lanes' heights are the core's alone, and their
/// places come with each view ([`lane_layout`]), so they are not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimelineLayout {
    /// Width of the lane-label column; the time axis starts here.
    pub label_width_px: u32,
    /// Height of the time ruler above the first lane.
    pub top_px: u32,
    /// Height of a lane of one row (kernels, steps, API calls, flat NVTX) including its gap.
    #[serde(skip)]
    pub lane_height_px: u32,
    /// Blank space at the bottom of each lane.
    #[serde(skip)]
    pub lane_gap_px: u32,
    /// Height of one depth row of an NVTX lane holding nested ranges: room for an 11 px name
    /// (names are drawn in rows of at least [`NAME_MIN_PX`]).
    #[serde(skip)]
    pub depth_row_px: u32,
    /// Height of a depth row past `timeline::NAMED_DEPTHS`: a bar without a name (hover names it).
    #[serde(skip)]
    pub thin_row_px: u32,
}

pub const TIMELINE_LAYOUT: TimelineLayout = TimelineLayout {
    label_width_px: 150,
    top_px: 24,
    lane_height_px: 24,
    lane_gap_px: 4,
    depth_row_px: 16,
    thin_row_px: 5,
};

/// Least height of a row (its box, the 1 px seam below excluded) an event's name is drawn in.
pub const NAME_MIN_PX: u32 = 12;

/// Where the timeline's lanes are drawn, from its top: each lane's box and its rows. The page
/// maps the pointer to a lane and a depth row with it, so it never assumes a lane height.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LaneLayout {
    /// One per `TimelineView::lanes`, top to bottom.
    pub lanes: Vec<LaneBox>,
    /// The canvas height the view needs: ruler, lanes and a 4 px margin.
    pub height_px: u32,
}

/// One lane's place: `top_px .. top_px + height_px` (its gap below included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LaneBox {
    pub top_px: u32,
    pub height_px: u32,
    /// The rows events are drawn in: one for most lanes, one per depth row
    /// (`timeline::depth_row`) for an NVTX lane of nested ranges; the hover sends the index of
    /// the row under the pointer.
    pub rows: Vec<RowBox>,
}

/// A row of a lane: `top_px .. top_px + height_px`, from the canvas top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RowBox {
    pub top_px: u32,
    pub height_px: u32,
}

/// Lays out `view`'s lanes below the ruler: a lane of one row is `lane_height_px` tall; an NVTX
/// lane of nested ranges (`LaneView::depths` ≥ 2) has a `depth_row_px` row per depth up to
/// `timeline::NAMED_DEPTHS` and a `thin_row_px` one per deeper depth up to
/// `timeline::DEPTH_ROWS` (deeper ranges share the last), so names stay legible where most
/// nesting is (PyTorch's emit_nvtx: 3 to 6 deep) and an 18-deep thread stays on screen.
pub fn lane_layout(view: &TimelineView) -> LaneLayout {
    let l = TIMELINE_LAYOUT;
    let mut top = l.top_px;
    let lanes = view
        .lanes
        .iter()
        .map(|lane| {
            let rows = lane_rows(lane, top);
            let inner: u32 = rows.iter().map(|r| r.height_px).sum();
            let lane_box = LaneBox {
                top_px: top,
                height_px: inner + l.lane_gap_px,
                rows,
            };
            top += lane_box.height_px;
            lane_box
        })
        .collect();
    let lanes_px = if view.lanes.is_empty() {
        l.lane_height_px
    } else {
        top - l.top_px
    };
    LaneLayout {
        lanes,
        height_px: l.top_px + lanes_px + 4,
    }
}

/// The rows of `lane`, the first at `top`.
fn lane_rows(lane: &LaneView, top: u32) -> Vec<RowBox> {
    let l = TIMELINE_LAYOUT;
    if lane.depths < 2 {
        return vec![RowBox {
            top_px: top,
            height_px: l.lane_height_px - l.lane_gap_px,
        }];
    }
    let rows = u32::from(depth_row(lane.depths - 1)) + 1;
    let mut y = top;
    (0..rows)
        .map(|r| {
            let height_px = if r < u32::from(NAMED_DEPTHS) {
                l.depth_row_px
            } else {
                l.thin_row_px
            };
            let row = RowBox {
                top_px: y,
                height_px,
            };
            y += height_px;
            row
        })
        .collect()
}

/// Font size of the timeline ruler's labels, px (the range label above it is spaced the same).
pub const RULER_FONT_PX: f64 = 11.0;

const INK: RGBColor = RGBColor(40, 44, 52);
/// The straggler's colour on the ranks' drawings (the alert red of the report's charts).
const STRAGGLER: RGBColor = RGBColor(220, 38, 38);
const GRID: RGBColor = RGBColor(225, 228, 234);
const IDLE: RGBColor = RGBColor(253, 226, 222);
const KERNEL: RGBColor = RGBColor(37, 99, 235);
const STEP: RGBColor = RGBColor(217, 119, 6);
const MUTED: RGBColor = RGBColor(110, 118, 129);
const ARROW: RGBColor = RGBColor(17, 24, 39);
/// A step's critical path: black over the lanes' colours.
const PATH: RGBColor = RGBColor(0, 0, 0);
const NVTX: RGBColor = RGBColor(71, 85, 105);

/// The colour of a CUDA API call by what it does (`names::api::ApiKind`).
fn api_color(name: &str) -> RGBColor {
    use crate::names::api::{ApiKind, api_kind};
    match api_kind(name) {
        ApiKind::Launch | ApiKind::GraphLaunch => RGBColor(37, 99, 235),
        ApiKind::BlockingSync => RGBColor(220, 38, 38),
        ApiKind::Memcpy { .. } | ApiKind::Memset { .. } => RGBColor(219, 39, 119),
        ApiKind::Alloc | ApiKind::ObjectCreate => RGBColor(202, 138, 4),
        ApiKind::ModuleLoad | ApiKind::Jit => RGBColor(124, 58, 237),
        ApiKind::Other => RGBColor(100, 116, 139),
    }
}

/// The colour of a kernel drawn on its own, by its class (`TimelineView::classes`,
/// `names::kernels::KernelCategory::key`); the bars of time per kernel class use the same.
pub fn class_color(class: &str) -> RGBColor {
    match class {
        "gemm" => RGBColor(37, 99, 235),
        "attention" => RGBColor(124, 58, 237),
        "collective" => RGBColor(220, 38, 38),
        "norm" => RGBColor(13, 148, 136),
        "sampling" => RGBColor(202, 138, 4),
        "elementwise" => RGBColor(22, 163, 74),
        "reduction" => RGBColor(146, 64, 14),
        "memory" => RGBColor(219, 39, 119),
        // Other GPU work than kernels (`timeline::work`): copies in the colour of memory
        // kernels, memsets a darker shade, graph replays orange.
        "copy" => RGBColor(219, 39, 119),
        "memset" => RGBColor(157, 23, 77),
        "replay" => RGBColor(234, 88, 12),
        _ => RGBColor(100, 116, 139),
    }
}

type DrawResult = Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing failed: {e:?}")
}

/// The pixel height a view needs: ruler plus its lanes ([`lane_layout`]).
pub fn timeline_height(view: &TimelineView) -> u32 {
    lane_layout(view).height_px
}

/// A launch → kernel arrow: from the launch call (its lane, its start) to the kernel (its lane,
/// its start), lanes as indices into `TimelineView::lanes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Arrow {
    pub from_lane: u32,
    pub from_ns: i64,
    pub to_lane: u32,
    pub to_ns: i64,
}

/// A stretch of a critical path on a lane (an index into `TimelineView::lanes`), `[start, end)`
/// in the export's ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PathMark {
    pub lane: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Draws lanes (labels, idle shading, busy columns) and a time ruler.
pub fn draw_timeline<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
) -> DrawResult {
    draw_timeline_with(root, view, None, &[])
}

/// [`draw_timeline`], with a launch → kernel arrow and a critical path (`path`, in time order)
/// on top.
pub fn draw_timeline_with<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
    arrow: Option<&Arrow>,
    path: &[PathMark],
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let layout = lane_layout(view);
    draw_ruler(root, view)?;
    for (lane, place) in view.lanes.iter().zip(&layout.lanes) {
        let y0 = place.top_px as i32;
        let y1 = (place.top_px + place.height_px - TIMELINE_LAYOUT.lane_gap_px) as i32;
        draw_lane(root, lane, (y0, y1), &place.rows)?;
        if !lane.items.is_empty() {
            draw_items(root, view, lane, &place.rows)?;
        }
        if !lane.note.is_empty() {
            let x = TIMELINE_LAYOUT.label_width_px as i32 + 6;
            let font = ("sans-serif", 11).into_font().color(&MUTED);
            root.draw(&Text::new(lane.note.clone(), (x, y0 + 5), font))
                .map_err(err)?;
        }
        let width = f64::from(TIMELINE_LAYOUT.label_width_px) - 10.0;
        let (text, size) = fit_lane_label(&lane.label, width);
        let label = Text::new(
            text,
            (6, y0 + 5),
            ("sans-serif", size).into_font().color(&INK),
        );
        root.draw(&label).map_err(err)?;
    }
    draw_path(root, view, &layout, path)?;
    if let Some(a) = arrow {
        draw_arrow(root, view, &layout, a)?;
    }
    Ok(())
}

/// The canvas x of time `t` in `view` (clamped to the plot).
fn time_x(view: &TimelineView) -> impl Fn(i64) -> i32 + '_ {
    let x0 = f64::from(TIMELINE_LAYOUT.label_width_px);
    let cols = f64::from(view.columns);
    let span = (view.end_ns - view.start_ns).max(1) as f64;
    move |t| (x0 + ((t - view.start_ns) as f64 / span * cols).clamp(0.0, cols)) as i32
}

/// A critical path: a bar along the bottom of each stretch's lane, joined where the path moves
/// from one lane to another; stretches outside the view are clamped to its edges.
fn draw_path<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
    layout: &LaneLayout,
    path: &[PathMark],
) -> DrawResult {
    let l = TIMELINE_LAYOUT;
    let x = time_x(view);
    let bottom = |lane: u32| {
        layout
            .lanes
            .get(lane as usize)
            .map(|p| (p.top_px + p.height_px - l.lane_gap_px) as i32 - 2)
    };
    let bar = ShapeStyle::from(&PATH).stroke_width(3);
    let joint = ShapeStyle::from(&PATH).stroke_width(1);
    let mut previous: Option<(i32, i32)> = None;
    for m in path {
        let Some(y) = bottom(m.lane) else {
            previous = None;
            continue;
        };
        let (a, b) = (x(m.start_ns), x(m.end_ns).max(x(m.start_ns) + 1));
        if let Some((px, py)) = previous
            && py != y
        {
            root.draw(&PathElement::new(vec![(px, py), (a, y)], joint))
                .map_err(err)?;
        }
        root.draw(&PathElement::new(vec![(a, y), (b, y)], bar))
            .map_err(err)?;
        previous = Some((b, y));
    }
    Ok(())
}

/// The arrow from the bottom of the launch call to the top of its kernel (clamped to the
/// plot when either end is outside the view), with a head at the kernel.
fn draw_arrow<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
    layout: &LaneLayout,
    a: &Arrow,
) -> DrawResult {
    let l = TIMELINE_LAYOUT;
    let x = time_x(view);
    // A lane's top and bottom (a lane past the view's: the bottom of the last).
    let lane_y = |lane: u32| {
        let place = layout.lanes.get(lane as usize).or(layout.lanes.last());
        place.map_or((l.top_px as i32, l.top_px as i32), |p| {
            let top = p.top_px as i32;
            (top, top + (p.height_px - l.lane_gap_px) as i32)
        })
    };
    let (fx, tx) = (x(a.from_ns), x(a.to_ns));
    let down = a.to_lane >= a.from_lane;
    let (fy, ty) = if down {
        (lane_y(a.from_lane).1, lane_y(a.to_lane).0)
    } else {
        (lane_y(a.from_lane).0, lane_y(a.to_lane).1)
    };
    let ink = ShapeStyle::from(&ARROW).stroke_width(2);
    root.draw(&PathElement::new(vec![(fx, fy), (tx, ty)], ink))
        .map_err(err)?;
    // The head: two strokes 8 px long, 25° either side of the shaft.
    let (dx, dy) = (f64::from(tx - fx), f64::from(ty - fy));
    let angle = dy.atan2(dx);
    for side in [-0.44f64, 0.44] {
        let back = angle + std::f64::consts::PI + side;
        let end = (
            tx + (8.0 * back.cos()) as i32,
            ty + (8.0 * back.sin()) as i32,
        );
        root.draw(&PathElement::new(vec![(tx, ty), end], ink))
            .map_err(err)?;
    }
    root.draw(&Circle::new((fx, fy), 3, ARROW.filled()))
        .map_err(err)?;
    Ok(())
}

fn draw_lane<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lane: &LaneView,
    (y0, y1): (i32, i32),
    rows: &[RowBox],
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let base = match lane.kind.as_str() {
        "steps" => STEP,
        "nvtx" | "api" => NVTX,
        // A rank's collective kernels (the ranks timeline), in the collective class's colour.
        "collectives" => class_color("collective"),
        _ => KERNEL,
    };
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
    if !lane.items.is_empty() {
        return Ok(());
    }
    if lane.depth_busy.is_empty() {
        return draw_busy(root, &lane.busy, base, (y0, y1));
    }
    // Each depth row's own busy columns, in its row (a 1 px seam below each).
    for (digits, row) in lane.depth_busy.iter().zip(rows) {
        let busy: Vec<f32> = digits.chars().map(digit_busy).collect();
        let top = row.top_px as i32;
        let bottom = (row.top_px + row.height_px) as i32 - 1;
        draw_busy(root, &busy, base, (top, bottom.max(top + 1)))?;
    }
    Ok(())
}

/// Busy columns in five shades of `base`, between `y0` and `y1`.
fn draw_busy<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    busy: &[f32],
    base: RGBColor,
    (y0, y1): (i32, i32),
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let level = |b: &f32| {
        if *b <= 0.0 {
            0
        } else {
            1 + (b.clamp(0.0, 1.0) * 4.0).round() as u8
        }
    };
    for (start, end, lvl) in runs(busy, level) {
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

/// Each event of a lane drawn on its own: a box in its class colour (kernels) or the lane's
/// colour (steps) from its start to its end (at least one pixel), a darker edge where one ends
/// and the next begins, and its name, shortened with "…" to fit inside the box. A nested NVTX
/// range is drawn in its depth row of `rows` (the lane's, from [`lane_layout`]).
fn draw_items<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
    lane: &LaneView,
    rows: &[RowBox],
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let cols = f64::from(view.columns);
    let span = (view.end_ns - view.start_ns).max(1) as f64;
    let x_of = |t: i64| -> f64 { ((t - view.start_ns) as f64 / span * cols).clamp(0.0, cols) };
    for item in &lane.items {
        let row = usize::from(depth_row(item.depth)).min(rows.len().saturating_sub(1));
        let Some(place) = rows.get(row) else {
            continue;
        };
        let (a, b) = (x_of(item.start_ns), x_of(item.end_ns));
        let (xa, xb) = (
            x0 + a.floor() as i32,
            x0 + (b.ceil() as i32).max(a.floor() as i32 + 1),
        );
        let top = place.top_px as i32;
        // Rows of one lane are parted by a 1 px seam; a lane of one row fills it.
        let seam = i32::from(rows.len() > 1);
        let bottom = top + place.height_px as i32 - seam;
        let color = item_color(view, lane, item);
        root.draw(&Rectangle::new([(xa, top), (xb, bottom)], color.filled()))
            .map_err(err)?;
        if xb - xa >= 4 {
            root.draw(&Rectangle::new([(xa, top), (xb, bottom)], INK.mix(0.55)))
                .map_err(err)?;
        }
        let name = usize::try_from(item.name)
            .ok()
            .and_then(|i| view.names.get(i));
        let fits = |n: &String| ellipsize(n, f64::from(xb - xa) - 6.0, 11.0);
        let tall = bottom - top >= NAME_MIN_PX as i32;
        if let Some(text) = name.filter(|_| tall).and_then(fits) {
            root.draw(&Text::new(
                text,
                (xa + 3, top + (bottom - top - 11) / 2),
                ("sans-serif", 11).into_font().color(&WHITE),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

fn item_color(view: &TimelineView, lane: &LaneView, item: &Item) -> RGBColor {
    let i = usize::try_from(item.name).ok();
    match lane.kind.as_str() {
        "steps" => STEP,
        "nvtx" => NVTX,
        "api" => api_color(i.and_then(|i| view.names.get(i)).map_or("", String::as_str)),
        _ => class_color(
            i.and_then(|i| view.classes.get(i))
                .map_or("other", String::as_str),
        ),
    }
}

/// A lane label that fits the label column: as is at 12 px, else at 10 px, else cut in the
/// middle so that what the lane holds (`CUDA API`, `NVTX`, `stream 7`: the text after the last
/// digit) stays readable and only the ids are shortened (the hover names the whole thread).
fn fit_lane_label(label: &str, width_px: f64) -> (String, f64) {
    for size in [12.0, 10.0] {
        if text_width(label, size) <= width_px {
            return (label.to_string(), size);
        }
    }
    let size = 10.0;
    let fits = (width_px / (size * 0.56)).floor().max(0.0) as usize;
    let chars: Vec<char> = label.chars().collect();
    let tail_from = chars
        .iter()
        .rposition(char::is_ascii_digit)
        .map_or(chars.len(), |i| i + 1);
    let tail: String = chars[tail_from..].iter().collect();
    let head_room = fits.saturating_sub(tail.chars().count() + 1);
    if head_room < 2 {
        return (ellipsize(label, width_px, size).unwrap_or_default(), size);
    }
    let head: String = chars[..tail_from].iter().take(head_room).collect();
    (format!("{head}…{tail}"), size)
}

/// `text` cut to fit `width_px` at `font_px`, ending in "…" when cut; `None` when not even two
/// characters fit.
fn ellipsize(text: &str, width_px: f64, font_px: f64) -> Option<String> {
    let fits = (width_px / (font_px * 0.56)).floor().max(0.0) as usize;
    let len = text.chars().count();
    if fits >= len {
        return Some(text.to_string());
    }
    (fits >= 2).then(|| {
        let mut cut: String = text.chars().take(fits - 1).collect();
        cut.push('…');
        cut
    })
}

/// Round ticks (`ticks::time_ticks`) read as offsets from the trace's start.
fn draw_ruler<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    view: &TimelineView,
) -> DrawResult {
    let x0 = TIMELINE_LAYOUT.label_width_px as i32;
    let cols = f64::from(view.columns);
    let span = (view.end_ns - view.start_ns).max(1) as f64;
    let font = RULER_FONT_PX;
    let ticks = ticks::time_ticks(view.start_ns, view.end_ns, view.origin_ns, cols, font);
    for t in ticks {
        let x = x0 + (t.at / span * cols).round() as i32;
        root.draw(&PathElement::new(vec![(x, 15), (x, 22)], INK))
            .map_err(err)?;
        if f64::from(x - x0) + text_width(&t.label, font) + 3.0 <= cols {
            root.draw(&Text::new(
                t.label,
                (x + 3, 3),
                ("sans-serif", 11).into_font().color(&INK),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

use ticks::text_width;

/// Fills `root` white and writes `title` at its top, from `x`: how every chart starts. Returns
/// the area's size in pixels.
fn start_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x: i32,
) -> Result<(u32, u32), String> {
    root.fill(&WHITE).map_err(err)?;
    let font = ("sans-serif", 13).into_font().color(&INK);
    root.draw(&Text::new(title, (x, 6), font)).map_err(err)?;
    Ok(root.dim_in_pixel())
}

/// A value axis' ticks: a grid line across the plot (`left`, `width`) at each and its label
/// left of the plot, `y_of` placing a value.
fn draw_value_axis<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    ticks: &[ticks::Tick],
    (left, width): (f64, f64),
    y_of: &dyn Fn(f64) -> i32,
) -> DrawResult {
    let font = ("sans-serif", 11).into_font().color(&INK);
    for t in ticks {
        let y = y_of(t.at);
        root.draw(&PathElement::new(
            vec![(left as i32, y), ((left + width) as i32, y)],
            GRID,
        ))
        .map_err(err)?;
        let x = (left - 6.0 - text_width(&t.label, 11.0)) as i32;
        root.draw(&Text::new(t.label.clone(), (x, y - 6), font.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Bars of idle time per bucket, labelled with their gap counts; axes drawn by hand.
pub fn draw_gap_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    hist: &GapHistogram,
) -> DrawResult {
    let title = "GPU idle time by gap size (number of gaps above each bar)";
    let (w, h) = start_chart(root, title, 64)?;
    let (left, right, top, bottom) = (64.0, 10.0, 44.0, 56.0);
    let plot_w = (f64::from(w) - left - right).max(10.0);
    let plot_h = (f64::from(h) - top - bottom).max(10.0);
    let max_ns = hist
        .buckets
        .iter()
        .map(|b| b.total_us * 1000.0)
        .fold(0.0, f64::max);
    let ticks = ticks::duration_ticks(max_ns, plot_h - 14.0, 28.0);
    let axis_top = ticks.last().map_or(1.0, |t| t.at).max(1.0);
    let y_of = |ns: f64| (top + plot_h - ns / axis_top * (plot_h - 14.0)) as i32;
    let font = |px: u32| ("sans-serif", px).into_font().color(&INK);
    root.draw(&Text::new("idle time", (4, 24), font(11)))
        .map_err(err)?;
    let x_title = "gap size";
    let tx = (left + (plot_w - text_width(x_title, 11.0)) / 2.0) as i32;
    root.draw(&Text::new(x_title, (tx, h as i32 - 16), font(11)))
        .map_err(err)?;
    draw_value_axis(root, &ticks, (left, plot_w), &y_of)?;
    if hist.buckets.iter().all(|b| b.count == 0) {
        let note = "no GPU-idle gaps in this trace";
        let nx = (left + (plot_w - text_width(note, 13.0)) / 2.0) as i32;
        root.draw(&Text::new(
            note,
            (nx, (top + plot_h / 2.0) as i32),
            font(13),
        ))
        .map_err(err)?;
    }
    let slot = plot_w / hist.buckets.len().max(1) as f64;
    for (i, b) in hist.buckets.iter().enumerate() {
        let x0 = left + slot * i as f64;
        let (bx0, bx1) = ((x0 + slot * 0.14) as i32, (x0 + slot * 0.86) as i32);
        let y = y_of(b.total_us * 1000.0);
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
mod tests;
