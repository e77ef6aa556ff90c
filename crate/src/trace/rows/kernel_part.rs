//! The kernel table read apart: natively on a thread while the host side is read, in the page on
//! a reader worker whose part crosses as bytes.

use std::cell::RefCell;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::super::decode::{kernel_columns, kernel_columns_with_stream, only};
use super::super::load::{LoadOptions, Progress, ProgressFn, reads_graph_nodes};
use super::super::row_cache::{BLOCK_BYTES, Budget, CacheShape, Cached, ScanFill, TableCache};
use super::super::runs::{Keyed, SortedRuns};
use super::super::schema::Schema;
use super::super::tables::Loader;
use super::gpu_work::{Merged, OtherWork, other_rows_room};
use super::{MAX_FILE_RUNS, SCAN_COLUMNS, kernel_read_columns};
use crate::error::Result;
use crate::model::packed::Base;
use crate::model::rows::KernelRow;
use crate::model::{CoverageNote, KERNEL_TABLE, Ns, Processes, Strings, Trace};

/// Where the scan reads the kernel table (the largest): on its own connection after the host
/// side, or natively on a second connection to the file, in a thread of its own meanwhile.
#[derive(Clone, Copy)]
pub(super) enum KernelReader<'p> {
    After,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Thread(&'p std::path::Path),
}

/// The scan of the kernel table: where its sorted runs lie and, if `keep`, its rows as far as
/// the budget goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct KernelScan {
    pub(super) columns: [&'static str; 11],
    pub(super) keep: bool,
}

impl KernelScan {
    /// The columns read: every column a pass reads when the rows are kept, else the scan's.
    pub(super) fn new(opts: LoadOptions, meta: &Trace, keep: bool) -> KernelScan {
        let columns = match keep {
            true => kernel_read_columns(opts.event_details, meta),
            false => only(kernel_columns(false, false), &SCAN_COLUMNS),
        };
        KernelScan { columns, keep }
    }

    /// [`KernelScan::new`] for a scan that folds the kernels as it reads them: every column a
    /// pass reads.
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn folding(opts: LoadOptions, meta: &Trace, keep: bool) -> KernelScan {
        KernelScan {
            columns: kernel_read_columns(opts.event_details, meta),
            keep,
        }
    }

    /// The scan of a reader that keeps no kernel and sweeps each as it reads it: what the
    /// verdict's sweep reads of a row (the device, the process, the name, the graph node where
    /// the trace names a graph launch) and the stream, which the timeline's lanes riding on
    /// that sweep need (`crate::riders`); not only the scan's columns.
    pub(super) fn sweeping(meta: &Trace) -> KernelScan {
        let graph_nodes = reads_graph_nodes(&meta.meta, &meta.strings);
        KernelScan {
            columns: kernel_columns_with_stream(true, false, graph_nodes),
            keep: false,
        }
    }

    /// Reads the table into a [`KernelPart`], its processes numbered after `listed` (those
    /// `ThreadNames` lists: every reader numbers them alike), each row handed to `fold` too.
    pub(super) fn read(
        &self,
        ctx: &mut Loader<'_, '_>,
        (schema, strings): (&Schema, &Strings),
        listed: Processes,
        (max_runs, budget): (usize, &Budget),
        fold: &mut dyn FnMut(&KernelRow),
    ) -> Result<KernelPart> {
        let mut part = Trace {
            processes: listed,
            ..Trace::default()
        };
        let mut runs = SortedRuns::new(max_runs);
        let mut cache = TableCache::default();
        let mut fill = ScanFill::new(&mut cache, budget, self.keep);
        ctx.read_kernels(schema, strings, &mut part, &self.columns, &mut |k| {
            runs.push(k.row, k.key());
            fill.push(&k);
            fold(&k);
        })?;
        fill.finish(runs.count() == 1);
        Ok(KernelPart {
            processes: part.processes,
            present: part.present.kernels,
            coverage: part.coverage,
            runs,
            cache,
            own_budget: false,
        })
    }
}

/// The kernel table as a reader of its own scanned it: natively a thread, in the page a
/// worker of its own (its wasm instance apart, so the part crosses as bytes:
/// [`KernelPart::into_bytes`]). The scan joins it to the host side ([`HostScan::finish`](super::HostScan::finish)).
#[derive(Debug)]
pub struct KernelPart {
    /// The listed processes, then those the kernels met, in their order.
    pub(super) processes: Processes,
    pub(super) present: bool,
    pub(super) coverage: Vec<CoverageNote>,
    pub(super) runs: SortedRuns<(Ns, Ns)>,
    pub(super) cache: TableCache,
    /// The kept rows were counted against a budget of the reader's own (another instance's):
    /// the join takes them from the scan's, as far as it goes.
    pub(super) own_budget: bool,
}

/// What of a [`KernelPart`] is not its kept rows' blocks, as it crosses between instances.
#[derive(Serialize, Deserialize)]
struct PartShape {
    /// `globalPid` and name of each process, in the part's numbering.
    processes: Vec<(i64, String)>,
    present: bool,
    coverage: Vec<CoverageNote>,
    runs: SortedRuns<(Ns, Ns)>,
    cache: CacheShape,
}

impl KernelPart {
    /// Scans the kernel table of the export open in `conn` under `opts`, keeping its rows up
    /// to `bytes`, as [`FileScan::keeping_rows`](super::FileScan::keeping_rows) would: what the page's reader worker does
    /// while its analysis worker reads the host side ([`FileScan::host_side`](super::FileScan::host_side)).
    pub fn read(
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        bytes: usize,
        progress: ProgressFn<'_>,
    ) -> Result<KernelPart> {
        let mut scan = ReaderScan::begin(conn, path, (opts, bytes), &mut *progress, false)?;
        scan.read_kernels(conn, path, progress, None)?;
        Ok(scan.into_part())
    }

    /// The part as bytes: its shape (postcard) and its kept rows' blocks, each as it is.
    pub fn into_bytes(self) -> Result<(Vec<u8>, Vec<Vec<u8>>)> {
        let (cache, blocks) = self.cache.into_parts();
        let p = &self.processes;
        let shape = PartShape {
            processes: (0..p.len())
                .map(|i| (p.global_pid[i], p.name[i].clone()))
                .collect(),
            present: self.present,
            coverage: self.coverage,
            runs: self.runs,
            cache,
        };
        let bytes = postcard::to_allocvec(&shape).map_err(|e| crate::error::Error::Internal {
            detail: format!("the kernel table's scan could not be written: {e}"),
        })?;
        Ok((bytes, blocks))
    }

    /// The part [`KernelPart::into_bytes`] wrote, from its shape and its first `blocks` or all
    /// of them: the receiver copies only the blocks its budget keeps
    /// ([`HostScan::kernel_blocks_kept`](super::HostScan::kernel_blocks_kept)). Its kept rows
    /// are checked as every kept row is, when a pass reads them back.
    pub fn from_bytes(shape: &[u8], blocks: Vec<Vec<u8>>) -> Result<KernelPart> {
        let shape: PartShape =
            postcard::from_bytes(shape).map_err(|e| crate::error::Error::Internal {
                detail: format!("the kernel table's scan came back unreadable: {e}"),
            })?;
        let mut processes = Processes::default();
        for (gpid, name) in shape.processes {
            let p = processes.intern(gpid) as usize;
            processes.name[p] = name;
        }
        Ok(KernelPart {
            processes,
            present: shape.present,
            coverage: shape.coverage,
            runs: shape.runs,
            // Charged to the scan's budget on join.
            cache: TableCache::from_parts(shape.cache, blocks)?,
            own_budget: true,
        })
    }
}

/// Kernel rows a slice of [`ReaderScan::read_slice`] reads: between two, the page's reader
/// worker hears its messages (the kernel sweep's inputs among them).
pub const SLICE_ROWS: u64 = 1 << 18;

/// How much more than the pace so far the next slice's rows may take of the budget
/// ([`ReaderScan::waits_for_sweep`]): the rows' packed size varies with their names and gaps.
const KEEP_MARGIN: f64 = 1.5;

/// What a kept kernel takes before any is kept (`model::packed`: 12 to 16 bytes a row of a real
/// export).
const PACKED_KERNEL_BYTES: f64 = 16.0;

/// The page's reader worker's scan of the kernel table ([`KernelPart::read`]) in steps, so that
/// it may sweep the GPU work for the verdict with the inputs the analysis worker hands on once
/// its NVTX ranges are read: its catalog (and the other GPU work, or once the inputs came:
/// [`ReaderScan::read_other_work`]) first ([`ReaderScan::begin`]), then the kernel table in
/// slices ([`ReaderScan::read_slice`]). Once the inputs come, the sweep takes the kernels kept
/// so far and then each as it is read
/// ([`ReaderScan::start_sweep`]); after the last slice it takes the rest of the other work
/// ([`ReaderScan::finish`]).
pub struct ReaderScan {
    kernels: KernelScan,
    /// What it reads once a sweep began if it keeps no kernel ([`KernelScan::sweeping`]):
    /// until then, only the scan's columns (at 10 GB the sweep never comes).
    sweeping: KernelScan,
    /// The catalog it reads with: its strings keep no text but those that decide its columns.
    schema: Schema,
    strings: Strings,
    /// The processes `ThreadNames` lists, numbered alike on every reader.
    listed: Processes,
    budget: Budget,
    /// Graph replays, copies and memsets merged in start order, while they fit (`None`: not
    /// read, or more than fit), and the budget's bytes they hold.
    others: Option<OtherWork>,
    room: usize,
    /// The other GPU work is still to read ([`ReaderScan::read_other_work`]): the most rows it
    /// may hold whole, its room (`room`) taken from the budget at the start, as when it is read
    /// then, so that the kernels kept meanwhile leave it.
    others_to_read: Option<usize>,
    /// The kernel table as read so far.
    read: Slices,
    /// The sweep's merge, once it began; `None` inside: it gave up.
    feed: Option<Option<Feed>>,
    slice_rows: u64,
}

/// What the slices of the kernel table read so far left.
struct Slices {
    part: Trace,
    runs: SortedRuns<(Ns, Ns)>,
    cache: TableCache,
    fill: (Base, bool),
    /// The last `rowid` read; `None` before the first slice.
    after: Option<i64>,
    /// The table's rows as the first slice estimated them, for every slice's progress: asking
    /// again descends the table's b-tree to its last row each slice, and in the page each page
    /// that descent reads costs a random read of the file.
    estimate: Option<u64>,
    /// The rows read by the slices before: each slice's progress counts on from them, so it
    /// says the rows read of the whole table, as the estimate it is counted against does.
    read: u64,
    done: bool,
}

impl ReaderScan {
    /// Reads the catalog; the kernel table is [`ReaderScan::read_slice`]'s. With `may_sweep`,
    /// the room of the other GPU work a sweep merges with the kernels is taken from the budget
    /// now, the work read when the sweep begins ([`ReaderScan::read_other_work`]).
    pub fn begin(
        conn: &Connection,
        path: &str,
        (opts, bytes): (LoadOptions, usize),
        progress: ProgressFn<'_>,
        may_sweep: bool,
    ) -> Result<ReaderScan> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        // Only the values that decide its columns: it names kernels by id.
        let (schema, meta) = ctx.begin_keeping(crate::trace::load::names_a_graph_launch)?;
        let budget = Budget::new(bytes);
        let kernels = KernelScan::new(opts, &meta, bytes > 0);
        let sweeping = KernelScan::sweeping(&meta);
        let read = Slices {
            part: Trace {
                processes: meta.processes.clone(),
                ..Trace::default()
            },
            runs: SortedRuns::new(MAX_FILE_RUNS),
            cache: TableCache::default(),
            fill: (Base::default(), kernels.keep),
            after: None,
            estimate: None,
            read: 0,
            done: false,
        };
        let mut scan = ReaderScan {
            kernels,
            sweeping,
            schema,
            strings: meta.strings,
            listed: meta.processes,
            budget,
            others: None,
            room: 0,
            others_to_read: None,
            read,
            feed: None,
            slice_rows: SLICE_ROWS,
        };
        if may_sweep && opts.memory_ops {
            let (room, most) = other_rows_room(&scan.budget);
            scan.room = room;
            scan.others_to_read = Some(most);
        }
        Ok(scan)
    }

    /// Reads the other GPU work [`ReaderScan::begin`] made room for, which the sweep merges
    /// with the kernels (none if its options read no copies or memsets): the page's reader reads
    /// it once the sweep's inputs came, not holding it for a sweep that may not come.
    pub fn read_other_work(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
    ) -> Result<()> {
        let Some(most) = self.others_to_read.take() else {
            return Ok(());
        };
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        let catalog = (&self.schema, &mut self.strings);
        let others = super::gpu_work::other_work(&mut ctx, catalog, &self.listed, most)?;
        let listed = self.listed.len();
        self.others = others.filter(|o| o.processes_below(listed));
        Ok(())
    }

    /// The scan reading `rows` kernels a slice instead of `SLICE_ROWS` (tests).
    pub fn with_slice_rows(mut self, rows: u64) -> ReaderScan {
        self.slice_rows = rows.max(1);
        self
    }

    /// Reads the next `SLICE_ROWS` kernels, each handed to `fold` once the sweep began
    /// ([`ReaderScan::start_sweep`], the same fold); `Ok(true)` once the table is read.
    pub fn read_slice(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        fold: Option<WorkFold<'_>>,
    ) -> Result<bool> {
        let Slices {
            part,
            runs,
            cache,
            fill,
            after,
            estimate,
            read: before,
            done,
        } = &mut self.read;
        if *done {
            return Ok(true);
        }
        let read_before = *before;
        let mut counted = |p: Progress| {
            progress(Progress {
                done: p.done + read_before,
                ..p
            })
        };
        let mut ctx = Loader {
            conn,
            path,
            progress: &mut counted,
        };
        let mut feed = match (&mut self.feed, fold) {
            (Some(Some(feed)), Some(fold)) => Some((feed, fold)),
            _ => None,
        };
        let mut filler = ScanFill::resume(cache, &self.budget, *fill);
        let (mut rows, mut last) = (0u64, *after);
        let catalog = (&self.schema, &self.strings);
        let total = *estimate.get_or_insert_with(|| ctx.estimate_rows(KERNEL_TABLE));
        let slice = (*after, self.slice_rows, total);
        let read = ctx.read_kernel_slice(catalog, part, &self.kernels.columns, slice, &mut |k| {
            runs.push(k.row, k.key());
            filler.push(&k);
            if let Some((feed, fold)) = &mut feed {
                feed.push(&k, &mut **fold);
            }
            (rows, last) = (rows + 1, Some(k.row));
        });
        *fill = filler.pause();
        read?;
        *after = last;
        *before += rows;
        *done = rows < self.slice_rows;
        Ok(*done)
    }

    /// Whether the next slice, read before the sweep began, would hold kernels the sweep could
    /// not take later: the rows read so far are all kept and in start order, and the budget
    /// would not keep the next slice's at their pace so far (`KEEP_MARGIN` over it), or keeps
    /// none. The page's reader then waits for the sweep's inputs: reading on would cost a
    /// verdict pass over the kernels after the join, or reading them twice.
    pub fn waits_for_sweep(&self) -> bool {
        let read = &self.read;
        let sweepable = self.feed.is_none()
            && !read.done
            && (self.others.is_some() || self.others_to_read.is_some())
            && read.runs.count() <= 1
            && read.cache.rows() == read.runs.rows()
            && !read.cache.closed();
        if !sweepable {
            return false;
        }
        if !read.fill.1 {
            return true;
        }
        let per_row = match read.cache.rows() {
            0 => PACKED_KERNEL_BYTES,
            rows => read.cache.bytes() as f64 / rows as f64,
        };
        let next = (per_row * self.slice_rows as f64 * KEEP_MARGIN).max(BLOCK_BYTES as f64);
        (self.budget.left() as f64) < next
    }

    /// Whether the reader keeps every kernel it read and, at the pace it kept them, has room
    /// for the rest of the table (as the first slice's estimate counts it): a pass after the
    /// join then reads the kernels from memory, not from the file.
    pub fn keeps_every_kernel(&self) -> bool {
        let read = &self.read;
        if !read.fill.1 || read.cache.closed() || read.cache.rows() != read.runs.rows() {
            return false;
        }
        let Some(estimate) = read.estimate else {
            return true;
        };
        let per_row = match read.cache.rows() {
            0 => PACKED_KERNEL_BYTES,
            rows => read.cache.bytes() as f64 / rows as f64,
        };
        let rest = estimate.saturating_sub(read.read) as f64 * per_row;
        rest <= self.budget.left() as f64
    }

    /// Begins the sweep of the GPU work in start order, as `EventRows::gpu_work` hands it out
    /// (`all_work`; else the kernels alone, as `EventRows::kernels`): `fold` takes the kernels
    /// kept so far, merged with the other work; the slices after hand it theirs. `Ok(false)`
    /// when the rows cannot give it as a pass would (a kernel read so far not kept, the other
    /// work not to be had) or `fold` refused.
    pub fn start_sweep(&mut self, all_work: bool, fold: WorkFold<'_>) -> Result<bool> {
        let others = match all_work {
            true => self.others.take(),
            false => Some(OtherWork::none()),
        };
        let read = &self.read;
        let kept_so_far = read.cache.rows() == read.runs.rows() && !read.cache.closed();
        let Some(others) = others.filter(|_| kept_so_far) else {
            self.feed = Some(None);
            return Ok(false);
        };
        // Every kernel read so far is kept, with a pass's columns: the rest are swept as read.
        if !self.kernels.keep {
            self.kernels = self.sweeping;
        }
        let mut feed = Feed::new(others, self.listed.len());
        let cache = RefCell::new(std::mem::take(&mut self.read.cache));
        let none = |_| std::iter::empty::<Result<KernelRow>>();
        let mut replayed = Ok(());
        for k in Cached::new(&cache, &self.budget, true, none).kept_only() {
            match k {
                Ok(k) if feed.push(&k, &mut *fold) => {}
                Ok(_) => break,
                Err(e) => {
                    replayed = Err(e);
                    break;
                }
            }
        }
        self.read.cache = cache.into_inner();
        replayed?;
        let alive = feed.alive;
        self.feed = Some(alive.then_some(feed));
        Ok(alive)
    }

    /// After the last slice: whether the sweep took every row (the rest of the other work
    /// handed to `fold`).
    pub fn finish(&mut self, fold: Option<WorkFold<'_>>) -> bool {
        let feed = self.feed.take().flatten();
        match (feed, fold) {
            (Some(feed), Some(fold)) => self.read.done && feed.finish(fold),
            _ => false,
        }
    }

    /// Reads the whole kernel table (the slices at once), `fold` sweeping it from the first
    /// row if given: `Ok(true)` when it took every row.
    pub fn read_kernels(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        mut fold: Option<(bool, WorkFold<'_>)>,
    ) -> Result<bool> {
        if let Some((all_work, fold)) = &mut fold {
            self.start_sweep(*all_work, &mut **fold)?;
        }
        let mut sweep = fold.map(|(_, f)| f);
        loop {
            let f: Option<WorkFold<'_>> = match &mut sweep {
                Some(f) => Some(&mut **f),
                None => None,
            };
            if self.read_slice(conn, path, &mut *progress, f)? {
                break;
            }
        }
        Ok(self.finish(sweep))
    }

    /// The part, for the analysis worker (its rows as read so far).
    pub fn into_part(self) -> KernelPart {
        self.budget.give(self.room);
        let Slices {
            part,
            runs,
            mut cache,
            fill,
            ..
        } = self.read;
        ScanFill::resume(&mut cache, &self.budget, fill).finish(runs.count() == 1);
        KernelPart {
            processes: part.processes,
            present: part.present.kernels,
            coverage: part.coverage,
            runs,
            cache,
            own_budget: true,
        }
    }
}

/// A fold of the GPU work in start order: `false` when it gives up.
pub type WorkFold<'f> = &'f mut dyn FnMut(&KernelRow) -> bool;

/// The kernels as they come, merged with the other work, into a fold while every row comes in
/// start order from a process every reader numbers alike.
struct Feed {
    merged: Merged,
    listed: usize,
    last: (Ns, Ns),
    alive: bool,
}

impl Feed {
    fn new(others: OtherWork, listed: usize) -> Feed {
        Feed {
            merged: Merged::new(others),
            listed,
            last: (Ns::MIN, Ns::MIN),
            alive: true,
        }
    }

    /// A kernel in table order; `false` once the fold is void.
    fn push(&mut self, k: &KernelRow, fold: WorkFold<'_>) -> bool {
        let listed = self.listed;
        let mut take = |r: &KernelRow| (r.process as usize) < listed && fold(r);
        self.alive = self.alive && k.key() >= self.last && self.merged.kernel(k, &mut take);
        self.last = k.key();
        self.alive
    }

    /// Whether every row was folded.
    fn finish(self, fold: WorkFold<'_>) -> bool {
        let listed = self.listed;
        self.alive
            && self
                .merged
                .finish(&mut |r: &KernelRow| (r.process as usize) < listed && fold(r))
    }
}
