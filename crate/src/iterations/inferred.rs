//! Technique 3: iterations inferred from the kernel stream when no step marker and no allreduce
//! kernel marks them (issue 18 item 3).
//!
//! A training or serving loop launches the same kernels in the same order every step, so the
//! sequence of kernel names on one device repeats with the step's kernel count as its period.
//! [`infer`] finds the shortest period at which the sequence repeats itself (on the device with
//! the most kernels), cuts it where the GPU idles longest on average (where the host works
//! between steps), and reports how well the sequence repeats as the confidence. Collectives
//! (NCCL kernels) inside the period are counted per step for the explanation.

use serde::Serialize;

use super::Iteration;
use crate::model::{NameId, Ns, Trace};

/// At most this many kernels of the device are searched for a period (bounds the work in the
/// page: `MAX_SEARCHED × MAX_SEARCHED / MIN_REPEATS` comparisons at worst).
const MAX_SEARCHED: usize = 12_000;
/// A step is repeated at least this many times (as the benchmark phase needs 5 iterations).
pub const MIN_REPEATS: usize = 5;
/// A repeating unit shorter than this many kernels is a loop inside a step, not a step.
pub const MIN_STEP_KERNELS: usize = 8;
/// The share of kernels equal to the kernel one period earlier needed to call it a period.
pub const MIN_MATCH: f64 = 0.9;

/// How the inferred iterations were found (`steps.method` in `analyze --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InferMethod {
    /// The sequence of kernel names on one device repeats with the step as its period.
    KernelSequence,
}

impl InferMethod {
    pub fn name(self) -> &'static str {
        match self {
            InferMethod::KernelSequence => "kernel-sequence",
        }
    }
}

/// Iterations found in the kernel stream, and how sure the finding is.
#[derive(Debug, Clone, PartialEq)]
pub struct Inference {
    pub method: InferMethod,
    /// Share of the searched kernels whose name equals the kernel's one period earlier (0–1).
    pub confidence: f64,
    /// Kernels per step on `device`.
    pub period: usize,
    pub device: u32,
    /// Index in the period (0 = the device's first kernel) of the kernel that starts a step.
    pub offset: usize,
    /// The kernel that starts every step.
    pub first_kernel: String,
    /// Collective (NCCL) kernels per step on `device`, by name.
    pub collectives: Vec<(String, usize)>,
    /// Complete steps only, in order; `kernel_count` is the period.
    pub iterations: Vec<Iteration>,
}

impl Inference {
    /// One sentence for the report: what repeats, how often, and how well.
    pub fn reason(&self) -> String {
        let collectives = if self.collectives.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self
                .collectives
                .iter()
                .map(|(n, c)| format!("{c} {n}"))
                .collect();
            format!(", with {} per step", list.join(", "))
        };
        format!(
            "no step marker and no allreduce kernels: steps inferred from the kernel stream: the sequence of kernel names on device {} repeats every {} kernels ({:.1}% of kernels match the one a period earlier){collectives}; {} complete repeats, each starting at `{}`, cut where the GPU idles longest",
            self.device,
            self.period,
            self.confidence * 100.0,
            self.iterations.len(),
            self.first_kernel
        )
    }
}

/// The device's kernels, by start (table order on ties): indices into `trace.kernels`.
fn device_kernels(trace: &Trace, device: u32) -> Vec<usize> {
    let k = &trace.kernels;
    let mut idx: Vec<usize> = (0..k.len()).filter(|&i| k.device[i] == device).collect();
    idx.sort_by_key(|&i| k.start[i]);
    idx
}

/// The device with the most kernels (the lowest id on a tie).
fn busiest_device(trace: &Trace) -> Option<u32> {
    let mut counts: std::collections::BTreeMap<u32, usize> = Default::default();
    for &d in &trace.kernels.device {
        *counts.entry(d).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(d, _)| d)
}

/// The shortest period at which `names` repeats itself (share of matches ≥ [`MIN_MATCH`]),
/// with that share; `None` when no period fits [`MIN_REPEATS`] times.
pub fn find_period(names: &[NameId]) -> Option<(usize, f64)> {
    let n = names.len();
    (1..=n / MIN_REPEATS).find_map(|p| {
        let matches = (p..n).filter(|&i| names[i] == names[i - p]).count();
        let share = matches as f64 / (n - p) as f64;
        (share >= MIN_MATCH).then_some((p, share))
    })
}

/// The position in the period whose kernel follows the longest mean idle time on the device.
fn cut_offset(starts: &[Ns], ends: &[Ns], period: usize) -> usize {
    let mut sums = vec![0f64; period];
    let mut counts = vec![0usize; period];
    let mut busy_until: Option<Ns> = None;
    for i in 0..starts.len() {
        if let Some(b) = busy_until {
            sums[i % period] += (starts[i] - b).max(0) as f64;
            counts[i % period] += 1;
        }
        busy_until = Some(busy_until.map_or(ends[i], |b| b.max(ends[i])));
    }
    let mean = |r: usize| sums[r] / counts[r].max(1) as f64;
    (0..period)
        .max_by(|&a, &b| mean(a).total_cmp(&mean(b)).then(b.cmp(&a)))
        .unwrap_or(0)
}

/// Infers the steps of a trace without markers, or `None` when its kernel stream does not
/// repeat at step scale.
pub fn infer(trace: &Trace) -> Option<Inference> {
    let device = busiest_device(trace)?;
    let idx = device_kernels(trace, device);
    let k = &trace.kernels;
    let names: Vec<NameId> = idx.iter().map(|&i| k.short_name[i]).collect();
    let searched = &names[..names.len().min(MAX_SEARCHED)];
    let (period, confidence) = find_period(searched)?;
    if period < MIN_STEP_KERNELS {
        return None;
    }
    let starts: Vec<Ns> = idx.iter().map(|&i| k.start[i]).collect();
    let ends: Vec<Ns> = idx.iter().map(|&i| k.end[i]).collect();
    let offset = cut_offset(&starts, &ends, period);
    let iterations: Vec<Iteration> = (offset..)
        .step_by(period)
        .take_while(|&b| b + period <= idx.len())
        .map(|b| {
            let end = ends[b..b + period]
                .iter()
                .copied()
                .max()
                .unwrap_or(starts[b]);
            Iteration {
                start: starts[b],
                end,
                kernel_count: period as u32,
                wall_ns: end - starts[b],
            }
        })
        .collect();
    if iterations.len() < MIN_REPEATS {
        return None;
    }
    let first_kernel = trace.strings.get(names[offset]).to_string();
    let collectives = collectives_per_step(trace, &names[offset..offset + period]);
    Some(Inference {
        method: InferMethod::KernelSequence,
        confidence: (confidence * 1000.0).round() / 1000.0,
        period,
        device,
        offset,
        first_kernel,
        collectives,
        iterations,
    })
}

/// NCCL kernels in one period, by name (first seen first).
fn collectives_per_step(trace: &Trace, period: &[NameId]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for &id in period {
        let name = trace.strings.get(id);
        if !name.to_ascii_lowercase().contains("nccl") {
            continue;
        }
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c += 1,
            None => out.push((name.to_string(), 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_period_wins_and_a_broken_repeat_lowers_the_confidence() {
        let unit: Vec<NameId> = (0..10).collect();
        let mut names: Vec<NameId> = unit.iter().cycle().take(60).copied().collect();
        assert_eq!(find_period(&names), Some((10, 1.0)));
        names[25] = 99; // one kernel differs: 2 of the 50 comparisons fail
        let (p, share) = find_period(&names).unwrap_or_default();
        assert_eq!(p, 10);
        assert!((share - 48.0 / 50.0).abs() < 1e-12, "{share}");
    }

    #[test]
    fn no_period_repeating_five_times_is_no_period() {
        let names: Vec<NameId> = (0..40).collect();
        assert_eq!(find_period(&names), None);
    }

    #[test]
    fn the_cut_is_before_the_kernel_after_the_longest_mean_idle() {
        // Period 3: kernel 2 of each repeat follows a 50 ns idle, the others 1 ns.
        let mut starts = Vec::new();
        let mut t: Ns = 0;
        for i in 0..9 {
            t += if i % 3 == 2 { 50 } else { 1 };
            starts.push(t);
            t += 10;
        }
        let ends: Vec<Ns> = starts.iter().map(|s| s + 10).collect();
        assert_eq!(cut_offset(&starts, &ends, 3), 2);
    }
}
