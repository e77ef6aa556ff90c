//! A table read in start order from the few runs sorted by start that nsys writes it in.
//!
//! Why: nsys flushes CUPTI and NVTX buffers in turn, so a table is a few runs each sorted by
//! start (the public `mfu_2gpu_before` export's runtime table has six, one going back 290 ms),
//! and an analysis folding rows in start order must not sort (hold) the table. One scan in
//! table order finds the runs ([`SortedRuns`]); a k-way merge ([`Merge`]) then reads each run
//! through a small buffer refilled by `rowid` range, activating a run only once the merge
//! reaches its first start: memory follows the runs live at one instant, not the rows.
//!
//! nsys promises no order (2025.6 release notes), so a table may come in more runs than are worth
//! holding (a reversed table is one run per row). Its rows are then read in slices of keys
//! ([`Slices`]): the scan keeps a systematic sample of the keys, whose quantiles cut the key range
//! into slices of about [`SLICE_ROWS`] rows; each slice is one pass over the table in `rowid`
//! order keeping the rows whose key falls in it, sorted in memory. Memory: one slice; time: one
//! pass per slice.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::OnceLock;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::Ns;
use crate::model::rows::{CallRow, KernelRow, MemOpRow, SyncRow};
use crate::model::{NvtxRow, ProcessIdx, Threads};

/// A row with its place in start order: the merge orders by `(key, row)`.
pub trait Keyed {
    type Key: Ord + Copy;
    fn key(&self) -> Self::Key;
    /// Its `rowid`.
    fn row(&self) -> i64;
}

impl Keyed for KernelRow {
    /// Kernels with equal starts by end (`Kernels::start_order`).
    type Key = (Ns, Ns);
    fn key(&self) -> (Ns, Ns) {
        (self.start, self.end)
    }
    fn row(&self) -> i64 {
        self.row
    }
}

macro_rules! keyed_by_start {
    ($($t:ty),*) => {$(
        impl Keyed for $t {
            type Key = Ns;
            fn key(&self) -> Ns {
                self.start
            }
            fn row(&self) -> i64 {
                self.row
            }
        }
    )*};
}
keyed_by_start!(CallRow, NvtxRow, MemOpRow, SyncRow);

/// A sorted run: inclusive `rowid` range and its first row's key.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Run<K> {
    /// Its first `rowid`: it ends before the next run's first (or at the table's last row).
    first: i64,
    first_key: K,
}

/// The sorted runs of a table, found by feeding its rows' `rowid` and key in table order.
/// (Serialized when a reader of its own scanned the table: `KernelPart`.)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SortedRuns<K> {
    /// Emptied once there are more than `max`.
    runs: Vec<Run<K>>,
    /// The first `rowid` fed that was not above the one before it, and that one: a damaged
    /// b-tree, whose `rowid` ranges would not cover the rows the scan saw.
    #[serde(default)]
    out_of_order: Option<(i64, i64)>,
    /// Runs by first key (table order among equal ones), sorted once for every merge.
    #[serde(skip)]
    order: OnceLock<Vec<u32>>,
    count: usize,
    max: usize,
    last_key: Option<K>,
    rows: u64,
    /// The `rowid`s of the first and last rows fed.
    span: Option<(i64, i64)>,
    /// Keys sampled for slicing a table in too many runs.
    sample: KeySample<K>,
    /// Rows per slice of such a table, about.
    slice_rows: u64,
}

/// Every `stride`-th key fed, at most [`SAMPLE_KEYS`]: when full, every other one is dropped and
/// the stride doubles (a systematic sample of the table, whose quantiles cut it into slices).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeySample<K> {
    keys: Vec<K>,
    stride: u64,
    seen: u64,
}

/// Keys a sample holds at most.
const SAMPLE_KEYS: usize = 1 << 14;
/// Rows per slice of a table in too many runs: the rows one pass sorts in memory (a kernel row
/// is about 64 bytes: 32 MiB).
pub const SLICE_ROWS: u64 = 1 << 19;

impl<K: Ord + Copy> KeySample<K> {
    fn new() -> KeySample<K> {
        KeySample {
            keys: Vec::new(),
            stride: 1,
            seen: 0,
        }
    }

    fn push(&mut self, key: K) {
        if self.on_stride() {
            if self.keys.len() == SAMPLE_KEYS {
                let kept: Vec<K> = self.keys.iter().step_by(2).copied().collect();
                self.keys = kept;
                self.stride *= 2;
            }
            if self.on_stride() {
                self.keys.push(key);
            }
        }
        self.seen += 1;
    }

    /// Whether the next key is the stride's: `stride` is a power of two, so a mask tells (a
    /// division, every row of every table, costs tens of cycles).
    fn on_stride(&self) -> bool {
        self.seen & self.stride.wrapping_sub(1) == 0
    }

    /// Ascending keys cutting the sampled rows into slices of about `rows` rows: slice `i` holds
    /// the keys from bound `i - 1` (inclusive; the least key for the first) to bound `i`
    /// (exclusive; past the greatest for the last).
    fn bounds(&self, rows: u64) -> Vec<K> {
        let mut keys = self.keys.clone();
        keys.sort_unstable();
        let every = usize::try_from((rows / self.stride).max(1)).unwrap_or(usize::MAX);
        let mut bounds: Vec<K> = keys.iter().skip(every).step_by(every).copied().collect();
        bounds.dedup();
        bounds
    }
}

impl<K: Ord + Copy> SortedRuns<K> {
    /// Runs are kept while there are at most `max` (then only counted).
    pub fn new(max: usize) -> SortedRuns<K> {
        SortedRuns {
            runs: Vec::new(),
            out_of_order: None,
            order: OnceLock::new(),
            count: 0,
            max,
            last_key: None,
            rows: 0,
            span: None,
            sample: KeySample::new(),
            slice_rows: SLICE_ROWS,
        }
    }

    /// Reads a table in too many runs in slices of about `rows` rows (tests take small ones).
    #[cfg(test)]
    pub fn with_slice_rows(mut self, rows: u64) -> SortedRuns<K> {
        self.slice_rows = rows.max(1);
        self
    }

    /// The next row in table order.
    pub fn push(&mut self, row: i64, key: K) {
        let continues = self.last_key.is_some_and(|last| key >= last);
        self.last_key = Some(key);
        self.rows += 1;
        if let Some((_, before)) = self.span
            && row <= before
            && self.out_of_order.is_none()
        {
            self.out_of_order = Some((before, row));
        }
        self.span = Some(self.span.map_or((row, row), |(first, _)| (first, row)));
        self.sample.push(key);
        if continues {
            return;
        }
        self.count += 1;
        self.order = OnceLock::new();
        if self.count > self.max {
            self.runs = Vec::new();
            return;
        }
        self.runs.push(Run {
            first: row,
            first_key: key,
        });
    }

    /// Gives back the room the runs' list grew past its length (the scan is over: no run
    /// comes after).
    pub fn shrink(&mut self) {
        self.runs.shrink_to_fit();
    }

    /// Bytes the runs hold: their bounds, the order a merge reads them in (built on the first
    /// merge) and the key sample.
    pub fn held_bytes(&self) -> usize {
        let run = std::mem::size_of::<Run<K>>() + std::mem::size_of::<u32>();
        self.runs.capacity() * run + self.sample.keys.capacity() * std::mem::size_of::<K>()
    }

    /// The first `rowid` fed that was not above the one before it (`(before, row)`): rows
    /// read by `rowid` range would then be missed or read twice, so the table is refused.
    pub fn out_of_order(&self) -> Option<(i64, i64)> {
        self.out_of_order
    }

    /// Runs found.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The `rowid`s of the first and last row of a table in one sorted run: its rows in start
    /// order are those of any `rowid` ranges that cover it, in order.
    pub fn one_run(&self) -> Option<(i64, i64)> {
        match self.runs.as_slice() {
            [run] if self.count == 1 => self.span.map(|(_, last)| (run.first, last)),
            _ => None,
        }
    }

    /// More than `max` runs: none kept.
    pub fn too_many(&self) -> bool {
        self.count > self.max
    }

    /// Rows fed.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The rows in start order, `read` filling a buffer with at most `limit` rows of `rowid`
    /// range `[first, last]` in `rowid` order (rows the scan did not see must not be read); in
    /// slices ([`Slices`]) when [`SortedRuns::too_many`].
    pub fn merge<T, F>(&self, read: F) -> Merge<'_, T, F>
    where
        T: Keyed<Key = K>,
        F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
    {
        let refill = if self.runs.len() == 1 {
            CHUNK_ROWS
        } else {
            RUN_ROWS
        };
        self.merge_by(refill, read)
    }

    /// [`SortedRuns::merge`] from the first row at or after `rowid` `from` of a table in one
    /// run (the rows after a cached prefix); of a table in several, it would skip rows of
    /// every run, so they are read from their first.
    pub fn merge_from<T, F>(&self, from: i64, read: F) -> Merge<'_, T, F>
    where
        T: Keyed<Key = K>,
        F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
    {
        let mut merge = self.merge(read);
        if self.runs.len() == 1 {
            merge.from = from;
        }
        merge
    }

    /// [`SortedRuns::merge`] refilling `refill` rows at a time.
    fn merge_by<T, F>(&self, refill: usize, read: F) -> Merge<'_, T, F>
    where
        T: Keyed<Key = K>,
        F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
    {
        let order = self.order.get_or_init(|| {
            let mut order: Vec<u32> = (0..self.runs.len() as u32).collect();
            order.sort_by_key(|&i| self.runs[i as usize].first_key);
            order
        });
        let slices = match (self.too_many(), self.span) {
            (true, Some(span)) => Some(Slices::new(self.sample.bounds(self.slice_rows), span)),
            _ => None,
        };
        Merge {
            runs: &self.runs,
            end: self.span.map_or(i64::MIN, |(_, last)| last),
            order,
            activated: 0,
            heap: BinaryHeap::new(),
            refill: refill.max(1),
            from: i64::MIN,
            read,
            slices,
        }
    }
}

/// A table in too many runs read slice by slice: each slice one pass over its `rowid` span,
/// keeping the rows whose key falls in the slice, sorted by `(key, rowid)`.
struct Slices<T: Keyed> {
    /// Upper bounds of the slices but the last ([`KeySample::bounds`]).
    bounds: Vec<T::Key>,
    /// The next slice to read.
    next: usize,
    /// `rowid`s of the table's first and last rows.
    span: (i64, i64),
    /// The current slice's rows not yet handed out.
    rows: VecDeque<T>,
}

impl<T: Keyed> Slices<T> {
    fn new(bounds: Vec<T::Key>, span: (i64, i64)) -> Slices<T> {
        Slices {
            bounds,
            next: 0,
            span,
            rows: VecDeque::new(),
        }
    }

    /// Whether every slice has been read.
    fn done(&self) -> bool {
        self.next > self.bounds.len()
    }

    /// Reads the next slice with `read` ([`SortedRuns::merge`]'s).
    fn read_next<F>(&mut self, read: &mut F) -> Result<()>
    where
        F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
    {
        let i = self.next;
        self.next += 1;
        let low = i.checked_sub(1).and_then(|j| self.bounds.get(j)).copied();
        let high = self.bounds.get(i).copied();
        let inside = |k: T::Key| low.is_none_or(|l| k >= l) && high.is_none_or(|h| k < h);
        let mut kept: Vec<T> = Vec::new();
        let mut chunk = VecDeque::with_capacity(CHUNK_ROWS);
        let (mut next, last) = self.span;
        while next <= last {
            chunk.clear();
            read(next, last, CHUNK_ROWS, &mut chunk)?;
            let after = chunk.back().map(Keyed::row).and_then(|r| r.checked_add(1));
            let full = chunk.len() >= CHUNK_ROWS;
            kept.extend(chunk.drain(..).filter(|row| inside(row.key())));
            match after {
                Some(after) if full => next = after,
                _ => break,
            }
        }
        kept.sort_by_key(|row| (row.key(), row.row()));
        self.rows = kept.into();
        Ok(())
    }
}

/// Rows read per refill of a table in one run.
const CHUNK_ROWS: usize = 4096;
/// Rows read per refill of each run of a table in several.
const RUN_ROWS: usize = 512;

/// A run being read: where its next refill starts and the rows read ahead.
struct Live<T: Keyed> {
    /// The key of the first buffered row.
    key: T::Key,
    run: usize,
    /// `None` once the run is read to its end.
    next: Option<i64>,
    last: i64,
    buffer: VecDeque<T>,
}

impl<T: Keyed> Live<T> {
    fn rank(&self) -> (T::Key, usize) {
        (self.key, self.run)
    }
}

impl<T: Keyed> PartialEq for Live<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl<T: Keyed> Eq for Live<T> {}
impl<T: Keyed> PartialOrd for Live<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
/// Reversed: the heap's top is the least key, ties to the earlier run (table order).
impl<T: Keyed> Ord for Live<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank().cmp(&self.rank())
    }
}

/// The rows of a table's runs in `(key, rowid)` order ([`SortedRuns::merge`]); an `Err` item
/// is a failed read.
pub struct Merge<'r, T: Keyed, F> {
    runs: &'r [Run<T::Key>],
    /// The table's last `rowid` fed: where the last run ends.
    end: i64,
    /// Runs by first key (table order among equal ones); `activated` of them are live or done.
    order: &'r [u32],
    activated: usize,
    heap: BinaryHeap<Live<T>>,
    refill: usize,
    /// The first `rowid` read (of a table in one run).
    from: i64,
    read: F,
    /// A table in too many runs, read in slices instead.
    slices: Option<Slices<T>>,
}

impl<T, F> Merge<'_, T, F>
where
    T: Keyed,
    F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
{
    /// Starts reading every run whose first key the merge has reached.
    fn activate_due(&mut self) -> Result<()> {
        while let Some(&i) = self.order.get(self.activated) {
            let (i, run) = (i as usize, self.runs[i as usize]);
            let last = self.runs.get(i + 1).map_or(self.end, |next| next.first - 1);
            if self.heap.peek().is_some_and(|top| run.first_key > top.key) {
                break;
            }
            self.activated += 1;
            // A refill reads at most `refill` rows into an emptied buffer: it never grows.
            let span = usize::try_from(last.saturating_sub(run.first)).unwrap_or(usize::MAX);
            let live = Live {
                key: run.first_key,
                run: i,
                next: Some(run.first.max(self.from)),
                last,
                buffer: VecDeque::with_capacity(self.refill.min(span.saturating_add(1))),
            };
            self.refill_and_push(live)?;
        }
        Ok(())
    }

    /// Refills an emptied run and puts it back in the heap, unless it is done.
    fn refill_and_push(&mut self, mut live: Live<T>) -> Result<()> {
        if live.buffer.is_empty()
            && let Some(next) = live.next.filter(|&next| next <= live.last)
        {
            (self.read)(next, live.last, self.refill, &mut live.buffer)?;
            // `read_chunk` hands out rows at or above `next` only: each refill advances.
            let after = live
                .buffer
                .back()
                .map(Keyed::row)
                .and_then(|r| r.checked_add(1));
            live.next = after.filter(|_| live.buffer.len() >= self.refill);
        }
        if let Some(head) = live.buffer.front() {
            live.key = head.key();
            self.heap.push(live);
        }
        Ok(())
    }
}

impl<T, F> Iterator for Merge<'_, T, F>
where
    T: Keyed,
    F: FnMut(i64, i64, usize, &mut VecDeque<T>) -> Result<()>,
{
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if let Some(slices) = &mut self.slices {
            while slices.rows.is_empty() && !slices.done() {
                if let Err(e) = slices.read_next(&mut self.read) {
                    slices.next = usize::MAX;
                    return Some(Err(e));
                }
            }
            return slices.rows.pop_front().map(Ok);
        }
        if self.activated < self.order.len()
            && let Err(e) = self.activate_due()
        {
            return Some(Err(e));
        }
        // The least run stays in the heap while it has rows (re-sifted, not moved).
        let mut top = self.heap.peek_mut()?;
        let row = top.buffer.pop_front()?;
        match top.buffer.front().map(Keyed::key) {
            Some(key) => top.key = key,
            None => {
                let live = PeekMut::pop(top);
                if let Err(e) = self.refill_and_push(live) {
                    return Some(Err(e));
                }
            }
        }
        Some(Ok(row))
    }
}

/// Reads the rows of `sql` (a `SELECT … WHERE rowid BETWEEN ?1 AND ?2 … ORDER BY rowid LIMIT
/// ?3`) for `[first, last]` and `limit`, decoded, into `out`.
///
/// Every row read lies in `[first, last]` above the one before it, or the read fails as a
/// damaged database: a b-tree whose `rowid`s are out of order could otherwise hand a refill a
/// row before where it started, and the merge would read the same rows again for ever.
pub fn read_chunk<T: Keyed>(
    conn: &Connection,
    sql: &str,
    (first, last, limit): (i64, i64, usize),
    out: &mut VecDeque<T>,
    mut decode: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt.query(rusqlite::params![first, last, limit])?;
    let mut before: Option<i64> = None;
    while let Some(r) = rows.next()? {
        let row = decode(r)?;
        let at = row.row();
        if !(first..=last).contains(&at) || before.is_some_and(|b| at <= b) {
            return Err(rowids_out_of_order(before.unwrap_or(first), at));
        }
        before = Some(at);
        out.push_back(row);
    }
    Ok(())
}

/// The error a read by `rowid` range meets when the b-tree hands out `row` after `before`.
fn rowids_out_of_order(before: i64, row: i64) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
        Some(format!(
            "rowid {row} comes after rowid {before}: the table's b-tree is out of order"
        )),
    )
}

/// The thread of `globalTid` and its process, as interned by a scan (0 and 0 if it was not).
pub fn thread_of(threads: &Threads, gtid: i64) -> (u32, ProcessIdx) {
    match threads.find(gtid) {
        Some(t) => (t, threads.process.get(t as usize).copied().unwrap_or(0)),
        None => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(row: i64, start: Ns) -> CallRow {
        CallRow {
            row,
            start,
            end: start + 1,
            thread: 0,
            process: 0,
            correlation: 0,
            name: 0,
        }
    }

    /// A table in three runs, one going back, read through buffers of a few rows.
    #[test]
    fn merged_runs_come_in_start_order_ties_in_table_order() {
        let table: Vec<CallRow> = [10, 20, 30, 40, 5, 20, 35, 20, 20, 50]
            .iter()
            .enumerate()
            .map(|(i, &s)| call(i as i64 + 1, s))
            .collect();
        let mut runs = SortedRuns::new(8);
        for c in &table {
            runs.push(c.row, c.start);
        }
        assert_eq!((runs.count(), runs.rows()), (3, 10));
        let mut reads = 0;
        let merged: Vec<(Ns, i64)> = runs
            .merge_by(2, |first, last, limit, out: &mut VecDeque<CallRow>| {
                reads += 1;
                let rows = table.iter().filter(|c| (first..=last).contains(&c.row));
                out.extend(rows.take(limit).copied());
                Ok(())
            })
            .map(|c| c.map(|c| (c.start, c.row)))
            .collect::<Result<_>>()
            .expect("merge");
        let mut sorted: Vec<(Ns, i64)> = table.iter().map(|c| (c.start, c.row)).collect();
        sorted.sort();
        assert_eq!(merged, sorted);
        // Each run is read two rows at a time: two refills each.
        assert_eq!(reads, 6);
    }

    /// A table in more runs than kept (reversed, with ties and a run going forward) comes in
    /// start order, ties in table order, read in slices of about three rows: one pass per slice
    /// over the whole table, and no run held.
    #[test]
    fn a_table_in_too_many_runs_is_read_in_slices_in_start_order() {
        let starts = [50, 40, 40, 30, 20, 20, 25, 26, 27, 10, 5, 5, 1];
        let table: Vec<CallRow> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| call(i as i64 + 1, s))
            .collect();
        let mut runs = SortedRuns::new(2).with_slice_rows(3);
        for c in &table {
            runs.push(c.row, c.start);
        }
        assert!(runs.too_many());
        assert!(runs.runs.is_empty(), "no run is held");
        let mut passes = 0;
        let merged: Vec<(Ns, i64)> = runs
            .merge(|first, last, limit, out: &mut VecDeque<CallRow>| {
                passes += usize::from(first == 1);
                let rows = table.iter().filter(|c| (first..=last).contains(&c.row));
                out.extend(rows.take(limit).copied());
                Ok(())
            })
            .map(|c| c.map(|c| (c.start, c.row)))
            .collect::<Result<_>>()
            .expect("slices");
        let mut sorted: Vec<(Ns, i64)> = table.iter().map(|c| (c.start, c.row)).collect();
        sorted.sort();
        assert_eq!(merged, sorted);
        assert_eq!(
            passes,
            runs.sample.bounds(3).len() + 1,
            "one pass per slice"
        );
        assert!(passes >= 4, "{passes} slices of about 3 of 13 rows");
    }

    /// A `rowid` not above the one before it (a damaged b-tree) is what the scan reports.
    #[test]
    fn a_rowid_not_above_the_one_before_is_reported() {
        let mut runs = SortedRuns::new(8);
        for (row, start) in [(1, 10), (2, 20), (7, 30), (5, 40), (9, 50)] {
            runs.push(row, start);
        }
        assert_eq!(runs.out_of_order(), Some((7, 5)));
    }

    /// A run ending at the greatest `rowid` is read to its end once, not for ever.
    #[test]
    fn a_run_ending_at_the_last_possible_rowid_ends() {
        let table = [
            call(i64::MAX - 2, 1),
            call(i64::MAX - 1, 2),
            call(i64::MAX, 3),
        ];
        let mut runs = SortedRuns::new(8);
        for c in &table {
            runs.push(c.row, c.start);
        }
        let mut reads = 0;
        let merged: Vec<i64> = runs
            .merge_by(1, |first, last, limit, out: &mut VecDeque<CallRow>| {
                reads += 1;
                assert!(reads < 10, "the merge reads again and again");
                let rows = table.iter().filter(|c| (first..=last).contains(&c.row));
                out.extend(rows.take(limit).copied());
                Ok(())
            })
            .map(|c| c.map(|c| c.start))
            .collect::<Result<_>>()
            .expect("merge");
        assert_eq!(merged, [1, 2, 3]);
    }

    /// A failed read ends the slices with its error.
    #[test]
    fn a_failed_slice_read_is_an_error_once() {
        let mut runs = SortedRuns::new(1);
        for (row, start) in [(1, 3), (2, 2), (3, 1)] {
            runs.push(row, start);
        }
        let mut merged = runs.merge(|_, _, _, _: &mut VecDeque<CallRow>| {
            Err(crate::error::Error::Internal {
                detail: "read failed".into(),
            })
        });
        assert!(matches!(merged.next(), Some(Err(_))));
        assert!(merged.next().is_none());
    }
}
