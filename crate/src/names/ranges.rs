//! What an NVTX range's name says the host was doing: a Python garbage collection, waiting for
//! or holding the GIL, compiling code, a collective, or other named work; and the label a range
//! is reported under (its name without per-instance numbers).

/// The class of an NVTX range, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeClass {
    /// A Python garbage collection: `Python GC` (TensorRT-LLM's `TLLM_PROFILE_RECORD_GC=1`).
    Gc,
    /// `Waiting for GIL` (nsys `-t python-gil`, the `GIL Trace` domain).
    GilWait,
    /// `Holding GIL` (the same tracer): the thread ran Python, nothing more specific.
    GilHeld,
    /// Run-time compilation or autotuning: a name with `compile` (not `compiled`: a
    /// `Torch-Compiled Region` runs compiled code), `nvrtc`, `jit` or `autotun`.
    Jit,
    /// A collective or its wait: NCCL's own ranges (`ncclAllReduce`, `ncclGroupStart` …),
    /// PyTorch's `c10d::` and `record_param_comms`, or an all-reduce, all-gather,
    /// reduce-scatter, all-to-all or barrier by name.
    Comm,
    /// Any other named range.
    Other,
}

/// Classifies one NVTX range name (ASCII case-insensitive).
pub fn range_class(name: &str) -> RangeClass {
    let lower = name.to_ascii_lowercase();
    if lower.contains("python gc") {
        return RangeClass::Gc;
    }
    if lower.contains("waiting for gil") {
        return RangeClass::GilWait;
    }
    if lower.contains("holding gil") {
        return RangeClass::GilHeld;
    }
    if is_jit(&lower) {
        return RangeClass::Jit;
    }
    const COMM: [&str; 12] = [
        "nccl",
        "c10d::",
        "record_param_comms",
        "allreduce",
        "all_reduce",
        "allgather",
        "all_gather",
        "reduce_scatter",
        "reducescatter",
        "alltoall",
        "all_to_all",
        "barrier",
    ];
    if COMM.iter().any(|p| lower.contains(p)) {
        return RangeClass::Comm;
    }
    RangeClass::Other
}

fn is_jit(lower: &str) -> bool {
    let compiles = lower
        .match_indices("compile")
        .any(|(i, m)| lower.as_bytes().get(i + m.len()) != Some(&b'd'));
    compiles
        || ["nvrtc", "jit", "autotun"]
            .iter()
            .any(|p| lower.contains(p))
}

/// The label a range is reported under: its name without PyTorch's per-op suffixes
/// (`aten::item, op_id = 317127` → `aten::item`; `, seq = N`, `, sizes = …` likewise) and
/// without trailing numbers (`IO 190` → `IO`), so the instances of one range add up.
pub fn range_label(name: &str) -> &str {
    let mut s = name;
    for suffix in [", op_id = ", ", seq = ", ", sizes = "] {
        if let Some(i) = s.find(suffix) {
            s = &s[..i];
        }
    }
    loop {
        let t = s.trim_end();
        match t.rsplit_once(' ') {
            Some((head, last))
                if !head.trim().is_empty()
                    && !last.is_empty()
                    && last.bytes().all(|b| b.is_ascii_digit()) =>
            {
                s = head;
            }
            _ => return t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_name() {
        for (name, want) in [
            ("Python GC", RangeClass::Gc),
            ("Waiting for GIL", RangeClass::GilWait),
            ("Holding GIL", RangeClass::GilHeld),
            ("KernelExecutor::compileFusion", RangeClass::Jit),
            ("executor_utils::Nvrtc::CompileProgram", RangeClass::Jit),
            ("executor_utils::NVRTC", RangeClass::Jit),
            ("CompiledKernel::compile", RangeClass::Jit),
            ("ExecutorDispatch::compile2", RangeClass::Jit),
            ("flashinfer JIT build", RangeClass::Jit),
            ("triton autotuning", RangeClass::Jit),
            ("Torch-Compiled Region: 0/0", RangeClass::Other),
            ("CompiledKernel::CompiledKernel", RangeClass::Other),
            ("ncclAllReduce", RangeClass::Comm),
            ("c10d::allreduce_", RangeClass::Comm),
            ("nccl:all_gather", RangeClass::Comm),
            ("IO 190", RangeClass::Other),
            ("aten::item, op_id = 317127", RangeClass::Other),
            ("", RangeClass::Other),
        ] {
            assert_eq!(range_class(name), want, "{name:?}");
        }
    }

    #[test]
    fn labels_drop_instance_numbers() {
        for (name, want) in [
            ("IO 190", "IO"),
            ("Copy 7 3", "Copy"),
            ("aten::item, op_id = 317127", "aten::item"),
            ("aten::mm, seq = 5, sizes = [[2, 3]]", "aten::mm"),
            (
                "FSDP::pre_forward (encoder.block.0), op_id = 1",
                "FSDP::pre_forward (encoder.block.0)",
            ),
            ("Step 190 to 200", "Step 190 to"),
            ("190", "190"),
            (
                "KernelExecutor::compileFusion",
                "KernelExecutor::compileFusion",
            ),
            ("", ""),
        ] {
            assert_eq!(range_label(name), want, "{name:?}");
        }
    }
}
