//! Timeline level of detail: aggregated columns preserve busy time, mark idle columns, and hit
//! testing finds the kernel under the pointer. Busy time comes from the generator's answers.

use nsys_lens::synth::{GenOptions, generate};
use nsys_lens::timeline::Timeline;
use nsys_lens::trace::{LoadOptions, load_path};

#[test]
fn columns_preserve_busy_time_per_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tp2.sqlite");
    let answers =
        generate("tp2-straggler", &path, &GenOptions { scale: 1, seed: 42 }).expect("generate");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    let timeline = Timeline::new(&trace);
    let (start, end) = timeline.extent();
    let window_ns = (end - start) as f64;
    for columns in [1200u32, 333] {
        let view = timeline.view(&trace, start, end, columns);
        assert_eq!(view.lanes[0].kind, "steps", "forward steps first");
        for device in answers["profiles"]["standard"]["per_device"]
            .as_array()
            .expect("per_device")
        {
            let id = device["device"].as_u64().expect("device") as u32;
            let util = device["gpu_utilization"].as_f64().expect("util");
            let lanes: Vec<_> = view.lanes.iter().filter(|l| l.device == Some(id)).collect();
            assert_eq!(lanes.len(), 1, "one stream per device in this scenario");
            let col = window_ns / f64::from(columns);
            let busy: f64 = lanes[0].busy.iter().map(|&b| f64::from(b) * col).sum();
            assert!(
                (busy / window_ns - util).abs() < 2e-3,
                "device {id}: {} vs {util}",
                busy / window_ns
            );
            assert!(
                lanes[0].idle.iter().any(|&i| i),
                "device {id} has idle columns"
            );
            assert!(
                lanes[0]
                    .idle
                    .iter()
                    .zip(&lanes[0].count)
                    .all(|(&i, &c)| !i || c == 0)
            );
        }
    }
}

#[test]
fn zoomed_views_and_hits_find_the_kernel_under_the_pointer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hb.sqlite");
    generate("host-bound", &path, &GenOptions { scale: 1, seed: 1 }).expect("generate");
    let trace = load_path(&path, LoadOptions::page()).expect("load");
    let timeline = Timeline::new(&trace);
    let k = &trace.kernels;
    let i = k.len() / 2;
    let (s, e) = (k.start[i], k.end[i]);
    let lane = (0..timeline.lane_count() as u32).find(|&l| {
        timeline
            .hit(&trace, l, (s + e) / 2, 0)
            .is_some_and(|h| h.start_ns == s)
    });
    let lane = lane.expect("a kernel lane holds the kernel");
    let hit = timeline.hit(&trace, lane, (s + e) / 2, 0).expect("hit");
    assert_eq!((hit.start_ns, hit.end_ns), (s, e));
    assert_eq!(hit.name, trace.strings.get(k.short_name[i]));
    // Zoomed to the kernel alone: its columns are fully busy.
    let view = timeline.view(&trace, s, e, 10);
    let kernels = &view.lanes[lane as usize];
    assert!(
        kernels.busy.iter().all(|&b| (b - 1.0).abs() < 1e-6),
        "{:?}",
        kernels.busy
    );
    assert_eq!(view.names[kernels.top[0] as usize], hit.name);
    // Far from any kernel, nothing is hit.
    assert!(
        timeline
            .hit(
                &trace,
                lane,
                k.start.iter().copied().min().unwrap_or(0) - 10_000_000,
                1_000
            )
            .is_none()
    );
}
