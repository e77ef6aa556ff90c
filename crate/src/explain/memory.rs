//! Memory copies and memsets (spec §5): per copy direction, with the two host-stalling kinds
//! flagged: async copies from/to pageable host memory (the driver stages them synchronously)
//! and copies issued through a synchronous API.
//!
//! Sync vs async comes from the API call that issued the operation (joined on process and
//! correlation id); pageable from `srcKind`/`dstKind` (`ENUM_CUDA_MEM_KIND` 0 = pageable).

use serde::Serialize;

use super::Window;
use crate::index::TraceIndex;
use crate::index::units::us;
use crate::model::{MemOps, Ns};
use crate::names::api::ApiKind;

/// Operations of one kind (a copy direction, or memset).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemOpStats {
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    pub total_us: f64,
    /// Async API with a pageable host side.
    pub pageable_async: u64,
    /// Issued through a synchronous API (`cudaMemcpy`, `cuMemcpyDtoH`, `cudaMemset` …).
    pub synchronous: u64,
    /// No API call found for the operation: sync/async unknown.
    pub unjoined: u64,
}

/// The memory section of the explainer: the tables over the whole capture, the host-stalling
/// counts also inside the window (what a finding compares with it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemorySummary {
    pub memcpy: Vec<MemOpStats>,
    pub memset: MemOpStats,
    pub pageable_async_copies: u64,
    pub synchronous_copies: u64,
    pub synchronous_memsets: u64,
    pub in_window: StallingOps,
}

/// Host-stalling copies and memsets that overlap the explainer's window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct StallingOps {
    pub pageable_async_copies: u64,
    pub synchronous_copies: u64,
    pub synchronous_memsets: u64,
}

/// `ENUM_CUDA_MEMCPY_OPER` labels.
fn copy_kind(kind: u8) -> &'static str {
    match kind {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        11 => "UVM HtoD",
        12 => "UVM DtoH",
        13 => "UVM DtoD",
        _ => "unknown",
    }
}

/// Whether the API call that issued operation `i` is async; `None` when none joins it.
fn issued_by(ix: &TraceIndex<'_>, ops: &MemOps, i: usize) -> Option<bool> {
    let row = ix.issuing_call(ops, i)?;
    match ix.call_kind(row) {
        ApiKind::Memcpy { is_async } | ApiKind::Memset { is_async } => Some(is_async),
        _ => None,
    }
}

fn stats(kind: &str) -> MemOpStats {
    MemOpStats {
        kind: kind.to_string(),
        count: 0,
        bytes: 0,
        total_us: 0.0,
        pageable_async: 0,
        synchronous: 0,
        unjoined: 0,
    }
}

fn add(s: &mut MemOpStats, ops: &MemOps, i: usize, is_async: Option<bool>, pageable: bool) {
    let d: Ns = (ops.end[i] - ops.start[i]).max(0);
    s.count += 1;
    s.bytes += ops.bytes.get(i).copied().unwrap_or(0);
    s.total_us += us(d);
    match is_async {
        Some(true) if pageable => s.pageable_async += 1,
        Some(true) => {}
        Some(false) => s.synchronous += 1,
        None => s.unjoined += 1,
    }
}

/// Copies per direction (most time first) and memsets.
pub fn memory_summary(ix: &TraceIndex<'_>, window: &Window) -> MemorySummary {
    let t = ix.trace;
    let mut kinds: Vec<MemOpStats> = Vec::new();
    let mut in_window = StallingOps::default();
    let inside = |ops: &MemOps, i: usize| window.clip(ops.start[i], ops.end[i]).is_some();
    for i in 0..t.memcpy.len() {
        let label = copy_kind(t.memcpy.kind.get(i).copied().unwrap_or(0));
        let pageable = t.memcpy.pageable_host(i);
        let is_async = issued_by(ix, &t.memcpy, i);
        if inside(&t.memcpy, i) {
            match is_async {
                Some(true) if pageable => in_window.pageable_async_copies += 1,
                Some(false) => in_window.synchronous_copies += 1,
                _ => {}
            }
        }
        let slot = match kinds.iter().position(|k| k.kind == label) {
            Some(p) => p,
            None => {
                kinds.push(stats(label));
                kinds.len() - 1
            }
        };
        add(&mut kinds[slot], &t.memcpy, i, is_async, pageable);
    }
    kinds.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.kind.cmp(&b.kind))
    });
    let mut memset = stats("memset");
    for i in 0..t.memset.len() {
        let is_async = issued_by(ix, &t.memset, i);
        if is_async == Some(false) && inside(&t.memset, i) {
            in_window.synchronous_memsets += 1;
        }
        add(&mut memset, &t.memset, i, is_async, false);
    }
    MemorySummary {
        pageable_async_copies: kinds.iter().map(|k| k.pageable_async).sum(),
        synchronous_copies: kinds.iter().map(|k| k.synchronous).sum(),
        synchronous_memsets: memset.synchronous,
        memcpy: kinds,
        memset,
        in_window,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;
    use crate::model::PAGEABLE_MEMORY as PAGEABLE;

    #[test]
    fn pageable_async_and_synchronous_copies_are_flagged() {
        let mut b = TraceBuilder::new();
        let pageable = b.call("cudaMemcpyAsync_v3020", 0, 10);
        let sync = b.call("cuMemcpyDtoH_v2", 20, 30);
        let pinned = b.call("cudaMemcpyAsync_v3020", 40, 50);
        let memset = b.call("cudaMemset_v3020", 60, 70);
        b.memcpy(1, PAGEABLE, 2, pageable); // HtoD from pageable memory
        b.memcpy(2, 2, 1, sync); // DtoH into pinned memory, synchronous API
        b.memcpy(2, 2, 1, pinned); // DtoH into pinned memory, async
        b.memcpy(2, 2, PAGEABLE, 999); // no API call joins it
        b.kernel("k", 0, 1, 0);
        let m = &mut b.trace.memset;
        (m.start, m.end, m.device, m.stream, m.process) =
            (vec![80], vec![90], vec![0], vec![7], vec![0]);
        (m.correlation, m.bytes, m.kind, m.src_mem, m.dst_mem) =
            (vec![memset], vec![64], vec![0], vec![2], vec![2]);
        let ix = TraceIndex::new(&b.trace, "t");
        let s = memory_summary(&ix, &super::super::window_of(&ix));
        assert_eq!((s.pageable_async_copies, s.synchronous_copies), (1, 1));
        assert_eq!(s.synchronous_memsets, 1);
        let dtoh = s.memcpy.iter().find(|k| k.kind == "DtoH").expect("DtoH");
        assert_eq!(
            (dtoh.count, dtoh.synchronous, dtoh.unjoined, dtoh.bytes),
            (3, 1, 1, 12288)
        );
        let htod = s.memcpy.iter().find(|k| k.kind == "HtoD").expect("HtoD");
        assert_eq!((htod.count, htod.pageable_async), (1, 1));
    }
}
