//! Kernel name classes: the functional blocks of a decoder layer (reference §9.3) and whether a
//! kernel is a collective (§9.4), from its short name; with the other kinds of GPU work (graph
//! replays, copies, memsets), the classes the timeline colours GPU work by and Root cause rolls
//! GPU time up by (`docs/kernel-classes.md`).

use serde::{Deserialize, Serialize};

/// Class of a row of GPU work: a kernel's functional block, from its short name
/// ([`kernel_category`]); a graph replay, copy or memset by its kind
/// (`model::Work::class`, the one rule the timeline and the roll-up share).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelCategory {
    Collective,
    Attention,
    Gemm,
    Norm,
    Sampling,
    Elementwise,
    Reduction,
    Memory,
    Copy,
    Memset,
    Replay,
    Other,
}

impl KernelCategory {
    /// Every class, in the order tables, bars and legends list them.
    pub const ALL: [KernelCategory; 12] = [
        KernelCategory::Gemm,
        KernelCategory::Attention,
        KernelCategory::Collective,
        KernelCategory::Norm,
        KernelCategory::Elementwise,
        KernelCategory::Reduction,
        KernelCategory::Sampling,
        KernelCategory::Memory,
        KernelCategory::Copy,
        KernelCategory::Memset,
        KernelCategory::Replay,
        KernelCategory::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            KernelCategory::Collective => "allreduce/collective",
            KernelCategory::Attention => "attention",
            KernelCategory::Gemm => "GEMM",
            KernelCategory::Norm => "norm",
            KernelCategory::Sampling => "sampling",
            KernelCategory::Elementwise => "elementwise",
            KernelCategory::Reduction => "reduction",
            KernelCategory::Memory => "memory",
            KernelCategory::Copy => "copy",
            KernelCategory::Memset => "memset",
            KernelCategory::Replay => "graph replay",
            KernelCategory::Other => "other",
        }
    }

    /// The class's key: its JSON name and the timeline's class of a name
    /// (`TimelineView::classes`, which the drawing colours by).
    pub fn key(self) -> &'static str {
        match self {
            KernelCategory::Collective => "collective",
            KernelCategory::Attention => "attention",
            KernelCategory::Gemm => "gemm",
            KernelCategory::Norm => "norm",
            KernelCategory::Sampling => "sampling",
            KernelCategory::Elementwise => "elementwise",
            KernelCategory::Reduction => "reduction",
            KernelCategory::Memory => "memory",
            KernelCategory::Copy => "copy",
            KernelCategory::Memset => "memset",
            KernelCategory::Replay => "replay",
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
    } else if has(&["reduce", "reduction", "triton_red", "triton_per_"]) {
        KernelCategory::Reduction
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
        "add",
        "mul",
        "divide",
        "subtract",
        "sqrt",
        "_exp",
        "tanh",
        "sigmoid",
    ]) {
        KernelCategory::Elementwise
    } else {
        KernelCategory::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("reduce_kernel", Reduction),
            (
                "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
                Reduction,
            ),
            ("cub::DeviceReduceSingleTileKernel", Reduction),
            ("reduce_scatter_kernel", Collective),
        ] {
            assert_eq!(kernel_category(name), want, "{name}");
        }
    }
}
