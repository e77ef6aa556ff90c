//! The GPU work besides the kernels as a reader of the kernel table folds it: graph replays,
//! copies and memsets read whole and merged in start order ([`other_work`]), then merged with
//! the kernels as they come ([`Merged`]), as `EventRows::gpu_work` merges them. Natively the
//! kernel table's thread folds so while it reads (`fold.rs`); in the page the reader worker,
//! once it has read its part (`KernelPart::fold_gpu_work`).

use super::super::decode::{REPLAY_COLUMNS, memop_columns};
use super::super::load::{MEMCPY_TABLE, MEMSET_TABLE};
use super::super::row_cache::Budget;
use super::super::runs::Keyed;
use super::super::schema::Schema;
use super::super::tables::Loader;
use crate::error::Result;
use crate::model::packed::{Base, Fields, Out, Packable};
use crate::model::rows::{KernelRow, MemOpRow, work_name};
use crate::model::{NO_NAME, NameId, Processes, REPLAY_NAME, Strings, Trace, Work};

/// Copies, memsets and graph replays a fold holds in start order beside the kernels, held whole
/// because a table's rows came out of start order (about 80 bytes each), at least; more as the
/// scan's budget allows ([`other_rows_room`]). A file with more gives way to the passes.
pub(super) const MAX_OTHER_ROWS: usize = 1 << 18;

/// Bytes of the other GPU work a fold holds packed (about 16 a row: 4 M rows) when each
/// table's rows come in start order, as nsys writes them. A file with more gives way.
pub(super) const MAX_OTHER_BYTES: usize = 64 << 20;

/// The bytes of `budget` the other GPU work may take (half of what is left: the scan that folds
/// keeps no event row, but the host side may keep copies), and how many rows that holds: their
/// merge holds them twice at its peak.
pub(super) fn other_rows_room(budget: &Budget) -> (usize, usize) {
    let room = budget.take_up_to(budget.left() / 2);
    let rows = room / (2 * std::mem::size_of::<KernelRow>());
    (room, rows.max(MAX_OTHER_ROWS))
}

/// Graph replays, copies and memsets as GPU work, each table in start order as a pass reads
/// it (sorted by its key, ties in table order), merged as `EventRows::gpu_work` merges them
/// ([`OtherWork`]); `None` when more are held whole than `most` or packed than
/// [`MAX_OTHER_BYTES`].
pub(super) fn other_work(
    ctx: &mut Loader<'_, '_>,
    (schema, strings): (&Schema, &mut Strings),
    listed: &Processes,
    most: usize,
) -> Result<Option<OtherWork>> {
    // Read into a trace of their own (the host side reads the same tables and notes them),
    // its processes numbered after the listed ones, as every reader numbers them; the
    // strings lent to it, not copied (at 10 GB they are 200 MB).
    let mut apart = Trace {
        strings: std::mem::take(strings),
        processes: listed.clone(),
        ..Trace::default()
    };
    let read = read_other_work(ctx, schema, &mut apart, most);
    *strings = std::mem::take(&mut apart.strings);
    read
}

fn read_other_work(
    ctx: &mut Loader<'_, '_>,
    schema: &Schema,
    apart: &mut Trace,
    most: usize,
) -> Result<Option<OtherWork>> {
    let mut limits = Limits {
        held: 0,
        most,
        packed: 0,
        over: false,
        process_end: 0,
    };
    let mut replays = Run::default();
    ctx.read_replays(schema, apart, &REPLAY_COLUMNS, &mut |r| {
        limits.process_end = limits.process_end.max(r.process.saturating_add(1));
        replays.push(r, &mut limits);
    })?;
    let mut copy_names = Vec::new();
    let mut memops = |table: &'static str, limits: &mut Limits| -> Result<Run<MemOpRow>> {
        let mut ops = Run::default();
        let columns = memop_columns(table);
        ctx.read_memops(schema, apart, table, &columns, &mut |op| {
            if table == MEMCPY_TABLE && !copy_names.iter().any(|&(w, _)| w == op.copy_work()) {
                copy_names.push((op.copy_work(), NO_NAME));
            }
            limits.process_end = limits.process_end.max(op.process.saturating_add(1));
            ops.push(op, limits);
        })?;
        Ok(ops)
    };
    let copies = memops(MEMCPY_TABLE, &mut limits)?;
    let memsets = memops(MEMSET_TABLE, &mut limits)?;
    if limits.over {
        return Ok(None);
    }
    let strings = &apart.strings;
    for (work, name) in &mut copy_names {
        *name = work_name(strings, *work);
    }
    let names = WorkNames {
        replay: strings.find_text(REPLAY_NAME).unwrap_or(NO_NAME),
        memset: work_name(strings, Work::Memset),
        copies: copy_names,
    };
    let mut others = OtherWork::new(replays.stream(), copies.stream(), memsets.stream(), names);
    others.process_end = limits.process_end;
    Ok(Some(others))
}

/// What the other work holds: rows whole (at most `most`) and bytes packed (at most
/// [`MAX_OTHER_BYTES`]), and whether a limit was passed.
struct Limits {
    held: usize,
    most: usize,
    packed: usize,
    over: bool,
    /// Past the largest process number read.
    process_end: u32,
}

/// One table's rows in start order as a fold holds them: packed as they come while they come
/// in start order (its key; ties in table order), else held whole, to be sorted.
enum Run<T: Keyed> {
    Packed {
        bytes: Vec<u8>,
        base: Base,
        last: Option<T::Key>,
    },
    Held(Vec<T>),
}

impl<T: Keyed> Default for Run<T> {
    fn default() -> Run<T> {
        Run::Packed {
            bytes: Vec::new(),
            base: Base::default(),
            last: None,
        }
    }
}

impl<T: Keyed + Packable> Run<T> {
    fn push(&mut self, row: T, limits: &mut Limits) {
        if limits.over {
            return;
        }
        if let Run::Packed { bytes, base, last } = self {
            let mut out = Out::default();
            row.pack(*base).put(&mut out);
            match out.bytes() {
                Some(packed) if last.is_none_or(|l| row.key() >= l) => {
                    bytes.extend_from_slice(packed);
                    (*base, *last) = (row.base(), Some(row.key()));
                    limits.packed += packed.len();
                    limits.over = limits.packed > MAX_OTHER_BYTES;
                    return;
                }
                _ => {
                    // Out of start order: the rows so far held whole, to be sorted with the rest.
                    limits.packed -= bytes.len().min(limits.packed);
                    let held: Vec<T> = Stream::<T>::packed(std::mem::take(bytes)).collect();
                    limits.held += held.len();
                    *self = Run::Held(held);
                }
            }
        }
        if let Run::Held(rows) = self {
            limits.held += 1;
            limits.over = limits.held > limits.most;
            rows.push(row);
        }
    }

    /// The rows in start order.
    fn stream(self) -> Stream<T> {
        match self {
            Run::Packed { bytes, .. } => Stream::packed(bytes),
            Run::Held(mut rows) => {
                rows.sort_by_key(|r| r.key());
                Stream::Held(rows.into_iter())
            }
        }
    }
}

/// A [`Run`]'s rows, one at a time.
enum Stream<T> {
    Packed {
        bytes: Vec<u8>,
        at: usize,
        base: Base,
    },
    Held(std::vec::IntoIter<T>),
}

impl<T> Stream<T> {
    fn empty() -> Stream<T> {
        Stream::Held(Vec::new().into_iter())
    }

    fn packed(bytes: Vec<u8>) -> Stream<T> {
        Stream::Packed {
            bytes,
            at: 0,
            base: Base::default(),
        }
    }
}

impl<T: Packable> Iterator for Stream<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match self {
            Stream::Packed { bytes, at, base } => {
                let mut rest = bytes.get(*at..).filter(|r| !r.is_empty())?;
                // Bytes this run packed itself: they read back.
                let row = T::unpack(T::Packed::take(&mut rest)?, *base);
                *at = bytes.len() - rest.len();
                *base = row.base();
                Some(row)
            }
            Stream::Held(rows) => rows.next(),
        }
    }
}

/// The names the other work goes under: graph replays, memsets, and each kind of copy read.
struct WorkNames {
    replay: NameId,
    memset: NameId,
    copies: Vec<(Work, NameId)>,
}

/// The other GPU work in start order, as `EventRows::gpu_work` merges its tables: by
/// `(start, end)`, ties in the order replays, copies, memsets.
pub(super) struct OtherWork {
    replays: Stream<KernelRow>,
    copies: Stream<MemOpRow>,
    memsets: Stream<MemOpRow>,
    names: WorkNames,
    /// The next row of each, in that order.
    heads: [Option<KernelRow>; 3],
    /// Past the largest process number read.
    process_end: u32,
}

impl OtherWork {
    fn new(
        replays: Stream<KernelRow>,
        copies: Stream<MemOpRow>,
        memsets: Stream<MemOpRow>,
        names: WorkNames,
    ) -> OtherWork {
        let mut others = OtherWork {
            replays,
            copies,
            memsets,
            names,
            heads: [None; 3],
            process_end: 0,
        };
        for source in 0..3 {
            others.advance(source);
        }
        others
    }

    /// None: what a fold of the kernels alone merges.
    pub(super) fn none() -> OtherWork {
        let names = WorkNames {
            replay: NO_NAME,
            memset: NO_NAME,
            copies: Vec::new(),
        };
        OtherWork::new(Stream::empty(), Stream::empty(), Stream::empty(), names)
    }

    /// Whether every row's process is below `listed` (numbered as every reader numbers them).
    pub(super) fn processes_below(&self, listed: usize) -> bool {
        (self.process_end as usize) <= listed
    }

    /// The first row's start (the CLI's fold tells the calls' fold of it).
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn first_start(&self) -> Option<crate::model::Ns> {
        self.peek().map(|(_, r)| r.start)
    }

    /// Reads `source`'s next row into its head, as GPU work.
    fn advance(&mut self, source: usize) {
        let names = &self.names;
        let row = match source {
            0 => self.replays.next().map(|mut r| {
                r.work = Work::Replay;
                (r.short_name, r.demangled_name) = (names.replay, names.replay);
                r
            }),
            1 => self.copies.next().map(|op| {
                let work = op.copy_work();
                let name = names
                    .copies
                    .iter()
                    .find(|&&(w, _)| w == work)
                    .map_or(NO_NAME, |&(_, n)| n);
                KernelRow::of_memop(&op, work, name)
            }),
            _ => self
                .memsets
                .next()
                .map(|op| KernelRow::of_memop(&op, Work::Memset, names.memset)),
        };
        if let Some(head) = self.heads.get_mut(source) {
            *head = row;
        }
    }

    /// The next row and its source: the least `(start, end)`, the first source on ties.
    fn peek(&self) -> Option<(usize, &KernelRow)> {
        let mut first: Option<(usize, &KernelRow)> = None;
        for (source, head) in self.heads.iter().enumerate() {
            if let Some(r) = head
                && first.is_none_or(|(_, f)| r.key() < f.key())
            {
                first = Some((source, r));
            }
        }
        first
    }

    /// The next row, taken.
    fn take_next(&mut self) -> Option<KernelRow> {
        let (source, row) = self.peek().map(|(s, r)| (s, *r))?;
        self.advance(source);
        Some(row)
    }
}

/// The other GPU work merged with the kernels as they come: the kernels' source comes first in
/// the merge, so another row goes before a kernel only when it sorts strictly before it.
pub(super) struct Merged {
    others: OtherWork,
}

impl Merged {
    pub(super) fn new(others: OtherWork) -> Merged {
        Merged { others }
    }

    /// Hands `fold` the other rows sorting before `k`, then `k`; `false` once `fold` refuses.
    pub(super) fn kernel(
        &mut self,
        k: &KernelRow,
        fold: &mut impl FnMut(&KernelRow) -> bool,
    ) -> bool {
        let key = k.key();
        while self.others.peek().is_some_and(|(_, o)| o.key() < key) {
            if let Some(o) = self.others.take_next()
                && !fold(&o)
            {
                return false;
            }
        }
        fold(k)
    }

    /// Hands `fold` the other rows after the last kernel.
    pub(super) fn finish(mut self, fold: &mut impl FnMut(&KernelRow) -> bool) -> bool {
        while let Some(o) = self.others.take_next() {
            if !fold(&o) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ns;
    use crate::model::rows::merged_in_start_order;

    fn copy(row: i64, start: Ns, end: Ns, kind: u8) -> MemOpRow {
        MemOpRow {
            row,
            start,
            end,
            device: 0,
            stream: 7,
            process: 0,
            correlation: row as u32,
            bytes: 64 * row as u64,
            kind,
            src_mem: kind % 2,
            dst_mem: 1,
        }
    }

    fn limits(most: usize) -> Limits {
        Limits {
            held: 0,
            most,
            packed: 0,
            over: false,
            process_end: 0,
        }
    }

    /// Rows in start order are held packed; a row out of order turns the run into rows held
    /// whole (counted against `most`), which come back sorted, ties in table order.
    #[test]
    fn a_run_packs_rows_in_start_order_and_sorts_the_others() {
        let rows: Vec<MemOpRow> = (0..1000)
            .map(|i| copy(i, i / 3 * 10, i / 3 * 10 + 5, 1))
            .collect();
        let (mut run, mut l) = (Run::default(), limits(10));
        rows.iter().for_each(|&r| run.push(r, &mut l));
        assert!(matches!(run, Run::Packed { .. }) && !l.over && l.held == 0);
        assert_eq!(run.stream().collect::<Vec<_>>(), rows);

        let mut shuffled = rows.clone();
        shuffled.swap(10, 500);
        let (mut run, mut l) = (Run::default(), limits(2000));
        shuffled.iter().for_each(|&r| run.push(r, &mut l));
        assert!(matches!(run, Run::Held(_)) && !l.over && l.held == 1000 && l.packed == 0);
        let mut want = shuffled.clone();
        want.sort_by_key(|r| r.start);
        assert_eq!(run.stream().collect::<Vec<_>>(), want);

        let (mut run, mut l) = (Run::<MemOpRow>::default(), limits(999));
        shuffled.iter().for_each(|&r| run.push(r, &mut l));
        assert!(l.over, "1000 rows held whole, 999 allowed");
    }

    /// The replays, copies and memsets come out as `EventRows::gpu_work` merges them: by
    /// `(start, end)`, ties in that order of tables, each row as that merge makes it.
    #[test]
    fn the_other_work_merges_as_the_passes_merge_it() {
        let mut strings = Strings::default();
        let works = [Work::Replay, Work::Memset]
            .into_iter()
            .chain((0..3).map(|kind| copy(0, 0, 0, kind).copy_work()));
        for work in works {
            if let Some(name) = work.name() {
                strings.intern(name);
            }
        }
        let replay = strings.intern(REPLAY_NAME);
        let replays: Vec<KernelRow> = (0..300)
            .map(|i| KernelRow {
                row: i,
                start: i / 2 * 7,
                end: i / 2 * 7 + 3,
                graph_id: i as u32,
                work: Work::Replay,
                short_name: replay,
                demangled_name: replay,
                ..KernelRow::default()
            })
            .collect();
        let copies: Vec<MemOpRow> = (0..400)
            .map(|i| copy(i, i / 2 * 5, i / 2 * 5 + 3, (i % 3) as u8))
            .collect();
        let memsets: Vec<MemOpRow> = (0..200).map(|i| copy(i, i * 7, i * 7 + 3, 0)).collect();
        let want: Vec<KernelRow> = merged_in_start_order(vec![
            Box::new(replays.clone().into_iter()),
            Box::new(copies.iter().map(|op| KernelRow::of_copy(op, &strings))),
            Box::new(memsets.iter().map(|op| KernelRow::of_memset(op, &strings))),
        ])
        .collect();

        let mut l = limits(0);
        let mut runs = (Run::default(), Run::default(), Run::default());
        replays.iter().for_each(|&r| runs.0.push(r, &mut l));
        copies.iter().for_each(|&r| runs.1.push(r, &mut l));
        memsets.iter().for_each(|&r| runs.2.push(r, &mut l));
        let names = WorkNames {
            replay,
            memset: work_name(&strings, Work::Memset),
            copies: copies
                .iter()
                .map(|op| (op.copy_work(), work_name(&strings, op.copy_work())))
                .collect(),
        };
        let others = OtherWork::new(runs.0.stream(), runs.1.stream(), runs.2.stream(), names);
        assert_eq!(others.first_start(), want.first().map(|r| r.start));
        let mut got = Vec::new();
        assert!(Merged::new(others).finish(&mut |r| {
            got.push(*r);
            true
        }));
        assert_eq!(got, want);
    }
}
