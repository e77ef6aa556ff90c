//! Units of the drill-down's and explainer's display fields.

use crate::model::Ns;

/// ns → µs for display fields.
pub fn us(ns: Ns) -> f64 {
    ns as f64 / 1000.0
}

/// `num / den`, 0 when the denominator is not positive.
pub fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 { num / den } else { 0.0 }
}
