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

/// Which table a GPU work row is in, and its index in the timeline's list of that table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Kernel(usize),
    Replay(usize),
    Memcpy(usize),
    Memset(usize),
}

/// One GPU work row: where, whose, when and what.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub device: u32,
    pub stream: u8,
    pub proc: u8,
    /// The correlation id of the runtime call that issued it (kernel or graph launch, memcpy,
    /// memset).
    pub corr: u32,
    pub start: Ns,
    pub end: Ns,
    pub class: Class,
    pub source: Source,
}

/// Every GPU work row of `tl`: the kernels, then the graph replays, the memcpy rows and the
/// memset rows, each list in the timeline's order.
pub fn rows(tl: &Timeline) -> Vec<Work> {
    let mut is_nccl: HashMap<u32, bool> = HashMap::new();
    let mut out = Vec::with_capacity(
        tl.kernels.len() + tl.graph_replays.len() + tl.memcpy.len() + tl.memset.len(),
    );
    for (i, k) in tl.kernels.iter().enumerate() {
        let nccl = *is_nccl
            .entry(k.short)
            .or_insert_with(|| tl.names.get(k.short).to_ascii_lowercase().contains("nccl"));
        out.push(Work {
            device: u32::from(k.device),
            stream: k.stream,
            proc: k.proc,
            corr: k.corr,
            start: k.start,
            end: k.end,
            class: if nccl {
                Class::Communication
            } else {
                Class::Compute
            },
            source: Source::Kernel(i),
        });
    }
    for (i, r) in tl.graph_replays.iter().enumerate() {
        out.push(Work {
            device: u32::from(r.device),
            stream: r.stream,
            proc: r.proc,
            corr: r.corr,
            start: r.start,
            end: r.end,
            class: Class::Compute,
            source: Source::Replay(i),
        });
    }
    let copies = tl
        .memcpy
        .iter()
        .enumerate()
        .map(|(i, m)| (m, Source::Memcpy(i)));
    let memsets = tl
        .memset
        .iter()
        .enumerate()
        .map(|(i, m)| (m, Source::Memset(i)));
    for (m, source) in copies.chain(memsets) {
        out.push(Work {
            device: u32::from(m.device),
            stream: m.stream,
            proc: m.proc,
            corr: m.corr,
            start: m.start,
            end: m.end,
            class: Class::Transfer,
            source,
        });
    }
    out
}
