//! An append-only list in fixed-size blocks, for what grows with the number of forward steps.
//!
//! Why not a `Vec`: the page's wasm memory keeps its high-water mark, and a `Vec` grown a
//! step at a time is copied into ever larger blocks whose predecessors stay behind as holes
//! that lists growing beside it cannot reuse. Blocks of one size are allocated once, never
//! copied, and a freed one fits any later block.

/// Entries per block: 16 Ki (256 KiB of 16-byte entries).
const BLOCK: usize = 1 << 14;

/// An append-only list of `T` in blocks of `BLOCK` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunked<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Copy> Chunked<T> {
    /// Appends `x`. The first block doubles up to `BLOCK` (a short list stays small); later
    /// ones are allocated whole.
    pub fn push(&mut self, x: T) {
        match self.blocks.last_mut() {
            Some(block) if block.len() < BLOCK => {
                if block.len() == block.capacity() {
                    block.reserve_exact(block.len().clamp(1, BLOCK - block.len()));
                }
                block.push(x);
            }
            last => {
                let capacity = if last.is_some() { BLOCK } else { 16 };
                let mut block = Vec::with_capacity(capacity);
                block.push(x);
                self.blocks.push(block);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> Option<T> {
        self.blocks.get(i / BLOCK)?.get(i % BLOCK).copied()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
        self.len = 0;
    }

    /// Returns the last block's unused room (the list is complete).
    pub fn shrink_to_fit(&mut self) {
        if let Some(block) = self.blocks.last_mut() {
            block.shrink_to_fit();
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = T> + '_ {
        self.blocks.iter().flat_map(|b| b.iter().copied())
    }

    /// Entries `from..` in order.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = T> + '_ {
        let (first, skip) = (from / BLOCK, from % BLOCK);
        self.blocks
            .iter()
            .skip(first)
            .enumerate()
            .flat_map(move |(k, b)| b.iter().skip(if k == 0 { skip } else { 0 }).copied())
    }

    /// The first index whose entry fails `pred`, for a list where every entry satisfying it
    /// comes first (as [`slice::partition_point`]).
    pub fn partition_point(&self, pred: impl Fn(&T) -> bool) -> usize {
        let full = self.blocks.partition_point(|b| b.last().is_some_and(&pred));
        match self.blocks.get(full) {
            Some(block) => full * BLOCK + block.partition_point(&pred),
            None => self.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_list_reads_back_and_searches_as_a_vec() {
        for n in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17] {
            let want: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
            let mut list = Chunked::default();
            want.iter().for_each(|&x| list.push(x));
            assert_eq!(list.len(), n);
            assert_eq!(list.iter().collect::<Vec<_>>(), want);
            for i in [0, 1, BLOCK - 1, BLOCK, n.saturating_sub(1), n, n + 1] {
                assert_eq!(list.get(i), want.get(i).copied(), "get({i}) of {n}");
                let from: Vec<u64> = list.iter_from(i).collect();
                assert_eq!(from, want.get(i..).unwrap_or(&[]), "from {i} of {n}");
            }
            for x in [0, 1, 2, 3, 3 * BLOCK as u64, 3 * n as u64, 3 * n as u64 + 5] {
                assert_eq!(
                    list.partition_point(|&v| v < x),
                    want.partition_point(|&v| v < x),
                    "partition at {x} of {n}"
                );
            }
        }
    }
}
