//! Python-compatible number handling for the `trtllm-skill` profile: `round(x, n)` and
//! naive left-to-right float summation, so the JSON carries the reference's exact values.

/// Python's `round(x, ndigits)`: correctly rounded on the exact binary value, ties to even.
///
/// Rust's `{:.N}` formatting rounds the exact binary expansion half-to-even, which is what
/// CPython's `round` does (via its correctly rounded dtoa); parsing back gives the same double.
pub fn round(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let s = format!("{x:.ndigits$}");
    s.parse().unwrap_or(x)
}

/// `sum()` as Python ≤ 3.11 computes it over floats: naive left-to-right accumulation.
pub fn naive_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |acc, v| acc + v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_round() {
        // Values checked against CPython 3.11: round(x, 4).
        assert_eq!(round(0.00005, 4), 0.0001);
        assert_eq!(round(0.00015, 4), 0.0001);
        assert_eq!(round(0.12345, 4), 0.1235);
        assert_eq!(round(2.675, 2), 2.67);
        assert_eq!(round(0.5, 0), 0.0);
        assert_eq!(round(1.5, 0), 2.0);
        assert_eq!(round(-0.00004, 4).to_bits(), (-0.0f64).to_bits());
        assert_eq!(round(0.97499999, 4), 0.975);
    }

    #[test]
    fn naive_sum_is_left_to_right() {
        let v = [1e16, 1.0, -1e16];
        assert_eq!(naive_sum(v), 0.0);
    }
}
