//! Detection settings: the definition profile, its switches, and the thresholds per scope.

use serde::{Deserialize, Serialize};

use crate::model::Ns;

/// Which definitions the metrics follow (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The reference rules, measured correctly on multi-rank exports.
    #[default]
    Standard,
    /// The reference scripts' numbers exactly (`detect_host_overhead.py`).
    TrtllmSkill,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Standard => "standard",
            Profile::TrtllmSkill => "trtllm-skill",
        }
    }

    pub fn parse(s: &str) -> Option<Profile> {
        match s {
            "standard" => Some(Profile::Standard),
            "trtllm-skill" | "trtllm_skill" => Some(Profile::TrtllmSkill),
            _ => None,
        }
    }

    /// The switches that make up this profile: one implementation, two parameter sets.
    pub fn switches(self) -> Switches {
        match self {
            Profile::Standard => Switches {
                per_device: true,
                clip_to_window: true,
                launch_apis: LaunchApis::AllVersioned,
                launch_union_per_process: true,
                nvtx_text_fallback: true,
                nvtx_range_types_only: true,
                name_match: NameMatch::Substring,
                prep_per_process: true,
                dedup_steps: true,
                phase_window: PhaseWindow::UnionOfSteps,
                round_4dp: false,
                generation_ignores_cli: false,
            },
            Profile::TrtllmSkill => Switches {
                per_device: false,
                clip_to_window: false,
                launch_apis: LaunchApis::ExactCudaLaunchKernel,
                launch_union_per_process: false,
                nvtx_text_fallback: false,
                nvtx_range_types_only: false,
                name_match: NameMatch::SqliteLike,
                prep_per_process: false,
                dedup_steps: false,
                phase_window: PhaseWindow::Span,
                round_4dp: true,
                generation_ignores_cli: true,
            },
        }
    }
}

/// Which runtime API calls count as kernel launches (M2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaunchApis {
    /// `cudaLaunchKernel*`, `cuLaunchKernel*`, `cudaLaunchCooperativeKernel*`, `cu[da]GraphLaunch*`, any `_vNNNN`.
    AllVersioned,
    /// Only the exact string `cudaLaunchKernel` (the reference's `=` comparison).
    ExactCudaLaunchKernel,
}

/// How NVTX names are matched against the NCCL, host-prep and forward-step patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NameMatch {
    /// Case-sensitive substring (NCCL: case-insensitive).
    Substring,
    /// SQLite `LIKE` with `%`/`_` wildcards, ASCII case folding.
    SqliteLike,
}

/// The window a phase's metrics are measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PhaseWindow {
    /// The union of the phase's (de-duplicated) step intervals.
    UnionOfSteps,
    /// `[first step start, last step end]`, including the other phase's steps in between.
    Span,
}

/// The knobs that distinguish the profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    /// Busy/idle per device, then mean; else all devices pooled into one union.
    pub per_device: bool,
    /// Clip intervals to the window; else select by start-in-window and count whole intervals.
    pub clip_to_window: bool,
    pub launch_apis: LaunchApis,
    /// M2 as the union of a process's launch calls (mean over processes); else a plain sum.
    pub launch_union_per_process: bool,
    /// NVTX name from `text` when non-NULL, else `textId`; else `textId` only.
    pub nvtx_text_fallback: bool,
    /// Only NVTX push/pop and start/end ranges (types 59, 60, 70, 71); else any row with an end.
    pub nvtx_range_types_only: bool,
    pub name_match: NameMatch,
    /// M3 per process (prep ∩ idle of its devices); else pooled over all ranges, interior gaps.
    pub prep_per_process: bool,
    /// Merge TP-duplicated forward steps (same number, starts within 100 µs).
    pub dedup_steps: bool,
    pub phase_window: PhaseWindow,
    /// Round reference keys to 4 decimals like Python's `round`.
    pub round_4dp: bool,
    /// Generation uses 0.15/0.80 for M1/M4 whatever the CLI says (the reference's behaviour).
    pub generation_ignores_cli: bool,
}

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
    /// Another framework's step marker instead of TRT-LLM's `_forward_step` (standard profile).
    pub step_marker: Option<super::names::StepMarker>,
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
