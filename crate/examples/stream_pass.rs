//! The page's streamed open, natively and step by step (host side, kernel pass, results as
//! bytes, API calls, attach, verdict), with the time and the heap high-water mark of each step;
//! with `--each`, also the bare `rowid`-chunk read and each one-pass analysis alone. Prints
//! figures; not a test.
//! Usage: cargo run --release -p nsys-lens --example stream_pass -- TRACE.sqlite [--each]
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

#[path = "../tests/common/counting.rs"]
mod counting;
use counting::{LIVE, PEAK};

/// Prints the heap high-water mark since the last call, then restarts it from the live bytes.
fn peak() {
    let mib = |b: usize| b as f64 / 1048576.0;
    println!(
        "   heap peak {:>7.1} MiB, live {:>7.1} MiB",
        mib(PEAK.load(Relaxed)),
        mib(LIVE.load(Relaxed))
    );
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

use nsys_lens::detect::{DetectConfig, KernelSweep};
use nsys_lens::drill::gaps::GapSweep;
use nsys_lens::model::{KernelEvent, Trace};
use nsys_lens::streamed::feed::FeedChunk;
use nsys_lens::streamed::{HostPlans, KernelPass, KernelPlan, KernelResults, PROFILES, Streamed};
use nsys_lens::timeline::TimelineBuilder;
use nsys_lens::trace::{self, KernelRows, LoadOptions, Schema, StagedLoad};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: stream_pass TRACE.sqlite [--each]")?;
    let conn = trace::open_path(std::path::Path::new(&path))?;
    let t = Instant::now();
    let step = |what: &str| {
        print!("{what:<36} {:>6.2} s", t.elapsed().as_secs_f64());
        peak();
    };
    let mut staged = StagedLoad::begin(&conn, &path, &mut |_| true)?;
    step("strings");
    let mut feed = Vec::new();
    let mut plans = HostPlans::load(&mut staged, &conn, &path, &mut |_| true, &mut |c| {
        feed.push(c)
    })?;
    step("detect plans from NVTX ranges");
    let plan_bytes = plans.kernel_plan(staged.trace());
    step(&format!(
        "kernel plan ({} KiB to send)",
        plan_bytes.len() / 1024
    ));
    let each = std::env::args().any(|a| a == "--each");
    let feed_copy = feed.clone();
    let (bytes, plan) = kernel_pass(&conn, staged.schema(), &path, (plan_bytes, feed), each)?;
    let schema = staged.schema().clone();
    let swept = plans.sweep_launches(&conn, &path, (&mut staged, &mut |_| true), &mut |i| {
        feed_copy.get(i).cloned()
    })?;
    step(if swept {
        "kernel launches swept (M2)"
    } else {
        "kernel launches not sweepable"
    });
    let host = staged.finish(&conn, &path, LoadOptions::detect(), &mut |_| true)?;
    if !swept {
        plans.sweep_loaded_launches(&host);
    }
    step("rest of the host side");
    let streamed = Streamed::attach(host, plans, KernelResults::from_bytes(&bytes)?)?;
    step("attach");
    std::hint::black_box(streamed.detect(&DetectConfig::default())?);
    step("verdict");
    if let Some(plan) = plan {
        each_analysis(&conn, &schema, &path, &streamed.host, (&plan, &feed_copy))?;
    }
    Ok(())
}

/// The loader worker's part: the plan received as bytes, the kernel pass, its results as bytes
/// (and the plan, for `--each`). Prints its own heap peak above what was live before it, as
/// the loader is a worker of its own in the page.
fn kernel_pass(
    conn: &rusqlite::Connection,
    schema: &Schema,
    path: &str,
    (plan_bytes, feed): (Vec<u8>, Vec<Vec<u8>>),
    keep_plan: bool,
) -> Res<(Vec<u8>, Option<KernelPlan>)> {
    // The page's loader holds the plan's bytes too (copied in from the message); the chunks of
    // windows wait outside wasm memory, each copied in when the pass needs it.
    let waiting_chunks: usize = feed.iter().map(Vec::capacity).sum();
    println!(
        "{} chunks of windows ({} KiB, held by the page outside wasm memory)",
        feed.len(),
        waiting_chunks / 1024
    );
    let before = LIVE.load(Relaxed) - plan_bytes.capacity() - waiting_chunks;
    let mut feed = feed.into_iter();
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let plan = KernelPlan::from_bytes(&plan_bytes)?;
    drop(plan_bytes);
    let mut pass = KernelPass::new(conn, schema, path)?;
    let kept = keep_plan.then(|| plan.clone());
    pass.set_plan(plan)?;
    loop {
        let more = pass.step(conn, 1 << 16)?;
        while pass.needs_feed() {
            let Some(chunk) = feed.next() else { break };
            pass.feed(&chunk)?;
        }
        if !more {
            break;
        }
    }
    let bytes = pass.finish()?.to_bytes();
    println!(
        "kernel pass ({:>5} KiB of results): loader heap peak {:>7.1} MiB above the host side",
        bytes.len() / 1024,
        (PEAK.load(Relaxed) - before) as f64 / 1048576.0
    );
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    Ok((bytes, kept))
}

/// The kernel table read alone, then through each one-pass analysis alone.
fn each_analysis(
    conn: &rusqlite::Connection,
    schema: &Schema,
    path: &str,
    host: &Trace,
    (plan, feed): (&KernelPlan, &[Vec<u8>]),
) -> Res<()> {
    let time = |what: &str, f: &mut dyn FnMut(KernelEvent)| -> Res<()> {
        let t = Instant::now();
        let mut rows = KernelRows::new(conn, schema, path, true)?;
        let mut processes = host.processes.clone();
        while !rows.is_done() {
            rows.next_chunk(
                conn,
                path,
                1 << 16,
                |id| host.strings.resolve(id),
                &mut processes,
                &mut *f,
            )?;
        }
        println!("{what:<36} {:>6.2} s", t.elapsed().as_secs_f64());
        Ok(())
    };
    time("read only", &mut |e| {
        std::hint::black_box(e);
    })?;
    let mut sweeps: Vec<KernelSweep> = if plan.fed {
        plan.sweeps.iter().cloned().map(KernelSweep::fed).collect()
    } else {
        plan.sweeps.iter().cloned().map(KernelSweep::of).collect()
    };
    // Fed every window ahead here: this times the sweeps, not their memory.
    for chunk in feed {
        FeedChunk::from_bytes(chunk)?.apply(&mut sweeps)?;
    }
    for (profile, mut sweep) in PROFILES.iter().zip(sweeps) {
        time(
            &format!("read + detect sweep ({})", profile.name()),
            &mut |e| {
                let _ = sweep.push(e);
            },
        )?;
    }
    let mut timeline = TimelineBuilder::without_steps(true);
    time("read + timeline", &mut |e| {
        let _ = timeline.push(e);
    })?;
    let mut gaps = GapSweep::new(None);
    time("read + gap sweep", &mut |e| {
        let _ = gaps.push(&e);
    })
}
