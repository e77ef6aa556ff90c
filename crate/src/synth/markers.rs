//! Step markers of other frameworks written in place of TensorRT-LLM's: the same placed run, its
//! `[Executor] _forward_step N: C ctx reqs, G gen reqs` ranges renamed as vLLM, SGLang or
//! PyTorch name their steps (the names `docs/step-markers.md` found in their sources). The
//! answers are the TensorRT-LLM run's: a reader of any marker must find the same steps.

use regex::Regex;

use super::timeline::Timeline;
use crate::error::{Error, Result};

/// How the generated trace names its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MarkerStyle {
    #[default]
    TensorrtLlm,
    /// `execute_context_C(C·128)_generation_G(G)`: C context and G generation requests.
    Vllm,
    /// `execute_new_C_cached_G` (vLLM before the CUDA profiler wrapper's token counts).
    VllmOld,
    /// `scheduler.run_batch`: no number, no counts.
    Sglang,
    /// `ProfilerStep#N`: no counts.
    Pytorch,
    /// `decode_iteration`: a range no built-in marker reads (a framework the catalogue does not
    /// know), so a reader finds no marker and infers the steps from the kernel stream.
    Unmarked,
}

impl MarkerStyle {
    pub const ALL: [(&'static str, MarkerStyle); 6] = [
        ("tensorrt-llm", MarkerStyle::TensorrtLlm),
        ("vllm", MarkerStyle::Vllm),
        ("vllm-old", MarkerStyle::VllmOld),
        ("sglang", MarkerStyle::Sglang),
        ("pytorch", MarkerStyle::Pytorch),
        ("none", MarkerStyle::Unmarked),
    ];

    pub fn from_key(key: &str) -> Result<MarkerStyle> {
        MarkerStyle::ALL
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, m)| m)
            .ok_or_else(|| {
                let known: Vec<&str> = MarkerStyle::ALL.iter().map(|(k, _)| *k).collect();
                Error::Usage(format!(
                    "unknown --markers `{key}`; known: {}",
                    known.join(", ")
                ))
            })
    }

    /// Whether the marker carries request counts (a reader can tell context from generation).
    pub fn has_counts(self) -> bool {
        matches!(
            self,
            MarkerStyle::TensorrtLlm | MarkerStyle::Vllm | MarkerStyle::VllmOld
        )
    }

    fn name(self, step: u64, ctx: u64, generation: u64) -> String {
        match self {
            MarkerStyle::TensorrtLlm => {
                format!("[Executor] _forward_step {step}: {ctx} ctx reqs, {generation} gen reqs")
            }
            MarkerStyle::Vllm => format!(
                "execute_context_{ctx}({})_generation_{generation}({generation})",
                ctx * 128
            ),
            MarkerStyle::VllmOld => format!("execute_new_{ctx}_cached_{generation}"),
            MarkerStyle::Sglang => "scheduler.run_batch".into(),
            MarkerStyle::Pytorch => format!("ProfilerStep#{step}"),
            MarkerStyle::Unmarked => UNMARKED.into(),
        }
    }
}

/// The name [`MarkerStyle::Unmarked`] gives the steps' ranges.
pub const UNMARKED: &str = "decode_iteration";

/// Renames every forward-step range of `tl` as `style` names it; returns each renamed range's
/// index and former name id, for [`restore`].
pub fn restyle(tl: &mut Timeline, style: MarkerStyle) -> Vec<(usize, u32)> {
    if style == MarkerStyle::TensorrtLlm {
        return Vec::new();
    }
    let Ok(re) = Regex::new(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
    else {
        return Vec::new();
    };
    let mut renamed = Vec::new();
    for i in 0..tl.nvtx.len() {
        let old = tl.nvtx[i].name;
        let Some(c) = re.captures(tl.names.get(old)) else {
            continue;
        };
        let num = |g: usize| c.get(g).and_then(|m| m.as_str().parse::<u64>().ok());
        let (Some(step), Some(ctx), Some(generation)) = (num(1), num(2), num(3)) else {
            continue;
        };
        let name = style.name(step, ctx, generation);
        tl.nvtx[i].name = tl.names.id(&name);
        renamed.push((i, old));
    }
    renamed
}

/// Gives the renamed ranges their TensorRT-LLM names back (the answers read those).
pub fn restore(tl: &mut Timeline, renamed: &[(usize, u32)]) {
    for &(i, old) in renamed {
        if let Some(n) = tl.nvtx.get_mut(i) {
            n.name = old;
        }
    }
}
