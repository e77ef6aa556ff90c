//! The runtime call behind each kernel or memory operation, joined on (process, correlation
//! id) while both tables are read in start order ([`crate::model::rows`]), so no table is held.
//!
//! A call starts before the work it issues: calls are read up to the item's start (plus
//! [`LOOKAHEAD`], for clocks that disagree by a little), and a held call waits until its item
//! comes. Only the calls that may issue items are held, and a call that issues one item is
//! dropped when it is found: memory is the calls in flight (the launch queue), plus one per
//! graph launch (its kernels all carry its id) and per call whose item is not in the capture.

use std::iter::Peekable;

use hashbrown::HashMap;

use crate::model::rows::{CallRow, Rows};
use crate::model::{Ns, ProcessIdx};
use crate::names::api::ApiKind;

/// How far past an item's start its call is still looked for.
pub const LOOKAHEAD: Ns = 1_000_000;

/// Whether a call is held for the join, and for how many items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Issues nothing the join looks up.
    No,
    /// Issues one item (a kernel launch, a copy): dropped once found.
    Once,
    /// Issues several (a graph launch): kept to the end.
    Many,
}

/// How a join of kernels to their launch calls holds a call of kind `kind`: a kernel launch
/// until its kernel comes, a graph launch to the end (its kernels all carry its id).
pub fn launch_hold(kind: ApiKind) -> Hold {
    match kind {
        ApiKind::Launch => Hold::Once,
        ApiKind::GraphLaunch => Hold::Many,
        _ => Hold::No,
    }
}

/// What the join asks of each call it reads: whether to hold it, and its payload.
type HoldFn<'a, P> = Box<dyn FnMut(&CallRow) -> (Hold, P) + 'a>;

/// The join: calls read in start order, the held ones kept until their items come, each with
/// a payload `P` worked out when the call was read (what was true on the host at the call:
/// the NVTX range open around a launch, say), so nothing is looked up again later.
pub struct CallJoin<'a, P = ()> {
    calls: Peekable<Rows<'a, CallRow>>,
    hold: HoldFn<'a, P>,
    pending: HashMap<(ProcessIdx, u32), (CallRow, Hold, P)>,
    peak: usize,
}

impl<'a> CallJoin<'a> {
    /// Over `calls` (in start order), holding each as `hold` says.
    pub fn new(calls: Rows<'a, CallRow>, hold: impl Fn(&CallRow) -> Hold + 'a) -> CallJoin<'a> {
        CallJoin::with_payload(calls, move |c| (hold(c), ()))
    }
}

impl<'a, P: Copy> CallJoin<'a, P> {
    /// Over `calls` (in start order), holding each as `hold` says with the payload it gives;
    /// `hold` sees every call, in start order, once.
    pub fn with_payload(
        calls: Rows<'a, CallRow>,
        hold: impl FnMut(&CallRow) -> (Hold, P) + 'a,
    ) -> CallJoin<'a, P> {
        CallJoin {
            calls: calls.peekable(),
            hold: Box::new(hold),
            pending: HashMap::new(),
            peak: 0,
        }
    }

    /// The call of `process` with id `correlation` issuing an item that starts at `at`; items
    /// must be asked for in start order. `None` for correlation 0 or no such held call.
    pub fn find(&mut self, at: Ns, process: ProcessIdx, correlation: u32) -> Option<CallRow> {
        self.find_with(at, process, correlation)
            .map(|(call, _)| call)
    }

    /// [`CallJoin::find`] with the call's payload.
    pub fn find_with(
        &mut self,
        at: Ns,
        process: ProcessIdx,
        correlation: u32,
    ) -> Option<(CallRow, P)> {
        self.read_until(at.saturating_add(LOOKAHEAD));
        if correlation == 0 {
            return None;
        }
        let key = (process, correlation);
        let &(call, hold, payload) = self.pending.get(&key)?;
        if hold == Hold::Once {
            self.pending.remove(&key);
        }
        Some((call, payload))
    }

    /// Reads every call starting at or before `until`, holding those `hold` asks for.
    fn read_until(&mut self, until: Ns) {
        while let Some(call) = self.calls.next_if(|c| c.start <= until) {
            self.take(call);
        }
    }

    /// Holds `call` if `hold` asks for it.
    fn take(&mut self, call: CallRow) {
        let (hold, payload) = (self.hold)(&call);
        self.push_held(&call, hold, payload);
    }

    /// A join the calls are handed to ([`CallJoin::push_held`]) rather than read by: for a
    /// pass whose calls another join reads. An item may be asked for once every call starting
    /// up to [`LOOKAHEAD`] after it was pushed.
    pub fn pushed() -> CallJoin<'a, P>
    where
        P: Default,
    {
        CallJoin::with_payload(Box::new(std::iter::empty()), |_| (Hold::No, P::default()))
    }

    /// Holds `call` as `hold` says with `payload`: how a [`CallJoin::pushed`] join is handed
    /// the next call in start order.
    pub fn push_held(&mut self, call: &CallRow, hold: Hold, payload: P) {
        if hold != Hold::No && call.correlation != 0 {
            self.pending
                .insert((call.process, call.correlation), (*call, hold, payload));
            self.peak = self.peak.max(self.pending.len());
        }
    }

    /// Hands the calls not read yet to `hold`, holding none: for what tallies every call as the
    /// join reads it, once the items are all found.
    pub fn read_to_end(&mut self) {
        for call in self.calls.by_ref() {
            (self.hold)(&call);
        }
    }

    /// The most calls held at once (for the memory benchmarks).
    pub fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(row: i64, start: Ns, process: ProcessIdx, correlation: u32, name: u32) -> CallRow {
        CallRow {
            row,
            start,
            end: start + 10,
            thread: 0,
            process,
            correlation,
            name,
        }
    }

    /// Name 1 launches one kernel, name 2 is a graph launch, name 0 issues nothing.
    fn join(calls: Vec<CallRow>) -> CallJoin<'static> {
        CallJoin::new(Box::new(calls.into_iter()), |c| match c.name {
            1 => Hold::Once,
            2 => Hold::Many,
            _ => Hold::No,
        })
    }

    #[test]
    fn finds_a_launch_once_and_a_graph_launch_for_each_kernel() {
        let mut j = join(vec![
            call(0, 100, 0, 7, 1),
            call(1, 110, 1, 7, 1),
            call(2, 120, 0, 8, 2),
            call(3, 130, 0, 9, 0),
        ]);
        assert_eq!(
            j.find(200, 1, 7).map(|c| c.row),
            Some(1),
            "process 1's id 7"
        );
        assert_eq!(j.find(210, 0, 7).map(|c| c.row), Some(0));
        assert_eq!(j.find(220, 0, 7), None, "a launch issues one kernel");
        assert_eq!(j.find(230, 0, 8).map(|c| c.row), Some(2));
        assert_eq!(
            j.find(240, 0, 8).map(|c| c.row),
            Some(2),
            "graph launch kept"
        );
        assert_eq!(j.find(250, 0, 9), None, "not held");
        assert_eq!(j.find(260, 0, 0), None, "correlation 0 joins nothing");
    }

    #[test]
    fn reads_calls_only_up_to_the_lookahead() {
        let mut j = join(vec![
            call(0, 100, 0, 1, 1),
            call(1, 100 + 2 * LOOKAHEAD, 0, 2, 1),
        ]);
        assert_eq!(
            j.find(50, 0, 1).map(|c| c.row),
            Some(0),
            "a call just after"
        );
        assert_eq!(j.find(60, 0, 2), None, "too far ahead");
        assert_eq!(j.peak(), 1);
        assert_eq!(j.find(100 + 2 * LOOKAHEAD, 0, 2).map(|c| c.row), Some(1));
    }

    #[test]
    fn a_held_call_keeps_the_payload_worked_out_when_it_was_read() {
        let calls = vec![
            call(0, 100, 0, 7, 1),
            call(1, 110, 0, 8, 0),
            call(2, 120, 0, 9, 1),
        ];
        let mut seen = Vec::new();
        let mut j = CallJoin::with_payload(Box::new(calls.into_iter()), |c| {
            seen.push(c.row);
            let hold = if c.name == 1 { Hold::Once } else { Hold::No };
            (hold, c.start * 2)
        });
        assert_eq!(
            j.find_with(200, 0, 9).map(|(c, p)| (c.row, p)),
            Some((2, 240))
        );
        assert_eq!(
            j.find_with(210, 0, 7).map(|(c, p)| (c.row, p)),
            Some((0, 200))
        );
        assert_eq!(j.find_with(220, 0, 8), None, "not held");
        drop(j);
        assert_eq!(seen, [0, 1, 2], "every call seen once, in start order");
    }

    #[test]
    fn a_pushed_join_finds_what_a_reading_join_finds() {
        let calls = vec![
            call(0, 100, 0, 7, 1),
            call(1, 110, 0, 8, 2),
            call(2, 120, 0, 9, 0),
        ];
        let hold = |c: &CallRow| match c.name {
            1 => (Hold::Once, ()),
            2 => (Hold::Many, ()),
            _ => (Hold::No, ()),
        };
        let mut pushed = CallJoin::pushed();
        for c in &calls {
            let (held, ()) = hold(c);
            pushed.push_held(c, held, ());
        }
        let mut read = CallJoin::with_payload(Box::new(calls.into_iter()), hold);
        for (at, correlation) in [(200, 7), (210, 7), (220, 8), (230, 8), (240, 9)] {
            assert_eq!(
                pushed.find(at, 0, correlation).map(|c| c.row),
                read.find(at, 0, correlation).map(|c| c.row),
                "id {correlation} at {at}"
            );
        }
        assert_eq!((pushed.peak(), read.peak()), (2, 2));
    }
}
