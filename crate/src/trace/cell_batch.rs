//! A table's rows stepped by SQLite on a thread and connection of their own, copied out in
//! batches and handed back in table order, so that one thread's stepping and another's decoding
//! share the cores. Natively, the scan that folds reads the NVTX ranges so
//! (`Loader::read_nvtx`): until the host side has them the GPU side cannot fold, and the kernel
//! table's reader, its kernels in flight held, waits with a core idle (at 4.2 GiB two seconds of
//! eight). The calls are read apart the same way (`rows/calls_apart.rs`), decoded on their
//! thread: the ranges' names are interned where they are folded, so here the cells cross.

use std::path::Path;
use std::sync::Arc;

use rusqlite::types::ValueRef;

use super::cells::{Cells, Cursor};
use super::open::{open_path, sqlite_error};
use crate::error::{Error, Result};

/// Rows handed over at a time, and the batches in flight (the reader waits when that many are).
const BATCH_ROWS: usize = 4096;
const BATCHES: usize = 16;

/// A value as SQLite gave it; text and blobs as a range of the batch's bytes.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(usize, usize),
    Blob(usize, usize),
}

/// Rows copied out of a statement: `width` cells a row, their text and blobs in `bytes`.
#[derive(Debug)]
pub(super) struct CellBatch {
    names: Arc<[Option<String>]>,
    cells: Vec<Cell>,
    bytes: Vec<u8>,
}

impl CellBatch {
    /// A batch with room for [`BATCH_ROWS`] rows and `bytes` of their text and blobs (the last
    /// batch's: rows of one table hold texts alike).
    fn new(names: Arc<[Option<String>]>, bytes: usize) -> CellBatch {
        let cells = Vec::with_capacity(BATCH_ROWS * names.len());
        CellBatch {
            names,
            cells,
            bytes: Vec::with_capacity(bytes),
        }
    }

    fn width(&self) -> usize {
        self.names.len()
    }

    fn push(&mut self, row: &impl Cells) -> rusqlite::Result<()> {
        for i in 0..self.width() {
            let cell = match row.get_ref(i)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Integer(v),
                ValueRef::Real(v) => Cell::Real(v),
                ValueRef::Text(t) => Cell::Text(self.keep(t), t.len()),
                ValueRef::Blob(b) => Cell::Blob(self.keep(b), b.len()),
            };
            self.cells.push(cell);
        }
        Ok(())
    }

    fn keep(&mut self, bytes: &[u8]) -> usize {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        at
    }

    fn len(&self) -> usize {
        self.cells.len().checked_div(self.width()).unwrap_or(0)
    }

    /// The rows, in the order they were read.
    pub(super) fn rows(&self) -> impl Iterator<Item = BatchRow<'_>> {
        (0..self.len()).map(move |i| BatchRow {
            batch: self,
            at: i * self.width(),
        })
    }
}

/// One row of a [`CellBatch`], read as the statement's row would be.
pub(super) struct BatchRow<'b> {
    batch: &'b CellBatch,
    at: usize,
}

impl Cells for BatchRow<'_> {
    fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        if i >= self.batch.width() {
            return Err(rusqlite::Error::InvalidColumnIndex(i));
        }
        let bytes = |at: usize, len: usize| self.batch.bytes.get(at..at + len).unwrap_or(&[]);
        Ok(match self.batch.cells[self.at + i] {
            Cell::Null => ValueRef::Null,
            Cell::Integer(v) => ValueRef::Integer(v),
            Cell::Real(v) => ValueRef::Real(v),
            Cell::Text(at, len) => ValueRef::Text(bytes(at, len)),
            Cell::Blob(at, len) => ValueRef::Blob(bytes(at, len)),
        })
    }

    fn column_name(&self, i: usize) -> Option<&str> {
        self.batch.names.get(i)?.as_deref()
    }
}

/// `sql` over `table` stepped on a thread with its own connection to `file` (`shown` as the
/// scan shows it), each row handed to `each` here, in order; `each` returning `false` stops the
/// read: `Ok(false)`. An error of either side is the read's.
pub(super) fn read_apart(
    (file, shown): (&Path, &str),
    (table, sql): (&str, &str),
    each: &mut dyn FnMut(&BatchRow<'_>) -> rusqlite::Result<bool>,
) -> Result<bool> {
    let fail = |e: rusqlite::Error| sqlite_error(shown, table, &e);
    let (to_reader, batches) = std::sync::mpsc::sync_channel::<CellBatch>(BATCHES);
    std::thread::scope(|threads| {
        let reader = threads.spawn(move || -> Result<()> {
            let conn = open_path(file)?;
            let mut rows = Cursor::prepare(&conn, sql).map_err(fail)?;
            let names: Arc<[Option<String>]> = rows.column_names().into();
            let mut batch = CellBatch::new(Arc::clone(&names), 0);
            while let Some(row) = rows.next().map_err(fail)? {
                batch.push(&row).map_err(fail)?;
                if batch.len() == BATCH_ROWS {
                    let next = CellBatch::new(Arc::clone(&names), batch.bytes.len());
                    let full = std::mem::replace(&mut batch, next);
                    // Nobody listens: the read stopped or failed, which it reports.
                    if to_reader.send(full).is_err() {
                        return Ok(());
                    }
                }
            }
            let _ = to_reader.send(batch);
            Ok(())
        });
        let folded = fold_batches(&batches, each).map_err(fail);
        // A reader still sending hears that nobody listens, and ends.
        drop(batches);
        let read = reader.join().map_err(|_| Error::Internal {
            detail: format!("the thread reading {table} of {shown} stopped"),
        })?;
        let done = folded?;
        read.map(|()| done)
    })
}

/// Every row of every batch to `each` until it says stop (`false`) or the batches end.
fn fold_batches(
    batches: &std::sync::mpsc::Receiver<CellBatch>,
    each: &mut dyn FnMut(&BatchRow<'_>) -> rusqlite::Result<bool>,
) -> rusqlite::Result<bool> {
    for batch in batches {
        for row in batch.rows() {
            if !each(&row)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table whose rows hold every kind of value, in a file `read_apart` opens.
    fn table(dir: &Path, rows: usize) -> std::path::PathBuf {
        let path = dir.join("cells.sqlite");
        let mut conn = rusqlite::Connection::open(&path).expect("a file");
        // One transaction: a commit per row would sync the disk 12,000 times.
        let conn = conn.transaction().expect("a transaction");
        conn.execute_batch("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB)")
            .expect("a table");
        let mut insert = conn
            .prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4)")
            .expect("an insert");
        for n in 0..rows {
            let text = (n % 3 != 0).then(|| format!("text {n}"));
            let blob = (n % 5 == 0).then(|| vec![n as u8; n % 7]);
            insert
                .execute(rusqlite::params![n as i64 - 9, n as f64 / 4.0, text, blob])
                .expect("a row");
        }
        drop(insert);
        conn.commit().expect("committed");
        path
    }

    /// Read apart, every value comes back as a read on one connection gives it, in order,
    /// across batches; a stop ends the read with `false` however many batches are in flight.
    #[test]
    fn rows_read_apart_equal_the_rows_read_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rows = 3 * BATCH_ROWS + 17;
        let path = table(dir.path(), rows);
        let sql = "SELECT i, r, s, b FROM t";
        let conn = open_path(&path).expect("open");
        let mut cursor = Cursor::prepare(&conn, sql).expect("prepared");
        let mut want: Vec<String> = Vec::new();
        while let Some(row) = cursor.next().expect("a step") {
            want.push(format!(
                "{:?}",
                (0..4).map(|i| row.get_ref(i)).collect::<Vec<_>>()
            ));
        }
        let mut got: Vec<String> = Vec::new();
        let done = read_apart((&path, "cells"), ("t", sql), &mut |row| {
            assert_eq!(row.column_name(2), Some("s"));
            got.push(format!(
                "{:?}",
                (0..4).map(|i| row.get_ref(i)).collect::<Vec<_>>()
            ));
            Ok(true)
        })
        .expect("read");
        assert!(done);
        assert_eq!(got.len(), rows);
        assert_eq!(got, want);

        let mut seen = 0;
        let stopped = read_apart((&path, "cells"), ("t", sql), &mut |_| {
            seen += 1;
            Ok(seen < 5)
        })
        .expect("read");
        assert!(!stopped);
        assert_eq!(seen, 5);
    }

    /// A statement SQLite refuses, or a file that is not there, is the read's error.
    #[test]
    fn a_reader_that_fails_fails_the_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = table(dir.path(), 3);
        let bad = read_apart((&path, "cells"), ("t", "SELECT nope FROM t"), &mut |_| {
            Ok(true)
        });
        assert!(bad.is_err_and(|e| e.to_string().contains("nope")));
        let gone = dir.path().join("gone.sqlite");
        let missing = read_apart((&gone, "gone"), ("t", "SELECT 1"), &mut |_| Ok(true));
        assert!(missing.is_err());
    }
}
