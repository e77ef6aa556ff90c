//! The in-memory trace: columnar event tables loaded from an nsys export.
//!
//! Everything the analyses read lives here, decoupled from SQLite: `trace::load` fills these
//! vectors with plain `SELECT`s, and `detect`/later analyses only ever see this model. Columns are
//! parallel `Vec`s (struct-of-arrays) so a multi-million-row table costs a few dozen bytes per
//! event and scans stay cache-friendly. Times are integer nanoseconds throughout.

pub mod chunked;
pub mod intervals;

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use chunked::Chunked;
use hashbrown::HashTable;
use intervals::push_gently;

use serde::{Deserialize, Serialize};

use crate::names::steps::StepText;

/// A timestamp or duration in nanoseconds, as nsys stores them.
pub type Ns = i64;

/// Index into [`Strings`]; `NO_NAME` marks a missing/NULL name.
pub type NameId = u32;
pub const NO_NAME: NameId = u32::MAX;
/// A name read but not held ([`Strings::holds_step_names`]): the loader holds no forward-step
/// name, and the NVTX row so named carries the parsed marker instead ([`NvtxRow::step`]).
pub const UNHELD_NAME: NameId = u32::MAX - 1;

/// Index into [`Processes`].
pub type ProcessIdx = u32;
/// Index into [`Threads`].
pub type ThreadIdx = u32;

/// Upper 40 bits of a `globalTid` identify the process (`globalPid`).
pub const GLOBAL_PID_MASK: i64 = 0xFFFF_FFFF_FF00_0000_u64 as i64;

/// OS process id packed in a `globalTid`/`globalPid`: bits 24..48.
pub fn os_pid(global_id: i64) -> u32 {
    ((global_id >> 24) & 0xFF_FFFF) as u32
}

/// OS thread id packed in a `globalTid`: bits 0..24.
pub fn os_tid(global_tid: i64) -> u32 {
    (global_tid & 0xFF_FFFF) as u32
}

/// Bytes per chunk of the string table's text.
const STRING_CHUNK: usize = 1 << 20;

/// The string table: nsys `StringIds` plus interned inline NVTX `text` values.
///
/// Values sit back to back in fixed-size chunks: a long trace names every forward step
/// differently, and a boxed string each would cost its allocation's overhead again per step,
/// while one growing buffer would be copied as it grows and leave its old blocks behind in the
/// page's wasm memory, which keeps its high-water mark.
#[derive(Debug, Default, Clone)]
pub struct Strings {
    chunks: Vec<String>,
    /// Where each value ends: its chunk's index in the high 32 bits, the end offset in that
    /// chunk in the low 32 (a value starts where the previous one ends in the same chunk, else
    /// at its chunk's start).
    ends: Chunked<u64>,
    /// `StringIds.id` of each value loaded from that table (interned inline texts, after them,
    /// have none).
    row_ids: RowIds,
    index: StringIndex,
    /// Inline texts already interned (NVTX `text` column), by the hash of their value.
    interned: HashTable<NameId>,
    hasher: RandomState,
    /// `StringIds` rows whose value is not held ([`Strings::push_row_unheld`]).
    unheld: Unheld,
    /// Whether forward-step names are held, as values and as interned inline texts; the
    /// page's streamed open holds none ([`Strings::without_step_names`]).
    steps_unheld: bool,
}

/// Which `StringIds` rows hold no value, with a running count per 64 rows: a held value's
/// place among the values is its id less the unheld rows before it, in O(1). A bit and a half
/// per row, where an offset per row would cost 8 bytes per forward step.
#[derive(Debug, Default, Clone)]
struct Unheld {
    flags: NameFlags,
    /// Unheld rows before each 64-row word of `flags`.
    before: Vec<u32>,
    total: u32,
}

impl Unheld {
    fn push(&mut self, unheld: bool) {
        if self.flags.len().is_multiple_of(64) {
            self.before.push(self.total);
        }
        self.flags.push(unheld);
        self.total += u32::from(unheld);
    }

    /// Unheld rows before `id` (every one, past the rows).
    fn before(&self, id: NameId) -> u32 {
        let i = id as usize;
        if i >= self.flags.len() {
            return self.total;
        }
        let (w, bit) = (i / 64, i % 64);
        let below = self.flags.words[w] & ((1u64 << bit) - 1);
        self.before[w] + below.count_ones()
    }

    /// Where the value of held string `id` sits among the values (its id when every row is
    /// held, as in every load but the page's: no rank on the CLI's lookups).
    fn slot(&self, id: NameId) -> u32 {
        match self.total {
            0 => id,
            _ => id - self.before(id),
        }
    }

    fn shrink_to_fit(&mut self) {
        self.flags.words.shrink_to_fit();
        self.before.shrink_to_fit();
    }
}

/// `StringIds.id` of each string loaded from that table, in load order: `first + row` when the
/// ids run consecutively (every export seen numbers its strings so), listed otherwise. A long
/// trace has a string per forward step, so a list would cost 8 bytes a step for nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowIds {
    Consecutive { first: i64, rows: usize },
    Listed(Vec<i64>),
}

impl Default for RowIds {
    fn default() -> RowIds {
        RowIds::Consecutive { first: 0, rows: 0 }
    }
}

impl RowIds {
    fn push(&mut self, id: i64) {
        match self {
            RowIds::Consecutive { first, rows } if *rows == 0 => {
                *first = id;
                *rows = 1;
            }
            RowIds::Consecutive { first, rows }
                if i64::try_from(*rows).ok().and_then(|r| first.checked_add(r)) == Some(id) =>
            {
                *rows += 1;
            }
            RowIds::Consecutive { first, rows } => {
                let mut ids: Vec<i64> = (0..*rows).map(|r| *first + r as i64).collect();
                ids.push(id);
                *self = RowIds::Listed(ids);
            }
            RowIds::Listed(ids) => push_gently(ids, id),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RowIds::Consecutive { rows, .. } => *rows,
            RowIds::Listed(ids) => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of row `row`.
    pub fn get(&self, row: usize) -> Option<i64> {
        match self {
            RowIds::Consecutive { first, rows } => (row < *rows).then(|| *first + row as i64),
            RowIds::Listed(ids) => ids.get(row).copied(),
        }
    }

    /// Every row's id, in row order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).filter_map(|row| self.get(row))
    }

    fn shrink_to_fit(&mut self) {
        if let RowIds::Listed(ids) = self {
            ids.shrink_to_fit();
        }
    }
}

/// `StringIds.id` → [`NameId`], without the strings: what the page's kernel pass needs to name
/// kernels as the analysis worker does.
#[derive(Debug, Default, Clone)]
pub struct StringIndex {
    /// Ids run consecutively from `.0` for `.1` rows (no table needed) ...
    consecutive: Option<(i64, usize)>,
    /// ... else indexed by id, when ids are dense ...
    dense: Vec<NameId>,
    /// ... or a map when they are not.
    sparse: HashMap<i64, NameId>,
}

impl StringIndex {
    /// The index of the strings with `row_ids`.
    pub fn new(row_ids: &RowIds) -> StringIndex {
        let ids = match row_ids {
            RowIds::Consecutive { first, rows } => {
                return StringIndex {
                    consecutive: Some((*first, *rows)),
                    ..StringIndex::default()
                };
            }
            RowIds::Listed(ids) => ids,
        };
        let mut index = StringIndex::default();
        let max_id = ids.iter().copied().max().unwrap_or(-1);
        let dense_ok = max_id >= 0 && (max_id as usize) < ids.len().saturating_mul(2) + 1024;
        if dense_ok {
            index.dense = vec![NO_NAME; max_id as usize + 1];
        }
        for (idx, &id) in ids.iter().enumerate() {
            let idx = idx as NameId;
            match index
                .dense
                .get_mut(usize::try_from(id).unwrap_or(usize::MAX))
            {
                Some(slot) => *slot = idx,
                None => {
                    index.sparse.insert(id, idx);
                }
            }
        }
        index
    }

    /// Maps a `StringIds.id` to a [`NameId`]; unknown ids give `NO_NAME`.
    pub fn resolve(&self, sqlite_id: i64) -> NameId {
        if let Some((first, rows)) = self.consecutive {
            return sqlite_id
                .checked_sub(first)
                .and_then(|row| usize::try_from(row).ok())
                .filter(|&row| row < rows)
                .map_or(NO_NAME, |row| row as NameId);
        }
        if sqlite_id >= 0 && (sqlite_id as usize) < self.dense.len() {
            return self.dense[sqlite_id as usize];
        }
        self.sparse.get(&sqlite_id).copied().unwrap_or(NO_NAME)
    }
}

impl Strings {
    /// Builds the table from `(id, value)` rows of `StringIds`.
    pub fn from_rows(rows: Vec<(i64, String)>) -> Strings {
        let mut strings = Strings::default();
        for (id, value) in rows {
            strings.push_row(id, &value);
        }
        strings.finish_rows();
        strings
    }

    /// Adds a `StringIds` row (before any inline text is interned); [`Strings::finish_rows`]
    /// indexes them.
    pub fn push_row(&mut self, sqlite_id: i64, value: &str) {
        self.push(value);
        self.row_ids.push(sqlite_id);
        self.unheld.push(false);
    }

    /// A table that will hold no forward-step name ([`Strings::push_row_unheld`], and inline
    /// texts left to their rows): the page's streamed open, whose analysis worker would
    /// otherwise hold a string per step.
    pub fn without_step_names() -> Strings {
        Strings {
            steps_unheld: true,
            ..Strings::default()
        }
    }

    /// Whether forward-step names are held ([`Strings::without_step_names`]).
    pub fn holds_step_names(&self) -> bool {
        !self.steps_unheld
    }

    /// Adds a `StringIds` row without its value (a forward-step name, which no table rule but
    /// the step parsers reads): its id reads as `""`, and [`Strings::is_unheld`] tells it
    /// apart; whoever meets it reads the value again from the file.
    pub fn push_row_unheld(&mut self, sqlite_id: i64) {
        self.row_ids.push(sqlite_id);
        self.unheld.push(true);
    }

    /// Whether string `id` is a `StringIds` row whose value is not held.
    pub fn is_unheld(&self, id: NameId) -> bool {
        self.unheld.flags.get(id)
    }

    /// Indexes the rows pushed so far by `StringIds.id`.
    pub fn finish_rows(&mut self) {
        self.index = StringIndex::new(&self.row_ids);
        self.shrink_to_fit();
    }

    /// Returns the offsets' unused capacity once loading has added every string.
    pub fn shrink_to_fit(&mut self) {
        self.ends.shrink_to_fit();
        self.row_ids.shrink_to_fit();
        self.unheld.shrink_to_fit();
    }

    fn push(&mut self, value: &str) -> NameId {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= value.len());
        if !fits {
            // A value longer than a chunk gets a chunk of its own size.
            self.chunks
                .push(String::with_capacity(STRING_CHUNK.max(value.len())));
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        chunk.push_str(value);
        self.ends.push(((index as u64) << 32) | chunk.len() as u64);
        (self.ends.len() - 1) as NameId
    }

    /// The [`NameId`] of the value in `slot` pushed after every `StringIds` row.
    fn interned_id(&self, slot: NameId) -> NameId {
        slot + self.unheld.total
    }

    /// Maps a `StringIds.id` to a [`NameId`]; unknown ids give `NO_NAME`.
    pub fn resolve(&self, sqlite_id: i64) -> NameId {
        self.index.resolve(sqlite_id)
    }

    /// `StringIds.id` of the strings loaded from that table: with [`StringIndex::new`], names
    /// resolve elsewhere as they do here.
    pub fn row_ids(&self) -> &RowIds {
        &self.row_ids
    }

    /// Interns an inline string (NVTX `text`), reusing an earlier copy.
    /// The interned table holds slots: interning starts once every row is pushed.
    pub fn intern(&mut self, text: &str) -> NameId {
        let hash = self.hasher.hash_one(text);
        let (all, ends) = (&self.chunks, &self.ends);
        if let Some(&slot) = self
            .interned
            .find(hash, |&slot| value_of(all, ends, slot) == text)
        {
            return self.interned_id(slot);
        }
        let slot = self.push(text);
        let (all, ends, hasher) = (&self.chunks, &self.ends, &self.hasher);
        self.interned
            .insert_unique(hash, slot, |&s| hasher.hash_one(value_of(all, ends, s)));
        self.interned_id(slot)
    }

    /// The id an inline text was interned under ([`Strings::intern`]), if it was.
    pub fn find_text(&self, text: &str) -> Option<NameId> {
        let hash = self.hasher.hash_one(text);
        let (all, ends) = (&self.chunks, &self.ends);
        self.interned
            .find(hash, |&slot| value_of(all, ends, slot) == text)
            .map(|&slot| self.interned_id(slot))
    }

    /// The `StringIds.id` behind `id`; `None` for interned inline texts and `NO_NAME`.
    pub fn sqlite_id(&self, id: NameId) -> Option<i64> {
        self.row_ids.get(id as usize)
    }

    /// The string for `id`; `""` for `NO_NAME` or an out-of-range id.
    pub fn get(&self, id: NameId) -> &str {
        if self.is_unheld(id) {
            return "";
        }
        value_of(&self.chunks, &self.ends, self.unheld.slot(id))
    }

    /// Values held: every `StringIds` row's but the unheld, and every interned text.
    pub fn held_values(&self) -> usize {
        self.ends.len()
    }

    /// Ids given out: every `StringIds` row, held or not, and every interned text.
    pub fn len(&self) -> usize {
        self.ends.len() + self.unheld.total as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every value, in [`NameId`] order.
    fn values(&self) -> impl Iterator<Item = &str> {
        (0..self.len() as NameId).map(|id| self.get(id))
    }

    /// The `StringIds.id`s whose value satisfies `pred` (for pushing a filter into SQL).
    pub fn sqlite_ids_where(&self, pred: impl Fn(&str) -> bool) -> Vec<i64> {
        self.values()
            .zip(self.row_ids.iter())
            .filter(|&(v, _)| pred(v))
            .map(|(_, id)| id)
            .collect()
    }

    /// Evaluates `pred` once per distinct string: a lookup table indexed by [`NameId`].
    pub fn classify(&self, pred: impl Fn(&str) -> bool) -> NameFlags {
        let mut table = NameFlags::default();
        self.classify_more(&mut table, pred);
        table
    }

    /// Extends a [`Strings::classify`] table to the strings interned since it was built.
    pub fn classify_more(&self, table: &mut NameFlags, pred: impl Fn(&str) -> bool) {
        let from = table.len().min(self.len());
        for id in from..self.len() {
            table.push(pred(self.get(id as NameId)));
        }
    }
}

/// The value in `slot` of a string buffer and its end offsets; `""` when out of range.
fn value_of<'s>(chunks: &'s [String], ends: &Chunked<u64>, slot: NameId) -> &'s str {
    const OFFSET: u64 = u32::MAX as u64;
    let i = slot as usize;
    let Some(end) = ends.get(i) else {
        return "";
    };
    let chunk = end >> 32;
    let start = match i.checked_sub(1).and_then(|p| ends.get(p)) {
        Some(prev) if prev >> 32 == chunk => prev & OFFSET,
        _ => 0,
    };
    chunks
        .get(chunk as usize)
        .and_then(|c| c.get(start as usize..(end & OFFSET) as usize))
        .unwrap_or("")
}

/// A flag per string ([`Strings::classify`]), a bit each: a long trace has a string per
/// forward step, and the page holds several such tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameFlags {
    words: Vec<u64>,
    len: usize,
}

impl NameFlags {
    pub fn push(&mut self, set: bool) {
        let i = self.len;
        if i.is_multiple_of(64) {
            self.words.push(0);
        }
        if let Some(word) = self.words.last_mut() {
            *word |= u64::from(set) << (i % 64);
        }
        self.len += 1;
    }

    /// Whether string `id` has the flag; `NO_NAME` and unknown ids never do.
    pub fn get(&self, id: NameId) -> bool {
        let i = id as usize;
        i < self.len
            && self
                .words
                .get(i / 64)
                .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl FromIterator<bool> for NameFlags {
    fn from_iter<I: IntoIterator<Item = bool>>(flags: I) -> NameFlags {
        let mut table = NameFlags::default();
        flags.into_iter().for_each(|f| table.push(f));
        table
    }
}

/// Looks up a per-name flag built by [`Strings::classify`]; `NO_NAME` is never matched.
pub fn flag(table: &NameFlags, id: NameId) -> bool {
    table.get(id)
}

/// Processes seen in any event table, keyed by `globalPid`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Processes {
    /// `globalPid` (upper bits of `globalTid`), as a string because it exceeds 2^53.
    #[serde(skip)]
    pub global_pid: Vec<i64>,
    /// OS process id.
    pub pid: Vec<u32>,
    /// Process name from `PROCESSES`, when present.
    pub name: Vec<String>,
    #[serde(skip)]
    index: HashMap<i64, ProcessIdx>,
}

impl Processes {
    /// The index of the process holding `global_id` (a globalPid or a globalTid), added if new.
    pub fn intern(&mut self, global_id: i64) -> ProcessIdx {
        let gpid = global_id & GLOBAL_PID_MASK;
        if let Some(&i) = self.index.get(&gpid) {
            return i;
        }
        let i = self.global_pid.len() as ProcessIdx;
        self.global_pid.push(gpid);
        self.pid.push(os_pid(gpid));
        self.name.push(String::new());
        self.index.insert(gpid, i);
        i
    }

    pub fn find(&self, global_id: i64) -> Option<ProcessIdx> {
        self.index.get(&(global_id & GLOBAL_PID_MASK)).copied()
    }

    pub fn len(&self) -> usize {
        self.global_pid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.global_pid.is_empty()
    }
}

/// Threads seen in the runtime and NVTX tables, keyed by `globalTid`.
#[derive(Debug, Default, Clone)]
pub struct Threads {
    pub global_tid: Vec<i64>,
    pub process: Vec<ProcessIdx>,
    /// Thread name from `ThreadNames`, or `NO_NAME`.
    pub name: Vec<NameId>,
    index: HashMap<i64, ThreadIdx>,
}

impl Threads {
    /// The index of `global_tid`, added (with its process) if new.
    pub fn intern(&mut self, global_tid: i64, processes: &mut Processes) -> ThreadIdx {
        if let Some(&i) = self.index.get(&global_tid) {
            return i;
        }
        let i = self.global_tid.len() as ThreadIdx;
        self.global_tid.push(global_tid);
        self.process.push(processes.intern(global_tid));
        self.name.push(NO_NAME);
        self.index.insert(global_tid, i);
        i
    }

    pub fn find(&self, global_tid: i64) -> Option<ThreadIdx> {
        self.index.get(&global_tid).copied()
    }

    pub fn len(&self) -> usize {
        self.global_tid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.global_tid.is_empty()
    }
}

/// GPU kernels (`CUPTI_ACTIVITY_KIND_KERNEL`), in table order.
///
/// `stream`, `correlation` and `demangled_name` are empty when loaded with
/// `LoadOptions::detect()` (see `trace::LoadOptions::event_details`).
#[derive(Debug, Default, Clone)]
pub struct Kernels {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    /// `correlationId`, joining the runtime call that launched the kernel (within a process).
    pub correlation: Vec<u32>,
    pub short_name: Vec<NameId>,
    pub demangled_name: Vec<NameId>,
    /// `graphNodeId` (0 when NULL). Empty when no kernel has one: most traces pay nothing.
    pub graph_node: Vec<u64>,
    /// `graphId` (0 when NULL; only nsys ≥ 2026.1 has the column). Empty when none is set.
    pub graph_id: Vec<u32>,
}

impl Kernels {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// The kernel's `graphNodeId`, 0 when none.
    pub fn graph_node_of(&self, i: usize) -> u64 {
        self.graph_node.get(i).copied().unwrap_or(0)
    }

    /// The kernel's `graphId`, 0 when none.
    pub fn graph_id_of(&self, i: usize) -> u32 {
        self.graph_id.get(i).copied().unwrap_or(0)
    }

    /// Devices that ran at least one kernel, ascending.
    pub fn devices(&self) -> Vec<u32> {
        let mut seen: Vec<u32> = Vec::new();
        let mut last = None;
        for &d in &self.device {
            if last != Some(d) && !seen.contains(&d) {
                seen.push(d);
            }
            last = Some(d);
        }
        seen.sort_unstable();
        seen
    }
}

/// One kernel as a one-pass analysis sees it: the streaming passes (detect's kernel sweep, the
/// timeline summary, the gap histogram) consume these in start order, either from a loaded
/// [`Kernels`] table ([`Kernels::events_in_start_order`]) or straight from SQLite rows, so the
/// page never has to hold the kernel table in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelEvent {
    /// Position in table order (the SQLite `rowid` when streamed; the row index when loaded).
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub device: u32,
    pub stream: u32,
    pub process: ProcessIdx,
    pub short_name: NameId,
    /// `graphNodeId`, 0 when none (a kernel launched inside a CUDA graph has one).
    pub graph_node: u64,
}

impl Kernels {
    /// The kernel at row index `i` as a [`KernelEvent`] (`stream` 0 when not loaded).
    pub fn event(&self, i: usize) -> KernelEvent {
        KernelEvent {
            row: i as i64,
            start: self.start[i],
            end: self.end[i],
            device: self.device[i],
            stream: self.stream.get(i).copied().unwrap_or(0),
            process: self.process[i],
            short_name: self.short_name[i],
            graph_node: self.graph_node_of(i),
        }
    }

    /// Row indices sorted by `(start, end)`, ties in table order: the order every one-pass
    /// analysis expects. A 4-byte index per kernel, built only when the table is out of order.
    pub fn start_order(&self) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..self.len() as u32).collect();
        let key = |&i: &u32| (self.start[i as usize], self.end[i as usize]);
        if !idx.is_sorted_by_key(key) {
            idx.sort_by_key(key);
        }
        idx
    }

    /// Every kernel as a [`KernelEvent`], in start order.
    pub fn events_in_start_order(&self) -> impl Iterator<Item = KernelEvent> + '_ {
        self.start_order()
            .into_iter()
            .map(|i| self.event(i as usize))
    }
}

/// A kernel met out of start order by a one-pass analysis: the caller falls back to loading
/// (and sorting) the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel row {row} starts at {start} ns, before the previous kernel ({previous} ns): the kernel table is not in start order"
)]
pub struct OutOfOrder {
    pub row: i64,
    pub start: Ns,
    /// The largest start seen before it.
    pub previous: Ns,
}

/// The order check every one-pass analysis makes on the kernels it is fed.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartOrder {
    last: Option<Ns>,
}

impl StartOrder {
    /// Accepts `ev` when it starts no earlier than every kernel accepted before it.
    pub fn check(&mut self, ev: &KernelEvent) -> Result<(), OutOfOrder> {
        match self.last {
            Some(previous) if ev.start < previous => Err(OutOfOrder {
                row: ev.row,
                start: ev.start,
                previous,
            }),
            _ => {
                self.last = Some(ev.start);
                Ok(())
            }
        }
    }
}

/// CUDA runtime/driver API calls (`CUPTI_ACTIVITY_KIND_RUNTIME`).
#[derive(Debug, Default, Clone)]
pub struct RuntimeCalls {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub thread: Vec<ThreadIdx>,
    pub correlation: Vec<u32>,
    pub name: Vec<NameId>,
}

impl RuntimeCalls {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// NVTX events that have an end (ranges); marks and domain rows are not kept.
#[derive(Debug, Default, Clone)]
pub struct NvtxRanges {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub thread: Vec<ThreadIdx>,
    pub event_type: Vec<u8>,
    pub domain: Vec<u32>,
    /// The range's name as a user sees it: `text` when non-NULL, else `StringIds[textId]`.
    pub name: Vec<NameId>,
    /// `StringIds[textId]` only (`NO_NAME` when `textId` is NULL): what the reference scripts see.
    pub text_id_name: Vec<NameId>,
    /// The forward-step names of rows named [`UNHELD_NAME`] (by text, by `textId`), by row.
    unheld: Vec<(usize, Option<StepText>, Option<StepText>)>,
    /// What a windows-only load (the page's verdict) did not keep.
    pub omitted: OmittedRanges,
}

/// One NVTX range as the loader reads it: a row of [`NvtxRanges`], or a row handed straight to
/// a consumer that keeps only what it derives (the page's detect plans).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvtxRow {
    /// Its row: the `rowid` when read from the file, the index in a loaded table.
    pub row: i64,
    pub start: Ns,
    pub end: Ns,
    pub thread: ThreadIdx,
    pub event_type: u8,
    pub domain: u32,
    /// `text` when non-NULL, else `StringIds[textId]` (see [`NvtxRanges::name`]).
    pub name: NameId,
    /// `StringIds[textId]` only (see [`NvtxRanges::text_id_name`]).
    pub text_id_name: NameId,
    /// The forward step `name` stands for when it is [`UNHELD_NAME`] (a name not held).
    pub step: Option<StepText>,
    /// The same for `text_id_name`.
    pub text_id_step: Option<StepText>,
}

impl NvtxRow {
    /// Whether a name of the row is a forward-step name not held.
    pub fn has_unheld_name(&self) -> bool {
        self.name == UNHELD_NAME || self.text_id_name == UNHELD_NAME
    }
}

/// NVTX ranges read but not kept: only their count and one fact about their names remain.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OmittedRanges {
    pub count: u64,
    /// Some of them are named by inline `text`.
    pub inline_text: bool,
}

impl NvtxRanges {
    /// Adds a push/pop range on `thread` named `name` (both by text and by `textId`).
    #[cfg(test)]
    pub(crate) fn push_range(&mut self, (start, end): (Ns, Ns), thread: ThreadIdx, name: NameId) {
        let row = NvtxRow {
            row: self.len() as i64,
            start,
            end,
            thread,
            event_type: 59,
            domain: 0,
            name,
            text_id_name: name,
            step: None,
            text_id_step: None,
        };
        self.push(&row, true);
    }

    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// Row `i` (`i < len()`); `domain` is 0 when the load did not read domains.
    pub fn row(&self, i: usize) -> NvtxRow {
        let mut row = NvtxRow {
            row: i as i64,
            start: self.start[i],
            end: self.end[i],
            thread: self.thread[i],
            event_type: self.event_type[i],
            domain: self.domain.get(i).copied().unwrap_or(0),
            name: self.name[i],
            text_id_name: self.text_id_name[i],
            step: None,
            text_id_step: None,
        };
        if row.has_unheld_name()
            && let Ok(k) = self.unheld.binary_search_by_key(&i, |u| u.0)
        {
            (row.step, row.text_id_step) = (self.unheld[k].1, self.unheld[k].2);
        }
        row
    }

    /// Adds a row; `with_domain`: the load reads domains (else the column stays empty).
    pub fn push(&mut self, row: &NvtxRow, with_domain: bool) {
        self.start.push(row.start);
        self.end.push(row.end);
        self.thread.push(row.thread);
        self.event_type.push(row.event_type);
        if with_domain {
            self.domain.push(row.domain);
        }
        if row.has_unheld_name() {
            let i = self.name.len();
            self.unheld.push((i, row.step, row.text_id_step));
        }
        self.name.push(row.name);
        self.text_id_name.push(row.text_id_name);
    }

    /// Counts a range read but not kept.
    pub fn omit(&mut self, inline_text: bool) {
        self.omitted.count += 1;
        self.omitted.inline_text |= inline_text;
    }

    /// Ranges in the file, including those a windows-only load left out.
    pub fn total(&self) -> u64 {
        self.len() as u64 + self.omitted.count
    }

    /// Whether some range is named by its inline `text` rather than a `textId` (the
    /// trtllm-skill profile cannot see those names), counting ranges left out.
    pub fn has_inline_text_names(&self) -> bool {
        self.omitted.inline_text
            || self
                .name
                .iter()
                .zip(&self.text_id_name)
                .any(|(a, b)| a != b)
    }

    /// Gives back the columns' spare capacity (up to half of each after loading row by row):
    /// the page holds the ranges while it builds the detect plans, its peak.
    pub fn shrink_to_fit(&mut self) {
        self.start.shrink_to_fit();
        self.end.shrink_to_fit();
        self.thread.shrink_to_fit();
        self.event_type.shrink_to_fit();
        self.domain.shrink_to_fit();
        self.name.shrink_to_fit();
        self.text_id_name.shrink_to_fit();
        self.unheld.shrink_to_fit();
    }

    /// Lets the kept ranges go, keeping what the verdict's facts and warnings say of them: the
    /// page's analysis worker needs them only until the detect plans are built.
    pub fn forget_ranges(&mut self) {
        *self = NvtxRanges {
            omitted: OmittedRanges {
                count: self.total(),
                inline_text: self.has_inline_text_names(),
            },
            ..NvtxRanges::default()
        };
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// NVTX event types that are ranges: push/pop, start/end and their NVTXT-imported variants.
pub const NVTX_RANGE_TYPES: [u8; 4] = [59, 60, 70, 71];

/// Memory copies or memsets (`CUPTI_ACTIVITY_KIND_MEMCPY` / `_MEMSET`).
#[derive(Debug, Default, Clone)]
pub struct MemOps {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    pub correlation: Vec<u32>,
    pub bytes: Vec<u64>,
    /// `copyKind` for memcpy (ENUM_CUDA_MEMCPY_OPER), 0 for memset.
    pub kind: Vec<u8>,
    /// `srcKind` / `memKind` (ENUM_CUDA_MEM_KIND; 0 = pageable), 255 when unknown.
    pub src_mem: Vec<u8>,
    pub dst_mem: Vec<u8>,
}

impl MemOps {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// CUDA synchronization events (`CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`).
#[derive(Debug, Default, Clone)]
pub struct Syncs {
    pub start: Vec<Ns>,
    pub end: Vec<Ns>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub process: Vec<ProcessIdx>,
    pub correlation: Vec<u32>,
    pub sync_type: Vec<u8>,
}

impl Syncs {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// One GPU from `TARGET_INFO_GPU` (or `TARGET_INFO_CUDA_DEVICE`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuInfo {
    pub id: i64,
    pub name: String,
    pub bus_location: Option<String>,
    pub sm_count: Option<i64>,
    pub total_memory: Option<i64>,
}

/// Facts about the export itself: version, capture options, which tables exist.
#[derive(Debug, Default, Clone, Serialize)]
pub struct TraceMeta {
    /// `EXPORT_PRODUCT_VERSION`, e.g. `2025.3.1.90`.
    pub nsys_version: Option<String>,
    /// `EXPORT_SCHEMA_VERSION`, e.g. `3.20.2`.
    pub schema_version: Option<String>,
    /// Which metadata table held the version (`META_DATA_EXPORT` or the old `EXPORT_META_DATA`).
    pub metadata_table: Option<String>,
    /// `META_DATA_CAPTURE` rows (name, value), in table order.
    pub capture: Vec<(String, String)>,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`, to align several files.
    pub session_start_utc_ns: Option<i64>,
    /// All tables in the file, sorted.
    pub tables: Vec<String>,
}

impl TraceMeta {
    /// Whether CUDA graphs were traced as whole graphs (`--cuda-graph-trace=graph`): their
    /// kernels then carry no `graphNodeId`, which the verdict's warning looks for.
    pub fn traces_whole_graphs(&self) -> bool {
        self.capture_option("CUDA_GRAPH_TRACE_OPTIONS:MODE") == Some("Graph")
    }

    /// The first capture option with this name, also as a per-process key (`PROCESS_0:NAME`).
    pub fn capture_option(&self, name: &str) -> Option<&str> {
        let matches = |k: &str| {
            k == name
                || k.strip_suffix(name)
                    .is_some_and(|p| p.starts_with("PROCESS_") && p.ends_with(':'))
        };
        self.capture
            .iter()
            .find(|(k, _)| matches(k))
            .map(|(_, v)| v.as_str())
    }
}

/// One thing that could not be loaded or computed, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CoverageNote {
    /// What is affected (a table, a metric, a phase ...).
    pub subject: String,
    /// Why, and what it means for the results.
    pub reason: String,
}

/// A whole loaded trace.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub meta: TraceMeta,
    pub strings: Strings,
    pub processes: Processes,
    pub threads: Threads,
    pub kernels: Kernels,
    pub runtime: RuntimeCalls,
    pub nvtx: NvtxRanges,
    pub memcpy: MemOps,
    pub memset: MemOps,
    pub syncs: Syncs,
    pub gpus: Vec<GpuInfo>,
    /// What was missing while loading (tables, columns), as facts rather than errors.
    pub coverage: Vec<CoverageNote>,
    /// Which of the event tables were present in the file.
    pub present: PresentTables,
}

/// Which event tables exist (a missing table differs from an empty one).
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct PresentTables {
    pub kernels: bool,
    pub runtime: bool,
    pub nvtx: bool,
    pub memcpy: bool,
    pub memset: bool,
    pub syncs: bool,
}

impl Trace {
    /// Fails with a message naming `source` when the trace has no kernel to analyse (every
    /// analysis starts from kernels).
    pub fn require_kernels(&self, source: &str) -> crate::error::Result<()> {
        if !self.kernels.is_empty() {
            return Ok(());
        }
        let why = if self.present.kernels {
            "the kernel table is empty"
        } else {
            "no CUPTI_ACTIVITY_KIND_KERNEL table"
        };
        Err(crate::error::Error::NoKernels {
            path: source.to_string(),
            why: why.into(),
        })
    }

    pub fn note(&mut self, subject: impl Into<String>, reason: impl Into<String>) {
        self.coverage.push(CoverageNote {
            subject: subject.into(),
            reason: reason.into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_string_ids_are_not_listed_and_resolve_as_listed_ones() {
        let rows = |ids: &[i64]| -> Vec<(i64, String)> {
            ids.iter().map(|&id| (id, format!("s{id}"))).collect()
        };
        let consecutive = Strings::from_rows(rows(&[1, 2, 3, 4]));
        assert_eq!(
            consecutive.row_ids(),
            &RowIds::Consecutive { first: 1, rows: 4 }
        );
        // A break in the run lists every id, those before it included.
        let broken = Strings::from_rows(rows(&[1, 2, 3, 7, 8, -1]));
        assert_eq!(broken.row_ids(), &RowIds::Listed(vec![1, 2, 3, 7, 8, -1]));
        for s in [&consecutive, &broken] {
            for (name, id) in s.row_ids().iter().enumerate() {
                assert_eq!(s.resolve(id), name as NameId, "id {id}");
                assert_eq!(s.get(s.resolve(id)), format!("s{id}"));
                assert_eq!(s.sqlite_id(name as NameId), Some(id));
            }
            let index = StringIndex::new(s.row_ids());
            for id in [-2, 0, 5, 6, 9, i64::MIN, i64::MAX] {
                assert_eq!(
                    (s.resolve(id), index.resolve(id)),
                    (NO_NAME, NO_NAME),
                    "id {id}"
                );
            }
        }
        let mut interned = consecutive.clone();
        let text = interned.intern("inline");
        assert_eq!((text, interned.sqlite_id(text)), (4, None));
        assert_eq!(
            interned.sqlite_ids_where(|v| v.starts_with('s')),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn strings_read_back_across_chunk_boundaries() {
        // Values of every length up to past a chunk, so some end exactly at a chunk's end,
        // some do not fit the rest of one, and one is longer than a chunk.
        let values: Vec<String> = (0..600usize)
            .map(|i| {
                let len = (i * 7919) % 4000 + if i == 300 { STRING_CHUNK + 5 } else { 0 };
                let c = char::from(b'a' + (i % 26) as u8);
                c.to_string().repeat(len)
            })
            .chain(["é".repeat(3000), String::new()])
            .collect();
        let rows = values.iter().enumerate();
        let s = Strings::from_rows(rows.map(|(i, v)| (i as i64, v.clone())).collect());
        assert!(
            s.chunks.len() > 2,
            "spans several chunks: {}",
            s.chunks.len()
        );
        for (id, v) in values.iter().enumerate() {
            assert_eq!(s.get(id as NameId), v, "value {id}");
        }
        let mut interned = s.clone();
        let long = "z".repeat(STRING_CHUNK * 2);
        let id = interned.intern(&long);
        assert_eq!(interned.intern(&long), id);
        assert_eq!(interned.get(id), long);
        assert_eq!(interned.get(id - 1), "");
    }

    #[test]
    fn strings_keep_rows_and_interned_texts_apart_and_intern_each_text_once() {
        let mut s = Strings::from_rows(vec![
            (7, "gemm".into()),
            (3, String::new()),
            (9, "é x".into()),
        ]);
        assert_eq!((s.get(0), s.get(1), s.get(2)), ("gemm", "", "é x"));
        assert_eq!(
            (s.resolve(7), s.resolve(3), s.resolve(9), s.resolve(8)),
            (0, 1, 2, NO_NAME)
        );
        let step = s.intern("[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs");
        let other = s.intern("_prepare_tp_inputs");
        // A row's value is not an interned text: interning it adds a copy with no StringIds.id.
        let gemm = s.intern("gemm");
        assert_eq!((step, other, gemm), (3, 4, 5));
        assert_eq!(s.intern("_prepare_tp_inputs"), other);
        assert_eq!(
            s.intern("[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs"),
            step
        );
        assert_eq!(
            s.get(step),
            "[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs"
        );
        assert_eq!((s.sqlite_id(0), s.sqlite_id(step)), (Some(7), None));
        assert_eq!((s.len(), s.get(NO_NAME), s.get(6)), (6, "", ""));
        let flags = s.classify(|v| v.contains('_'));
        let read: Vec<bool> = (0..8).map(|id| flags.get(id)).collect();
        assert_eq!(read, [false, false, false, true, true, false, false, false]);
        assert!(!flags.get(NO_NAME));
    }

    #[test]
    fn name_flags_read_back_across_words() {
        let want: Vec<bool> = (0..200u32).map(|i| i % 3 == 0 || i == 127).collect();
        let flags: NameFlags = want.iter().copied().collect();
        assert_eq!(flags.len(), 200);
        let read: Vec<bool> = (0..260).map(|id| flags.get(id)).collect();
        assert_eq!(&read[..200], &want[..]);
        assert!(read[200..].iter().all(|&f| !f), "past the end: none");
        assert!(!flags.get(NO_NAME));
    }
}
