//! Host-side CUDA API behaviour: API time by name, blocking synchronization and allocation
//! calls, launch latency (spec §5).
//!
//! Folded over the calls in start order ([`CallTally`]): per name, per thread and process met,
//! the union of the window's calls merged as they come. Launch latency's percentiles are exact
//! from two reads of the kernels joined to their launch calls ([`Percentiles`],
//! `explain::fold`).

use hashbrown::HashSet;

use serde::Serialize;

use super::Window;
use super::stats::{Distribution, NamedStats, PerName, Percentiles, named_stats};
use crate::index::SpanCursor;
use crate::index::units::us;
use crate::model::intervals::UnionLength;
use crate::model::rows::CallRow;
use crate::model::{Ns, ProcessIdx, Strings};
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

/// The three classes of calls the explainer lists.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSummaries {
    /// Every CUDA API call by name (runtime and driver).
    pub api: CallSummary,
    /// Host-blocking sync calls by name (`cudaEventQuery`/`cudaStreamWaitEvent` do not block).
    pub syncs: CallSummary,
    /// Event/stream creation and allocation calls by name.
    pub allocations: CallSummary,
}

/// Whether a call of kind `kind` belongs to each class, in [`CallSummaries`] order.
fn classes(kind: ApiKind) -> [bool; 3] {
    [
        true,
        kind == ApiKind::BlockingSync,
        matches!(kind, ApiKind::ObjectCreate | ApiKind::Alloc),
    ]
}

/// One class of calls, folded.
#[derive(Debug, Clone, Default)]
struct ClassTally {
    whole: PerName,
    inside: PerName,
    threads: HashSet<u32>,
    processes: HashSet<ProcessIdx>,
    /// The thread and process inserted last.
    last_thread: Option<u32>,
    last_process: Option<ProcessIdx>,
    busy: UnionLength,
    in_steps: u64,
}

/// The calls of every class, folded in start order: by name over the whole capture and inside
/// the window, and how many start in steady steps.
pub struct CallTally<'s> {
    window: Window,
    steps: usize,
    cursor: SpanCursor<'s>,
    strings: usize,
    classes: [ClassTally; 3],
}

impl<'s> CallTally<'s> {
    /// Over `window`, with the steady steps' `(start, end)` (sorted, disjoint) and a string
    /// table of `strings` ids (calls with an id past it are not counted by name).
    pub fn new(window: Window, steady: &'s [(Ns, Ns)], strings: usize) -> CallTally<'s> {
        CallTally {
            window,
            steps: steady.len(),
            cursor: SpanCursor::new(steady),
            strings,
            classes: Default::default(),
        }
    }

    /// Counts call `c` of kind `kind`, made by `process`; calls come in start order.
    pub fn add(&mut self, c: &CallRow, kind: ApiKind, process: Option<ProcessIdx>) {
        let picked = classes(kind);
        let clipped = self.window.clip(c.start, c.end);
        let in_step = self.cursor.find(c.start).is_some();
        let name = c.name as usize;
        let named = name < self.strings;
        for (class, _) in self.classes.iter_mut().zip(picked).filter(|(_, p)| *p) {
            if named {
                class.whole.add(name, (c.end - c.start).max(0));
            }
            if let Some((s, e)) = clipped {
                if named {
                    class.inside.add(name, e - s);
                }
                // A thread's calls come in runs: each is inserted once a run.
                if class.last_thread != Some(c.thread) {
                    class.threads.insert(c.thread);
                    class.last_thread = Some(c.thread);
                }
                if process.is_some() && class.last_process != process {
                    class.processes.extend(process);
                    class.last_process = process;
                }
                class.busy.push(s, e);
            }
            class.in_steps += u64::from(in_step);
        }
    }

    /// The three classes' summaries.
    pub fn finish(self, strings: &Strings) -> CallSummaries {
        let steps = self.steps;
        let [api, syncs, allocations] = self.classes.map(|c| summary(c, strings, steps));
        CallSummaries {
            api,
            syncs,
            allocations,
        }
    }
}

/// One class's summary; `steps` steady steps.
fn summary(c: ClassTally, strings: &Strings, steps: usize) -> CallSummary {
    CallSummary {
        calls: c.whole.count(),
        total_us: us(c.whole.total_ns()),
        by_name: named_stats(strings, &c.whole, usize::MAX),
        in_window: WindowCalls {
            calls: c.inside.count(),
            total_us: us(c.inside.total_ns()),
            busy_us: us(c.busy.total()),
            threads: c.threads.len() as u64,
            processes: c.processes.len() as u64,
            by_name: named_stats(strings, &c.inside, usize::MAX),
        },
        calls_per_step: (steps > 0).then(|| c.in_steps as f64 / steps as f64),
    }
}

/// The quantiles of launch latency: p50, p90, p99.
pub const LATENCY_QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

impl LaunchLatency {
    /// Of the latencies (kernel start − launch call end) of eagerly launched kernels, read at
    /// [`LATENCY_QUANTILES`].
    pub fn of(latencies: &Percentiles) -> LaunchLatency {
        let distribution = latencies.distribution();
        LaunchLatency {
            kernels: latencies.count(),
            queued: distribution.count > 0 && distribution.p50_us >= QUEUED_LAUNCH_US,
            distribution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{Window, WindowBasis, explain_rows};
    use crate::index::testing::TraceBuilder;

    /// The trace's window and its three call summaries, as the explainer folds them.
    fn fold(b: &TraceBuilder) -> (Window, CallSummaries) {
        let e = explain_rows(&b.trace, "t", &[], 10).expect("loaded rows");
        let summaries = CallSummaries {
            api: e.api_calls,
            syncs: e.syncs,
            allocations: e.allocations,
        };
        (e.window, summaries)
    }

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
        let (w, c) = fold(&b);
        assert_eq!(
            (w.start_ns, w.end_ns, w.basis),
            (400_000, 501_000, WindowBasis::Kernels)
        );
        let a = &c.allocations;
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
        let s = &c.syncs;
        assert_eq!((s.in_window.calls, s.in_window.busy_us), (1, 98.0));
        let all = &c.api;
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
        let (_, c) = fold(&b);
        let w = &c.syncs.in_window;
        assert_eq!((w.calls, w.total_us, w.busy_us), (2, 1.6, 1.0));
        assert_eq!((w.threads, w.processes), (2, 2));
    }

    #[test]
    fn without_kernels_the_window_is_the_whole_capture() {
        let mut b = setup_and_teardown();
        b.trace.kernels = Default::default();
        let (w, c) = fold(&b);
        assert_eq!(
            (w.start_ns, w.end_ns, w.basis),
            (0, 1_200_000, WindowBasis::Capture)
        );
        let a = &c.allocations;
        assert_eq!((a.in_window.calls, a.in_window.total_us), (5, 901.0));
    }
}
