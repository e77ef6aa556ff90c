//! "Where the idle time went": one bar per device, its GPU-idle time split by measured cause
//! (the drill-down's attribution, `drill::idle`), each cause in its own colour, with a legend.
//! Bars are the same length (shares of each device's idle time); the text after a bar gives its
//! idle time, so a device idling little is not hidden by one idling much.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::DrawResult;
use super::stacked::{Stacked, StackedRow};
use crate::drill::idle::{CauseKind, IdleAttribution, PRECEDENCE};

#[cfg(test)]
const LABEL_PX: f64 = 150.0;
#[cfg(test)]
const TEXT_PX: f64 = 96.0;

/// The colour of a cause, fixed so that every chart and the page's list agree.
pub fn cause_colour(kind: CauseKind) -> RGBColor {
    match kind {
        CauseKind::Profiler => RGBColor(148, 163, 184),
        CauseKind::HostAhead => RGBColor(14, 165, 233),
        CauseKind::LazyLoad => RGBColor(167, 139, 250),
        CauseKind::CpuBusy => RGBColor(236, 72, 153),
        CauseKind::CpuWaiting => RGBColor(71, 85, 105),
        CauseKind::Sync => RGBColor(220, 38, 38),
        CauseKind::Launch => RGBColor(37, 99, 235),
        CauseKind::ModuleLoad => RGBColor(124, 58, 237),
        CauseKind::Jit => RGBColor(192, 38, 211),
        CauseKind::Alloc => RGBColor(234, 88, 12),
        CauseKind::Memop => RGBColor(202, 138, 4),
        CauseKind::Gc => RGBColor(22, 163, 74),
        CauseKind::Gil => RGBColor(13, 148, 136),
        CauseKind::Osrt => RGBColor(100, 116, 139),
        CauseKind::Comm => RGBColor(8, 145, 178),
        CauseKind::Api => RGBColor(120, 53, 15),
        CauseKind::Nvtx => RGBColor(245, 158, 11),
        CauseKind::Untraced => RGBColor(203, 213, 225),
    }
}

/// The causes present in `idle`, in precedence order (the legend's order).
fn present(idle: &IdleAttribution) -> Vec<CauseKind> {
    PRECEDENCE
        .into_iter()
        .filter(|k| {
            idle.per_device
                .iter()
                .any(|d| d.causes.iter().any(|c| c.kind == *k))
        })
        .collect()
}

/// A device's row label: the device, with its file when the drill-down read several.
fn device_label(idle: &IdleAttribution, i: usize) -> String {
    let d = &idle.per_device[i];
    let several = idle
        .per_device
        .iter()
        .any(|o| o.file != idle.per_device[0].file);
    match several {
        true => format!("{} · GPU {}", d.file, d.device),
        false => format!("GPU {}", d.device),
    }
}

/// The chart of `idle` as stacked bars: one per device, split at its causes' shares.
fn stacked(idle: &IdleAttribution) -> Stacked {
    let nothing = idle.per_device.iter().all(|d| d.idle_ns == 0);
    Stacked {
        title: "Where the GPU-idle time went, per device (share of its idle time)".into(),
        legend: present(idle)
            .into_iter()
            .map(|k| (cause_colour(k), k.name().to_string()))
            .collect(),
        rows: idle
            .per_device
            .iter()
            .enumerate()
            .map(|(i, d)| StackedRow {
                label: device_label(idle, i),
                segments: d
                    .causes
                    .iter()
                    .map(|c| (cause_colour(c.kind), c.share))
                    .collect(),
                text: format!("{:.2} ms idle", d.idle_ns as f64 / 1e6),
            })
            .collect(),
        empty: nothing.then(|| "no GPU-idle time in this window".to_string()),
        label_px: 150.0,
        text_px: 96.0,
    }
}

/// The height in pixels the chart of `idle` needs at `width`.
pub fn idle_causes_height(idle: &IdleAttribution, width: u32) -> u32 {
    stacked(idle).height(width)
}

/// Draws the chart filling `root`.
pub fn draw_idle_causes<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    idle: &IdleAttribution,
) -> DrawResult {
    stacked(idle).draw(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drill::idle::{DeviceIdle, IdleCause};

    fn cause(kind: CauseKind, ns: i64, share: f64) -> IdleCause {
        IdleCause {
            kind,
            label: String::new(),
            ns,
            share,
            labels: Vec::new(),
            gaps: Vec::new(),
            by_bucket: Vec::new(),
            frames: Vec::new(),
            samples: 0,
            meanwhile: None,
        }
    }

    fn two_devices() -> IdleAttribution {
        let device = |device, causes| DeviceIdle {
            device,
            idle_ns: 4_000_000,
            causes,
            file: "t.sqlite".into(),
            cpu_records: Default::default(),
        };
        IdleAttribution {
            per_device: vec![
                device(
                    0,
                    vec![
                        cause(CauseKind::Sync, 3_000_000, 0.75),
                        cause(CauseKind::Untraced, 1_000_000, 0.25),
                    ],
                ),
                device(1, vec![cause(CauseKind::Jit, 4_000_000, 1.0)]),
            ],
        }
    }

    fn svg(idle: &IdleAttribution, width: u32) -> String {
        let mut out = String::new();
        {
            let height = idle_causes_height(idle, width);
            let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
            draw_idle_causes(&root, idle).expect("draws");
            root.present().expect("present");
        }
        out
    }

    /// Each device's bar is split at its causes' shares, in each cause's colour, and the legend
    /// names the causes present in precedence order.
    #[test]
    fn bars_are_split_by_cause_share_in_the_cause_colours() {
        let out = svg(&two_devices(), 600);
        let plot_w = 600.0 - LABEL_PX - TEXT_PX - 8.0;
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let rect_widths = |c: RGBColor| -> Vec<f64> {
            out.lines()
                .filter(|l| l.contains("<rect") && l.contains(&fill(c)))
                .filter_map(|l| {
                    let w = l.split("width=\"").nth(1)?.split('"').next()?;
                    w.parse().ok()
                })
                .collect()
        };
        // Legend swatch (11) and the bar segment.
        let sync = rect_widths(cause_colour(CauseKind::Sync));
        assert!(
            sync.iter().any(|&w| (w - 0.75 * plot_w).abs() <= 1.0),
            "{sync:?}"
        );
        let jit = rect_widths(cause_colour(CauseKind::Jit));
        assert!(jit.iter().any(|&w| (w - plot_w).abs() <= 1.0), "{jit:?}");
        let legend: Vec<usize> = ["jit", "sync", "untraced"]
            .iter()
            .map(|n| out.find(&format!("\n{n}\n")).expect(n))
            .collect();
        assert!(legend.windows(2).all(|p| p[0] < p[1]), "{legend:?}");
        assert!(out.contains("4.00 ms idle"));
    }

    #[test]
    fn no_idle_time_says_so() {
        let idle = IdleAttribution::default();
        assert!(svg(&idle, 400).contains("no GPU-idle time in this window"));
    }
}
