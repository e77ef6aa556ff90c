//! Times the page's kernel pass natively, step by step: the bare `rowid`-chunk read, then each
//! one-pass analysis on its own, then all of them (what the loader worker runs). Prints figures.
//! Usage: cargo run --release -p nsys-lens --example stream_pass -- TRACE.sqlite
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// Counts live heap bytes and their high-water mark (the page's wasm memory only grows, so its
/// peak is what a worker keeps).
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        PEAK.fetch_max(LIVE.fetch_add(l.size(), Relaxed) + l.size(), Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        PEAK.fetch_max(LIVE.fetch_add(new, Relaxed) + new, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Prints the heap high-water mark since the last call, then restarts it from the live bytes.
fn peak(what: &str) {
    let mib = |b: usize| b as f64 / 1048576.0;
    println!(
        "  heap: {what:<40} peak {:>7.1} MiB, live {:>7.1} MiB",
        mib(PEAK.load(Relaxed)),
        mib(LIVE.load(Relaxed))
    );
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

use nsys_lens::detect::{DetectConfig, KernelSweep};
use nsys_lens::drill::gaps::GapSweep;
use nsys_lens::model::KernelEvent;
use nsys_lens::streamed::{KernelPass, KernelPlan, PROFILES};
use nsys_lens::timeline::TimelineBuilder;
use nsys_lens::trace::{self, KernelNames, KernelRows, StagedLoad};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: stream_pass TRACE.sqlite")?;
    let conn = trace::open_path(std::path::Path::new(&path))?;
    trace::configure(&conn, &path)?;
    peak("start");
    let mut staged = StagedLoad::begin(&conn, &path, &mut |_| true)?;
    peak("strings");
    staged.nvtx(&conn, &path, true, &mut |_| true)?;
    peak("NVTX ranges");
    let host = KernelPlan::of(staged.trace()).into_trace(staged.trace().strings.clone());
    let schema = staged.schema().clone();

    let events = |f: &mut dyn FnMut(KernelEvent)| -> Result<u64, Box<dyn std::error::Error>> {
        let mut rows = KernelRows::new(&conn, &schema, &path)?;
        let mut processes = host.processes.clone();
        let names = KernelNames(&host.strings);
        let mut n = 0u64;
        while !rows.is_done() {
            rows.next_chunk(&conn, &path, 1 << 16, &names, &mut processes, |e| {
                n += 1;
                f(e)
            })?;
        }
        Ok(n)
    };
    let time =
        |what: &str, f: &mut dyn FnMut(KernelEvent)| -> Result<(), Box<dyn std::error::Error>> {
            let t = Instant::now();
            let n = events(f)?;
            println!(
                "{what:<36} {:>7.2} s  ({n} kernels)",
                t.elapsed().as_secs_f64()
            );
            Ok(())
        };
    let t = Instant::now();
    let mut pass = KernelPass::new(&conn, &schema, staged.trace().strings.clone(), &path)?;
    pass.set_plan(KernelPlan::of(staged.trace()))?;
    while pass.step(&conn, 1 << 16)? {}
    println!(
        "{:<36} {:>7.2} s",
        "the pass's reading",
        t.elapsed().as_secs_f64()
    );
    peak("kernel pass (plan first)");
    let results = pass.finish()?;
    println!(
        "{:<36} {:>7.2} s",
        "… and finish",
        t.elapsed().as_secs_f64()
    );
    let bytes = results.to_bytes();

    println!(
        "{:<36} {:>7.2} s  (results {} KiB)",
        "the whole kernel pass",
        t.elapsed().as_secs_f64(),
        bytes.len() / 1024
    );
    if std::env::args().nth(2).as_deref() != Some("pass") {
        time("read only", &mut |e| {
            std::hint::black_box(e);
        })?;
        for profile in PROFILES {
            let cfg = DetectConfig {
                profile,
                ..DetectConfig::default()
            };
            let mut sweep = KernelSweep::new(&host, &cfg);
            time(
                &format!("read + detect sweep ({})", profile.name()),
                &mut |e| {
                    let _ = sweep.push(e);
                },
            )?;
            std::hint::black_box(sweep.finish());
        }
        let mut timeline = TimelineBuilder::new(&host, true);
        time("read + timeline", &mut |e| {
            let _ = timeline.push(e);
        })?;
        let mut gaps = GapSweep::new(None);
        time("read + gap sweep", &mut |e| {
            let _ = gaps.push(&e);
        })?;
        let mut sweeps: Vec<KernelSweep> = PROFILES
            .iter()
            .map(|&profile| {
                KernelSweep::new(
                    &host,
                    &DetectConfig {
                        profile,
                        ..DetectConfig::default()
                    },
                )
            })
            .collect();
        let mut timeline = TimelineBuilder::new(&host, true);
        let mut gaps = GapSweep::new(None);
        time("read + all four, one closure", &mut |e| {
            for s in &mut sweeps {
                let _ = s.push(e);
            }
            let _ = timeline.push(e);
            let _ = gaps.push(&e);
        })?;
    }
    drop(results);
    peak("kernel pass results as bytes");
    let host_side = staged.finish(
        &conn,
        &path,
        nsys_lens::trace::LoadOptions::detect(),
        &mut |_| true,
    )?;
    peak("host side: API calls (launch only)");
    println!(
        "  runtime rows {} nvtx rows {} strings {}",
        host_side.runtime.len(),
        host_side.nvtx.len(),
        host_side.strings.len()
    );
    let results = nsys_lens::streamed::KernelResults::from_bytes(&bytes)?;
    let streamed = nsys_lens::streamed::Streamed::attach(host_side, results)?;
    peak("attach");
    let report = streamed.detect(&DetectConfig::default())?;
    peak("detect");
    std::hint::black_box(report);
    Ok(())
}
