//! Memory copies and memsets (spec §5): per copy direction, with the two host-stalling kinds
//! flagged: async copies from/to pageable host memory (the driver stages them synchronously)
//! and copies issued through a synchronous API.
//!
//! Sync vs async comes from the API call that issued the operation (joined on process and
//! correlation id while both tables stream, [`crate::index::call_join`]); pageable from
//! `srcKind`/`dstKind` (`ENUM_CUDA_MEM_KIND` 0 = pageable). Folded per copy direction
//! ([`MemoryTally`]): nothing is held per operation.

use serde::Serialize;

use std::iter::Peekable;

use super::Window;
use super::processes::ProcessTally;
use crate::index::call_join::{CallJoin, Hold, LOOKAHEAD};
use crate::index::units::us;
use crate::model::Ns;
use crate::model::rows::{CallRow, EventRows, MemOpRow, Rows};
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

/// Which calls the copy join holds (a copy's call issues one copy): copy calls for the copy
/// table (`memset: false`), memset calls for the memset table.
pub fn hold(kind: ApiKind, memset: bool) -> Hold {
    match (kind, memset) {
        (ApiKind::Memcpy { .. }, false) | (ApiKind::Memset { .. }, true) => Hold::Once,
        _ => Hold::No,
    }
}

/// Whether `call` (of kind `kind`), the call that issued an operation, is async; `None` when
/// no call joins it.
pub fn issued_async(call: Option<(CallRow, ApiKind)>) -> Option<bool> {
    match call?.1 {
        ApiKind::Memcpy { is_async } | ApiKind::Memset { is_async } => Some(is_async),
        _ => None,
    }
}

/// The copies and memsets, merged in start order, joined to the calls that issued them as the
/// calls are handed over in start order with their kinds ([`CopyJoin::call`], by the pass that
/// reads them for the kernels): an operation is joined once every call that may have issued it was handed over
/// (those starting up to [`LOOKAHEAD`] after it), so the calls are not read again for it.
pub struct CopyJoin<'r> {
    join: CallJoin<'r, ApiKind>,
    copies: Peekable<Rows<'r, MemOpRow>>,
    memsets: Peekable<Rows<'r, MemOpRow>>,
    tally: MemoryTally,
}

impl<'r> CopyJoin<'r> {
    /// Over `rows`' copies and memsets.
    pub fn new(rows: &'r dyn EventRows, window: Window) -> CopyJoin<'r> {
        CopyJoin {
            join: CallJoin::pushed(),
            copies: rows.memcpy().peekable(),
            memsets: rows.memset().peekable(),
            tally: MemoryTally::new(window),
        }
    }

    /// The next call in start order, of kind `kind`; each copy joined is handed to `procs` too.
    pub fn call(&mut self, c: &CallRow, kind: ApiKind, procs: &mut ProcessTally) {
        self.join_before(Some(c.start), procs);
        let held = match hold(kind, false) {
            Hold::No => hold(kind, true),
            held => held,
        };
        self.join.push_held(c, held, kind);
    }

    /// Joins the operations whose calls were all handed over: those starting more than
    /// [`LOOKAHEAD`] before `until`, or every one left.
    fn join_before(&mut self, until: Option<Ns>, procs: &mut ProcessTally) {
        loop {
            let (copy_first, start) = match (self.copies.peek(), self.memsets.peek()) {
                (Some(c), Some(m)) if c.start <= m.start => (true, c.start),
                (_, Some(m)) => (false, m.start),
                (Some(c), None) => (true, c.start),
                (None, None) => return,
            };
            if until.is_some_and(|until| start.saturating_add(LOOKAHEAD) >= until) {
                return;
            }
            let next = match copy_first {
                true => self.copies.next(),
                false => self.memsets.next(),
            };
            let Some(op) = next else { return };
            let call = self.join.find_with(op.start, op.process, op.correlation);
            let issued = issued_async(call);
            if copy_first {
                self.tally.copy(&op, issued);
                procs.memcpy(&op);
            } else {
                self.tally.memset(&op, issued);
            }
        }
    }

    /// The operations' summary, every one joined, and the most calls held at once.
    pub fn finish(mut self, procs: &mut ProcessTally) -> (MemorySummary, usize) {
        self.join_before(None, procs);
        (self.tally.finish(), self.join.peak())
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

fn add(s: &mut MemOpStats, op: &MemOpRow, is_async: Option<bool>, pageable: bool) {
    let d: Ns = (op.end - op.start).max(0);
    s.count += 1;
    s.bytes = s.bytes.saturating_add(op.bytes);
    s.total_us += us(d);
    match is_async {
        Some(true) if pageable => s.pageable_async += 1,
        Some(true) => {}
        Some(false) => s.synchronous += 1,
        None => s.unjoined += 1,
    }
}

/// Copies per direction and memsets, folded in start order.
pub struct MemoryTally {
    window: Window,
    kinds: Vec<MemOpStats>,
    memset: MemOpStats,
    in_window: StallingOps,
}

impl MemoryTally {
    pub fn new(window: Window) -> MemoryTally {
        MemoryTally {
            window,
            kinds: Vec::new(),
            memset: stats("memset"),
            in_window: StallingOps::default(),
        }
    }

    /// Counts copy `op`, issued by an async call (`Some(true)`), a synchronous one, or none
    /// found (`None`).
    pub fn copy(&mut self, op: &MemOpRow, is_async: Option<bool>) {
        let label = copy_kind(op.kind);
        let pageable = op.pageable_host();
        if self.window.clip(op.start, op.end).is_some() {
            match is_async {
                Some(true) if pageable => self.in_window.pageable_async_copies += 1,
                Some(false) => self.in_window.synchronous_copies += 1,
                _ => {}
            }
        }
        let slot = match self.kinds.iter().position(|k| k.kind == label) {
            Some(p) => p,
            None => {
                self.kinds.push(stats(label));
                self.kinds.len() - 1
            }
        };
        add(&mut self.kinds[slot], op, is_async, pageable);
    }

    /// Counts memset `op` (as [`MemoryTally::copy`]).
    pub fn memset(&mut self, op: &MemOpRow, is_async: Option<bool>) {
        if is_async == Some(false) && self.window.clip(op.start, op.end).is_some() {
            self.in_window.synchronous_memsets += 1;
        }
        add(&mut self.memset, op, is_async, false);
    }

    /// Copies per direction (most time first) and memsets.
    pub fn finish(self) -> MemorySummary {
        let mut kinds = self.kinds;
        kinds.sort_by(|a, b| {
            b.total_us
                .total_cmp(&a.total_us)
                .then_with(|| a.kind.cmp(&b.kind))
        });
        MemorySummary {
            pageable_async_copies: kinds.iter().map(|k| k.pageable_async).sum(),
            synchronous_copies: kinds.iter().map(|k| k.synchronous).sum(),
            synchronous_memsets: self.memset.synchronous,
            memcpy: kinds,
            memset: self.memset,
            in_window: self.in_window,
        }
    }
}

#[cfg(test)]
mod tests {
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
        let s = crate::explain::explain_rows(&b.trace, "t", &[], 10)
            .expect("loaded rows")
            .memory;
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
