//! Opening an export: recognise what the bytes are before SQLite sees them, then open read-only.
//!
//! SQLite's own errors for a wrong file ("file is not a database", "disk image is malformed") do
//! not tell a user what to do, so the header is checked first: empty, `.nsys-rep`, not SQLite,
//! or shorter than the header says (truncated download).

use rusqlite::Connection;

use crate::error::{Error, Result};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How many leading bytes [`check_header`] wants (the SQLite database header).
pub const HEADER_LEN: usize = 100;

/// Classifies a file from its name, its first [`HEADER_LEN`] bytes and its size.
///
/// Used natively and in the browser (where the bytes come from a `File` slice).
pub fn check_header(name: &str, head: &[u8], size: u64) -> Result<()> {
    let path = name.to_string();
    if size == 0 {
        return Err(Error::Empty { path });
    }
    let lower = name.to_ascii_lowercase();
    let is_sqlite = head.len() >= SQLITE_MAGIC.len() && &head[..16] == SQLITE_MAGIC;
    if !is_sqlite {
        if lower.ends_with(".nsys-rep") || lower.ends_with(".qdrep") || looks_like_nsys_rep(head) {
            return Err(Error::NsysRep { path });
        }
        return Err(Error::NotSqlite { path });
    }
    if head.len() < HEADER_LEN {
        return Err(Error::Truncated {
            path,
            expected: HEADER_LEN as u64,
            actual: size,
        });
    }
    if let Some(expected) = expected_size(head)
        && size < expected
    {
        return Err(Error::Truncated {
            path,
            expected,
            actual: size,
        });
    }
    Ok(())
}

/// `.nsys-rep` files are not SQLite; nsys writes its own container. Without the extension we can
/// only guess from printable markers that appear early in such reports.
fn looks_like_nsys_rep(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.contains("nsys-rep") || text.contains("QdstrmFile") || text.contains("NsightSystems")
}

/// Database size from the header (page size × page count), when the count is known valid.
fn expected_size(head: &[u8]) -> Option<u64> {
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        n if n >= 512 && n.is_power_of_two() => u64::from(n),
        _ => return None,
    };
    let change_counter = &head[24..28];
    let version_valid_for = &head[92..96];
    let page_count = u32::from_be_bytes([head[28], head[29], head[30], head[31]]);
    (change_counter == version_valid_for && page_count > 0)
        .then(|| page_size * u64::from(page_count))
}

/// Read-only pragmas: never write, and keep SQLite's temporary storage and cache small.
pub fn configure(conn: &Connection, path: &str) -> Result<()> {
    conn.execute_batch("PRAGMA query_only=1; PRAGMA temp_store=FILE; PRAGMA cache_size=-2000;")
        .map_err(|e| sqlite_error(path, "the schema", &e))
}

/// Opens a file on disk read-only after checking its header.
#[cfg(not(target_arch = "wasm32"))]
pub fn open_path(path: &std::path::Path) -> Result<Connection> {
    use rusqlite::OpenFlags;
    use std::io::Read;

    let shown = path.display().to_string();
    let io = |e: std::io::Error| Error::Io {
        path: shown.clone(),
        detail: e.to_string(),
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if file.metadata().map_err(io)?.is_dir() {
        return Err(Error::Io {
            path: shown,
            detail: "is a directory, not a file".into(),
        });
    }
    let mut head = Vec::with_capacity(HEADER_LEN);
    file.by_ref()
        .take(HEADER_LEN as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    check_header(&shown, &head, size)?;

    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let uri = format!("file:{}?immutable=1", uri_escape(&path.to_string_lossy()));
    let conn = Connection::open_with_flags(uri, flags)
        .map_err(|e| sqlite_error(&shown, "the file", &e))?;
    configure(&conn, &shown)?;
    Ok(conn)
}

/// Escapes the characters that are special in an SQLite URI path.
#[cfg(not(target_arch = "wasm32"))]
fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            _ => out.push(c),
        }
    }
    out
}

/// Characters of SQLite's message an error keeps.
const DETAIL_CHARS: usize = 160;

/// SQLite's message as one short line: a damaged schema's message quotes the `CREATE TABLE`
/// text it failed on (line breaks, comments and the damaged bytes included), so only the part
/// naming the table is kept, control characters become spaces and the rest is cut at
/// [`DETAIL_CHARS`].
fn one_line_detail(detail: &str) -> String {
    let detail = match detail.split_once(" - ") {
        Some((head, _)) if head.starts_with("malformed database schema") => head,
        _ => detail,
    };
    let spaced: String = detail
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(DETAIL_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// Maps an SQLite error while reading to a user-facing error (damaged files get their own kind),
/// SQLite's message on one line and at most 160 characters.
pub fn sqlite_error(path: &str, what: &str, e: &rusqlite::Error) -> Error {
    use rusqlite::ffi::ErrorCode;
    if let rusqlite::Error::FromSqlConversionFailure(_, _, cause) = e
        && let Some(time) = cause.downcast_ref::<super::decode::DamagedTime>()
    {
        return Error::Corrupt {
            path: path.into(),
            detail: format!("{time}, while reading {what}"),
        };
    }
    if let rusqlite::Error::Utf8Error(..) = e {
        // nsys writes UTF-8 only: a name that is not was damaged.
        return Error::Corrupt {
            path: path.into(),
            detail: format!("a text that is not UTF-8 while reading {what}"),
        };
    }
    let detail = one_line_detail(&e.to_string());
    if let rusqlite::Error::SqliteFailure(f, _) = e {
        match f.code {
            ErrorCode::DatabaseCorrupt => {
                return Error::Corrupt {
                    path: path.into(),
                    detail: format!("{detail} while reading {what}"),
                };
            }
            ErrorCode::NotADatabase => return Error::NotSqlite { path: path.into() },
            _ => {}
        }
    }
    Error::Sqlite {
        path: path.into(),
        what: what.into(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(page_size: u16, pages: u32) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[..16].copy_from_slice(SQLITE_MAGIC);
        h[16..18].copy_from_slice(&page_size.to_be_bytes());
        h[24..28].copy_from_slice(&7u32.to_be_bytes());
        h[92..96].copy_from_slice(&7u32.to_be_bytes());
        h[28..32].copy_from_slice(&pages.to_be_bytes());
        h
    }

    #[test]
    fn classifies_headers() {
        assert!(matches!(
            check_header("a.sqlite", &[], 0),
            Err(Error::Empty { .. })
        ));
        assert!(matches!(
            check_header("r.nsys-rep", b"garbage", 7),
            Err(Error::NsysRep { .. })
        ));
        assert!(matches!(
            check_header("r.bin", b"garbage", 7),
            Err(Error::NotSqlite { .. })
        ));
        let h = header(4096, 10);
        assert!(matches!(check_header("t.sqlite", &h, 40960), Ok(())));
        match check_header("t.sqlite", &h, 40959) {
            Err(Error::Truncated {
                expected, actual, ..
            }) => assert_eq!((expected, actual), (40960, 40959)),
            other => panic!("expected Truncated, got {other:?}"),
        }
        assert!(matches!(
            check_header("t.sqlite", &h[..50], 50),
            Err(Error::Truncated { .. })
        ));
    }

    #[test]
    fn sqlite_details_are_one_short_line() {
        let schema = "malformed database schema (T) - unrecognized token: \"\"  -- a comment\n    x INTEGER\n)";
        assert_eq!(one_line_detail(schema), "malformed database schema (T)");
        assert_eq!(one_line_detail("a\n\tb\u{1b}c"), "a b c");
        let long = "x".repeat(DETAIL_CHARS + 5);
        assert_eq!(one_line_detail(&long).chars().count(), DETAIL_CHARS + 1);
    }

    #[test]
    fn page_size_one_means_64k() {
        let h = header(1, 2);
        assert!(matches!(
            check_header("t.sqlite", &h, 65_536),
            Err(Error::Truncated {
                expected: 131_072,
                ..
            })
        ));
    }
}
