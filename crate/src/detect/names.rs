//! Name classification, done once per distinct string rather than once per event.
//!
//! Millions of kernels and API calls share a few hundred names, so every pattern (launch API,
//! NCCL, host prep, forward step) is evaluated over the string table and looked up by
//! [`NameId`] in the hot loops.

use std::sync::OnceLock;

use regex::Regex;

use super::config::{LaunchApis, NameMatch, Switches};
use crate::model::{NameId, Strings, flag};
use crate::sqlike::Like;

/// Host-prep NVTX name patterns, most specific first (reference `detect_host_overhead.py`).
pub const PREP_PATTERNS: [&str; 3] = ["_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs"];

/// A parsed `[Executor] _forward_step N: C ctx reqs, G gen reqs` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepName {
    pub step: u64,
    pub ctx: u64,
    pub gen_reqs: u64,
}

fn step_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
            .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    })
}

fn launch_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel|cuLaunchCooperativeKernel|cudaGraphLaunch|cuGraphLaunch)(_ptsz|_ptds)?(_v\d+)?$",
        )
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
    })
}

/// Parses a forward-step range name (regex *search*, as the reference's `re.search`).
pub fn parse_step(name: &str) -> Option<StepName> {
    if !name.contains("_forward_step") {
        return None;
    }
    let c = step_regex().captures(name)?;
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
    Some(StepName {
        step: num(1)?,
        ctx: num(2)?,
        gen_reqs: num(3)?,
    })
}

/// Whether an API name launches kernels under the profile's rules.
pub fn is_launch_api(name: &str, apis: LaunchApis) -> bool {
    match apis {
        LaunchApis::ExactCudaLaunchKernel => name == "cudaLaunchKernel",
        LaunchApis::AllVersioned => launch_regex().is_match(name),
    }
}

/// Per-name lookup tables for one profile.
pub struct NameTables {
    pub launch: Vec<bool>,
    pub nccl: Vec<bool>,
    /// For each prep pattern, which names match it.
    pub prep: [Vec<bool>; 3],
    /// Forward-step names, parsed.
    pub steps: Vec<Option<StepName>>,
}

impl NameTables {
    pub fn build(strings: &Strings, sw: &Switches) -> NameTables {
        let like = sw.name_match == NameMatch::SqliteLike;
        let launch = strings.classify(|s| is_launch_api(s, sw.launch_apis));
        let nccl = if like {
            let p = Like::new("%nccl%");
            strings.classify(|s| p.matches(s))
        } else {
            strings.classify(|s| s.to_ascii_lowercase().contains("nccl"))
        };
        let prep = PREP_PATTERNS.map(|pat| {
            if like {
                let p = Like::new(&format!("%{pat}%"));
                strings.classify(|s| p.matches(s))
            } else {
                strings.classify(|s| s.contains(pat))
            }
        });
        let prefilter = Like::new("%[Executor] _forward_step%");
        let steps = (0..strings.len() as NameId)
            .map(|id| {
                let s = strings.get(id);
                if like && !prefilter.matches(s) {
                    return None;
                }
                parse_step(s)
            })
            .collect();
        NameTables {
            launch,
            nccl,
            prep,
            steps,
        }
    }

    pub fn is_launch(&self, id: NameId) -> bool {
        flag(&self.launch, id)
    }

    pub fn is_nccl(&self, id: NameId) -> bool {
        flag(&self.nccl, id)
    }

    pub fn step(&self, id: NameId) -> Option<StepName> {
        self.steps.get(id as usize).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_apis_by_profile() {
        for name in [
            "cudaLaunchKernel",
            "cudaLaunchKernel_v7000",
            "cuLaunchKernelEx",
            "cudaGraphLaunch_v10000",
            "cudaLaunchKernel_ptsz_v7000",
        ] {
            assert!(is_launch_api(name, LaunchApis::AllVersioned), "{name}");
        }
        for name in [
            "cudaLaunchHostFunc_v10000",
            "cudaMemcpyAsync_v3020",
            "cudaLaunchKernelFoo",
        ] {
            assert!(!is_launch_api(name, LaunchApis::AllVersioned), "{name}");
        }
        assert!(is_launch_api(
            "cudaLaunchKernel",
            LaunchApis::ExactCudaLaunchKernel
        ));
        assert!(!is_launch_api(
            "cudaLaunchKernel_v7000",
            LaunchApis::ExactCudaLaunchKernel
        ));
    }

    #[test]
    fn parses_forward_steps_anywhere_in_the_name() {
        assert_eq!(
            parse_step("[Executor] _forward_step 12: 3 ctx reqs, 61 gen reqs"),
            Some(StepName {
                step: 12,
                ctx: 3,
                gen_reqs: 61
            })
        );
        assert_eq!(
            parse_step("x _forward_step  7:  0  ctx reqs,  8 gen reqs tail"),
            Some(StepName {
                step: 7,
                ctx: 0,
                gen_reqs: 8
            })
        );
        assert_eq!(parse_step("[Executor] _forward_step 12"), None);
    }
}
