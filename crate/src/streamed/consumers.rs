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
    label: String,
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
}

impl Consumers {
    /// The analyses under `sweeps` (one per entry of [`PROFILES`]), `fed` their windows as they
    /// go ([`KernelSweep::fed`]) or given them whole.
    pub fn new(sweeps: Vec<SweepInputs>, fed: bool, label: &str) -> Result<Consumers> {
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
            label: label.to_string(),
        })
    }

    /// Whether a kernel ending at `end` can be pushed (every sweep was fed past it).
    pub fn ready_for(&self, end: Ns) -> bool {
        self.detect.iter().all(|s| s.ready_for(end))
    }

    /// Window and host-prep spans the sweeps hold now.
    pub fn held_spans(&self) -> usize {
        self.detect.iter().map(KernelSweep::held_spans).sum()
    }

    /// Feeds the sweeps a chunk of windows ([`FeedChunk`]); `true` if it was the last.
    pub fn feed(&mut self, chunk: &FeedChunk) -> Result<bool> {
        chunk.apply(&mut self.detect)
    }

    /// Feeds one kernel to every analysis; one out of start order stops the pass.
    pub fn push(&mut self, ev: KernelEvent) -> Result<()> {
        let unordered = |detail: String| Error::Unordered {
            path: self.label.clone(),
            detail,
        };
        for sweep in &mut self.detect {
            sweep.push(ev).map_err(|e| unordered(e.to_string()))?;
        }
        self.timeline
            .push(ev)
            .map_err(|e| unordered(e.to_string()))?;
        self.gaps.push(&ev).map_err(|e| unordered(e.to_string()))
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
