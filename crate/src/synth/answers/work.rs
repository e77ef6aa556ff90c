//! The GPU work rows of a timeline, as the `standard` profile counts them: kernels, graph-level
//! replays (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`), memcpy and memset rows. Each row is classed once
//! for the `bound` answer: NCCL kernels are communication, the other kernels and the graph
//! replays compute, copies and memsets transfer.

use std::collections::HashMap;

use crate::synth::timeline::{Ns, Timeline};

/// What a GPU work row does, for the `bound` partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A kernel whose short name does not contain `nccl` (any case), or a graph replay.
    Compute,
    /// A kernel whose short name contains `nccl` (any case).
    Communication,
    /// A memcpy or memset row.
    Transfer,
}

/// One GPU work row: where, whose, when and what.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub device: u32,
    pub proc: u8,
    pub start: Ns,
    pub end: Ns,
    pub class: Class,
}

/// Every GPU work row of `tl`, in no particular order.
pub fn rows(tl: &Timeline) -> Vec<Work> {
    let mut is_nccl: HashMap<u32, bool> = HashMap::new();
    let mut out = Vec::with_capacity(
        tl.kernels.len() + tl.graph_replays.len() + tl.memcpy.len() + tl.memset.len(),
    );
    for k in &tl.kernels {
        let nccl = *is_nccl
            .entry(k.short)
            .or_insert_with(|| tl.names.get(k.short).to_ascii_lowercase().contains("nccl"));
        out.push(Work {
            device: u32::from(k.device),
            proc: k.proc,
            start: k.start,
            end: k.end,
            class: if nccl {
                Class::Communication
            } else {
                Class::Compute
            },
        });
    }
    for r in &tl.graph_replays {
        out.push(Work {
            device: u32::from(r.device),
            proc: r.proc,
            start: r.start,
            end: r.end,
            class: Class::Compute,
        });
    }
    for m in tl.memcpy.iter().chain(&tl.memset) {
        out.push(Work {
            device: u32::from(m.device),
            proc: m.proc,
            start: m.start,
            end: m.end,
            class: Class::Transfer,
        });
    }
    out
}
