//! What a kernel sweep leaves for `detect` ([`KernelSummary`]): facts about the kernels as a
//! whole, and per window ([`ScopeSummary`]) the groups' busy time, kernels and NCCL time, the
//! standard M3's busy time per set of busy devices and the reference M3's exposure.

use serde::{Deserialize, Serialize};

use crate::model::{Ns, ProcessIdx};
use crate::profile::Switches;
use crate::steps::spans::WindowFacts;

/// Facts about the kernels as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    pub kernels: u64,
    /// GPU operations the sweep read: kernels, and under a profile counting every GPU operation
    /// graph replays, copies and memsets too.
    #[serde(default)]
    pub gpu_ops: u64,
    /// Devices that ran at least one kernel, ascending. Bit `i` of a device mask is `devices[i]`.
    pub devices: Vec<u32>,
    /// Processes that ran at least one kernel, ascending.
    pub processes: Vec<ProcessIdx>,
    /// Whether any kernel carries a `graphNodeId`.
    pub any_graph_node: bool,
    /// `(first start, last end)` over all kernels.
    pub hull: Option<(Ns, Ns)>,
}

/// One group's figures in a scope: a device (standard) or all devices pooled (`trtllm-skill`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub device: Option<u32>,
    /// Kernels selected by the window (clipped profile: overlapping it; else starting in it).
    pub kernels: u64,
    /// Processes owning those kernels, ascending.
    pub processes: Vec<ProcessIdx>,
    pub busy_ns: Ns,
    /// Busy µs: the clipped ns / 1000, or (unclipped) the float sum over the merged intervals in
    /// ascending order, the reference's accumulation order.
    pub busy_us: f64,
    /// NCCL µs: clipped union, or (unclipped) the raw sum of NCCL kernel durations.
    pub nccl_us: f64,
}

/// Busy time of one process's host-prep ranges (one name pattern) per set of busy devices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrepBusy {
    pub process: ProcessIdx,
    /// Index into `names::PREP_PATTERNS`.
    pub pattern: usize,
    /// How long those ranges cover the window (their union ∩ window).
    pub prep_ns: Ns,
    pub by_mask: Vec<(u64, Ns)>,
}

/// Everything kernel-derived about one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeSummary {
    pub window: WindowFacts,
    pub groups: Vec<GroupSummary>,
    /// Standard M3: time inside the window per non-empty mask of busy devices.
    pub busy_by_mask: Vec<(u64, Ns)>,
    /// Standard M3: the same, inside each process's host-prep ranges (∩ window).
    pub prep_busy: Vec<PrepBusy>,
    /// `trtllm-skill` M3: the pooled host-prep ranges inside the window and how much of them
    /// the kernel gaps expose ([`PrepExposure`]).
    pub prep_exposure: Option<PrepExposure>,
    /// A phase's GPU work by kind within its window (profiles counting every GPU operation;
    /// the aggregate's is [`KernelSummary::work`]).
    #[serde(default)]
    pub work: Option<super::work::WorkSummary>,
}

/// The reference M3 of one window: its pooled host-prep ranges of the first pattern that has
/// ranges fully inside the window's hull, and their exposure over the gaps between consecutive
/// pooled merged kernel intervals (start in the window) that touch any host-prep range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrepExposure {
    /// Index into `names::PREP_PATTERNS`.
    pub pattern: usize,
    pub prep_us: f64,
    pub exposed_us: f64,
}

impl ScopeSummary {
    /// Time covered by the union of the devices in `mask` (by `busy_by_mask`).
    pub fn busy_of(by_mask: &[(u64, Ns)], devices: u64) -> Ns {
        by_mask
            .iter()
            .filter(|&&(m, _)| m & devices != 0)
            .map(|&(_, ns)| ns)
            .sum()
    }
}

/// The result of a sweep: all `detect` needs from the kernel table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSummary {
    /// The switches and M3 setting the sweep ran under (assembly checks they match its config).
    pub switches: Switches,
    pub skip_m3: bool,
    /// Whether the aggregate window was the user's (`cfg.window`) rather than the kernel hull.
    pub user_window: bool,
    pub facts: KernelFacts,
    pub aggregate: ScopeSummary,
    pub context: Option<ScopeSummary>,
    pub generation: Option<ScopeSummary>,
    /// More than [`MAX_MASK_DEVICES`](super::MAX_MASK_DEVICES) devices ran kernels: the per-process
    /// M3 of the standard profile (which needs device masks) was not computed.
    pub device_masks_overflow: bool,
    /// Where each device's idle time lies, for the capture checks (`None` from a sweep that
    /// did not keep it).
    #[serde(default)]
    pub idle: Option<crate::detect::capture::IdleProfile>,
    /// The repeating unit of the busiest device's kernel stream (`analyze`'s inferred steps),
    /// `None` when it does not repeat at step scale.
    #[serde(default)]
    pub inferred: Option<crate::iterations::inferred::UnitFound>,
    /// Each device's busy time by kind and its copies (`None` under `trtllm-skill`, which counts
    /// kernels only).
    #[serde(default)]
    pub work: Option<super::work::WorkSummary>,
}

impl KernelSummary {
    /// The aggregate window the sweep found: the user's, else the GPU work's hull (empty
    /// without GPU work).
    pub fn aggregate_window(&self) -> (Ns, Ns) {
        self.aggregate
            .window
            .hull
            .or(self.facts.hull)
            .unwrap_or_default()
    }

    /// Renumbers processes (`map` from the sweep's ids to another table's): the page's kernel
    /// pass numbers the processes it meets itself, the analysis worker numbers them its way.
    pub fn remap_processes(&mut self, map: impl Fn(ProcessIdx) -> ProcessIdx) {
        let remap_all = |v: &mut Vec<ProcessIdx>| {
            v.iter_mut().for_each(|p| *p = map(*p));
            v.sort_unstable();
            v.dedup();
        };
        remap_all(&mut self.facts.processes);
        let scopes = std::iter::once(&mut self.aggregate)
            .chain(self.context.as_mut())
            .chain(self.generation.as_mut());
        for scope in scopes {
            for g in &mut scope.groups {
                remap_all(&mut g.processes);
            }
            for p in &mut scope.prep_busy {
                p.process = map(p.process);
            }
        }
    }
}
