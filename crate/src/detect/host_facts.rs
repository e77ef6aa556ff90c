//! What the verdict knows of the host side before the kernel pass ([`HostFacts`]): the profile's
//! switches, the name tables, the forward steps' counts and phase windows, the host-prep ranges
//! and M2's launch calls when swept ahead; built from a loaded trace, or from NVTX ranges as they
//! are read ([`HostFactsBuilder`]).

use crate::detect::config::DetectConfig;
use crate::detect::launch_sweep::{LaunchSweepResult, sweep_loaded};
use crate::detect::measure::{PrepCollector, PrepRanges};
use crate::detect::name_tables::NameTables;
use crate::detect::sweep::{SweepInputs, SweepInputsRef};
use crate::model::{Ns, NvtxRow, Strings, Threads, Trace};
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
    /// M2's launch calls swept ahead of the verdict ([`HostFacts::set_swept_launches`],
    /// [`HostFacts::sweep_loaded_launches`]); else the verdict sweeps the host's loaded calls.
    pub(super) launches: Option<LaunchSweepResult>,
}

impl HostFacts {
    /// How many strings its name tables cover (the facts are valid for a trace with as many).
    pub fn string_count(&self) -> usize {
        self.names.launch.len()
    }

    /// Lets go of what only the kernel sweep reads, once its [`SweepInputs`] was sent: the pooled
    /// host-prep ranges of the `trtllm-skill` profile (one per step and rank), which the sweep
    /// measures itself ([`PrepExposure`](super::sweep::PrepExposure)).
    pub fn forget_sweep_inputs(&mut self) {
        if !self.sw.prep_per_process {
            self.prep = Vec::new();
        }
    }

    /// How many forward steps were found.
    pub fn step_counts(&self) -> StepCounts {
        self.steps
    }

    /// Sweeps `host`'s loaded kernel-launch API calls now rather than at each verdict (the page,
    /// when the file's could not be swept, does it while the other worker still streams
    /// kernels): `edges` are the first kernel row's start and the last one's end, as for
    /// [`super::launch_sweep::LaunchSweep::new`]. The facts must have been built on `host`.
    pub fn sweep_loaded_launches(&mut self, host: &Trace, edges: (Ns, Ns)) {
        self.launches = Some(sweep_loaded(host, self, edges));
    }

    /// Launch calls swept ahead, if they were.
    pub fn swept_launch_calls(&self) -> Option<u64> {
        self.launches.as_ref().map(|l| l.calls())
    }

    /// Whether M2's launch calls were swept ahead (from the file, or loaded).
    pub fn launches_swept(&self) -> bool {
        self.launches.is_some()
    }

    /// M2 from launch calls swept in start order ([`super::launch_sweep::LaunchSweep`] on these
    /// facts) instead of the host's loaded calls.
    pub fn set_swept_launches(&mut self, swept: LaunchSweepResult) {
        self.launches = Some(swept);
    }

    /// What a [`KernelSweep`](super::KernelSweep) needs of these facts under `cfg` (built with the
    /// same `cfg`).
    pub fn sweep_inputs(&self, cfg: &DetectConfig) -> SweepInputs {
        self.sweep_inputs_ref(cfg).to_owned()
    }

    /// [`HostFacts::sweep_inputs`] borrowed, to serialise without copying the windows and ranges.
    pub fn sweep_inputs_ref(&self, cfg: &DetectConfig) -> SweepInputsRef<'_> {
        SweepInputsRef {
            sw: self.sw,
            skip_m3: cfg.skip_m3,
            window: cfg.window,
            context: self.context.as_ref().and_then(|p| p.window.as_ref()),
            generation: self.generation.as_ref().and_then(|p| p.window.as_ref()),
            prep: &self.prep,
            nccl: &self.names.nccl,
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

/// A [`HostFacts`] built from NVTX ranges as they are read, in table order, none kept (the page's
/// analysis worker): the forward steps must come in start order, as in every export seen.
pub struct HostFactsBuilder {
    sw: Switches,
    names: NameTables,
    parser: StepParser,
    steps: StepSummarizer,
    /// `None` under `skip_m3`.
    prep: Option<PrepCollector>,
    /// The last range's start, for a fed sweep ([`HostFactsBuilder::feed`]).
    last_start: Option<Ns>,
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
            last_start: None,
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

    /// A builder whose sweeps are fed ([`HostFactsBuilder::feed`]): of the phase windows it keeps
    /// the facts, not the windows.
    pub fn fed(strings: &Strings, cfg: &DetectConfig) -> HostFactsBuilder {
        let builder = HostFactsBuilder::new(strings, cfg);
        HostFactsBuilder {
            steps: StepSummarizer::facts_only(&builder.sw),
            ..builder
        }
    }

    /// Adds an NVTX range for a sweep fed as they are read ([`KernelSweep::fed`]): each host-prep
    /// range goes to `prep` as `(slot, pattern, range)`, each forward step it completes to
    /// `sink`. Returns how far the sweep may then go ([`KernelSweep::feed_until`]) when the
    /// range may define windows under some profile ([`NameTables::may_define_windows`], the
    /// ranges the page reads): every such range still to come starts at or after this one,
    /// whether this profile reads it or not (`trtllm-skill` reads no inline text, and may read
    /// no range at all: its sweep must still move on). `Err`: such a range starts before the
    /// previous one (the feed needs them in start order, as every export lists NVTX ranges;
    /// give the sweep its windows whole).
    ///
    /// [`KernelSweep::fed`]: super::KernelSweep::fed
    /// [`KernelSweep::feed_until`]: super::KernelSweep::feed_until
    pub fn feed(
        &mut self,
        row: &NvtxRow,
        (strings, threads): (&Strings, &Threads),
        sink: &mut impl StepSink,
        prep: &mut impl FnMut(usize, usize, (Ns, Ns)),
    ) -> Result<Option<Ns>, StepsUnordered> {
        self.names.extend(strings, &self.sw);
        if !self.names.may_define_windows(row) {
            return Ok(None);
        }
        if self.last_start.is_some_and(|last| row.start < last) {
            return Err(StepsUnordered);
        }
        self.last_start = Some(row.start);
        if self.prep.is_some() {
            super::measure::prep_of_row(row, threads, &self.names, &self.sw, prep);
        }
        if let Some(s) = step_of_row(row, &self.sw, &ParserOn(&self.parser, strings)) {
            self.steps.push(s, &mut |s| sink.step(s))?;
        }
        let pending = self.steps.pending_start();
        Ok(Some(pending.map_or(row.start, |p| p.min(row.start))))
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
            launches: None,
        }
    }
}
