//! [`FileRows`]: the event tables of a scanned export read in start order, each row decoded by
//! its table's decoder ([`Decode`]) and kept or read back through the scan's row cache.

use super::lanes::{Lanes, RangeReader, Ranged, ReadHere, RowKind};
use super::*;

/// The event tables of an open export, each read in start order from the file as often as an
/// analysis asks, through a buffer of a few thousand rows (a few hundred per sorted run). A
/// failed read ends the iterator and is returned by [`EventRows::check`].
pub struct FileRows<'a> {
    conn: &'a Connection,
    scan: ScanOf<'a>,
    errors: ErrorLatch,
    /// Other readers of the file that decode the kernels and calls not kept (the page's lane
    /// workers, `lanes`).
    lanes: Option<Lanes<'a>>,
}

/// The scan [`FileRows`] reads by: its own, or one the caller holds.
enum ScanOf<'a> {
    Owned(Box<FileScan>),
    Borrowed(&'a FileScan),
}

impl std::ops::Deref for ScanOf<'_> {
    type Target = FileScan;

    fn deref(&self) -> &FileScan {
        match self {
            ScanOf::Owned(scan) => scan,
            ScanOf::Borrowed(scan) => scan,
        }
    }
}

impl<'a> FileRows<'a> {
    /// Scans `conn` ([`FileScan::new`]) and reads its rows.
    pub fn open(
        conn: &'a Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
    ) -> Result<FileRows<'a>> {
        let scan = FileScan::new(conn, path, opts, progress)?;
        Ok(FileRows {
            conn,
            scan: ScanOf::Owned(Box::new(scan)),
            errors: ErrorLatch::default(),
            lanes: None,
        })
    }

    /// The rows of a file scanned before (`scan` must be of `conn`'s file).
    pub fn over(conn: &'a Connection, scan: &'a FileScan) -> FileRows<'a> {
        FileRows {
            conn,
            scan: ScanOf::Borrowed(scan),
            errors: ErrorLatch::default(),
            lanes: None,
        }
    }

    /// The kernels and calls not kept read by `lanes` in `rowid` ranges, while the caller
    /// folds them, when their catalog numbers the processes and threads as the scan's does.
    pub fn reading_ranges(self, lanes: &'a dyn RangeReader) -> FileRows<'a> {
        let meta = &self.scan.meta;
        let numbered = (meta.processes.len(), meta.threads.len());
        let lanes = (lanes.numbered() == Some(numbered)).then(|| Lanes::new(lanes));
        FileRows { lanes, ..self }
    }

    pub fn scan(&self) -> &FileScan {
        &self.scan
    }

    /// `table`'s rows in start order (merged from its sorted runs, or read in slices when it
    /// is in too many, `runs::Slices`), decoded by `T`'s decoder; empty when the table is not
    /// read. Natively, of a file scanned with `of_file`, the rows past the kept ones are read
    /// and decoded on threads of their own while the caller folds them (`read_ahead`).
    fn rows<T: Decode>(&'a self, table: &'a Table<T::Key>) -> Rows<'a, T> {
        let Some(sql) = &table.sql else {
            return Box::new(std::iter::empty());
        };
        let scan: &'a FileScan = &self.scan;
        let conn = self.conn;
        let runs = &table.runs;
        let lanes = self.lanes.as_ref().filter(|l| l.usable());
        let from_file = move |after: Option<i64>| -> FileRowsIter<'a, T> {
            let from = after.map_or(i64::MIN, |row| row.saturating_add(1));
            #[cfg(not(target_arch = "wasm32"))]
            if let Some(file) = &scan.file {
                return Box::new(read_ahead::spawn(read_ahead::Read {
                    file: file.clone(),
                    label: scan.path.clone(),
                    table: table.name,
                    sql: sql.clone(),
                    runs: runs.clone(),
                    from,
                    meta: Arc::clone(&scan.meta),
                }));
            }
            let path = scan.path.as_str();
            let mut decode = T::decoder(&scan.meta);
            let read = move |first: i64, last: i64, limit: usize, out: &mut VecDeque<T>| {
                read_chunk(conn, sql, (first, last, limit), out, &mut decode)
                    .map_err(|e| sqlite_error(path, table.name, &e))
            };
            if let (Some(lanes), Some(kind), Some((first, last))) = (lanes, T::LANE, runs.one_run())
            {
                let ask = (kind, table.name, sql.clone());
                let mut read = read;
                let here: ReadHere<'a, T> =
                    Box::new(move |low, high, out| read(low, high, usize::MAX, out));
                let range = (first.max(from), last);
                return Box::new(Ranged::<T>::new(lanes, ask, range, here));
            }
            Box::new(runs.merge_from(from, read))
        };
        let budget = &scan.cache_budget;
        let one_run = runs.count() == 1;
        Box::new(Latched {
            rows: Cached::new(&table.cache, budget, one_run, from_file),
            errors: &self.errors,
            failed: false,
            left: runs.rows(),
            table: table.name,
            path: &scan.path,
        })
    }
}

/// A table's rows read from the file, in start order.
type FileRowsIter<'a, T> = Box<dyn Iterator<Item = Result<T>> + 'a>;

/// How a row type is decoded from its table's `SELECT`, over the scan's catalog (names,
/// processes, threads): one decoder per row type, which a reader thread builds for itself.
pub(super) trait Decode:
    Keyed<Key: Send + Sync + 'static> + Packable + Send + 'static
{
    /// What lanes read it as (`lanes`); `None`: only the pass's own reader.
    const LANE: Option<RowKind> = None;
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_;
}

impl Decode for KernelRow {
    const LANE: Option<RowKind> = Some(RowKind::Kernel);
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_ {
        let mut process = process_of(&meta.processes);
        let mut selected = None;
        move |r| {
            let selected = Selected::remembered(&mut selected, r);
            let (mut row, gpid) = kernel_row(r, &meta.strings, selected)?;
            row.process = process.get(gpid);
            Ok(row)
        }
    }
}

impl Decode for CallRow {
    const LANE: Option<RowKind> = Some(RowKind::Call);
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_ {
        let mut selected = None;
        move |r| {
            let selected = Selected::remembered(&mut selected, r);
            let (mut call, gtid) = call_row(r, &meta.strings, selected)?;
            (call.thread, call.process) = thread_of(&meta.threads, gtid);
            Ok(call)
        }
    }
}

impl Decode for NvtxRow {
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_ {
        move |r| {
            let (thread, _) = thread_of(&meta.threads, int(r.get_ref(NVTX_THREAD)?, 0));
            let mut row = nvtx_row(r, time(r.get_ref(NVTX_END)?)?, thread)?;
            let text = inline_text(r.get_ref(NVTX_TEXT)?);
            let text_id = opt_int(r.get_ref(NVTX_TEXT_ID)?);
            name_row_again(&mut row, &meta.strings, text.as_deref(), text_id);
            Ok(row)
        }
    }
}

impl Decode for MemOpRow {
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_ {
        let mut process = process_of(&meta.processes);
        move |r| {
            let (mut op, gpid) = memop_row(r)?;
            op.process = process.get(gpid);
            Ok(op)
        }
    }
}

impl Decode for SyncRow {
    fn decoder(meta: &Trace) -> impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<Self> + '_ {
        let mut process = process_of(&meta.processes);
        move |r| {
            let (mut sync, gpid) = sync_row(r)?;
            sync.process = process.get(gpid);
            Ok(sync)
        }
    }
}

/// The process of a `globalPid` as the scan interned it (0 if it did not).
fn process_of(processes: &Processes) -> Remembered<ProcessIdx, impl FnMut(i64) -> ProcessIdx> {
    Remembered::new(|gpid| processes.find(gpid).unwrap_or(0))
}

impl EventRows for FileRows<'_> {
    fn meta(&self) -> &Trace {
        &self.scan.meta
    }

    /// As a whole load's (`EventRows::columns` of its `Trace`): a column is loaded with the event details, and
    /// an empty table holds every column.
    fn columns(&self) -> Columns {
        let scan = &self.scan;
        let held = |rows: u64| scan.details || rows == 0;
        Columns {
            kernel_streams: held(scan.kernels.rows()),
            kernel_correlations: held(scan.kernels.rows()),
            call_correlations: held(scan.calls.rows()),
        }
    }

    fn kernels(&self) -> Rows<'_, KernelRow> {
        self.rows(&self.scan.kernels)
    }

    fn replays(&self) -> Rows<'_, KernelRow> {
        let name = self
            .scan
            .meta
            .strings
            .find_text(REPLAY_NAME)
            .unwrap_or(NO_NAME);
        Box::new(
            self.rows::<KernelRow>(&self.scan.replays)
                .map(move |mut row| {
                    row.work = Work::Replay;
                    row.short_name = name;
                    row.demangled_name = name;
                    row
                }),
        )
    }

    fn calls(&self) -> Rows<'_, CallRow> {
        self.rows(&self.scan.calls)
    }

    fn ranges(&self) -> Rows<'_, NvtxRow> {
        self.rows(&self.scan.ranges)
    }

    fn memcpy(&self) -> Rows<'_, MemOpRow> {
        self.rows(&self.scan.memcpy)
    }

    fn memset(&self) -> Rows<'_, MemOpRow> {
        self.rows(&self.scan.memset)
    }

    fn syncs(&self) -> Rows<'_, SyncRow> {
        self.rows(&self.scan.syncs)
    }

    fn check(&self) -> Result<()> {
        self.errors.take()
    }
}
