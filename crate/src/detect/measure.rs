//! Measuring one scope (the aggregate window or a phase window): M1–M5 per device, per
//! process and aggregated, with their numerators and denominators.
//!
//! [`Prepared`] indexes the trace once (kernels grouped and sorted, launch calls and host-prep
//! ranges per process); [`Prepared::measure`] then runs per window. The profile's switches
//! decide grouping (per device or pooled), clipping, and the launch/prep rules.

use std::collections::{BTreeMap, BTreeSet};

use super::config::Switches;
use super::names::{NameTables, PREP_PATTERNS};
use super::result::Metrics;
use super::steps::visible_name;
use crate::model::intervals::{IntervalSet, MergeSorted, overlap_with};
use crate::model::{Ns, ProcessIdx, Trace};
use crate::pyfmt::naive_sum;

/// Kernels of one device (or of all devices, pooled), sorted by `(start, end)`.
struct KernelGroup {
    device: Option<u32>,
    idx: Vec<u32>,
}

/// Host-prep ranges of one process (or of all, pooled), per pattern, in table order.
#[derive(Default)]
struct PrepRanges {
    by_pattern: [Vec<(Ns, Ns)>; 3],
}

/// The trace indexed for repeated scope measurements.
pub struct Prepared<'t> {
    pub trace: &'t Trace,
    pub sw: Switches,
    pub names: NameTables,
    groups: Vec<KernelGroup>,
    /// Per process: its kernel-launch API calls (runtime row indices sorted by start; standard).
    launch_idx: Vec<Vec<u32>>,
    /// Per process: number of launch calls.
    launch_counts: Vec<u64>,
    /// Per process (standard) or one pooled entry at index 0 (trtllm-skill).
    prep: Vec<PrepRanges>,
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
    /// Aggregate numerators (µs) per metric key, for the evidence table.
    pub numerators: BTreeMap<&'static str, f64>,
    pub denominators: BTreeMap<&'static str, f64>,
}

impl<'t> Prepared<'t> {
    pub fn new(
        trace: &'t Trace,
        sw: Switches,
        skip_m3: bool,
        marker: Option<&super::names::StepMarker>,
    ) -> Prepared<'t> {
        let names = NameTables::build(&trace.strings, &sw, marker);
        let groups = group_kernels(trace, sw.per_device);
        let (launch_idx, launch_counts) = index_launches(trace, &names, &sw);
        let prep = if skip_m3 {
            Vec::new()
        } else {
            index_prep(trace, &names, &sw)
        };
        Prepared {
            trace,
            sw,
            names,
            groups,
            launch_idx,
            launch_counts,
            prep,
            skip_m3,
        }
    }

    /// Measures every metric inside `window`.
    pub fn measure(&self, window: &IntervalSet) -> ScopeMeasure {
        let window_ns = window.measure();
        let window_us = if self.sw.clip_to_window {
            window_ns as f64 / 1000.0
        } else {
            let (s, e) = window.hull().unwrap_or((0, 0));
            (e - s) as f64 / 1000.0
        };
        if window_us <= 0.0 {
            return ScopeMeasure::zero(window_us);
        }
        let mut devices: Vec<DeviceMeasure> = self
            .groups
            .iter()
            .filter_map(|g| self.measure_group(g, window, window_us))
            .collect();
        // Devices that ran kernels in this window; a window without any kernel is all idle.
        if devices.iter().any(|d| d.kernels > 0) {
            devices.retain(|d| d.kernels > 0);
        }
        let processes = if self.sw.per_device {
            self.measure_processes(window, window_us, &devices)
        } else {
            vec![self.measure_pooled(window, window_us, &devices)]
        };
        ScopeMeasure::combine(window_us, devices, processes, self.trace.present.runtime)
    }

    /// Busy time, kernel count, owning processes and NCCL time of one kernel group inside the
    /// window, in one streaming pass (the union itself is never stored).
    fn measure_group(
        &self,
        g: &KernelGroup,
        window: &IntervalSet,
        window_us: f64,
    ) -> Option<DeviceMeasure> {
        let k = &self.trace.kernels;
        let (hs, he) = window.hull()?;
        let upto = g.idx.partition_point(|&i| k.start[i as usize] < he);
        let clip = self.sw.clip_to_window;
        let selected = g.idx[..upto].iter().map(|&i| i as usize).filter(|&i| {
            if clip {
                k.end[i] > hs && overlaps(window, k.start[i], k.end[i])
            } else {
                in_window(window, k.start[i])
            }
        });
        let mut count = 0u64;
        let mut nccl_raw: Ns = 0;
        let mut nccl_spans: Vec<(Ns, Ns)> = Vec::new();
        let mut processes: Vec<ProcessIdx> = Vec::new();
        let spans = selected.map(|i| {
            count += 1;
            if processes.last() != Some(&k.process[i]) {
                processes.push(k.process[i]);
            }
            if self.names.is_nccl(k.short_name[i]) {
                nccl_raw += k.end[i] - k.start[i];
                if clip {
                    nccl_spans.push((k.start[i], k.end[i]));
                }
            }
            (k.start[i], k.end[i])
        });
        let merged = MergeSorted::new(spans);
        let (busy_ns, busy_us) = if clip {
            let ns = overlap_with(merged, window);
            (ns, ns as f64 / 1000.0)
        } else {
            // Reference order: a float sum over the merged intervals, ascending.
            merged.fold((0, 0.0), |(ns, us), (s, e)| {
                (ns + (e - s), us + (e - s) as f64 / 1000.0)
            })
        };
        let nccl_us = if clip {
            overlap_with(MergeSorted::new(nccl_spans.into_iter()), window) as f64 / 1000.0
        } else {
            nccl_raw as f64 / 1000.0
        };
        let idle_us = window_us - busy_us;
        processes.sort_unstable();
        processes.dedup();
        Some(DeviceMeasure {
            device: g.device,
            processes,
            kernels: count,
            busy_ns,
            busy_us,
            nccl_us,
            gpu_idle_ratio: idle_us / window_us,
            gpu_utilization: busy_us / window_us,
            nccl_ratio: if busy_us > 0.0 {
                nccl_us / busy_us
            } else {
                0.0
            },
        })
    }

    /// Kernel intervals of a group that start before `end`, in `(start, end)` order.
    fn group_spans<'a>(
        &'a self,
        g: &'a KernelGroup,
        end: Ns,
    ) -> impl Iterator<Item = (Ns, Ns)> + 'a {
        let k = &self.trace.kernels;
        let upto = g.idx.partition_point(|&i| k.start[i as usize] < end);
        g.idx[..upto]
            .iter()
            .map(move |&i| (k.start[i as usize], k.end[i as usize]))
    }

    /// Busy time of the union of `devices` inside `window` and inside `prep` (⊆ window).
    fn busy_overlaps(
        &self,
        devices: &BTreeSet<u32>,
        window: &IntervalSet,
        prep: &IntervalSet,
        measured: &[DeviceMeasure],
    ) -> (Ns, Ns) {
        let end = window.hull().map_or(0, |(_, e)| e);
        let groups: Vec<&KernelGroup> = self
            .groups
            .iter()
            .filter(|g| g.device.is_some_and(|d| devices.contains(&d)))
            .collect();
        if let [g] = groups[..] {
            // One device: its busy time in the window was measured already.
            let in_window = measured.iter().find(|d| d.device == g.device).map_or_else(
                || overlap_with(MergeSorted::new(self.group_spans(g, end)), window),
                |d| d.busy_ns,
            );
            let in_prep = overlap_with(MergeSorted::new(self.group_spans(g, end)), prep);
            return (in_window, in_prep);
        }
        let mut all: Vec<(Ns, Ns)> = groups
            .iter()
            .flat_map(|g| self.group_spans(g, end))
            .collect();
        all.sort_unstable();
        (
            overlap_with(MergeSorted::new(all.iter().copied()), window),
            overlap_with(MergeSorted::new(all.iter().copied()), prep),
        )
    }

    /// Standard: M2 and M3 per process that ran kernels in the window.
    fn measure_processes(
        &self,
        window: &IntervalSet,
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
                    .then(|| self.launch_overlap(p, window) as f64 / 1000.0);
                let prep = self
                    .prep
                    .get(p as usize)
                    .and_then(|r| self.prep_clipped(r, window, window_us, &devs, devices));
                ProcessMeasure {
                    process: p,
                    devices: devs.into_iter().collect(),
                    launch_calls: self.launch_counts.get(p as usize).copied().unwrap_or(0),
                    launch_us,
                    launch_ratio: launch_us.map(|u| u / window_us),
                    prep,
                }
            })
            .collect()
    }

    /// Time inside the window covered by the process's launch calls (their union).
    fn launch_overlap(&self, p: ProcessIdx, window: &IntervalSet) -> Ns {
        let rt = &self.trace.runtime;
        let Some(idx) = self.launch_idx.get(p as usize) else {
            return 0;
        };
        let spans = idx
            .iter()
            .map(|&i| (rt.start[i as usize], rt.end[i as usize]));
        overlap_with(MergeSorted::new(spans), window)
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
    /// its devices are idle.
    fn prep_clipped(
        &self,
        r: &PrepRanges,
        window: &IntervalSet,
        window_us: f64,
        devices: &BTreeSet<u32>,
        measured: &[DeviceMeasure],
    ) -> Option<PrepMeasure> {
        let (pattern, prep) =
            PREP_PATTERNS
                .iter()
                .zip(&r.by_pattern)
                .find_map(|(pat, ranges)| {
                    let set = IntervalSet::from_unsorted(ranges.clone()).intersection(window);
                    (!set.is_empty()).then_some((*pat, set))
                })?;
        let (busy_in_window, busy_in_prep) = self.busy_overlaps(devices, window, &prep, measured);
        let prep_ns = prep.measure();
        let exposed_us = (prep_ns - busy_in_prep) as f64 / 1000.0;
        let prep_us = prep_ns as f64 / 1000.0;
        let idle_us = (window.measure() - busy_in_window) as f64 / 1000.0;
        Some(PrepMeasure::new(
            pattern, prep_us, exposed_us, idle_us, window_us,
        ))
    }

    /// trtllm-skill: M2 as a plain sum over all launch calls and M3 over pooled ranges.
    fn measure_pooled(
        &self,
        window: &IntervalSet,
        window_us: f64,
        devices: &[DeviceMeasure],
    ) -> ProcessMeasure {
        let rt = &self.trace.runtime;
        let calls = (0..rt.len())
            .filter(|&i| self.names.is_launch(rt.name[i]) && in_window(window, rt.start[i]));
        let (count, sum) = calls.fold((0u64, 0i64), |(c, t), i| {
            (c + 1, t + (rt.end[i] - rt.start[i]))
        });
        let launch_us = self.trace.present.runtime.then_some(sum as f64 / 1000.0);
        let prep = devices.first().and_then(|d| {
            let idle_us = window_us - d.busy_us;
            self.prep
                .first()
                .and_then(|r| self.prep_interior(r, window, window_us, idle_us))
        });
        ProcessMeasure {
            process: 0,
            devices: devices.iter().filter_map(|d| d.device).collect(),
            launch_calls: count,
            launch_us,
            launch_ratio: launch_us.map(|u| u / window_us),
            prep,
        }
    }

    /// Reference M3: ranges fully inside the window, exposure over interior kernel gaps,
    /// accumulated in the reference's nested order.
    fn prep_interior(
        &self,
        r: &PrepRanges,
        window: &IntervalSet,
        window_us: f64,
        idle_us: f64,
    ) -> Option<PrepMeasure> {
        let (ws, we) = window.hull()?;
        let (pattern, ranges) =
            PREP_PATTERNS
                .iter()
                .zip(&r.by_pattern)
                .find_map(|(pat, ranges)| {
                    let inside: Vec<(Ns, Ns)> = ranges
                        .iter()
                        .copied()
                        .filter(|&(s, e)| s >= ws && e <= we)
                        .collect();
                    (!inside.is_empty()).then_some((*pat, inside))
                })?;
        let prep_us = naive_sum(ranges.iter().map(|&(s, e)| (e - s) as f64 / 1000.0));
        if prep_us <= 0.0 {
            return None;
        }
        let gaps = self.interior_gaps_touching(window, &IntervalSet::from_unsorted(ranges.clone()));
        let mut exposed_us = 0.0;
        for &(s, e) in &ranges {
            let first = gaps.partition_point(|&(_, ge)| ge <= s);
            for &(gs, ge) in gaps[first..].iter().take_while(|&&(gs, _)| gs < e) {
                exposed_us += (e.min(ge) - s.max(gs)).max(0) as f64 / 1000.0;
            }
        }
        Some(PrepMeasure::new(
            pattern, prep_us, exposed_us, idle_us, window_us,
        ))
    }

    /// Gaps between consecutive merged (pooled, start-in-window) kernel intervals that touch
    /// `near`; gaps far from any host-prep range add nothing, so they are not stored.
    fn interior_gaps_touching(&self, window: &IntervalSet, near: &IntervalSet) -> Vec<(Ns, Ns)> {
        let Some(g) = self.groups.first() else {
            return Vec::new();
        };
        let end = window.hull().map_or(0, |(_, e)| e);
        let spans = self
            .group_spans(g, end)
            .filter(|&(s, _)| in_window(window, s));
        let mut gaps = Vec::new();
        let mut prev_end: Option<Ns> = None;
        for (s, e) in MergeSorted::new(spans) {
            if let Some(pe) = prev_end
                && s > pe
                && overlaps(near, pe, s)
            {
                gaps.push((pe, s));
            }
            prev_end = Some(e);
        }
        gaps
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
        }
    }

    /// Aggregates per-device and per-process values: means, with summed numerators.
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
        num.insert("nccl_ratio", devices.iter().map(|d| d.nccl_us).sum());
        den.insert("nccl_ratio", busy_sum);

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
        if n > 0.0 {
            num.insert("host_prep_exposed_ratio", exposed);
            den.insert(
                "host_prep_exposed_ratio",
                preps.iter().map(|p| p.prep_us).sum(),
            );
            num.insert("host_prep_perf_impact", exposed);
            den.insert("host_prep_perf_impact", window_us * n);
            num.insert("host_prep_idle_attribution", exposed);
            den.insert(
                "host_prep_idle_attribution",
                preps.iter().map(|p| p.idle_us).sum(),
            );
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
        }
    }
}

/// Whether `t` lies in one of the window's `[start, end)` intervals.
fn in_window(window: &IntervalSet, t: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, e)| e <= t);
    i < spans.len() && spans[i].0 <= t
}

/// Whether `[s, e)` overlaps the window (zero-length intervals count when they lie inside).
fn overlaps(window: &IntervalSet, s: Ns, e: Ns) -> bool {
    let spans = window.spans();
    let i = spans.partition_point(|&(_, we)| we <= s);
    i < spans.len() && (spans[i].0 < e || (s == e && spans[i].0 <= s))
}

/// Groups kernel indices per device (or pooled) and sorts each group by `(start, end)`.
fn group_kernels(trace: &Trace, per_device: bool) -> Vec<KernelGroup> {
    let k = &trace.kernels;
    let mut groups: Vec<KernelGroup> = if per_device {
        let mut by_device: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for i in 0..k.len() {
            by_device.entry(k.device[i]).or_default().push(i as u32);
        }
        by_device
            .into_iter()
            .map(|(d, idx)| KernelGroup {
                device: Some(d),
                idx,
            })
            .collect()
    } else {
        vec![KernelGroup {
            device: None,
            idx: (0..k.len() as u32).collect(),
        }]
    };
    for g in &mut groups {
        let key = |&i: &u32| (k.start[i as usize], k.end[i as usize]);
        if !g.idx.is_sorted_by_key(key) {
            g.idx.sort_unstable_by_key(key);
        }
    }
    groups
}

/// Kernel-launch API calls: per-process row indices sorted by start (standard) and counts.
fn index_launches(trace: &Trace, names: &NameTables, sw: &Switches) -> (Vec<Vec<u32>>, Vec<u64>) {
    let rt = &trace.runtime;
    let nproc = trace.processes.len();
    let mut per_process: Vec<Vec<u32>> = vec![
        Vec::new();
        if sw.launch_union_per_process {
            nproc
        } else {
            0
        }
    ];
    let mut counts = vec![0u64; nproc];
    for i in 0..rt.len() {
        if !names.is_launch(rt.name[i]) {
            continue;
        }
        let p = trace
            .threads
            .process
            .get(rt.thread[i] as usize)
            .copied()
            .unwrap_or(0) as usize;
        if let Some(c) = counts.get_mut(p) {
            *c += 1;
        }
        if let Some(v) = per_process.get_mut(p) {
            v.push(i as u32);
        }
    }
    for idx in &mut per_process {
        let key = |&i: &u32| (rt.start[i as usize], rt.end[i as usize]);
        if !idx.is_sorted_by_key(key) {
            idx.sort_unstable_by_key(key);
        }
    }
    (per_process, counts)
}

/// Host-prep ranges per process (standard) or pooled (trtllm-skill), per pattern, in table order.
fn index_prep(trace: &Trace, names: &NameTables, sw: &Switches) -> Vec<PrepRanges> {
    let nv = &trace.nvtx;
    let slots = if sw.prep_per_process {
        trace.processes.len()
    } else {
        1
    };
    let mut out: Vec<PrepRanges> = (0..slots).map(|_| PrepRanges::default()).collect();
    for i in 0..nv.len() {
        let Some(name) = visible_name(nv, i, sw) else {
            continue;
        };
        let slot = if sw.prep_per_process {
            trace
                .threads
                .process
                .get(nv.thread[i] as usize)
                .copied()
                .unwrap_or(0) as usize
        } else {
            0
        };
        for (p, table) in names.prep.iter().enumerate() {
            if crate::model::flag(table, name)
                && let Some(r) = out.get_mut(slot)
            {
                r.by_pattern[p].push((nv.start[i], nv.end[i]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_membership_is_half_open() {
        let w = IntervalSet::from_unsorted(vec![(10, 20), (30, 40)]);
        assert!(in_window(&w, 10) && in_window(&w, 19) && in_window(&w, 30));
        assert!(
            !in_window(&w, 20) && !in_window(&w, 25) && !in_window(&w, 40) && !in_window(&w, 5)
        );
        assert!(
            overlaps(&w, 15, 35)
                && overlaps(&w, 19, 21)
                && !overlaps(&w, 20, 30)
                && !overlaps(&w, 0, 10)
        );
    }
}
