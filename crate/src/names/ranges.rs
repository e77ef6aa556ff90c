//! What an NVTX range's name says the host was doing: a Python garbage collection, waiting for
//! or holding the GIL, compiling code, a collective, or other named work; and the label a range
//! is reported under (its name without per-instance numbers).

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use super::steps::parse_builtin;

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
    /// `Torch-Compiled Region` runs compiled code), `nvrtc`, `jit` or `autotun` outside a file
    /// path (a DLProf dict text naming `torch/_jit_internal.py` is no compilation).
    Jit,
    /// A collective or its wait: NCCL's own ranges (`ncclAllReduce`, `ncclGroupStart` …),
    /// PyTorch's `c10d::` and `record_param_comms`, or an all-reduce, all-gather,
    /// reduce-scatter, all-to-all or barrier by name.
    Comm,
    /// Any other named range.
    Other,
}

/// Names matched anywhere in the range's name, in this order.
const WHOLE_NAME: [(&str, RangeClass); 3] = [
    ("python gc", RangeClass::Gc),
    ("waiting for gil", RangeClass::GilWait),
    ("holding gil", RangeClass::GilHeld),
];

/// A JIT range's words (`compile` only when not `compiled`).
const JIT: [&str; 4] = ["compile", "nvrtc", "jit", "autotun"];

/// A collective's words.
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

/// Every substring [`range_class`] looks for, ASCII case-insensitive. The words are looked for
/// in the name's words joined by spaces, and none holds a space, so a name holding none of
/// these anywhere is `Other`: found in one pass, without a lowercase copy (a long trace names
/// each of its forward steps differently, so most names are classified once each).
fn class_substrings() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        let whole = WHOLE_NAME.iter().map(|(s, _)| *s);
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(whole.chain(JIT).chain(COMM))
            .unwrap_or_else(|e| unreachable!("constant patterns: {e}"))
    })
}

/// Classifies one NVTX range name (ASCII case-insensitive).
pub fn range_class(name: &str) -> RangeClass {
    if !class_substrings().is_match(name) {
        return RangeClass::Other;
    }
    let lower = name.to_ascii_lowercase();
    if let Some(&(_, class)) = WHOLE_NAME.iter().find(|(s, _)| lower.contains(s)) {
        return class;
    }
    let words = without_paths(&lower);
    if is_jit(&words) {
        return RangeClass::Jit;
    }
    if COMM.iter().any(|p| words.contains(p)) {
        return RangeClass::Comm;
    }
    RangeClass::Other
}

/// The name without its file paths: the words (split at spaces, quotes, brackets, commas and
/// semicolons) that hold no `/` or `\` and name no `.py` file. A path says where code
/// lives, not what the host was doing: DLProf's NVTX ranges are Python dicts of call-stack paths
/// (`{'traceMarker': ['…/torch/_jit_internal.py:422', …], 'funcStack': '/<module>/…'}`), which
/// are no JIT compilation.
fn without_paths(lower: &str) -> String {
    lower
        .split(|c: char| c.is_whitespace() || "'\"[](){},;".contains(c))
        .filter(|w| !w.contains('/') && !w.contains('\\') && !w.contains(".py"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_jit(lower: &str) -> bool {
    let compiles = lower
        .match_indices("compile")
        .any(|(i, m)| lower.as_bytes().get(i + m.len()) != Some(&b'd'));
    compiles || JIT[1..].iter().any(|p| lower.contains(p))
}

/// The suffixes PyTorch's `emit_nvtx` appends to an op's name, in its order (`getNvtxStr` in
/// `torch/csrc/profiler/util.cpp`: `name[, seq = N][, op_id = N][, sizes = [[…]]]
/// [, input_op_ids = […]]`), each with what its value starts with.
/// Whether a byte can start a suffix's value.
type StartsValue = fn(u8) -> bool;

const EMIT_NVTX_SUFFIXES: [(&str, StartsValue); 4] = [
    (", seq = ", |b| b.is_ascii_digit() || b == b'-'),
    (", op_id = ", |b| b.is_ascii_digit()),
    (", sizes = ", |b| b == b'['),
    (", input_op_ids = ", |b| b == b'['),
];

/// The op of a PyTorch `emit_nvtx` range: its name without the per-call suffixes
/// (`aten::mm, seq = 12, op_id = 3, sizes = [[2, 3], [3, 4]]` → `aten::mm`), so every call of
/// one op is counted under one name. A name without those suffixes is returned whole.
pub fn emit_nvtx_op(name: &str) -> &str {
    // Every suffix starts with a comma, which most names lack.
    if memchr::memchr(b',', name.as_bytes()).is_none() {
        return name;
    }
    let mut end = name.len();
    for (suffix, starts_value) in EMIT_NVTX_SUFFIXES {
        let found = name.match_indices(suffix).find(|(i, _)| {
            name.as_bytes()
                .get(i + suffix.len())
                .is_some_and(|&b| starts_value(b))
        });
        if let Some((i, _)) = found {
            end = end.min(i);
        }
    }
    &name[..end]
}

/// The name a range is counted under: its PyTorch op (`emit_nvtx_op`), or a forward step's
/// marker's pattern (every step names its range differently).
pub fn range_name(name: &str) -> &str {
    counted_name(name).0
}

/// [`range_name`], and whether `name` is a forward step's: a name of which every step has its
/// own, so that what is kept per name id must not keep it.
pub fn counted_name(name: &str) -> (&str, bool) {
    match parse_builtin(name) {
        Some((style, _)) => (style.pattern(), true),
        None => (emit_nvtx_op(name), false),
    }
}

/// The label a range is reported under: its PyTorch op (`emit_nvtx_op`) without trailing
/// numbers (`IO 190` → `IO`), so the instances of one range add up; a forward step's range
/// (a built-in step marker, whose every step names its range differently) under its marker's
/// pattern.
pub fn range_label(name: &str) -> &str {
    label_of(name).0
}

/// [`range_label`], and whether `name` is a forward step's ([`counted_name`]).
pub fn label_of(name: &str) -> (&str, bool) {
    match counted_name(name) {
        (pattern, true) => (pattern, true),
        (op, false) => (without_trailing_numbers(op), false),
    }
}

/// `s` without its trailing space-separated numbers (`IO 190` → `IO`; not a number alone).
fn without_trailing_numbers(mut s: &str) -> &str {
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
    fn a_forward_step_range_is_labelled_by_its_marker_and_others_without_their_numbers() {
        use crate::names::steps::StepStyle;
        for (name, label) in [
            (
                "[Executor] _forward_step 12800: 0 ctx reqs, 64 gen reqs",
                StepStyle::TensorrtLlm.pattern(),
            ),
            (
                "execute_context_1(512)_generation_7(7)",
                StepStyle::Vllm.pattern(),
            ),
            ("scheduler.run_batch", StepStyle::Sglang.pattern()),
            ("ProfilerStep#41", StepStyle::Pytorch.pattern()),
            ("IO 190", "IO"),
            ("_prepare_tp_inputs", "_prepare_tp_inputs"),
        ] {
            assert_eq!(range_label(name), label, "{name}");
        }
    }

    #[test]
    fn only_a_forward_step_range_is_flagged_as_a_name_every_step_has_its_own() {
        for (name, step) in [
            (
                "[Executor] _forward_step 12800: 0 ctx reqs, 64 gen reqs",
                true,
            ),
            ("ProfilerStep#41", true),
            ("IO 190", false),
            ("aten::mm, seq = 12, op_id = 3", false),
        ] {
            assert_eq!(label_of(name).1, step, "{name}");
            assert_eq!(counted_name(name).1, step, "{name}");
            assert_eq!(label_of(name).0, range_label(name), "{name}");
        }
    }

    #[test]
    fn a_range_is_counted_by_op_or_by_step_marker_and_keeps_its_numbers() {
        use crate::names::steps::StepStyle;
        for (name, counted) in [
            (
                "[Executor] _forward_step 7: 0 ctx reqs, 8 gen reqs",
                StepStyle::TensorrtLlm.pattern(),
            ),
            ("aten::mm, seq = 12, op_id = 3", "aten::mm"),
            ("Step 190 to 200", "Step 190 to 200"),
            ("IO 190", "IO 190"),
        ] {
            assert_eq!(range_name(name), counted, "{name}");
        }
    }

    #[test]
    fn emit_nvtx_names_group_by_op() {
        for (name, op) in [
            ("flash_attn_forward, op_id = 17", "flash_attn_forward"),
            (
                "aten::mm, seq = 12, op_id = 3, sizes = [[2, 3], [3, 4]]",
                "aten::mm",
            ),
            ("aten::conv2d, seq = 0", "aten::conv2d"),
            (
                "aten::add, op_id = 9, sizes = [[4], [4], []], input_op_ids = [(8, 0)]",
                "aten::add",
            ),
            ("aten::view, sizes = [[1, 2]]", "aten::view"),
            // Not emit_nvtx suffixes: kept whole.
            ("decode, seq = long", "decode, seq = long"),
            ("forward", "forward"),
        ] {
            assert_eq!(emit_nvtx_op(name), op, "{name}");
        }
    }

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
            ("torch.jit.script compile", RangeClass::Jit),
            ("TorchScript graph optimize (jit)", RangeClass::Jit),
            ("triton.compile", RangeClass::Jit),
            // DLProf's dictionary text: `jit` and `compile` only in file paths.
            (
                "{'traceMarker': ['net.py:42', '/usr/lib/python3.6/site-packages/torch/_jit_internal.py:422', 'C:\\\\torch\\\\jit\\\\compile.py:3'], 'funcStack': '/<module>/net::forward/torch.jit::compile'}",
                RangeClass::Other,
            ),
            (
                "{'mod': 'torch.nn.functional', 'op': 'conv2d'}",
                RangeClass::Other,
            ),
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
