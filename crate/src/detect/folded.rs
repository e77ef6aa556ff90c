//! The verdict folded while the scan reads ([`crate::trace::FileScan::of_file_folding`]): the
//! host facts from the NVTX ranges as the host side reads them, the kernel sweep on the thread
//! that reads the kernel table. A one-shot `detect` then reads the kernel table once, where
//! [`detect_rows`](super::detect_rows) reads it again after the scan. The launch sweep takes
//! the calls as the host side reads them too: its window starts at the first GPU work (or the
//! user's window), which it waits for the kernel table's reader to read, and ends no earlier
//! than the latest kernel end read so far; the calls past that are held until the scan ends.

use super::launch_sweep::{Launches, MOST_HELD, swept_calls};
use super::{DetectConfig, DetectReport, HostFacts, HostFactsBuilder, KernelSweep};
use crate::error::Result;
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{NameFlags, NvtxRow, Strings, Threads, Trace, flag};
use crate::trace::{GpuFold, GpuProgress, ScanFold};

/// The verdict's host side, folded over the ranges as the scan reads them.
pub struct VerdictFold<'c> {
    cfg: &'c DetectConfig,
    builder: Option<HostFactsBuilder>,
    facts: Option<HostFacts>,
    /// Processes the facts were sized for: the scan's, once its ranges were read.
    processes: usize,
    /// The names of the calls the launch sweep takes, once the facts are known.
    swept: NameFlags,
    launches: Launches,
}

/// Launch calls between two looks at how far the kernel table's reader has come.
const SETTLE_EVERY: u64 = 1 << 12;

/// The verdict's kernel sweep, folded over the GPU work as the kernel table is read.
pub struct SweepFold {
    sweep: KernelSweep,
    all_work: bool,
}

impl<'c> VerdictFold<'c> {
    pub fn new(cfg: &'c DetectConfig) -> VerdictFold<'c> {
        VerdictFold {
            cfg,
            builder: None,
            facts: None,
            processes: 0,
            swept: NameFlags::default(),
            launches: Launches::Waiting,
        }
    }
}

impl ScanFold for VerdictFold<'_> {
    type Gpu = SweepFold;

    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool {
        super::host_facts::fold_range(&mut self.builder, self.cfg, (row, strings, threads))
    }

    fn gpu(&mut self, meta: &Trace) -> Option<SweepFold> {
        let cfg = self.cfg;
        let builder = self
            .builder
            .take()
            .unwrap_or_else(|| HostFactsBuilder::new(&meta.strings, cfg));
        self.processes = meta.processes.len();
        let mut facts = builder.finish(self.processes, &mut ());
        let sweep = KernelSweep::of(facts.sweep_inputs(cfg));
        let all_work = facts.sw.gpu_work;
        self.swept = swept_calls(&facts, &meta.strings);
        self.facts = Some(facts);
        Some(SweepFold { sweep, all_work })
    }

    fn call(&mut self, row: &CallRow, gpu: &GpuProgress) -> bool {
        if !flag(&self.swept, row.name) {
            return true;
        }
        if matches!(self.launches, Launches::Waiting) {
            self.launches = self.launch_sweep(gpu);
        }
        let Launches::Sweeping(sweep, calls) = &mut self.launches else {
            return false;
        };
        *calls += 1;
        if self.cfg.window.is_none() && calls.is_multiple_of(SETTLE_EVERY) {
            sweep.settle_until(gpu.ends_at_least());
            if sweep.held() > MOST_HELD {
                gpu.wait_past(row.start);
                sweep.settle_until(gpu.ends_at_least());
            }
        }
        sweep.push(*row);
        true
    }

    fn calls_read(&mut self, complete: bool) {
        self.launches.calls_read(complete);
    }
}

impl VerdictFold<'_> {
    /// Whether the launch calls were swept as the scan read them: every one in start order,
    /// the GPU work's start to be had.
    pub fn swept_launches(&self) -> bool {
        matches!(self.launches, Launches::Done(_))
    }

    /// The launch sweep over the aggregate window the kernel sweep will find: the user's, or
    /// from the first GPU work on ([`detect_folded`] checks that it did).
    fn launch_sweep(&self, gpu: &GpuProgress) -> Launches {
        let Some(facts) = &self.facts else {
            return Launches::Void;
        };
        let window = self.cfg.user_window().or_else(|| {
            gpu.first_start(facts.sw.gpu_work)
                .map(|start| (start, gpu.ends_at_least()))
        });
        Launches::over(facts, window)
    }
}

impl GpuFold for SweepFold {
    fn all_work(&self) -> bool {
        self.all_work
    }

    fn push(&mut self, row: &KernelRow) -> bool {
        self.sweep.push(*row).is_ok()
    }
}

/// Whether what the scan folded gives the verdict: both sides came through, and the host
/// facts counted every process the scan met (`meta`, the scan's catalog).
pub fn came_through(fold: &VerdictFold<'_>, gpu: &Option<SweepFold>, meta: &Trace) -> bool {
    fold.facts.is_some() && gpu.is_some() && fold.processes == meta.processes.len()
}

/// The verdict over `rows` (the scan's) from what the scan folded when it
/// [`came_through`], else [`detect_rows`](super::detect_rows)'s passes.
pub fn detect_folded(
    rows: &dyn EventRows,
    fold: VerdictFold<'_>,
    gpu: Option<SweepFold>,
    cfg: &DetectConfig,
) -> Result<DetectReport> {
    let through = came_through(&fold, &gpu, rows.meta());
    let folded = match (fold.facts, gpu) {
        (Some(facts), Some(gpu)) if through => Some((facts, gpu)),
        // What the fold held (a span per step: at 10 GB hundreds of MB) is dropped here,
        // before the passes build it again.
        _ => None,
    };
    let Some((facts, gpu)) = folded else {
        return super::detect_rows(rows, cfg);
    };
    let launches = fold.launches.result();
    super::detect_summarized(rows, facts, (gpu.sweep.finish(), launches), cfg)
}
