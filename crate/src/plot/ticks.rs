//! Round axis ticks, one generator for every axis the core draws (the timeline's time ruler, the
//! gap histogram's duration axis): steps of 1, 2 or 5 × 10ⁿ, labels in the unit that fits the
//! largest value shown (ns, µs, ms, s: switching at 1 µs, 1 ms and 1 s), with as many decimals
//! as the step needs and no more, spaced so that no two labels overlap.

use crate::model::Ns;

/// A tick: where it is (on a time axis ns from the view's start, which an `f64` holds exactly
/// where an absolute timestamp of ~2^60 ns would not; the axis' value otherwise) and what it
/// reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

/// A duration unit and its size in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    pub name: &'static str,
    pub ns: f64,
}

const UNITS: [Unit; 4] = [
    Unit {
        name: "ns",
        ns: 1.0,
    },
    Unit {
        name: "µs",
        ns: 1e3,
    },
    Unit {
        name: "ms",
        ns: 1e6,
    },
    Unit { name: "s", ns: 1e9 },
];

/// The unit a duration axis reaching `largest_ns` reads in: the largest unit not above it
/// (ns below 1 µs, µs below 1 ms, ms below 1 s, s from 1 s on).
pub fn unit_for(largest_ns: f64) -> Unit {
    let largest = largest_ns.abs();
    UNITS
        .iter()
        .rev()
        .find(|u| largest >= u.ns)
        .copied()
        .unwrap_or(UNITS[0])
}

/// The smallest round step (1, 2 or 5 × 10ⁿ) not below `at_least` (> 0).
pub fn round_step(at_least: f64) -> f64 {
    if !(at_least.is_finite() && at_least > 0.0) {
        return 1.0;
    }
    let mut power = 10f64.powi(at_least.log10().floor() as i32);
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * power;
            // A relative tolerance: 10^n computed in floating point may sit just below a value
            // that is itself a round step.
            if step >= at_least * (1.0 - 1e-9) {
                return step;
            }
        }
        power *= 10.0;
    }
}

/// The next round step after `step`.
fn next_step(step: f64) -> f64 {
    round_step(step * 1.000_001)
}

/// Decimals needed to write multiples of `step` (in `unit`) exactly.
fn decimals(step: f64, unit: Unit) -> usize {
    let s = step / unit.ns;
    if s >= 1.0 {
        return 0;
    }
    (-s.log10()).ceil().clamp(0.0, 9.0) as usize
}

/// A duration `ns` written in `unit` with `decimals` decimals, e.g. `1.25 ms`.
pub fn label(ns: f64, unit: Unit, decimals: usize) -> String {
    let v = ns / unit.ns;
    // "-0.0" reads as a negative value.
    let v = if v.abs() < 0.5 * 10f64.powi(-(decimals as i32)) {
        0.0
    } else {
        v
    };
    format!("{v:.decimals$} {}", unit.name)
}

/// Approximate width in px of `text` at `font_px` (the drawing code places text from the same
/// estimate: plotters' exact measurement needs the DOM).
pub fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.56
}

/// Blank space between two labels, px.
const LABEL_GAP_PX: f64 = 12.0;

/// A time axis: the unit its labels read in, its round step (ns) and its ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeAxis {
    pub unit: Unit,
    pub step: f64,
    pub ticks: Vec<Tick>,
}

/// Ticks of a time axis showing `[start, end)` ns over `width_px`, labelled as offsets from
/// `origin` (the trace's start, as every time on the page): round steps of the offset, the unit
/// from the largest offset shown, and a step wide enough that labels (`font_px` high, placed
/// from their tick to the right) never overlap. Only ticks inside the range are returned.
pub fn time_ticks(start: Ns, end: Ns, origin: Ns, width_px: f64, font_px: f64) -> Vec<Tick> {
    time_axis(start, end, origin, width_px, font_px).ticks
}

/// [`time_ticks`] with the axis' unit and step.
pub fn time_axis(start: Ns, end: Ns, origin: Ns, width_px: f64, font_px: f64) -> TimeAxis {
    let span = (end - start).max(1) as f64;
    let (a, b) = ((start - origin) as f64, (end - origin) as f64);
    let unit = unit_for(a.abs().max(b.abs()).max(span));
    let px_per_ns = width_px.max(1.0) / span;
    // Start from a step that puts at most one tick every 40 px, then widen until labels fit.
    let mut step = round_step(span * 40.0 / width_px.max(1.0));
    loop {
        let d = decimals(step, unit);
        let ticks = multiples(a, b, step)
            .map(|v| Tick {
                at: v - a,
                label: label(v, unit, d),
            })
            .collect::<Vec<_>>();
        let widest = ticks
            .iter()
            .map(|t| text_width(&t.label, font_px))
            .fold(0.0, f64::max);
        if step * px_per_ns >= widest + LABEL_GAP_PX || step >= span {
            return TimeAxis { unit, step, ticks };
        }
        step = next_step(step);
    }
}

/// The line above the timeline saying what it shows: the view's edges as offsets from the
/// trace's start in the ruler's unit (one decimal finer than its ticks, so two views between
/// the same ticks read apart, and no coarser than the trace's length), its span, the trace's length and the zoom factor, e.g.
/// `160.05 ms – 162.05 ms of 1.20 s · span 2.00 ms · ×600`.
pub fn range_label(
    (start, end): (Ns, Ns),
    (origin, trace_end): (Ns, Ns),
    width_px: f64,
    font_px: f64,
) -> String {
    use crate::format;
    let axis = time_axis(start, end, origin, width_px, font_px);
    // At least the decimals the formatter gives the trace's length in this unit, so the end of
    // the whole trace reads as its length does.
    let least = match axis.unit.name {
        "ns" => 0,
        "s" => 3,
        _ => 2,
    };
    let d = (decimals(axis.step, axis.unit) + 1).clamp(least, 9);
    let edge = |t: Ns| label((t - origin) as f64, axis.unit, d);
    let span = (end - start).max(1);
    let whole = (trace_end - origin).max(1);
    let zoom = whole as f64 / span as f64;
    let zoom = if zoom > 1.001 {
        let factor = if zoom < 10.0 {
            format!("{zoom:.1}")
        } else {
            format::count(zoom.round() as u64)
        };
        format!(" · ×{factor}")
    } else {
        String::new()
    };
    format!(
        "{} – {} of {} · span {}{zoom}",
        edge(start),
        edge(end),
        format::duration_ns(whole),
        format::duration_ns(span)
    )
}

/// Ticks of a duration value axis from 0 to at least `max_ns`, over `height_px`: round steps
/// at least `min_gap_px` apart, the unit from the top tick, the top tick at or above `max_ns`
/// (so the tallest bar stays under the axis' top). An empty axis (`max_ns` ≤ 0) reads 0 to 1 µs.
pub fn duration_ticks(max_ns: f64, height_px: f64, min_gap_px: f64) -> Vec<Tick> {
    let max = if max_ns.is_finite() && max_ns > 0.0 {
        max_ns
    } else {
        1e3
    };
    let slots = (height_px / min_gap_px.max(1.0)).floor().clamp(1.0, 10.0);
    let step = round_step(max / slots);
    let top = (max / step).ceil() * step;
    let unit = unit_for(top);
    let d = decimals(step, unit);
    multiples(0.0, top * (1.0 + 1e-9), step)
        .map(|v| Tick {
            at: v,
            label: label(v, unit, d),
        })
        .collect()
}

/// Multiples of `step` in `[a, b]`.
fn multiples(a: f64, b: f64, step: f64) -> impl Iterator<Item = f64> {
    let first = (a / step).ceil() as i64;
    let last = (b / step).floor() as i64;
    (first..=last.max(first - 1)).map(move |k| k as f64 * step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_steps_are_one_two_five_times_a_power_of_ten() {
        assert_eq!(round_step(0.7), 1.0);
        assert_eq!(round_step(1.0), 1.0);
        assert_eq!(round_step(1.3), 2.0);
        assert_eq!(round_step(2.1), 5.0);
        assert_eq!(round_step(6.0), 10.0);
        assert_eq!(round_step(180.0), 200.0);
        assert_eq!(round_step(0.03), 0.05);
        assert_eq!(round_step(4.2e6), 5e6);
    }

    #[test]
    fn units_switch_at_one_microsecond_millisecond_and_second() {
        assert_eq!(unit_for(999.0).name, "ns");
        assert_eq!(unit_for(1_000.0).name, "µs");
        assert_eq!(unit_for(999_999.0).name, "µs");
        assert_eq!(unit_for(1e6).name, "ms");
        assert_eq!(unit_for(999_999_999.0).name, "ms");
        assert_eq!(unit_for(1e9).name, "s");
        assert_eq!(unit_for(3_600e9).name, "s");
    }

    fn steps(ticks: &[Tick]) -> Vec<f64> {
        ticks.windows(2).map(|w| w[1].at - w[0].at).collect()
    }

    /// Every gap between ticks equal and round; labels `px` apart at least their width.
    fn assert_round_and_apart(ticks: &[Tick], span_ns: f64, width_px: f64) {
        assert!(ticks.len() >= 2, "{ticks:?}");
        let s = steps(ticks);
        let step = s[0];
        assert!(
            s.iter().all(|x| (x - step).abs() < step * 1e-6),
            "{ticks:?}"
        );
        assert_eq!(round_step(step), step, "a round step: {step}");
        let px = step / span_ns * width_px;
        for t in ticks {
            assert!(
                text_width(&t.label, 11.0) + LABEL_GAP_PX <= px,
                "{t:?} in {px} px"
            );
        }
    }

    #[test]
    fn a_two_millisecond_view_reads_in_milliseconds_from_the_trace_start() {
        // The view [160 ms, 162 ms) of a trace starting at 5 s (absolute ns).
        let origin = 5_000_000_000;
        let ticks = time_ticks(
            origin + 160_000_000,
            origin + 162_000_000,
            origin,
            1200.0,
            11.0,
        );
        assert_round_and_apart(&ticks, 2e6, 1200.0);
        assert_eq!(ticks[0].label, "160.0 ms");
        assert_eq!(ticks[0].at, 0.0);
        assert!(ticks.iter().any(|t| t.label == "161.0 ms"), "{ticks:?}");
        assert!(ticks.iter().all(|t| t.label.ends_with(" ms")));
    }

    #[test]
    fn past_one_second_labels_are_seconds() {
        let ticks = time_ticks(0, 2_500_000_000, 0, 1200.0, 11.0);
        assert_round_and_apart(&ticks, 2.5e9, 1200.0);
        assert!(ticks.iter().all(|t| t.label.ends_with(" s")), "{ticks:?}");
        assert_eq!(ticks[0].label, "0.0 s");
        assert!(ticks.iter().any(|t| t.label == "2.0 s"), "{ticks:?}");
    }

    #[test]
    fn a_microsecond_view_and_a_nanosecond_one() {
        let ticks = time_ticks(0, 800_000, 0, 1200.0, 11.0);
        assert!(ticks.iter().all(|t| t.label.ends_with(" µs")), "{ticks:?}");
        assert_round_and_apart(&ticks, 8e5, 1200.0);
        let ticks = time_ticks(0, 900, 0, 1200.0, 11.0);
        assert!(ticks.iter().all(|t| t.label.ends_with(" ns")), "{ticks:?}");
        assert_eq!(ticks[1].label, "50 ns");
        assert_round_and_apart(&ticks, 900.0, 1200.0);
    }

    #[test]
    fn the_range_label_reads_in_the_ruler_unit_one_decimal_finer() {
        let origin = 5_000_000_000;
        let view = (origin + 160_050_000, origin + 162_050_000);
        let axis = time_axis(view.0, view.1, origin, 1200.0, 11.0);
        assert_eq!((axis.unit.name, axis.step), ("ms", 200_000.0));
        let label = range_label(view, (origin, origin + 1_200_000_000), 1200.0, 11.0);
        assert_eq!(
            label,
            "160.05 ms – 162.05 ms of 1.200\u{a0}s · span 2.00\u{a0}ms · ×600"
        );
        // The whole trace: no zoom factor, the edges in the ruler's seconds.
        let whole = range_label((0, 2_500_000_000), (0, 2_500_000_000), 1200.0, 11.0);
        assert_eq!(
            whole,
            "0.000 s – 2.500 s of 2.500\u{a0}s · span 2.500\u{a0}s"
        );
    }

    #[test]
    fn labels_never_collide_from_wide_to_narrow_canvases() {
        let origin = 1_700_000_000_000_000_000;
        for width in [300.0, 420.0, 640.0, 1024.0, 1290.0, 2560.0] {
            for (a, b) in [
                (0, 2_000),
                (12_345, 14_345),
                (1_999_000, 2_001_000),
                (160_081_000, 162_081_000),
                (999_999_000, 1_000_001_000),
                (0, 1_994_746_000),
                (3_210_000_000, 3_210_000_700),
                (0, 86_400_000_000_000),
            ] {
                let ticks = time_ticks(origin + a, origin + b, origin, width, 11.0);
                assert_round_and_apart(&ticks, (b - a) as f64, width);
                assert!(ticks.iter().all(|t| t.at >= 0.0 && t.at <= (b - a) as f64));
            }
        }
    }

    #[test]
    fn duration_axis_of_microsecond_gaps_reads_in_microseconds() {
        // The tallest bar 37.4 µs: steps of 10 µs up to 40 µs, no "0.0" under visible bars.
        let ticks = duration_ticks(37_400.0, 200.0, 40.0);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0 µs", "10 µs", "20 µs", "30 µs", "40 µs"]);
        let ticks = duration_ticks(1_870_700_000.0, 200.0, 40.0);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.0 s", "0.5 s", "1.0 s", "1.5 s", "2.0 s"]);
        let ticks = duration_ticks(0.0, 200.0, 40.0);
        assert_eq!(ticks.last().map(|t| t.at), Some(1e3));
    }
}
