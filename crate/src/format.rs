//! How numbers read for people, written once: durations, percentages and counts as the text,
//! Markdown and HTML reports, the findings and the page (through `web`) show them.
//!
//! A duration takes the unit that fits its magnitude (`850 ns`, `12.3 µs`, `155.87 ms`,
//! `2.104 s`), or one unit for a whole table column, named once in the header. The number and
//! its unit are joined by a no-break space so a line never breaks between them; no other
//! character (no CSS transform either) touches the unit, so `µ` stays the micro sign.

/// The space between a number and its unit: no-break, so the pair never wraps apart.
pub const UNIT_SPACE: char = '\u{a0}';

/// What a missing or non-finite value shows.
pub const MISSING: &str = "—";

/// A unit of time for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    /// The unit's symbol (`µ` is U+00B5, the micro sign).
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }

    /// The unit named by its symbol (`us` is accepted for `µs`).
    pub fn from_symbol(s: &str) -> Option<TimeUnit> {
        match s {
            "ns" => Some(TimeUnit::Ns),
            "µs" | "μs" | "us" => Some(TimeUnit::Us),
            "ms" => Some(TimeUnit::Ms),
            "s" => Some(TimeUnit::S),
            _ => None,
        }
    }

    fn us_per_unit(self) -> f64 {
        match self {
            TimeUnit::Ns => 1e-3,
            TimeUnit::Us => 1.0,
            TimeUnit::Ms => 1e3,
            TimeUnit::S => 1e6,
        }
    }

    /// Decimals shown in this unit: ns are whole, then one more per step up (4–6 significant
    /// digits between 1 and 1000 of a unit, enough to tell two steps apart).
    fn decimals(self) -> usize {
        match self {
            TimeUnit::Ns => 0,
            TimeUnit::Us => 1,
            TimeUnit::Ms => 2,
            TimeUnit::S => 3,
        }
    }

    fn next(self) -> Option<TimeUnit> {
        match self {
            TimeUnit::Ns => Some(TimeUnit::Us),
            TimeUnit::Us => Some(TimeUnit::Ms),
            TimeUnit::Ms => Some(TimeUnit::S),
            TimeUnit::S => None,
        }
    }

    /// The unit a magnitude (µs) reads in: the largest in which it is at least 1 once rounded
    /// (so 999.96 µs reads `1.00 ms`, not `1000.0 µs`); zero reads in µs.
    pub fn fitting(us: f64) -> TimeUnit {
        let a = us.abs();
        if !a.is_finite() || a == 0.0 {
            return TimeUnit::Us;
        }
        let mut unit = TimeUnit::Ns;
        while let Some(up) = unit.next() {
            if round_to(a / unit.us_per_unit(), unit.decimals()) < 1000.0 {
                break;
            }
            unit = up;
        }
        unit
    }

    /// The unit of a table column: the one its largest magnitude reads in, so no value of the
    /// column reaches 1000 of it (seconds excepted).
    pub fn for_column(values: impl IntoIterator<Item = f64>) -> TimeUnit {
        let max = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0_f64, |m, v| m.max(v.abs()));
        TimeUnit::fitting(max)
    }

    /// The one unit a column of durations (µs) reads in, stated in its header: the unit of its
    /// largest value, when every other nonzero value is at least 1 of it too. `None` when the
    /// values span units (2 µs beside 155 ms would read `0.00`): each then takes its own unit.
    pub fn shared(values: impl IntoIterator<Item = f64>) -> Option<TimeUnit> {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        if values.is_empty() {
            return None; // no value: no unit to state
        }
        let unit = TimeUnit::for_column(values.iter().copied());
        values
            .iter()
            .all(|&v| v == 0.0 || TimeUnit::fitting(v) >= unit)
            .then_some(unit)
    }

    /// `us` in this unit, the number only (the unit is in the column's header).
    pub fn number(self, us: f64) -> String {
        if !us.is_finite() {
            return MISSING.into();
        }
        if us == 0.0 {
            return "0".into(); // nothing, in any unit: no decimals to suggest a rounding
        }
        fixed(us / self.us_per_unit(), self.decimals())
    }

    /// `us` in this unit with the unit's symbol.
    pub fn with_symbol(self, us: f64) -> String {
        if !us.is_finite() {
            return MISSING.into();
        }
        format!("{}{UNIT_SPACE}{}", self.number(us), self.symbol())
    }
}

fn round_to(v: f64, decimals: usize) -> f64 {
    let p = 10f64.powi(decimals as i32);
    (v * p).round() / p
}

/// `v` with `decimals` decimals, `-0` shown as `0`.
fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// A duration given in µs, in the unit that fits it: `12.3 µs`, `155.87 ms`.
pub fn duration_us(us: f64) -> String {
    TimeUnit::fitting(us).with_symbol(us)
}

/// A duration given in integer ns (the trace's own unit).
pub fn duration_ns(ns: i64) -> String {
    duration_us(ns as f64 / 1000.0)
}

/// A change of duration with its sign: `+1.20 ms`, `-350.0 µs`; no sign when it rounds to 0.
pub fn signed_duration_us(us: f64) -> String {
    signed(duration_us(us.abs()), us)
}

fn signed(magnitude: String, v: f64) -> String {
    if !v.is_finite() {
        MISSING.into()
    } else if v > 0.0 && magnitude.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("+{magnitude}")
    } else if v < 0.0 && magnitude.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// A share (0–1) as a percentage with one decimal: `12.3%`; a share too small to show one
/// decimal but not zero reads `<0.1%`, never `0.0%`.
pub fn percent(share: f64) -> String {
    percent_digits(share, 1)
}

/// A share as a percentage with `digits` decimals.
pub fn percent_digits(share: f64, digits: usize) -> String {
    if !share.is_finite() {
        return MISSING.into();
    }
    let p = share * 100.0;
    let smallest = 10f64.powi(-(digits as i32));
    if p != 0.0 && p.abs() < smallest / 2.0 {
        let sign = if p < 0.0 { ">-" } else { "<" };
        return format!("{sign}{}%", fixed(smallest, digits));
    }
    format!("{}%", fixed(p, digits))
}

/// A change given in percent (35.5 = +35.5%) with its sign.
pub fn signed_percent(pct: f64) -> String {
    signed(percent(pct.abs() / 100.0), pct)
}

/// A count and its noun, singular for one: `1 device`, `2 devices`, `1,024 kernels`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A mean count (kernels per step…) with `decimals` decimals and thousands separators.
pub fn mean(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return MISSING.into();
    }
    let s = fixed(v.abs(), decimals);
    let (whole, frac) = s.split_once('.').map_or((s.as_str(), ""), |(w, f)| (w, f));
    let whole = whole.parse::<u64>().map_or(whole.to_string(), count);
    let sign = if v < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        "-"
    } else {
        ""
    };
    if frac.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{frac}")
    }
}

/// A byte count in the binary unit that fits it: `512 B`, `1.5 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n}{UNIT_SPACE}B")
    } else {
        format!("{v:.1}{UNIT_SPACE}{}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: String) -> String {
        s.replace(UNIT_SPACE, " ")
    }

    #[test]
    fn a_duration_takes_the_unit_that_fits_its_magnitude() {
        assert_eq!(plain(duration_us(0.85)), "850 ns");
        assert_eq!(plain(duration_us(12.34)), "12.3 µs");
        assert_eq!(plain(duration_us(155_872.0)), "155.87 ms");
        assert_eq!(plain(duration_us(2_104_000.0)), "2.104 s");
        assert_eq!(plain(duration_us(0.0)), "0 µs");
        assert_eq!(plain(duration_ns(1_500)), "1.5 µs");
    }

    #[test]
    fn a_count_and_its_noun_are_singular_only_for_one() {
        assert_eq!(counted(1, "device", "devices"), "1 device");
        assert_eq!(counted(2, "device", "devices"), "2 devices");
        assert_eq!(counted(0, "device", "devices"), "0 devices");
        assert_eq!(counted(1234, "process", "processes"), "1,234 processes");
    }

    #[test]
    fn a_duration_that_rounds_up_to_1000_moves_to_the_next_unit() {
        assert_eq!(plain(duration_us(999.96)), "1.00 ms");
        assert_eq!(plain(duration_us(0.9996)), "1.0 µs");
        assert_eq!(plain(duration_us(999_996.0)), "1.000 s");
        assert_eq!(plain(duration_us(999.94)), "999.9 µs");
    }

    #[test]
    fn number_and_unit_are_joined_by_a_no_break_space_and_mu_is_the_micro_sign() {
        let s = duration_us(12.0);
        assert_eq!(s, "12.0\u{a0}µs");
        assert!(s.contains('\u{b5}'), "micro sign U+00B5");
        assert!(!s.contains('\u{39c}'), "never the Greek capital Mu");
    }

    #[test]
    fn a_column_takes_the_unit_of_its_largest_value() {
        let col = [3.0, 155_872.0, 12.5];
        let u = TimeUnit::for_column(col);
        assert_eq!(u, TimeUnit::Ms);
        let cells: Vec<String> = col.iter().map(|&v| u.number(v)).collect();
        assert_eq!(cells, ["0.00", "155.87", "0.01"]);
        assert_eq!(TimeUnit::for_column([0.2, 0.4]), TimeUnit::Ns);
        assert_eq!(TimeUnit::for_column([f64::NAN]), TimeUnit::Us);
        assert_eq!(TimeUnit::for_column([-2_000.0, 5.0]), TimeUnit::Ms);
    }

    #[test]
    fn a_column_shares_a_unit_only_when_no_value_would_read_below_1() {
        assert_eq!(
            TimeUnit::shared([1_500.0, 155_872.0, 0.0]),
            Some(TimeUnit::Ms)
        );
        assert_eq!(TimeUnit::shared([2.2, 155_872.0]), None);
        assert_eq!(TimeUnit::shared([2.2, 9.3, 152.9]), Some(TimeUnit::Us));
        assert_eq!(TimeUnit::shared([]), None);
        assert_eq!(TimeUnit::shared([f64::NAN]), None);
    }

    #[test]
    fn negative_and_missing_durations() {
        assert_eq!(plain(duration_us(-3.26)), "-3.3 µs");
        assert_eq!(duration_us(f64::NAN), "—");
        assert_eq!(plain(signed_duration_us(-350.0)), "-350.0 µs");
        assert_eq!(plain(signed_duration_us(1_200.0)), "+1.20 ms");
        assert_eq!(plain(signed_duration_us(0.0)), "0 µs");
        assert_eq!(TimeUnit::Ms.number(-0.001), "0.00");
    }

    #[test]
    fn percentages_never_show_a_nonzero_share_as_zero() {
        assert_eq!(percent(0.1234), "12.3%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(0.0004), "<0.1%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent_digits(0.5, 0), "50%");
        assert_eq!(percent(f64::INFINITY), "—");
        assert_eq!(signed_percent(35.5), "+35.5%");
        assert_eq!(signed_percent(-4.0), "-4.0%");
    }

    #[test]
    fn counts_and_means_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(mean(1234.567, 1), "1,234.6");
        assert_eq!(mean(-0.04, 1), "0.0");
        assert_eq!(mean(-12.0, 0), "-12");
    }

    #[test]
    fn bytes_take_a_binary_unit() {
        assert_eq!(plain(bytes(512)), "512 B");
        assert_eq!(plain(bytes(1536)), "1.5 KiB");
        assert_eq!(plain(bytes(3 << 30)), "3.0 GiB");
    }
}
