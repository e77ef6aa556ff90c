//! Which CUDA runtime and driver API calls launch kernels (spec §1): the rule M2 counts and
//! every join of a kernel to its launch reads.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// The prefix of the CUDA graph launch APIs (`cudaGraphLaunch`, `cudaGraphLaunch_v10000`, …).
pub const GRAPH_LAUNCH: &str = "cudaGraphLaunch";

/// Which runtime API calls count as kernel launches (M2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaunchApis {
    /// `cudaLaunchKernel*`, `cuLaunchKernel*`, `cudaLaunchCooperativeKernel*`, `cu[da]GraphLaunch*`, any `_vNNNN`.
    AllVersioned,
    /// Only the exact string `cudaLaunchKernel` (the reference's `=` comparison).
    ExactCudaLaunchKernel,
}

/// Whether an API name launches kernels under the profile's rules.
pub fn is_launch_api(name: &str, apis: LaunchApis) -> bool {
    match apis {
        LaunchApis::ExactCudaLaunchKernel => name == "cudaLaunchKernel",
        // Every launch API starts with `cu`: most names skip the regex.
        LaunchApis::AllVersioned => name.starts_with("cu") && launch_regex().is_match(name),
    }
}

/// Whether an API name starts `cudaGraphLaunch` or `cuGraphLaunch`: `api_kind`'s graph
/// launches (whose base name starts so, as the name then does: the suffixes stripped all begin
/// with `_`), and the prefix [`is_graph_launch`] asks first.
pub fn launches_graph(name: &str) -> bool {
    name.starts_with(GRAPH_LAUNCH) || name.starts_with("cuGraphLaunch")
}

/// Whether an API name launches a CUDA graph (`cudaGraphLaunch*`, `cuGraphLaunch*`, a launch API
/// under [`LaunchApis::AllVersioned`]).
pub fn is_graph_launch(name: &str) -> bool {
    launches_graph(name) && is_launch_api(name, LaunchApis::AllVersioned)
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
        assert!(is_graph_launch("cudaGraphLaunch_v10000"));
        assert!(is_graph_launch("cuGraphLaunch_ptsz"));
        assert!(!is_graph_launch("cudaGraphLaunchFoo"));
        assert!(!is_graph_launch("cudaLaunchKernel_v7000"));
    }
}
