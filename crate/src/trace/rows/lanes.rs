//! A table's rows read in `rowid` ranges by other readers of the same file: the page's lane
//! workers, each with the file open through its own SQLite, decode ranges into packed rows
//! ([`Lane::answer`]), which a pass unpacks and folds while the lanes read on ([`Ranged`];
//! passes reading at once share them, [`Lanes`]).
//! `read_ahead`'s threads share the process's memory; workers share bytes, so the rows cross
//! packed as the row cache holds them (`model::packed`).
//!
//! Only the kernel and runtime tables are read so (the two largest of a serving capture): their
//! rows name strings by the file's ids and owners by the processes and threads `ThreadNames`
//! lists, which every reader of the file numbers alike. An NVTX row's inline text is numbered
//! as the scan met it, which a reader starting mid-table cannot know.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use rusqlite::Connection;

use super::super::open::sqlite_error;
use super::super::runs::read_chunk;
use super::super::tables::Loader;
use super::file_rows::Decode;
use crate::error::{Error, Result};
use crate::model::Trace;
use crate::model::packed::{Base, Fields, Out, Packable};
use crate::model::rows::{CallRow, KernelRow};

/// The row types lanes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Kernel,
    Call,
}

impl RowKind {
    /// Its code across the page's workers.
    pub fn code(self) -> u8 {
        match self {
            RowKind::Kernel => 0,
            RowKind::Call => 1,
        }
    }

    /// The table rows of this kind are read from.
    pub fn table(self) -> &'static str {
        match self {
            RowKind::Kernel => super::KERNEL_TABLE,
            RowKind::Call => super::RUNTIME_TABLE,
        }
    }

    pub fn from_code(code: u8) -> Option<RowKind> {
        match code {
            0 => Some(RowKind::Kernel),
            1 => Some(RowKind::Call),
            _ => None,
        }
    }
}

/// What a pass asks a lane: the `kind` rows of a chunk `SELECT` (`?1`, `?2`: the `rowid`
/// range, `?3`: the most rows) over `rowid`s `low..=high`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeAsk {
    pub kind: RowKind,
    pub table: &'static str,
    pub sql: String,
    pub low: i64,
    pub high: i64,
}

/// The readers passes ask for ranges: answers come in the order the ranges were asked.
pub trait RangeReader {
    /// How many ranges a pass may have asked and not yet taken.
    fn depth(&self) -> usize;
    /// The processes and threads the readers' catalog numbers ([`Lane::numbered`]): a pass
    /// asks them only when its scan numbers as many, i.e. found none past `ThreadNames`.
    /// `None` once a reader failed: the passes after read the file themselves.
    fn numbered(&self) -> Option<(usize, usize)>;
    fn ask(&self, ask: &RangeAsk) -> Result<()>;
    /// The packed rows of the oldest range asked and not taken, whichever pass asked it.
    fn take(&self) -> Result<Vec<u8>>;
    /// Whether that answer is there to take without waiting.
    fn ready(&self) -> bool;
}

/// A lane: one reader of a file, answering [`RangeAsk`]s with packed rows.
pub struct Lane {
    conn: Connection,
    path: String,
    meta: Trace,
}

impl Lane {
    /// Reads the catalog rows are decoded with (every string id, no text: a lane names
    /// nothing).
    pub fn open(conn: Connection, path: &str) -> Result<Lane> {
        let mut quiet = |_: super::super::load::Progress| true;
        let (_, meta) = Loader {
            conn: &conn,
            path,
            progress: &mut quiet,
        }
        .begin_keeping(|_| false)?;
        Ok(Lane {
            conn,
            path: path.to_owned(),
            meta,
        })
    }

    /// The processes and threads its catalog numbers.
    pub fn numbered(&self) -> (usize, usize) {
        (self.meta.processes.len(), self.meta.threads.len())
    }

    /// The rows `ask` names, packed.
    pub fn answer(&self, ask: &RangeAsk) -> Result<Vec<u8>> {
        match ask.kind {
            RowKind::Kernel => self.packed::<KernelRow>(ask),
            RowKind::Call => self.packed::<CallRow>(ask),
        }
    }

    fn packed<T: Decode>(&self, ask: &RangeAsk) -> Result<Vec<u8>> {
        let mut rows: VecDeque<T> = VecDeque::new();
        let range = (ask.low, ask.high, usize::MAX);
        read_chunk(
            &self.conn,
            &ask.sql,
            range,
            &mut rows,
            T::decoder(&self.meta),
        )
        .map_err(|e| sqlite_error(&self.path, ask.table, &e))?;
        pack(rows)
    }
}

impl super::FileScan {
    /// The kernels and calls lanes would read for each pass (`lanes`): those not kept, of a
    /// table in one sorted run.
    pub fn rows_for_lanes(&self) -> u64 {
        let left = |rows: u64, (_, kept): (&str, u64), one_run: bool| match one_run {
            true => rows.saturating_sub(kept),
            false => 0,
        };
        let (kernels, calls) = (&self.kernels, &self.calls);
        left(
            kernels.rows(),
            kernels.kept(),
            kernels.runs.one_run().is_some(),
        ) + left(calls.rows(), calls.kept(), calls.runs.one_run().is_some())
    }
}

/// Rows as differences from the one before, the first from [`Base::default`].
fn pack<T: Packable>(rows: impl IntoIterator<Item = T>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut base = Base::default();
    for row in rows {
        let mut out = Out::default();
        row.pack(base).put(&mut out);
        let packed = out.bytes().ok_or_else(|| Error::Internal {
            detail: "a row did not pack".into(),
        })?;
        bytes.extend_from_slice(packed);
        base = row.base();
    }
    Ok(bytes)
}

/// The rows [`pack`] packed.
fn unpack<T: Packable>(mut bytes: &[u8], out: &mut VecDeque<T>, table: &str) -> Result<()> {
    let mut base = Base::default();
    while !bytes.is_empty() {
        let packed = T::Packed::take(&mut bytes).ok_or_else(|| Error::Internal {
            detail: format!("a lane's rows of {table} do not unpack"),
        })?;
        let row = T::unpack(packed, base);
        base = row.base();
        out.push_back(row);
    }
    Ok(())
}

/// `rowid`s a range asks: a few hundred kilobytes of packed rows, a few tens of
/// milliseconds of a lane's reading.
pub const RANGE_ROWIDS: i64 = 8192;

/// The lanes as the passes over one [`super::FileRows`] share them: several passes may read at
/// once (a fold over kernels and calls together), while the readers answer in the order asked;
/// each answer goes to the pass that asked it, held until that pass takes it.
pub(super) struct Lanes<'r> {
    reader: &'r dyn RangeReader,
    /// The pass of each range asked and not yet taken from the readers, in the order asked.
    owed: RefCell<VecDeque<u32>>,
    /// Answers taken from the readers for a pass that has not taken them yet.
    held: RefCell<Vec<(u32, Vec<u8>)>>,
    passes: Cell<u32>,
    /// A reader failed: every pass after reads nothing more from them.
    failed: Cell<bool>,
}

impl<'r> Lanes<'r> {
    pub(super) fn new(reader: &'r dyn RangeReader) -> Lanes<'r> {
        Lanes {
            reader,
            owed: RefCell::default(),
            held: RefCell::default(),
            passes: Cell::new(0),
            failed: Cell::new(false),
        }
    }

    pub(super) fn usable(&self) -> bool {
        !self.failed.get()
    }

    fn begin_pass(&self) -> u32 {
        let pass = self.passes.get().wrapping_add(1);
        self.passes.set(pass);
        pass
    }

    fn ask(&self, pass: u32, ask: &RangeAsk) -> Result<()> {
        if self.failed.get() {
            return Err(lanes_failed());
        }
        self.reader
            .ask(ask)
            .inspect_err(|_| self.failed.set(true))?;
        self.owed.borrow_mut().push_back(pass);
        Ok(())
    }

    /// The oldest answer owed to `pass`, taking from the readers the answers asked before it.
    fn take(&self, pass: u32) -> Result<Vec<u8>> {
        loop {
            let held = self.held.borrow().iter().position(|(p, _)| *p == pass);
            if let Some(at) = held {
                return Ok(self.held.borrow_mut().remove(at).1);
            }
            if self.failed.get() {
                return Err(lanes_failed());
            }
            let Some(owner) = self.owed.borrow_mut().pop_front() else {
                return Err(Error::Internal {
                    detail: "a pass took a range it did not ask".into(),
                });
            };
            let answer = self.reader.take().inspect_err(|_| self.failed.set(true))?;
            self.held.borrow_mut().push((owner, answer));
        }
    }

    /// Whether the oldest answer owed to `pass` may be taken without waiting.
    fn ready(&self, pass: u32) -> bool {
        self.held.borrow().iter().any(|(p, _)| *p == pass)
            || (self.owed.borrow().front() == Some(&pass) && self.reader.ready())
    }

    /// Drops what is owed to `pass`, `owed` ranges.
    fn forget(&self, pass: u32, owed: usize) {
        for _ in 0..owed {
            if self.take(pass).is_err() {
                return;
            }
        }
    }
}

fn lanes_failed() -> Error {
    Error::Internal {
        detail: "a lane worker failed before; this pass stopped with it".into(),
    }
}

/// Ranges read by the pass itself, ahead of an answer it waits for, at most: a few megabytes
/// of rows.
const LOCAL_MOST: usize = 4;

/// Reads `rowid`s `low..=high` of the table into the queue, the pass's own way.
pub(super) type ReadHere<'r, T> = Box<dyn FnMut(i64, i64, &mut VecDeque<T>) -> Result<()> + 'r>;

/// A table in one sorted run, `rowid`s `first..=last`, read by lanes in start order: ranges
/// asked ahead up to the readers' depth, each unpacked as the fold reaches it. When the next
/// answer is not there yet, the pass reads the next range itself rather than wait (up to
/// [`LOCAL_MOST`] ahead): where the lanes decode slower than the pass folds (one lane on two
/// cores), both cores read.
pub(super) struct Ranged<'r, T> {
    lanes: &'r Lanes<'r>,
    pass: u32,
    ask: RangeAsk,
    last: i64,
    /// The next range's first `rowid`; `None` once the last was asked or read.
    next: Option<i64>,
    /// The ranges asked or read, in `rowid` order: `None` for an answer still owed, else the
    /// rows read here.
    order: VecDeque<Option<VecDeque<T>>>,
    asked: usize,
    here: ReadHere<'r, T>,
    batch: VecDeque<T>,
    ended: bool,
}

impl<'r, T: Packable> Ranged<'r, T> {
    pub(super) fn new(
        lanes: &'r Lanes<'r>,
        (kind, table, sql): (RowKind, &'static str, String),
        (first, last): (i64, i64),
        here: ReadHere<'r, T>,
    ) -> Ranged<'r, T> {
        Ranged {
            lanes,
            pass: lanes.begin_pass(),
            ask: RangeAsk {
                kind,
                table,
                sql,
                low: first,
                high: first,
            },
            last,
            next: (first <= last).then_some(first),
            order: VecDeque::new(),
            asked: 0,
            here,
            batch: VecDeque::new(),
            ended: false,
        }
    }

    /// The next range's bounds, moving past it.
    fn next_range(&mut self) -> Option<(i64, i64)> {
        let low = self.next?;
        let high = low.saturating_add(RANGE_ROWIDS - 1).min(self.last);
        self.next = high.checked_add(1).filter(|n| *n <= self.last);
        Some((low, high))
    }

    /// Asks ranges until the readers hold as many of this pass's as they may.
    fn ask_ahead(&mut self) -> Result<()> {
        while self.asked < self.lanes.reader.depth().max(1) {
            let Some((low, high)) = self.next_range() else {
                return Ok(());
            };
            (self.ask.low, self.ask.high) = (low, high);
            self.lanes.ask(self.pass, &self.ask)?;
            self.asked += 1;
            self.order.push_back(None);
        }
        Ok(())
    }

    fn refill(&mut self) -> Result<()> {
        loop {
            self.ask_ahead()?;
            match self.order.front_mut() {
                None => {
                    self.ended = true;
                    return Ok(());
                }
                Some(Some(rows)) => {
                    self.batch = std::mem::take(rows);
                    self.order.pop_front();
                    return Ok(());
                }
                Some(None) => {}
            }
            let local = self.order.iter().filter(|o| o.is_some()).count();
            if self.next.is_some() && local < LOCAL_MOST && !self.lanes.ready(self.pass) {
                let Some((low, high)) = self.next_range() else {
                    continue;
                };
                let mut rows = VecDeque::new();
                (self.here)(low, high, &mut rows)?;
                self.order.push_back(Some(rows));
                continue;
            }
            let bytes = self.lanes.take(self.pass)?;
            self.asked -= 1;
            self.order.pop_front();
            unpack(&bytes, &mut self.batch, self.ask.table)?;
            return Ok(());
        }
    }
}

impl<T: Packable> Iterator for Ranged<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(row) = self.batch.pop_front() {
                return Some(Ok(row));
            }
            if self.ended {
                return None;
            }
            if let Err(e) = self.refill() {
                self.ended = true;
                return Some(Err(e));
            }
        }
    }
}

impl<T> Drop for Ranged<'_, T> {
    /// Drops the answers still owed, so that no later take meets them.
    fn drop(&mut self) {
        self.lanes.forget(self.pass, self.asked);
    }
}
