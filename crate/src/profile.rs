//! The definition profiles (spec §2): `standard` and `trtllm-skill` are one implementation with
//! switches. Every layer that reads steps, windows or launch calls under a profile takes its
//! [`Switches`]; thresholds are detect's ([`crate::detect::config`]).

use serde::{Deserialize, Serialize};

use crate::names::launch::LaunchApis;
use crate::names::patterns::NameMatch;

/// Which definitions the metrics follow (spec §2).
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
                gpu_work: true,
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
                gpu_work: false,
            },
        }
    }
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
    /// Busy is every GPU operation (kernels, graph replays, copies, memsets: `docs/gpu-work.md`);
    /// else kernel rows only, as the reference scripts count.
    pub gpu_work: bool,
}

impl Switches {
    /// The GPU-work tables whose rows [`Switches::busy_rows`] gives.
    pub fn busy_tables(&self) -> &'static [crate::model::WorkTable] {
        match self.gpu_work {
            true => &crate::model::WorkTable::ALL,
            false => &[crate::model::WorkTable::Kernels],
        }
    }

    /// The rows whose union is GPU busy time under this profile, in start order.
    pub fn busy_rows<'a>(
        &self,
        rows: &'a dyn crate::model::rows::EventRows,
    ) -> crate::model::rows::Rows<'a, crate::model::rows::KernelRow> {
        match self.gpu_work {
            true => rows.gpu_work(),
            false => rows.kernels(),
        }
    }
}
