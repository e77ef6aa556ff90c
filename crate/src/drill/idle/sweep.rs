//! The attribution sweep over one device's idle gaps, streamed: the host intervals (runtime
//! calls and NVTX ranges of the processes launching on the device) are read from the rows in
//! start order ([`crate::model::rows`]) and held only while open, and each gap is attributed as
//! the kernel pass finds it. Nothing is held per call or range: the memory is the open intervals
//! (a few per thread) and the pageable copies read ahead of the calls that issued them.
//!
//! An interval opens at its start and closes at its end (a min-heap of the open ones' ends gives
//! the boundaries), so at every instant of a gap the open set is exactly the intervals covering
//! it; the cause of each stretch between two interval boundaries is [`winner`](Sweep::winner) of
//! that set. Each cause keeps its opened intervals in a max-heap, innermost on top: an interval
//! closing drops the closed ones on top of its cause's heap, and a closed one under an open one
//! waits until it surfaces (it cannot be the innermost open one meanwhile), so closing needs no
//! search.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::iter::Peekable;

use hashbrown::HashMap;

use super::cpu::{CpuRecords, CpuView, Piece};
use super::{AheadWatch, CauseKind, PRECEDENCE, Tally};
use crate::index::call_join::LOOKAHEAD;
use crate::index::rows::{DeviceFacts, RowIndex};
use crate::model::host_records::{OsCallRow, OverheadKind, OverheadRow};
use crate::model::rows::{CallRow, MemOpRow, Rows};
use crate::model::{NO_NAME, NameId, Ns, NvtxRow, ProcessIdx};
use crate::names::api::{ApiKind, api_base_name};
use crate::names::ranges::{RangeClass, label_of, range_class};
use crate::profile::{Profile, Switches};
use crate::steps::visible_row_name;

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
    /// Per cause (by precedence rank), its intervals opened and not found closed on top.
    open: Vec<BinaryHeap<Open<'t>>>,
    /// Bit `rank` set while cause `rank`'s heap may hold an interval (never clear while it
    /// does): [`Sweep::winner`] looks only there, not at every cause for every stretch.
    occupied: u32,
    /// The open intervals' ends, earliest first, with their cause's rank.
    ends: BinaryHeap<Reverse<(Ns, usize)>>,
    tally: Tally<'t>,
    /// The launching threads' scheduling and samples, when the trace has them.
    cpu: Option<CpuView<'t>>,
    pieces: Vec<Piece<'t>>,
    /// The last gap's `host_ahead` stretches, in order, adjacent ones merged.
    ahead: Vec<(Ns, Ns)>,
}

impl<'t, I: Iterator<Item = Span<'t>>> Sweep<'t, I> {
    pub fn new(spans: I) -> Sweep<'t, I> {
        Sweep::with_cpu(spans, None)
    }

    /// A sweep whose untraced time is split by `cpu`, and whose stretches count its samples.
    pub fn with_cpu(spans: I, cpu: Option<CpuView<'t>>) -> Sweep<'t, I> {
        Sweep {
            spans: spans.peekable(),
            open: vec![BinaryHeap::new(); PRECEDENCE.len()],
            occupied: 0,
            ends: BinaryHeap::new(),
            tally: Tally::default(),
            cpu,
            pieces: Vec::new(),
            ahead: Vec::new(),
        }
    }

    /// The causes of gap `[start, end)`, which follows every gap handed over before.
    pub fn gap(&mut self, (start, end): (Ns, Ns)) -> &Tally<'t> {
        // Intervals ending by the gap's start never cover it, nor any later gap.
        self.close_until(start);
        self.open_until(start, start);
        self.tally.clear();
        self.ahead.clear();
        // Consecutive stretches mostly share their winner: each run of one is tallied once.
        let mut run = Run::default();
        let mut t = start;
        while let Some(at) = self.next_boundary().filter(|&at| at < end) {
            if at > t {
                let winner = self.winner(t);
                self.stretch(&mut run, (t, at), winner);
                t = at;
            }
            self.close_until(at);
            self.open_until(at, start);
        }
        let winner = self.winner(t);
        self.stretch(&mut run, (t, end), winner);
        run.flush(&mut self.tally);
        &self.tally
    }

    /// Tallies stretch `span` won by `winner`: untraced time split by where the launching
    /// threads were, and the samples inside counted for the cause they fall in.
    fn stretch(&mut self, run: &mut Run<'t>, span: (Ns, Ns), winner: (CauseKind, &'t str)) {
        if winner.0 == CauseKind::HostAhead && span.1 > span.0 {
            match self.ahead.last_mut() {
                Some(last) if last.1 == span.0 => last.1 = span.1,
                _ => self.ahead.push(span),
            }
        }
        let Some(cpu) = self.cpu.as_mut() else {
            run.extend(winner, span.1 - span.0, &mut self.tally);
            return;
        };
        let (kind, label) = winner;
        if kind == CauseKind::Untraced {
            cpu.split(span, &mut self.pieces);
        } else {
            self.pieces.clear();
            self.pieces.push(Piece { span, kind, label });
        }
        let tally = &mut self.tally;
        for p in &self.pieces {
            run.extend((p.kind, p.label), p.span.1 - p.span.0, tally);
            cpu.samples_in(p.span, &mut |frame| tally.add_samples(p.kind, frame, 1));
        }
    }

    /// The next time an interval opens or closes.
    fn next_boundary(&mut self) -> Option<Ns> {
        let opens = self.spans.peek().map(|s| s.start);
        let closes = self.ends.peek().map(|&Reverse((end, _))| end);
        match (opens, closes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Closes every interval ending at or before `at`.
    fn close_until(&mut self, at: Ns) {
        while let Some(&Reverse((end, rank))) = self.ends.peek() {
            if end > at {
                break;
            }
            self.ends.pop();
            if let Some(heap) = self.open.get_mut(rank) {
                drop_closed(heap, at);
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
            if let Some(heap) = self.open.get_mut(rank) {
                heap.push(o);
                self.occupied |= 1 << rank;
                self.ends.push(Reverse((s.end, rank)));
            }
        }
    }

    /// The last gap's `host_ahead` stretches (sorted, disjoint) and its causes, to add what
    /// the other devices ran meanwhile.
    pub fn last_gap(&mut self) -> (&[(Ns, Ns)], &mut Tally<'t>) {
        (&self.ahead, &mut self.tally)
    }

    /// What the capture recorded of the launching threads' CPU side.
    pub fn cpu_records(&self) -> CpuRecords {
        self.cpu.as_ref().map(CpuView::seen).unwrap_or_default()
    }

    /// How many intervals are held: open, or closed under an open one of their cause (for the
    /// boundedness tests).
    pub fn open_intervals(&self) -> usize {
        self.open.iter().map(BinaryHeap::len).sum()
    }

    /// The first cause of [`PRECEDENCE`] with an interval open at `t`, labelled by its
    /// innermost one.
    fn winner(&mut self, t: Ns) -> (CauseKind, &'t str) {
        let mut ranks = self.occupied;
        while ranks != 0 {
            let rank = ranks.trailing_zeros() as usize;
            ranks &= ranks - 1;
            let Some(heap) = self.open.get_mut(rank) else {
                break;
            };
            drop_closed(heap, t);
            match heap.peek() {
                Some(o) => return (PRECEDENCE[rank], o.label),
                None => self.occupied &= !(1 << rank),
            }
        }
        (CauseKind::Untraced, "")
    }
}

/// Consecutive stretches of one gap with the same winner (the same label text, not only equal).
#[derive(Default)]
struct Run<'t> {
    winner: Option<(CauseKind, &'t str)>,
    ns: Ns,
}

impl<'t> Run<'t> {
    /// Adds a stretch of `ns` won by `winner`; the run before it goes to `tally` when the
    /// winner changes.
    fn extend(&mut self, winner: (CauseKind, &'t str), ns: Ns, tally: &mut Tally<'t>) {
        let same = self
            .winner
            .is_some_and(|(kind, label)| kind == winner.0 && std::ptr::eq(label, winner.1));
        if !same {
            self.flush(tally);
            self.winner = Some(winner);
        }
        self.ns = self.ns.saturating_add(ns);
    }

    /// Tallies the run and starts none.
    fn flush(&mut self, tally: &mut Tally<'t>) {
        if let Some((kind, label)) = self.winner.take() {
            tally.add(kind, label, self.ns);
        }
        self.ns = 0;
    }
}

/// Drops the intervals on top of `heap` that ended by `t`.
fn drop_closed(heap: &mut BinaryHeap<Open<'_>>, t: Ns) {
    while heap.peek().is_some_and(|o| o.end.0 <= t) {
        heap.pop();
    }
}

/// The causes of one trace's host intervals, by name, each name classified once, shared by the
/// sweeps of its devices.
pub struct HostCauses<'a, 't> {
    ix: &'a RowIndex<'t>,
    calls: RefCell<HashMap<NameId, CallCause<'t>>>,
    /// The last call name looked up (calls of one name come in runs).
    last_call: Cell<Option<(NameId, CallCause<'t>)>>,
    /// Per NVTX name: its cause, whether it is weak, and its label.
    ranges: RefCell<HashMap<NameId, RangeCause<'t>>>,
    switches: Switches,
}

/// What a call name says: its cause and label, and whether it is an async copy (synchronous in
/// effect when its copy has a pageable host side).
#[derive(Debug, Clone, Copy)]
struct CallCause<'t> {
    kind: CauseKind,
    label: &'t str,
    async_copy: bool,
}

/// What an NVTX name says: its cause, whether it is weak, and its label (a piece of the name,
/// or a step marker's pattern: every step names its range differently).
#[derive(Debug, Clone, Copy)]
struct RangeCause<'t> {
    kind: CauseKind,
    weak: bool,
    label: &'t str,
}

/// One device's sweep over its trace's host intervals.
pub type DeviceSweep<'h, 't> = Sweep<'t, HostSpans<'h, 't>>;

impl<'a, 't> HostCauses<'a, 't> {
    pub fn new(ix: &'a RowIndex<'t>) -> HostCauses<'a, 't> {
        HostCauses {
            ix,
            calls: RefCell::new(HashMap::new()),
            last_call: Cell::new(None),
            ranges: RefCell::new(HashMap::new()),
            switches: Profile::Standard.switches(),
        }
    }

    /// The sweep of `device`'s idle gaps over the calls and NVTX ranges of the processes that
    /// launch kernels on it, both tables read in start order.
    pub fn device<'h>(&'h self, device: &'h DeviceFacts) -> DeviceSweep<'h, 't> {
        let rows = self.ix.rows;
        let records = &self.ix.meta().records;
        let launchers = self.launch_threads(device);
        let spans = HostSpans {
            host: self,
            processes: &device.processes,
            calls: rows.calls(),
            ranges: rows.ranges(),
            overheads: records.overheads.iter().enumerate(),
            os_calls: records.os_calls.iter().enumerate(),
            launchers: launchers.clone(),
            copies: PageableCopies::new(self.ix),
            heads: [None; SOURCES],
        };
        Sweep::with_cpu(spans, CpuView::new(self.ix.meta(), launchers))
    }

    /// The command-buffer-full records on the processes launching on `device` (a `host_ahead`
    /// stretch of it lies in one), and the watch over the other devices' work during them;
    /// `None` when it has none.
    pub fn ahead_watch(&self, device: &DeviceFacts, other_devices: u32) -> Option<AheadWatch> {
        let records = &self.ix.meta().records.overheads;
        let mine = records
            .iter()
            .filter(|o| o.kind == OverheadKind::CommandBufferFull)
            .filter(|o| ours(&device.processes, Some(o.process)))
            .map(|o| (o.start, o.end))
            .collect();
        AheadWatch::new(mine, other_devices)
    }

    /// An OS runtime call as an interval, when a launching thread of the device made it:
    /// other threads of the process poll and wait for their own work all along.
    fn os_call_span(&self, (i, c): (usize, &OsCallRow), launchers: &[bool]) -> Option<Span<'t>> {
        if c.end <= c.start || launchers.get(c.thread as usize) != Some(&true) {
            return None;
        }
        let records = &self.ix.meta().records;
        Some(Span {
            start: c.start,
            end: c.end,
            kind: CauseKind::Osrt,
            label: records
                .os_label(c)
                .unwrap_or_else(|| self.ix.string(c.name)),
            weak: false,
            // After calls and overhead records, before NVTX ranges of equal start and end.
            order: (3 << 61) | i as u64,
        })
    }

    /// Per thread index: whether it launched kernels and belongs to a process launching on
    /// `device`.
    fn launch_threads(&self, device: &DeviceFacts) -> Vec<bool> {
        let process = &self.ix.meta().threads.process;
        self.ix
            .launch_threads
            .iter()
            .zip(process)
            .map(|(&launched, &p)| launched && ours(&device.processes, Some(p)))
            .collect()
    }

    /// An overhead record as an interval, when it lies on a launching process and says what
    /// its time went to: the profiler's labelled by its own name, the driver's by its kind.
    fn overhead_span(&self, (i, o): (usize, &OverheadRow), processes: &[bool]) -> Option<Span<'t>> {
        if o.end <= o.start || !ours(processes, Some(o.process)) {
            return None;
        }
        let kind = CauseKind::of_overhead(o.kind)?;
        let label = match o.kind {
            OverheadKind::Profiler if o.name != NO_NAME => self.ix.string(o.name),
            OverheadKind::Profiler => "profiler overhead",
            OverheadKind::Jit => "driver JIT compiler",
            OverheadKind::ModuleLoad => "runtime module loading",
            OverheadKind::LazyLoad => "lazy function loading",
            OverheadKind::CommandBufferFull => "command buffer full",
            OverheadKind::Unknown => return None,
        };
        Some(Span {
            start: o.start,
            end: o.end,
            kind,
            label,
            weak: false,
            // After calls and before NVTX ranges of equal start and end.
            order: (1 << 62) | i as u64,
        })
    }

    /// What call name `name` says: its cause and label, and whether it is an async copy.
    fn call(&self, name: NameId) -> CallCause<'t> {
        if let Some((last, cause)) = self.last_call.get()
            && last == name
        {
            return cause;
        }
        let ix = self.ix;
        let cause = *self.calls.borrow_mut().entry(name).or_insert_with(|| {
            let api = ix.names.api(name);
            CallCause {
                kind: CauseKind::of_api(api),
                label: api_base_name(ix.string(name)),
                async_copy: api == (ApiKind::Memcpy { is_async: true }),
            }
        });
        self.last_call.set(Some((name, cause)));
        cause
    }

    /// What NVTX name `name` says, classified once per name; a forward step's name (every step
    /// has its own) is classified each time, not kept.
    fn range(&self, name: NameId) -> (CauseKind, &'t str, bool) {
        if let Some(c) = self.ranges.borrow().get(&name) {
            return (c.kind, c.label, c.weak);
        }
        let s = self.ix.string(name);
        let class = range_class(s);
        let (label, step) = label_of(s);
        let c = RangeCause {
            kind: CauseKind::of_range(class),
            weak: class == RangeClass::GilHeld,
            label,
        };
        if !step {
            self.ranges.borrow_mut().insert(name, c);
        }
        (c.kind, c.label, c.weak)
    }

    /// A call as an interval, when it takes time on a launching process's thread: an async
    /// copy call whose copy has a pageable host side (found in `copies`) is synchronous in
    /// effect.
    fn call_span(
        &self,
        c: &CallRow,
        processes: &[bool],
        copies: &mut PageableCopies<'t>,
    ) -> Option<Span<'t>> {
        if c.end <= c.start || !ours(processes, Some(c.process)) {
            return None;
        }
        let CallCause {
            mut kind,
            label,
            async_copy,
        } = self.call(c.name);
        if async_copy && copies.issued_pageable(c) {
            kind = CauseKind::Sync;
        }
        self.ix.peak.copies(copies.held());
        Some(Span {
            start: c.start,
            end: c.end,
            kind,
            label,
            weak: false,
            order: c.row as u64,
        })
    }

    /// An NVTX range as an interval, when it takes time on a launching process's thread and
    /// has a name.
    fn range_span(&self, r: &NvtxRow, processes: &[bool]) -> Option<Span<'t>> {
        let process = self
            .ix
            .meta()
            .threads
            .process
            .get(r.thread as usize)
            .copied();
        if r.end <= r.start || !ours(processes, process) {
            return None;
        }
        let name = visible_row_name(r, &self.switches)?;
        let (kind, label, weak) = self.range(name);
        Some(Span {
            start: r.start,
            end: r.end,
            kind,
            label,
            weak,
            // After every call of equal start and end.
            order: (1 << 63) | r.row as u64,
        })
    }
}

fn ours(processes: &[bool], p: Option<u32>) -> bool {
    p.is_some_and(|p| processes.get(p as usize) == Some(&true))
}

/// The calls and NVTX ranges of the launching processes, in start order: both tables read in
/// their start order and merged as they go.
pub struct HostSpans<'h, 't> {
    host: &'h HostCauses<'h, 't>,
    processes: &'h [bool],
    calls: Rows<'t, CallRow>,
    ranges: Rows<'t, NvtxRow>,
    /// The overhead records and OS runtime calls, sorted by start as loaded.
    overheads: std::iter::Enumerate<std::slice::Iter<'t, OverheadRow>>,
    os_calls: std::iter::Enumerate<std::slice::Iter<'t, OsCallRow>>,
    /// By thread index: a launching thread of the device (whose OS calls count).
    launchers: Vec<bool>,
    copies: PageableCopies<'t>,
    /// Per source (calls, NVTX, overhead records, OS calls), the next interval once read.
    heads: [Option<Span<'t>>; SOURCES],
}

/// The interval sources a device's sweep merges.
const SOURCES: usize = 4;

impl<'t> HostSpans<'_, 't> {
    /// The next interval of the calls (`0`), NVTX ranges (`1`), overhead records (`2`) or OS
    /// calls (`3`), without taking it.
    fn head(&mut self, source: usize) -> Option<Span<'t>> {
        if let Some(s) = self.heads.get(source).copied().flatten() {
            return Some(s);
        }
        let (host, processes, copies) = (self.host, self.processes, &mut self.copies);
        let launchers = &self.launchers;
        let span = match source {
            0 => self
                .calls
                .find_map(|c| host.call_span(&c, processes, copies)),
            1 => self.ranges.find_map(|r| host.range_span(&r, processes)),
            2 => self
                .overheads
                .find_map(|o| host.overhead_span(o, processes)),
            _ => self.os_calls.find_map(|c| host.os_call_span(c, launchers)),
        };
        if let Some(h) = self.heads.get_mut(source) {
            *h = span;
        }
        span
    }
}

impl<'t> Iterator for HostSpans<'_, 't> {
    type Item = Span<'t>;

    /// The earliest head (ties: calls, NVTX ranges, overhead records, OS calls).
    fn next(&mut self) -> Option<Span<'t>> {
        let first = (0..SOURCES)
            .filter_map(|source| Some((self.head(source)?.start, source)))
            .min()?;
        self.heads[first.1].take()
    }
}

/// Which async copy calls issued a copy with a pageable host side, found as the sweep reaches
/// each call: the copies are read in start order until the asking call's copy is found (by
/// process and correlation id). A pageable copy may start long after its call returned (the
/// driver stages it, then the copy waits behind the stream's kernels: 12 ms on a public export),
/// so no lookahead bound would do: what is held is the copies read ahead of their call's turn,
/// never every copy, and the calls are not read again.
pub struct PageableCopies<'t> {
    copies: Rows<'t, MemOpRow>,
    /// Per copy read ahead of its call's turn, by (process, correlation id): its start and
    /// whether it has a pageable host side.
    ahead: HashMap<(ProcessIdx, u32), (Ns, bool)>,
    peak: usize,
}

impl<'t> PageableCopies<'t> {
    pub fn new(ix: &RowIndex<'t>) -> PageableCopies<'t> {
        PageableCopies {
            copies: ix.rows.memcpy(),
            ahead: HashMap::new(),
            peak: 0,
        }
    }

    /// Whether async copy call `c` issued a copy with a pageable host side; calls ask in start
    /// order.
    pub fn issued_pageable(&mut self, c: &CallRow) -> bool {
        if c.correlation == 0 {
            return false;
        }
        // A copy starts after its call (within the join's lookahead, for clocks that disagree):
        // one starting before this call belongs to a call that has asked, or never will.
        self.ahead
            .retain(|_, (start, _)| start.saturating_add(LOOKAHEAD) >= c.start);
        let key = (c.process, c.correlation);
        loop {
            if let Some((_, pageable)) = self.ahead.remove(&key) {
                return pageable;
            }
            let Some(m) = self.copies.next() else {
                return false;
            };
            if m.correlation != 0 {
                self.ahead
                    .insert((m.process, m.correlation), (m.start, m.pageable_host()));
                self.peak = self.peak.max(self.ahead.len());
            }
        }
    }

    /// The most copies held at once.
    pub fn held(&self) -> usize {
        self.peak
    }
}
