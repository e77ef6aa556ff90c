//! What a CUDA runtime or driver API call does, by its base name: version suffixes such as
//! `_v3020` and the per-thread-stream `_ptsz`/`_ptds` stripped.

use super::launch::{LaunchApis, is_launch_api, launches_graph};

/// What a CUDA runtime/driver API call does, as far as the analyses care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiKind {
    #[default]
    Other,
    /// `cudaLaunchKernel*`, `cuLaunchKernel*`, cooperative launches.
    Launch,
    /// `cudaGraphLaunch*`, `cuGraphLaunch*`.
    GraphLaunch,
    /// Host-blocking synchronization (`cudaEventQuery`, `cudaStreamWaitEvent` are not).
    BlockingSync,
    Memcpy {
        is_async: bool,
    },
    Memset {
        is_async: bool,
    },
    /// Runtime object creation: events and streams (a `> 5 ms` gap cause, reference §9.1).
    ObjectCreate,
    /// Device or pinned memory allocation and release.
    Alloc,
    /// Loading or unloading device code: `cuModuleLoad*`, `cuLibraryLoad*`, their unloads, and
    /// the lookups that load a module on first use under lazy loading (`cuModuleGetFunction`,
    /// `cuLibraryGetKernel`, `cuLibraryGetModule`, `cudaGetFuncBySymbol`).
    ModuleLoad,
    /// Run-time compilation and linking: NVRTC (`nvrtc*`), the driver's linker (`cuLink*`),
    /// nvJitLink and the PTX compiler library.
    Jit,
}

impl ApiKind {
    pub fn launches_kernels(self) -> bool {
        matches!(self, ApiKind::Launch | ApiKind::GraphLaunch)
    }
}

/// `cudaStreamGetCaptureInfo_v2_v11030` → `cudaStreamGetCaptureInfo`.
pub fn api_base_name(name: &str) -> &str {
    let mut s = name;
    loop {
        let stripped = strip_version(s)
            .or_else(|| s.strip_suffix("_ptsz"))
            .or_else(|| s.strip_suffix("_ptds"));
        match stripped {
            Some(t) if !t.is_empty() => s = t,
            _ => return s,
        }
    }
}

fn strip_version(s: &str) -> Option<&str> {
    let (head, tail) = s.rsplit_once("_v")?;
    (!tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit())).then_some(head)
}

const BLOCKING_SYNCS: [&str; 7] = [
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaThreadSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
];

/// Classifies one API name.
pub fn api_kind(name: &str) -> ApiKind {
    let base = api_base_name(name);
    if launches_graph(base) {
        return ApiKind::GraphLaunch;
    }
    if is_launch_api(name, LaunchApis::AllVersioned) {
        return ApiKind::Launch;
    }
    if BLOCKING_SYNCS.contains(&base) {
        return ApiKind::BlockingSync;
    }
    let is_async = base.contains("Async");
    if base.starts_with("cudaMemcpy") || base.starts_with("cuMemcpy") {
        return ApiKind::Memcpy { is_async };
    }
    if base.starts_with("cudaMemset") || base.starts_with("cuMemset") {
        return ApiKind::Memset { is_async };
    }
    const CREATE: [&str; 4] = [
        "cudaEventCreate",
        "cuEventCreate",
        "cudaStreamCreate",
        "cuStreamCreate",
    ];
    if CREATE.iter().any(|p| base.starts_with(p)) {
        return ApiKind::ObjectCreate;
    }
    const ALLOC: [&str; 8] = [
        "cudaMalloc",
        "cudaFree",
        "cudaHostAlloc",
        "cuMemAlloc",
        "cuMemFree",
        "cuMemCreate",
        "cuMemHostAlloc",
        "cudaMallocHost",
    ];
    if ALLOC.iter().any(|p| base.starts_with(p)) {
        return ApiKind::Alloc;
    }
    const MODULE_LOAD: [&str; 8] = [
        "cuModuleLoad",
        "cuModuleUnload",
        "cuLibraryLoad",
        "cuLibraryUnload",
        "cuModuleGetFunction",
        "cuLibraryGetKernel",
        "cuLibraryGetModule",
        "cudaGetFuncBySymbol",
    ];
    if MODULE_LOAD.iter().any(|p| base.starts_with(p)) {
        return ApiKind::ModuleLoad;
    }
    const JIT: [&str; 4] = ["nvrtc", "cuLink", "nvJitLink", "nvPTXCompiler"];
    if JIT.iter().any(|p| base.starts_with(p)) {
        return ApiKind::Jit;
    }
    ApiKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_versions_and_stream_suffixes() {
        assert_eq!(
            api_base_name("cudaStreamGetCaptureInfo_v2_v11030"),
            "cudaStreamGetCaptureInfo"
        );
        assert_eq!(api_base_name("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
        assert_eq!(
            api_base_name("cudaLaunchKernel_ptsz_v7000"),
            "cudaLaunchKernel"
        );
        assert_eq!(api_base_name("cuCtxSynchronize"), "cuCtxSynchronize");
        assert_eq!(api_base_name("_v12"), "_v12");
    }

    #[test]
    fn a_graph_launch_is_told_by_its_name_as_by_its_kind() {
        for name in [
            "cudaGraphLaunch",
            "cudaGraphLaunch_v10000",
            "cudaGraphLaunch_ptsz_v10000",
            "cuGraphLaunch",
            "cuGraphLaunch_ptsz",
            "cudaGraphLaunchExtra_v2",
            "cudaGraphInstantiate_v10000",
            "cudaLaunchKernel_v7000",
            "cudaGraph_v2",
            "_v12",
            "",
        ] {
            let kind = api_kind(name) == ApiKind::GraphLaunch;
            assert_eq!(launches_graph(name), kind, "{name}");
        }
        assert!(launches_graph("cuGraphLaunch_ptsz"));
        assert!(!launches_graph("cudaGraphInstantiate_v10000"));
    }

    #[test]
    fn api_kinds() {
        assert_eq!(api_kind("cudaGraphLaunch_v10000"), ApiKind::GraphLaunch);
        assert_eq!(api_kind("cuLaunchKernelEx"), ApiKind::Launch);
        assert_eq!(
            api_kind("cudaStreamSynchronize_v3020"),
            ApiKind::BlockingSync
        );
        assert_eq!(api_kind("cuCtxSynchronize"), ApiKind::BlockingSync);
        assert_eq!(api_kind("cudaEventQuery_v3020"), ApiKind::Other);
        assert_eq!(api_kind("cudaStreamWaitEvent_v3020"), ApiKind::Other);
        assert_eq!(
            api_kind("cudaMemcpyAsync_v3020"),
            ApiKind::Memcpy { is_async: true }
        );
        assert_eq!(
            api_kind("cuMemcpyDtoH_v2"),
            ApiKind::Memcpy { is_async: false }
        );
        assert_eq!(
            api_kind("cuMemsetD32_v2"),
            ApiKind::Memset { is_async: false }
        );
        assert_eq!(
            api_kind("cudaEventCreateWithFlags_v3020"),
            ApiKind::ObjectCreate
        );
        assert_eq!(api_kind("cudaMalloc_v3020"), ApiKind::Alloc);
        for name in [
            "cuLibraryLoadData",
            "cuModuleLoadDataEx",
            "cuModuleUnload",
            "cudaGetFuncBySymbol_v11000",
            "cuLibraryGetKernel",
        ] {
            assert_eq!(api_kind(name), ApiKind::ModuleLoad, "{name}");
        }
        assert_eq!(api_kind("cuModuleGetLoadingMode"), ApiKind::Other);
        for name in ["nvrtcCompileProgram", "cuLinkComplete", "nvJitLinkCreate"] {
            assert_eq!(api_kind(name), ApiKind::Jit, "{name}");
        }
    }
}
