//! The one-pass analyses the kernel pass feeds, and their results as they cross to the analysis
//! worker: detect's summary for each profile the page can switch to, the timeline summary and
//! the idle-gap histogram.

use serde::{Deserialize, Serialize};

use super::feed::FeedChunk;
use crate::detect::SweepInputs;
use crate::detect::sweep::{KernelSummary, KernelSweep};
use crate::drill::gaps::{GapHistogram, GapSweep};
use crate::error::{Error, Result};
use crate::model::{CoverageNote, KernelEvent, Ns};
use crate::profile::Profile;
use crate::timeline::{Timeline, TimelineBuilder};

/// The profiles the page switches between without re-reading the file.
pub const PROFILES: [Profile; 2] = [Profile::Standard, Profile::TrtllmSkill];

/// Every one-pass analysis of the verdict view.
pub struct Consumers {
    detect: Vec<KernelSweep>,
    timeline: TimelineBuilder,
    gaps: GapSweep,
    /// A kernel came out of start order: the analyses stopped, and the verdict's views are
    /// measured over the file's rows instead (read as a merge of the table's sorted runs).
    unordered: bool,
}

/// What the kernel pass found, keyed by the processes it numbered.
#[derive(Serialize, Deserialize)]
pub struct KernelResults {
    /// `globalPid` of each process id the results use.
    pub processes: Vec<i64>,
    /// One summary per entry of [`PROFILES`].
    pub detect: Vec<KernelSummary>,
    pub timeline: Timeline,
    pub gaps: GapHistogram,
    /// What the kernel table lacked (absent table or columns).
    pub coverage: Vec<CoverageNote>,
    pub present: bool,
    /// The export holds copies, memsets or graph replays, which the kernel pass did not read:
    /// a verdict counting every GPU operation is then measured over the file's rows.
    #[serde(default)]
    pub other_gpu_work: bool,
    /// The kernel table is not in start order (nsys does not promise it): the summaries above
    /// are partial, and every view is measured over the file's rows.
    #[serde(default)]
    pub unordered: bool,
}

impl Consumers {
    /// The analyses under `sweeps` (one per entry of [`PROFILES`]), `fed` their windows as they
    /// go ([`KernelSweep::fed`]) or given them whole.
    pub fn new(sweeps: Vec<SweepInputs>, fed: bool) -> Result<Consumers> {
        if sweeps.len() != PROFILES.len() {
            return Err(Error::Internal {
                detail: format!("the kernel pass got {} sweep plans", sweeps.len()),
            });
        }
        Ok(Consumers {
            detect: sweeps
                .into_iter()
                .map(if fed {
                    KernelSweep::fed
                } else {
                    KernelSweep::of
                })
                .collect(),
            timeline: TimelineBuilder::without_steps(true),
            gaps: GapSweep::new(None),
            unordered: false,
        })
    }

    /// Whether a kernel ending at `end` can be pushed (every sweep was fed past it).
    pub fn ready_for(&self, end: Ns) -> bool {
        self.unordered || self.detect.iter().all(|s| s.ready_for(end))
    }

    /// Window and host-prep spans the sweeps hold now.
    pub fn held_spans(&self) -> usize {
        self.detect.iter().map(KernelSweep::held_spans).sum()
    }

    /// Feeds the sweeps a chunk of windows ([`FeedChunk`]); `true` if it was the last.
    /// Once a kernel came out of order the windows are not kept.
    pub fn feed(&mut self, chunk: &FeedChunk) -> Result<bool> {
        if self.unordered {
            return Ok(chunk.is_last());
        }
        chunk.apply(&mut self.detect)
    }

    /// Whether a kernel came out of start order ([`KernelResults::unordered`]).
    pub fn unordered(&self) -> bool {
        self.unordered
    }

    /// Feeds one kernel to every analysis; one out of start order stops them all (the views are
    /// then measured over the file's rows).
    pub fn push(&mut self, ev: KernelEvent) {
        if self.unordered {
            return;
        }
        let ordered = self.detect.iter_mut().all(|sweep| sweep.push(ev).is_ok())
            && self.timeline.push(ev).is_ok()
            && self.gaps.push(&ev).is_ok();
        self.unordered = !ordered;
    }

    /// The results, numbering processes by `processes` (`globalPid` per id), with what the
    /// kernel table lacked (`coverage`) and whether it exists.
    pub fn finish(
        self,
        processes: Vec<i64>,
        coverage: Vec<CoverageNote>,
        present: bool,
    ) -> KernelResults {
        KernelResults {
            processes,
            detect: self.detect.into_iter().map(KernelSweep::finish).collect(),
            timeline: self.timeline.finish(),
            gaps: self.gaps.finish(),
            coverage,
            present,
            other_gpu_work: false,
            unordered: self.unordered,
        }
    }
}

impl KernelResults {
    /// Compact binary (floats bit for bit): phase windows and gaps near host-prep ranges hold
    /// one entry per step.
    pub fn to_bytes(&self) -> Vec<u8> {
        super::encode(self)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<KernelResults> {
        postcard::from_bytes(bytes).map_err(|e| Error::Internal {
            detail: format!("the kernel pass's results did not decode: {e}"),
        })
    }
}
