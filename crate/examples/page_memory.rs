//! Replays the page's analysis flow natively (sequential load with the page's options, timeline
//! index, detect, gap histogram) and prints heap high-water marks after each step: the wasm
//! worker runs the same code, so this is where its memory goes. Not a test; prints figures.
//! Usage: cargo run --release -p nsys-lens --example page_memory -- TRACE.sqlite
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // Worst case (a moving realloc): old and new blocks both live for a moment.
        let live = LIVE.fetch_add(new, Relaxed) + new;
        PEAK.fetch_max(live, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn mib(b: usize) -> String {
    format!("{:.0} MiB", b as f64 / 1048576.0)
}

fn mark(step: &str, t: Instant) {
    println!(
        "{step:<28} live {:>9}  peak {:>9}  {:.2} s",
        mib(LIVE.load(Relaxed)),
        mib(PEAK.load(Relaxed)),
        t.elapsed().as_secs_f64()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: page_memory TRACE.sqlite")?;
    let path = std::path::Path::new(&path);
    let t = Instant::now();
    let conn = nsys_lens::trace::open_path(path)?;
    nsys_lens::trace::configure(&conn, "trace")?;
    let mut quiet = |_: nsys_lens::trace::Progress| true;
    let opts = if std::env::args().nth(2).as_deref() == Some("detect") {
        nsys_lens::trace::LoadOptions::detect()
    } else {
        nsys_lens::trace::LoadOptions::page()
    };
    let trace = nsys_lens::trace::load(&conn, "trace", opts, &mut quiet)?;
    drop(conn);
    mark("load (page options)", t);
    println!(
        "  kernels {}  runtime {}  nvtx {}",
        trace.kernels.len(),
        trace.runtime.len(),
        trace.nvtx.len()
    );
    let timeline = nsys_lens::timeline::Timeline::new(&trace);
    mark("timeline index", t);
    let report = nsys_lens::detect::detect(&trace, &Default::default())?;
    mark("detect", t);
    let gaps = nsys_lens::drill::gaps::idle_gap_histogram(&trace, None);
    mark("gap histogram", t);
    let (s, e) = timeline.extent();
    let view = timeline.view(&trace, s, e, 1200);
    mark("timeline view", t);
    std::hint::black_box((report, gaps, view));
    Ok(())
}
