//! What a [`KernelSweep`](super::KernelSweep) is given of the host side ([`SweepInputs`]).

use serde::{Deserialize, Serialize};

use crate::detect::measure::PrepRanges;
use crate::model::intervals::IntervalSet;
use crate::model::{NameFlags, Ns};
use crate::profile::Switches;

/// The part of a [`HostFacts`](crate::detect::HostFacts) a [`KernelSweep`](super::KernelSweep)
/// reads: the windows, the host-prep ranges and which kernels are NCCL's. The page's analysis
/// worker hands them to its reader worker as bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepInputs {
    pub(in crate::detect) sw: Switches,
    pub(in crate::detect) skip_m3: bool,
    /// The user's aggregate window (`cfg.window`), else the kernel hull.
    pub(in crate::detect) window: Option<(Ns, Ns)>,
    pub(in crate::detect) context: Option<IntervalSet>,
    pub(in crate::detect) generation: Option<IntervalSet>,
    pub(in crate::detect) prep: Vec<PrepRanges>,
    /// Which names are NCCL kernels, by [`crate::model::NameId`].
    pub(in crate::detect) nccl: NameFlags,
}

impl SweepInputs {
    /// Whether the sweep folds every kind of GPU work (kernels, graph replays, copies and
    /// memsets, as `EventRows::gpu_work`) or the kernels alone (`EventRows::kernels`).
    pub fn all_work(&self) -> bool {
        self.sw.gpu_work
    }

    /// The ranges held: host-prep ranges and the phase windows' spans.
    pub fn ranges(&self) -> usize {
        let windows = [&self.context, &self.generation]
            .into_iter()
            .flatten()
            .map(|w| w.spans().len());
        let prep = self.prep.iter().flat_map(|p| &p.by_pattern).map(Vec::len);
        windows.chain(prep).sum()
    }
}
