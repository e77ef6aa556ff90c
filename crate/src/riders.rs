//! The views after the verdict that the page's reader worker folds beside its sweep of the GPU
//! work (`web`): the timeline's GPU lanes and the idle-gap histogram. It folds them only when it
//! does not keep every kernel, because the analysis worker's pass for them would then read the
//! kernels from the file again (at 4.2 GiB, 40–50 s after the verdict). They cross to the
//! analysis worker with the sweep's summary as bytes. Native here, so tests check what the page
//! runs.

use serde::{Deserialize, Serialize};

use crate::detect::KernelSummary;
use crate::detect::beside::Rider;
use crate::drill::gaps::{GapHistogram, GapSweep};
use crate::model::rows::KernelRow;
use crate::timeline::{Timeline, TimelineBuilder};

/// The timeline's GPU lanes and the gap histogram, folded over the GPU work the sweep takes;
/// each gives up on its own (a row out of start order), and is then left to its pass.
pub struct Riders {
    timeline: Option<TimelineBuilder>,
    gaps: Option<GapSweep>,
}

impl Riders {
    /// `streams`: whether the kernels carry their stream (the page reads it: its lanes are
    /// per stream).
    pub fn new(streams: bool) -> Riders {
        Riders {
            timeline: Some(TimelineBuilder::without_steps(streams)),
            // The page's histogram is the whole trace's (`Indexed::gaps`).
            gaps: Some(GapSweep::new(None)),
        }
    }

    /// What the riders folded, with the sweep's summary.
    pub fn finish(self, kernels: KernelSummary) -> ReaderSweep {
        let gaps = self.gaps.map(GapSweep::finish);
        ReaderSweep {
            kernels,
            timeline: self.timeline.map(TimelineBuilder::finish),
            gaps: gaps.and_then(|g| serde_json::to_string(&g).ok()),
        }
    }
}

impl Rider for Riders {
    fn push(&mut self, row: &KernelRow) {
        if self
            .timeline
            .as_mut()
            .is_some_and(|t| t.push(*row).is_err())
        {
            self.timeline = None;
        }
        if self.gaps.as_mut().is_some_and(|g| g.push(row).is_err()) {
            self.gaps = None;
        }
    }
}

/// The reader worker's sweep of the GPU work, as it crosses to the analysis worker (postcard):
/// the verdict's summary, and what the riders folded if they rode.
#[derive(Serialize, Deserialize)]
pub struct ReaderSweep {
    pub kernels: KernelSummary,
    pub timeline: Option<Timeline>,
    /// The histogram as JSON: its buckets leave out empty causes, which postcard, whose
    /// fields are not named, could not read back.
    gaps: Option<String>,
}

impl ReaderSweep {
    /// The gap histogram, if it rode.
    pub fn gaps(&self) -> Option<GapHistogram> {
        serde_json::from_str(self.gaps.as_deref()?).ok()
    }

    /// The summary alone: no rider rode.
    pub fn alone(kernels: KernelSummary) -> ReaderSweep {
        ReaderSweep {
            kernels,
            timeline: None,
            gaps: None,
        }
    }
}
