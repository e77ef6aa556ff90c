use std::cmp::Reverse;

use super::sweep::{Span, Sweep};
use super::*;
use crate::drill::{DrillOptions, DrillReport, drill_indexed};
use crate::index::rows::RowIndex;
use crate::index::testing::TraceBuilder;

fn drilled(b: &TraceBuilder) -> DrillReport {
    let ix = RowIndex::loaded(&b.trace, "t", None);
    drill_indexed(&[ix], &DrillOptions::default()).expect("a loaded trace reads")
}

/// `(kind, label, ns)` of a device's causes, largest first.
fn causes(d: &DeviceIdle) -> Vec<(CauseKind, &str, Ns)> {
    d.causes
        .iter()
        .map(|c| (c.kind, c.label.as_str(), c.ns))
        .collect()
}

/// Planted causes, each ns worked out by hand. Device 0 (process 7) idles in three 900 ns
/// gaps between kernels at 0, 1000, 2000 and 3000 (each 100 ns long):
/// - [100, 1000): a sync 200..500 (300) inside an `aten::item, op_id = 5` range 180..520
///   (sync wins; nvtx 40), an `IO 1` range 600..850 (250, nvtx), the launch of the next
///   kernel 900..1000 (100), nothing at 100..180, 520..600, 850..900 (210);
/// - [1100, 2000): a compile range 1000..1900 holding a module load 1200..1300 (jit wins)
///   and a GC pause 1400..1500 (gc wins: 100), so jit 700, all inside a `forward 2` range
///   1050..1950 (jit wins); a cudaMalloc 1850..1950 of which 1900..1950 is outside the
///   compile (alloc 50), a launch 1950..2000 (50);
/// - [2100, 3000): an `outer` range 2000..3000 with `inner 5` 2500..2600 inside (nvtx 900,
///   `outer` holding 800 of it) and a `Holding GIL` range 2100..2300 that names nothing
///   while `outer` is open; process 9, which launches only on device 1, syncs 2100..3000.
///
/// Device 1 (process 9) idles 100..3000: its sync 2100..3000 (900), untraced 2000.
fn planted() -> TraceBuilder {
    let mut b = TraceBuilder::new();
    let launch = |b: &mut TraceBuilder, at: Ns| b.call("cudaLaunchKernel", at, at + 5);
    let c = launch(&mut b, 0);
    b.kernel("k1", 0, 100, c);
    b.range("aten::item, op_id = 5", 180, 520);
    b.call("cudaStreamSynchronize_v3020", 200, 500);
    b.range("IO 1", 600, 850);
    let c = b.call("cudaLaunchKernel_v7000", 900, 1000);
    b.kernel("k2", 1000, 1100, c);
    b.range("KernelExecutor::compileFusion", 1000, 1900);
    b.range("forward 2", 1050, 1950);
    b.call("cuModuleLoadDataEx", 1200, 1300);
    b.range("Python GC", 1400, 1500);
    b.call("cudaMalloc_v3020", 1850, 1950);
    let c = b.call("cudaLaunchKernel_v7000", 1950, 2000);
    b.kernel("k3", 2000, 2100, c);
    b.range("outer", 2000, 3000);
    b.range("Holding GIL", 2100, 2300);
    b.range("inner 5", 2500, 2600);
    // Launched while k3 runs: no idle time.
    let c = launch(&mut b, 2000);
    b.kernel("k4", 3000, 3100, c);
    b.thread(9, 9);
    let c = launch(&mut b, 0);
    b.kernel_on((1, 3), "k5", (0, 100), c);
    b.call("cudaStreamSynchronize_v3020", 2100, 3000);
    let c = launch(&mut b, 50);
    b.kernel_on((1, 3), "k6", (3000, 3100), c);
    b
}

#[test]
fn planted_causes_get_their_exact_time_and_sum_to_the_idle_time() {
    let b = planted();
    let d = drilled(&b);
    let [d0, d1] = &d.idle.per_device[..] else {
        panic!("two devices: {:?}", d.idle);
    };
    assert_eq!((d0.device, d0.idle_ns), (0, 2700));
    assert_eq!(
        causes(d0),
        vec![
            (Nvtx, "outer", 1190),
            (Jit, "KernelExecutor::compileFusion", 700),
            (Sync, "cudaStreamSynchronize", 300),
            (Untraced, "", 210),
            (Launch, "cudaLaunchKernel", 150),
            (Gc, "Python GC", 100),
            (Alloc, "cudaMalloc", 50),
        ]
    );
    assert_eq!((d1.device, d1.idle_ns), (1, 2900));
    assert_eq!(
        causes(d1),
        vec![(Untraced, "", 2000), (Sync, "cudaStreamSynchronize", 900)]
    );
    for dev in [d0, d1] {
        assert_eq!(dev.causes.iter().map(|c| c.ns).sum::<Ns>(), dev.idle_ns);
        let shares: f64 = dev.causes.iter().map(|c| c.share).sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
    }
    // The device-idle total is the gap report's.
    assert_eq!(d.gaps.device_idle.total_us, 5.6);
    // One stream per device: the stream gaps are the device gaps, with the same causes.
    assert_eq!(d.gaps.buckets, d.gaps.device_idle.buckets);
    assert_eq!(d.gaps.bucket_causes, d.gaps.device_idle.bucket_causes);
    assert!(d.gaps.bucket_causes.iter().any(Option::is_some));
    assert_eq!(d.gaps.reading, d.gaps.device_idle.reading);
    // Each gap's cause is the same attribution restricted to it.
    let cause = |start: Ns| {
        let top = &d.gaps.device_idle.top;
        let g = top.iter().find(|g| g.device == 0 && g.start_ns == start);
        let c = g.and_then(|g| g.cause.clone()).expect("a cause");
        (c.kind, c.label, (c.share * 900.0).round() as Ns)
    };
    assert_eq!(cause(100), (Sync, "cudaStreamSynchronize".into(), 300));
    assert_eq!(
        cause(1100),
        (Jit, "KernelExecutor::compileFusion".into(), 700)
    );
    assert_eq!(cause(2100), (Nvtx, "outer".into(), 900));
}

/// The attribution reads the calls and NVTX ranges in start order whatever the tables' row
/// order (nsys writes a range when it ends, and flushes each thread's calls in turn): the
/// planted trace with its runtime, NVTX and kernel rows reversed gets the same causes, gap by
/// gap, as the hand-worked ones of the trace in start order.
#[test]
fn the_attribution_does_not_depend_on_the_tables_row_order() {
    let b = planted();
    let mut r = planted();
    let t = &mut r.trace;
    t.runtime.start.reverse();
    t.runtime.end.reverse();
    t.runtime.thread.reverse();
    t.runtime.correlation.reverse();
    t.runtime.name.reverse();
    t.nvtx.start.reverse();
    t.nvtx.end.reverse();
    t.nvtx.thread.reverse();
    t.nvtx.event_type.reverse();
    t.nvtx.domain.reverse();
    t.nvtx.name.reverse();
    t.nvtx.text_id_name.reverse();
    let k = &mut t.kernels;
    for c in [&mut k.start, &mut k.end] {
        c.reverse();
    }
    for c in [
        &mut k.device,
        &mut k.stream,
        &mut k.process,
        &mut k.correlation,
    ] {
        c.reverse();
    }
    for c in [&mut k.short_name, &mut k.demangled_name] {
        c.reverse();
    }
    assert!(!r.trace.runtime.start.is_sorted() && !r.trace.nvtx.start.is_sorted());
    let (sorted, reversed) = (drilled(&b), drilled(&r));
    assert_eq!(reversed.idle, sorted.idle);
    let causes = |d: &DrillReport| -> Vec<_> {
        let g = &d.gaps.device_idle;
        g.top
            .iter()
            .map(|g| (g.start_ns, g.cause.clone()))
            .collect()
    };
    assert_eq!(causes(&reversed), causes(&sorted));
    assert_eq!(reversed.gaps.bucket_causes, sorted.gaps.bucket_causes);
}

/// Stream gaps take the causes of the device-idle time inside them. Device 0: stream 1
/// runs 0..100 and 1000..1100, stream 2 runs 300..500, stream 3 runs 290..310 and
/// 490..510, so the device idles 100..290 and 510..1000 (680 ns). Stream 1's 900 ns gap
/// holds both (a sync 150..250, a launch 900..1000, 480 ns untraced); stream 3's gap
/// 310..490 lies inside stream 2's kernel: the GPU was busy, it has no cause.
#[test]
fn a_stream_gap_has_the_causes_of_the_idle_time_inside_it() {
    let mut b = TraceBuilder::new();
    b.kernel_on((0, 1), "a", (0, 100), 0);
    b.call("cudaStreamSynchronize", 150, 250);
    b.kernel_on((0, 3), "c", (290, 310), 0);
    b.kernel_on((0, 2), "b", (300, 500), 0);
    b.kernel_on((0, 3), "c", (490, 510), 0);
    let c = b.call("cudaLaunchKernel", 900, 1000);
    b.kernel_on((0, 1), "a", (1000, 1100), c);
    let d = drilled(&b);
    assert_eq!(
        causes(&d.idle.per_device[0]),
        vec![
            (Untraced, "", 480),
            (Sync, "cudaStreamSynchronize", 100),
            (Launch, "cudaLaunchKernel", 100)
        ]
    );
    let stream = |s: u32| {
        let g = d
            .gaps
            .top
            .iter()
            .find(|g| g.stream == Some(s))
            .expect("gap");
        (
            g.gap_us,
            g.cause.clone().map(|c| (c.kind, (c.share * 900.0).round())),
        )
    };
    assert_eq!(stream(1), (0.9, Some((Untraced, 480.0))));
    assert_eq!(stream(3), (0.18, None));
    assert!(
        d.gaps
            .top
            .iter()
            .find(|g| g.stream == Some(3))
            .is_some_and(|g| g.reading.starts_with("the GPU ran other streams' kernels")),
        "{:?}",
        d.gaps.top
    );
    // Both stream gaps are < 1 µs: 1080 ns, of which 480 untraced.
    let bucket = d.gaps.bucket_causes[0].clone().expect("a cause");
    assert_eq!(
        (bucket.kind, (bucket.share * 1080.0).round()),
        (Untraced, 480.0)
    );
    let idle = d.gaps.device_idle.bucket_causes[0]
        .clone()
        .expect("a cause");
    assert_eq!((idle.kind, (idle.share * 680.0).round()), (Untraced, 480.0));
    assert!(
        d.gaps.device_idle.bucket_causes[1..]
            .iter()
            .all(Option::is_none)
    );
}

fn span(start: Ns, end: Ns, kind: CauseKind, label: &str) -> Span<'_> {
    Span {
        start,
        end,
        kind,
        label,
        weak: false,
        order: 0,
    }
}

/// Each gap's causes, `spans` put in start order (an enclosing span first) as the tables' rows
/// come.
fn swept<'t>(gaps: &[(Ns, Ns)], spans: &mut [Span<'t>]) -> Vec<Vec<(CauseKind, &'t str, Ns)>> {
    spans.sort_by_key(|s| (s.start, Reverse(s.end)));
    for (i, s) in spans.iter_mut().enumerate() {
        s.order = i as u64;
    }
    let mut sweep = Sweep::new(spans.iter().copied());
    gaps.iter()
        .map(|&g| {
            let mut v: Vec<_> = sweep.gap(g).iter().collect();
            v.sort();
            v
        })
        .collect()
}

/// Two gaps; a nvtx range over both, a launch inside the first, a sync and a GC pause
/// overlapping in the second (GC first), a weak range losing to a strong one for the label.
#[test]
fn every_ns_goes_to_the_first_cause_open_over_it() {
    let gaps = [(100, 200), (300, 400)];
    let mut spans = [
        span(0, 1000, Nvtx, "loop"),
        span(120, 150, Launch, "cudaLaunchKernel"),
        span(310, 390, Sync, "cudaStreamSynchronize"),
        span(350, 420, Gc, "Python GC"),
        Span {
            weak: true,
            ..span(330, 340, Nvtx, "Holding GIL")
        },
        span(250, 305, Nvtx, "inner"),
    ];
    let got = swept(&gaps, &mut spans);
    assert_eq!(
        got[0],
        vec![(Launch, "cudaLaunchKernel", 30), (Nvtx, "loop", 70)]
    );
    // 300..305 inner (innermost nvtx), 305..310 loop, 310..350 sync, 350..400 gc.
    assert_eq!(
        got[1],
        vec![
            (Sync, "cudaStreamSynchronize", 40),
            (Gc, "Python GC", 50),
            (Nvtx, "inner", 5),
            (Nvtx, "loop", 5)
        ]
    );
}

#[test]
fn uncovered_time_is_untraced_and_a_weak_range_labels_only_alone() {
    let gaps = [(0, 10), (20, 30)];
    let mut spans = [
        Span {
            weak: true,
            ..span(22, 28, Nvtx, "Holding GIL")
        },
        span(24, 26, Nvtx, "user"),
    ];
    let got = swept(&gaps, &mut spans);
    assert_eq!(got[0], vec![(Untraced, "", 10)]);
    assert_eq!(
        got[1],
        vec![
            (Nvtx, "Holding GIL", 4),
            (Nvtx, "user", 2),
            (Untraced, "", 4)
        ]
    );
}

#[test]
fn the_precedence_lists_every_cause_once() {
    let all = [
        Sync, Launch, ModuleLoad, Jit, Alloc, Memop, Gc, Gil, Osrt, Comm, Api, Nvtx, Untraced,
    ];
    for k in all {
        assert_eq!(PRECEDENCE.iter().filter(|&&p| p == k).count(), 1, "{k:?}");
        assert_eq!(
            serde_json::to_value(k).ok(),
            Some(serde_json::Value::from(k.name()))
        );
    }
    assert_eq!(PRECEDENCE.last(), Some(&Untraced));
}

#[test]
fn sentences_say_what_was_measured_of_which_gap_time_or_that_nothing_was() {
    let mut t = Tally::default();
    assert_eq!(cause_sentence(&t, 0), "no host activity recorded");
    t.add(Untraced, "", 60);
    t.add(ModuleLoad, "cuLibraryLoadData", 40);
    assert_eq!(
        cause_sentence(&t, 100),
        "no host activity recorded for 60.0% of the 100\u{a0}ns of gap time, then module_load (cuLibraryLoadData) 40.0%"
    );
    t.add(Launch, "cudaLaunchKernel", 100);
    assert_eq!(
        cause_sentence(&t, 200),
        "launch (cudaLaunchKernel) holds 50.0% of the 200\u{a0}ns of gap time"
    );
}

/// An async copy call is synchronous in effect when its copy has a pageable host side, even
/// when the copy starts long after the call returned and after a later call's copy: the copies
/// found ahead of their call's turn are kept until it asks.
#[test]
fn pageable_copies_are_found_whenever_they_start() {
    use crate::model::rows::EventRows;
    let mut b = TraceBuilder::new();
    let a = b.call("cudaMemcpyAsync_v3020", 100, 300);
    let later = b.call("cudaMemcpyAsync_v3020", 400, 500);
    b.call("cudaStreamSynchronize_v3020", 600, 700);
    let (pageable, pinned) = (crate::model::PAGEABLE_MEMORY, 1);
    // The later call's copy starts first, pageable, the first call's next, pinned: both
    // milliseconds after their calls returned (queued behind the stream's kernels).
    b.memcpy(1, pageable, 2, later);
    b.memcpy(1, pinned, 2, a);
    b.trace.memcpy.start = vec![5_000_000, 9_000_000];
    b.trace.memcpy.end = vec![5_000_500, 9_000_500];
    let ix = RowIndex::loaded(&b.trace, "t", None);
    let mut copies = super::sweep::PageableCopies::new(&ix);
    let asked: Vec<bool> = b
        .trace
        .calls()
        .filter(|c| c.correlation != 0 && c.start < 600)
        .map(|c| copies.issued_pageable(&c))
        .collect();
    assert_eq!(asked, [false, true]);
    assert_eq!(copies.held(), 2, "both copies held at once");
}
