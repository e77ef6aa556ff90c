//! What a [`KernelSweep`](super::KernelSweep) is given of the host side ([`SweepInputs`]): small,
//! and serialisable, so the page's kernel pass in another worker gets it as bytes.

use serde::{Deserialize, Serialize};

use crate::detect::measure::PrepRanges;
use crate::model::intervals::IntervalSet;
use crate::model::{NameFlags, Ns};
use crate::profile::Switches;

/// The part of a [`HostFacts`](crate::detect::HostFacts) a [`KernelSweep`](super::KernelSweep)
/// reads: small, and serialisable so the page's kernel pass (another worker, which holds neither
/// NVTX ranges nor name tables) gets it as bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepInputs {
    pub(super) sw: Switches,
    pub(super) skip_m3: bool,
    /// The user's aggregate window (`cfg.window`), else the kernel hull.
    pub(super) window: Option<(Ns, Ns)>,
    pub(super) context: Option<IntervalSet>,
    pub(super) generation: Option<IntervalSet>,
    pub(super) prep: Vec<PrepRanges>,
    /// Which names are NCCL kernels, by [`crate::model::NameId`].
    pub(super) nccl: NameFlags,
}

/// A [`SweepInputs`] borrowed from its [`HostFacts`](crate::detect::HostFacts): serialises to the
/// same bytes (same fields, same order), which deserialise as a [`SweepInputs`].
#[derive(Debug, Serialize)]
pub struct SweepInputsRef<'p> {
    pub(in crate::detect) sw: Switches,
    pub(in crate::detect) skip_m3: bool,
    pub(in crate::detect) window: Option<(Ns, Ns)>,
    pub(in crate::detect) context: Option<&'p IntervalSet>,
    pub(in crate::detect) generation: Option<&'p IntervalSet>,
    pub(in crate::detect) prep: &'p [PrepRanges],
    pub(in crate::detect) nccl: &'p NameFlags,
}

impl SweepInputsRef<'_> {
    /// The inputs of a sweep fed its windows and host-prep ranges
    /// ([`KernelSweep::fed`](super::KernelSweep::fed)): they are left out.
    pub fn without_windows(self) -> Self {
        SweepInputsRef {
            context: None,
            generation: None,
            prep: &[],
            ..self
        }
    }

    pub fn to_owned(&self) -> SweepInputs {
        SweepInputs {
            sw: self.sw,
            skip_m3: self.skip_m3,
            window: self.window,
            context: self.context.cloned(),
            generation: self.generation.cloned(),
            prep: self.prep.to_vec(),
            nccl: self.nccl.clone(),
        }
    }
}
