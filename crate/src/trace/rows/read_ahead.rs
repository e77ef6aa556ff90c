//! A table's rows read ahead on threads of their own, natively: SQLite's stepping and the
//! decoding, most of a pass over rows not kept, run beside the fold. A table in one sorted run
//! (every export nsys writes) is read by two threads taking turns over `rowid` ranges, in
//! order; one in several is merged on one thread.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};

use super::super::open::{open_path, sqlite_error};
use super::super::runs::{SortedRuns, read_chunk};
use super::file_rows::Decode;
use crate::error::{Error, Result};
use crate::model::Trace;

/// Rows handed over at a time by the merging reader; `rowid`s per range of the others.
const BATCH: usize = 4096;
const RANGE: i64 = 8192;
/// Threads reading a table in one run, and the batches each may have waiting.
const LANES: usize = 2;
const WAITING: usize = 2;

/// What reader threads read: `table`'s rows in start order from `from` on (a `rowid` when
/// the table is in one run, as `SortedRuns::merge_from` takes it).
pub(super) struct Read<T: Decode> {
    pub file: PathBuf,
    pub label: String,
    pub table: &'static str,
    pub sql: String,
    pub runs: SortedRuns<T::Key>,
    pub from: i64,
    pub meta: Arc<Trace>,
}

enum Message<T> {
    Rows(Vec<T>),
    Failed(Error),
    Done,
}

/// The rows reader threads read, as the caller takes them: a batch from each lane in turn.
/// A thread that stops without saying it is done (it panicked) is an internal error, never
/// the table's end.
pub(super) struct ReadAhead<T> {
    lanes: Vec<mpsc::Receiver<Message<T>>>,
    turn: usize,
    batch: std::vec::IntoIter<T>,
    label: String,
    ended: bool,
}

pub(super) fn spawn<T: Decode>(read: Read<T>) -> ReadAhead<T> {
    let label = read.label.clone();
    let read = Arc::new(read);
    let lanes = match read.runs.one_run() {
        Some((first, last)) => {
            let first = first.max(read.from);
            (0..LANES)
                .map(|lane| {
                    start(&read, move |read, send| {
                        ranges(read, (first, last), lane, send)
                    })
                })
                .collect()
        }
        None => vec![start(&read, merged)],
    };
    ReadAhead {
        lanes,
        turn: 0,
        batch: Vec::new().into_iter(),
        label,
        ended: false,
    }
}

/// A thread running `body` with its end of a channel (dropped at once if no thread starts:
/// the caller reads that as an error).
fn start<T: Decode>(
    read: &Arc<Read<T>>,
    body: impl FnOnce(&Read<T>, &mpsc::SyncSender<Message<T>>) + Send + 'static,
) -> mpsc::Receiver<Message<T>> {
    let (send, receive) = mpsc::sync_channel(WAITING);
    let read = Arc::clone(read);
    let _ = std::thread::Builder::new()
        .name(format!("read {}", read.table))
        .spawn(move || body(&read, &send));
    receive
}

/// Reads `rowid` ranges `lane`, `lane + LANES`, … of `[first, last]`, one message each.
fn ranges<T: Decode>(
    read: &Read<T>,
    (first, last): (i64, i64),
    lane: usize,
    send: &mpsc::SyncSender<Message<T>>,
) {
    let Some(conn) = connect(read, send) else {
        return;
    };
    let mut decode = T::decoder(&read.meta);
    let mut low = first.saturating_add(lane as i64 * RANGE);
    while low <= last {
        let high = low.saturating_add(RANGE - 1).min(last);
        let mut rows = VecDeque::new();
        let range = (low, high, usize::MAX);
        if let Err(e) = read_chunk(&conn, &read.sql, range, &mut rows, &mut decode) {
            let _ = send.send(Message::Failed(sqlite_error(&read.label, read.table, &e)));
            return;
        }
        if send.send(Message::Rows(rows.into())).is_err() {
            return;
        }
        match low.checked_add(RANGE * LANES as i64) {
            Some(next) => low = next,
            None => break,
        }
    }
    let _ = send.send(Message::Done);
}

/// Merges the table's sorted runs, sending the rows in batches.
fn merged<T: Decode>(read: &Read<T>, send: &mpsc::SyncSender<Message<T>>) {
    let Some(conn) = connect(read, send) else {
        return;
    };
    let mut decode = T::decoder(&read.meta);
    let chunk = |first: i64, last: i64, limit: usize, out: &mut VecDeque<T>| {
        read_chunk(&conn, &read.sql, (first, last, limit), out, &mut decode)
            .map_err(|e| sqlite_error(&read.label, read.table, &e))
    };
    let mut batch = Vec::with_capacity(BATCH);
    for row in read.runs.merge_from(read.from, chunk) {
        match row {
            Ok(row) => batch.push(row),
            Err(e) => {
                let _ = send.send(Message::Rows(batch));
                let _ = send.send(Message::Failed(e));
                return;
            }
        }
        if batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if send.send(Message::Rows(full)).is_err() {
                return;
            }
        }
    }
    let _ = send.send(Message::Rows(batch));
    let _ = send.send(Message::Done);
}

/// The thread's own connection to the file, or the error sent.
fn connect<T: Decode>(
    read: &Read<T>,
    send: &mpsc::SyncSender<Message<T>>,
) -> Option<rusqlite::Connection> {
    open_path(&read.file)
        .map_err(|e| send.send(Message::Failed(e)))
        .ok()
}

impl<T> Iterator for ReadAhead<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(row) = self.batch.next() {
                return Some(Ok(row));
            }
            if self.ended {
                return None;
            }
            let lane = self.lanes.get(self.turn)?;
            // A thread that died (a bug, never an answer) is an internal error.
            let message = lane.recv().unwrap_or(Message::Failed(Error::Internal {
                detail: format!("a thread reading the rows of {} stopped", self.label),
            }));
            match message {
                Message::Rows(rows) => {
                    self.batch = rows.into_iter();
                    self.turn = (self.turn + 1) % self.lanes.len();
                }
                Message::Failed(e) => {
                    self.ended = true;
                    return Some(Err(e));
                }
                Message::Done => self.ended = true,
            }
        }
    }
}
