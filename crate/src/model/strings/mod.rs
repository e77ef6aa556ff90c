//! The string table: `StringIds` rows and interned inline NVTX texts, held in fixed-size
//! chunks, and per-string flags (`NameFlags`) that name rules fill once per distinct string.

use hashbrown::HashMap;
use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;
use serde::{Deserialize, Serialize};

use super::chunked::Chunked;
use super::ids::{NO_NAME, NameId};
use super::intervals::push_gently;

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
    /// Interning starts once every `StringIds` row is pushed.
    pub fn intern(&mut self, text: &str) -> NameId {
        let hash = self.hasher.hash_one(text);
        let (all, ends) = (&self.chunks, &self.ends);
        if let Some(&slot) = self
            .interned
            .find(hash, |&slot| value_of(all, ends, slot) == text)
        {
            return slot;
        }
        let slot = self.push(text);
        let (all, ends, hasher) = (&self.chunks, &self.ends, &self.hasher);
        self.interned
            .insert_unique(hash, slot, |&s| hasher.hash_one(value_of(all, ends, s)));
        slot
    }

    /// The id an inline text was interned under ([`Strings::intern`]), if it was.
    pub fn find_text(&self, text: &str) -> Option<NameId> {
        let hash = self.hasher.hash_one(text);
        let (all, ends) = (&self.chunks, &self.ends);
        self.interned
            .find(hash, |&slot| value_of(all, ends, slot) == text)
            .copied()
    }

    /// The `StringIds.id` behind `id`; `None` for interned inline texts and `NO_NAME`.
    pub fn sqlite_id(&self, id: NameId) -> Option<i64> {
        self.row_ids.get(id as usize)
    }

    /// The string for `id`; `""` for `NO_NAME` or an out-of-range id.
    pub fn get(&self, id: NameId) -> &str {
        value_of(&self.chunks, &self.ends, id)
    }

    /// Ids given out: every `StringIds` row and every interned text.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `value` under the next id: another table's names copied in id order, for a page
    /// worker that reads no file (without the `StringIds` index or interning).
    pub fn append(&mut self, value: &str) -> NameId {
        self.push(value)
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

#[cfg(test)]
mod tests;
