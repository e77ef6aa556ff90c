use super::*;
use crate::index::testing::TraceBuilder;

/// Each step's sequence as (name, gap), in step order.
fn collected(first: &FirstSequences, b: &TraceBuilder) -> Vec<Vec<(String, Ns)>> {
    let name = |id: NameId| b.trace.strings.get(id).to_string();
    let seq = |s: &Vec<SeqKernel>| s.iter().map(|k| (name(k.name), k.gap)).collect();
    first.steps.values().map(seq).collect()
}

/// Forward steps 1 to `n`, step `i` over `(i − 1) × 1000 .. i × 1000`.
fn step_ranges(b: &mut TraceBuilder, n: Ns) {
    for step in 1..=n {
        let name = format!("[Executor] _forward_step {step}: 0 ctx reqs, 1 gen reqs");
        b.range(&name, (step - 1) * 1000, step * 1000);
    }
}

/// Two steps, 0..1000 and 1000..2000; three kernels on one device at 3000, 3020 and 3050
/// (10 ns each), launched at `launches`.
fn two_steps(launches: [Ns; 3]) -> TraceBuilder {
    let mut b = TraceBuilder::new();
    step_ranges(&mut b, 2);
    for (name, (at, start)) in ["a", "b", "c"]
        .iter()
        .zip(launches.iter().zip([3000, 3020, 3050]))
    {
        let c = b.call("cudaLaunchKernel", *at, at + 5);
        b.kernel(name, start, start + 10, c);
    }
    b
}

fn seq(items: &[(&str, Ns)]) -> Vec<(String, Ns)> {
    items.iter().map(|&(n, g)| (n.to_string(), g)).collect()
}

/// Kernel `b` launched in step 2 runs before `c` of step 1: the step's sequence is its
/// kernels in device order, `c` waiting 20 ns after `b` ended (the device's idle time), each
/// step's first kernel 0.
#[test]
fn steps_out_of_device_order_are_grouped_by_step() {
    let b = two_steps([100, 1100, 200]);
    let ix = RowIndex::loaded(&b.trace, "t", None);
    let (spans, _) = steady_spans(&ix.steps.steps);
    assert_eq!(spans, [(0, 1000), (1000, 2000)]);
    let plan = PatternPlan::of(&ix);
    let first = first_sequences(&ix, &plan, VOTING_STEPS);
    assert!(!first.in_order);
    let want = vec![seq(&[("a", 0), ("c", 20)]), seq(&[("b", 0)])];
    assert_eq!(collected(&first, &b), want);
    // Only the lowest step kept when one is asked for.
    let one = first_sequences(&ix, &plan, 1);
    assert_eq!(collected(&one, &b), want[..1]);
}

/// In device order each step's kernels follow the last step's.
#[test]
fn steps_in_device_order_hand_each_steps_kernels_in_turn() {
    let b = two_steps([100, 200, 1100]);
    let ix = RowIndex::loaded(&b.trace, "t", None);
    let first = first_sequences(&ix, &PatternPlan::of(&ix), VOTING_STEPS);
    assert!(first.in_order);
    let want = vec![seq(&[("a", 0), ("b", 10)]), seq(&[("c", 0)])];
    assert_eq!(collected(&first, &b), want);
}

/// Twelve steps in device order, each launching `x y z x y z x y` on one device.
fn twelve_steps() -> TraceBuilder {
    let mut b = TraceBuilder::new();
    step_ranges(&mut b, 12);
    for step in 0..12 {
        let at = 1000 * step;
        for (i, name) in ["x", "y", "z", "x", "y", "z", "x", "y"].iter().enumerate() {
            let launch = at + 10 * i as Ns;
            let c = b.call("cudaLaunchKernel", launch, launch + 5);
            let start = 100_000 + at + 50 * i as Ns;
            b.kernel(name, start, start + 20 + i as Ns, c);
        }
    }
    b
}

/// With the steps in device order, the vote's pass counts the layer in every step (the
/// voting steps held whole, the later ones as their kernels come) as a pass of its own
/// counts it; out of device order it leaves the count to that pass.
#[test]
fn the_votes_pass_counts_the_layer_when_the_steps_come_in_device_order() {
    let b = twelve_steps();
    let ix = RowIndex::loaded(&b.trace, "t", None);
    let plan = PatternPlan::of(&ix);
    assert!(plan.spans.len() > VOTING_STEPS, "more steps than vote");
    let first = first_sequences(&ix, &plan, VOTING_STEPS);
    assert!(first.in_order);
    let Some(Counted {
        unit: Some(unit),
        tally: Some(ahead),
    }) = &first.counted
    else {
        panic!("the layer is counted on the vote's pass");
    };
    let names: Vec<&str> = unit.iter().map(|&id| b.trace.strings.get(id)).collect();
    assert_eq!(names, ["x", "y", "z"]);
    let own = count_occurrences(&ix, &plan, unit, true, None);
    assert_eq!(ahead.occurrences, 2 * plan.spans.len() as u64);
    assert_eq!(
        (ahead.occurrences, &ahead.gap, &ahead.duration),
        (own.occurrences, &own.gap, &own.duration)
    );
    let out_of_order = two_steps([100, 1100, 200]);
    let ix = RowIndex::loaded(&out_of_order.trace, "t", None);
    let first = first_sequences(&ix, &PatternPlan::of(&ix), VOTING_STEPS);
    assert!(!first.in_order && first.counted.is_none());
}

/// Occurrences counted as the kernels come are the leftmost non-overlapping exact matches
/// in each step, whether the steps' kernels interleave or not.
#[test]
fn occurrences_are_counted_per_step_as_kernels_come() {
    let mut b = TraceBuilder::new();
    step_ranges(&mut b, 2);
    // Step 1: x y x y x (two matches of [x y]); step 2: y x y (one), interleaved on the
    // device: launch times alternate between the steps.
    let plan = [
        ("x", 100),
        ("y", 1100),
        ("y", 110),
        ("x", 1110),
        ("x", 120),
        ("y", 1120),
        ("y", 130),
        ("x", 140),
    ];
    for (i, &(name, at)) in plan.iter().enumerate() {
        let c = b.call("cudaLaunchKernel", at, at + 5);
        let start = 3000 + 100 * i as Ns;
        b.kernel(name, start, start + 10, c);
    }
    let ix = RowIndex::loaded(&b.trace, "t", None);
    let plan = PatternPlan::of(&ix);
    assert_eq!(plan.spans, [(0, 1000), (1000, 2000)]);
    let unit = [
        b.trace.strings.find_text("x"),
        b.trace.strings.find_text("y"),
    ]
    .map(|id| id.expect("interned"));
    let t = count_occurrences(&ix, &plan, &unit, false, None);
    assert_eq!(t.occurrences, 3);
    // Every kernel starts 90 ns after the device's previous one ends. Step 1's matches are
    // its kernels 0–1 (x is the step's first: 0) and 2–3, step 2's its kernels 1–2.
    assert_eq!(t.gap, [90 + 90, 90 + 90 + 90]);
    assert_eq!(t.duration, [30, 30]);
}

#[test]
fn finds_the_layer_between_a_prefix_and_a_tail() {
    // prefix 9, three layers [1 2 3 4], tail 1 5.
    let s = [9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 5];
    assert_eq!(find_unit(&s), Some(vec![1, 2, 3, 4]));
    assert_eq!(find_unit(&[1, 2, 3]), None);
    assert_eq!(find_unit(&[7, 7, 7, 7]), Some(vec![7]));
    assert_eq!(find_unit(&[1, 2, 3, 4, 5, 6]), None);
}

#[test]
fn group_letters() {
    assert_eq!(group_letter(0), "A");
    assert_eq!(group_letter(25), "Z");
    assert_eq!(group_letter(26), "AA");
    assert_eq!(group_letter(27), "AB");
}

#[test]
fn blocks_merge_categories_and_rank_by_total_gap() {
    let k = |index: usize, name: &str, category, gap: f64| PatternKernel {
        index,
        name: name.into(),
        category,
        mean_gap_us: gap,
        mean_duration_us: 1.0,
    };
    let kernels = [
        k(0, "norm", KernelCategory::Norm, 1.0),
        k(1, "rope", KernelCategory::Attention, 5.0),
        k(2, "flash", KernelCategory::Attention, 20.0),
        k(3, "gemm", KernelCategory::Gemm, 12.0),
    ];
    let b = blocks(&kernels, 4.0);
    let order: Vec<(&str, &str, f64, &str)> = b
        .iter()
        .map(|b| {
            (
                b.group.as_str(),
                b.kernels.as_str(),
                b.total_gap_us,
                b.priority.as_str(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("B", "1–2", 100.0, "HIGH"),
            ("C", "3", 48.0, "Low"),
            ("A", "0", 4.0, "Low")
        ]
    );
    assert_eq!(b[0].names, vec!["rope", "flash"]);
}
