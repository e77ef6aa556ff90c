//! Name classes of the drill-down and the explainer, evaluated once per distinct string.
//!
//! API calls are classified by their base name (version suffixes such as `_v3020` and the
//! per-thread-stream `_ptsz`/`_ptds` stripped); kernels by their short name into the functional
//! blocks of a decoder layer (reference §9.3) and whether they are collectives (§9.4).

use serde::Serialize;

use crate::model::{NameFlags, NameId, Trace};

/// What a CUDA runtime/driver API call does, as far as the analyses care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
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
}

impl ApiKind {
    pub fn launches_kernels(self) -> bool {
        matches!(self, ApiKind::Launch | ApiKind::GraphLaunch)
    }
}

/// Functional block of a kernel, from its short name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelCategory {
    Collective,
    Attention,
    Gemm,
    Norm,
    Sampling,
    Elementwise,
    Memory,
    Other,
}

impl KernelCategory {
    pub fn label(self) -> &'static str {
        match self {
            KernelCategory::Collective => "allreduce/collective",
            KernelCategory::Attention => "attention",
            KernelCategory::Gemm => "GEMM",
            KernelCategory::Norm => "norm",
            KernelCategory::Sampling => "sampling",
            KernelCategory::Elementwise => "elementwise",
            KernelCategory::Memory => "memory",
            KernelCategory::Other => "other",
        }
    }

    /// Work that CUDA graphs capture without trouble (reference §9.2): running it eagerly
    /// while graphs are in use is worth fixing; attention with dynamic metadata often is not.
    pub fn capturable(self) -> bool {
        matches!(
            self,
            KernelCategory::Gemm | KernelCategory::Norm | KernelCategory::Collective
        )
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
    if base.starts_with("cudaGraphLaunch") || base.starts_with("cuGraphLaunch") {
        return ApiKind::GraphLaunch;
    }
    if crate::detect::names::is_launch_api(name, crate::detect::config::LaunchApis::AllVersioned) {
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
    ApiKind::Other
}

/// Collective kernels: NCCL and fused allreduce/allgather kernels.
pub fn is_collective(short_name: &str) -> bool {
    let n = short_name.to_ascii_lowercase();
    const WORDS: [&str; 8] = [
        "nccl",
        "allreduce",
        "all_reduce",
        "allgather",
        "all_gather",
        "reducescatter",
        "reduce_scatter",
        "alltoall",
    ];
    WORDS.iter().any(|w| n.contains(w))
}

/// The functional block of a kernel short name. Order matters: the first rule that matches
/// wins (an `allreduce_fusion` kernel is a collective, not elementwise).
pub fn kernel_category(short_name: &str) -> KernelCategory {
    if is_collective(short_name) {
        return KernelCategory::Collective;
    }
    let n = short_name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    if has(&[
        "flash",
        "attention",
        "attn",
        "fmha",
        "mha",
        "xqa",
        "mla",
        "rope",
        "rotary",
        "kvcache",
        "kv_cache",
    ]) {
        KernelCategory::Attention
    } else if has(&[
        "gemm", "gemv", "matmul", "cublas", "nvjet", "xmma", "splitk", "cutlass",
    ]) {
        KernelCategory::Gemm
    } else if has(&["norm"]) {
        KernelCategory::Norm
    } else if has(&["sample", "sampling", "argmax", "topk", "top_k", "softmax"]) {
        KernelCategory::Sampling
    } else if has(&[
        "memcpy", "memset", "copy", "fill", "cat_", "gather", "scatter", "index",
    ]) {
        KernelCategory::Memory
    } else if has(&[
        "elementwise",
        "silu",
        "gelu",
        "relu",
        "act_and_mul",
        "triton_poi",
        "triton_red",
        "add",
        "mul",
        "divide",
        "subtract",
        "sqrt",
        "_exp",
        "tanh",
        "sigmoid",
        "reduce",
    ]) {
        KernelCategory::Elementwise
    } else {
        KernelCategory::Other
    }
}

/// Per-name lookup tables for one trace's string table.
pub struct Names {
    pub api: Vec<ApiKind>,
    pub category: Vec<KernelCategory>,
    pub collective: NameFlags,
}

impl Names {
    /// Classifies the names kernels and API calls use (NVTX names, often one per step, are
    /// many and need no class).
    pub fn build(trace: &Trace) -> Names {
        let strings = &trace.strings;
        let used = |ids: &[NameId]| {
            let mut seen = vec![false; strings.len()];
            for &id in ids {
                if let Some(s) = seen.get_mut(id as usize) {
                    *s = true;
                }
            }
            seen
        };
        let kernel_names = used(&trace.kernels.short_name);
        let api_names = used(&trace.runtime.name);
        let api = (0..strings.len())
            .map(|i| match api_names[i] {
                true => api_kind(strings.get(i as NameId)),
                false => ApiKind::Other,
            })
            .collect();
        let category = (0..strings.len())
            .map(|i| match kernel_names[i] {
                true => kernel_category(strings.get(i as NameId)),
                false => KernelCategory::Other,
            })
            .collect();
        let collective = (0..strings.len())
            .map(|i| kernel_names[i] && is_collective(strings.get(i as NameId)))
            .collect();
        Names {
            api,
            category,
            collective,
        }
    }

    pub fn api(&self, id: NameId) -> ApiKind {
        self.api.get(id as usize).copied().unwrap_or(ApiKind::Other)
    }

    pub fn category(&self, id: NameId) -> KernelCategory {
        self.category
            .get(id as usize)
            .copied()
            .unwrap_or(KernelCategory::Other)
    }

    pub fn is_collective(&self, id: NameId) -> bool {
        crate::model::flag(&self.collective, id)
    }
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
    }

    #[test]
    fn kernel_categories() {
        use KernelCategory::*;
        for (name, want) in [
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Collective),
            ("allreduce_fusion_kernel", Collective),
            ("flash_fwd_kernel", Attention),
            ("applyBiasRopeUpdateKVCache", Attention),
            (
                "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
                Gemm,
            ),
            ("rms_norm_kernel", Norm),
            ("silu_and_mul_kernel", Elementwise),
            ("vectorized_elementwise_kernel", Elementwise),
            ("fast_greedy_sample_kernel", Sampling),
            ("cupy_true_divide__float64_float64_float64", Elementwise),
            ("power_iteration", Other),
        ] {
            assert_eq!(kernel_category(name), want, "{name}");
        }
    }
}
