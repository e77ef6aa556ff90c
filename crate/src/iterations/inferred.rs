//! Technique 3: iterations inferred from the kernel stream when no step marker and no allreduce
//! kernel marks them (issue 18 item 3).
//!
//! A training or serving loop launches the same kernels in the same order every step, so the
//! sequence of kernel names on one device repeats with the step's kernel count as its period.
//! [`KernelTape`] holds the first [`MAX_SEARCHED`] kernels of each device (fed in start order,
//! by `analyze` from `rows.kernels()` and by the verdict's kernel pass as it streams);
//! [`KernelTape::find_unit`] takes the busiest device, finds the shortest period at which its
//! names repeat, then prefers the step scale: a larger period that lines up most of the
//! shorter one's breaks replaces it (a layer block inside a step breaks at each step boundary,
//! as a collective or optimizer kernel met once per step does). The unit is cut where the GPU
//! idles longest on average; when that pause is not distinct from the others the repeats may
//! be layer blocks of one step, and [`UnitScale::Repeat`] says so. How well the names repeat is
//! the confidence. Collectives (NCCL kernels) inside the period are counted per step.

use serde::{Deserialize, Serialize};

use super::Iteration;
use crate::model::rows::{CallRow, EventRows};
use crate::model::{NameId, Ns, ProcessIdx, Strings};

/// At most this many kernels of each device are searched for a period (bounds the work and the
/// memory in the page: `MAX_SEARCHED × MAX_SEARCHED / MIN_REPEATS` comparisons per level at
/// worst, `MAX_SEARCHED` names and times held per device).
pub const MAX_SEARCHED: usize = 12_000;
/// A step is repeated at least this many times (as the benchmark phase needs 5 iterations).
pub const MIN_REPEATS: usize = 5;
/// A repeating unit shorter than this many kernels is a loop inside a step, not a step.
pub const MIN_STEP_KERNELS: usize = 8;
/// The share of kernels equal to the kernel one period earlier needed to call it a period.
pub const MIN_MATCH: f64 = 0.9;
/// A larger unit replaces a repeating one when it leaves at most this share of its mismatches
/// (the breaks of a layer loop at each step boundary line up at the step's period).
const RESOLVED_MISMATCHES: f64 = 0.5;
/// Repeats are set apart by a pause when the GPU idles at least this many times longer, on
/// average, before a repeat's first kernel than before any other kernel of the repeat.
const DISTINCT_PAUSE: f64 = 2.0;

/// How the inferred iterations were found (`steps.method` in `analyze --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InferMethod {
    /// The sequence of kernel names on one device repeats with the step as its period.
    KernelSequence,
    /// One process launches a CUDA graph once per step, at a regular interval.
    GraphLaunch,
}

impl InferMethod {
    pub fn name(self) -> &'static str {
        match self {
            InferMethod::KernelSequence => "kernel-sequence",
            InferMethod::GraphLaunch => "graph-launch",
        }
    }
}

/// What the repeating unit is, as far as the kernel stream tells (`steps.unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnitScale {
    /// A step: a larger unit over a repeating block (layers inside a step), or repeats set
    /// apart by a distinct GPU pause (the host's work between steps).
    Step,
    /// Repeats that run back to back with nothing around them: a step of a GPU-bound loop or
    /// a layer block inside one step; the kernel stream cannot tell which.
    Repeat,
}

/// The repeating unit found on one device's kernel names, or the steps one process's CUDA-graph
/// launches mark (no kernel list: what the verdict's passes and `analyze` both report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitFound {
    pub method: InferMethod,
    /// Kernel sequence: the share of the searched kernels whose name equals the kernel's one
    /// period earlier; graph launches: the share of intervals between launches within half
    /// the median of it (0–1, rounded to 3 decimals).
    pub confidence: f64,
    /// Kernels per unit on `device` (kernel sequence).
    pub period_kernels: Option<usize>,
    pub device: Option<u32>,
    /// Index in the period (0 = the device's first kernel) of the kernel that starts a unit.
    pub offset: usize,
    /// Complete units: on the device, or intervals from one graph launch to the next.
    pub repeats: usize,
    /// A smaller unit that repeats inside this one (kernels), when one was found first.
    pub block_kernels: Option<usize>,
    pub unit: UnitScale,
    /// Mean GPU idle before a unit's first kernel over the largest mean idle before any other
    /// of its kernels (kernel sequence; `null` when the others never idle).
    pub pause_ratio: Option<f64>,
    /// Graph launches: the median interval from one launch to the next, ns.
    pub interval_ns: Option<Ns>,
}

impl UnitFound {
    /// What was found, in one phrase (the report's step source and the page's marker hint).
    pub fn describe(&self) -> String {
        let confidence = self.confidence * 100.0;
        if self.method == InferMethod::GraphLaunch {
            let interval = self.interval_ns.unwrap_or(0) as f64 / 1e6;
            return format!(
                "steps inferred from CUDA-graph launches by graph-launch (confidence {confidence:.1}%): {} steps from one graph launch to the next, {interval:.3} ms apart (median)",
                self.repeats
            );
        }
        let block = self
            .block_kernels
            .map(|b| format!(", over a {b}-kernel block that repeats inside it"))
            .unwrap_or_default();
        let scale = match self.unit {
            UnitScale::Step => String::new(),
            UnitScale::Repeat => "; the repeats run back to back with no distinct pause before them: steps of a GPU-bound loop, or layer blocks inside one step".into(),
        };
        format!(
            "steps inferred from the kernel stream by {} (confidence {confidence:.1}%): {} kernels × {} repeats on device {}{block}{scale}",
            self.method.name(),
            self.period_kernels.unwrap_or(0),
            self.repeats,
            self.device.unwrap_or(0)
        )
    }
}

/// Iterations found in the kernel stream, and how sure the finding is.
#[derive(Debug, Clone, PartialEq)]
pub struct Inference {
    pub found: UnitFound,
    /// The kernel that starts every step.
    pub first_kernel: String,
    /// Collective (NCCL) kernels per step on `device`, by name.
    pub collectives: Vec<(String, usize)>,
    /// Complete steps only, in order; `kernel_count` is the period.
    pub iterations: Vec<Iteration>,
}

impl Inference {
    /// One sentence for the report: why steps were inferred, and [`Inference::summary`].
    pub fn reason(&self) -> String {
        format!(
            "no step marker and no allreduce kernels: {}",
            self.summary()
        )
    }

    /// What repeats, how often, how well, and where each step starts (`steps.note`).
    pub fn summary(&self) -> String {
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
        let cut = match self.found.method {
            InferMethod::KernelSequence => ", cut where the GPU idles longest",
            InferMethod::GraphLaunch => "",
        };
        format!(
            "{}{collectives}; each starting at `{}`{cut}",
            self.found.describe(),
            self.first_kernel
        )
    }
}

/// One device's first [`MAX_SEARCHED`] kernels in start order, and how many it ran.
#[derive(Debug, Clone, Default)]
struct DeviceTape {
    device: u32,
    total: usize,
    names: Vec<NameId>,
    starts: Vec<Ns>,
    ends: Vec<Ns>,
}

/// What the period search reads of a kernel stream, fed one kernel at a time in start order:
/// bounded by devices × [`MAX_SEARCHED`], so the page's kernel pass keeps it as `analyze` does.
#[derive(Debug, Clone, Default)]
pub struct KernelTape {
    devices: Vec<DeviceTape>,
}

/// Kernels and graph replays in start order: a replay recorded whole is one item of the stream
/// (kernels alone, as they come, when the export has no graph-trace table).
fn compute_rows(
    rows: &dyn EventRows,
) -> crate::model::rows::Rows<'_, crate::model::rows::KernelRow> {
    match rows.meta().present.replays {
        false => rows.kernels(),
        true => Box::new(rows.gpu_work().filter(|k| k.work.is_compute())),
    }
}

impl KernelTape {
    /// The tape of a trace's kernels and graph replays (the work the verdict's sweep tapes), read
    /// in start order.
    pub fn of(rows: &dyn EventRows) -> KernelTape {
        let mut tape = KernelTape::default();
        for k in compute_rows(rows) {
            tape.push(k.device, k.short_name, k.start, k.end);
        }
        tape
    }

    /// Adds a kernel; kernels come in non-decreasing start.
    pub fn push(&mut self, device: u32, name: NameId, start: Ns, end: Ns) {
        let at = match self.devices.iter().position(|d| d.device == device) {
            Some(at) => at,
            None => {
                self.devices.push(DeviceTape {
                    device,
                    ..DeviceTape::default()
                });
                self.devices.len() - 1
            }
        };
        let d = &mut self.devices[at];
        d.total = d.total.saturating_add(1);
        if d.names.len() < MAX_SEARCHED {
            d.names.push(name);
            d.starts.push(start);
            d.ends.push(end);
        }
    }

    /// The device with the most kernels (the lowest id on a tie).
    fn busiest(&self) -> Option<&DeviceTape> {
        self.devices
            .iter()
            .max_by(|a, b| a.total.cmp(&b.total).then(b.device.cmp(&a.device)))
    }

    /// The step-scale repeating unit of the busiest device, or `None` when its kernel stream
    /// does not repeat at step scale.
    pub fn find_unit(&self) -> Option<UnitFound> {
        let d = self.busiest()?;
        let (period, share, block) = step_period(&d.names)?;
        let offset = cut_offset(&d.starts, &d.ends, period);
        let repeats = d.total.saturating_sub(offset) / period;
        if repeats < MIN_REPEATS {
            return None;
        }
        let pause_ratio = pause_ratio(&d.starts, &d.ends, period, offset);
        let distinct = pause_ratio.is_none_or(|r| r >= DISTINCT_PAUSE);
        Some(UnitFound {
            method: InferMethod::KernelSequence,
            confidence: (share * 1000.0).round() / 1000.0,
            period_kernels: Some(period),
            device: Some(d.device),
            offset,
            repeats,
            block_kernels: block,
            unit: if block.is_some() || distinct {
                UnitScale::Step
            } else {
                UnitScale::Repeat
            },
            pause_ratio: pause_ratio.map(|r| (r * 100.0).round() / 100.0),
            interval_ns: None,
        })
    }
}

/// Share of the kernels from `p` on whose name equals the one `p` earlier.
fn match_share(names: &[NameId], p: usize) -> f64 {
    let n = names.len();
    if p == 0 || p >= n {
        return 0.0;
    }
    let matches = (p..n).filter(|&i| names[i] == names[i - p]).count();
    matches as f64 / (n - p) as f64
}

/// The shortest period at which `names` repeats itself (share of matches ≥ [`MIN_MATCH`]),
/// with that share; `None` when no period fits [`MIN_REPEATS`] times.
pub fn find_period(names: &[NameId]) -> Option<(usize, f64)> {
    first_period(names, 1, 1.0)
}

/// The shortest period from `from` whose mismatch share is at most `max_mismatch` and whose
/// match share is at least [`MIN_MATCH`].
fn first_period(names: &[NameId], from: usize, max_mismatch: f64) -> Option<(usize, f64)> {
    (from..=names.len() / MIN_REPEATS).find_map(|p| {
        let share = match_share(names, p);
        (share >= MIN_MATCH && 1.0 - share <= max_mismatch).then_some((p, share))
    })
}

/// The step-scale period of `names`: the shortest period, then, as long as one exists, the
/// shortest larger period that resolves most of its mismatches (a layer loop inside a step
/// breaks at every step boundary; the step's period lines those breaks up). Returns the period,
/// its share and the smaller period it replaced; `None` when the unit is shorter than
/// [`MIN_STEP_KERNELS`].
pub fn step_period(names: &[NameId]) -> Option<(usize, f64, Option<usize>)> {
    let (mut period, mut share) = find_period(names)?;
    let mut block = None;
    // A break must recur at least as often as a step does to be a step boundary.
    let min_breaks = MIN_REPEATS as f64 / names.len().max(1) as f64;
    while 1.0 - share >= min_breaks {
        let limit = (1.0 - share) * RESOLVED_MISMATCHES;
        let Some((p, s)) = first_period(names, period + 1, limit) else {
            break;
        };
        block = Some(period);
        (period, share) = (p, s);
    }
    (period >= MIN_STEP_KERNELS).then_some((period, share, block))
}

/// Each kernel's idle time before it (its start − the latest end before it), `None` for the
/// first.
fn idles(starts: &[Ns], ends: &[Ns]) -> impl Iterator<Item = (usize, Ns)> {
    let mut busy_until: Option<Ns> = None;
    (0..starts.len()).filter_map(move |i| {
        let idle = busy_until.map(|b| (starts[i] - b).max(0));
        busy_until = Some(busy_until.map_or(ends[i], |b| b.max(ends[i])));
        idle.map(|d| (i, d))
    })
}

/// Mean idle before each position of the period.
fn mean_idles(starts: &[Ns], ends: &[Ns], period: usize) -> Vec<f64> {
    let mut sums = vec![0f64; period];
    let mut counts = vec![0usize; period];
    for (i, idle) in idles(starts, ends) {
        sums[i % period] += idle as f64;
        counts[i % period] += 1;
    }
    sums.iter()
        .zip(&counts)
        .map(|(s, &c)| s / c.max(1) as f64)
        .collect()
}

/// The position in the period whose kernel follows the longest mean idle time on the device.
fn cut_offset(starts: &[Ns], ends: &[Ns], period: usize) -> usize {
    let mean = mean_idles(starts, ends, period);
    (0..period)
        .max_by(|&a, &b| mean[a].total_cmp(&mean[b]).then(b.cmp(&a)))
        .unwrap_or(0)
}

/// The mean idle at the cut over the largest mean idle at any other position (`None`: the
/// other positions never idle).
fn pause_ratio(starts: &[Ns], ends: &[Ns], period: usize, offset: usize) -> Option<f64> {
    let mean = mean_idles(starts, ends, period);
    let others = (0..period)
        .filter(|&r| r != offset)
        .map(|r| mean[r])
        .fold(0f64, f64::max);
    (others > 0.0).then(|| mean[offset] / others)
}

/// Infers the steps of a trace without markers, or `None` when neither its CUDA-graph launches
/// nor its kernel stream repeat at step scale. Graph launches come first: one per step is a
/// host-side mark of the step, and graph-level tracing leaves the graphs' kernels out of the
/// kernel stream. Two passes over the calls or the kernels: one finds the unit (the tapes hold
/// a bounded head of each device or process), the next cuts the steps.
pub fn infer(rows: &dyn EventRows) -> Option<Inference> {
    let strings = &rows.meta().strings;
    let graph = &strings.classify(crate::names::launch::is_graph_launch);
    let graph_launches = || {
        rows.calls()
            .filter(move |c| crate::model::flag(graph, c.name))
    };
    let mut launches = GraphLaunchTape::default();
    graph_launches().for_each(|c| launches.push(c.process, c.start));
    if let Some(found) = launches.find_unit() {
        let process = launches.busiest()?.0;
        return Some(graph_inference(
            strings,
            graph_launches().filter(|c| c.process == process),
            found,
        ));
    }
    let found = KernelTape::of(rows).find_unit()?;
    let (period, offset, device) = (found.period_kernels?, found.offset, found.device?);
    let mut cutter = StepCutter::new(period, offset, found.repeats);
    compute_rows(rows)
        .filter(|k| k.device == device)
        .for_each(|k| cutter.push(k.short_name, k.start, k.end));
    let names = cutter.names;
    Some(Inference {
        first_kernel: strings.get(*names.first()?).to_string(),
        collectives: collectives_per_step(strings, &names),
        found,
        iterations: cutter.iterations,
    })
}

/// Cuts one device's kernels, fed in start order, into the complete units of `period` kernels
/// from the `offset`-th; keeps the first unit's names.
struct StepCutter {
    period: usize,
    offset: usize,
    /// Complete units on the device: kernels past the last are no step.
    units: usize,
    /// Kernels of the device met so far.
    seen: usize,
    names: Vec<NameId>,
    iterations: Vec<Iteration>,
}

impl StepCutter {
    fn new(period: usize, offset: usize, units: usize) -> StepCutter {
        StepCutter {
            period,
            offset,
            units,
            seen: 0,
            names: Vec::with_capacity(period),
            iterations: Vec::with_capacity(units),
        }
    }

    fn push(&mut self, name: NameId, start: Ns, end: Ns) {
        let at = self.seen;
        self.seen += 1;
        let Some(into) = at.checked_sub(self.offset) else {
            return;
        };
        let (unit, place) = (into / self.period, into % self.period);
        if unit >= self.units {
            return;
        }
        if unit == 0 {
            self.names.push(name);
        }
        if place == 0 {
            self.iterations.push(Iteration {
                start,
                end,
                kernel_count: self.period as u32,
                wall_ns: 0,
            });
        }
        if let Some(it) = self.iterations.last_mut() {
            it.end = it.end.max(end);
            it.wall_ns = it.end - it.start;
        }
    }
}

/// Steps from one graph launch (calls in start order) to the next.
fn graph_inference(
    strings: &Strings,
    launches: impl Iterator<Item = CallRow>,
    found: UnitFound,
) -> Inference {
    let mut first: Option<CallRow> = None;
    let mut prev: Option<Ns> = None;
    let mut iterations = Vec::new();
    for call in launches {
        first.get_or_insert(call);
        if let Some(p) = prev {
            iterations.push(Iteration {
                start: p,
                end: call.start,
                kernel_count: 1,
                wall_ns: call.start - p,
            });
        }
        prev = Some(call.start);
    }
    Inference {
        first_kernel: first.map_or("", |c| strings.get(c.name)).to_string(),
        collectives: Vec::new(),
        found,
        iterations,
    }
}

/// The starts of each process's first [`MAX_SEARCHED`] CUDA-graph launch calls, and how many it
/// made, fed in start order (by `analyze` from `rows.calls()`, by `detect`'s launch
/// sweep as the calls stream).
#[derive(Debug, Clone, Default)]
pub struct GraphLaunchTape {
    /// `(process, launches, starts held)` in order of first launch.
    processes: Vec<(ProcessIdx, usize, Vec<Ns>)>,
}

impl GraphLaunchTape {
    /// Adds a graph launch call; calls come in non-decreasing start.
    pub fn push(&mut self, process: ProcessIdx, start: Ns) {
        let at = match self.processes.iter().position(|p| p.0 == process) {
            Some(at) => at,
            None => {
                self.processes.push((process, 0, Vec::new()));
                self.processes.len() - 1
            }
        };
        let p = &mut self.processes[at];
        p.1 += 1;
        if p.2.len() < MAX_SEARCHED {
            p.2.push(start);
        }
    }

    /// The process that launched graphs most (the earliest to start on a tie: process numbers
    /// differ between the page's passes).
    fn busiest(&self) -> Option<&(ProcessIdx, usize, Vec<Ns>)> {
        self.processes.iter().max_by(|a, b| {
            let first = |p: &(ProcessIdx, usize, Vec<Ns>)| p.2.first().copied();
            a.1.cmp(&b.1).then(first(b).cmp(&first(a)))
        })
    }

    /// Steps marked by the busiest process's graph launches: at least [`MIN_REPEATS`] complete
    /// intervals, at least [`MIN_MATCH`] of them within half the median of it (one launch per
    /// step; several graphs per step launch at uneven intervals and fail this).
    pub fn find_unit(&self) -> Option<UnitFound> {
        let (_, total, starts) = self.busiest()?;
        let mut intervals: Vec<Ns> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        if intervals.len() < MIN_REPEATS {
            return None;
        }
        intervals.sort_unstable();
        let median = intervals[intervals.len() / 2];
        let regular = intervals
            .iter()
            .filter(|&&d| 2 * d >= median && 2 * d <= 3 * median)
            .count();
        let share = regular as f64 / intervals.len() as f64;
        (median > 0 && share >= MIN_MATCH).then(|| UnitFound {
            method: InferMethod::GraphLaunch,
            confidence: (share * 1000.0).round() / 1000.0,
            period_kernels: None,
            device: None,
            offset: 0,
            repeats: total - 1,
            block_kernels: None,
            unit: UnitScale::Step,
            pause_ratio: None,
            interval_ns: Some(median),
        })
    }
}

/// NCCL kernels in one period, by name (first seen first).
fn collectives_per_step(strings: &Strings, period: &[NameId]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for &id in period {
        let name = strings.get(id);
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

    /// One step: an embedding kernel, 30 identical 10-kernel layers, then a loss and an
    /// optimizer kernel (303 kernels).
    fn layered_step() -> Vec<NameId> {
        let mut step: Vec<NameId> = vec![100];
        for _ in 0..30 {
            step.extend(0..10);
        }
        step.extend([101, 102]);
        step
    }

    #[test]
    fn a_layer_block_inside_a_step_gives_way_to_the_step() {
        let step = layered_step();
        let names: Vec<NameId> = step.iter().cycle().take(6 * step.len()).copied().collect();
        // The layer repeats well enough on its own (it breaks only around the 3 step kernels) …
        let (block, share) = find_period(&names).unwrap_or_default();
        assert_eq!(block, 10);
        assert!(share > MIN_MATCH && share < 1.0, "{share}");
        // … but the step lines those breaks up.
        assert_eq!(step_period(&names), Some((303, 1.0, Some(10))));
    }

    #[test]
    fn scattered_odd_kernels_do_not_make_a_larger_unit() {
        let unit: Vec<NameId> = (0..20).collect();
        let mut names: Vec<NameId> = unit.iter().cycle().take(1000).copied().collect();
        for (at, odd) in [(130, 97), (517, 98), (861, 99)] {
            names[at] = odd;
        }
        let (period, share, block) = step_period(&names).unwrap_or_default();
        assert_eq!((period, block), (20, None));
        assert!((share - (980.0 - 6.0) / 980.0).abs() < 1e-12, "{share}");
    }

    /// A tape of `repeats` units of `period` distinct kernels on device 3, 10 ns each, 1 ns
    /// apart, the first kernel of a unit after `pause` ns.
    fn tape(period: usize, repeats: usize, pause: Ns) -> KernelTape {
        let mut tape = KernelTape::default();
        let mut t: Ns = 0;
        for i in 0..period * repeats {
            t += if i % period == 0 { pause } else { 1 };
            tape.push(3, (i % period) as NameId, t, t + 10);
            t += 10;
        }
        tape
    }

    #[test]
    fn repeats_set_apart_by_a_distinct_pause_are_steps_and_back_to_back_ones_may_be_layers() {
        let steps = tape(12, 7, 50).find_unit().expect("a unit");
        assert_eq!((steps.period_kernels, steps.device), (Some(12), Some(3)));
        assert_eq!((steps.offset, steps.repeats), (0, 7));
        assert_eq!(steps.unit, UnitScale::Step);
        assert_eq!(steps.pause_ratio, Some(50.0));
        let layers = tape(12, 7, 1).find_unit().expect("a unit");
        assert_eq!(layers.unit, UnitScale::Repeat);
        assert_eq!(layers.pause_ratio, Some(1.0));
        assert!(layers.describe().contains("layer blocks inside one step"));
    }

    #[test]
    fn the_cutter_keeps_complete_units_from_the_offset_each_ending_at_its_latest_kernel() {
        // Period 3 from the 2nd kernel, 2 complete units: kernel 0 comes before the cut and
        // kernel 7 after the last complete unit; kernel 2 ends last in the first unit.
        let mut cutter = StepCutter::new(3, 1, 2);
        for (i, name) in [9, 0, 1, 2, 0, 1, 2, 0].into_iter().enumerate() {
            let start = i as Ns * 10;
            let end = if i == 2 { 100 } else { start + 5 };
            cutter.push(name, start, end);
        }
        let spans: Vec<(Ns, Ns, u32, Ns)> = cutter
            .iterations
            .iter()
            .map(|it| (it.start, it.end, it.kernel_count, it.wall_ns))
            .collect();
        assert_eq!(spans, vec![(10, 100, 3, 90), (40, 65, 3, 25)]);
        assert_eq!(cutter.names, vec![0, 1, 2], "the first unit's names");
    }

    #[test]
    fn only_the_first_kernels_of_a_device_are_held() {
        let mut tape = KernelTape::default();
        for i in 0..MAX_SEARCHED + 5 {
            tape.push(0, (i % 9) as NameId, i as Ns * 10, i as Ns * 10 + 5);
        }
        let d = tape.busiest().expect("a device");
        assert_eq!((d.total, d.names.len()), (MAX_SEARCHED + 5, MAX_SEARCHED));
        // The repeats count every kernel of the device, held or not.
        let unit = tape.find_unit().expect("a unit");
        assert_eq!(unit.period_kernels, Some(9));
        assert_eq!(unit.repeats, (MAX_SEARCHED + 5 - unit.offset) / 9);
    }

    #[test]
    fn one_graph_launch_per_step_marks_the_steps_and_uneven_launches_do_not() {
        let mut tape = GraphLaunchTape::default();
        // Process 2 launches every 1000 ns (one interval of 1400 ns, still within half the
        // median); process 1 launches less often.
        let mut t: Ns = 0;
        for i in 0..12 {
            t += if i == 6 { 1400 } else { 1000 };
            tape.push(2, t);
            if i % 3 == 0 {
                tape.push(1, t + 1);
            }
        }
        let unit = tape.find_unit().expect("a unit");
        assert_eq!(unit.method, InferMethod::GraphLaunch);
        assert_eq!((unit.repeats, unit.interval_ns), (11, Some(1000)));
        assert_eq!(unit.confidence, 1.0);
        // Two graphs per step, 100 ns then 900 ns apart: the median is 900 or 100 and half the
        // intervals are far from it.
        let mut uneven = GraphLaunchTape::default();
        for step in 0..10 {
            uneven.push(0, step * 1000);
            uneven.push(0, step * 1000 + 100);
        }
        assert_eq!(uneven.find_unit(), None);
        // Five launches are four steps: too few.
        let mut few = GraphLaunchTape::default();
        (0..5).for_each(|i| few.push(0, i * 1000));
        assert_eq!(few.find_unit(), None);
    }
}
