//! Measuring one scope (the aggregate window or a phase window): M1–M5 per device, per
//! process and aggregated, with their numerators and denominators.
//!
//! Kernel-derived figures come from a [`KernelSummary`] (one pass over the kernels, see
//! [`super::sweep`]), M2 from the launch calls swept in start order ([`super::launch_sweep`]);
//! [`Prepared::measure`] assembles one scope from them. The profile's switches decide grouping
//! (per device or pooled), clipping, and the launch/prep rules.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::detect::host_facts::HostFacts;
use crate::detect::launch_sweep::{LaunchSweepResult, LaunchTotals, Scope, sweep_loaded};
use crate::detect::name_tables::NameTables;
use crate::detect::result::Metrics;
use crate::detect::sweep::{GroupSummary, KernelSummary, ScopeSummary};
use crate::model::intervals::push_gently;
use crate::model::rows::EventRows;
use crate::model::{Ns, NvtxRow, ProcessIdx, Threads, Trace};
use crate::names::patterns::PREP_PATTERNS;
use crate::profile::Switches;
use crate::steps::visible_row_name;

/// Host-prep ranges of one process (or of all, pooled), per pattern, in table order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrepRanges {
    #[serde(with = "delta_each")]
    pub by_pattern: [Vec<(Ns, Ns)>; 3],
}

/// [`crate::model::intervals::delta`] for each pattern's ranges.
mod delta_each {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::Ns;
    use crate::model::intervals::delta::{Delta, DeltaRef};

    pub fn serialize<S: Serializer>(lists: &[Vec<(Ns, Ns)>; 3], s: S) -> Result<S::Ok, S::Error> {
        lists.each_ref().map(|l| DeltaRef(l)).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[Vec<(Ns, Ns)>; 3], D::Error> {
        <[Delta; 3]>::deserialize(d).map(|lists| lists.map(|l| l.0))
    }
}

/// The host part, its kernel summary and its M2 figures, for measuring each scope.
pub struct Prepared<'t> {
    /// The host part (its kernel table is not read: it may be empty).
    pub trace: &'t Trace,
    pub sw: Switches,
    pub names: &'t NameTables,
    pub kernels: &'t KernelSummary,
    launches: LaunchTotals,
    pub skip_m3: bool,
}

/// Per-device figures of a scope, in ns.
#[derive(Debug, Clone)]
pub struct DeviceMeasure {
    pub device: Option<u32>,
    /// Processes whose kernels ran on this device in the window.
    pub processes: Vec<ProcessIdx>,
    pub kernels: u64,
    pub busy_ns: Ns,
    pub busy_us: f64,
    pub nccl_us: f64,
    pub gpu_idle_ratio: f64,
    pub gpu_utilization: f64,
    pub nccl_ratio: f64,
}

/// Per-process figures of a scope.
#[derive(Debug, Clone)]
pub struct ProcessMeasure {
    pub process: ProcessIdx,
    pub devices: Vec<u32>,
    pub launch_calls: u64,
    pub launch_us: Option<f64>,
    pub launch_ratio: Option<f64>,
    pub prep: Option<PrepMeasure>,
}

/// Host-prep exposure of one process (or pooled).
#[derive(Debug, Clone, Copy)]
pub struct PrepMeasure {
    pub pattern: &'static str,
    pub prep_us: f64,
    pub exposed_us: f64,
    pub idle_us: f64,
    pub exposed_ratio: f64,
    pub perf_impact: f64,
    pub idle_attribution: f64,
}

/// Everything measured in one scope.
#[derive(Debug, Clone)]
pub struct ScopeMeasure {
    pub window_us: f64,
    pub metrics: Metrics,
    pub devices: Vec<DeviceMeasure>,
    pub processes: Vec<ProcessMeasure>,
    /// Aggregate numerators (µs) per metric key, for the evidence table: present where the
    /// value is numerator ÷ denominator (parts sharing one denominator, the window, or one part).
    pub numerators: BTreeMap<&'static str, f64>,
    pub denominators: BTreeMap<&'static str, f64>,
    /// Per metric key whose value is the mean of ratios with their own denominators over
    /// several devices or processes (M5 over busy times, M3a over prep times, M3c over idle
    /// times): each one's figures, which the value is computed from (no summed numerator and
    /// denominator then: they divide to another number).
    pub parts: BTreeMap<&'static str, Vec<Part>>,
}

/// Whose figures a [`Part`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartOf {
    Device(u32),
    Process(ProcessIdx),
}

/// One device's or process's numerator, denominator (µs) and value of a metric that is their
/// mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    pub of: PartOf,
    pub numerator_us: f64,
    pub denominator_us: f64,
    pub value: f64,
}

impl<'t> Prepared<'t> {
    /// M2 from the rows' launch calls swept in the aggregate window (the user's, or the
    /// kernel hull).
    pub(super) fn new(
        rows: &'t dyn EventRows,
        host_facts: &'t HostFacts,
        kernels: &'t KernelSummary,
    ) -> Prepared<'t> {
        Prepared::with_launches(rows, host_facts, kernels, None)
    }

    /// [`Prepared::new`] from the launch calls swept already (while the scan read them), when
    /// that sweep assumed what the aggregate window holds; else swept here.
    pub(super) fn with_launches(
        rows: &'t dyn EventRows,
        host_facts: &'t HostFacts,
        kernels: &'t KernelSummary,
        swept: Option<LaunchSweepResult>,
    ) -> Prepared<'t> {
        let trace = rows.meta();
        let window = kernels.aggregate_window();
        let swept = swept
            .filter(|s| s.fits(window))
            .unwrap_or_else(|| sweep_loaded(rows, host_facts, window));
        let launches = swept.totals(window);
        Prepared {
            trace,
            sw: host_facts.sw,
            names: &host_facts.names,
            kernels,
            launches,
            skip_m3: kernels.skip_m3,
        }
    }

    /// The steps one process's regular CUDA-graph launches mark, if they do.
    pub fn graph_steps(&self) -> Option<&crate::iterations::inferred::UnitFound> {
        self.launches.graph_steps.as_ref()
    }

    /// Launch API calls in the trace (the facts' count).
    pub fn launch_api_calls(&self) -> u64 {
        self.launches.calls
    }

    /// Whether any launch API call's name satisfies `pred`.
    pub fn launched_any(&self, pred: impl Fn(&str) -> bool) -> bool {
        let strings = &self.trace.strings;
        self.launches
            .names_seen
            .iter()
            .any(|&n| pred(strings.get(n)))
    }

    /// Measures every metric inside the scope's window (`which` scope it is).
    pub fn measure(&self, which: Scope, scope: &ScopeSummary) -> ScopeMeasure {
        let window = &scope.window;
        let window_ns = window.measure;
        let window_us = if self.sw.clip_to_window {
            window_ns as f64 / 1000.0
        } else {
            let (s, e) = window.hull.unwrap_or((0, 0));
            (e - s) as f64 / 1000.0
        };
        if window_us <= 0.0 {
            return ScopeMeasure::zero(window_us);
        }
        let mut devices: Vec<DeviceMeasure> = scope
            .groups
            .iter()
            .map(|g| DeviceMeasure::new(g, window_us))
            .collect();
        // Devices that ran kernels in this window; a window without any kernel is all idle.
        if devices.iter().any(|d| d.kernels > 0) {
            devices.retain(|d| d.kernels > 0);
        }
        let processes = if self.sw.per_device {
            self.measure_processes(which, scope, window_us, &devices)
        } else {
            vec![self.measure_pooled(which, scope, window_us, &devices)]
        };
        ScopeMeasure::combine(window_us, devices, processes, self.trace.present.runtime)
    }

    /// Standard: M2 and M3 per process that ran kernels in the window.
    fn measure_processes(
        &self,
        which: Scope,
        scope: &ScopeSummary,
        window_us: f64,
        devices: &[DeviceMeasure],
    ) -> Vec<ProcessMeasure> {
        let owners = Self::kernel_owners(devices);
        owners
            .into_iter()
            .map(|(p, devs)| {
                let launch_us = self
                    .trace
                    .present
                    .runtime
                    .then(|| self.launches.covered(p, which) as f64 / 1000.0);
                let prep = self.prep_clipped(p, scope, window_us, &devs);
                ProcessMeasure {
                    process: p,
                    devices: devs.into_iter().collect(),
                    launch_calls: self.launches.calls_of(p),
                    launch_us,
                    launch_ratio: launch_us.map(|u| u / window_us),
                    prep,
                }
            })
            .collect()
    }

    /// Processes owning kernels in the window, with the devices they ran on (from the device pass).
    fn kernel_owners(devices: &[DeviceMeasure]) -> BTreeMap<ProcessIdx, BTreeSet<u32>> {
        let mut owners: BTreeMap<ProcessIdx, BTreeSet<u32>> = BTreeMap::new();
        for d in devices {
            let Some(device) = d.device else { continue };
            for &p in &d.processes {
                owners.entry(p).or_default().insert(device);
            }
        }
        owners
    }

    /// Standard M3 of one process: prep ranges clipped to the window, exposed where all of
    /// its devices are idle. `None` when the sweep could not track device sets (> 64 devices).
    fn prep_clipped(
        &self,
        process: ProcessIdx,
        scope: &ScopeSummary,
        window_us: f64,
        devices: &BTreeSet<u32>,
    ) -> Option<PrepMeasure> {
        // The first pattern whose ranges meet the window (entries are in pattern order).
        let prep = scope
            .prep_busy
            .iter()
            .find(|b| b.process == process && b.prep_ns > 0)?;
        let mask = self.device_mask(devices)?;
        let busy_in_window = ScopeSummary::busy_of(&scope.busy_by_mask, mask);
        let busy_in_prep = ScopeSummary::busy_of(&prep.by_mask, mask);
        let exposed_us = (prep.prep_ns - busy_in_prep) as f64 / 1000.0;
        let prep_us = prep.prep_ns as f64 / 1000.0;
        let idle_us = (scope.window.measure - busy_in_window) as f64 / 1000.0;
        let pattern = PREP_PATTERNS.get(prep.pattern).copied().unwrap_or("");
        Some(PrepMeasure::new(
            pattern, prep_us, exposed_us, idle_us, window_us,
        ))
    }

    /// The devices as a mask over `facts.devices` positions; `None` past 64 devices.
    fn device_mask(&self, devices: &BTreeSet<u32>) -> Option<u64> {
        if self.kernels.device_masks_overflow {
            return None;
        }
        let all = &self.kernels.facts.devices;
        Some(devices.iter().fold(0u64, |m, d| {
            all.binary_search(d)
                .ok()
                .filter(|&i| i < 64)
                .map_or(m, |i| m | (1u64 << i))
        }))
    }

    /// trtllm-skill: M2 as a plain sum over all launch calls and M3 over pooled ranges.
    fn measure_pooled(
        &self,
        which: Scope,
        scope: &ScopeSummary,
        window_us: f64,
        devices: &[DeviceMeasure],
    ) -> ProcessMeasure {
        let (count, sum) = self.launches.pooled(which);
        let launch_us = self.trace.present.runtime.then_some(sum as f64 / 1000.0);
        let prep = devices
            .first()
            .and_then(|d| prep_interior(scope, window_us, window_us - d.busy_us));
        ProcessMeasure {
            process: 0,
            devices: devices.iter().filter_map(|d| d.device).collect(),
            launch_calls: count,
            launch_us,
            launch_ratio: launch_us.map(|u| u / window_us),
            prep,
        }
    }
}

/// Reference M3 from the exposure the sweep measured ([`super::sweep::PrepExposure`]).
fn prep_interior(scope: &ScopeSummary, window_us: f64, idle_us: f64) -> Option<PrepMeasure> {
    let x = scope.prep_exposure?;
    let pattern = PREP_PATTERNS.get(x.pattern)?;
    Some(PrepMeasure::new(
        pattern,
        x.prep_us,
        x.exposed_us,
        idle_us,
        window_us,
    ))
}

impl DeviceMeasure {
    /// A group's figures as ratios of the window.
    fn new(g: &GroupSummary, window_us: f64) -> DeviceMeasure {
        let idle_us = window_us - g.busy_us;
        DeviceMeasure {
            device: g.device,
            processes: g.processes.clone(),
            kernels: g.kernels,
            busy_ns: g.busy_ns,
            busy_us: g.busy_us,
            nccl_us: g.nccl_us,
            gpu_idle_ratio: idle_us / window_us,
            gpu_utilization: g.busy_us / window_us,
            nccl_ratio: if g.busy_us > 0.0 {
                g.nccl_us / g.busy_us
            } else {
                0.0
            },
        }
    }
}

impl PrepMeasure {
    /// M3a/b/c from the exposed, prep, idle and window times (µs).
    fn new(
        pattern: &'static str,
        prep_us: f64,
        exposed_us: f64,
        idle_us: f64,
        window_us: f64,
    ) -> PrepMeasure {
        PrepMeasure {
            pattern,
            prep_us,
            exposed_us,
            idle_us,
            exposed_ratio: exposed_us / prep_us,
            perf_impact: exposed_us / window_us,
            idle_attribution: if idle_us > 0.0 {
                exposed_us / idle_us
            } else {
                0.0
            },
        }
    }
}

impl ScopeMeasure {
    fn zero(window_us: f64) -> ScopeMeasure {
        ScopeMeasure {
            window_us,
            metrics: Metrics {
                gpu_idle_ratio: Some(0.0),
                launch_overhead_ratio: Some(0.0),
                gpu_utilization: Some(0.0),
                nccl_ratio: Some(0.0),
                ..Metrics::default()
            },
            devices: Vec::new(),
            processes: Vec::new(),
            numerators: BTreeMap::new(),
            denominators: BTreeMap::new(),
            parts: BTreeMap::new(),
        }
    }

    /// Aggregates per-device and per-process values: means, with summed numerators and
    /// denominators where they divide to the mean, else each part's figures.
    fn combine(
        window_us: f64,
        devices: Vec<DeviceMeasure>,
        processes: Vec<ProcessMeasure>,
        has_runtime: bool,
    ) -> ScopeMeasure {
        let mut num = BTreeMap::new();
        let mut den = BTreeMap::new();
        let nd = devices.len() as f64;
        let dev_mean = |f: fn(&DeviceMeasure) -> f64| {
            (nd > 0.0).then(|| devices.iter().map(f).sum::<f64>() / nd)
        };
        let idle_sum: f64 = devices.iter().map(|d| window_us - d.busy_us).sum();
        let busy_sum: f64 = devices.iter().map(|d| d.busy_us).sum();
        num.insert("gpu_idle_ratio", idle_sum);
        den.insert("gpu_idle_ratio", window_us * nd);
        num.insert("gpu_utilization", busy_sum);
        den.insert("gpu_utilization", window_us * nd);
        let mut parts = BTreeMap::new();
        let device_parts: Vec<Part> = devices
            .iter()
            .filter_map(|d| {
                Some(Part {
                    of: PartOf::Device(d.device?),
                    numerator_us: d.nccl_us,
                    denominator_us: d.busy_us,
                    value: d.nccl_ratio,
                })
            })
            .collect();
        if device_parts.len() > 1 {
            parts.insert("nccl_ratio", device_parts);
        } else {
            num.insert("nccl_ratio", devices.iter().map(|d| d.nccl_us).sum());
            den.insert("nccl_ratio", busy_sum);
        }

        let launch: Vec<&ProcessMeasure> =
            processes.iter().filter(|p| p.launch_us.is_some()).collect();
        let launch_ratio = (has_runtime && !launch.is_empty()).then(|| {
            launch.iter().filter_map(|p| p.launch_ratio).sum::<f64>() / launch.len() as f64
        });
        num.insert(
            "launch_overhead_ratio",
            launch.iter().filter_map(|p| p.launch_us).sum(),
        );
        den.insert("launch_overhead_ratio", window_us * launch.len() as f64);

        let preps: Vec<&PrepMeasure> = processes.iter().filter_map(|p| p.prep.as_ref()).collect();
        let n = preps.len() as f64;
        let prep_mean = |f: fn(&PrepMeasure) -> f64| {
            (n > 0.0).then(|| preps.iter().map(|p| f(p)).sum::<f64>() / n)
        };
        let exposed: f64 = preps.iter().map(|p| p.exposed_us).sum();
        let process_parts = |den: fn(&PrepMeasure) -> f64, value: fn(&PrepMeasure) -> f64| {
            processes
                .iter()
                .filter_map(|p| {
                    let prep = p.prep.as_ref()?;
                    Some(Part {
                        of: PartOf::Process(p.process),
                        numerator_us: prep.exposed_us,
                        denominator_us: den(prep),
                        value: value(prep),
                    })
                })
                .collect::<Vec<Part>>()
        };
        if n > 1.0 {
            parts.insert(
                "host_prep_exposed_ratio",
                process_parts(|p| p.prep_us, |p| p.exposed_ratio),
            );
            parts.insert(
                "host_prep_idle_attribution",
                process_parts(|p| p.idle_us, |p| p.idle_attribution),
            );
        } else if n > 0.0 {
            num.insert("host_prep_exposed_ratio", exposed);
            den.insert(
                "host_prep_exposed_ratio",
                preps.iter().map(|p| p.prep_us).sum(),
            );
            num.insert("host_prep_idle_attribution", exposed);
            den.insert(
                "host_prep_idle_attribution",
                preps.iter().map(|p| p.idle_us).sum(),
            );
        }
        if n > 0.0 {
            num.insert("host_prep_perf_impact", exposed);
            den.insert("host_prep_perf_impact", window_us * n);
        }
        let metrics = Metrics {
            gpu_idle_ratio: dev_mean(|d| d.gpu_idle_ratio),
            launch_overhead_ratio: launch_ratio,
            gpu_utilization: dev_mean(|d| d.gpu_utilization),
            nccl_ratio: dev_mean(|d| d.nccl_ratio),
            host_prep_exposed_ratio: prep_mean(|p| p.exposed_ratio),
            host_prep_perf_impact: prep_mean(|p| p.perf_impact),
            host_prep_idle_attribution: prep_mean(|p| p.idle_attribution),
        };
        ScopeMeasure {
            window_us,
            metrics,
            devices,
            processes,
            numerators: num,
            denominators: den,
            parts,
        }
    }
}

/// `f(slot, pattern, range)` for each host-prep pattern `row` matches: the slot is the range's
/// process (standard) or 0 (pooled).
pub(super) fn prep_of_row(
    row: &NvtxRow,
    threads: &Threads,
    names: &NameTables,
    sw: &Switches,
    f: &mut impl FnMut(usize, usize, (Ns, Ns)),
) {
    let Some(name) = visible_row_name(row, sw) else {
        return;
    };
    let slot = if sw.prep_per_process {
        threads
            .process
            .get(row.thread as usize)
            .copied()
            .unwrap_or(0) as usize
    } else {
        0
    };
    for (p, table) in names.prep.iter().enumerate() {
        if crate::model::flag(table, name) {
            f(slot, p, (row.start, row.end));
        }
    }
}

/// Host-prep ranges collected from NVTX ranges as they are read, in table order: one range per
/// step and rank, so the lists grow by an eighth (their size is not known ahead).
#[derive(Debug, Default)]
pub(super) struct PrepCollector {
    slots: Vec<PrepRanges>,
}

impl PrepCollector {
    pub(super) fn push(
        &mut self,
        row: &NvtxRow,
        threads: &Threads,
        names: &NameTables,
        sw: &Switches,
    ) {
        let slots = &mut self.slots;
        prep_of_row(row, threads, names, sw, &mut |slot, p, range| {
            if slots.len() <= slot {
                slots.resize_with(slot + 1, PrepRanges::default);
            }
            push_gently(&mut slots[slot].by_pattern[p], range);
        });
    }

    /// The ranges held so far.
    pub(super) fn held(&self) -> usize {
        self.slots
            .iter()
            .flat_map(|s| &s.by_pattern)
            .map(Vec::len)
            .sum()
    }

    /// The ranges per slot: one per process of a trace with `processes` (standard), or one.
    pub(super) fn finish(mut self, processes: usize, sw: &Switches) -> Vec<PrepRanges> {
        let slots = if sw.prep_per_process { processes } else { 1 };
        self.slots
            .resize_with(slots.max(self.slots.len()), PrepRanges::default);
        for ranges in self.slots.iter_mut().flat_map(|s| &mut s.by_pattern) {
            ranges.shrink_to_fit();
        }
        self.slots
    }
}
