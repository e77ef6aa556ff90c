//! Row decoders: each event table's columns (absent ones selected as `NULL`) and the decoder of
//! one row into its `model::rows` type, values read leniently (a NULL, text or blob where a
//! number belongs reads as a default). The loaders, `FileRows`, the launch sweep and the
//! timeline's NVTX reads share them.

use rusqlite::types::ValueRef;

use super::cells::Cells;
use super::load::MEMCPY_TABLE;
use crate::model::rows::{CallRow, KernelRow, MemOpRow, SyncRow};
use crate::model::{NO_NAME, Ns, NvtxRow, Strings, ThreadIdx};

/// An integer column value; NULL, text and blobs read as `default` (odd columns never panic).
#[inline]
pub(super) fn int(v: ValueRef<'_>, default: i64) -> i64 {
    match v {
        ValueRef::Integer(i) => i,
        // Every row of a column selected as `NULL` (`Selected`): kept out of the cold path.
        ValueRef::Null => default,
        other => not_int(other, default),
    }
}

/// [`int`] of a value that is not an integer (rare: kept out of the row decoders' loops).
#[cold]
fn not_int(v: ValueRef<'_>, default: i64) -> i64 {
    match v {
        ValueRef::Integer(i) => i,
        ValueRef::Real(f) if f.is_finite() => f as i64,
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(default),
        _ => default,
    }
}

/// The furthest a time (ns) may lie from the session start nsys counts from: 2^53 ns, about
/// 104 days. A time further away is a damaged value (a flipped high bit, a float where an
/// integer belongs), and sums and differences of such times overflow, so a row holding one is
/// refused ([`time`]) rather than analysed.
pub const MAX_TIME_NS: Ns = 1 << 53;

/// The most bytes a copy or memset may move: 2^48 (256 TiB); more is a damaged value, read as
/// unknown (0), as a negative size is, so that sums of sizes never overflow.
pub const MAX_BYTES: u64 = 1 << 48;

/// A time further than [`MAX_TIME_NS`] from the session start: the error a row holding one
/// reads as (`open::sqlite_error` makes it [`crate::error::Error::Corrupt`]).
#[derive(Debug)]
pub(super) struct DamagedTime(pub Ns);

impl std::fmt::Display for DamagedTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a time of {} ns, more than {} days from the session start",
            self.0,
            MAX_TIME_NS / 86_400_000_000_000
        )
    }
}

impl std::error::Error for DamagedTime {}

/// A time column's value (ns, read as [`int`]): an error when further than [`MAX_TIME_NS`] from
/// the session start.
#[inline]
pub(super) fn time(v: ValueRef<'_>) -> rusqlite::Result<Ns> {
    let t = int(v, 0);
    match (-MAX_TIME_NS..=MAX_TIME_NS).contains(&t) {
        true => Ok(t),
        false => Err(rusqlite::Error::FromSqlConversionFailure(
            0,
            v.data_type(),
            Box::new(DamagedTime(t)),
        )),
    }
}

/// [`time`], `None` for NULL (a range that never ended).
pub(super) fn opt_time(v: ValueRef<'_>) -> rusqlite::Result<Option<Ns>> {
    match v {
        ValueRef::Null => Ok(None),
        other => time(other).map(Some),
    }
}

#[inline]
pub(super) fn opt_int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Null => None,
        other => Some(int(other, 0)),
    }
}

/// An NVTX range's inline `text`: `None` unless the column holds text.
pub(super) fn inline_text(v: ValueRef<'_>) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        ValueRef::Text(t) => Some(super::schema::lossy(t)),
        _ => None,
    }
}

/// An id looked up by a row's `globalPid` or `globalTid`, the last answer remembered: rows
/// of one process or thread come in runs.
pub(super) struct Remembered<V, F> {
    lookup: F,
    last: Option<(i64, V)>,
}

impl<V: Copy, F: FnMut(i64) -> V> Remembered<V, F> {
    pub(super) fn new(lookup: F) -> Self {
        Remembered { lookup, last: None }
    }

    pub(super) fn get(&mut self, key: i64) -> V {
        match self.last {
            Some((k, v)) if k == key => v,
            _ => {
                let v = (self.lookup)(key);
                self.last = Some((key, v));
                v
            }
        }
    }
}

#[inline]
pub(super) fn small(v: ValueRef<'_>) -> u32 {
    u32::try_from(int(v, 0)).unwrap_or(u32::MAX)
}

/// `columns` with `NULL` for every one not in `kept` (a scan reads only what it needs).
pub(super) fn only<const N: usize>(columns: [&'static str; N], kept: &[&str]) -> [&'static str; N] {
    columns.map(|c| if kept.contains(&c) { c } else { "NULL" })
}

/// `column`, or `NULL` when not `read`.
fn read_if(column: &'static str, read: bool) -> &'static str {
    if read { column } else { "NULL" }
}

/// The columns [`kernel_row`] decodes, `NULL` for those not read: stream, correlation,
/// demangled name and graph ids without `details` (the graph node with `graph_nodes` too).
pub(super) fn kernel_columns(details: bool, graph_nodes: bool) -> [&'static str; 11] {
    kernel_columns_with_stream(details, details, graph_nodes)
}

/// [`kernel_columns`], the stream read whether or not the other details are (`stream`).
pub(super) fn kernel_columns_with_stream(
    stream: bool,
    details: bool,
    graph_nodes: bool,
) -> [&'static str; 11] {
    [
        "rowid",
        "start",
        "end",
        "deviceId",
        "globalPid",
        "shortName",
        read_if("streamId", stream),
        read_if("correlationId", details),
        read_if("demangledName", details),
        read_if("graphNodeId", details || graph_nodes),
        read_if("graphId", details),
    ]
}

/// The columns of `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` that [`kernel_row`] decodes as a graph replay:
/// no name, no graph node (CUPTI's `CUpti_ActivityGraphTrace2`; see `docs/gpu-work.md`).
pub(super) const REPLAY_COLUMNS: [&str; 11] = [
    "rowid",
    "start",
    "end",
    "deviceId",
    "globalPid",
    "NULL",
    "streamId",
    "correlationId",
    "NULL",
    "NULL",
    "graphId",
];

/// Which columns of a `SELECT` hold a value: those selected as the literal `NULL` (a column
/// not read, `only` and `read_if`) are never asked of SQLite. Why: a column asked costs a call
/// into SQLite whether it holds a value or not (three through rusqlite, one through
/// [`super::cells::Cursor`]); a scan that keeps no rows reads 4 of the kernel table's 11 columns.
#[derive(Debug, Clone, Copy)]
pub(super) struct Selected<const N: usize>([bool; N]);

impl<const N: usize> Selected<N> {
    /// Every column asked for (what a caller whose `SELECT` varies per row source uses).
    pub(super) const ALL: Selected<N> = Selected([true; N]);

    /// The columns of `r`'s statement not selected as `NULL` (the literal's column name); a
    /// column past its last is not selected either (`tables::select_decoded` leaves out the
    /// `NULL`s that end a list).
    pub(super) fn of(r: &impl Cells) -> Selected<N> {
        Selected(std::array::from_fn(|i| {
            r.column_name(i).is_some_and(|name| name != "NULL")
        }))
    }

    /// The statement's columns, learnt from its first row and kept by `memo`.
    #[inline]
    pub(super) fn remembered<'m>(memo: &'m mut Option<Selected<N>>, r: &impl Cells) -> &'m Self {
        match memo {
            Some(selected) => selected,
            None => memo.insert(Selected::of(r)),
        }
    }

    /// Column `i` of `r`, NULL without asking when it was selected as `NULL`.
    #[inline]
    fn get<'r>(&self, r: &'r impl Cells, i: usize) -> rusqlite::Result<ValueRef<'r>> {
        match self.0.get(i) {
            Some(false) => Ok(ValueRef::Null),
            _ => r.get_ref(i),
        }
    }
}

/// A kernel selected as [`kernel_columns`], and its `globalPid` (`process` is the caller's to
/// set); the columns `selected` as `NULL` read as NULL.
pub(super) fn kernel_row(
    r: &impl Cells,
    strings: &Strings,
    selected: &Selected<11>,
) -> rusqlite::Result<(KernelRow, i64)> {
    let name = |v: ValueRef<'_>| opt_int(v).map_or(NO_NAME, |id| strings.resolve(id));
    let get = |i: usize| selected.get(r, i);
    let row = KernelRow {
        row: int(get(0)?, 0),
        start: time(get(1)?)?,
        end: time(get(2)?)?,
        device: small(get(3)?),
        process: 0,
        short_name: name(get(5)?),
        stream: small(get(6)?),
        correlation: small(get(7)?),
        demangled_name: name(get(8)?),
        graph_node: opt_int(get(9)?).map_or(0, |g| g as u64),
        graph_id: opt_int(get(10)?).map_or(0, |g| g as u32),
        work: crate::model::Work::Kernel,
        bytes: 0,
    };
    Ok((row, int(get(4)?, 0)))
}

/// The columns [`call_row`] decodes (`correlationId` only with `details`).
pub(super) fn call_columns(details: bool) -> [&'static str; 6] {
    [
        "rowid",
        "start",
        "end",
        "globalTid",
        "nameId",
        read_if("correlationId", details),
    ]
}

/// A CUDA API call selected as [`call_columns`], and its `globalTid` (`thread` and `process`
/// are the caller's to set).
pub(super) fn call_row(
    r: &impl Cells,
    strings: &Strings,
    selected: &Selected<6>,
) -> rusqlite::Result<(CallRow, i64)> {
    let get = |i: usize| selected.get(r, i);
    let row = CallRow {
        row: int(get(0)?, 0),
        start: time(get(1)?)?,
        end: time(get(2)?)?,
        thread: 0,
        process: 0,
        correlation: small(get(5)?),
        name: opt_int(get(4)?).map_or(NO_NAME, |id| strings.resolve(id)),
    };
    Ok((row, int(get(3)?, 0)))
}

/// The columns [`nvtx_row`] decodes (`domainId` only with `details`); the names are read from
/// [`NVTX_TEXT`] and [`NVTX_TEXT_ID`].
pub(super) fn nvtx_columns(details: bool) -> [&'static str; 8] {
    [
        "rowid",
        "start",
        "end",
        "globalTid",
        "eventType",
        read_if("domainId", details),
        "text",
        "textId",
    ]
}
/// Where [`nvtx_columns`] puts `end`, `globalTid`, `eventType`, `domainId`, `text` and `textId`.
pub(super) const NVTX_END: usize = 2;
pub(super) const NVTX_THREAD: usize = 3;
pub(super) const NVTX_TYPE: usize = 4;
pub(super) const NVTX_DOMAIN: usize = 5;
pub(super) const NVTX_TEXT: usize = 6;
pub(super) const NVTX_TEXT_ID: usize = 7;

/// An NVTX range selected as [`nvtx_columns`] that ends at `end` on `thread`, not named yet
/// (`nvtx_names` names it).
pub(super) fn nvtx_row(r: &impl Cells, end: Ns, thread: ThreadIdx) -> rusqlite::Result<NvtxRow> {
    let (start, event_type) = (time(r.get_ref(1)?)?, int(r.get_ref(NVTX_TYPE)?, 0));
    nvtx_row_read(r, ((start, end), event_type, true), thread)
}

/// [`nvtx_row`] of a row whose times and `eventType` were read already; `domainId` is asked of
/// SQLite only when `domain` says it was selected.
#[inline]
pub(super) fn nvtx_row_read(
    r: &impl Cells,
    ((start, end), event_type, domain): ((Ns, Ns), i64, bool),
    thread: ThreadIdx,
) -> rusqlite::Result<NvtxRow> {
    Ok(NvtxRow {
        row: int(r.get_ref(0)?, 0),
        start,
        end,
        thread,
        event_type: u8::try_from(event_type).unwrap_or(0),
        domain: match domain {
            true => small(r.get_ref(NVTX_DOMAIN)?),
            false => 0,
        },
        name: NO_NAME,
        text_id_name: NO_NAME,
    })
}

/// The columns [`memop_row`] decodes from `table` (memset has no copy kind, and one memory
/// kind for both ends).
pub(super) fn memop_columns(table: &str) -> [&'static str; 11] {
    let [kind, src, dst] = if table == MEMCPY_TABLE {
        ["copyKind", "srcKind", "dstKind"]
    } else {
        ["NULL", "memKind", "memKind"]
    };
    [
        "rowid",
        "start",
        "end",
        "deviceId",
        "streamId",
        "globalPid",
        "correlationId",
        "bytes",
        kind,
        src,
        dst,
    ]
}

/// A copy or memset selected as [`memop_columns`], and its `globalPid`.
pub(super) fn memop_row(r: &impl Cells) -> rusqlite::Result<(MemOpRow, i64)> {
    let kind = |v: ValueRef<'_>| opt_int(v).map_or(255, |k| u8::try_from(k).unwrap_or(255));
    let op = device_op(r)?;
    let row = MemOpRow {
        row: op.row,
        start: op.start,
        end: op.end,
        device: op.device,
        stream: op.stream,
        process: 0,
        correlation: op.correlation,
        bytes: u64::try_from(int(r.get_ref(7)?, 0))
            .ok()
            .filter(|&b| b <= MAX_BYTES)
            .unwrap_or(0),
        kind: kind(r.get_ref(8)?),
        src_mem: kind(r.get_ref(9)?),
        dst_mem: kind(r.get_ref(10)?),
    };
    Ok((row, op.global_pid))
}

/// The columns a copy, memset or synchronization row opens with: `rowid`, `start`, `end`,
/// `deviceId`, `streamId`, `globalPid`, `correlationId`.
struct DeviceOp {
    row: i64,
    start: i64,
    end: i64,
    device: u32,
    stream: u32,
    global_pid: i64,
    correlation: u32,
}

fn device_op(r: &impl Cells) -> rusqlite::Result<DeviceOp> {
    Ok(DeviceOp {
        row: int(r.get_ref(0)?, 0),
        start: time(r.get_ref(1)?)?,
        end: time(r.get_ref(2)?)?,
        device: small(r.get_ref(3)?),
        stream: small(r.get_ref(4)?),
        global_pid: int(r.get_ref(5)?, 0),
        correlation: small(r.get_ref(6)?),
    })
}

/// The columns [`sync_row`] decodes.
pub(super) const SYNC_COLUMNS: [&str; 8] = [
    "rowid",
    "start",
    "end",
    "deviceId",
    "streamId",
    "globalPid",
    "correlationId",
    "syncType",
];

/// A synchronization selected as [`SYNC_COLUMNS`], and its `globalPid`.
pub(super) fn sync_row(r: &impl Cells) -> rusqlite::Result<(SyncRow, i64)> {
    let op = device_op(r)?;
    let row = SyncRow {
        row: op.row,
        start: op.start,
        end: op.end,
        device: op.device,
        stream: op.stream,
        process: 0,
        correlation: op.correlation,
        sync_type: u8::try_from(int(r.get_ref(7)?, 0)).unwrap_or(255),
    };
    Ok((row, op.global_pid))
}
