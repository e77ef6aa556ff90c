//! A one-shot view folded while the scan reads ([`FileScan::of_file_folding`]): the NVTX
//! ranges and then the CUDA API calls on the host side as they are read, the GPU work on a
//! thread beside the one that reads the kernel table, so a command whose passes read each
//! table once (`detect`) reads every table once, and keeps no event row.
//!
//! The rows a fold gets are those a pass would hand out, in the pass's order: a table's rows
//! in table order when that is start order (ties in table order, as merged runs give them),
//! the GPU work merged as [`EventRows::gpu_work`](crate::model::rows::EventRows::gpu_work)
//! merges it. When the file's rows come otherwise (out of start order, a process no
//! `ThreadNames` row lists, whose number the join would change, more copies, memsets and graph
//! replays than [`MAX_OTHER_ROWS`]), the fold is dropped and the caller runs its passes
//! instead, which read the rows from the file.
//!
//! [`FileScan::of_file_folding`]: super::FileScan::of_file_folding

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::super::load::LoadOptions;
use super::super::runs::Keyed;
use super::super::tables::Loader;
use super::gpu_work::{Merged, OtherWork, other_rows_room, other_work};
use super::kernel_part::{KernelPart, KernelScan};
use super::range_fold::InOrder;
use super::{FileScan, HostScan, KernelJob, MAX_FILE_RUNS, RowBudget};
use crate::error::Result;
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{Ns, NvtxRow, Strings, Threads, Trace};

/// A view folded while the scan reads: its host side.
pub trait ScanFold {
    /// Its GPU side, folded on the thread that reads the kernel table.
    type Gpu: GpuFold + Send;
    /// An NVTX range, in start order (ties in table order), as a pass over the ranges hands
    /// it out; `strings` and `threads` as the scan has them so far. `false`: the fold gives
    /// up (the caller's passes will run).
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool;
    /// After the last range: the GPU side, set up from what the ranges gave (`None`: the
    /// fold gives up).
    fn gpu(&mut self, meta: &Trace) -> Option<Self::Gpu>;
    /// A CUDA API call as the scan hands it on (the rows a pass over the calls hands out), in
    /// start order, after the GPU side was set up; `gpu` says how far the kernel table's
    /// reader has come. `false`: the fold of the calls gives up.
    fn call(&mut self, row: &CallRow, gpu: &GpuProgress) -> bool;
    /// After the last call: whether every call was handed on in start order (else the fold
    /// of the calls is void: the caller's pass over them will run).
    fn calls_read(&mut self, complete: bool);
}

/// The GPU side of a [`ScanFold`].
pub trait GpuFold {
    /// Whether it folds all GPU work (kernels, graph replays, copies and memsets, as
    /// `EventRows::gpu_work`) or the kernels alone (`EventRows::kernels`).
    fn all_work(&self) -> bool;
    /// A row, in start order; `false`: the fold gives up.
    fn push(&mut self, row: &KernelRow) -> bool;
}

/// Kernel rows handed from the reader to the GPU side's thread at a time, and the fewest
/// batches in flight: the reader waits when that many are. Until the host side has read its
/// ranges the GPU side cannot start, and a reader waiting leaves a core idle: at `--scale 1600`
/// (2 M kernels) the ranges take about a third of the reader's time, some 700,000 kernels.
/// 2^20 rows (80 MiB) cover that; 2^18 left the reader waiting 0.1 s there. At `--scale 4000`
/// the ranges take 0.4 s, some 1.4 M kernels: more batches wait, as the budget allows
/// ([`batches_in_flight`]).
const BATCH_ROWS: usize = 4096;
const BATCHES: usize = 256;

/// The batches in flight: [`BATCHES`], or as many as `room` bytes of the row budget hold. A
/// scan that folds keeps no event row, so the budget other scans keep rows in holds the
/// kernels waiting for the ranges instead: the same memory, not more.
fn batches_in_flight(room: usize) -> usize {
    let batch = BATCH_ROWS * std::mem::size_of::<KernelRow>();
    BATCHES.max(room / batch)
}

/// The host side of a fold as the scan reads: the ranges while they come in start order, then
/// the GPU side sent to the kernel table's thread, then the calls while they come in order.
pub(super) struct FoldHook<'f, F: ScanFold> {
    fold: &'f mut F,
    ranges: InOrder,
    calls: InOrder,
    /// Until the ranges are read; dropped then (or with the hook), so a thread waiting on it
    /// hears that nothing comes.
    to_gpu: Option<SyncSender<Option<F::Gpu>>>,
    progress: Arc<GpuProgress>,
}

impl<'f, F: ScanFold> FoldHook<'f, F> {
    /// The hook, what the GPU side's thread waits on, and the reader's progress both share.
    #[allow(clippy::type_complexity)]
    pub(super) fn new(
        fold: &'f mut F,
    ) -> (FoldHook<'f, F>, Receiver<Option<F::Gpu>>, Arc<GpuProgress>) {
        let (to_gpu, gpu_side) = sync_channel(1);
        let progress = Arc::new(GpuProgress::default());
        let hook = FoldHook {
            fold,
            ranges: InOrder::new(),
            calls: InOrder::new(),
            to_gpu: Some(to_gpu),
            progress: Arc::clone(&progress),
        };
        (hook, gpu_side, progress)
    }
}

impl<F: ScanFold> super::ScanHook for FoldHook<'_, F> {
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) {
        if self.ranges.admits(row.key()) {
            self.ranges.alive = self.fold.range(row, strings, threads);
        }
    }

    fn ranges_read(&mut self, meta: &Trace) {
        let gpu = match self.ranges.alive {
            true => self.fold.gpu(meta),
            false => None,
        };
        self.calls.alive = gpu.is_some();
        // A reader that stopped wants no GPU side: nothing to do.
        if let Some(to_gpu) = self.to_gpu.take() {
            let _ = to_gpu.send(gpu);
        }
    }

    fn call(&mut self, row: &CallRow) {
        if self.calls.admits(row.key()) {
            self.calls.alive = self.fold.call(row, &self.progress);
        }
    }

    fn calls_read(&mut self) {
        self.fold.calls_read(self.calls.alive);
    }
}

/// How far the kernel table's reader has come, for a fold of the calls beside it: where the
/// GPU work starts, and an end it reaches at least.
#[derive(Debug)]
pub struct GpuProgress {
    first: Mutex<Firsts>,
    published: Condvar,
    /// The latest end of a kernel read so far.
    end: AtomicI64,
    /// The reader read its last kernel, stopped, or came no further through a whole wait:
    /// nothing more to wait for.
    ended: AtomicBool,
}

/// How long a fold of the calls waits at most, at a time, for the kernel table's reader to come
/// past a call ([`GpuProgress::wait_past`]): a reader that does not come never hangs it.
const PATIENCE: Duration = Duration::from_secs(1);

/// The first start of the kernels and of the other GPU work, once known.
#[derive(Debug, Clone, Copy)]
enum Firsts {
    Waiting,
    Read {
        kernel: Option<Ns>,
        other: Option<Ns>,
    },
    /// The reader stopped, or folds nothing.
    Stopped,
}

impl Default for GpuProgress {
    fn default() -> GpuProgress {
        GpuProgress {
            first: Mutex::new(Firsts::Waiting),
            published: Condvar::new(),
            end: AtomicI64::new(Ns::MIN),
            ended: AtomicBool::new(false),
        }
    }
}

impl GpuProgress {
    /// The first start of the GPU work (every kind, or the kernels alone), waiting for the
    /// reader's first kernel (or its end); `None` when there is none, or it stopped.
    pub fn first_start(&self, all_work: bool) -> Option<Ns> {
        let Ok(mut first) = self.first.lock() else {
            return None;
        };
        while matches!(*first, Firsts::Waiting) {
            first = self.published.wait(first).ok()?;
        }
        match *first {
            Firsts::Read { kernel, other } if all_work => match (kernel, other) {
                (Some(k), Some(o)) => Some(k.min(o)),
                (k, o) => k.or(o),
            },
            Firsts::Read { kernel, .. } => kernel,
            _ => None,
        }
    }

    /// An end the GPU work reaches at least: the latest end of a kernel read so far.
    pub fn ends_at_least(&self) -> Ns {
        self.end.load(Ordering::Relaxed)
    }

    /// Waits, at most a second at a time, until the reader has read a kernel ending past `t` or has
    /// ended: a fold of the calls that runs ahead of the kernels waits for them rather than
    /// hold every call it cannot settle yet.
    /// A wait in which the reader came no further ends every later one at once (it is
    /// stalled, not slow: waiting again would only slow the calls' fold).
    pub fn wait_past(&self, t: Ns) {
        let (since, from) = (Instant::now(), self.ends_at_least());
        while self.ends_at_least() <= t && !self.ended.load(Ordering::Relaxed) {
            if since.elapsed() >= PATIENCE {
                if self.ends_at_least() == from {
                    self.end_reading();
                }
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn end_reading(&self) {
        self.ended.store(true, Ordering::Relaxed);
    }

    fn publish(&self, firsts: Firsts) {
        if let Ok(mut first) = self.first.lock()
            && matches!(*first, Firsts::Waiting)
        {
            *first = firsts;
            self.published.notify_all();
        }
    }

    fn reach(&self, end: Ns) {
        self.end.fetch_max(end, Ordering::Relaxed);
    }
}

/// The GPU side of a fold on the kernel table's reader: the kernels in table order, handed in
/// batches to the thread that folds them ([`fold_gpu`]) while they come in start order.
pub(super) struct GpuFeed<'p> {
    batch: Vec<KernelRow>,
    to_fold: Option<SyncSender<Vec<KernelRow>>>,
    last: (Ns, Ns),
    /// Processes numbered alike on every reader (those `ThreadNames` lists).
    listed: usize,
    progress: &'p GpuProgress,
    /// The first start of the other GPU work, for the progress.
    other: Option<Ns>,
    latest_end: Ns,
}

impl<'p> GpuFeed<'p> {
    /// The feed and the batches it hands on.
    fn new(
        (listed, in_flight): (usize, usize),
        progress: &'p GpuProgress,
        other: Option<Ns>,
    ) -> (GpuFeed<'p>, Receiver<Vec<KernelRow>>) {
        let (to_fold, batches) = sync_channel(in_flight);
        let feed = GpuFeed {
            batch: Vec::with_capacity(BATCH_ROWS),
            to_fold: Some(to_fold),
            last: (Ns::MIN, Ns::MIN),
            listed,
            progress,
            other,
            latest_end: Ns::MIN,
        };
        (feed, batches)
    }

    /// A kernel, in table order.
    pub(super) fn push(&mut self, k: &KernelRow) {
        if self.latest_end == Ns::MIN {
            let (kernel, other) = (Some(k.start), self.other);
            self.progress.publish(Firsts::Read { kernel, other });
        }
        self.latest_end = self.latest_end.max(k.end);
        if self.to_fold.is_none() {
            return;
        }
        if k.key() < self.last || k.process as usize >= self.listed {
            self.to_fold = None;
            return;
        }
        self.last = k.key();
        self.batch.push(*k);
        if self.batch.len() == BATCH_ROWS {
            self.send();
        }
    }

    fn send(&mut self) {
        self.progress.reach(self.latest_end);
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_ROWS));
        // The GPU side gave up, or never came: nothing more to hand on.
        if let Some(to_fold) = &self.to_fold
            && to_fold.send(batch).is_err()
        {
            self.to_fold = None;
        }
    }

    /// Whether every kernel came in order and was handed on.
    pub(super) fn finish(mut self) -> bool {
        self.send();
        self.progress.end_reading();
        let other = self.other;
        self.progress.publish(Firsts::Read {
            kernel: None,
            other,
        });
        self.to_fold.is_some()
    }
}

/// The kernel table's reader's end, whatever ends it: a fold of the calls waiting on its first
/// kernel hears that none comes (if it was not told already).
pub(super) struct ReaderGone(pub(super) Arc<GpuProgress>);

impl Drop for ReaderGone {
    fn drop(&mut self) {
        self.0.end_reading();
        self.0.publish(Firsts::Stopped);
    }
}

/// Folds the GPU work on a thread of its own: waits for the GPU side from the host side, then
/// hands it the other GPU work and the kernels' batches merged as `EventRows::gpu_work` merges
/// them (or the kernels alone). `None` when no GPU side came or it gave up.
pub(super) fn fold_gpu<G: GpuFold>(
    gpu_side: Receiver<Option<G>>,
    others: OtherWork,
    batches: Receiver<Vec<KernelRow>>,
) -> Option<G> {
    let mut fold = gpu_side.recv().ok().flatten()?;
    let others = match fold.all_work() {
        true => others,
        false => OtherWork::none(),
    };
    let mut merged = Merged::new(others);
    let mut push = |k: &KernelRow| fold.push(k);
    for batch in batches {
        for k in &batch {
            if !merged.kernel(k, &mut push) {
                return None;
            }
        }
    }
    merged.finish(&mut push).then_some(fold)
}

/// The kernel table's reader of a folding scan: reads the other GPU work, then the kernel
/// table, each kernel handed to the GPU side's thread as well as kept as the scan keeps it.
/// The part, and the GPU side if every row came as a pass would hand it out.
pub(super) fn read_kernels<G: GpuFold + Send>(
    ctx: &mut Loader<'_, '_>,
    mut job: KernelJob,
    gpu_side: Receiver<Option<G>>,
    progress: &GpuProgress,
) -> Result<(KernelPart, Option<G>)> {
    let (schema, mut strings, listed) = job.catalog(ctx)?;
    let KernelJob {
        kernels,
        max_runs,
        budget,
        opts,
        ..
    } = job;
    let limits = (max_runs, &*budget);
    // Room for the other GPU work only when the scan reads it.
    let (room, others) = match opts.memory_ops {
        true => {
            let (room, most) = other_rows_room(&budget);
            (
                room,
                other_work(ctx, (&schema, &mut strings), &listed, most),
            )
        }
        false => (0, Ok(Some(OtherWork::none()))),
    };
    let n = listed.len();
    let others = match others {
        Ok(Some(others)) if others.processes_below(n) => others,
        others => {
            // No GPU side: the host side's send fails, and nothing waits on it.
            progress.publish(Firsts::Stopped);
            drop(gpu_side);
            budget.give(room);
            others?;
            let part = kernels.read(ctx, (&schema, &strings), listed, limits, &mut |_| {})?;
            return Ok((part, None));
        }
    };
    // What the other GPU work left of the budget: the scan that folds keeps no kernel.
    let waiting = budget.take_up_to(budget.left());
    let folded = std::thread::scope(|threads| {
        let first_other = others.first_start();
        let in_flight = batches_in_flight(waiting);
        let (mut feed, batches) = GpuFeed::new((n, in_flight), progress, first_other);
        let folder = threads.spawn(|| fold_gpu(gpu_side, others, batches));
        let read = kernels.read(ctx, (&schema, &strings), listed, limits, &mut |k| {
            feed.push(k)
        });
        let ordered = feed.finish();
        // The fold's thread ends once the feed has: it gets no more batches.
        let folded = folder.join().map_err(|_| crate::error::Error::Internal {
            detail: "the thread folding the GPU work stopped".into(),
        })?;
        Ok((read?, folded.filter(|_| ordered)))
    });
    budget.give(room + waiting);
    folded
}

/// [`FileScan::of_file_folding`](super::FileScan::of_file_folding): the kernel table's reader
/// starts at once, reading its own catalog while the host side reads the scan's (one core
/// would otherwise wait through it), and takes its set-up once the host side has it.
pub(super) fn scan_folding<F: ScanFold>(
    conn: &rusqlite::Connection,
    file: &std::path::Path,
    (opts, budget): (LoadOptions, &RowBudget),
    fold: &mut F,
) -> Result<(FileScan, Option<F::Gpu>)> {
    let path = file.display().to_string();
    let (hook, gpu_side, progress) = FoldHook::new(fold);
    // Whatever ends the reader's thread (an error before it reads, a panic) ends a wait for
    // its first kernel.
    let gone = ReaderGone(progress);
    let (to_reader, job) = sync_channel::<KernelJob>(1);
    let (host, part) = std::thread::scope(|threads| {
        let path = path.as_str();
        let reader = threads.spawn(move || -> Result<(KernelPart, Option<F::Gpu>)> {
            super::own_connection(file, path, |ctx| {
                let catalog = KernelJob::own_catalog(ctx)?;
                // No set-up: the host side ended before it had one, with the error returned.
                let Ok(mut job) = job.recv() else {
                    return Err(super::reader_stopped(path));
                };
                job.input = Some(catalog);
                read_kernels(ctx, job, gpu_side, &gone.0)
            })
        });
        let mut ctx = Loader {
            conn,
            path,
            progress: &mut |_| true,
        };
        let begun = HostScan::begin(&mut ctx, opts, (MAX_FILE_RUNS, budget));
        // The set-up's sender goes with this closure, run or not, before the join: a reader
        // still waiting for its set-up hears none comes.
        let host = begun.and_then(|mut host| {
            host.kernels = KernelScan::folding(opts, &host.meta, false);
            // A reader that stopped wants no set-up: its error comes with the join.
            let _ = to_reader.send(host.kernel_job(false));
            drop(to_reader);
            host.read(&mut ctx, Some(Box::new(hook)), Some(file))?;
            Ok(host)
        });
        (host, reader.join())
    });
    let host = host?;
    let (part, gpu) = part.map_err(|_| super::reader_stopped(&path))??;
    let mut scan = host.finish(conn, &mut |_| true, Some(part))?;
    scan.file = Some(file.to_path_buf());
    Ok((scan, gpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait past a call ends when the reader comes past it; one in which the reader came no
    /// further ends the later ones at once.
    #[test]
    fn a_reader_that_stalls_is_waited_for_once() {
        let progress = GpuProgress::default();
        progress.reach(50);
        let at = Instant::now();
        progress.wait_past(40);
        assert!(at.elapsed() < PATIENCE, "the reader was past it");
        progress.wait_past(60);
        assert!(
            at.elapsed() >= PATIENCE,
            "a wait for a reader that does not come"
        );
        let again = Instant::now();
        progress.wait_past(60);
        assert!(
            again.elapsed() < PATIENCE / 2,
            "waited again for a stalled reader"
        );
    }

    /// A fold of the calls waits for the kernel reader's first kernel; a reader that ends
    /// before it read one (an error, a panic) ends the wait with nothing.
    #[test]
    fn a_wait_for_the_first_kernel_ends_when_the_reader_does() {
        let progress = Arc::new(GpuProgress::default());
        let (told, answer) = sync_channel(1);
        let waiting = Arc::clone(&progress);
        std::thread::spawn(move || told.send(waiting.first_start(true)));
        drop(ReaderGone(Arc::clone(&progress)));
        let waited = answer.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(waited, Ok(None), "the wait ended with nothing");

        let progress = Arc::new(GpuProgress::default());
        let (mut feed, _batches) = GpuFeed::new((1, BATCHES), &progress, Some(5));
        let kernel = KernelRow {
            start: 7,
            end: 9,
            ..KernelRow::default()
        };
        feed.push(&kernel);
        drop(ReaderGone(Arc::clone(&progress)));
        assert_eq!(progress.first_start(true), Some(5));
        assert_eq!(progress.first_start(false), Some(7));
        feed.finish();
        assert_eq!(progress.ends_at_least(), 9);
    }
}
