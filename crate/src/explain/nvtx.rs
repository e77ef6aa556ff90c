//! NVTX ranges (spec §5): time per range name, and GPU time attributed to ranges.
//!
//! A kernel's GPU time goes to the innermost NVTX range open on the thread that launched it, at
//! the moment of the launch call (the usual "NVTX GPU projection"). Coverage is the share of all
//! kernel time that some range received. Ranges per thread are swept once with a stack, in the
//! order of the thread's launch calls.
//!
//! Ranges are counted by name, PyTorch `emit_nvtx` ranges by op: `aten::mm, seq = 12, op_id = 3,
//! sizes = […]` is one call of `aten::mm` (`names::ranges::emit_nvtx_op`), not its own name.

use serde::Serialize;

use super::stats::{NamedStats, named_stats_by};
use crate::index::TraceIndex;
use crate::index::units::{ratio, us};
use crate::model::{NO_NAME, NameId, Ns, Strings};
use crate::names::ranges::emit_nvtx_op;
use crate::profile::Profile;
use crate::steps::visible_name;

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

/// One thread's visible ranges, sorted by start (outer first on equal starts): their NVTX rows
/// when the table already has them in that order (an export's NVTX table is in start order),
/// else the ranges themselves, sorted.
enum ThreadRanges {
    Rows(Vec<u32>),
    Sorted(Vec<Range>),
}

impl ThreadRanges {
    fn len(&self) -> usize {
        match self {
            ThreadRanges::Rows(v) => v.len(),
            ThreadRanges::Sorted(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize, ix: &TraceIndex<'_>, names: &[NameId]) -> Option<Range> {
        match self {
            ThreadRanges::Rows(v) => v.get(i).map(|&r| {
                let nvtx = &ix.trace.nvtx;
                (
                    nvtx.start[r as usize],
                    nvtx.end[r as usize],
                    names[r as usize],
                )
            }),
            ThreadRanges::Sorted(v) => v.get(i).copied(),
        }
    }
}

/// Visible ranges by thread, each thread's sorted by start (outer first on equal starts), and
/// every NVTX row's visible name (`NO_NAME`: not visible).
fn ranges_by_thread(ix: &TraceIndex<'_>) -> (Vec<ThreadRanges>, Vec<NameId>) {
    let nvtx = &ix.trace.nvtx;
    let sw = Profile::Standard.switches();
    let names: Vec<NameId> = (0..nvtx.len())
        .map(|i| visible_name(nvtx, i, &sw).unwrap_or(NO_NAME))
        .collect();
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); ix.trace.threads.len()];
    for i in (0..nvtx.len()).filter(|&i| names[i] != NO_NAME) {
        if let Some(v) = rows.get_mut(nvtx.thread[i] as usize) {
            v.push(i as u32);
        }
    }
    let key = |r: &u32| {
        (
            nvtx.start[*r as usize],
            std::cmp::Reverse(nvtx.end[*r as usize]),
        )
    };
    let out = rows
        .into_iter()
        .map(|v| {
            if v.is_sorted_by_key(key) {
                return ThreadRanges::Rows(v);
            }
            let mut ranges: Vec<Range> = v
                .iter()
                .map(|&r| {
                    (
                        nvtx.start[r as usize],
                        nvtx.end[r as usize],
                        names[r as usize],
                    )
                })
                .collect();
            ranges.sort_unstable_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
            ThreadRanges::Sorted(ranges)
        })
        .collect();
    (out, names)
}

/// One thread's sweep over its ranges, fed its launch calls in start order: the ranges open at
/// the last call, innermost on top.
#[derive(Default)]
struct ThreadSweep {
    next: usize,
    stack: Vec<Range>,
}

impl ThreadSweep {
    /// The innermost range open at `t` (not before the previous call's start).
    fn innermost(
        &mut self,
        t: Ns,
        ranges: &ThreadRanges,
        ix: &TraceIndex<'_>,
        names: &[NameId],
    ) -> Option<NameId> {
        while let Some(range) = ranges.get(self.next, ix, names).filter(|g| g.0 <= t) {
            while self.stack.last().is_some_and(|top| top.1 <= range.0) {
                self.stack.pop();
            }
            self.stack.push(range);
            self.next += 1;
        }
        while self.stack.last().is_some_and(|top| top.1 <= t) {
            self.stack.pop();
        }
        self.stack.last().map(|top| top.2)
    }
}

/// The innermost range open at each launch call (by runtime row), `NO_NAME` outside ranges.
///
/// When each thread's launch calls are in start order in the table (an export's runtime table
/// is in start order per thread), one pass sweeps every thread at once; else each thread's calls
/// are listed and sorted first.
fn innermost_at_launches(
    ix: &TraceIndex<'_>,
    ranges: &[ThreadRanges],
    names: &[NameId],
) -> Vec<NameId> {
    let rt = &ix.trace.runtime;
    let launch = |r: usize| {
        let thread = rt.thread[r] as usize;
        (ix.call_kind(r).launches_kernels() && ranges.get(thread).is_some_and(|g| !g.is_empty()))
            .then_some(thread)
    };
    let mut inner = vec![NO_NAME; rt.len()];
    let mut last: Vec<Ns> = vec![Ns::MIN; ranges.len()];
    let in_order = (0..rt.len()).all(|r| {
        launch(r)
            .is_none_or(|thread| std::mem::replace(&mut last[thread], rt.start[r]) <= rt.start[r])
    });
    drop(last);
    let mut sweeps: Vec<ThreadSweep> = ranges.iter().map(|_| ThreadSweep::default()).collect();
    if in_order {
        for (r, slot) in inner.iter_mut().enumerate() {
            if let Some(thread) = launch(r)
                && let Some(name) =
                    sweeps[thread].innermost(rt.start[r], &ranges[thread], ix, names)
            {
                *slot = name;
            }
        }
        return inner;
    }
    let mut calls: Vec<Vec<u32>> = vec![Vec::new(); ranges.len()];
    for r in 0..rt.len() {
        if let Some(thread) = launch(r) {
            calls[thread].push(r as u32);
        }
    }
    for ((thread_calls, thread_ranges), sweep) in calls.iter_mut().zip(ranges).zip(&mut sweeps) {
        if !thread_calls.is_sorted_by_key(|&r| rt.start[r as usize]) {
            thread_calls.sort_by_key(|&r| rt.start[r as usize]);
        }
        for &r in thread_calls.iter() {
            if let Some(name) = sweep.innermost(rt.start[r as usize], thread_ranges, ix, names) {
                inner[r as usize] = name;
            }
        }
    }
    inner
}

/// Range summary and GPU attribution; `top` limits both lists.
pub fn nvtx_summary(ix: &TraceIndex<'_>, top: usize) -> NvtxSummary {
    let (ranges, names) = ranges_by_thread(ix);
    let mut per_name: Vec<(u64, Ns, Ns)> = vec![(0, 0, 0); ix.trace.strings.len()];
    for thread in &ranges {
        for (s, e, name) in (0..thread.len()).filter_map(|i| thread.get(i, ix, &names)) {
            if let Some(a) = per_name.get_mut(name as usize) {
                *a = (a.0 + 1, a.1 + (e - s), a.2.max(e - s));
            }
        }
    }
    let inner = innermost_at_launches(ix, &ranges, &names);
    drop((ranges, names));
    let k = &ix.trace.kernels;
    let mut gpu: Vec<(u64, Ns)> = vec![(0, 0); ix.trace.strings.len()];
    let mut kernel_ns: Ns = 0;
    for i in 0..k.len() {
        let d = (k.end[i] - k.start[i]).max(0);
        kernel_ns += d;
        let name = ix.launch_call(i).map_or(NO_NAME, |r| inner[r]);
        if let Some(g) = gpu.get_mut(name as usize) {
            *g = (g.0 + 1, g.1 + d);
        }
    }
    let attributed: Ns = gpu.iter().map(|g| g.1).sum();
    let op = op_of(&ix.trace.strings);
    let per_name = fold(&op, &per_name, |a, b| (a.0 + b.0, a.1 + b.1, a.2.max(b.2)));
    let gpu = fold(&op, &gpu, |a, b| (a.0 + b.0, a.1 + b.1));
    NvtxSummary {
        ranges: per_name.iter().map(|a| a.0).sum(),
        top_ranges: named_stats_by(&per_name, top, |i| name_of(ix, i)),
        gpu_time: top_gpu(ix, &gpu, kernel_ns, top),
        attributed_us: us(attributed),
        kernel_us: us(kernel_ns),
        coverage: ratio(attributed as f64, kernel_ns as f64),
    }
}

/// The op name of string `id` (a PyTorch `emit_nvtx` name without its per-call suffixes).
fn name_of(ix: &TraceIndex<'_>, id: usize) -> String {
    emit_nvtx_op(ix.trace.strings.get(id as NameId)).to_string()
}

/// Per string id, the first id naming the same op: every call of one `emit_nvtx` op maps to
/// one id.
fn op_of(strings: &Strings) -> Vec<usize> {
    let mut first: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    (0..strings.len())
        .map(|i| {
            *first
                .entry(emit_nvtx_op(strings.get(i as NameId)))
                .or_insert(i)
        })
        .collect()
}

/// Per-id figures summed onto each id's op (`op_of`); other ids are left at their default.
fn fold<T: Copy + Default>(op: &[usize], per_id: &[T], add: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = vec![T::default(); per_id.len()];
    for (i, &v) in per_id.iter().enumerate() {
        if let Some(slot) = op.get(i).and_then(|&o| out.get_mut(o)) {
            *slot = add(*slot, v);
        }
    }
    out
}

fn top_gpu(ix: &TraceIndex<'_>, gpu: &[(u64, Ns)], kernel_ns: Ns, top: usize) -> Vec<NvtxGpuTime> {
    let mut ids: Vec<usize> = (0..gpu.len()).filter(|&i| gpu[i].0 > 0).collect();
    ids.sort_by(|&a, &b| gpu[b].1.cmp(&gpu[a].1).then(a.cmp(&b)));
    ids.into_iter()
        .take(top)
        .map(|i| NvtxGpuTime {
            name: name_of(ix, i),
            kernels: gpu[i].0,
            gpu_us: us(gpu[i].1),
            share: ratio(gpu[i].1 as f64, kernel_ns as f64),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

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
        let ix = TraceIndex::new(&b.trace, "t");
        let gpu: Vec<(String, u64)> = nvtx_summary(&ix, 10)
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
        let ix = TraceIndex::new(&b.trace, "t");
        let n = nvtx_summary(&ix, 10);
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
        let ix = TraceIndex::new(&b.trace, "t");
        let n = nvtx_summary(&ix, 10);
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
}
