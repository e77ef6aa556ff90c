//! Thresholds and the verdict rule (reference §3.5), shared by both profiles' oracles.

use serde_json::{Value, json};

/// The seven metric values of one scope; `None` is "not applicable" (JSON `null`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Metrics {
    pub gpu_idle_ratio: Option<f64>,
    pub launch_overhead_ratio: Option<f64>,
    pub gpu_utilization: Option<f64>,
    pub nccl_ratio: Option<f64>,
    pub host_prep_exposed_ratio: Option<f64>,
    pub host_prep_perf_impact: Option<f64>,
    pub host_prep_idle_attribution: Option<f64>,
}

/// Thresholds of one scope.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub idle: f64,
    pub launch: f64,
    pub exposed: f64,
    pub perf: f64,
    pub attr: f64,
    pub util: f64,
}

/// Aggregate and context thresholds (reference `DEFAULTS`).
pub const DEFAULT: Thresholds = Thresholds {
    idle: 0.30,
    launch: 0.10,
    exposed: 0.50,
    perf: 0.05,
    attr: 0.50,
    util: 0.60,
};
/// Generation thresholds (`GEN_OVERRIDES`: idle 0.15, utilization 0.80).
pub const GENERATION: Thresholds = Thresholds {
    idle: 0.15,
    util: 0.80,
    ..DEFAULT
};
/// `nccl_caveat` when the NCCL ratio exceeds this.
pub const NCCL_CAVEAT: f64 = 0.20;

/// The outcome of the verdict rule on one scope.
#[derive(Debug, Clone, Copy)]
pub struct Verdict {
    pub crossed: u32,
    pub applicable: u32,
    pub confirmed: bool,
    pub yes: bool,
}

/// Strict comparisons on unrounded values; ≥ 2 crossed → YES; confirmed = M3b ∧ M3c.
pub fn judge(m: &Metrics, t: &Thresholds) -> Verdict {
    let above = |v: Option<f64>, th: f64| v.map(|x| x > th);
    let checks = [
        above(m.gpu_idle_ratio, t.idle),
        above(m.launch_overhead_ratio, t.launch),
        m.gpu_utilization.map(|x| x < t.util),
        above(m.host_prep_exposed_ratio, t.exposed),
        above(m.host_prep_perf_impact, t.perf),
        above(m.host_prep_idle_attribution, t.attr),
    ];
    let applicable = checks.iter().flatten().count() as u32;
    let crossed = checks.iter().flatten().filter(|&&c| c).count() as u32;
    let confirmed = checks[4] == Some(true) && checks[5] == Some(true);
    Verdict {
        crossed,
        applicable,
        confirmed,
        yes: crossed >= 2,
    }
}

pub fn yes_no(yes: bool) -> &'static str {
    if yes { "YES" } else { "NO" }
}

/// The `METRICS` object; `round` applies Python's `round(x, 4)` (trtllm-skill profile).
pub fn metrics_json(m: &Metrics, round: bool) -> Value {
    let f = |v: Option<f64>| v.map(|x| if round { crate::pyfmt::round(x, 4) } else { x });
    json!({
        "gpu_idle_ratio": f(m.gpu_idle_ratio),
        "launch_overhead_ratio": f(m.launch_overhead_ratio),
        "gpu_utilization": f(m.gpu_utilization),
        "nccl_ratio": f(m.nccl_ratio),
        "host_prep_exposed_ratio": f(m.host_prep_exposed_ratio),
        "host_prep_perf_impact": f(m.host_prep_perf_impact),
        "host_prep_idle_attribution": f(m.host_prep_idle_attribution),
    })
}

/// A phase entry: `iteration_count`, verdict fields and metrics.
pub fn phase_json(iterations: usize, m: &Metrics, t: &Thresholds, round: bool) -> (Value, bool) {
    let v = judge(m, t);
    let value = json!({
        "iteration_count": iterations,
        "verdict": yes_no(v.yes),
        "crossed_count": v.crossed,
        "applicable_count": v.applicable,
        "host_prep_confirmed": v.confirmed,
        "metrics": metrics_json(m, round),
    });
    (value, v.yes)
}
