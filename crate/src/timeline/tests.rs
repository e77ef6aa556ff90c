//! The timeline on synthetic in-memory traces: which path a view takes, tables out of start
//! order, and memory that does not follow the kernel count.

use super::*;
use crate::model::{Kernels, NameId, Strings};

/// `n` kernels 100 ns apart, alternating between two devices, of 60 to 120 ns, named by
/// `i % 5`, in start order.
fn synthetic(n: usize) -> Trace {
    let mut trace = Trace::default();
    let names: Vec<(i64, String)> = (0..5).map(|i| (i, format!("k{i}"))).collect();
    trace.strings = Strings::from_rows(names);
    let k: &mut Kernels = &mut trace.kernels;
    for i in 0..n {
        let start = 1_000 + 100 * i as Ns;
        k.start.push(start);
        k.end.push(start + 60 + 10 * (i % 7) as Ns);
        k.device.push((i % 2) as u32);
        k.stream.push(7);
        k.process.push(0);
        k.short_name.push((i % 5) as NameId);
    }
    trace
}

/// The same kernels with the table in reverse order.
fn reversed(trace: &Trace) -> Trace {
    let mut r = trace.clone();
    let k = &mut r.kernels;
    for v in [&mut k.start, &mut k.end] {
        v.reverse();
    }
    k.device.reverse();
    k.stream.reverse();
    k.process.reverse();
    k.short_name.reverse();
    r
}

#[test]
fn a_wide_view_uses_the_summary_and_a_narrow_one_re_reads_rows() {
    let trace = synthetic(EXACT_ROWS as usize + 50_000);
    let tl = Timeline::new(&trace);
    let (s, e) = tl.extent();
    assert!(tl.rows_covering(s, e) > EXACT_ROWS);
    let auto = tl.view(&trace, s, e, 500).expect("view");
    let summary = tl
        .view_with(&trace, s, e, 500, Detail::Summary)
        .expect("view");
    assert_eq!(auto, summary);
    let (a, b) = (s + (e - s) / 3, s + (e - s) / 3 + 50_000);
    assert!(tl.rows_covering(a, b) <= EXACT_ROWS);
    let auto = tl.view(&trace, a, b, 500).expect("view");
    let exact = tl
        .view_with(&trace, a, b, 500, Detail::Exact)
        .expect("view");
    assert_eq!(auto, exact);
}

#[test]
fn a_table_out_of_start_order_gives_the_same_exact_views_and_hits() {
    let sorted = synthetic(20_000);
    let unsorted = reversed(&sorted);
    let (x, y) = (Timeline::new(&sorted), Timeline::new(&unsorted));
    assert_eq!(x.extent(), y.extent());
    let (s, e) = x.extent();
    for (a, b) in [(s, e), (s + 123_456, s + 200_000)] {
        let vx = x
            .view_with(&sorted, a, b, 300, Detail::Exact)
            .expect("view");
        let vy = y
            .view_with(&unsorted, a, b, 300, Detail::Exact)
            .expect("view");
        assert_eq!(vx, vy);
    }
    for t in [s, s + 5_030, s + 1_000_050, e - 1] {
        for lane in 0..2 {
            let hx = x.hit(&sorted, lane, t, 30).expect("hit");
            assert_eq!(hx, y.hit(&unsorted, lane, t, 30).expect("hit"));
        }
    }
    assert!(x.hit(&sorted, 0, s + 5_030, 0).expect("hit").is_some());
}

#[test]
fn ten_times_more_kernels_keep_the_summary_size() {
    let (small, large) = (synthetic(30_000), synthetic(300_000));
    let (a, b) = (Timeline::new(&small), Timeline::new(&large));
    assert_eq!(a.lane_count(), 2);
    assert_eq!(a.summary_bytes(), b.summary_bytes());
    let bins: usize = b.lanes.iter().map(|l| l.bins.bins.len()).sum();
    assert_eq!(bins, 2 * summary::BINS);
    assert!(b.index_bytes() <= summary::MAX_BLOCKS * std::mem::size_of::<summary::Block>());
}

#[test]
fn an_empty_trace_has_an_empty_timeline() {
    let trace = Trace::default();
    let tl = Timeline::new(&trace);
    assert_eq!((tl.extent(), tl.lane_count()), ((0, 0), 0));
    let view = tl.view(&trace, 0, 10, 4).expect("view");
    assert!(view.lanes.is_empty());
    assert_eq!(tl.hit(&trace, 0, 5, 5).expect("hit"), None);
}

#[test]
fn absurd_timestamps_neither_panic_nor_break_the_grid() {
    let mut trace = synthetic(1_000);
    let k = &mut trace.kernels;
    k.start[0] = -(1 << 60);
    k.end[0] = 1 << 60;
    k.end[5] = k.start[5] - 1_000;
    let tl = Timeline::new(&trace);
    assert_eq!(tl.extent(), (-(1 << 60), 1 << 60));
    let (s, e) = tl.extent();
    for detail in [Detail::Summary, Detail::Exact] {
        let view = tl.view_with(&trace, s, e, 100, detail).expect("view");
        assert!(view.lanes[0].busy.iter().all(|&b| b > 0.99), "{detail:?}");
    }
    assert!(tl.hit(&trace, 0, 0, 10).expect("hit").is_some());
}

/// A trace of `n` forward steps (a name each, as TensorRT-LLM writes them) 1 µs apart: every
/// 500th longer than 2^32 ns, every 500th ending before it starts; one kernel.
fn stepped(n: usize) -> Trace {
    let mut trace = synthetic(1);
    let names: Vec<(i64, String)> = (0..n)
        .map(|i| {
            let text = format!("[Executor] _forward_step {i}: 0 ctx reqs, 4 gen reqs");
            (i as i64, text)
        })
        .collect();
    trace.strings = Strings::from_rows(names);
    for i in 0..n {
        let start = 1_000 * i as Ns;
        let end = match i % 500 {
            7 => start + (1 << 32) + 7,
            8 => start - 5,
            _ => start + 400 + (i % 300) as Ns,
        };
        trace.nvtx.push_range((start, end), 0, i as NameId);
    }
    trace
}

#[test]
fn the_step_lane_keeps_its_size_and_reads_its_steps_back() {
    let size = |n: usize| {
        let trace = stepped(n);
        let lane = StepLane::of(&trace).expect("steps");
        (trace, lane)
    };
    let (_, short) = size(10_000);
    let (trace, lane) = size(40_000);
    // Bins and at most `MAX_BLOCKS` row blocks, whatever the steps.
    let most = summary::BINS * std::mem::size_of::<summary::Bin<Label>>()
        + summary::MAX_BLOCKS * std::mem::size_of::<summary::Block>();
    assert!(lane.heap_bytes() <= most, "{} bytes", lane.heap_bytes());
    assert!(
        lane.heap_bytes() < short.heap_bytes() + short.heap_bytes() / 100,
        "{} then {} bytes",
        short.heap_bytes(),
        lane.heap_bytes()
    );
    // Zoomed in, the steps come back as they were (damaged ones left out, as detect does).
    let (a, b) = (5_000_000, 5_600_000);
    let rows = lane.rows_near(a, b);
    let got: Vec<(Ns, Ns, NameId)> = lane
        .read(&trace, &rows, (a, b))
        .expect("read")
        .into_iter()
        .map(|(s, e, (label, row))| {
            assert_eq!(
                label,
                Label::Name(row as NameId),
                "held names label their steps"
            );
            (s, e, row as NameId)
        })
        .collect();
    let nvtx = &trace.nvtx;
    let want: Vec<(Ns, Ns, NameId)> = (0..nvtx.len())
        .filter(|&i| nvtx.end[i] >= nvtx.start[i])
        .map(|i| (nvtx.start[i], nvtx.end[i], i as NameId))
        .filter(|&(s, _, _)| s < b && s >= a - lane.max_len)
        .collect();
    assert!(want.len() > 500, "{} steps", want.len());
    assert_eq!(got, want);
    let tl = Timeline::new(&trace);
    let hit = tl
        .hit(&trace, 0, 5_000_100, 10)
        .expect("hit")
        .expect("a step");
    assert_eq!(
        (hit.start_ns, hit.name.as_str()),
        (5_000_000, trace.strings.get(5000))
    );
}

/// The step lane folded over the ranges a row at a time, as the page's host side reads them,
/// draws and reads back what the lane of the pass over the same ranges does; ranges out of
/// start order void the fold.
#[test]
fn the_step_lane_folded_over_the_ranges_is_the_lane_of_their_pass() {
    let trace = stepped(20_000);
    let mut fold = StepLaneFold::default();
    for row in trace.ranges() {
        assert!(fold.range(&row, &trace.strings), "in start order");
    }
    let folded = fold.finish().expect("not void").expect("steps");
    let passed = Timeline::new(&trace);
    let tl = Timeline::new(&trace).with_step_lane(Some(folded));
    let (s, e) = tl.extent();
    let (s, e) = (s.min(0), e.max(25_000_000));
    for (a, b, detail) in [
        (s, e, Detail::Summary),
        (5_000_000, 5_600_000, Detail::Exact),
    ] {
        let view = |t: &Timeline| t.view_with(&trace, a, b, 700, detail).expect("view");
        assert_eq!(view(&tl), view(&passed), "{detail:?}");
    }
    let mut fold = StepLaneFold::default();
    let rows: Vec<_> = trace.ranges().collect();
    let taken: Vec<bool> = rows
        .iter()
        .rev()
        .map(|r| fold.range(r, &trace.strings))
        .collect();
    assert!(taken.contains(&false), "ranges in reverse taken");
    assert!(fold.finish().is_none(), "void");
}

#[test]
fn a_device_view_shows_one_device_folded_or_per_stream_under_its_marked_lane() {
    let mut trace = Trace {
        strings: Strings::from_rows(vec![
            (0, "gemm".to_string()),
            (1, "ncclDevKernel_AllReduce".to_string()),
        ]),
        ..Trace::default()
    };
    let k: &mut Kernels = &mut trace.kernels;
    for (device, stream, name, start, end) in [
        (0, 7, 0, 1_000, 1_500),
        (1, 7, 0, 1_000, 1_400),
        (1, 8, 1, 1_500, 1_900),
    ] {
        k.start.push(start);
        k.end.push(end);
        k.device.push(device);
        k.stream.push(stream);
        k.process.push(0);
        k.short_name.push(name);
    }
    let tl = Timeline::new(&trace);
    let names = vec!["ncclDevKernel_AllReduce".to_string()];
    let events = [(1_500, 1_900, 0)];
    let what = |streams| DeviceLanes {
        device: 1,
        streams,
        marked: Some(MarkedLane {
            label: "rank 1 · collectives".into(),
            kind: "collectives",
            events: &events,
            names: &names,
        }),
    };
    let labels =
        |v: &TimelineView| -> Vec<String> { v.lanes.iter().map(|l| l.label.clone()).collect() };
    let folded = tl
        .device_view(&trace, (1_000, 2_000), 100, &what(false))
        .expect("view");
    assert_eq!(
        labels(&folded),
        vec!["rank 1 · collectives", "▸ GPU 1 · 2 streams"]
    );
    let open = tl
        .device_view(&trace, (1_000, 2_000), 100, &what(true))
        .expect("view");
    assert_eq!(
        labels(&open),
        vec![
            "rank 1 · collectives",
            "▾ GPU 1 · stream 7",
            "GPU 1 · stream 8"
        ]
    );
    assert!(
        open.lanes.iter().all(|l| l.device == Some(1)),
        "device 0 is not shown"
    );
    // The marked lane: its one event drawn on its own, named and classed as a collective.
    let item = open.lanes[0].items[0];
    assert_eq!((item.start_ns, item.end_ns), (1_500, 1_900));
    let name = usize::try_from(item.name).expect("named");
    assert_eq!(open.names[name], "ncclDevKernel_AllReduce");
    assert_eq!(open.classes[name], "collective");
    // Device 1 ran nothing in [1400, 1500): idle there, on its lanes and the marked one.
    let column = 45; // [1450, 1460)
    assert!(open.lanes.iter().all(|l| l.idle[column]));
    assert!(open.lanes.iter().all(|l| !l.idle[10]));
    // Hovers: the marked event; on the folded lane, the stream that ran something there.
    let hit = |streams, lane, t| {
        tl.device_hit(&trace, &what(streams), lane, (t, 0))
            .expect("hit")
            .map(|h| (h.lane, h.name, h.start_ns, h.stream))
    };
    let nccl = "ncclDevKernel_AllReduce".to_string();
    assert_eq!(hit(false, 0, 1_600), Some((0, nccl.clone(), 1_500, None)));
    assert_eq!(hit(false, 1, 1_600), Some((1, nccl, 1_500, Some(8))));
    assert_eq!(
        hit(true, 1, 1_200),
        Some((1, "gemm".into(), 1_000, Some(7)))
    );
    assert_eq!(hit(true, 2, 1_200), None);
    assert_eq!(hit(true, 9, 1_200), None);
}
