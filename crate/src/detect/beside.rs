//! The page's verdict on two workers: the analysis worker folds the host facts from the NVTX
//! ranges as its host side reads them ([`FactsFold`], a [`RangeFold`]) and hands the kernel
//! sweep its inputs; the reader worker, which read the kernel table meanwhile, sweeps the GPU
//! work from the rows it kept while the analysis worker still reads the calls, sweeping the
//! launch calls among them (or, when it keeps the calls, sweeping those it kept once they are
//! read: [`Folded::begin_launches`]); the join then assembles the verdict from both
//! ([`detect_joined`]).
//! What [`detect_rows`](super::detect_rows) would do in three passes after the scan.
//!
//! The launch sweep's window starts at the first GPU work, which the analysis worker cannot
//! hear of from the reader while it reads: it takes the GPU-work tables' first and last rows
//! ([`WorkEnds`]), and the join keeps the sweep only when the reader's sweep found that start
//! and an end no earlier (`LaunchSweepResult::fits`); else the verdict reads the launch calls
//! again, as it did before.

use rusqlite::Connection;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::launch_sweep::{Launches, MOST_HELD, swept_calls};
use super::{
    DetectConfig, DetectReport, HostFacts, HostFactsBuilder, KernelSummary, KernelSweep,
    SweepInputs,
};
use crate::error::{Error, Result};
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{NameFlags, NvtxRow, Strings, Threads, Trace, flag};
use crate::trace::{ProgressFn, RangeFold, ReaderScan, WorkEnds};

/// The most ranges (host-prep ranges and phase windows' spans, [`SweepInputs::ranges`]) the
/// page folds its verdict beside the scan with. Each is held by both workers while the reader
/// sweeps: by the analysis worker as facts and the inputs it hands on, by the reader decoded
/// beside the bytes that brought them and its sweep's queues. At 10 GB (`gen host-bound --scale
/// 57000`: 3.6 M forward steps, 7.3 M ranges) that took the two workers to 569 + 357 MiB, where
/// the memory goal is 512 MiB for both; at 4.2 GiB (3.07 M ranges) 239 + 175 MiB
/// (`docs/performance.md`). Past it the fold gives up as soon as it holds that many, and the
/// verdict's passes run after the join, the reader having ended.
pub const SWEEP_RANGES_MOST: usize = 4 << 20;

/// Ranges folded between two counts of what the fold holds ([`SWEEP_RANGES_MOST`]), and launch
/// calls between two counts of what the launch sweep holds ([`MOST_HELD`]).
const COUNT_EVERY: u32 = 1 << 12;

/// The verdict's host facts, folded over the ranges as the host side reads them.
pub struct FactsFold<'c> {
    cfg: &'c DetectConfig,
    builder: Option<HostFactsBuilder>,
    /// The most ranges the fold may hold, and the ranges folded until it counts them again.
    most: usize,
    until_count: u32,
    /// The GPU-work tables' first and last rows, the launch sweep's window; `None`: the calls
    /// are left to the verdict's pass after the join.
    work: Option<WorkEnds>,
    /// Once the ranges are read in start order: the facts, the processes they were sized for,
    /// and the kernel sweep's inputs (until taken).
    folded: Option<Folded>,
}

/// The host facts as the ranges left them, and the launch sweep over the calls after them.
pub struct Folded {
    facts: HostFacts,
    processes: usize,
    inputs: Option<SweepInputs>,
    /// The names of the calls the launch sweep takes.
    swept: NameFlags,
    launches: Launches,
}

impl Folded {
    /// Whether the facts were sized for every process of `meta` (the joined scan's catalog):
    /// a process the host side met after its ranges leaves the verdict to the passes.
    pub fn fits(&self, meta: &Trace) -> bool {
        self.processes == meta.processes.len()
    }

    /// Whether the launch calls swept as the host side read them fit the aggregate window the
    /// reader's sweep found (`kernels`): the verdict then reads no row again.
    pub fn launches_fit(&self, kernels: &KernelSummary) -> bool {
        match &self.launches {
            Launches::Done(swept) => swept.fits(kernels.aggregate_window()),
            _ => false,
        }
    }
}

impl<'c> FactsFold<'c> {
    /// A fold that gives up once it holds more than `most` ranges
    /// ([`SWEEP_RANGES_MOST`] in the page), its launch sweep over the window `work` gives
    /// (the user's, when `cfg` has one), or none without `work`.
    pub fn new(cfg: &'c DetectConfig, most: usize, work: Option<WorkEnds>) -> FactsFold<'c> {
        FactsFold {
            cfg,
            builder: None,
            most,
            until_count: COUNT_EVERY,
            work,
            folded: None,
        }
    }

    /// Whether the builder holds more ranges than the fold may; counted every
    /// [`COUNT_EVERY`] ranges.
    fn holds_too_many(&mut self) -> bool {
        self.until_count -= 1;
        if self.until_count > 0 {
            return false;
        }
        self.until_count = COUNT_EVERY;
        self.builder
            .as_ref()
            .is_some_and(|b| b.sweep_ranges() > self.most)
    }

    /// The kernel sweep's inputs, once the ranges were read (the reader worker sweeps with
    /// them); `None` when the fold gave up or they were taken.
    pub fn sweep_inputs(&mut self) -> Option<SweepInputs> {
        self.folded.as_mut().and_then(|f| f.inputs.take())
    }

    /// What the fold left, for [`detect_joined`].
    pub fn into_folded(self) -> Option<Folded> {
        self.folded
    }

    /// Whether the launch calls were swept as the host side read them (every one in start
    /// order, within what the sweep may hold); the join still checks its window.
    pub fn swept_launches(&self) -> bool {
        self.folded
            .as_ref()
            .is_some_and(|f| matches!(f.launches, Launches::Done(_)))
    }
}

impl RangeFold for FactsFold<'_> {
    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool {
        let taken =
            super::host_facts::fold_range(&mut self.builder, self.cfg, (row, strings, threads));
        if taken && !self.holds_too_many() {
            return true;
        }
        // Given up: what the builder held goes back now, not after the scan.
        self.builder = None;
        false
    }

    fn ranges_read(&mut self, meta: &Trace, in_order: bool) {
        let cfg = self.cfg;
        let builder = self.builder.take();
        if !in_order {
            return;
        }
        let builder = builder.unwrap_or_else(|| HostFactsBuilder::new(&meta.strings, cfg));
        let processes = meta.processes.len();
        let mut facts = builder.finish(processes, &mut ());
        let inputs = facts.sweep_inputs(cfg);
        if inputs.ranges() > self.most {
            return;
        }
        let all_work = facts.sw.gpu_work;
        let window = self
            .work
            .and_then(|w| cfg.user_window().or_else(|| w.bounds(all_work)));
        self.folded = Some(Folded {
            swept: swept_calls(&facts, &meta.strings),
            launches: Launches::over(&facts, window),
            facts,
            processes,
            inputs: Some(inputs),
        });
    }

    fn call(&mut self, row: &CallRow) -> bool {
        self.folded.as_mut().is_some_and(|f| f.launch_call(row))
    }

    fn calls_read(&mut self, complete: bool) {
        if let Some(folded) = &mut self.folded {
            folded.launches.calls_read(complete);
        }
    }
}

impl Folded {
    /// Begins the launch sweep the scan did not run (its fold had no window: the page's host
    /// side keeps its rows, and sweeping while SQLite reads cost it more than a pass over the
    /// kept calls), over the window `work` gives (the user's, when `cfg` has one): the calls
    /// are then handed to [`Folded::launch_call`] while the reader worker still reads, not in a
    /// pass after the join. `false` when there is nothing to sweep over, or it was swept.
    pub fn begin_launches(&mut self, cfg: &DetectConfig, work: WorkEnds) -> bool {
        if !matches!(self.launches, Launches::Void) {
            return false;
        }
        let window = cfg
            .user_window()
            .or_else(|| work.bounds(self.facts.sw.gpu_work));
        self.launches = Launches::over(&self.facts, window);
        matches!(self.launches, Launches::Sweeping(..))
    }

    /// Takes the next call in start order into the launch sweep; `false` once it takes no
    /// more (no sweep, or it held too many).
    pub fn launch_call(&mut self, row: &CallRow) -> bool {
        if !flag(&self.swept, row.name) {
            return true;
        }
        let Launches::Sweeping(sweep, calls) = &mut self.launches else {
            return false;
        };
        *calls += 1;
        // Nothing tells this sweep how far the GPU work reaches past its window's end: what
        // it holds past it waits for the join, within a bound.
        if calls.is_multiple_of(u64::from(COUNT_EVERY)) && sweep.held() > MOST_HELD {
            self.launches = Launches::Void;
            return false;
        }
        sweep.push(*row);
        true
    }

    /// After the last call handed to [`Folded::launch_call`]: the sweep is done when every
    /// call was (`complete`), else the verdict's pass sweeps them.
    pub fn launches_read(&mut self, complete: bool) {
        self.launches.calls_read(complete);
    }
}

/// The verdict over `rows` (the joined scan's) from the host facts folded and the reader's
/// sweep of the GPU work, under the `cfg` both were made for; [`detect_rows`](super::detect_rows)'s
/// passes when the facts were not sized for every process the scan met (a process the host
/// side met after its ranges).
pub fn detect_joined(
    rows: &dyn EventRows,
    folded: Folded,
    kernels: KernelSummary,
    cfg: &DetectConfig,
) -> Result<DetectReport> {
    if !folded.fits(rows.meta()) {
        return super::detect_rows(rows, cfg);
    }
    let launches = folded.launches.result();
    super::detect_summarized(rows, folded.facts, (kernels, launches), cfg)
}

/// A fold of the GPU work the reader worker runs beside its sweep, for the views after the
/// verdict (in the page, the timeline's summary and the idle-gap histogram): each row the sweep
/// took, in start order. It keeps its own state, giving up on its own.
pub trait Rider {
    fn push(&mut self, row: &KernelRow);
}

/// No fold beside the sweep.
impl Rider for () {
    fn push(&mut self, _: &KernelRow) {}
}

/// The reader worker's kernel sweep beside its scan of the kernel table: begun once the inputs
/// come ([`SweepBeside::start`]: the kernels kept so far), fed each slice read after
/// ([`SweepBeside::slice`]), finished after the last ([`SweepBeside::finish`]); a [`Rider`]
/// takes every row the sweep takes.
pub struct SweepBeside {
    sweep: KernelSweep,
}

impl SweepBeside {
    /// Begins the sweep with the kernels `reader` kept so far, reading the other GPU work it
    /// merges with them first if the reader left it for now
    /// ([`ReaderScan::read_other_work`]).
    pub fn start(
        reader: &mut ReaderScan,
        (conn, path): (&Connection, &str),
        progress: ProgressFn<'_>,
        (inputs, rider): (SweepInputs, &mut dyn Rider),
    ) -> Result<SweepBeside> {
        let all_work = inputs.all_work();
        if all_work {
            reader.read_other_work(conn, path, progress)?;
        }
        let sweep = KernelSweep::of(inputs);
        let mut beside = SweepBeside { sweep };
        let take = &mut |k: &KernelRow| beside.take(k, rider);
        reader.start_sweep(all_work, take)?;
        Ok(beside)
    }

    /// Reads `reader`'s next slice into the sweep; `Ok(true)` once the table is read.
    pub fn slice(
        &mut self,
        reader: &mut ReaderScan,
        (conn, path): (&Connection, &str),
        progress: ProgressFn<'_>,
        rider: &mut dyn Rider,
    ) -> Result<bool> {
        reader.read_slice(conn, path, progress, Some(&mut |k| self.take(k, rider)))
    }

    /// The summary, when the sweep took every row as a pass hands them out.
    pub fn finish(
        mut self,
        reader: &mut ReaderScan,
        rider: &mut dyn Rider,
    ) -> Option<KernelSummary> {
        let swept = reader.finish(Some(&mut |k: &KernelRow| self.take(k, rider)));
        swept.then(|| self.sweep.finish())
    }

    /// A row for the sweep, and the rider once the sweep took it.
    fn take(&mut self, k: &KernelRow, rider: &mut dyn Rider) -> bool {
        let taken = self.sweep.push(*k).is_ok();
        if taken {
            rider.push(k);
        }
        taken
    }
}

/// The reader worker's kernel table read with the GPU work swept as it reads (the inputs came
/// before it read on, the kernels kept so far swept first), `rider` beside the sweep: the
/// summary, or `None` when the rows did not come as a pass hands them out.
pub fn read_sweeping(
    reader: &mut ReaderScan,
    at: (&Connection, &str),
    progress: ProgressFn<'_>,
    (inputs, rider): (SweepInputs, &mut dyn Rider),
) -> Result<Option<KernelSummary>> {
    let mut sweep = SweepBeside::start(reader, at, &mut *progress, (inputs, &mut *rider))?;
    while !sweep.slice(reader, at, &mut *progress, &mut *rider)? {}
    Ok(sweep.finish(reader, rider))
}

/// The reader worker's sweep of the GPU work from the kernels its scan kept, once it read them
/// all (the inputs came after); `None` when they cannot give it as a pass would
/// ([`ReaderScan::start_sweep`]).
pub fn sweep_beside(
    reader: &mut ReaderScan,
    at: (&Connection, &str),
    progress: ProgressFn<'_>,
    (inputs, rider): (SweepInputs, &mut dyn Rider),
) -> Result<Option<KernelSummary>> {
    Ok(SweepBeside::start(reader, at, progress, (inputs, &mut *rider))?.finish(reader, rider))
}

/// The sweep's inputs or its summary as they cross between the page's workers (postcard),
/// sized first: a vector doubled as it fills would hold up to twice a range per forward step.
pub fn to_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let unwritable = |e: postcard::Error| Error::Internal {
        detail: format!("the kernel sweep could not be written: {e}"),
    };
    let size = postcard::experimental::serialized_size(value).map_err(unwritable)?;
    postcard::to_extend(value, Vec::with_capacity(size)).map_err(unwritable)
}

/// [`to_bytes`] read back.
pub fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::Internal {
        detail: format!("the kernel sweep came back unreadable: {e}"),
    })
}
