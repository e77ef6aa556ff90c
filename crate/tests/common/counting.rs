//! A global allocator counting live heap bytes and their high-water mark, installed in the test
//! or example that includes this file (`#[path = …] mod counting;`). The page's wasm memory only
//! grows, so a peak is what a worker keeps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct Counting;
/// Heap bytes allocated and not freed.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE` has been since it was last reset (callers store `LIVE` into it).
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        PEAK.fetch_max(LIVE.fetch_add(l.size(), Relaxed) + l.size(), Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    /// A block that grows is counted twice until the old one is freed (a move's copy); one that
    /// shrinks stays in place (as dlmalloc, the wasm worker's allocator, and glibc both do), so
    /// its smaller size is all there is.
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            PEAK.fetch_max(LIVE.fetch_add(new, Relaxed) + new, Relaxed);
            LIVE.fetch_sub(l.size(), Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Relaxed);
        }
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// `b` bytes in MiB, as the examples print them.
#[allow(dead_code)] // not every includer prints
pub fn mib(b: usize) -> String {
    format!("{:.0} MiB", b as f64 / 1048576.0)
}

/// Prints the live heap, the high-water mark since the last mark (the step's own peak: what
/// the wasm worker's memory must hold while it runs) and the step's time; starts the next
/// step's mark at the live heap. Returns the step's peak.
#[allow(dead_code)]
pub fn mark(step: &str, t: std::time::Instant) -> usize {
    let live = LIVE.load(Relaxed);
    let peak = PEAK.swap(live, Relaxed);
    println!(
        "{step:<40} live {:>9}  step peak {:>9}  {:.2} s",
        mib(live),
        mib(peak),
        t.elapsed().as_secs_f64()
    );
    peak
}
