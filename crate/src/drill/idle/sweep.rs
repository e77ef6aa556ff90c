//! The attribution sweep over one device's idle gaps, streamed: the host intervals (runtime
//! calls and NVTX ranges of the processes launching on the device) are read from their tables in
//! start order and held only while open, and each gap is attributed as the kernel scan finds it.
//! Nothing is materialised per call or range: the memory is the open intervals (a few per
//! thread), plus a `u32` start order of a table whose rows are not already in start order.
//!
//! An interval opens at its start and closes at its end (a min-heap of the open ones' ends), so
//! at every instant of a gap the open set is exactly the intervals covering it; the cause of each
//! stretch between two interval boundaries is [`winner`](Sweep::winner) of that set.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::iter::Peekable;

use hashbrown::HashMap;

use super::{CauseKind, PRECEDENCE, Tally};
use crate::index::TraceIndex;
use crate::model::{NameId, Ns};
use crate::names::api::{ApiKind, api_base_name};
use crate::names::ranges::{RangeClass, range_class, range_label};
use crate::profile::{Profile, Switches};
use crate::steps::visible_name;

/// A host interval with its cause: a call or an NVTX range on a launching process's thread.
#[derive(Debug, Clone, Copy)]
pub struct Span<'t> {
    pub start: Ns,
    pub end: Ns,
    pub kind: CauseKind,
    pub label: &'t str,
    /// A range that names no work of its own (`Holding GIL`): the innermost range only when no
    /// other is open.
    pub weak: bool,
    /// Its place among intervals of equal start and end: runtime rows by row, then NVTX rows.
    pub order: u64,
}

/// An open interval as one cause's set orders it: the innermost last (strong before weak, then
/// the latest start, then the shortest, then the later row, where an enclosing interval
/// comes first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Open<'t> {
    strong: bool,
    start: Ns,
    end: Reverse<Ns>,
    order: u64,
    label: &'t str,
}

/// The sweep over intervals `spans` (in start order) and gaps handed over in time order, sorted
/// and disjoint: [`Sweep::gap`] gives every ns of a gap to the first cause of [`PRECEDENCE`]
/// with an interval open over it (labelled by its innermost open interval), or to `untraced`.
pub struct Sweep<'t, I: Iterator<Item = Span<'t>>> {
    spans: Peekable<I>,
    /// Per cause (by precedence rank), its open intervals.
    open: Vec<BTreeSet<Open<'t>>>,
    /// The open intervals' ends, earliest first, with their cause's rank.
    ends: BinaryHeap<Reverse<(Ns, usize, Open<'t>)>>,
    tally: Tally<'t>,
}

impl<'t, I: Iterator<Item = Span<'t>>> Sweep<'t, I> {
    pub fn new(spans: I) -> Sweep<'t, I> {
        Sweep {
            spans: spans.peekable(),
            open: vec![BTreeSet::new(); PRECEDENCE.len()],
            ends: BinaryHeap::new(),
            tally: Tally::default(),
        }
    }

    /// The causes of gap `[start, end)`, which follows every gap handed over before.
    pub fn gap(&mut self, (start, end): (Ns, Ns)) -> &Tally<'t> {
        // Intervals ending by the gap's start never cover it, nor any later gap.
        self.close_until(start);
        self.open_until(start, start);
        self.tally.ns.clear();
        let mut t = start;
        while let Some(at) = self.next_boundary().filter(|&at| at < end) {
            if at > t {
                let (kind, label) = self.winner();
                self.tally.add(kind, label, at - t);
                t = at;
            }
            self.close_until(at);
            self.open_until(at, start);
        }
        let (kind, label) = self.winner();
        self.tally.add(kind, label, end - t);
        &self.tally
    }

    /// The next time an interval opens or closes.
    fn next_boundary(&mut self) -> Option<Ns> {
        let opens = self.spans.peek().map(|s| s.start);
        let closes = self.ends.peek().map(|Reverse(e)| e.0);
        match (opens, closes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Closes every interval ending at or before `at`.
    fn close_until(&mut self, at: Ns) {
        while let Some(&Reverse((end, rank, o))) = self.ends.peek() {
            if end > at {
                break;
            }
            self.ends.pop();
            if let Some(set) = self.open.get_mut(rank) {
                set.remove(&o);
            }
        }
    }

    /// Opens every interval starting at or before `at`, except those ending by `from` (the
    /// gap's start: they cover no gap).
    fn open_until(&mut self, at: Ns, from: Ns) {
        while let Some(s) = self.spans.next_if(|s| s.start <= at) {
            if s.end <= from {
                continue;
            }
            let o = Open {
                strong: !s.weak,
                start: s.start,
                end: Reverse(s.end),
                order: s.order,
                label: s.label,
            };
            let rank = s.kind.rank();
            if let Some(set) = self.open.get_mut(rank) {
                set.insert(o);
                self.ends.push(Reverse((s.end, rank, o)));
            }
        }
    }

    /// The first cause of [`PRECEDENCE`] with an open interval, labelled by its innermost one.
    fn winner(&self) -> (CauseKind, &'t str) {
        self.open
            .iter()
            .zip(PRECEDENCE)
            .find_map(|(set, kind)| set.last().map(|o| (kind, o.label)))
            .unwrap_or((CauseKind::Untraced, ""))
    }
}

/// The causes of one trace's host intervals, by name, each name classified once, and the
/// tables' start orders, shared by the sweeps of its devices.
pub struct HostCauses<'a, 't> {
    ix: &'a TraceIndex<'t>,
    calls: HashMap<NameId, (CauseKind, &'t str)>,
    /// Per NVTX name: its cause, whether it is weak, and where its label lies in it (a long
    /// trace names every step differently: a name's entry stays small).
    ranges: HashMap<NameId, RangeCause>,
    /// Runtime rows of async copies with a pageable host side (synchronous in effect), sorted.
    pageable_async: Vec<u32>,
    /// Runtime and NVTX rows in start order; `None` when the table already is.
    call_order: Option<Vec<u32>>,
    range_order: Option<Vec<u32>>,
    switches: Switches,
}

/// What an NVTX name says: its cause, whether it is weak, and its label as `name[at..at + len]`.
#[derive(Debug, Clone, Copy)]
struct RangeCause {
    kind: CauseKind,
    weak: bool,
    at: u32,
    len: u32,
}

/// One device's sweep over its trace's host intervals.
pub type DeviceSweep<'h, 'a, 't> = Sweep<'t, HostSpans<'h, 'a, 't>>;

impl<'a, 't> HostCauses<'a, 't> {
    pub fn new(ix: &'a TraceIndex<'t>) -> HostCauses<'a, 't> {
        let copies = &ix.trace.memcpy;
        let mut pageable_async: Vec<u32> = (0..copies.len())
            .filter(|&i| copies.pageable_host(i))
            .filter_map(|i| ix.issuing_call(copies, i))
            .filter(|&row| ix.call_kind(row) == ApiKind::Memcpy { is_async: true })
            .map(|row| row as u32)
            .collect();
        pageable_async.sort_unstable();
        pageable_async.dedup();
        HostCauses {
            ix,
            calls: HashMap::new(),
            ranges: HashMap::new(),
            pageable_async,
            call_order: start_order(&ix.trace.runtime.start),
            range_order: start_order(&ix.trace.nvtx.start),
            switches: Profile::Standard.switches(),
        }
    }

    /// The sweep of `device`'s idle gaps over the calls and NVTX ranges of the processes that
    /// launch kernels on it.
    pub fn device<'h>(&'h mut self, device: u32) -> DeviceSweep<'h, 'a, 't> {
        let processes = self.launching_processes(device);
        Sweep::new(HostSpans {
            host: self,
            processes,
            next: [0, 0],
            heads: [None, None],
        })
    }

    /// Which processes launch kernels on `device`, flagged by process index.
    fn launching_processes(&self, device: u32) -> Vec<bool> {
        let trace = self.ix.trace;
        let mut flags = vec![false; trace.processes.len()];
        let kernels = self.ix.devices.iter().filter(|d| d.device == device);
        for k in kernels.flat_map(|d| d.kernels()) {
            if let Some(f) = trace
                .kernels
                .process
                .get(k as usize)
                .and_then(|&p| flags.get_mut(p as usize))
            {
                *f = true;
            }
        }
        flags
    }

    fn call(&mut self, name: NameId) -> (CauseKind, &'t str) {
        let (ix, trace) = (self.ix, self.ix.trace);
        *self.calls.entry(name).or_insert_with(|| {
            (
                CauseKind::of_api(ix.names.api(name)),
                api_base_name(trace.strings.get(name)),
            )
        })
    }

    fn range(&mut self, name: NameId) -> (CauseKind, &'t str, bool) {
        let s = self.ix.trace.strings.get(name);
        let c = *self.ranges.entry(name).or_insert_with(|| {
            let class = range_class(s);
            let label = range_label(s);
            RangeCause {
                kind: CauseKind::of_range(class),
                weak: class == RangeClass::GilHeld,
                // The label is a piece of the name.
                at: (label.as_ptr() as usize).saturating_sub(s.as_ptr() as usize) as u32,
                len: label.len() as u32,
            }
        });
        let (at, len) = (c.at as usize, c.len as usize);
        (c.kind, s.get(at..at + len).unwrap_or(s), c.weak)
    }

    /// The row at position `p` of the runtime (`0`) or NVTX (`1`) table's start order.
    fn row(&self, table: usize, p: usize) -> Option<usize> {
        let (len, order) = match table {
            0 => (self.ix.trace.runtime.len(), &self.call_order),
            _ => (self.ix.trace.nvtx.len(), &self.range_order),
        };
        match order {
            _ if p >= len => None,
            Some(o) => o.get(p).map(|&r| r as usize),
            None => Some(p),
        }
    }

    /// Runtime row `r` as an interval, when it takes time on a launching process's thread.
    fn call_span(&mut self, r: usize, processes: &[bool]) -> Option<Span<'t>> {
        let rt = &self.ix.trace.runtime;
        let (start, end) = (rt.start[r], rt.end[r]);
        if end <= start || !ours(processes, self.ix.call_process(r)) {
            return None;
        }
        let (mut kind, label) = self.call(rt.name[r]);
        if self.pageable_async.binary_search(&(r as u32)).is_ok() {
            kind = CauseKind::Sync;
        }
        Some(Span {
            start,
            end,
            kind,
            label,
            weak: false,
            order: r as u64,
        })
    }

    /// NVTX row `r` as an interval, when it takes time on a launching process's thread and has
    /// a name.
    fn range_span(&mut self, r: usize, processes: &[bool]) -> Option<Span<'t>> {
        let trace = self.ix.trace;
        let nvtx = &trace.nvtx;
        let (start, end) = (nvtx.start[r], nvtx.end[r]);
        let process = trace.threads.process.get(nvtx.thread[r] as usize).copied();
        if end <= start || !ours(processes, process) {
            return None;
        }
        let name = visible_name(nvtx, r, &self.switches)?;
        let (kind, label, weak) = self.range(name);
        Some(Span {
            start,
            end,
            kind,
            label,
            weak,
            order: (1 << 32) | r as u64,
        })
    }
}

fn ours(processes: &[bool], p: Option<u32>) -> bool {
    p.is_some_and(|p| processes.get(p as usize) == Some(&true))
}

/// `None` when `start` is sorted, else the rows in start order.
fn start_order(start: &[Ns]) -> Option<Vec<u32>> {
    if start.is_sorted() {
        return None;
    }
    let mut order: Vec<u32> = (0..start.len() as u32).collect();
    order.sort_unstable_by_key(|&r| start[r as usize]);
    Some(order)
}

/// The calls and NVTX ranges of the launching processes, in start order: both tables read in
/// their start order and merged as they go.
pub struct HostSpans<'h, 'a, 't> {
    host: &'h mut HostCauses<'a, 't>,
    processes: Vec<bool>,
    /// Per table (runtime, NVTX), the next position in its start order and the interval
    /// there once read.
    next: [usize; 2],
    heads: [Option<Span<'t>>; 2],
}

impl<'t> HostSpans<'_, '_, 't> {
    /// The next interval of the runtime (`0`) or NVTX (`1`) table, without taking it.
    fn head(&mut self, table: usize) -> Option<Span<'t>> {
        if let Some(s) = self.heads[table] {
            return Some(s);
        }
        loop {
            let r = self.host.row(table, self.next[table])?;
            let span = match table {
                0 => self.host.call_span(r, &self.processes),
                _ => self.host.range_span(r, &self.processes),
            };
            if span.is_some() {
                self.heads[table] = span;
                return span;
            }
            self.next[table] += 1;
        }
    }
}

impl<'t> Iterator for HostSpans<'_, '_, 't> {
    type Item = Span<'t>;

    fn next(&mut self) -> Option<Span<'t>> {
        let (call, range) = (self.head(0), self.head(1));
        let table = match (call, range) {
            (Some(c), Some(r)) => usize::from(r.start < c.start),
            (Some(_), None) => 0,
            (None, Some(_)) => 1,
            (None, None) => return None,
        };
        self.next[table] += 1;
        self.heads[table].take()
    }
}
