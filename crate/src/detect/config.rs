//! Detection settings: the thresholds per scope, resolved under a profile's switches.

use serde::{Deserialize, Serialize};

use crate::model::Ns;
use crate::profile::{Profile, Switches};

/// Thresholds of one scope (aggregate, context or generation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Thresholds {
    pub gpu_idle_ratio: f64,
    pub launch_overhead_ratio: f64,
    pub host_prep_exposed_ratio: f64,
    pub host_prep_perf_impact: f64,
    pub host_prep_idle_attribution: f64,
    pub gpu_utilization: f64,
    pub nccl_ratio_caveat: f64,
}

impl Thresholds {
    /// The reference `DEFAULTS` (aggregate and context).
    pub const DEFAULT: Thresholds = Thresholds {
        gpu_idle_ratio: 0.30,
        launch_overhead_ratio: 0.10,
        host_prep_exposed_ratio: 0.50,
        host_prep_perf_impact: 0.05,
        host_prep_idle_attribution: 0.50,
        gpu_utilization: 0.60,
        nccl_ratio_caveat: 0.20,
    };

    /// The reference defaults with `GEN_OVERRIDES` applied (generation phase).
    pub const GENERATION: Thresholds = Thresholds {
        gpu_idle_ratio: 0.15,
        gpu_utilization: 0.80,
        ..Thresholds::DEFAULT
    };
}

/// User overrides of thresholds; `None` keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ThresholdOverrides {
    pub gpu_idle_ratio: Option<f64>,
    pub launch_overhead_ratio: Option<f64>,
    pub gpu_utilization: Option<f64>,
    pub host_prep_exposed_ratio: Option<f64>,
    pub host_prep_perf_impact: Option<f64>,
    pub host_prep_idle_attribution: Option<f64>,
    pub nccl_ratio_caveat: Option<f64>,
    /// Generation-phase M1/M4 (standard profile only).
    pub generation_gpu_idle_ratio: Option<f64>,
    pub generation_gpu_utilization: Option<f64>,
}

/// Thresholds for the three scopes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScopeThresholds {
    pub aggregate: Thresholds,
    pub context: Thresholds,
    pub generation: Thresholds,
}

impl ThresholdOverrides {
    /// Resolves overrides per scope under a profile's rules.
    ///
    /// `trtllm-skill`: only M1, M2, M4 are overridable and generation always uses 0.15/0.80
    /// (`GEN_OVERRIDES` applied after the CLI values). `standard`: every threshold is
    /// overridable, and the generation M1/M4 have their own overrides (defaults 0.15/0.80).
    pub fn resolve(&self, switches: &Switches) -> ScopeThresholds {
        let mut base = Thresholds::DEFAULT;
        set(&mut base.gpu_idle_ratio, self.gpu_idle_ratio);
        set(&mut base.launch_overhead_ratio, self.launch_overhead_ratio);
        set(&mut base.gpu_utilization, self.gpu_utilization);
        if !switches.generation_ignores_cli {
            set(
                &mut base.host_prep_exposed_ratio,
                self.host_prep_exposed_ratio,
            );
            set(&mut base.host_prep_perf_impact, self.host_prep_perf_impact);
            set(
                &mut base.host_prep_idle_attribution,
                self.host_prep_idle_attribution,
            );
            set(&mut base.nccl_ratio_caveat, self.nccl_ratio_caveat);
        }
        let mut generation = Thresholds {
            gpu_idle_ratio: Thresholds::GENERATION.gpu_idle_ratio,
            gpu_utilization: Thresholds::GENERATION.gpu_utilization,
            ..base
        };
        if !switches.generation_ignores_cli {
            set(
                &mut generation.gpu_idle_ratio,
                self.generation_gpu_idle_ratio,
            );
            set(
                &mut generation.gpu_utilization,
                self.generation_gpu_utilization,
            );
        }
        ScopeThresholds {
            aggregate: base,
            context: base,
            generation,
        }
    }
}

fn set(slot: &mut f64, value: Option<f64>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// Everything `detect` needs besides the trace.
#[derive(Debug, Clone, Default)]
pub struct DetectConfig {
    pub profile: Profile,
    pub thresholds: ThresholdOverrides,
    /// `--no-m3`: skip host-prep metrics entirely.
    pub skip_m3: bool,
    /// A user-chosen aggregate window `[start, end)` in ns (overrides first-kernel..last-kernel).
    pub window: Option<(Ns, Ns)>,
    /// The file's name as shown in the report.
    pub file_label: String,
    /// The user's step marker (standard profile); `None`: the first built-in marker the trace
    /// shows ([`crate::steps::names::StepParser`]).
    pub step_marker: Option<crate::names::steps::StepSource>,
}

impl DetectConfig {
    /// The user's aggregate window, when it holds time.
    pub fn user_window(&self) -> Option<(Ns, Ns)> {
        self.window.filter(|(start, end)| start < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trtllm_generation_ignores_cli_idle_and_util_but_not_launch() {
        let o = ThresholdOverrides {
            gpu_idle_ratio: Some(0.9),
            gpu_utilization: Some(0.1),
            launch_overhead_ratio: Some(0.2),
            generation_gpu_idle_ratio: Some(0.5),
            host_prep_perf_impact: Some(0.4),
            ..ThresholdOverrides::default()
        };
        let t = o.resolve(&Profile::TrtllmSkill.switches());
        assert_eq!(
            (t.aggregate.gpu_idle_ratio, t.context.gpu_utilization),
            (0.9, 0.1)
        );
        assert_eq!(
            (t.generation.gpu_idle_ratio, t.generation.gpu_utilization),
            (0.15, 0.80)
        );
        assert_eq!(t.generation.launch_overhead_ratio, 0.2);
        assert_eq!(t.aggregate.host_prep_perf_impact, 0.05);
    }

    #[test]
    fn standard_thresholds_are_configurable_per_phase() {
        let o = ThresholdOverrides {
            gpu_idle_ratio: Some(0.9),
            generation_gpu_idle_ratio: Some(0.5),
            host_prep_perf_impact: Some(0.4),
            ..ThresholdOverrides::default()
        };
        let t = o.resolve(&Profile::Standard.switches());
        assert_eq!(
            (
                t.aggregate.gpu_idle_ratio,
                t.generation.gpu_idle_ratio,
                t.generation.gpu_utilization
            ),
            (0.9, 0.5, 0.80)
        );
        assert_eq!(t.context.host_prep_perf_impact, 0.4);
        assert_eq!(t.generation.host_prep_perf_impact, 0.4);
    }
}
