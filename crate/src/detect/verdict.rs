//! The verdict rule (reference `apply_verdict`): strict comparisons on unrounded values,
//! YES when at least two applicable metrics cross.

use super::config::Thresholds;
use super::result::{CrossedDetails, Metrics};

/// Applicable metrics that must cross for a scope's verdict to be YES.
pub const MIN_CROSSED: u32 = 2;

/// The outcome of applying thresholds to one scope's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    pub verdict: &'static str,
    pub crossed_count: u32,
    pub applicable_count: u32,
    pub host_prep_confirmed: bool,
    pub nccl_caveat: bool,
    pub crossed: CrossedDetails,
}

/// Applies `t` to `m`. A `None` metric is not applicable and never crosses.
pub fn apply(m: &Metrics, t: &Thresholds) -> Outcome {
    let above = |v: Option<f64>, thr: f64| v.map(|v| v > thr);
    let below = |v: Option<f64>, thr: f64| v.map(|v| v < thr);
    let crossed = CrossedDetails {
        gpu_idle_ratio: above(m.gpu_idle_ratio, t.gpu_idle_ratio),
        launch_overhead_ratio: above(m.launch_overhead_ratio, t.launch_overhead_ratio),
        gpu_utilization: below(m.gpu_utilization, t.gpu_utilization),
        host_prep_exposed_ratio: above(m.host_prep_exposed_ratio, t.host_prep_exposed_ratio),
        host_prep_perf_impact: above(m.host_prep_perf_impact, t.host_prep_perf_impact),
        host_prep_idle_attribution: above(
            m.host_prep_idle_attribution,
            t.host_prep_idle_attribution,
        ),
    };
    let all = [
        crossed.gpu_idle_ratio,
        crossed.launch_overhead_ratio,
        crossed.gpu_utilization,
        crossed.host_prep_exposed_ratio,
        crossed.host_prep_perf_impact,
        crossed.host_prep_idle_attribution,
    ];
    let applicable_count = all.iter().flatten().count() as u32;
    let crossed_count = all.iter().flatten().filter(|&&c| c).count() as u32;
    Outcome {
        verdict: if crossed_count >= MIN_CROSSED {
            "YES"
        } else {
            "NO"
        },
        crossed_count,
        applicable_count,
        host_prep_confirmed: crossed.host_prep_perf_impact == Some(true)
            && crossed.host_prep_idle_attribution == Some(true),
        nccl_caveat: m.nccl_ratio.is_some_and(|v| v > t.nccl_ratio_caveat),
        crossed,
    }
}

/// Overall verdict: YES if any scope says YES (a phase elevates, never demotes).
pub fn overall<'a>(scopes: impl IntoIterator<Item = &'a str>) -> &'static str {
    if scopes.into_iter().any(|v| v == "YES") {
        "YES"
    } else {
        "NO"
    }
}

#[cfg(test)]
mod tests {
    //! The reference's worked examples (trtllm-skill-spec.md §12.1).
    use super::*;

    fn m(idle: f64, launch: f64, m3: Option<(f64, f64, f64)>, util: f64, nccl: f64) -> Metrics {
        Metrics {
            gpu_idle_ratio: Some(idle),
            launch_overhead_ratio: Some(launch),
            gpu_utilization: Some(util),
            nccl_ratio: Some(nccl),
            host_prep_exposed_ratio: m3.map(|x| x.0),
            host_prep_perf_impact: m3.map(|x| x.1),
            host_prep_idle_attribution: m3.map(|x| x.2),
        }
    }

    #[test]
    fn example_1_host_bound_aggregate() {
        let o = apply(
            &m(0.421, 0.120, Some((0.60, 0.150, 0.85)), 0.579, 0.0),
            &Thresholds::DEFAULT,
        );
        assert_eq!(
            (
                o.verdict,
                o.crossed_count,
                o.applicable_count,
                o.host_prep_confirmed
            ),
            ("YES", 6, 6, true)
        );
    }

    #[test]
    fn example_2_gpu_bound_aggregate() {
        let o = apply(
            &m(0.080, 0.020, Some((0.10, 0.005, 0.06)), 0.920, 0.0),
            &Thresholds::DEFAULT,
        );
        assert_eq!(
            (
                o.verdict,
                o.crossed_count,
                o.applicable_count,
                o.host_prep_confirmed
            ),
            ("NO", 0, 6, false)
        );
    }

    #[test]
    fn example_3_communication_dominated() {
        let o = apply(
            &m(0.350, 0.015, Some((0.40, 0.080, 0.23)), 0.650, 0.45),
            &Thresholds::DEFAULT,
        );
        assert_eq!(
            (
                o.verdict,
                o.crossed_count,
                o.host_prep_confirmed,
                o.nccl_caveat
            ),
            ("YES", 2, false, true)
        );
        assert_eq!(o.crossed.gpu_idle_ratio, Some(true));
        assert_eq!(o.crossed.host_prep_perf_impact, Some(true));
        assert_eq!(o.crossed.host_prep_exposed_ratio, Some(false));
    }

    #[test]
    fn example_4_context_only_bottleneck_elevates_overall() {
        let agg = apply(&m(0.25, 0.0, None, 0.75, 0.0), &Thresholds::DEFAULT);
        assert_eq!(
            (agg.verdict, agg.crossed_count, agg.applicable_count),
            ("NO", 0, 3)
        );
        let ctx = apply(
            &m(0.482, 0.085, Some((0.62, 0.22, 0.88)), 0.518, 0.0),
            &Thresholds::DEFAULT,
        );
        assert_eq!(
            (
                ctx.verdict,
                ctx.crossed_count,
                ctx.applicable_count,
                ctx.host_prep_confirmed
            ),
            ("YES", 5, 6, true)
        );
        let gen_ = apply(&m(0.051, 0.008, None, 0.949, 0.0), &Thresholds::GENERATION);
        assert_eq!(
            (gen_.verdict, gen_.crossed_count, gen_.applicable_count),
            ("NO", 0, 3)
        );
        assert_eq!(overall([agg.verdict, ctx.verdict, gen_.verdict]), "YES");
    }

    #[test]
    fn example_5_both_phases() {
        let ctx = apply(&m(0.45, 0.0, None, 0.55, 0.0), &Thresholds::DEFAULT);
        assert_eq!(
            (ctx.verdict, ctx.crossed_count, ctx.applicable_count),
            ("YES", 2, 3)
        );
        let gen_ = apply(&m(0.32, 0.15, None, 0.68, 0.0), &Thresholds::GENERATION);
        assert_eq!((gen_.verdict, gen_.crossed_count), ("YES", 3));
    }

    #[test]
    fn example_6_generation_only() {
        let ctx = apply(&m(0.15, 0.0, None, 0.85, 0.0), &Thresholds::DEFAULT);
        assert_eq!((ctx.verdict, ctx.crossed_count), ("NO", 0));
        let gen_ = apply(&m(0.22, 0.12, None, 0.78, 0.0), &Thresholds::GENERATION);
        assert_eq!((gen_.verdict, gen_.crossed_count), ("YES", 3));
        assert_eq!(overall(["NO", ctx.verdict, gen_.verdict]), "YES");
    }

    #[test]
    fn interplay_table_only_first_row_confirms() {
        let rows = [
            ((0.95, 0.20, 0.85), true),
            ((0.10, 0.01, 0.05), false),
            ((0.90, 0.02, 0.15), false),
            ((0.60, 0.08, 0.25), false),
        ];
        for (m3, confirmed) in rows {
            let o = apply(&m(0.0, 0.0, Some(m3), 1.0, 0.0), &Thresholds::DEFAULT);
            assert_eq!(o.host_prep_confirmed, confirmed, "{m3:?}");
        }
    }

    #[test]
    fn comparisons_are_strict() {
        let o = apply(
            &m(0.30, 0.10, Some((0.50, 0.05, 0.50)), 0.60, 0.20),
            &Thresholds::DEFAULT,
        );
        assert_eq!((o.crossed_count, o.nccl_caveat), (0, false));
    }
}
