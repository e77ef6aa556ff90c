//! A statement's rows read through SQLite's C interface, for the loops that read a table whole.
//!
//! Why not rusqlite's `Row::get_ref`: it asks SQLite three times a column (the column count, the
//! column's type, its value), each call looking the column up again, which costs as much as
//! SQLite's own stepping on the event tables. Here a column is looked up once
//! (`sqlite3_column_value`) and read from the value it returns; `docs/performance.md` has the
//! figures. Every other query goes through rusqlite.
//!
//! SQLite calls the value `sqlite3_column_value` returns unprotected, usable with the
//! `sqlite3_value_*` readers only when no mutex is involved: "If SQLite is run in one of reduced
//! mutex modes SQLITE_CONFIG_SINGLETHREAD or SQLITE_CONFIG_MULTITHREAD then there is no
//! distinction between protected and unprotected sqlite3_value objects"
//! (<https://www.sqlite.org/c3ref/value.html>). Every export is opened with
//! `SQLITE_OPEN_NOMUTEX` (multi-thread mode, `trace::open` and the page's `web::analysis`), and a
//! [`Cursor`] borrows its connection, so no other thread steps it meanwhile.

use std::ffi::{CStr, c_int};
use std::ptr::NonNull;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ffi};

/// What the row decoders read a row through: rusqlite's rows and [`Row`] alike.
pub(super) trait Cells {
    /// Column `i`'s value.
    fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>>;
    /// Column `i`'s name (`NULL` for a column selected as that literal).
    fn column_name(&self, i: usize) -> Option<&str>;
}

impl Cells for rusqlite::Row<'_> {
    fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        rusqlite::Row::get_ref(self, i)
    }

    fn column_name(&self, i: usize) -> Option<&str> {
        let stmt: &rusqlite::Statement<'_> = self.as_ref();
        stmt.column_name(i).ok()
    }
}

/// A prepared statement stepped row by row; finalized when dropped.
pub(super) struct Cursor<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    columns: usize,
    conn: &'c Connection,
}

impl<'c> Cursor<'c> {
    /// `sql` prepared on `conn` (one statement; text after it is ignored).
    pub(super) fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Cursor<'c>> {
        let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: `conn` is open for the call; `sql` is valid for `len` bytes (SQLite reads no
        // further), and `stmt` is written before it is read.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                conn.handle(),
                sql.as_ptr().cast(),
                len,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(failure(conn, rc));
        }
        let stmt = NonNull::new(stmt).ok_or(rusqlite::Error::InvalidQuery)?;
        // SAFETY: `stmt` was just prepared.
        let columns = unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) };
        Ok(Cursor {
            stmt,
            columns: usize::try_from(columns).unwrap_or(0),
            conn,
        })
    }

    /// The next row, `None` after the last; an error ends the rows.
    pub(super) fn next(&mut self) -> rusqlite::Result<Option<Row<'_>>> {
        // SAFETY: the statement is prepared and not finalized until `self` drops.
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(Row { cursor: self })),
            ffi::SQLITE_DONE => Ok(None),
            rc => Err(failure(self.conn, rc)),
        }
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: finalized once, here; a step's error was already read from the connection.
        unsafe { ffi::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}

/// The row a [`Cursor`] stands on, valid until it steps again.
pub(super) struct Row<'r> {
    cursor: &'r Cursor<'r>,
}

impl Row<'_> {
    /// Column `i`'s value, as rusqlite's `Row::get_ref` gives it. Inlined, so that a decoder's
    /// match on the value's kind folds into the one here.
    #[inline(always)]
    pub(super) fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        if i >= self.cursor.columns {
            return Err(rusqlite::Error::InvalidColumnIndex(i));
        }
        let stmt = self.cursor.stmt.as_ptr();
        // SAFETY: the cursor stands on a row (a `Row` exists only between a step that gave one
        // and the next step, which needs `&mut` of the cursor) and `i` is one of its columns.
        // The value and the bytes it points to stay valid for that long; the lengths SQLite
        // gives are those of the bytes it points to.
        unsafe {
            let v = ffi::sqlite3_column_value(stmt, i as c_int);
            Ok(match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                ffi::SQLITE_TEXT => ValueRef::Text(bytes(ffi::sqlite3_value_text(v), v)),
                ffi::SQLITE_BLOB => ValueRef::Blob(bytes(ffi::sqlite3_value_blob(v).cast(), v)),
                _ => ValueRef::Null,
            })
        }
    }
}

/// The `sqlite3_value_bytes` bytes at `data` (none when SQLite gives no pointer, as for an
/// empty blob or when out of memory).
///
/// SAFETY: `data` is what a `sqlite3_value_text`/`_blob` call on `v` just returned.
unsafe fn bytes<'a>(data: *const u8, v: *mut ffi::sqlite3_value) -> &'a [u8] {
    // SAFETY: as the caller promises; the length is read after the pointer, as SQLite asks.
    let len = usize::try_from(unsafe { ffi::sqlite3_value_bytes(v) }).unwrap_or(0);
    match data.is_null() || len == 0 {
        true => &[],
        // SAFETY: SQLite holds `len` bytes at `data` until the statement steps again.
        false => unsafe { std::slice::from_raw_parts(data, len) },
    }
}

impl Cells for Row<'_> {
    #[inline(always)]
    fn get_ref(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        Row::get_ref(self, i)
    }

    fn column_name(&self, i: usize) -> Option<&str> {
        self.cursor.column_name(i)
    }
}

impl Cursor<'_> {
    /// Column `i`'s name (`None` past the last, or when SQLite gives none).
    fn column_name(&self, i: usize) -> Option<&str> {
        if i >= self.columns {
            return None;
        }
        // SAFETY: `i` is a column of the prepared statement; the name lives as long as it.
        let name = unsafe { ffi::sqlite3_column_name(self.stmt.as_ptr(), i as c_int) };
        // SAFETY: SQLite's column names are NUL-terminated (a null pointer when out of memory).
        (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_str().ok())?
    }

    /// Every column's name, owned (`None` where SQLite gives none).
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn column_names(&self) -> Vec<Option<String>> {
        (0..self.columns)
            .map(|i| self.column_name(i).map(str::to_owned))
            .collect()
    }
}

/// The error of a call that returned `rc`, as rusqlite words it (the connection's message when
/// it is about this call).
fn failure(conn: &Connection, rc: c_int) -> rusqlite::Error {
    // SAFETY: `conn` is open; SQLite's messages are NUL-terminated and read before the next call.
    let message = unsafe {
        let db = conn.handle();
        let text = match ffi::sqlite3_errcode(db) == rc {
            true => ffi::sqlite3_errmsg(db),
            false => ffi::sqlite3_errstr(rc),
        };
        (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::{FromSql, Value};

    /// Every storage class, the empty text and blob among them, in a table of its own.
    fn table() -> Connection {
        let conn = Connection::open_in_memory().expect("in-memory database");
        conn.execute_batch(
            "CREATE TABLE t (v); INSERT INTO t VALUES \
             (NULL), (-7), (9007199254740993), (2.5), ('text é'), (''), (x'00ff'), (x'');",
        )
        .expect("rows");
        conn
    }

    #[test]
    fn a_cursor_reads_every_value_as_rusqlite_reads_it() {
        let conn = table();
        let sql = "SELECT v, NULL FROM t";
        let mut stmt = conn.prepare(sql).expect("prepared");
        let theirs: Vec<Value> = stmt
            .query_map([], |r| r.get::<_, Value>(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        let mut ours = Vec::new();
        let mut cursor = Cursor::prepare(&conn, sql).expect("prepared");
        while let Some(row) = cursor.next().expect("a step") {
            ours.push(Value::column_result(row.get_ref(0).expect("a value")).expect("a value"));
            assert_eq!(Cells::column_name(&row, 1), Some("NULL"));
        }
        assert_eq!(theirs.len(), 8);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_column_past_the_last_is_an_error() {
        let conn = table();
        let mut cursor = Cursor::prepare(&conn, "SELECT v FROM t").expect("prepared");
        let row = cursor.next().expect("a step").expect("a row");
        assert!(matches!(
            row.get_ref(1),
            Err(rusqlite::Error::InvalidColumnIndex(1))
        ));
        assert_eq!(Cells::column_name(&row, 1), None);
    }

    #[test]
    fn a_statement_sqlite_refuses_is_an_error_in_sqlites_words() {
        let conn = table();
        let ours = Cursor::prepare(&conn, "SELECT nope FROM t").err();
        let theirs = conn.prepare("SELECT nope FROM t").err();
        let (Some(ours), Some(theirs)) = (ours, theirs) else {
            panic!("both refuse the statement");
        };
        assert_eq!(ours.to_string(), "no such column: nope");
        assert!(
            theirs.to_string().contains("no such column: nope"),
            "{theirs}"
        );
    }
}
