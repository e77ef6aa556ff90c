use super::*;

/// The merged copy of `raw` (the tests' reading of [`dedup_tp_steps_in_place`]).
fn dedup_tp_steps(raw: &[Step]) -> Vec<Step> {
    let mut out = raw.to_vec();
    dedup_tp_steps_in_place(&mut out);
    out
}

fn step(start: Ns, end: Ns, n: u64) -> Step {
    Step {
        row: 0,
        start,
        end,
        name: StepName {
            step: n,
            ctx: 0,
            gen_reqs: 8,
        },
        ranks: 1,
        name_id: 0,
    }
}

/// NVTX rows of forward steps on two TP ranks: `(start, end, step)` per rank-0 range and a
/// rank-1 copy a few µs later (some further than 100 µs), in table order or shuffled.
fn step_rows(shuffled: bool) -> (NvtxRanges, Vec<StepName>) {
    let mut nvtx = NvtxRanges::default();
    let mut names = Vec::new();
    let mut rows = Vec::new();
    for n in 0..60u64 {
        let start = n as Ns * 1_000_000;
        let name = StepName {
            step: n / 2,
            ctx: n % 3,
            gen_reqs: n % 4,
        };
        rows.push((
            start,
            start + 600_000 + (n as Ns % 5) * 1000,
            names.len() as NameId,
        ));
        let lag = if n % 7 == 0 {
            150_000
        } else {
            (n as Ns % 9) * 1000
        };
        rows.push((start + lag, start + lag + 500_000, names.len() as NameId));
        names.push(name);
    }
    rows.sort_by_key(|r| (r.0, r.1));
    if shuffled {
        rows.reverse();
        rows.swap(3, 40);
    }
    for (start, end, name) in rows {
        nvtx.push_range((start, end), 0, name);
    }
    (nvtx, names)
}

#[test]
fn a_step_reader_reads_the_steps_forward_steps_lists() {
    for profile in [
        crate::profile::Profile::Standard,
        crate::profile::Profile::TrtllmSkill,
    ] {
        let sw = profile.switches();
        for shuffled in [false, true] {
            let (nvtx, names) = step_rows(shuffled);
            let name = |id: NameId| names.get(id as usize).copied();
            // Expected, from the rows themselves: sorted by (start, end), then merged.
            let mut raw: Vec<Step> = (0..nvtx.len())
                .map(|i| Step {
                    row: i as i64,
                    start: nvtx.start[i],
                    end: nvtx.end[i],
                    name: names[nvtx.name[i] as usize],
                    ranks: 1,
                    name_id: nvtx.name[i],
                })
                .collect();
            raw.sort_by_key(|s| (s.start, s.end));
            let merged = dedup_tp_steps(&raw);
            let expected = if sw.dedup_steps { &merged } else { &raw };
            assert!(merged.len() < raw.len(), "the scenario has TP copies");
            assert_eq!(
                forward_steps(&nvtx, name, &sw),
                (expected.clone(), raw.len())
            );

            let mut seen = Vec::new();
            let reader = StepReader::new(&nvtx, name, &sw);
            let found = reader.summarize(&mut seen);
            assert_eq!(&seen, expected);
            // Out of order, the pass starts again and its sink forgets what it was given.
            let mut each = Vec::new();
            let (raw_count, distinct) = reader.for_each_step(&mut each);
            assert_eq!(&each, expected);
            assert_eq!((raw_count, distinct), (raw.len(), merged.len()));
            let counts = found.counts;
            assert_eq!(
                (counts.steps, counts.raw, counts.distinct),
                (expected.len(), raw.len(), merged.len())
            );
            let ctx = |s: &&Step| s.name.ctx > 0;
            let generation = |s: &&Step| s.name.ctx == 0 && s.name.gen_reqs > 0;
            let (listed_ctx, listed_gen) = phases(expected, &sw);
            let phases_found = [(found.context, listed_ctx), (found.generation, listed_gen)];
            for ((counted, listed), steps) in phases_found.into_iter().zip([
                expected.iter().filter(ctx).collect::<Vec<_>>(),
                expected.iter().filter(generation).collect::<Vec<_>>(),
            ]) {
                let (c, l) = (counted.expect("phase"), listed.expect("phase"));
                let window = match sw.phase_window {
                    PhaseWindow::UnionOfSteps => {
                        IntervalSet::from_unsorted(steps.iter().map(|s| (s.start, s.end)).collect())
                    }
                    PhaseWindow::Span => IntervalSet::single(
                        steps.iter().map(|s| s.start).min().unwrap_or(0),
                        steps.iter().map(|s| s.end).max().unwrap_or(0),
                    ),
                };
                assert_eq!(c.window, window);
                assert_eq!(c.facts, WindowFacts::of(&window));
                assert_eq!(c.steps, steps.len() as u64);
                let raw_steps: u64 = steps.iter().map(|s| u64::from(s.ranks)).sum();
                assert_eq!(c.raw_steps, raw_steps);
                assert_eq!(l.window, window);
                assert_eq!((l.steps, l.raw_steps), (c.steps, c.raw_steps));
            }
        }
    }
}

#[test]
fn dedup_merges_same_step_within_100us_only() {
    let raw = [
        step(0, 500, 1),
        step(99_999, 700, 1),
        step(100_000, 900, 1),
        step(1_000_000, 1_100_000, 2),
        step(1_000_010, 1_090_000, 3),
    ];
    let d = dedup_tp_steps(&raw);
    assert_eq!(d.len(), 4);
    assert_eq!((d[0].start, d[0].end, d[0].ranks), (0, 700, 2));
    assert_eq!((d[1].start, d[1].ranks), (100_000, 1));
    assert_eq!(d[2].name.step, 2);
    assert_eq!(d[3].name.step, 3);
}

/// Steps read as rows in start order come out as the collected reading gives them: ties at one
/// start folded by end, whatever their table order; rows out of start order say so.
#[test]
fn steps_read_in_start_order_match_the_collected_reading() {
    let sw = crate::profile::Profile::Standard.switches();
    let mut rows: Vec<(Ns, Ns, u64)> = Vec::new();
    for n in 0..40u64 {
        // Two ranks' copies of step n/2 start together; the longer one comes first in the table.
        let start = (n / 2) as Ns * 1_000_000;
        let end = start + 600_000 - (n % 2) as Ns * 50_000;
        rows.push((start, end, n / 2));
        // A third copy 20 µs later, and every seventh step one 150 µs later (no TP copy).
        let lag = if n % 7 == 0 { 150_000 } else { 20_000 };
        rows.push((start + lag, end + lag, n / 2));
    }
    rows.sort_by_key(|r| r.0); // by start only: ties keep the longer range first
    let mut nvtx = NvtxRanges::default();
    let mut names = Vec::new();
    for &(start, end, n) in &rows {
        nvtx.push_range((start, end), 0, names.len() as NameId);
        names.push(StepName {
            step: n,
            ctx: 0,
            gen_reqs: 8,
        });
    }
    let name = |id: NameId| names.get(id as usize).copied();
    let row_steps = || (0..nvtx.len()).map(|i| nvtx.row(i));
    // Expected, from the rows: sorted by (start, end), then merged.
    let mut raw: Vec<Step> = row_steps()
        .filter_map(|r| step_of_row(&r, &sw, &name))
        .collect();
    assert!(
        !raw.is_sorted_by_key(|s| (s.start, s.end)),
        "ties out of end order"
    );
    raw.sort_by_key(|s| (s.start, s.end));
    let expected = dedup_tp_steps(&raw);
    assert!(expected.len() < raw.len(), "the scenario has TP copies");
    let mut seen = Vec::new();
    assert!(steps_of_rows_in_order(row_steps(), name, &sw, &mut |s| {
        seen.push(s)
    }));
    assert_eq!(seen, expected);
    // Out of start order: refused, for the caller to read them collected.
    let mut reversed: Vec<NvtxRow> = row_steps().collect();
    reversed.reverse();
    assert!(!steps_of_rows_in_order(
        reversed.into_iter(),
        name,
        &sw,
        &mut |_| {}
    ));
}
