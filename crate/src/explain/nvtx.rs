//! NVTX ranges (spec §5): time per range name, and GPU time attributed to ranges.
//!
//! A kernel's GPU time goes to the innermost NVTX range open on the thread that launched it, at
//! the moment of the launch call (the usual "NVTX GPU projection"). Coverage is the share of all
//! kernel time that some range received. Ranges and calls are read together in start order:
//! each thread keeps a stack of its ranges open at the clock ([`OpenRanges`]), and a launch
//! call, when read, is held with the innermost range of its thread until its kernels come.
//!
//! Ranges are counted by name (`names::ranges::range_name`): PyTorch `emit_nvtx` ranges by op
//! (`aten::mm, seq = 12, op_id = 3, sizes = […]` is one call of `aten::mm`), every forward
//! step's range under its marker's pattern (each step names its range differently).

use std::iter::Peekable;

use hashbrown::HashMap;
use serde::Serialize;

use super::stats::{NamedStats, PerName, most_first, named_stats_by};
use crate::index::units::{ratio, us};
use crate::model::rows::Rows;
use crate::model::{NO_NAME, NameId, Ns, NvtxRow, Strings, ThreadIdx};
use crate::names::ranges::{counted_name, range_name};
use crate::profile::{Profile, Switches};
use crate::steps::visible_row_name;

/// GPU time of kernels launched inside ranges of one name (innermost range).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvtxGpuTime {
    pub name: String,
    pub kernels: u64,
    pub gpu_us: f64,
    /// Share of all kernel time.
    pub share: f64,
}

/// The NVTX section of the explainer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvtxSummary {
    pub ranges: u64,
    /// Most total time first.
    pub top_ranges: Vec<NamedStats>,
    /// Most GPU time first.
    pub gpu_time: Vec<NvtxGpuTime>,
    pub attributed_us: f64,
    pub kernel_us: f64,
    /// `attributed_us / kernel_us`.
    pub coverage: f64,
}

/// One visible range: (start, end, name).
type Range = (Ns, Ns, NameId);

/// The visible range of `row` on a thread of the trace's `threads`, if it is one: the standard
/// profile's name, on a known thread.
fn visible(row: &NvtxRow, sw: &Switches, threads: usize) -> Option<Range> {
    let name = visible_row_name(row, sw)?;
    ((row.thread as usize) < threads).then_some((row.start, row.end, name))
}

/// Range name ids onto the name each is counted under ([`range_name`]), each id read once; a
/// forward step's name (every step has its own) is read each time and not kept, so that what
/// is kept is an entry per op, not per step.
struct CountedNames<'t> {
    strings: &'t Strings,
    kept: HashMap<NameId, &'t str>,
    /// The id asked last and its name: the kernels launched inside one step ask for its name
    /// one after the other.
    last: Option<(NameId, &'t str)>,
}

impl<'t> CountedNames<'t> {
    fn new(strings: &'t Strings) -> CountedNames<'t> {
        CountedNames {
            strings,
            kept: HashMap::new(),
            last: None,
        }
    }

    /// The name range name `id` is counted under (`None`: past the string table).
    fn of(&mut self, id: NameId) -> Option<&'t str> {
        if (id as usize) >= self.strings.len() {
            return None;
        }
        if let Some((last, name)) = self.last
            && last == id
        {
            return Some(name);
        }
        let name = match self.kept.get(&id) {
            Some(&name) => name,
            None => {
                let (name, step) = counted_name(self.strings.get(id));
                if !step {
                    self.kept.insert(id, name);
                }
                name
            }
        };
        self.last = Some((id, name));
        Some(name)
    }
}

/// Figures per counted name, with the least name id counted under it: the lists' ties go by
/// that id.
type PerCounted<'t, T> = HashMap<&'t str, (NameId, T)>;

/// Adds to `name`'s figures with `add`, counting id `id` under it.
fn add_to<'t, T: Default>(
    per: &mut PerCounted<'t, T>,
    name: &'t str,
    id: NameId,
    add: impl FnOnce(&mut T),
) {
    let entry = per.entry(name).or_insert((id, T::default()));
    entry.0 = entry.0.min(id);
    add(&mut entry.1);
}

/// Time per visible range name, folded over the ranges.
pub struct RangeTally<'t> {
    sw: Switches,
    threads: usize,
    names: CountedNames<'t>,
    /// `(count, total ns, max ns)` per counted name.
    per_name: PerCounted<'t, (u64, Ns, Ns)>,
}

impl<'t> RangeTally<'t> {
    /// For a trace of `threads` threads and its `strings`.
    pub fn new(threads: usize, strings: &'t Strings) -> RangeTally<'t> {
        RangeTally {
            sw: Profile::Standard.switches(),
            threads,
            names: CountedNames::new(strings),
            per_name: HashMap::new(),
        }
    }

    pub fn add(&mut self, row: &NvtxRow) {
        if let Some((s, e, id)) = visible(row, &self.sw, self.threads)
            && let Some(name) = self.names.of(id)
        {
            let d = e - s;
            add_to(&mut self.per_name, name, id, |a| {
                *a = (a.0 + 1, a.1.saturating_add(d), a.2.max(d));
            });
        }
    }
}

/// The NVTX ranges open at the clock, per thread, innermost on top: fed the ranges in start
/// order, asked at times that never go back.
///
/// Each thread's ranges are pushed in (start, longest first) order; a range pushed pops the
/// ranges on top that ended by its start, and a lookup at `t` pops those that ended by `t`.
/// What is held is the ranges open at the clock (plus, on a thread whose ranges overlap without
/// nesting, an ended one under a longer one), and the ranges that start at one instant.
pub struct OpenRanges<'a> {
    ranges: Peekable<Rows<'a, NvtxRow>>,
    sw: Switches,
    stacks: Vec<Vec<Range>>,
    /// Ranges of one start read ahead, to be pushed longest first.
    same_start: Vec<(ThreadIdx, Range)>,
    open: usize,
    peak: usize,
}

impl<'a> OpenRanges<'a> {
    /// Over `ranges` (in start order) of a trace of `threads` threads.
    pub fn new(ranges: Rows<'a, NvtxRow>, threads: usize) -> OpenRanges<'a> {
        OpenRanges {
            ranges: ranges.peekable(),
            sw: Profile::Standard.switches(),
            stacks: vec![Vec::new(); threads],
            same_start: Vec::new(),
            open: 0,
            peak: 0,
        }
    }

    /// The innermost visible range open on `thread` at `t` (`NO_NAME`: none), `t` not before
    /// the previous lookup's.
    pub fn innermost(&mut self, thread: ThreadIdx, t: Ns) -> NameId {
        self.innermost_reading(thread, t, &mut |_| {})
    }

    /// [`OpenRanges::innermost`], each range read for it handed to `read` first.
    pub fn innermost_reading(
        &mut self,
        thread: ThreadIdx,
        t: Ns,
        read: &mut dyn FnMut(&NvtxRow),
    ) -> NameId {
        self.read_until(t, read);
        let Some(stack) = self.stacks.get_mut(thread as usize) else {
            return NO_NAME;
        };
        while stack.last().is_some_and(|top| top.1 <= t) {
            stack.pop();
            self.open -= 1;
        }
        stack.last().map_or(NO_NAME, |top| top.2)
    }

    /// Reads the ranges not read yet, opening none: for what tallies every range as it is
    /// read, once the lookups are done.
    pub fn read_to_end(&mut self) {
        self.read_to_end_reading(&mut |_| {});
    }

    /// [`OpenRanges::read_to_end`], each range handed to `read`.
    pub fn read_to_end_reading(&mut self, read: &mut dyn FnMut(&NvtxRow)) {
        self.ranges.by_ref().for_each(|r| read(&r));
    }

    /// Pushes every range starting at or before `t`, one start at a time, each handed to `read`.
    fn read_until(&mut self, t: Ns, read: &mut dyn FnMut(&NvtxRow)) {
        while let Some(first) = self.ranges.next_if(|r| r.start <= t) {
            read(&first);
            let start = first.start;
            let threads = self.stacks.len();
            let push = |row: NvtxRow, group: &mut Vec<(ThreadIdx, Range)>| {
                if let Some(range) = visible(&row, &self.sw, threads) {
                    group.push((row.thread, range));
                }
            };
            let mut group = std::mem::take(&mut self.same_start);
            push(first, &mut group);
            while let Some(row) = self.ranges.next_if(|r| r.start == start) {
                read(&row);
                push(row, &mut group);
            }
            self.peak = self.peak.max(self.open + group.len());
            // Stable: equal ranges stay in row order.
            group.sort_by_key(|&(_, (_, end, _))| std::cmp::Reverse(end));
            for (thread, range) in group.drain(..) {
                self.push(thread, range);
            }
            self.same_start = group;
        }
    }

    fn push(&mut self, thread: ThreadIdx, range: Range) {
        let Some(stack) = self.stacks.get_mut(thread as usize) else {
            return;
        };
        while stack.last().is_some_and(|top| top.1 <= range.0) {
            stack.pop();
            self.open -= 1;
        }
        stack.push(range);
        self.open += 1;
        self.peak = self.peak.max(self.open);
    }

    /// The most ranges held at once (on the stacks, and read ahead at one start).
    pub fn peak(&self) -> usize {
        self.peak
    }
}

/// GPU time per innermost launching range, folded over the kernels as they are joined to
/// their launch calls.
pub struct GpuTally<'t> {
    names: CountedNames<'t>,
    /// `(kernels, ns)` per counted name.
    per_name: PerCounted<'t, (u64, Ns)>,
    kernel_ns: Ns,
}

impl<'t> GpuTally<'t> {
    pub fn new(strings: &'t Strings) -> GpuTally<'t> {
        GpuTally {
            names: CountedNames::new(strings),
            per_name: HashMap::new(),
            kernel_ns: 0,
        }
    }

    /// A kernel of `d` ns launched inside range `id` (`NO_NAME`: none or no launch call).
    pub fn add(&mut self, id: NameId, d: Ns) {
        self.kernel_ns = self.kernel_ns.saturating_add(d);
        if let Some(name) = self.names.of(id) {
            add_to(&mut self.per_name, name, id, |g| *g = (g.0 + 1, g.1 + d));
        }
    }
}

/// Range summary and GPU attribution; `top` limits both lists.
pub fn nvtx_summary(
    ranges: &RangeTally<'_>,
    gpu: &GpuTally<'_>,
    strings: &Strings,
    top: usize,
) -> NvtxSummary {
    let attributed: Ns = gpu
        .per_name
        .values()
        .map(|(_, g)| g.1)
        .fold(0, Ns::saturating_add);
    let kernel_ns = gpu.kernel_ns;
    // Each name under the least id counted under it in either tally.
    let id_of = |name: &str| -> usize {
        let least = |per: Option<NameId>| per.unwrap_or(NameId::MAX);
        least(ranges.per_name.get(name).map(|e| e.0))
            .min(least(gpu.per_name.get(name).map(|e| e.0))) as usize
    };
    let per_name = PerName(
        ranges
            .per_name
            .iter()
            .map(|(name, &(_, v))| (id_of(name), v))
            .collect(),
    );
    let gpu_by_id: HashMap<usize, (u64, Ns)> = gpu
        .per_name
        .iter()
        .map(|(name, &(_, v))| (id_of(name), v))
        .collect();
    NvtxSummary {
        ranges: per_name.count(),
        top_ranges: named_stats_by(&per_name, top, |i| name_of(strings, i)),
        gpu_time: top_gpu(strings, &gpu_by_id, kernel_ns, top),
        attributed_us: us(attributed),
        kernel_us: us(kernel_ns),
        coverage: ratio(attributed as f64, kernel_ns as f64),
    }
}

/// The name string `id` is counted under (`names::ranges::range_name`).
fn name_of(strings: &Strings, id: usize) -> String {
    range_name(strings.get(id as NameId)).to_string()
}

fn top_gpu(
    strings: &Strings,
    gpu: &HashMap<usize, (u64, Ns)>,
    kernel_ns: Ns,
    top: usize,
) -> Vec<NvtxGpuTime> {
    most_first(gpu, |g| g.0 > 0, |g| g.1)
        .into_iter()
        .take(top)
        .map(|(i, (kernels, ns))| NvtxGpuTime {
            name: name_of(strings, i),
            kernels,
            gpu_us: us(ns),
            share: ratio(ns as f64, kernel_ns as f64),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    fn nvtx_of(b: &TraceBuilder, top: usize) -> NvtxSummary {
        crate::explain::explain_rows(&b.trace, "t", &[], top)
            .expect("loaded rows")
            .nvtx
    }

    #[test]
    fn range_names_are_kept_per_op_not_per_forward_step() {
        use crate::model::rows::EventRows;
        let mut b = TraceBuilder::new();
        for i in 0..3 {
            let name = format!("[Executor] _forward_step {i}: 0 ctx reqs, 4 gen reqs");
            b.range(&name, i * 100, i * 100 + 50);
        }
        b.range("IO 1", 0, 10);
        b.range("IO 1", 20, 40);
        let mut tally = RangeTally::new(b.trace.threads.len(), &b.trace.strings);
        b.trace.ranges().for_each(|r| tally.add(&r));
        assert_eq!(tally.names.kept.len(), 1, "only IO 1's id is kept");
        let pattern = crate::names::steps::StepStyle::TensorrtLlm.pattern();
        assert_eq!(tally.per_name.get(pattern).map(|e| e.1), Some((3, 150, 50)));
        assert_eq!(tally.per_name.get("IO 1").map(|e| e.1), Some((2, 30, 20)));
    }

    #[test]
    fn gpu_time_goes_to_the_innermost_range_whatever_the_table_order() {
        // The ranges and launch calls of the test below, each table in reverse start order.
        let mut b = TraceBuilder::new();
        b.range("mlp", 400, 600);
        b.range("attention", 100, 300);
        b.range("step", 0, 1_000);
        let c3 = b.call("cudaLaunchKernel", 500, 510); // inside mlp
        let c2 = b.call("cudaLaunchKernel", 350, 360); // inside step only
        let c1 = b.call("cudaLaunchKernel", 150, 160); // inside attention
        b.kernel("a", 200, 210, c1);
        b.kernel("b", 400, 430, c2);
        b.kernel("c", 600, 700, c3);
        let gpu: Vec<(String, u64)> = nvtx_of(&b, 10)
            .gpu_time
            .into_iter()
            .map(|g| (g.name, g.kernels))
            .collect();
        let want = [("mlp", 1), ("step", 1), ("attention", 1)].map(|(n, k)| (n.to_string(), k));
        assert_eq!(gpu, want);
    }

    #[test]
    fn gpu_time_goes_to_the_innermost_range_at_the_launch() {
        let mut b = TraceBuilder::new();
        b.range("step", 0, 1_000);
        b.range("attention", 100, 300);
        b.range("mlp", 400, 600);
        let c1 = b.call("cudaLaunchKernel", 150, 160); // inside attention
        let c2 = b.call("cudaLaunchKernel", 350, 360); // inside step only
        let c3 = b.call("cudaLaunchKernel", 500, 510); // inside mlp
        let c4 = b.call("cudaLaunchKernel", 2_000, 2_010); // outside every range
        b.kernel("a", 200, 210, c1);
        b.kernel("b", 400, 430, c2);
        b.kernel("c", 600, 700, c3);
        b.kernel("d", 2_100, 2_110, c4);
        b.kernel("e", 2_200, 2_205, 0); // no launch call
        let n = nvtx_of(&b, 10);
        let gpu: Vec<(&str, u64, f64)> = n
            .gpu_time
            .iter()
            .map(|g| (g.name.as_str(), g.kernels, g.gpu_us))
            .collect();
        assert_eq!(
            gpu,
            vec![("mlp", 1, 0.1), ("step", 1, 0.03), ("attention", 1, 0.01)]
        );
        assert!((n.kernel_us - 0.155).abs() < 1e-12 && (n.coverage - 0.14 / 0.155).abs() < 1e-12);
        assert_eq!(n.ranges, 3);
        assert_eq!(n.top_ranges[0].name, "step");
    }

    #[test]
    fn emit_nvtx_calls_of_one_op_are_one_row() {
        let mut b = TraceBuilder::new();
        b.range("flash_attn_forward, op_id = 7", 0, 100);
        b.range("flash_attn_forward, op_id = 9", 200, 260);
        b.range(
            "aten::mm, seq = 12, op_id = 3, sizes = [[2, 3], [3, 4]]",
            300,
            310,
        );
        b.range(
            "aten::mm, seq = 13, op_id = 4, sizes = [[2, 3], [3, 4]]",
            400,
            430,
        );
        let c1 = b.call("cudaLaunchKernel", 10, 20);
        let c2 = b.call("cudaLaunchKernel", 210, 220);
        b.kernel("fa", 30, 80, c1);
        b.kernel("fa", 230, 240, c2);
        let n = nvtx_of(&b, 10);
        let rows: Vec<(&str, u64, f64, f64)> = n
            .top_ranges
            .iter()
            .map(|r| (r.name.as_str(), r.count, r.total_us, r.max_us))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("flash_attn_forward", 2, 0.16, 0.1),
                ("aten::mm", 2, 0.04, 0.03)
            ]
        );
        assert_eq!(n.ranges, 4);
        let gpu: Vec<(&str, u64, f64)> = n
            .gpu_time
            .iter()
            .map(|g| (g.name.as_str(), g.kernels, g.gpu_us))
            .collect();
        assert_eq!(gpu, vec![("flash_attn_forward", 2, 0.06)]);
    }

    #[test]
    fn each_thread_has_its_own_stack_and_overlapping_ranges_give_the_later_one() {
        let mut b = TraceBuilder::new();
        b.range("outer", 0, 1_000);
        b.range("x", 100, 300);
        b.range("y", 200, 400); // overlaps x without nesting
        b.range("narrow", 600, 700); // same start as wide, listed first
        b.range("wide", 600, 900);
        for (at, kernel) in [(250, "k1"), (350, "k2"), (500, "k3"), (650, "k4")] {
            let c = b.call("cudaLaunchKernel", at, at + 5);
            b.kernel(kernel, at + 1_000, at + 1_010, c);
        }
        b.thread(8, 8);
        b.range("other", 0, 1_000);
        let c = b.call("cudaLaunchKernel", 260, 265);
        b.kernel("k5", 1_270, 1_280, c);
        let gpu: Vec<(String, u64)> = nvtx_of(&b, 10)
            .gpu_time
            .into_iter()
            .map(|g| (g.name, g.kernels))
            .collect();
        // Equal GPU time: ties by string id (the order the names were first met).
        let want = [("outer", 1), ("y", 2), ("narrow", 1), ("other", 1)];
        let mut want: Vec<(String, u64)> = want.map(|(n, k)| (n.to_string(), k)).to_vec();
        want.sort_by_key(|w| std::cmp::Reverse(w.1));
        assert_eq!(gpu, want);
    }
}
