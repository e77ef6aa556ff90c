//! Kernel and API names as they appear in real TensorRT-LLM captures.
//!
//! Kernels carry a short and a demangled name (both `StringIds` references) and launch
//! geometry, so a synthetic file looks like a real one to any tool, not only to nsys-lens.

/// One kind of kernel: its names and a plausible launch geometry.
#[derive(Debug, Clone, Copy)]
pub struct KernelKind {
    pub short: &'static str,
    pub demangled: &'static str,
    pub registers: u32,
    pub grid_x: u32,
    pub block_x: u32,
}

const fn kind(
    short: &'static str,
    demangled: &'static str,
    registers: u32,
    grid_x: u32,
    block_x: u32,
) -> KernelKind {
    KernelKind {
        short,
        demangled,
        registers,
        grid_x,
        block_x,
    }
}

pub const GEMM: KernelKind = kind(
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    232,
    264,
    256,
);
pub const FLASH: KernelKind = kind(
    "flash_fwd_kernel",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false>(Flash_fwd_params)",
    255,
    132,
    128,
);
pub const RMS_NORM: KernelKind = kind(
    "rms_norm_kernel",
    "void tensorrt_llm::kernels::rms_norm_kernel<__nv_bfloat16, float>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, float, int)",
    32,
    64,
    1024,
);
pub const ROPE: KernelKind = kind(
    "applyBiasRopeUpdateKVCache",
    "void tensorrt_llm::kernels::applyBiasRopeUpdateKVCache<__nv_bfloat16, __nv_bfloat16, 128, false, true>(tensorrt_llm::kernels::QKVPreprocessingParams<__nv_bfloat16, __nv_bfloat16>)",
    64,
    128,
    256,
);
pub const SILU: KernelKind = kind(
    "silu_and_mul_kernel",
    "void tensorrt_llm::kernels::silu_and_mul_kernel<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, int)",
    24,
    256,
    256,
);
pub const NCCL_ALLREDUCE: KernelKind = kind(
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    96,
    2,
    640,
);
pub const ALLREDUCE_FUSION: KernelKind = kind(
    "allreduce_fusion_kernel",
    "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel<__nv_bfloat16, 2, true>(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams)",
    72,
    132,
    512,
);
pub const ELEMENTWISE: KernelKind = kind(
    "vectorized_elementwise_kernel",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)",
    16,
    8,
    128,
);
pub const SAMPLER: KernelKind = kind(
    "fast_greedy_sample_kernel",
    "void tensorrt_llm::kernels::fast_greedy_sample_kernel<__nv_bfloat16>(const __nv_bfloat16*, int*, int, int)",
    40,
    64,
    256,
);

pub const REDUCE: KernelKind = kind(
    "reduce_kernel",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
    32,
    108,
    512,
);
pub const CAT_COPY: KernelKind = kind(
    "CatArrayBatchedCopy",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 3, 128, 1>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
    30,
    96,
    512,
);
pub const POWER_ITERATION: KernelKind = kind(
    "power_iteration_kernel",
    "void power_iteration_kernel(float const*, float*, int)",
    20,
    32,
    256,
);

/// The class the generator places each of its kernel kinds as (written here, apart from the
/// analyzer's name rule, so the answers sum what was placed): `None` for a name it never
/// places.
pub fn placed_class(short: &str) -> Option<&'static str> {
    Some(match short {
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn" => "gemm",
        "flash_fwd_kernel" | "applyBiasRopeUpdateKVCache" => "attention",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" | "allreduce_fusion_kernel" => "collective",
        "rms_norm_kernel" => "norm",
        "silu_and_mul_kernel" | "vectorized_elementwise_kernel" => "elementwise",
        "reduce_kernel" => "reduction",
        "fast_greedy_sample_kernel" => "sampling",
        "CatArrayBatchedCopy" => "memory",
        "power_iteration_kernel" => "other",
        _ => return None,
    })
}

/// The per-layer kernel sequence of a decoder block (without the collective).
pub const LAYER: [KernelKind; 6] = [RMS_NORM, GEMM, ROPE, FLASH, GEMM, SILU];

/// The exact launch name the reference profile counts for M2.
pub const LAUNCH_EXACT: &str = "cudaLaunchKernel";
/// A versioned launch name (counted by `standard`, invisible to the reference's `=` match).
pub const LAUNCH_VERSIONED: &str = "cudaLaunchKernel_v7000";
pub const GRAPH_LAUNCH: &str = "cudaGraphLaunch_v10000";
pub const MEMCPY_ASYNC: &str = "cudaMemcpyAsync_v3020";
pub const MEMSET_ASYNC: &str = "cudaMemsetAsync_v3020";
pub const STREAM_SYNC: &str = "cudaStreamSynchronize_v3020";
pub const EVENT_RECORD: &str = "cudaEventRecord_v3020";
