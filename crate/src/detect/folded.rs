//! The verdict folded while the scan reads ([`crate::trace::FileScan::of_file_folding`]): the
//! host facts from the NVTX ranges as the host side reads them, the kernel sweep on the thread
//! that reads the kernel table. A one-shot `detect` then reads the kernel table once, where
//! [`detect_rows`](super::detect_rows) reads it again after the scan. The launch calls are
//! still a pass: the window they are counted in is the kernels' hull, known once every
//! kernel is read.

use super::{DetectConfig, DetectReport, HostFacts, HostFactsBuilder, KernelSweep};
use crate::error::Result;
use crate::model::rows::{EventRows, KernelRow};
use crate::model::{NvtxRow, Strings, Threads, Trace};
use crate::trace::{GpuFold, ScanFold};

/// The verdict's host side, folded over the ranges as the scan reads them.
pub struct VerdictFold<'c> {
    cfg: &'c DetectConfig,
    builder: Option<HostFactsBuilder>,
    facts: Option<HostFacts>,
    /// Processes the facts were sized for: the scan's, once its ranges were read.
    processes: usize,
}

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
        }
    }
}

impl ScanFold for VerdictFold<'_> {
    type Gpu = SweepFold;

    fn range(&mut self, row: &NvtxRow, strings: &Strings, threads: &Threads) -> bool {
        let cfg = self.cfg;
        let builder = self
            .builder
            .get_or_insert_with(|| HostFactsBuilder::new(strings, cfg));
        builder.push(row, strings, threads, &mut ()).is_ok()
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
        self.facts = Some(facts);
        Some(SweepFold { sweep, all_work })
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
    if !came_through(&fold, &gpu, rows.meta()) {
        return super::detect_rows(rows, cfg);
    }
    match (fold.facts, gpu) {
        (Some(facts), Some(gpu)) => super::detect_summarized(rows, facts, gpu.sweep.finish(), cfg),
        _ => super::detect_rows(rows, cfg),
    }
}
