//! The bounded-memory part of the timeline: per-lane bins on one shared grid whose width doubles
//! as the pass discovers the extent, and a row-block index that tells a view which rows to
//! re-read. Both are filled in one pass over kernels in start order and never grow with the
//! kernel count: `BINS` bins per lane, at most `MAX_BLOCKS` blocks.

use serde::{Deserialize, Serialize};

use crate::model::{NO_NAME, NameId, Ns};

/// Bins per lane. A full-extent view spans at least `BINS / 2` bins (the grid doubles only when
/// the extent outgrows it), so at 1 200 columns a column covers ≥ 3.4 bins.
pub const BINS: usize = 8192;

/// Rows per block before the index first coarsens.
pub const BLOCK_ROWS: u32 = 4096;

/// Most blocks kept; past it, neighbouring blocks merge pairwise (blocks double in size).
pub const MAX_BLOCKS: usize = 4096;

/// Widest bin (2^48 ns, 3 days; the grid then spans 2^61 ns, the range the page accepts): a
/// guard so that absurd timestamps cannot overflow the grid's arithmetic.
const MAX_WIDTH: Ns = 1 << 48;

/// What a lane labels a column by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// A name of the string table.
    Name(NameId),
    /// A name already in the view's list (a host track's, read as text).
    Index(i32),
    /// A row of GPU work read back, named with what tells it apart (a replay's graph, a copy's
    /// bytes: `WorkLabel::text`).
    Work(super::work::WorkLabel),
}

impl From<NameId> for Label {
    fn from(id: NameId) -> Label {
        Label::Name(id)
    }
}

/// What a bin keeps of its longest event: a kernel lane a [`NameId`], the step lane a
/// [`Label`].
pub trait TopKey: Copy + Into<Label> {
    /// No event.
    const NONE: Self;
}

impl TopKey for NameId {
    const NONE: NameId = NO_NAME;
}

impl TopKey for Label {
    const NONE: Label = Label::Name(NO_NAME);
}

/// One bin of one lane: everything a column needs, all mergeable pairwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bin<K = NameId> {
    /// Time covered by the lane's kernels (their union) inside the bin, ns.
    pub busy: Ns,
    /// Longest kernel overlapping the bin: duration and name (`NO_NAME` when none).
    pub top_len: Ns,
    pub top_name: K,
    /// Kernels starting in the bin.
    pub starts: u32,
    /// Kernels started earlier that are still running at the bin's start.
    pub carried: u32,
}

impl<K: TopKey> Default for Bin<K> {
    fn default() -> Bin<K> {
        Bin {
            busy: 0,
            top_len: 0,
            top_name: K::NONE,
            starts: 0,
            carried: 0,
        }
    }
}

impl<K: TopKey> Bin<K> {
    /// The bin covering `self` then `next` (its right neighbour).
    fn merged(self, next: Bin<K>) -> Bin<K> {
        let (top_len, top_name) = if next.top_len > self.top_len {
            (next.top_len, next.top_name)
        } else {
            (self.top_len, self.top_name)
        };
        Bin {
            busy: self.busy + next.busy,
            top_len,
            top_name,
            starts: self.starts.saturating_add(next.starts),
            carried: self.carried,
        }
    }

    /// Keeps the longest kernel; the earlier one wins ties, as in an exact view.
    fn offer_top(&mut self, len: Ns, name: K) {
        if len > self.top_len {
            self.top_len = len;
            self.top_name = name;
        }
    }
}

/// The grid shared by every lane: bin `j` covers `[origin + j·width, origin + (j+1)·width)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinGrid {
    pub origin: Ns,
    pub width: Ns,
}

impl BinGrid {
    fn new(origin: Ns) -> BinGrid {
        BinGrid { origin, width: 1 }
    }

    /// First time past the last bin.
    pub fn limit(&self) -> Ns {
        self.origin
            .saturating_add(self.width.saturating_mul(BINS as Ns))
    }

    /// The bin holding `t`, clamped to the grid.
    pub fn bin(&self, t: Ns) -> usize {
        let j = t.saturating_sub(self.origin).div_euclid(self.width);
        j.clamp(0, BINS as Ns - 1) as usize
    }

    /// Start of bin `j`.
    pub fn bin_start(&self, j: usize) -> Ns {
        self.origin
            .saturating_add(self.width.saturating_mul(j as Ns))
    }
}

/// One lane's bins, plus the lane's running union (flushed into bins when it closes) so that
/// `busy` is the union of the lane's kernels, not the sum.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaneBins<K = NameId> {
    pub bins: Vec<Bin<K>>,
    open: Option<(Ns, Ns)>,
}

impl<K: TopKey> Default for LaneBins<K> {
    fn default() -> LaneBins<K> {
        LaneBins {
            bins: vec![Bin::default(); BINS],
            open: None,
        }
    }
}

impl<K: TopKey> LaneBins<K> {
    /// Adds a kernel `[s, e)` (`e > s`, inside the grid) that starts no earlier than the
    /// previous one of this lane.
    pub fn record(&mut self, grid: &BinGrid, s: Ns, e: Ns, name: K) {
        let (j0, j1) = (grid.bin(s), grid.bin(e - 1));
        self.bins[j0].starts = self.bins[j0].starts.saturating_add(1);
        for bin in &mut self.bins[j0..=j1] {
            bin.offer_top(e - s, name);
        }
        for bin in &mut self.bins[j0 + 1..=j1] {
            bin.carried = bin.carried.saturating_add(1);
        }
        match &mut self.open {
            Some(open) if s <= open.1 => open.1 = open.1.max(e),
            open => {
                let closed = open.replace((s, e));
                if let Some((cs, ce)) = closed {
                    self.add_busy(grid, cs, ce);
                }
            }
        }
    }

    /// Closes the running union (end of the pass).
    pub fn flush(&mut self, grid: &BinGrid) {
        if let Some((s, e)) = self.open.take() {
            self.add_busy(grid, s, e);
        }
    }

    fn add_busy(&mut self, grid: &BinGrid, s: Ns, e: Ns) {
        for j in grid.bin(s)..=grid.bin(e - 1) {
            let b0 = grid.bin_start(j);
            let covered = e.min(b0.saturating_add(grid.width)) - s.max(b0);
            self.bins[j].busy += covered.max(0);
        }
    }

    /// Halves the resolution: bins `2j` and `2j+1` become bin `j`.
    fn coarsen(&mut self) {
        for j in 0..BINS / 2 {
            self.bins[j] = self.bins[2 * j].merged(self.bins[2 * j + 1]);
        }
        self.bins[BINS / 2..].fill(Bin::default());
    }
}

/// The grid and every lane's bins, kept at one resolution.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary<K = NameId> {
    pub grid: BinGrid,
    pub lanes: Vec<LaneBins<K>>,
}

impl<K: TopKey> Summary<K> {
    pub fn new(origin: Ns) -> Summary<K> {
        Summary {
            grid: BinGrid::new(origin),
            lanes: Vec::new(),
        }
    }

    /// Doubles the bin width until `end` fits, returning the (possibly clamped) end to record.
    pub fn fit(&mut self, end: Ns) -> Ns {
        while end > self.grid.limit() && self.grid.width < MAX_WIDTH {
            self.grid.width *= 2;
            self.lanes.iter_mut().for_each(LaneBins::coarsen);
        }
        end.min(self.grid.limit())
    }

    /// Heap bytes held by the bins (the part of a timeline that scales with lanes only).
    pub fn heap_bytes(&self) -> usize {
        self.lanes.len() * BINS * std::mem::size_of::<Bin<K>>()
    }
}

/// A run of consecutive pushed kernels: which rows hold them and the time they span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub first_row: i64,
    pub last_row: i64,
    pub min_start: Ns,
    pub max_end: Ns,
}

impl Block {
    fn of(row: i64, start: Ns, end: Ns) -> Block {
        Block {
            first_row: row,
            last_row: row,
            min_start: start,
            max_end: end.max(start),
        }
    }

    fn absorb(&mut self, other: &Block) {
        self.first_row = self.first_row.min(other.first_row);
        self.last_row = self.last_row.max(other.last_row);
        self.min_start = self.min_start.min(other.min_start);
        self.max_end = self.max_end.max(other.max_end);
    }

    /// Rows the block's range spans (its kernels, when the table is in start order).
    pub fn rows(&self) -> i64 {
        self.last_row - self.first_row + 1
    }
}

/// The row-block index: blocks of `block_rows` pushed kernels, coarsened pairwise past
/// `MAX_BLOCKS`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blocks {
    pub blocks: Vec<Block>,
    block_rows: u32,
    /// Kernels in the last block.
    filled: u32,
}

impl Default for Blocks {
    fn default() -> Blocks {
        Blocks {
            blocks: Vec::new(),
            block_rows: BLOCK_ROWS,
            filled: 0,
        }
    }
}

impl Blocks {
    pub fn push(&mut self, row: i64, start: Ns, end: Ns) {
        let one = Block::of(row, start, end);
        match self.blocks.last_mut() {
            Some(last) if self.filled < self.block_rows => {
                last.absorb(&one);
                self.filled += 1;
            }
            _ => {
                if self.blocks.len() == MAX_BLOCKS {
                    self.coarsen();
                }
                self.blocks.push(one);
                self.filled = 1;
            }
        }
    }

    /// Merges neighbouring blocks pairwise (only ever called with an even, full block count).
    fn coarsen(&mut self) {
        let merged: Vec<Block> = self
            .blocks
            .chunks(2)
            .map(|pair| {
                let mut b = pair[0];
                pair[1..].iter().for_each(|o| b.absorb(o));
                b
            })
            .collect();
        self.blocks = merged;
        self.block_rows = self.block_rows.saturating_mul(2);
    }

    /// Disjoint ascending row ranges holding every kernel that overlaps `[a, b)`.
    pub fn rows_overlapping(&self, a: Ns, b: Ns) -> Vec<(i64, i64)> {
        let ranges: Vec<(i64, i64)> = self
            .blocks
            .iter()
            .take_while(|blk| blk.min_start < b)
            .filter(|blk| blk.max_end > a)
            .map(|blk| (blk.first_row, blk.last_row))
            .collect();
        merge_rows(ranges)
    }

    /// [`Blocks::rows_overlapping`] for rows pushed in any order (a table in several sorted
    /// runs): every block is looked at, none is assumed to start after its predecessor.
    pub fn rows_overlapping_any_order(&self, a: Ns, b: Ns) -> Vec<(i64, i64)> {
        let ranges: Vec<(i64, i64)> = self
            .blocks
            .iter()
            .filter(|blk| blk.min_start < b && blk.max_end > a)
            .map(|blk| (blk.first_row, blk.last_row))
            .collect();
        merge_rows(ranges)
    }

    /// [`Blocks::rows_overlapping`], each block taken with its neighbours.
    pub fn rows_overlapping_widened(&self, a: Ns, b: Ns) -> Vec<(i64, i64)> {
        let hit: Vec<usize> = (0..self.blocks.len())
            .take_while(|&i| self.blocks[i].min_start < b)
            .filter(|&i| self.blocks[i].max_end > a)
            .collect();
        let ranges: Vec<(i64, i64)> = hit
            .iter()
            .flat_map(|&i| i.saturating_sub(1)..=(i + 1).min(self.blocks.len() - 1))
            .map(|i| (self.blocks[i].first_row, self.blocks[i].last_row))
            .collect();
        merge_rows(ranges)
    }

    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
    }
}

/// Row ranges sorted and merged where they touch or overlap.
fn merge_rows(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (f, l) in ranges {
        match merged.last_mut() {
            Some(last) if f <= last.1.saturating_add(1) => last.1 = last.1.max(l),
            _ => merged.push((f, l)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarsening_keeps_busy_counts_and_top() {
        let mut s = Summary::new(0);
        s.lanes.push(LaneBins::default());
        let end = s.fit(10);
        s.lanes[0].record(&s.grid, 0, end, 7);
        s.lanes[0].record(&s.grid, 20, 25, 8);
        let end = s.fit(BINS as Ns * 3);
        s.lanes[0].record(&s.grid, BINS as Ns * 2, end, 9);
        s.lanes[0].flush(&s.grid);
        assert_eq!(s.grid.width, 4);
        let bins = &s.lanes[0].bins;
        let busy: Ns = bins.iter().map(|b| b.busy).fold(0, Ns::saturating_add);
        assert_eq!(busy, 10 + 5 + BINS as Ns);
        let starts: u32 = bins.iter().map(|b| b.starts).sum();
        assert_eq!(starts, 3);
        assert_eq!(bins[0].top_name, 7);
        assert_eq!(bins[BINS / 2].top_name, 9);
        assert_eq!(bins[BINS / 2 + 1].carried, 1);
    }

    #[test]
    fn blocks_stay_bounded_and_find_rows() {
        let mut blocks = Blocks {
            block_rows: 1,
            ..Blocks::default()
        };
        let n = MAX_BLOCKS as i64 * 4 + 5;
        for row in 0..n {
            blocks.push(row, row * 10, row * 10 + 5);
        }
        assert!(blocks.blocks.len() <= MAX_BLOCKS);
        assert_eq!(blocks.block_rows, 8);
        let ranges = blocks.rows_overlapping(1000 * 10, 1000 * 10 + 1);
        assert_eq!(ranges.len(), 1);
        assert!(ranges[0].0 <= 1000 && ranges[0].1 >= 1000);
    }
}
