//! What the verdict knows of the host side before the kernel pass ([`HostFacts`]): the profile's
//! switches, the name tables, the forward steps' counts and phase windows, the host-prep ranges
//! and M2's launch calls when swept ahead; built from a loaded trace, or from NVTX ranges as they
//! are read ([`HostFactsBuilder`]).

use crate::detect::config::DetectConfig;
use crate::detect::measure::{PrepCollector, PrepRanges};
use crate::detect::name_tables::NameTables;
use crate::detect::sweep::SweepInputs;
use crate::model::{NvtxRow, Strings, Threads, Trace};
use crate::names::patterns::NameMatch;
use crate::names::steps::StepMarkerReport;
use crate::profile::Switches;
use crate::steps::names::{ParserOn, StepParser};
use crate::steps::{
    PhaseCounts, StepCounts, StepFold, StepReader, StepSink, StepSummarizer, StepSummary,
    StepsUnordered, step_of_row,
};

/// What the verdict knows of the host part of a trace before any kernel is seen: the profile's
/// switches, the name tables, the forward steps and the phase windows. Built identically by the
/// sweep and by the assembly, so both agree on the windows.
pub struct HostFacts {
    pub(super) sw: Switches,
    pub(super) names: NameTables,
    /// The step marker the steps were read under (`None`: no range was a step).
    pub(super) step_marker: Option<StepMarkerReport>,
    /// The forward steps' counts; the steps themselves are not kept ([`HostFacts::with_steps`]).
    pub(super) steps: StepCounts,
    pub(super) context: Option<PhaseCounts>,
    pub(super) generation: Option<PhaseCounts>,
    /// Host-prep ranges per process (standard) or pooled; empty under `skip_m3`.
    pub(super) prep: Vec<PrepRanges>,
}

impl HostFacts {
    /// How many forward steps were found.
    pub fn step_counts(&self) -> StepCounts {
        self.steps
    }

    /// What a [`KernelSweep`](super::KernelSweep) needs of these facts under `cfg` (built with the
    /// same `cfg`). The host-prep ranges move to it (the assembly reads only what the sweep
    /// measured of them): a range per forward step is not held twice.
    pub fn sweep_inputs(&mut self, cfg: &DetectConfig) -> SweepInputs {
        SweepInputs {
            sw: self.sw,
            skip_m3: cfg.skip_m3,
            window: cfg.window,
            context: self.context.as_ref().map(|p| p.window.clone()),
            generation: self.generation.as_ref().map(|p| p.window.clone()),
            prep: std::mem::take(&mut self.prep),
            nccl: self.names.nccl.clone(),
        }
    }

    pub fn new(host: &Trace, cfg: &DetectConfig) -> HostFacts {
        HostFacts::with_steps(host, cfg, &mut ())
    }

    /// The facts, with each forward step they counted handed to `sink` (after TP de-duplication,
    /// in start order): the facts do not keep them, one per step would grow them with the trace.
    pub fn with_steps(host: &Trace, cfg: &DetectConfig, sink: &mut impl StepSink) -> HostFacts {
        let mut b = HostFactsBuilder::new(&host.strings, cfg);
        let nvtx = &host.nvtx;
        if let Some(prep) = &mut b.prep {
            for i in 0..nvtx.len() {
                prep.push(&nvtx.row(i), &host.threads, &b.names, &b.sw);
            }
        }
        let found =
            StepReader::new(nvtx, ParserOn(&b.parser, &host.strings), &b.sw).summarize(sink);
        b.into_host_facts(found, host.processes.len())
    }
}

/// A [`HostFacts`] built from NVTX ranges as they are read, none kept: the forward steps must
/// come in start order (the rows' order).
pub struct HostFactsBuilder {
    sw: Switches,
    names: NameTables,
    parser: StepParser,
    steps: StepSummarizer,
    /// `None` under `skip_m3`.
    prep: Option<PrepCollector>,
}

impl HostFactsBuilder {
    /// A builder for `cfg` over `strings` (grown by inline NVTX texts as the ranges stream).
    pub fn new(strings: &Strings, cfg: &DetectConfig) -> HostFactsBuilder {
        let sw = cfg.profile.switches();
        let marker = cfg
            .step_marker
            .as_ref()
            .filter(|_| sw.name_match == NameMatch::Substring);
        HostFactsBuilder {
            sw,
            names: NameTables::build(strings, &sw),
            parser: StepParser::new(&sw, marker),
            steps: StepSummarizer::new(&sw),
            prep: (!cfg.skip_m3).then(PrepCollector::default),
        }
    }

    /// Adds an NVTX range; each forward step it completes goes to `sink`. `Err`: its step
    /// starts before the previous one, so the table must be read whole ([`HostFacts::with_steps`]).
    pub fn push(
        &mut self,
        row: &NvtxRow,
        strings: &Strings,
        threads: &Threads,
        sink: &mut impl StepSink,
    ) -> Result<(), StepsUnordered> {
        self.names.extend(strings, &self.sw);
        if let Some(prep) = &mut self.prep {
            prep.push(row, threads, &self.names, &self.sw);
        }
        match step_of_row(row, &self.sw, &ParserOn(&self.parser, strings)) {
            Some(s) => self.steps.push(s, &mut |s| sink.step(s)),
            None => Ok(()),
        }
    }

    /// The ranges the kernel sweep's inputs would hold so far: the host-prep ranges and the
    /// phase windows' spans, each about a forward step's.
    pub fn sweep_ranges(&self) -> usize {
        self.prep.as_ref().map_or(0, PrepCollector::held) + self.steps.window_spans()
    }

    /// The facts of a trace with `processes` processes once every range was pushed.
    pub fn finish(mut self, processes: usize, sink: &mut impl StepSink) -> HostFacts {
        let steps = std::mem::replace(&mut self.steps, StepSummarizer::new(&self.sw));
        let found = steps.finish(&mut |s| sink.step(s));
        self.into_host_facts(found, processes)
    }

    /// The facts, their steps summarised elsewhere ([`HostFacts::with_steps`]) or by this builder.
    fn into_host_facts(self, found: StepSummary, processes: usize) -> HostFacts {
        HostFacts {
            prep: self
                .prep
                .map_or_else(Vec::new, |p| p.finish(processes, &self.sw)),
            sw: self.sw,
            names: self.names,
            step_marker: self.parser.used(),
            steps: found.counts,
            context: found.context,
            generation: found.generation,
        }
    }
}

/// A range folded into the facts' builder made on the first (a fold of the ranges as a scan
/// reads them: the CLI's `folded::VerdictFold`, the page's `beside::FactsFold`); `false` when
/// it came out of start order.
pub fn fold_range(
    builder: &mut Option<HostFactsBuilder>,
    cfg: &DetectConfig,
    (row, strings, threads): (&NvtxRow, &Strings, &Threads),
) -> bool {
    let builder = builder.get_or_insert_with(|| HostFactsBuilder::new(strings, cfg));
    builder.push(row, strings, threads, &mut ()).is_ok()
}
