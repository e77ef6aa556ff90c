//! The `k` largest items of a stream, in O(n log k) time and O(k) memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Keeps the `k` largest items pushed (by `Ord`).
#[derive(Debug)]
pub struct TopK<T: Ord> {
    k: usize,
    heap: BinaryHeap<Reverse<T>>,
}

impl<T: Ord> TopK<T> {
    pub fn new(k: usize) -> TopK<T> {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Whether `item` would be kept if pushed now (so its payload is built only then).
    pub fn admits(&self, item: &T) -> bool {
        self.k > 0
            && (self.heap.len() < self.k || self.heap.peek().is_some_and(|Reverse(min)| item > min))
    }

    pub fn push(&mut self, item: T) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Reverse(item));
        } else if self.heap.peek().is_some_and(|Reverse(min)| item > *min) {
            self.heap.pop();
            self.heap.push(Reverse(item));
        }
    }

    /// The kept items, largest first.
    pub fn into_sorted_desc(self) -> Vec<T> {
        // Ascending order of `Reverse<T>` is descending order of `T`.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest() {
        let mut t = TopK::new(3);
        for v in [5, 1, 9, 3, 9, 7, 2] {
            t.push(v);
        }
        assert_eq!(t.into_sorted_desc(), vec![9, 9, 7]);
        let mut none = TopK::new(0);
        none.push(1);
        assert!(none.into_sorted_desc().is_empty());
    }
}
