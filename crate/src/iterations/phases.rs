//! Phases and the benchmark phase (reference §7.1 steps 3–5).
//!
//! A capture holds more than the benchmark: model loading, JIT, warm-up and CUDA-graph capture,
//! teardown. Pauses longer than 100 ms separate them; the benchmark is the last phase that is
//! long enough and regular enough (most iterations at the trace's most common size).

use super::{Iteration, MIN_BENCHMARK_ITERATIONS, PhaseSpan};
use crate::model::Ns;

/// The mode of the iterations' kernel counts; a tie goes to the value seen first (Python's
/// `Counter.most_common(1)`). 0 without iterations.
pub fn common_size(iterations: &[Iteration]) -> u32 {
    // (value, count) in first-occurrence order; a handful of distinct sizes at most.
    let mut counts: Vec<(u32, usize)> = Vec::new();
    for it in iterations {
        match counts.iter_mut().find(|(v, _)| *v == it.kernel_count) {
            Some(c) => c.1 += 1,
            None => counts.push((it.kernel_count, 1)),
        }
    }
    let mut best: Option<(u32, usize)> = None;
    for &(value, count) in &counts {
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((value, count));
        }
    }
    best.map_or(0, |(v, _)| v)
}

/// Splits at pauses (this start − the previous iteration's end) strictly longer than `gap_ns`.
pub fn split(iterations: &[Iteration], gap_ns: Ns) -> Vec<PhaseSpan> {
    let mut out: Vec<PhaseSpan> = Vec::new();
    for (i, it) in iterations.iter().enumerate() {
        let pause = i
            .checked_sub(1)
            .and_then(|p| iterations.get(p))
            .map(|prev| it.start - prev.end);
        match out.last_mut() {
            Some(phase) if pause.is_some_and(|p| p <= gap_ns) => phase.last = i,
            _ => out.push(PhaseSpan { first: i, last: i }),
        }
    }
    out
}

/// Scanning from the last phase back, the first with at least [`MIN_BENCHMARK_ITERATIONS`]
/// iterations of which at least half have the common size.
pub fn benchmark(iterations: &[Iteration], phases: &[PhaseSpan], common: u32) -> Option<usize> {
    phases.iter().enumerate().rev().find_map(|(i, p)| {
        let n = p.iteration_count();
        let at_common = iterations
            .get(p.first..=p.last)?
            .iter()
            .filter(|it| it.kernel_count == common)
            .count();
        (n >= MIN_BENCHMARK_ITERATIONS && 2 * at_common >= n).then_some(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterations::{Isolation, Method, PHASE_GAP_NS};

    fn it(start: Ns, end: Ns, kernel_count: u32) -> Iteration {
        Iteration {
            start,
            end,
            kernel_count,
            wall_ns: end - start,
        }
    }

    fn sizes(v: &[u32]) -> Vec<Iteration> {
        v.iter()
            .enumerate()
            .map(|(i, &k)| it(i as Ns * 10, i as Ns * 10 + 5, k))
            .collect()
    }

    #[test]
    fn mode_ties_go_to_the_first_seen_value() {
        assert_eq!(common_size(&sizes(&[8, 4, 4, 8])), 8);
        assert_eq!(common_size(&sizes(&[4, 8, 8, 4])), 4);
        assert_eq!(common_size(&sizes(&[3, 8, 8, 4, 4, 4])), 4);
        assert_eq!(common_size(&[]), 0);
    }

    #[test]
    fn a_pause_of_exactly_100ms_stays_in_the_phase() {
        let g = PHASE_GAP_NS;
        let its = [
            it(0, 10, 1),
            it(10 + g, 20 + g, 1),
            it(21 + 2 * g, 30 + 2 * g, 1),
        ];
        assert_eq!(
            split(&its, g),
            vec![
                PhaseSpan { first: 0, last: 1 },
                PhaseSpan { first: 2, last: 2 }
            ]
        );
        assert!(split(&[], g).is_empty());
    }

    /// `n` iterations of `size` kernels starting at `t0`, 2 ms apart.
    fn run(t0: Ns, n: usize, size: u32) -> Vec<Iteration> {
        (0..n as Ns)
            .map(|i| it(t0 + i * 2_000_000, t0 + i * 2_000_000 + 500_000, size))
            .collect()
    }

    #[test]
    fn the_benchmark_is_the_last_long_regular_phase() {
        // warm-up (6 of size 8), benchmark (10 of size 8), teardown (3 of size 8).
        let mut its = run(0, 6, 8);
        its.extend(run(1_000_000_000, 10, 8));
        its.extend(run(2_000_000_000, 3, 8));
        let iso = Isolation::new(Method::Allreduce, String::new(), its);
        assert_eq!(iso.phases.len(), 3);
        assert_eq!(
            iso.benchmark,
            Some(1),
            "the teardown has fewer than 5 iterations"
        );
        assert_eq!(iso.benchmark_iterations().len(), 10);
        assert_eq!(
            iso.benchmark_window(),
            Some((1_000_000_000, 1_000_000_000 + 9 * 2_000_000 + 500_000))
        );
    }

    #[test]
    fn half_at_the_common_size_qualifies_less_does_not() {
        // Common size 8 (from the first phase); last phase: 3 of 6 at size 8 → qualifies.
        let mut its = run(0, 8, 8);
        let mut last = run(1_000_000_000, 6, 4);
        for x in last.iter_mut().take(3) {
            x.kernel_count = 8;
        }
        its.extend(last.clone());
        let iso = Isolation::new(Method::Allreduce, String::new(), its.clone());
        assert_eq!(iso.common_size, 8);
        assert_eq!(iso.benchmark, Some(1));
        assert_eq!(iso.common_count(&iso.phases[1]), 3);
        // 2 of 6 at the common size: fall back to the first phase.
        its[8 + 2].kernel_count = 4;
        let iso = Isolation::new(Method::Allreduce, String::new(), its);
        assert_eq!(iso.benchmark, Some(0));
    }

    #[test]
    fn no_phase_long_enough_means_no_benchmark() {
        let mut its = run(0, 4, 8);
        its.extend(run(1_000_000_000, 4, 8));
        let iso = Isolation::new(Method::Nvtx, String::new(), its);
        assert_eq!(iso.benchmark, None);
        assert!(iso.benchmark_iterations().is_empty());
        assert_eq!(iso.benchmark_window(), None);
    }
}
