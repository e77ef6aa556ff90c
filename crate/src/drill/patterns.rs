//! Repeating-pattern mapping (reference §9.3, spec §4): the per-layer kernel sequence inside
//! steady-state steps, found automatically, numbered, grouped into functional blocks and ranked
//! by the host gap each block waits on per step (gap per layer × layers per step).
//!
//! The layer is the shortest period `p` whose repetition covers the longest stretch of a step's
//! kernel-name sequence (`name[i] == name[i + p]` over a run of `r` positions covers `r + p`
//! kernels); the unit starts where that run starts. Occurrences are then counted as
//! non-overlapping exact matches in every steady step. A kernel's preceding gap is the device's
//! idle time right before it (its start minus the latest end of all earlier kernels, ≥ 0); the
//! first kernel of a step counts 0 (its gap is the inter-step host work, which the gap analysis
//! reports).

use std::ops::ControlFlow;

use serde::Serialize;

use crate::index::units::us;
use crate::index::{DeviceKernels, SpanCursor, TraceIndex, steady_spans};
use crate::model::{NameId, Ns};
use crate::names::kernels::KernelCategory;

/// Longest prefix of a step searched for the period, and the longest period tried.
const SEARCH_KERNELS: usize = 4096;
const MAX_PERIOD: usize = 1024;
/// Steps whose units vote for the layer sequence.
const VOTING_STEPS: usize = 8;
/// Without forward steps, the first kernels of the device stand in for one step.
const NO_STEP_KERNELS: usize = 200_000;

/// One position of the layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternKernel {
    pub index: usize,
    pub name: String,
    pub category: KernelCategory,
    /// Mean idle gap before this kernel, per layer occurrence.
    pub mean_gap_us: f64,
    pub mean_duration_us: f64,
}

/// Consecutive positions of one functional category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternBlock {
    /// `A`, `B`, … in layer order.
    pub group: String,
    pub first: usize,
    pub last: usize,
    /// `"0–2"` (or `"3"`).
    pub kernels: String,
    pub operation: String,
    pub category: KernelCategory,
    pub names: Vec<String>,
    pub gap_per_layer_us: f64,
    /// Gap per layer × layers per step: the block's host gap per step.
    pub total_gap_us: f64,
    /// `HIGH` (the largest), `Medium` (≥ half of it) or `Low`.
    pub priority: String,
    /// 1 = largest total gap.
    pub rank: usize,
}

/// The `patterns` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternReport {
    pub found: bool,
    pub file: Option<String>,
    pub device: Option<u32>,
    /// Which kernels were searched (steady-state steps, generation steps, whole trace).
    pub source: String,
    pub steps: u64,
    /// Layer occurrences found in those steps.
    pub layers: u64,
    pub layers_per_step: f64,
    /// Mean duration of the searched steps (0 without steps).
    pub step_us: f64,
    pub kernels: Vec<PatternKernel>,
    /// Ranked: largest total gap first.
    pub blocks: Vec<PatternBlock>,
    pub note: Option<String>,
}

/// Each step's kernels on one device in time order, (kernel row, preceding gap): streamed again
/// from the device's kernels when the steps come in device order (launches follow kernel order
/// closely: the common case), else grouped by step once and held.
enum Sequences<'a> {
    InOrder {
        ix: &'a TraceIndex<'a>,
        order: &'a DeviceKernels,
        spans: &'a [(Ns, Ns)],
    },
    Held {
        kernels: Vec<(u32, Ns)>,
        /// Where each step's kernels start in `kernels`.
        starts: Vec<usize>,
    },
}

impl Sequences<'_> {
    /// Hands each step's sequence to `f`, in step order, until `f` breaks.
    fn for_each(&self, mut f: impl FnMut(&[(u32, Ns)]) -> ControlFlow<()>) {
        match self {
            Sequences::InOrder { ix, order, spans } => {
                let mut seq: Vec<(u32, Ns)> = Vec::new();
                let mut current = None;
                let flow = walk(ix, order, spans, |step, kernel, gap| {
                    if current != Some(step) {
                        if !seq.is_empty() {
                            f(&seq)?;
                        }
                        seq.clear();
                        current = Some(step);
                    }
                    // A step's first kernel waits on the inter-step host work, not on the layer.
                    seq.push((kernel, if seq.is_empty() { 0 } else { gap }));
                    ControlFlow::Continue(())
                });
                if flow.is_continue() && !seq.is_empty() {
                    let _ = f(&seq);
                }
            }
            Sequences::Held { kernels, starts } => {
                let ends = starts.iter().skip(1).copied().chain([kernels.len()]);
                for (&s, e) in starts.iter().zip(ends) {
                    if f(&kernels[s..e]).is_break() {
                        break;
                    }
                }
            }
        }
    }
}

/// Finds the per-layer pattern in the first input (ranks of one model repeat the same layer).
pub fn pattern_report(inputs: &[TraceIndex<'_>]) -> PatternReport {
    let Some(ix) = inputs.first() else {
        return not_found(None, None, "no trace".into(), 0);
    };
    let (spans, source) = steady_spans(&ix.steps.steps);
    let best = ix
        .devices
        .iter()
        .max_by_key(|d| d.len())
        .map(|d| (d.device, sequences(ix, d, &spans)));
    let Some((device, seqs)) = best else {
        return not_found(Some(ix), None, source.into(), 0);
    };
    let (source, step_count) = if spans.is_empty() {
        (
            format!(
                "the first {NO_STEP_KERNELS} kernels of device {device} (no forward-step NVTX ranges)"
            ),
            1,
        )
    } else {
        (
            format!("{source} ({} steps)", spans.len()),
            spans.len() as u64,
        )
    };
    let names = |seq: &[(u32, Ns)]| -> Vec<NameId> {
        seq.iter()
            .map(|&(k, _)| ix.trace.kernels.short_name[k as usize])
            .collect()
    };
    let mut voters: Vec<Vec<NameId>> = Vec::new();
    seqs.for_each(|seq| {
        voters.push(names(seq));
        match voters.len() < VOTING_STEPS {
            true => ControlFlow::Continue(()),
            false => ControlFlow::Break(()),
        }
    });
    let Some(unit) = vote_unit(voters.into_iter()) else {
        return not_found(Some(ix), Some(device), source, step_count);
    };
    let tally = count_occurrences(ix, &seqs, &unit);
    if tally.occurrences < 2 {
        return not_found(Some(ix), Some(device), source, step_count);
    }
    let kernels = layer_kernels(ix, &unit, &tally);
    let layers_per_step = tally.occurrences as f64 / step_count as f64;
    PatternReport {
        found: true,
        file: Some(ix.label.clone()),
        device: Some(device),
        source,
        steps: step_count,
        layers: tally.occurrences,
        layers_per_step,
        step_us: if spans.is_empty() {
            0.0
        } else {
            spans.iter().map(|&(s, e)| us(e - s)).sum::<f64>() / spans.len() as f64
        },
        blocks: blocks(&kernels, layers_per_step),
        kernels,
        note: None,
    }
}

fn not_found(
    ix: Option<&TraceIndex<'_>>,
    device: Option<u32>,
    source: String,
    steps: u64,
) -> PatternReport {
    PatternReport {
        found: false,
        file: ix.map(|ix| ix.label.clone()),
        device,
        source,
        steps,
        layers: 0,
        layers_per_step: 0.0,
        step_us: 0.0,
        kernels: Vec::new(),
        blocks: Vec::new(),
        note: Some(
            "no kernel sequence repeats at least twice inside the searched steps: no per-layer pattern"
                .into(),
        ),
    }
}

/// Kernels of one device grouped by the step that launched them (one sequence without steps),
/// each with its preceding gap: streamed when the steps come in device order, else held.
fn sequences<'a>(
    ix: &'a TraceIndex<'a>,
    order: &'a DeviceKernels,
    spans: &'a [(Ns, Ns)],
) -> Sequences<'a> {
    let mut last = 0;
    let in_order = walk(ix, order, spans, |step, _, _| {
        if step < last {
            return ControlFlow::Break(());
        }
        last = step;
        ControlFlow::Continue(())
    });
    if in_order.is_continue() {
        return Sequences::InOrder { ix, order, spans };
    }
    held(ix, order, spans)
}

/// The sequences grouped by step and held: each kernel with its step, sorted by step.
fn held<'a>(ix: &TraceIndex<'_>, order: &DeviceKernels, spans: &[(Ns, Ns)]) -> Sequences<'a> {
    let mut entries: Vec<(u32, u32, Ns)> = Vec::new(); // (step, kernel, gap)
    let _ = walk(ix, order, spans, |step, kernel, gap| {
        entries.push((step, kernel, gap));
        ControlFlow::Continue(())
    });
    // A stable sort keeps device order within a step.
    entries.sort_by_key(|e| e.0);
    let mut kernels = Vec::with_capacity(entries.len());
    let mut starts = Vec::new();
    for (j, &(step, kernel, gap)) in entries.iter().enumerate() {
        let first = j == 0 || entries[j - 1].0 != step;
        if first {
            starts.push(kernels.len());
        }
        // A step's first kernel waits on the inter-step host work, not on the layer.
        kernels.push((kernel, if first { 0 } else { gap }));
    }
    Sequences::Held { kernels, starts }
}

/// Walks one device's kernels in time order, handing over each kernel launched inside a step
/// (without steps: the first [`NO_STEP_KERNELS`], as step 0) with its step and its preceding
/// gap (the device's idle time right before it), until `each` breaks.
fn walk(
    ix: &TraceIndex<'_>,
    order: &DeviceKernels,
    spans: &[(Ns, Ns)],
    mut each: impl FnMut(u32, u32, Ns) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let k = &ix.trace.kernels;
    let mut busy_until = Ns::MIN;
    let mut steps = SpanCursor::new(spans);
    let mut handed: usize = 0;
    for i in order.kernels() {
        let (s, e) = (k.start[i as usize], k.end[i as usize]);
        let gap = if busy_until == Ns::MIN {
            0
        } else {
            (s - busy_until).max(0)
        };
        busy_until = busy_until.max(e);
        let step = if spans.is_empty() {
            (handed < NO_STEP_KERNELS).then_some(0)
        } else {
            steps.find(ix.launch_time(i as usize))
        };
        if let Some(step) = step {
            handed += 1;
            each(step as u32, i, gap)?;
        }
    }
    ControlFlow::Continue(())
}

/// The unit most steps agree on (ties: the earliest step's).
fn vote_unit(units: impl Iterator<Item = Vec<NameId>>) -> Option<Vec<NameId>> {
    let mut votes: Vec<(Vec<NameId>, usize)> = Vec::new();
    for unit in units.filter_map(|names| find_unit(&names)) {
        match votes.iter_mut().find(|(u, _)| *u == unit) {
            Some(v) => v.1 += 1,
            None => votes.push((unit, 1)),
        }
    }
    let max = votes.iter().map(|v| v.1).max()?;
    votes.into_iter().find(|v| v.1 == max).map(|v| v.0)
}

/// The repeated unit of one name sequence: the shortest period with the widest coverage.
pub fn find_unit(names: &[NameId]) -> Option<Vec<NameId>> {
    let s = &names[..names.len().min(SEARCH_KERNELS)];
    let mut best: Option<(usize, usize, usize)> = None; // (coverage, period, run start)
    for p in 1..=(s.len() / 2).min(MAX_PERIOD) {
        let (mut run, mut run_start, mut best_run, mut best_start) = (0, 0, 0, 0);
        for i in 0..s.len() - p {
            if s[i] == s[i + p] {
                if run == 0 {
                    run_start = i;
                }
                run += 1;
                if run > best_run {
                    (best_run, best_start) = (run, run_start);
                }
            } else {
                run = 0;
            }
        }
        let coverage = best_run + p;
        if best_run >= p && best.is_none_or(|b| coverage > b.0) {
            best = Some((coverage, p, best_start));
        }
    }
    best.map(|(_, p, start)| s[start..start + p].to_vec())
}

/// Per-position sums over every occurrence of the unit.
struct Tally {
    occurrences: u64,
    gap: Vec<Ns>,
    duration: Vec<Ns>,
}

fn count_occurrences(ix: &TraceIndex<'_>, seqs: &Sequences<'_>, unit: &[NameId]) -> Tally {
    let k = &ix.trace.kernels;
    let mut t = Tally {
        occurrences: 0,
        gap: vec![0; unit.len()],
        duration: vec![0; unit.len()],
    };
    seqs.for_each(|seq| {
        let mut i = 0;
        while i + unit.len() <= seq.len() {
            let window = &seq[i..i + unit.len()];
            let matches = window
                .iter()
                .zip(unit)
                .all(|(&(kr, _), &n)| k.short_name[kr as usize] == n);
            if !matches {
                i += 1;
                continue;
            }
            t.occurrences += 1;
            for (j, &(kr, gap)) in window.iter().enumerate() {
                t.gap[j] += gap;
                t.duration[j] += (k.end[kr as usize] - k.start[kr as usize]).max(0);
            }
            i += unit.len();
        }
        ControlFlow::Continue(())
    });
    t
}

fn layer_kernels(ix: &TraceIndex<'_>, unit: &[NameId], t: &Tally) -> Vec<PatternKernel> {
    let n = t.occurrences.max(1) as f64;
    unit.iter()
        .enumerate()
        .map(|(j, &name)| PatternKernel {
            index: j,
            name: ix.trace.strings.get(name).to_string(),
            category: ix.names.category(name),
            mean_gap_us: us(t.gap[j]) / n,
            mean_duration_us: us(t.duration[j]) / n,
        })
        .collect()
}

/// Groups consecutive positions of one category, then ranks the groups by total gap per step.
fn blocks(kernels: &[PatternKernel], layers_per_step: f64) -> Vec<PatternBlock> {
    let mut out: Vec<PatternBlock> = Vec::new();
    for k in kernels {
        match out.last_mut() {
            Some(b) if b.category == k.category => {
                b.last = k.index;
                b.gap_per_layer_us += k.mean_gap_us;
                if !b.names.contains(&k.name) {
                    b.names.push(k.name.clone());
                }
            }
            _ => out.push(PatternBlock {
                group: group_letter(out.len()),
                first: k.index,
                last: k.index,
                kernels: String::new(),
                operation: k.category.label().to_string(),
                category: k.category,
                names: vec![k.name.clone()],
                gap_per_layer_us: k.mean_gap_us,
                total_gap_us: 0.0,
                priority: String::new(),
                rank: 0,
            }),
        }
    }
    for b in &mut out {
        b.kernels = if b.first == b.last {
            b.first.to_string()
        } else {
            format!("{}–{}", b.first, b.last)
        };
        b.total_gap_us = b.gap_per_layer_us * layers_per_step;
    }
    out.sort_by(|a, b| {
        b.total_gap_us
            .total_cmp(&a.total_gap_us)
            .then(a.first.cmp(&b.first))
    });
    let top = out.first().map_or(0.0, |b| b.total_gap_us);
    for (i, b) in out.iter_mut().enumerate() {
        b.rank = i + 1;
        b.priority = if i == 0 && top > 0.0 {
            "HIGH"
        } else if top > 0.0 && b.total_gap_us >= top / 2.0 {
            "Medium"
        } else {
            "Low"
        }
        .to_string();
    }
    out
}

/// `A`…`Z`, then `AA`, `AB`, …
fn group_letter(i: usize) -> String {
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    if i < 26 {
        letter(i).to_string()
    } else {
        format!("{}{}", letter(i / 26 - 1), letter(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    fn collected(s: &Sequences<'_>) -> Vec<Vec<(u32, Ns)>> {
        let mut out = Vec::new();
        s.for_each(|seq| {
            out.push(seq.to_vec());
            ControlFlow::Continue(())
        });
        out
    }

    /// Two steps, 0..1000 and 1000..2000; three kernels on one device at 3000, 3020 and 3050
    /// (10 ns each), launched at `launches`.
    fn two_steps(launches: [Ns; 3]) -> TraceBuilder {
        let mut b = TraceBuilder::new();
        b.range(
            "[Executor] _forward_step 1: 0 ctx reqs, 1 gen reqs",
            0,
            1000,
        );
        b.range(
            "[Executor] _forward_step 2: 0 ctx reqs, 1 gen reqs",
            1000,
            2000,
        );
        for (name, (at, start)) in ["a", "b", "c"]
            .iter()
            .zip(launches.iter().zip([3000, 3020, 3050]))
        {
            let c = b.call("cudaLaunchKernel", *at, at + 5);
            b.kernel(name, start, start + 10, c);
        }
        b
    }

    /// Kernel `b` launched in step 2 runs before `c` of step 1: the step's sequence is its
    /// kernels in device order, `c` waiting 20 ns after `b` ended (the device's idle time), each
    /// step's first kernel 0.
    #[test]
    fn steps_out_of_device_order_are_grouped_by_step() {
        let b = two_steps([100, 1100, 200]);
        let ix = TraceIndex::new(&b.trace, "t");
        let (spans, _) = steady_spans(&ix.steps.steps);
        assert_eq!(spans, [(0, 1000), (1000, 2000)]);
        let s = sequences(&ix, &ix.devices[0], &spans);
        assert!(matches!(s, Sequences::Held { .. }));
        assert_eq!(collected(&s), vec![vec![(0, 0), (2, 20)], vec![(1, 0)]]);
    }

    /// In device order the sequences are streamed, and are those the held grouping gives.
    #[test]
    fn steps_in_device_order_stream_the_sequences_they_would_hold() {
        let b = two_steps([100, 200, 1100]);
        let ix = TraceIndex::new(&b.trace, "t");
        let (spans, _) = steady_spans(&ix.steps.steps);
        let s = sequences(&ix, &ix.devices[0], &spans);
        assert!(matches!(s, Sequences::InOrder { .. }));
        let want = vec![vec![(0, 0), (1, 10)], vec![(2, 0)]];
        assert_eq!(collected(&s), want);
        assert_eq!(collected(&held(&ix, &ix.devices[0], &spans)), want);
        // Stopped early, the walk hands over no more.
        let mut first = Vec::new();
        s.for_each(|seq| {
            first.push(seq.to_vec());
            ControlFlow::Break(())
        });
        assert_eq!(first, want[..1]);
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
}
