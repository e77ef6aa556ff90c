//! The rows [`super::FileRows`] read, kept as bytes up to a budget, so that the passes after
//! the first read them back from memory instead of the file.
//!
//! Why: the deeper views read each table several times (Root cause twice the kernels, three
//! times the calls); in the page a row read from the file through SQLite costs about twenty
//! times one unpacked from memory. The budget bounds the memory: a table whose rows do not fit
//! keeps the rows in start order that fit (a prefix) and a pass reads the rest from the file —
//! when the table is one sorted run (every real export), since only there does the rest start
//! at a `rowid`. A table in several runs is kept only whole.
//!
//! One pass at a time fills a table's cache (the one that reaches its end first); others
//! read what is there and go on from the file. Each row is packed against the previous one
//! ([`crate::model::packed`]), so a pass always reads the cache from its first row.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::packed::{Base, Fields, Out, Packable};

/// The cache's bytes are allocated in blocks of this size (a growing buffer would be copied).
pub(crate) const BLOCK_BYTES: usize = 1 << 20;
/// Rows unpacked at a time by a pass reading the cache back.
const REPLAY_ROWS: u64 = 512;

/// Bytes the tables' caches may still take, shared by the scan's reader threads (natively the
/// kernel table is scanned on a thread of its own, `FileScan`).
#[derive(Debug, Default)]
pub(crate) struct Budget(AtomicUsize);

impl Budget {
    pub(crate) fn new(bytes: usize) -> Budget {
        Budget(AtomicUsize::new(bytes))
    }

    pub(crate) fn left(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Takes up to `bytes`, as many as are left: how many it took.
    pub(crate) fn take_up_to(&self, bytes: usize) -> usize {
        let mut took = 0;
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                took = left.min(bytes);
                Some(left - took)
            });
        took
    }

    /// Takes `bytes` if that many are left.
    fn take(&self, bytes: usize) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }

    pub(crate) fn give(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }
}

impl Clone for Budget {
    fn clone(&self) -> Budget {
        Budget::new(self.left())
    }
}

/// The bytes every scan holding this budget may keep of its rows, all of them together: the
/// page opens the rank files of one run against one budget, so eight exports keep what one
/// may, not eight times that. A scan gives back what it kept when it is dropped.
#[derive(Debug, Clone)]
pub struct RowBudget(pub(crate) Arc<Budget>);

impl RowBudget {
    pub fn new(bytes: usize) -> RowBudget {
        RowBudget(Arc::new(Budget::new(bytes)))
    }

    /// Bytes left to keep.
    pub fn left(&self) -> usize {
        self.0.left()
    }

    /// Takes up to `bytes` from what is left (room another file's views need).
    pub fn withhold(&self, bytes: usize) {
        self.0.take_up_to(bytes);
    }
}

/// The row budget of the traces open together in one instance (the page's rank files), and
/// the views' room it was set under: the first trace of a batch sets it ([`row_budget`]); each
/// trace opened beside others shares it, less the extra room its views need when it is the
/// larger file, and less its own state, a sixteenth of its size: its tables' runs (charged to
/// the budget, but held whatever is left of it) and what a view over several traces (the
/// Drill-down over every rank file) holds of each at once, 28 MiB per 445 MiB rank file
/// measured in the page. The first trace of a batch of several, dropped together, withholds
/// the others' state up front, so that its rows leave them room.
#[derive(Debug, Clone)]
pub struct SharedBudget {
    budget: RowBudget,
    room: usize,
    /// Traces of the batch still to open whose state is withheld already.
    reserved: usize,
}

impl SharedBudget {
    /// The budget the first of a batch of `traces`, of `file_bytes` (the others taken as
    /// large), sets with `used` bytes already taken.
    pub fn first(file_bytes: u64, used: usize, traces: usize) -> SharedBudget {
        SharedBudget {
            budget: RowBudget::new(SharedBudget::first_room(file_bytes, used, traces)),
            room: view_room(file_bytes),
            reserved: traces.saturating_sub(1),
        }
    }

    /// What the first of a batch of `traces` could keep: [`row_budget`] less the others' state.
    pub fn first_room(file_bytes: u64, used: usize, traces: usize) -> usize {
        let others = state(file_bytes).saturating_mul(traces.saturating_sub(1));
        row_budget(file_bytes, used).saturating_sub(others)
    }

    /// The budget of a trace of `file_bytes` opened beside the others, its withheld room taken.
    pub fn open_beside(&mut self, file_bytes: u64) -> RowBudget {
        self.budget.withhold(self.withheld(file_bytes));
        self.room = self.room.max(view_room(file_bytes));
        self.reserved = self.reserved.saturating_sub(1);
        self.budget.clone()
    }

    /// What a trace of `file_bytes` opened beside the others could keep (nothing withheld).
    pub fn room_beside(&self, file_bytes: u64) -> usize {
        self.budget.left().saturating_sub(self.withheld(file_bytes))
    }

    fn withheld(&self, file_bytes: u64) -> usize {
        let own = match self.reserved {
            0 => state(file_bytes),
            _ => 0,
        };
        view_room(file_bytes)
            .saturating_sub(self.room)
            .saturating_add(own)
    }

    /// The budget itself (the first trace's).
    pub fn budget(&self) -> RowBudget {
        self.budget.clone()
    }
}

/// What a trace of `file_bytes` holds besides its kept rows while others are open
/// ([`SharedBudget`]).
fn state(file_bytes: u64) -> usize {
    usize::try_from(file_bytes / 16).unwrap_or(usize::MAX)
}

/// One table's cached rows: its first `rows` in start order.
#[derive(Debug, Default, Clone)]
pub(crate) struct TableCache {
    blocks: Vec<Vec<u8>>,
    /// The rows before each block: where a prefix of whole blocks ends.
    starts: Vec<u64>,
    rows: u64,
    /// Every row of the table is here.
    complete: bool,
    /// The budget ran out: no pass adds rows any more.
    closed: bool,
    /// A pass is adding rows.
    filling: bool,
}

impl TableCache {
    /// Forgets the rows, giving their bytes back to `budget`.
    pub(crate) fn clear(&mut self, budget: &Budget) {
        budget.give(self.blocks.len() * BLOCK_BYTES);
        self.blocks = Vec::new();
        self.starts = Vec::new();
        self.rows = 0;
        self.complete = false;
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BYTES
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether every row of the table is held.
    pub(crate) fn complete(&self) -> bool {
        self.complete
    }

    /// Whether the budget ran out while rows were added: a row was not kept.
    pub(crate) fn closed(&self) -> bool {
        self.closed
    }

    /// Adds `row`, packed against `base` (then moved to it); `false` when the budget is spent
    /// (or the row does not pack), the row not added.
    fn push<T: Packable>(&mut self, row: &T, base: &mut Base, budget: &Budget) -> bool {
        let mut out = Out::default();
        row.pack(*base).put(&mut out);
        let Some(bytes) = out.bytes() else {
            return false;
        };
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.len() + bytes.len() <= BLOCK_BYTES);
        if !fits {
            if !budget.take(BLOCK_BYTES) {
                return false;
            }
            self.blocks.push(Vec::with_capacity(BLOCK_BYTES));
            self.starts.push(self.rows);
        }
        if let Some(block) = self.blocks.last_mut() {
            block.extend_from_slice(bytes);
        }
        self.rows += 1;
        *base = row.base();
        true
    }
}

impl TableCache {
    /// Rewrites every held row through `fix`, so rows kept by a reader that numbered something
    /// its own way (the kernel table's processes, read on a thread of its own) read back as the
    /// scan numbers it. Each block is freed once read; a row that no longer fits ends the cache
    /// there (it keeps a prefix, as when the budget runs out).
    pub(crate) fn rewrite<T: Packable>(
        &mut self,
        budget: &Budget,
        mut fix: impl FnMut(&mut T),
    ) -> Result<()> {
        let blocks = std::mem::take(&mut self.blocks);
        self.starts.clear();
        let complete = std::mem::replace(&mut self.complete, false);
        self.rows = 0;
        let (mut read, mut write) = (Base::default(), Base::default());
        for block in blocks {
            budget.give(BLOCK_BYTES);
            let mut rest = &block[..];
            while !rest.is_empty() {
                let packed = T::Packed::take(&mut rest).ok_or_else(unreadable)?;
                let mut row = T::unpack(packed, read);
                read = row.base();
                fix(&mut row);
                if !self.push(&row, &mut write, budget) {
                    self.closed = true;
                    return Ok(());
                }
            }
        }
        self.complete = complete;
        Ok(())
    }
}

/// A table's cache as it crosses from the reader that filled it to another instance (the
/// page's reader worker to its analysis worker): the blocks travel apart, as they are.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CacheShape {
    starts: Vec<u64>,
    rows: u64,
    complete: bool,
    closed: bool,
}

impl TableCache {
    /// The cache as its shape and its blocks.
    pub(crate) fn into_parts(self) -> (CacheShape, Vec<Vec<u8>>) {
        let shape = CacheShape {
            starts: self.starts,
            rows: self.rows,
            complete: self.complete,
            closed: self.closed,
        };
        (shape, self.blocks)
    }

    /// The cache [`TableCache::into_parts`] split, whole again from `blocks`, its first
    /// blocks or all of them: a receiver takes only what its budget keeps
    /// ([`TableCache::blocks_within`]) and leaves the rest uncopied (a prefix of the table, as
    /// when the budget runs out while a scan fills it).
    pub(crate) fn from_parts(shape: CacheShape, blocks: Vec<Vec<u8>>) -> Result<TableCache> {
        let CacheShape {
            mut starts,
            mut rows,
            mut complete,
            mut closed,
        } = shape;
        let whole = blocks.len() <= starts.len()
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts.last().is_none_or(|&s| s <= rows)
            && blocks.iter().all(|b| b.len() <= BLOCK_BYTES);
        if !whole {
            return Err(Error::Internal {
                detail: format!(
                    "a table's kept rows came back malformed: {} blocks, {} starts",
                    blocks.len(),
                    starts.len()
                ),
            });
        }
        if let Some(&prefix) = starts.get(blocks.len()) {
            rows = prefix;
            starts.truncate(blocks.len());
            complete = false;
            closed = true;
        }
        Ok(TableCache {
            blocks,
            starts,
            rows,
            complete,
            closed,
            filling: false,
        })
    }

    /// How many blocks of kept rows `bytes` of budget take.
    pub(crate) fn blocks_within(bytes: usize) -> usize {
        bytes / BLOCK_BYTES
    }

    /// Takes the blocks, filled against another budget, from `budget` as far as it allows: a
    /// cache whose blocks do not all fit keeps those that do (a prefix of the table, as when
    /// the budget runs out while a scan fills it).
    pub(crate) fn charge(&mut self, budget: &Budget) {
        let kept = (0..self.blocks.len())
            .take_while(|_| budget.take(BLOCK_BYTES))
            .count();
        if let Some(&rows) = self.starts.get(kept) {
            self.rows = rows;
            self.blocks.truncate(kept);
            self.starts.truncate(kept);
            self.complete = false;
            self.closed = true;
        }
    }
}

/// A table's cache filled by the file's scan, which reads the table in `rowid` order: the
/// rows are in start order only if the table turns out to be one sorted run, known at its end
/// ([`ScanFill::finish`]).
pub(crate) struct ScanFill<'c> {
    cache: &'c mut TableCache,
    budget: &'c Budget,
    base: Base,
    on: bool,
}

impl<'c> ScanFill<'c> {
    /// Fills `cache` (empty) if `on`.
    pub(crate) fn new(cache: &'c mut TableCache, budget: &'c Budget, on: bool) -> Self {
        ScanFill {
            cache,
            budget,
            base: Base::default(),
            on,
        }
    }

    /// [`ScanFill::new`] going on from where [`ScanFill::pause`] left `cache`.
    pub(crate) fn resume(
        cache: &'c mut TableCache,
        budget: &'c Budget,
        (base, on): (Base, bool),
    ) -> Self {
        ScanFill {
            cache,
            budget,
            base,
            on,
        }
    }

    /// Where the fill stands, for [`ScanFill::resume`].
    pub(crate) fn pause(self) -> (Base, bool) {
        (self.base, self.on)
    }

    /// The next row in table order.
    pub(crate) fn push<T: Packable>(&mut self, row: &T) {
        if self.on && !self.cache.push(row, &mut self.base, self.budget) {
            self.on = false;
            self.cache.closed = true;
        }
    }

    /// The table read: kept if it is `one_run` (whole if every row fitted), else forgotten.
    pub(crate) fn finish(self, one_run: bool) {
        if !one_run {
            self.cache.clear(self.budget);
        } else if self.on {
            self.cache.complete = true;
        }
    }
}

/// A pass over a table: the cached rows, then the file's from where they end, adding those to
/// the cache while it may.
pub(crate) struct Cached<'c, T, I, F> {
    cache: &'c RefCell<TableCache>,
    budget: &'c Budget,
    /// The table is one sorted run: a prefix of it can be read back, the rest read after it.
    one_run: bool,
    /// Where the replay stands: block, offset, rows read back, the last row's base.
    block: usize,
    at: usize,
    replayed: u64,
    base: Base,
    /// The last row read back's `rowid`.
    last_row: Option<i64>,
    /// Rows read back, not yet handed out.
    buffer: VecDeque<T>,
    /// Opens the file's rows after a `rowid` (`None`: from the first).
    open: Option<F>,
    file: Option<I>,
    /// This pass adds the rows it reads from the file, packed against `fill_base`.
    filling: bool,
    fill_base: Base,
}

impl<'c, T, I, F> Cached<'c, T, I, F>
where
    T: Packable,
    I: Iterator<Item = Result<T>>,
    F: FnOnce(Option<i64>) -> I,
{
    pub(crate) fn new(
        cache: &'c RefCell<TableCache>,
        budget: &'c Budget,
        one_run: bool,
        open: F,
    ) -> Self {
        Cached {
            cache,
            budget,
            one_run,
            block: 0,
            at: 0,
            replayed: 0,
            base: Base::default(),
            last_row: None,
            buffer: VecDeque::new(),
            open: Some(open),
            file: None,
            filling: false,
            fill_base: Base::default(),
        }
    }

    /// This pass reads back the rows kept and stops there: it neither reads the file nor adds
    /// to the cache, which more rows may still fill (the page's reader sweeps the kernels it kept
    /// before it reads on). A pass that met the file's end would mark the cache whole.
    pub(crate) fn kept_only(mut self) -> Self {
        self.open = None;
        self
    }

    /// The next cached row, if this pass may read the cache and has not read all of it.
    fn replay(&mut self) -> Option<Result<T>> {
        if self.buffer.is_empty()
            && let Err(e) = self.read_back()
        {
            return Some(Err(e));
        }
        self.buffer.pop_front().map(Ok)
    }

    /// Unpacks the next [`REPLAY_ROWS`] cached rows (fewer at the end) into the buffer: one
    /// borrow of the cache for them all.
    fn read_back(&mut self) -> Result<()> {
        let cell = self.cache;
        let cache = cell.borrow();
        if !(self.one_run || cache.complete) {
            return Ok(());
        }
        for _ in 0..(cache.rows - self.replayed).min(REPLAY_ROWS) {
            // A block is done once a later one exists (the filling pass may add to the last).
            let Some(mut block) = cache.blocks.get(self.block) else {
                break;
            };
            if self.at >= block.len() {
                (self.block, self.at) = (self.block + 1, 0);
                match cache.blocks.get(self.block) {
                    Some(next) => block = next,
                    None => break,
                }
            }
            let mut rest = block.get(self.at..).unwrap_or_default();
            let packed = T::Packed::take(&mut rest).ok_or_else(unreadable)?;
            self.at = block.len() - rest.len();
            let row = T::unpack(packed, self.base);
            self.base = row.base();
            self.last_row = Some(self.base.row);
            self.replayed += 1;
            self.buffer.push_back(row);
        }
        Ok(())
    }

    /// Past the cached rows: opens the file after the last one, filling the cache if no other
    /// pass is and there is room; `None` when the cache held the whole table.
    fn open_file(&mut self) -> Option<I> {
        let open = self.open.take()?;
        let cell = self.cache;
        let mut cache = cell.borrow_mut();
        if cache.complete && self.replayed == cache.rows {
            return None;
        }
        // Only a pass that read every cached row may add to them (a table in several runs
        // only from its first row).
        let adds = self.replayed == cache.rows && (self.one_run || cache.rows == 0);
        if adds && !cache.filling && !cache.closed {
            cache.filling = true;
            self.filling = true;
            self.fill_base = self.base;
        }
        Some(open(self.last_row))
    }

    /// Adds `row` to the cache, or stops filling when the budget is spent.
    fn add(&mut self, row: &T) {
        let cell = self.cache;
        let mut cache = cell.borrow_mut();
        if !cache.push(row, &mut self.fill_base, self.budget) {
            self.stop(&mut cache, true);
        }
    }

    /// Stops adding rows (`closed`: for good). A table in several runs keeps its rows only
    /// whole.
    fn stop(&mut self, cache: &mut TableCache, closed: bool) {
        if !self.filling {
            return;
        }
        self.filling = false;
        cache.filling = false;
        cache.closed |= closed;
        if !self.one_run && !cache.complete {
            cache.clear(self.budget);
        }
    }
}

fn unreadable() -> Error {
    Error::Internal {
        detail: "a cached row does not read back".into(),
    }
}

impl<T, I, F> Iterator for Cached<'_, T, I, F>
where
    T: Packable,
    I: Iterator<Item = Result<T>>,
    F: FnOnce(Option<i64>) -> I,
{
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if self.file.is_none() {
            if let Some(row) = self.replay() {
                return Some(row);
            }
            self.file = Some(self.open_file()?);
        }
        let next = self.file.as_mut()?.next();
        match &next {
            Some(Ok(row)) if self.filling => self.add(row),
            Some(Err(_)) => {
                let cell = self.cache;
                self.stop(&mut cell.borrow_mut(), false);
            }
            None if self.filling => {
                let cell = self.cache;
                let mut cache = cell.borrow_mut();
                cache.complete = true;
                self.stop(&mut cache, false);
            }
            _ => {}
        }
        next
    }
}

impl<T, I, F> Drop for Cached<'_, T, I, F> {
    fn drop(&mut self) {
        if !self.filling {
            return;
        }
        let mut cache = self.cache.borrow_mut();
        cache.filling = false;
        if !self.one_run && !cache.complete {
            cache.clear(self.budget);
        }
    }
}

/// The memory an open export is read in, at most: the page's wasm instance and, natively, the
/// CLI keep under it whatever the file's size.
pub const READ_MEMORY: usize = 512 << 20;
/// Room kept for the views' own state over the rows (per step, name, thread…): at least this,
/// and a sixth of the file (a bound from above: natively, Root cause's peak over a 1 GB
/// export's rows, none kept, is 60 MiB above the scan's, and the page's wasm memory after the
/// views was 385 MiB in all over a 4.2 GiB one's, with no rows kept).
const VIEW_ROOM: usize = 160 << 20;
/// The most one export's kept rows take.
const MAX_KEPT: usize = 256 << 20;

/// What a scan may keep of an export's rows (`FileScan::keeping_rows`): [`READ_MEMORY`] less
/// what is already `used` and the views' room for a file of `file_bytes`, 256 MiB at most. A
/// 1 GB export keeps 256 MiB (all its tables fit); from about 2 GB the views' room leaves none.
pub fn row_budget(file_bytes: u64, used: usize) -> usize {
    READ_MEMORY
        .saturating_sub(used.saturating_add(view_room(file_bytes)))
        .min(MAX_KEPT)
}

/// The room the views over an export of `file_bytes` need besides its kept rows: at least
/// 160 MiB, and a sixth of the file.
pub fn view_room(file_bytes: u64) -> usize {
    VIEW_ROOM.max(usize::try_from(file_bytes / 6).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_trace_opened_beside_others_shares_their_budget_less_its_views_room() {
        const MIB: u64 = 1 << 20;
        let mut shared = SharedBudget::first(445 * MIB, 0, 1);
        let first = shared.budget();
        assert_eq!(first.left(), 256 << 20);
        // Same size: no extra room, a sixteenth of the file withheld.
        let room = shared.room_beside(445 * MIB);
        assert_eq!(room, (256 << 20) - (445 << 20) / 16);
        let second = shared.open_beside(445 * MIB);
        assert_eq!(second.left(), room, "the room said is what the open gets");
        assert_eq!(first.left(), room, "one budget");
        // A larger file: its views' extra room (a sixth of 1.2 GiB over 160 MiB) too.
        let big = 1229 * MIB;
        let extra = usize::try_from(big / 6).unwrap() - (160 << 20);
        assert_eq!(
            shared.room_beside(big),
            room - extra - usize::try_from(big / 16).unwrap()
        );
    }

    #[test]
    fn the_first_of_a_batch_leaves_the_others_their_state() {
        const MIB: u64 = 1 << 20;
        let state = usize::try_from(445 * MIB / 16).unwrap();
        let mut shared = SharedBudget::first(445 * MIB, 0, 8);
        let first = shared.budget();
        assert_eq!(
            first.left(),
            (256 << 20) - 7 * state,
            "seven others' state withheld"
        );
        assert_eq!(SharedBudget::first_room(445 * MIB, 0, 8), first.left());
        // The seven withhold nothing more; an eighth opened beside them its own state.
        for _ in 0..7 {
            assert_eq!(shared.room_beside(445 * MIB), first.left());
            shared.open_beside(445 * MIB);
        }
        assert_eq!(first.left(), (256 << 20) - 7 * state);
        assert_eq!(shared.room_beside(445 * MIB), first.left() - state);
    }

    #[test]
    fn the_row_budget_leaves_the_views_their_room() {
        assert_eq!(row_budget(100 << 20, 0), 256 << 20);
        assert_eq!(row_budget(1 << 30, 0), 256 << 20);
        // 512 MiB less 200 MiB used and a sixth of 1 GiB (more than 160 MiB).
        assert_eq!(row_budget(1 << 30, 200 << 20), (312 << 20) - (1 << 30) / 6);
        assert_eq!(row_budget(3 << 30, 0), 0);
    }
}

#[cfg(test)]
mod charge_tests {
    use super::*;
    use crate::model::rows::SyncRow;

    fn row(i: i64) -> SyncRow {
        SyncRow {
            row: i + 1,
            start: 1_000 * i,
            end: 1_000 * i + 7 * (i % 13),
            device: (i % 3) as u32,
            stream: (i % 5) as u32,
            process: 0,
            correlation: i as u32,
            sync_type: (i % 4) as u8,
        }
    }

    fn unpack_all(cache: &TableCache) -> Vec<SyncRow> {
        let mut base = Base::default();
        let mut rows = Vec::new();
        for block in &cache.blocks {
            let mut rest = &block[..];
            while !rest.is_empty() {
                let (packed, left) = postcard::take_from_bytes(rest).expect("a packed row");
                let r = SyncRow::unpack(packed, base);
                base = r.base();
                rows.push(r);
                rest = left;
            }
        }
        rows
    }

    /// A cache whose blocks do not all fit the budget keeps the first ones whole: a prefix of
    /// the rows, every one as it was, the cache closed.
    #[test]
    fn a_cache_charged_to_a_smaller_budget_keeps_its_first_blocks() {
        let (all, rows) = (Budget::new(usize::MAX), 400_000);
        let mut cache = TableCache::default();
        let mut fill = ScanFill::new(&mut cache, &all, true);
        for i in 0..rows {
            fill.push(&row(i));
        }
        fill.finish(true);
        assert!(cache.blocks.len() >= 3, "{} blocks", cache.blocks.len());
        let (shape, blocks) = cache.into_parts();
        let second_ends = shape.starts[2];
        let budget = Budget::new(2 * BLOCK_BYTES + 10);
        let mut kept = TableCache::from_parts(shape, blocks).expect("whole again");
        kept.charge(&budget);
        assert_eq!((kept.rows(), kept.bytes()), (second_ends, 2 * BLOCK_BYTES));
        assert!(!kept.complete() && kept.closed);
        assert_eq!(budget.left(), 10);
        let expected: Vec<SyncRow> = (0..second_ends as i64).map(row).collect();
        assert_eq!(unpack_all(&kept), expected);
    }
}
