//! Where a device's launching threads were while nothing traced covers its idle time, and
//! what their CPU samples say: `SCHED_EVENTS` and `COMPOSITE_EVENTS` read forward in time as
//! the sweep hands over stretches of idle time in order.
//!
//! A thread's state is known from its first scheduling record on: before it, the stretch stays
//! `untraced`. At least one launching thread on a CPU makes a stretch `cpu_busy` (host code ran
//! that nsys did not trace); all of the known ones off-CPU make it `cpu_waiting`, labelled by
//! the reason the latest switch-out gives.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use super::CauseKind;
use crate::model::host_records::{OffCpu, SampleRow, SchedRow};
use crate::model::{Ns, ThreadIdx, Trace};

/// What the untraced stretches of one device's gaps are split by, and where the samples of its
/// launching threads fall.
pub struct CpuView<'t> {
    trace: &'t Trace,
    seen: CpuRecords,
    /// By thread index: a launching thread of the device.
    threads: Vec<bool>,
    sched: std::iter::Peekable<std::slice::Iter<'t, SchedRow>>,
    samples: std::iter::Peekable<std::slice::Iter<'t, SampleRow>>,
    /// Per launching thread seen in a record: on a CPU.
    state: HashMap<ThreadIdx, bool>,
    /// Launching threads known to be on a CPU.
    on: u32,
    /// Why the latest launching thread to leave its CPU left.
    last_off: OffCpu,
}

/// What the capture recorded of a device's launching threads on the CPU side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuRecords {
    /// Scheduling records (`SCHED_EVENTS`): `cpu_busy` / `cpu_waiting` can be told apart.
    pub scheduling: bool,
    /// CPU samples (`COMPOSITE_EVENTS`): causes name the sampled code.
    pub samples: bool,
}

/// A stretch of idle time and its cause.
#[derive(Debug, Clone, Copy)]
pub struct Piece<'t> {
    pub span: (Ns, Ns),
    pub kind: CauseKind,
    pub label: &'t str,
}

/// The label of on-CPU time with no sample inside it.
pub const UNSAMPLED: &str = "untraced code";

impl<'t> CpuView<'t> {
    /// The view of `trace`'s records for the launching threads `threads` (by thread index);
    /// `None` when the trace has no scheduling record or sample of any of them.
    pub fn new(trace: &'t Trace, threads: Vec<bool>) -> Option<CpuView<'t>> {
        let ours = |t: ThreadIdx| threads.get(t as usize) == Some(&true);
        let records = &trace.records;
        let seen = CpuRecords {
            scheduling: records.sched.iter().any(|s| ours(s.thread)),
            samples: records.samples.iter().any(|s| ours(s.thread)),
        };
        (seen.scheduling || seen.samples).then(|| CpuView {
            seen,
            trace,
            threads,
            sched: records.sched.iter().peekable(),
            samples: records.samples.iter().peekable(),
            state: HashMap::new(),
            on: 0,
            last_off: OffCpu::Unknown,
        })
    }

    /// What the capture recorded of the launching threads.
    pub fn seen(&self) -> CpuRecords {
        self.seen
    }

    fn ours(&self, thread: ThreadIdx) -> bool {
        self.threads.get(thread as usize) == Some(&true)
    }

    /// Applies every scheduling record at or before `t`.
    fn advance(&mut self, t: Ns) {
        while let Some(s) = self.sched.next_if(|s| s.at <= t) {
            if !self.threads.get(s.thread as usize).is_some_and(|&b| b) {
                continue;
            }
            let was = self.state.insert(s.thread, s.on_cpu);
            match (was, s.on_cpu) {
                (Some(true), false) => self.on -= 1,
                (Some(false) | None, true) => self.on += 1,
                _ => {}
            }
            if !s.on_cpu {
                self.last_off = s.off;
            }
        }
    }

    /// The next scheduling record of a launching thread before `end`, if any.
    fn next_switch(&mut self, end: Ns) -> Option<Ns> {
        while let Some(&&s) = self.sched.peek() {
            if s.at >= end {
                return None;
            }
            if self.ours(s.thread) {
                return Some(s.at);
            }
            self.sched.next();
        }
        None
    }

    /// The cause of untraced time now: a launching thread on a CPU, all known ones off, or
    /// nothing known.
    fn state_now(&self) -> (CauseKind, &'static str) {
        match (self.on, self.state.is_empty()) {
            (0, true) => (CauseKind::Untraced, ""),
            (0, false) => (CauseKind::CpuWaiting, self.last_off.label()),
            _ => (CauseKind::CpuBusy, UNSAMPLED),
        }
    }

    /// Splits untraced stretch `[from, to)` by the launching threads' scheduling into `pieces`
    /// (emptied first), in order.
    pub fn split(&mut self, (from, to): (Ns, Ns), pieces: &mut Vec<Piece<'t>>) {
        pieces.clear();
        self.advance(from);
        let mut at = from;
        while let Some(next) = self.next_switch(to) {
            if next > at {
                pieces.push(self.piece((at, next)));
                at = next;
            }
            self.advance(next);
        }
        pieces.push(self.piece((at, to)));
    }

    fn piece(&mut self, span: (Ns, Ns)) -> Piece<'t> {
        let (kind, label) = self.state_now();
        Piece {
            span,
            kind,
            label: self.label_of(kind, label, span),
        }
    }

    /// On-CPU time is labelled by the first sample of a launching thread inside it.
    fn label_of(&mut self, kind: CauseKind, label: &'static str, span: (Ns, Ns)) -> &'t str {
        if kind != CauseKind::CpuBusy {
            return label;
        }
        let records = &self.trace.records;
        self.first_sample(span).map_or(label, |frame| {
            records
                .frames
                .get(frame as usize)
                .map_or(label, String::as_str)
        })
    }

    /// The frame of the first sample of a launching thread in `[from, to)`, without taking it
    /// (those before `from` are dropped: stretches come in time order).
    fn first_sample(&mut self, (from, to): (Ns, Ns)) -> Option<u32> {
        while self.samples.next_if(|s| s.at < from).is_some() {}
        self.samples
            .clone()
            .take_while(|s| s.at < to)
            .find(|s| self.ours(s.thread))
            .map(|s| s.frame)
    }

    /// Takes the samples of launching threads in `[from, to)`, handing each frame to `frame`.
    pub fn samples_in(&mut self, (from, to): (Ns, Ns), frame: &mut dyn FnMut(&'t str)) {
        let records = &self.trace.records;
        while let Some(s) = self.samples.next_if(|s| s.at < to) {
            if s.at >= from && self.ours(s.thread) {
                frame(records.frame(s));
            }
        }
    }
}
