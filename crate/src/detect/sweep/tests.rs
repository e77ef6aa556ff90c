//! Unit tests of the kernel sweep: window membership, the masks' and the exposure's helpers,
//! start order, zero-length kernels and device overflow, and random traces against the
//! per-kernel rules.

use super::exposure::NearPrep;
use super::*;
use crate::detect::detect;
use crate::model::{PresentTables, Strings};
use crate::profile::Profile;
use crate::steps::spans::{WindowFacts, overlap_within};

const PREP: &str = "[Executor] _prepare_inputs";

#[test]
fn window_membership_is_half_open() {
    let w = IntervalSet::from_unsorted(vec![(10, 20), (30, 40)]);
    assert!(in_window(&w, 10) && in_window(&w, 19) && in_window(&w, 30));
    assert!(!in_window(&w, 20) && !in_window(&w, 25) && !in_window(&w, 40) && !in_window(&w, 5));
    assert!(
        overlaps(&w, 15, 35)
            && overlaps(&w, 19, 21)
            && !overlaps(&w, 20, 30)
            && !overlaps(&w, 0, 10)
    );
}

/// One process (one thread) with kernels `(start, end, device)` and host-prep NVTX ranges.
fn trace(kernels: &[(Ns, Ns, u32)], prep: &[(Ns, Ns)]) -> Trace {
    let mut t = Trace {
        strings: Strings::from_rows(vec![(0, PREP.into()), (1, "gemm".into())]),
        present: PresentTables {
            kernels: true,
            nvtx: true,
            ..PresentTables::default()
        },
        ..Trace::default()
    };
    let thread = t.threads.intern(0x0100_0000_0000_0001, &mut t.processes);
    for &(s, e) in prep {
        t.nvtx.push_range((s, e), thread, 0);
    }
    let process = t.threads.process[thread as usize];
    for &(s, e, d) in kernels {
        let k = &mut t.kernels;
        k.start.push(s);
        k.end.push(e);
        k.device.push(d);
        k.process.push(process);
        k.short_name.push(1);
    }
    t
}

/// Deterministic pseudo-random intervals `[s, s + len)` over `0..span`, in start order.
fn random_ranges(seed: u64, n: usize, span: Ns) -> Vec<(Ns, Ns)> {
    let mut x = seed;
    let mut next = move |m: Ns| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as Ns
    };
    let mut out: Vec<(Ns, Ns)> = (0..n)
        .map(|_| {
            let s = next(span);
            (s, s + next(40))
        })
        .collect();
    out.sort_by_key(|r| r.0);
    out
}

#[test]
fn busy_time_inside_prep_within_a_window_is_the_intersections_overlap() {
    for seed in 1..40 {
        let prep = IntervalSet::from_unsorted(random_ranges(seed, 30, 400));
        let window = IntervalSet::from_unsorted(random_ranges(seed * 7 + 3, 20, 400));
        let both = prep.intersection(&window);
        let (mut c1, mut c2) = (0, 0);
        let mut a = 0;
        for (i, (_, len)) in random_ranges(seed * 13, 60, 400).into_iter().enumerate() {
            let b = a + len + (i % 3) as Ns;
            let got = overlap_within((prep.spans(), &mut c1), (window.spans(), &mut c2), a, b);
            assert_eq!(got, both.intersection_measure(&IntervalSet::single(a, b)));
            a = b;
        }
    }
}

#[test]
fn a_gap_touches_pooled_prep_ranges_as_their_union_says() {
    for seed in 1..40 {
        let mut by_pattern: [Vec<(Ns, Ns)>; 3] = Default::default();
        for (p, list) in by_pattern.iter_mut().enumerate() {
            // Zero-length and nested ranges included; the third pattern left out of order.
            *list = random_ranges(seed * 5 + p as u64, 12, 500);
            if p == 2 && seed % 2 == 0 {
                list.reverse();
            }
        }
        let union = IntervalSet::from_unsorted(by_pattern.concat());
        let sorted = by_pattern.iter().all(|l| l.is_sorted_by_key(|r| r.0));
        let queues = by_pattern.each_ref().map(|l| SpanQueue::of(l));
        let mut near = NearPrep::new(&queues, sorted);
        let gaps = IntervalSet::from_unsorted(random_ranges(seed * 11, 40, 500));
        for &(gs, ge) in gaps.interior_gaps().spans() {
            assert_eq!(
                near.touches(&queues, (gs, ge)),
                overlaps(&union, gs, ge),
                "{gs}..{ge}"
            );
        }
    }
}

fn config(profile: Profile) -> DetectConfig {
    DetectConfig {
        profile,
        ..DetectConfig::default()
    }
}

fn sweep_events(t: &Trace, cfg: &DetectConfig, events: &[KernelRow]) -> KernelSummary {
    let mut s = KernelSweep::new(t, cfg);
    for &ev in events {
        assert_eq!(s.push(ev), Ok(()));
    }
    s.finish()
}

fn sweep(t: &Trace, profile: Profile) -> KernelSummary {
    let events: Vec<KernelRow> = t.kernels.events_in_start_order().collect();
    sweep_events(t, &config(profile), &events)
}

#[test]
fn a_kernel_starting_before_its_predecessor_is_refused() {
    let t = trace(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)], &[]);
    let mut s = KernelSweep::new(&t, &config(Profile::Standard));
    let mut events: Vec<KernelRow> = t.kernels.events_in_start_order().collect();
    events.swap(0, 2);
    assert_eq!(s.push(events[0]), Ok(()));
    assert_eq!(
        s.push(events[1]),
        Err(OutOfOrder {
            row: 1,
            start: 5,
            previous: 30
        })
    );
    // Equal starts are in order.
    let mut s = KernelSweep::new(&t, &config(Profile::Standard));
    let at = |start| KernelRow { start, ..events[0] };
    assert!(s.push(at(7)).is_ok() && s.push(at(7)).is_ok() && s.push(at(6)).is_err());
}

#[test]
fn one_process_on_two_devices_is_exposed_only_where_both_are_idle() {
    // Device 0: [10,30) [80,90); device 1: [20,50). Hull [10,90); prep [0,100) → [10,90).
    let t = trace(&[(10, 30, 0), (20, 50, 1), (80, 90, 0)], &[(0, 100)]);
    let k = sweep(&t, Profile::Standard);
    assert_eq!(k.facts.devices, vec![0, 1]);
    let mut masks = k.aggregate.busy_by_mask.clone();
    masks.sort_unstable();
    // Device 0 alone: [10,20) + [80,90); both: [20,30); device 1 alone: [30,50).
    assert_eq!(masks, vec![(0b01, 20), (0b10, 20), (0b11, 10)]);
    assert_eq!(ScopeSummary::busy_of(&masks, 0b11), 50);
    let r = detect(&t, &config(Profile::Standard)).expect("report");
    let p = &r.per_process[0];
    assert_eq!(p.devices, vec![0, 1]);
    // Prep 80 ns, union busy 50 ns: 30 ns exposed, 30 ns idle.
    assert_eq!(p.host_prep_us, Some(0.08));
    assert_eq!(p.host_prep_exposed_us, Some(0.03));
    assert_eq!(p.idle_us, Some(0.03));
    assert_eq!(r.per_device[0].busy_us, 0.03);
    assert_eq!(r.per_device[1].busy_us, 0.03);
}

#[test]
fn zero_length_kernels_at_the_hull_ends_follow_the_half_open_window() {
    // Hull [0,20). (0,0) sits at the start, (5,5) inside, (20,20) at the end; (10,10) is at
    // the last end when it arrives but (10,20) moves the end past it.
    let kernels = [
        (0, 0, 0),
        (0, 10, 0),
        (5, 5, 0),
        (10, 10, 0),
        (10, 20, 0),
        (20, 20, 0),
    ];
    let t = trace(&kernels, &[]);
    let standard = sweep(&t, Profile::Standard);
    let skill = sweep(&t, Profile::TrtllmSkill);
    assert_eq!(standard.facts.kernels, 6);
    assert_eq!(standard.facts.hull, Some((0, 20)));
    // Clipped: `end > window start` drops (0,0); half-open drops (20,20).
    assert_eq!(standard.aggregate.groups[0].kernels, 4);
    // Start in `[0, 20)`: (0,0) is in, (20,20) is out.
    assert_eq!(skill.aggregate.groups[0].kernels, 5);
    assert_eq!(standard.aggregate.groups[0].busy_ns, 20);
    assert_eq!(skill.aggregate.groups[0].busy_us, 0.02);
}

#[test]
fn a_lone_zero_length_kernel_at_the_end_does_not_own_the_device() {
    // The only kernel of device 1 is zero-length at the hull's end: no kernel in the window.
    let t = trace(&[(0, 10, 0), (10, 10, 1)], &[]);
    let k = sweep(&t, Profile::Standard);
    let devices: Vec<(Option<u32>, u64)> = k
        .aggregate
        .groups
        .iter()
        .map(|g| (g.device, g.kernels))
        .collect();
    assert_eq!(devices, vec![(Some(0), 1), (Some(1), 0)]);
    assert!(k.aggregate.groups[1].processes.is_empty());
    assert_eq!(k.facts.devices, vec![0, 1]);
}

#[test]
fn more_than_64_devices_leave_standard_m3_uncomputed_and_say_so() {
    let kernels: Vec<(Ns, Ns, u32)> = (0..65).map(|d| (d as Ns, d as Ns + 100, d)).collect();
    let t = trace(&kernels, &[(0, 50)]);
    let k = sweep(&t, Profile::Standard);
    assert!(k.device_masks_overflow);
    let r = detect(&t, &config(Profile::Standard)).expect("report");
    assert_eq!(r.aggregate_metrics.host_prep_exposed_ratio, None);
    assert!(
        r.coverage
            .iter()
            .any(|n| n.subject == "host_prep" && n.reason.contains("more than 64 devices"))
    );
    assert!(
        r.per_process
            .iter()
            .all(|p| p.host_prep_exposed_us.is_none())
    );
    // 64 busy devices and a 65th, sorted first, with only a zero-length kernel: it has no
    // bit, but it shifts the busy devices' positions past 64, so still no mask.
    let mut kernels: Vec<(Ns, Ns, u32)> = (1..=64).map(|d| (0, 100, d)).collect();
    kernels.push((50, 50, 0));
    let k = sweep(&trace(&kernels, &[(0, 50)]), Profile::Standard);
    assert!(k.device_masks_overflow && k.facts.devices.len() == 65);
}

/// The old per-kernel rules, applied kernel by kernel: `(kernels, busy ns)` per device.
fn brute_force(t: &Trace, w: &IntervalSet, clip: bool, device: u32) -> (u64, Ns) {
    let k = &t.kernels;
    let hs = w.hull().map_or(0, |h| h.0);
    let selected: Vec<(Ns, Ns)> = (0..k.len())
        .filter(|&i| k.device[i] == device)
        .map(|i| (k.start[i], k.end[i]))
        .filter(|&(s, e)| {
            if clip {
                e > hs && overlaps(w, s, e)
            } else {
                in_window(w, s)
            }
        })
        .collect();
    let union = IntervalSet::from_unsorted(selected.clone());
    let busy = if clip {
        union.intersection_measure(w)
    } else {
        union.measure()
    };
    (selected.len() as u64, busy)
}

/// Busy time of the union of `devices` inside `w`, from every kernel.
fn union_busy(t: &Trace, w: &IntervalSet, devices: &[u32]) -> Ns {
    let k = &t.kernels;
    let spans = (0..k.len())
        .filter(|&i| devices.contains(&k.device[i]))
        .map(|i| (k.start[i], k.end[i]))
        .collect();
    IntervalSet::from_unsorted(spans).intersection_measure(w)
}

#[test]
fn random_traces_match_the_per_kernel_rules() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut rnd = |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        ((seed >> 33) % n) as Ns
    };
    for round in 0..200 {
        let kernels: Vec<(Ns, Ns, u32)> = (0..30)
            .map(|_| {
                let s = rnd(200);
                let len = [0, 0, rnd(30), rnd(30), -rnd(5)][rnd(5) as usize];
                (s, s + len, rnd(3) as u32)
            })
            .collect();
        let t = trace(&kernels, &[(rnd(100), 100 + rnd(100))]);
        let user = (rnd(150), 50 + rnd(200));
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let clip = profile.switches().clip_to_window;
            for window in [None, Some(user)] {
                let cfg = DetectConfig {
                    window,
                    ..config(profile)
                };
                let mut events: Vec<KernelRow> = t.kernels.events_in_start_order().collect();
                let k = sweep_events(&t, &cfg, &events);
                // Ties in start may come in any order (table order, when already sorted).
                events.sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
                assert_eq!(k, sweep_events(&t, &cfg, &events), "round {round}");
                let hull = t.kernels.start.iter().min().zip(t.kernels.end.iter().max());
                let expect_w = window.or(hull.map(|(&s, &e)| (s, e)));
                let w = &expect_w.map_or_else(IntervalSet::new, |(s, e)| IntervalSet::single(s, e));
                assert_eq!(k.aggregate.window, WindowFacts::of(w), "round {round}");
                for g in &k.aggregate.groups {
                    let devices = g.device.map_or_else(|| vec![0, 1, 2], |d| vec![d]);
                    let (n, busy) = devices
                        .iter()
                        .map(|&d| brute_force(&t, w, clip, d))
                        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
                    assert_eq!(g.kernels, n, "round {round} {profile:?} {window:?}");
                    if g.device.is_some() {
                        assert_eq!(g.busy_ns, busy, "round {round} {profile:?}");
                    }
                }
                if profile == Profile::Standard && !k.aggregate.prep_busy.is_empty() {
                    for set in [vec![0], vec![1], vec![0, 1], vec![0, 1, 2]] {
                        let mask = set
                            .iter()
                            .filter_map(|d| k.facts.devices.binary_search(d).ok())
                            .fold(0u64, |m, i| m | 1 << i);
                        let got = ScopeSummary::busy_of(&k.aggregate.busy_by_mask, mask);
                        assert_eq!(got, union_busy(&t, w, &set), "round {round} {set:?}");
                    }
                }
            }
        }
    }
}

/// Whether `t` lies in one of the window's `[start, end)` intervals.
fn in_window(window: &IntervalSet, t: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, e)| e <= t);
    i < spans.len() && spans[i].0 <= t
}

/// Whether `[s, e)` overlaps the window (zero-length intervals count when they lie inside).
fn overlaps(window: &IntervalSet, s: Ns, e: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, we)| we <= s);
    i < spans.len() && (spans[i].0 < e || (s == e && spans[i].0 <= s))
}
