//! Host-side CUDA API behaviour: API time by name, blocking synchronization and allocation
//! calls, launch latency (spec §5).

use std::collections::HashSet;

use serde::Serialize;

use super::Window;
use super::stats::{Distribution, NamedStats, distribution, named_stats};
use crate::index::units::us;
use crate::index::{SpanCursor, TraceIndex, steady_steps};
use crate::model::intervals::MergeSorted;
use crate::model::{NameId, Ns};
use crate::names::api::ApiKind;

/// API calls of one class (every call; blocking syncs; object creation and allocation), by
/// name: over the whole capture, and inside the explainer's window — a share of the window is
/// read from `in_window` only, so set-up before the first kernel and tear-down after the last
/// are never compared with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSummary {
    /// Whole capture.
    pub calls: u64,
    pub total_us: f64,
    pub by_name: Vec<NamedStats>,
    /// The calls that overlap the window, their time clipped to it.
    pub in_window: WindowCalls,
    /// Calls starting inside steady-state forward steps, per step, when there are steps.
    pub calls_per_step: Option<f64>,
}

/// Calls of one class inside the explainer's window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowCalls {
    pub calls: u64,
    /// Their time inside the window, summed over calls: above the window's length only when
    /// calls of several threads run at the same time.
    pub total_us: f64,
    /// Time during which at least one such call was running (their union): never above the
    /// window's length.
    pub busy_us: f64,
    /// Threads and processes with a call in the window.
    pub threads: u64,
    pub processes: u64,
    pub by_name: Vec<NamedStats>,
}

/// Kernel start − launch call end, for eagerly launched kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchLatency {
    /// Kernels whose launch call was found (graph replays excluded: their nodes queue).
    pub kernels: u64,
    pub distribution: Distribution,
    /// The median latency is at least [`QUEUED_LAUNCH_US`]: kernels wait in the launch queue
    /// behind the ones launched before them, the host running ahead of the GPU (see
    /// `docs/launch-latency.md`).
    pub queued: bool,
}

/// A kernel launched to an idle GPU starts within tens of µs of its launch call; a median of a
/// millisecond or more is the time kernels wait behind earlier launches in the queue.
pub const QUEUED_LAUNCH_US: f64 = 1000.0;

/// Every CUDA API call by name (runtime and driver).
pub fn api_summary(ix: &TraceIndex<'_>, window: &Window) -> CallSummary {
    calls_where(ix, window, |_| true)
}

/// Host-blocking sync calls by name (`cudaEventQuery`/`cudaStreamWaitEvent` do not block).
pub fn sync_summary(ix: &TraceIndex<'_>, window: &Window) -> CallSummary {
    calls_where(ix, window, |k| k == ApiKind::BlockingSync)
}

/// Event/stream creation and allocation calls by name.
pub fn alloc_summary(ix: &TraceIndex<'_>, window: &Window) -> CallSummary {
    calls_where(ix, window, |k| {
        matches!(k, ApiKind::ObjectCreate | ApiKind::Alloc)
    })
}

/// Per name id `(count, total ns, max ns)`, added to one call at a time.
struct PerName(Vec<(u64, Ns, Ns)>);

impl PerName {
    fn add(&mut self, name: NameId, d: Ns) {
        if let Some(a) = self.0.get_mut(name as usize) {
            *a = (a.0 + 1, a.1 + d, a.2.max(d));
        }
    }

    fn calls(&self) -> u64 {
        self.0.iter().map(|a| a.0).sum()
    }

    /// Summed in ns, so that no calls make 0 µs (a sum of no `f64` is −0).
    fn total_ns(&self) -> Ns {
        self.0.iter().map(|a| a.1).sum()
    }
}

/// Calls of the kinds `pick` accepts: by name over the whole capture and inside `window`, and
/// how many start in steady steps per step.
fn calls_where(
    ix: &TraceIndex<'_>,
    window: &Window,
    pick: impl Fn(ApiKind) -> bool,
) -> CallSummary {
    let rt = &ix.trace.runtime;
    let names = ix.trace.strings.len();
    let (mut whole, mut inside) = (
        PerName(vec![(0, 0, 0); names]),
        PerName(vec![(0, 0, 0); names]),
    );
    let (mut threads, mut processes): (HashSet<u32>, HashSet<u32>) = Default::default();
    let spans: Vec<(Ns, Ns)> = steady_steps(&ix.steps.steps)
        .0
        .iter()
        .map(|s| (s.start, s.end))
        .collect();
    let mut in_steps = 0u64;
    let mut cursor = SpanCursor::new(&spans);
    for r in 0..rt.len() {
        if !pick(ix.call_kind(r)) {
            continue;
        }
        whole.add(rt.name[r], (rt.end[r] - rt.start[r]).max(0));
        if let Some((s, e)) = window.clip(rt.start[r], rt.end[r]) {
            inside.add(rt.name[r], e - s);
            threads.insert(rt.thread[r]);
            processes.extend(ix.call_process(r));
        }
        if cursor.find(rt.start[r]).is_some() {
            in_steps += 1;
        }
    }
    let by_name = named_stats(&ix.trace.strings, &whole.0, usize::MAX);
    let in_window = named_stats(&ix.trace.strings, &inside.0, usize::MAX);
    CallSummary {
        calls: whole.calls(),
        total_us: us(whole.total_ns()),
        by_name,
        in_window: WindowCalls {
            calls: inside.calls(),
            total_us: us(inside.total_ns()),
            busy_us: us(busy_ns(ix, window, &pick)),
            threads: threads.len() as u64,
            processes: processes.len() as u64,
            by_name: in_window,
        },
        calls_per_step: (!spans.is_empty()).then(|| in_steps as f64 / spans.len() as f64),
    }
}

/// How long at least one call of the kinds `pick` accepts ran inside `window` (their union):
/// merged as the calls come when the runtime table is in start order (clipping keeps that
/// order), else over their row numbers sorted by clipped start — never a list of the pieces.
fn busy_ns(ix: &TraceIndex<'_>, window: &Window, pick: &impl Fn(ApiKind) -> bool) -> Ns {
    let rt = &ix.trace.runtime;
    let piece = |r: usize| window.clip(rt.start[r], rt.end[r]);
    let rows = (0..rt.len()).filter(|&r| pick(ix.call_kind(r)));
    if rt.start.is_sorted() {
        return MergeSorted::new(rows.filter_map(piece))
            .map(|(s, e)| e - s)
            .sum();
    }
    let mut kept: Vec<u32> = rows
        .filter(|&r| piece(r).is_some())
        .map(|r| r as u32)
        .collect();
    kept.sort_unstable_by_key(|&r| piece(r as usize).map(|p| p.0));
    MergeSorted::new(kept.iter().filter_map(|&r| piece(r as usize)))
        .map(|(s, e)| e - s)
        .sum()
}

/// The distribution of kernel start − launch call end over eagerly launched kernels.
pub fn launch_latency(ix: &TraceIndex<'_>) -> LaunchLatency {
    let k = &ix.trace.kernels;
    let rt = &ix.trace.runtime;
    let eager = |i: usize| {
        ix.launch_call(i)
            .filter(|&r| ix.call_kind(r) == ApiKind::Launch)
    };
    // Sized exactly (one value per kernel): a grown list can be twice that.
    let mut lat: Vec<Ns> = Vec::with_capacity((0..k.len()).filter(|&i| eager(i).is_some()).count());
    lat.extend((0..k.len()).filter_map(|i| eager(i).map(|r| k.start[i] - rt.end[r])));
    let distribution = distribution(&mut lat);
    LaunchLatency {
        kernels: lat.len() as u64,
        queued: distribution.count > 0 && distribution.p50_us >= QUEUED_LAUNCH_US,
        distribution,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::window_of;
    use crate::index::testing::TraceBuilder;

    /// The shared set-up and tear-down trace with an event created across the window's end
    /// (500.5..501.5 µs): it counts its part inside.
    fn setup_and_teardown() -> TraceBuilder {
        let mut b = TraceBuilder::setup_and_teardown();
        b.call("cudaEventCreate_v3020", 500_500, 501_500);
        b
    }

    #[test]
    fn allocations_outside_the_kernel_window_are_not_counted_in_it() {
        let b = setup_and_teardown();
        let ix = TraceIndex::new(&b.trace, "t");
        let w = window_of(&ix);
        assert_eq!(
            (w.start_ns, w.end_ns, w.basis),
            (400_000, 501_000, super::super::WindowBasis::Kernels)
        );
        let a = alloc_summary(&ix, &w);
        // Whole capture: 100 + 200 + 300 + 300 + 1 µs.
        assert_eq!((a.calls, a.total_us), (5, 901.0));
        // In the window: only cudaEventCreate's 500.5..501 µs.
        let names: Vec<&str> = a
            .in_window
            .by_name
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["cudaEventCreate_v3020"]);
        assert_eq!(
            (a.in_window.calls, a.in_window.total_us, a.in_window.busy_us),
            (1, 0.5, 0.5)
        );
        let s = sync_summary(&ix, &w);
        assert_eq!((s.in_window.calls, s.in_window.busy_us), (1, 98.0));
        let all = api_summary(&ix, &w);
        // 8 calls: the set-up and the launch at 300 µs end before the window; the launch at
        // 499 µs, the sync and the event creation overlap it; the two frees come after it.
        assert_eq!((all.calls, all.in_window.calls), (8, 3));
    }

    #[test]
    fn calls_of_two_threads_at_once_sum_above_their_union() {
        let mut b = TraceBuilder::new();
        b.kernel("a", 0, 1_000, 0);
        b.call("cudaDeviceSynchronize_v3020", 0, 800);
        b.thread(8, 8);
        b.call("cudaDeviceSynchronize_v3020", 200, 1_000);
        let ix = TraceIndex::new(&b.trace, "t");
        let s = sync_summary(&ix, &window_of(&ix));
        let w = &s.in_window;
        assert_eq!((w.calls, w.total_us, w.busy_us), (2, 1.6, 1.0));
        assert_eq!((w.threads, w.processes), (2, 2));
    }

    #[test]
    fn without_kernels_the_window_is_the_whole_capture() {
        let mut b = setup_and_teardown();
        b.trace.kernels = Default::default();
        let ix = TraceIndex::new(&b.trace, "t");
        let w = window_of(&ix);
        assert_eq!(
            (w.start_ns, w.end_ns, w.basis),
            (0, 1_200_000, super::super::WindowBasis::Capture)
        );
        let a = alloc_summary(&ix, &w);
        assert_eq!((a.in_window.calls, a.in_window.total_us), (5, 901.0));
    }
}
