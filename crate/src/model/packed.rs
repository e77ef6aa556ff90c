//! Event rows as bytes, for the trace's row cache and lanes and the what-if replay's batches:
//! each row as differences from the previous one (`rowid`, start, correlation) and its
//! duration, as postcard's varints ([`Fields`]) — about 12 to 16 bytes a row of a real export
//! against 40 to 64 for the row itself. Every difference wraps, so any row comes back exactly.

use serde::{Deserialize, Serialize};

use super::rows::{CallRow, KernelRow, MemOpRow, SyncRow};
use super::{Ns, NvtxRow};

/// What the next row is packed against: the previous row's `rowid`, start and correlation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base {
    pub(crate) row: i64,
    start: Ns,
    correlation: u32,
}

/// The differences of a row from a [`Base`], common to every table.
#[derive(Clone, Copy, Serialize, Deserialize)]
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

/// A packed row's struct and its [`Fields`], its fields in their declared order (postcard's).
macro_rules! packed {
    ($name:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        #[derive(Serialize, Deserialize)]
        pub(crate) struct $name {
            $($field: $ty,)*
        }

        impl Fields for $name {
            fn put(&self, out: &mut Out) {
                $( Field::put(self.$field, out); )*
            }

            fn take(input: &mut &[u8]) -> Option<$name> {
                Some($name { $( $field: <$ty as Field>::take(input)?, )* })
            }
        }
    };
}

/// A row the cache can hold as bytes.
pub(crate) trait Packable: Sized {
    /// The row's form in bytes, relative to a [`Base`].
    type Packed: Fields;
    fn pack(&self, base: Base) -> Self::Packed;
    fn unpack(packed: Self::Packed, base: Base) -> Self;
    /// What the row after this one is packed against.
    fn base(&self) -> Base;
}

packed!(PackedKernel {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    short_name: u32,
    demangled_name: u32,
    graph_node: u64,
    graph_id: u32,
});

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

packed!(PackedWork {
    kind: u8,
    copy: u8,
    bytes: u64,
});

/// What [`PackedKernel`] leaves out of a row of GPU work of any kind (a copy, a memset, a graph
/// replay; the row cache keeps only kernels as kernel rows): its [`crate::model::Work`] and
/// bytes, packed after it by whoever hands every kind on.
impl PackedWork {
    pub(crate) fn of(row: &KernelRow) -> PackedWork {
        use crate::model::Work;
        let (kind, copy) = match row.work {
            Work::Kernel => (0, 0),
            Work::Replay => (1, 0),
            Work::Memset => (2, 0),
            Work::Copy { kind, pageable } => (3 + u8::from(pageable), kind),
        };
        PackedWork {
            kind,
            copy,
            bytes: row.bytes,
        }
    }

    /// `row` as this says; `None` for a kind no row has.
    pub(crate) fn apply(&self, row: &mut KernelRow) -> Option<()> {
        use crate::model::Work;
        row.work = match self.kind {
            0 => Work::Kernel,
            1 => Work::Replay,
            2 => Work::Memset,
            3 | 4 => Work::Copy {
                kind: self.copy,
                pageable: self.kind == 4,
            },
            _ => return None,
        };
        row.bytes = self.bytes;
        Some(())
    }
}

packed!(PackedCall {
    steps: Steps,
    thread: u32,
    process: u32,
    correlation: i32,
    name: u32,
});

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

packed!(PackedRange {
    steps: Steps,
    thread: u32,
    event_type: u8,
    domain: u32,
    name: u32,
    text_id_name: u32,
});

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

packed!(PackedMemOp {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    bytes: u64,
    kind: u8,
    src_mem: u8,
    dst_mem: u8,
});

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

packed!(PackedSync {
    steps: Steps,
    device: u32,
    stream: u32,
    process: u32,
    correlation: i32,
    sync_type: u8,
});

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

/// A packed row's fields written and read by hand, byte for byte as postcard writes them
/// (LEB128 varints, signed ones zigzagged, a `u8` as itself). Why: through serde each field
/// was a call and a copy; packing and unpacking took about a seventh of `detect`'s
/// instructions, and the page packs every row it keeps.
pub(crate) trait Fields: Sized {
    fn put(&self, out: &mut Out);
    /// The fields at the front of `input`, which moves past them; `None` if they do not read.
    fn take(input: &mut &[u8]) -> Option<Self>;
}

/// Room for any packed row: at most 10 bytes a 64-bit field.
pub(crate) const MAX_PACKED: usize = 128;

/// A row's bytes as [`Fields::put`] writes them.
pub(crate) struct Out {
    buf: [u8; MAX_PACKED],
    len: usize,
}

impl Default for Out {
    fn default() -> Out {
        Out {
            buf: [0; MAX_PACKED],
            len: 0,
        }
    }
}

impl Out {
    /// The bytes written; `None` if they did not fit (no row type comes near).
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        self.buf.get(..self.len)
    }

    fn byte(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
        }
        self.len += 1;
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }
}

/// One field of a packed row, written and read as postcard does.
trait Field: Sized {
    fn put(self, out: &mut Out);
    fn take(input: &mut &[u8]) -> Option<Self>;
}

/// A varint of at most `max` bytes.
fn varint(input: &mut &[u8], max: usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..max {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        v |= u64::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Field for u64 {
    fn put(self, out: &mut Out) {
        out.varint(self);
    }
    fn take(input: &mut &[u8]) -> Option<u64> {
        varint(input, 10)
    }
}

impl Field for u32 {
    fn put(self, out: &mut Out) {
        out.varint(u64::from(self));
    }
    fn take(input: &mut &[u8]) -> Option<u32> {
        u32::try_from(varint(input, 5)?).ok()
    }
}

impl Field for i32 {
    fn put(self, out: &mut Out) {
        (((self << 1) ^ (self >> 31)) as u32).put(out);
    }
    fn take(input: &mut &[u8]) -> Option<i32> {
        let v = u32::take(input)?;
        Some((v >> 1) as i32 ^ -((v & 1) as i32))
    }
}

impl Field for i64 {
    fn put(self, out: &mut Out) {
        (((self << 1) ^ (self >> 63)) as u64).put(out);
    }
    fn take(input: &mut &[u8]) -> Option<i64> {
        let v = u64::take(input)?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }
}

impl Field for u8 {
    fn put(self, out: &mut Out) {
        out.byte(self);
    }
    fn take(input: &mut &[u8]) -> Option<u8> {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        Some(b)
    }
}

impl Field for Steps {
    fn put(self, out: &mut Out) {
        self.row.put(out);
        self.start.put(out);
        self.duration.put(out);
    }
    fn take(input: &mut &[u8]) -> Option<Steps> {
        Some(Steps {
            row: i64::take(input)?,
            start: i64::take(input)?,
            duration: i64::take(input)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers spread over every varint length, both signs and the extremes.
    fn spread(i: u64) -> u64 {
        let shift = (i * 7) % 64;
        (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) ^ (i & 1).wrapping_neg() & (i << 3)
    }

    fn kernel(i: u64) -> KernelRow {
        let v = |k: u64| spread(i * 11 + k);
        KernelRow {
            row: v(0) as i64,
            start: v(1) as i64,
            end: v(2) as i64,
            device: v(3) as u32,
            stream: v(4) as u32,
            process: v(5) as u32,
            correlation: v(6) as u32,
            short_name: v(7) as u32,
            demangled_name: if i.is_multiple_of(3) {
                u32::MAX
            } else {
                v(8) as u32
            },
            graph_node: v(9),
            graph_id: v(10) as u32,
            work: crate::model::Work::Kernel,
            bytes: 0,
        }
    }

    /// A memory operation with a kernel's spread of values.
    fn memop(i: u64) -> MemOpRow {
        let k = kernel(i);
        MemOpRow {
            row: k.row,
            start: k.start,
            end: k.end,
            device: k.device,
            stream: k.stream,
            process: k.process,
            correlation: k.correlation,
            bytes: k.graph_node,
            kind: k.short_name as u8,
            src_mem: k.graph_id as u8,
            dst_mem: (k.graph_id >> 8) as u8,
        }
    }

    /// Packs `rows` each against the one before, by hand and by postcard: the same bytes,
    /// and the rows come back.
    fn round_trip<T: Packable + PartialEq + std::fmt::Debug>(rows: &[T])
    where
        T::Packed: Serialize,
    {
        let mut base = Base::default();
        let mut all = Vec::new();
        for row in rows {
            let mut out = Out::default();
            row.pack(base).put(&mut out);
            let by_hand = out.bytes().expect("fits");
            let by_postcard = postcard::to_allocvec(&row.pack(base)).expect("postcard");
            assert_eq!(by_hand, &by_postcard[..], "{row:?}");
            all.extend_from_slice(by_hand);
            base = row.base();
        }
        let (mut input, mut base) = (&all[..], Base::default());
        for row in rows {
            let packed = T::Packed::take(&mut input).expect("reads");
            let back = T::unpack(packed, base);
            assert_eq!(&back, row);
            base = back.base();
        }
        assert!(input.is_empty());
        assert!(T::Packed::take(&mut &[][..]).is_none());
    }

    #[test]
    fn rows_packed_by_hand_are_postcards_bytes_and_read_back() {
        round_trip(&(0..4000).map(kernel).collect::<Vec<_>>());
        round_trip(&(0..4000).map(memop).collect::<Vec<_>>());
        let extremes = [i64::MIN, -1, 0, 1, i64::MAX];
        let rows: Vec<KernelRow> = extremes
            .iter()
            .map(|&t| KernelRow {
                row: t,
                start: t,
                end: t.wrapping_neg(),
                graph_node: t as u64,
                ..KernelRow::default()
            })
            .collect();
        round_trip(&rows);
    }

    /// A row cut short, or a varint running past its type, does not read.
    #[test]
    fn truncated_or_overlong_fields_do_not_read() {
        let mut out = Out::default();
        kernel(7).pack(Base::default()).put(&mut out);
        let bytes = out.bytes().expect("fits");
        for cut in 0..bytes.len() {
            assert!(PackedKernel::take(&mut &bytes[..cut]).is_none(), "{cut}");
        }
        assert!(u32::take(&mut &[0xff, 0xff, 0xff, 0xff, 0x7f][..]).is_none());
        assert!(u64::take(&mut &[0xff; 11][..]).is_none());
    }
}
