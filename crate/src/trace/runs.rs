//! A table read in start order from the few runs sorted by start that nsys writes it in.
//!
//! Why: nsys flushes CUPTI and NVTX buffers in turn, so a table is a few runs each sorted by
//! start (the public `mfu_2gpu_before` export's runtime table has six, one going back 290 ms),
//! and an analysis folding rows in start order must not sort (hold) the table. One scan in
//! table order finds the runs ([`SortedRuns`]); a k-way merge ([`Merge`]) then reads each run
//! through a small buffer refilled by `rowid` range, activating a run only once the merge
//! reaches its first start: memory follows the runs live at one instant, not the rows.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::OnceLock;

use rusqlite::Connection;

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
#[derive(Debug, Clone, Copy)]
struct Run<K> {
    first: i64,
    last: i64,
    first_key: K,
}

/// The sorted runs of a table, found by feeding its rows' `rowid` and key in table order.
#[derive(Debug, Clone)]
pub struct SortedRuns<K> {
    /// Emptied once there are more than `max`.
    runs: Vec<Run<K>>,
    /// Runs by first key (table order among equal ones), sorted once for every merge.
    order: OnceLock<Vec<u32>>,
    count: usize,
    max: usize,
    last_key: Option<K>,
    rows: u64,
}

impl<K: Ord + Copy> SortedRuns<K> {
    /// Runs are kept while there are at most `max` (then only counted).
    pub fn new(max: usize) -> SortedRuns<K> {
        SortedRuns {
            runs: Vec::new(),
            order: OnceLock::new(),
            count: 0,
            max,
            last_key: None,
            rows: 0,
        }
    }

    /// The next row in table order.
    pub fn push(&mut self, row: i64, key: K) {
        let continues = self.last_key.is_some_and(|last| key >= last);
        self.last_key = Some(key);
        self.rows += 1;
        if continues {
            if let Some(run) = self.runs.last_mut() {
                run.last = row;
            }
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
            last: row,
            first_key: key,
        });
    }

    /// Runs found.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The most runs kept.
    pub fn max(&self) -> usize {
        self.max
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
    /// range `[first, last]` in `rowid` order (rows the scan did not see must not be read).
    /// Empty when [`SortedRuns::too_many`].
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
        Merge {
            runs: &self.runs,
            order,
            activated: 0,
            heap: BinaryHeap::new(),
            refill: refill.max(1),
            from: i64::MIN,
            read,
        }
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
    next: i64,
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
    /// Runs by first key (table order among equal ones); `activated` of them are live or done.
    order: &'r [u32],
    activated: usize,
    heap: BinaryHeap<Live<T>>,
    refill: usize,
    /// The first `rowid` read (of a table in one run).
    from: i64,
    read: F,
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
            if self.heap.peek().is_some_and(|top| run.first_key > top.key) {
                break;
            }
            self.activated += 1;
            // A refill reads at most `refill` rows into an emptied buffer: it never grows.
            let span = usize::try_from(run.last.saturating_sub(run.first)).unwrap_or(usize::MAX);
            let live = Live {
                key: run.first_key,
                run: i,
                next: run.first.max(self.from),
                last: run.last,
                buffer: VecDeque::with_capacity(self.refill.min(span.saturating_add(1))),
            };
            self.refill_and_push(live)?;
        }
        Ok(())
    }

    /// Refills an emptied run and puts it back in the heap, unless it is done.
    fn refill_and_push(&mut self, mut live: Live<T>) -> Result<()> {
        if live.buffer.is_empty() && live.next <= live.last {
            (self.read)(live.next, live.last, self.refill, &mut live.buffer)?;
            live.next = match live.buffer.back() {
                Some(last) if live.buffer.len() >= self.refill => last.row().saturating_add(1),
                _ => live.last.saturating_add(1),
            };
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
pub fn read_chunk<T>(
    conn: &Connection,
    sql: &str,
    (first, last, limit): (i64, i64, usize),
    out: &mut VecDeque<T>,
    mut decode: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt.query(rusqlite::params![first, last, limit])?;
    while let Some(r) = rows.next()? {
        out.push_back(decode(r)?);
    }
    Ok(())
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

    #[test]
    fn too_many_runs_are_counted_not_kept() {
        let mut runs = SortedRuns::new(2);
        for (row, start) in [(1, 3), (2, 2), (3, 1), (4, 0)] {
            runs.push(row, start);
        }
        assert!(runs.too_many());
        assert_eq!(runs.count(), 4);
        let merged = runs.merge(|_, _, _, _: &mut VecDeque<CallRow>| Ok(()));
        assert_eq!(merged.count(), 0);
    }
}
