//! Event rows as bytes, for [`super::row_cache`]: each row as differences from the previous
//! one (`rowid`, start, correlation) and its duration, as postcard varints — about 12 to 16
//! bytes a row of a real export against 40 to 64 for the row itself. Every difference wraps,
//! so any row comes back exactly.

use serde::{Deserialize, Serialize};

use crate::model::rows::{CallRow, KernelRow, MemOpRow, SyncRow};
use crate::model::{Ns, NvtxRow};

/// What the next row is packed against: the previous row's `rowid`, start and correlation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base {
    pub(crate) row: i64,
    start: Ns,
    correlation: u32,
}

/// The differences of a row from a [`Base`], common to every table.
#[derive(Serialize, Deserialize)]
struct Steps {
    row: i64,
    start: i64,
    duration: i64,
}

impl Base {
    fn of(row: i64, start: Ns, correlation: u32) -> Base {
        Base {
            row,
            start,
            correlation,
        }
    }
}

impl Steps {
    fn of(base: Base, row: i64, start: Ns, end: Ns) -> Steps {
        Steps {
            row: row.wrapping_sub(base.row),
            start: start.wrapping_sub(base.start),
            duration: end.wrapping_sub(start),
        }
    }

    /// `(rowid, start, end)`.
    fn apply(&self, base: Base) -> (i64, Ns, Ns) {
        let start = base.start.wrapping_add(self.start);
        (
            base.row.wrapping_add(self.row),
            start,
            start.wrapping_add(self.duration),
        )
    }
}

/// A correlation id as its difference from the previous row's (ids mostly grow by a little).
fn correlation_step(base: Base, correlation: u32) -> i32 {
    correlation.wrapping_sub(base.correlation) as i32
}

fn correlation_of(base: Base, step: i32) -> u32 {
    base.correlation.wrapping_add(step as u32)
}

/// A name id plus one, so `NO_NAME` (`u32::MAX`) takes one byte, not five.
fn name_step(name: u32) -> u32 {
    name.wrapping_add(1)
}

fn name_of(step: u32) -> u32 {
    step.wrapping_sub(1)
}

/// A row the cache can hold as bytes.
pub(crate) trait Packable: Sized {
    /// The row's form in bytes, relative to a [`Base`].
    type Packed: Serialize + for<'de> Deserialize<'de>;
    fn pack(&self, base: Base) -> Self::Packed;
    fn unpack(packed: Self::Packed, base: Base) -> Self;
    /// What the row after this one is packed against.
    fn base(&self) -> Base;
}

#[derive(Serialize, Deserialize)]
pub(crate) struct PackedKernel {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    short_name: u32,
    demangled_name: u32,
    graph_node: u64,
    graph_id: u32,
}

impl Packable for KernelRow {
    type Packed = PackedKernel;

    fn base(&self) -> Base {
        Base::of(self.row, self.start, self.correlation)
    }

    fn pack(&self, base: Base) -> PackedKernel {
        PackedKernel {
            steps: Steps::of(base, self.row, self.start, self.end),
            device: self.device,
            stream: self.stream,
            process: self.process,
            correlation: correlation_step(base, self.correlation),
            short_name: name_step(self.short_name),
            demangled_name: name_step(self.demangled_name),
            graph_node: self.graph_node,
            graph_id: self.graph_id,
        }
    }

    fn unpack(p: PackedKernel, base: Base) -> KernelRow {
        let (row, start, end) = p.steps.apply(base);
        KernelRow {
            row,
            start,
            end,
            device: p.device,
            stream: p.stream,
            process: p.process,
            correlation: correlation_of(base, p.correlation),
            short_name: name_of(p.short_name),
            demangled_name: name_of(p.demangled_name),
            graph_node: p.graph_node,
            graph_id: p.graph_id,
            // Only the kernel and graph-trace tables are cached as kernel rows; the reader of
            // the latter marks its rows as replays.
            work: crate::model::Work::Kernel,
            bytes: 0,
        }
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct PackedCall {
    steps: Steps,
    thread: u32,
    process: u32,
    correlation: i32,
    name: u32,
}

impl Packable for CallRow {
    type Packed = PackedCall;

    fn base(&self) -> Base {
        Base::of(self.row, self.start, self.correlation)
    }

    fn pack(&self, base: Base) -> PackedCall {
        PackedCall {
            steps: Steps::of(base, self.row, self.start, self.end),
            thread: self.thread,
            process: self.process,
            correlation: correlation_step(base, self.correlation),
            name: name_step(self.name),
        }
    }

    fn unpack(p: PackedCall, base: Base) -> CallRow {
        let (row, start, end) = p.steps.apply(base);
        CallRow {
            row,
            start,
            end,
            thread: p.thread,
            process: p.process,
            correlation: correlation_of(base, p.correlation),
            name: name_of(p.name),
        }
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct PackedRange {
    steps: Steps,
    thread: u32,
    event_type: u8,
    domain: u32,
    name: u32,
    text_id_name: u32,
}

impl Packable for NvtxRow {
    type Packed = PackedRange;

    fn pack(&self, base: Base) -> PackedRange {
        PackedRange {
            steps: Steps::of(base, self.row, self.start, self.end),
            thread: self.thread,
            event_type: self.event_type,
            domain: self.domain,
            name: name_step(self.name),
            text_id_name: name_step(self.text_id_name),
        }
    }

    fn unpack(p: PackedRange, base: Base) -> NvtxRow {
        let (row, start, end) = p.steps.apply(base);
        NvtxRow {
            row,
            start,
            end,
            thread: p.thread,
            event_type: p.event_type,
            domain: p.domain,
            name: name_of(p.name),
            text_id_name: name_of(p.text_id_name),
        }
    }

    fn base(&self) -> Base {
        Base::of(self.row, self.start, 0)
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct PackedMemOp {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    bytes: u64,
    kind: u8,
    src_mem: u8,
    dst_mem: u8,
}

impl Packable for MemOpRow {
    type Packed = PackedMemOp;

    fn base(&self) -> Base {
        Base::of(self.row, self.start, self.correlation)
    }

    fn pack(&self, base: Base) -> PackedMemOp {
        PackedMemOp {
            steps: Steps::of(base, self.row, self.start, self.end),
            device: self.device,
            stream: self.stream,
            process: self.process,
            correlation: correlation_step(base, self.correlation),
            bytes: self.bytes,
            kind: self.kind,
            src_mem: self.src_mem,
            dst_mem: self.dst_mem,
        }
    }

    fn unpack(p: PackedMemOp, base: Base) -> MemOpRow {
        let (row, start, end) = p.steps.apply(base);
        MemOpRow {
            row,
            start,
            end,
            device: p.device,
            stream: p.stream,
            process: p.process,
            correlation: correlation_of(base, p.correlation),
            bytes: p.bytes,
            kind: p.kind,
            src_mem: p.src_mem,
            dst_mem: p.dst_mem,
        }
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct PackedSync {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    sync_type: u8,
}

impl Packable for SyncRow {
    type Packed = PackedSync;

    fn base(&self) -> Base {
        Base::of(self.row, self.start, self.correlation)
    }

    fn pack(&self, base: Base) -> PackedSync {
        PackedSync {
            steps: Steps::of(base, self.row, self.start, self.end),
            device: self.device,
            stream: self.stream,
            process: self.process,
            correlation: correlation_step(base, self.correlation),
            sync_type: self.sync_type,
        }
    }

    fn unpack(p: PackedSync, base: Base) -> SyncRow {
        let (row, start, end) = p.steps.apply(base);
        SyncRow {
            row,
            start,
            end,
            device: p.device,
            stream: p.stream,
            process: p.process,
            correlation: correlation_of(base, p.correlation),
            sync_type: p.sync_type,
        }
    }
}
