//! Main-thread exports of [`crate::format`]: the page shows durations, percentages and counts
//! through these, so they read exactly as the reports write them and the rules live once.

use wasm_bindgen::prelude::*;

use super::{WebError, init};
use crate::format::{self, TimeUnit};

/// A duration (µs) in the unit that fits it: `12.3 µs`, `155.87 ms`; `—` when not finite.
#[wasm_bindgen(js_name = formatDuration)]
pub fn format_duration(us: f64) -> Result<String, WebError> {
    init();
    Ok(format::duration_us(us))
}

/// A change of duration (µs) with its sign: `+1.20 ms`.
#[wasm_bindgen(js_name = formatSignedDuration)]
pub fn format_signed_duration(us: f64) -> Result<String, WebError> {
    init();
    Ok(format::signed_duration_us(us))
}

/// The unit a column of durations (µs) shares, named once in its header (`ms`), or `""` when
/// its values span units and each cell takes its own ([`TimeUnit::shared`]).
#[wasm_bindgen(js_name = durationColumnUnit)]
pub fn duration_column_unit(values: Vec<f64>) -> Result<String, WebError> {
    init();
    Ok(TimeUnit::shared(values).map_or(String::new(), |u| u.symbol().to_string()))
}

/// A duration (µs) as a number in `unit` (a symbol from [`duration_column_unit`]), without the
/// unit; in the unit that fits it, with the unit, when `unit` is not one.
#[wasm_bindgen(js_name = formatDurationIn)]
pub fn format_duration_in(us: f64, unit: &str) -> Result<String, WebError> {
    init();
    Ok(TimeUnit::from_symbol(unit).map_or_else(|| format::duration_us(us), |u| u.number(us)))
}

/// A share (0–1) as a percentage with `digits` decimals: `12.3%`, `<0.1%` for a tiny share.
#[wasm_bindgen(js_name = formatPercent)]
pub fn format_percent(share: f64, digits: u32) -> Result<String, WebError> {
    init();
    Ok(format::percent_digits(share, digits.min(6) as usize))
}

/// A change given in percent (35.5) with its sign: `+35.5%`.
#[wasm_bindgen(js_name = formatSignedPercent)]
pub fn format_signed_percent(pct: f64) -> Result<String, WebError> {
    init();
    Ok(format::signed_percent(pct))
}

/// A count with thousands separators (`1,234,567`); a fractional value keeps `decimals`.
#[wasm_bindgen(js_name = formatCount)]
pub fn format_count(v: f64, decimals: u32) -> Result<String, WebError> {
    init();
    Ok(format::mean(v, decimals.min(6) as usize))
}

/// A count and its noun, singular for one (`1 device`, `2 devices`), thousands separated.
#[wasm_bindgen(js_name = formatCounted)]
pub fn format_counted(n: f64, one: &str, many: &str) -> Result<String, WebError> {
    init();
    let n = if n.is_finite() && n > 0.0 {
        n.round() as u64
    } else {
        0
    };
    Ok(format::counted(n, one, many))
}
