//! Top kernels by total time, and launch-storm detection (spec §5).
//!
//! Folded over the kernel rows: a first pass ([`KernelTally`]) counts per name and finds the
//! window; the top names' percentiles come from their durations read twice more
//! ([`Percentiles`]), so no kernel is held.

use serde::Serialize;

use hashbrown::HashMap;

use super::stats::{Percentiles, most_first};
use crate::index::units::{ratio, us};
use crate::model::rows::KernelRow;
use crate::model::{NameId, Ns, ProcessIdx, Strings};
use crate::names::api::ApiKind;

/// Kernels shorter than this cost less GPU time than launching them costs the host.
pub const TINY_KERNEL_NS: Ns = 10_000;
/// A process launching faster than this (per second of the window) is storming...
pub const STORM_LAUNCHES_PER_S: f64 = 10_000.0;
/// ...when more than this share of its kernels are tiny.
pub const STORM_TINY_SHARE: f64 = 0.5;

/// One kernel name's durations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelStats {
    pub name: String,
    pub count: u64,
    pub total_us: f64,
    pub avg_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Share of all kernel time.
    pub share: f64,
}

/// Kernel time by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelTime {
    pub kernels: u64,
    pub total_us: f64,
    pub distinct_names: u64,
    /// Most total time first.
    pub top: Vec<KernelStats>,
}

/// Launch rate and tiny kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchStorm {
    /// Kernel and graph launch API calls (kernels, when no runtime table).
    pub launch_calls: u64,
    pub window_us: f64,
    pub launches_per_s: f64,
    /// The fastest-launching process's rate.
    pub max_process_launches_per_s: f64,
    pub tiny_kernels: u64,
    pub tiny_share: f64,
    pub tiny_threshold_us: f64,
    pub storm: bool,
}

/// `(count, total ns, min ns, max ns)` of one kernel name.
type NameAcc = (u64, Ns, Ns, Ns);

/// What one pass over the kernels counts: how many, their extent, time per name, tiny kernels
/// and kernels per process.
#[derive(Debug, Clone, Default)]
pub struct KernelTally {
    count: u64,
    extent: Option<(Ns, Ns)>,
    /// By short name id; ids past the string table share the id one past its end.
    per_name: HashMap<usize, NameAcc>,
    unknown_name: usize,
    tiny: u64,
    per_process: Vec<u64>,
}

impl KernelTally {
    /// For a trace of `strings` strings and `processes` processes.
    pub fn new(strings: usize, processes: usize) -> KernelTally {
        KernelTally {
            unknown_name: strings,
            per_process: vec![0; processes],
            ..KernelTally::default()
        }
    }

    /// A copy, memset or graph replay: it widens the window (every GPU operation's extent)
    /// and counts nowhere else.
    pub fn widen(&mut self, k: &KernelRow) {
        self.extent = Some(match self.extent {
            None => (k.start, k.end),
            Some((s, e)) => (s.min(k.start), e.max(k.end)),
        });
    }

    pub fn add(&mut self, k: &KernelRow) {
        self.count += 1;
        self.widen(k);
        let d = (k.end - k.start).max(0);
        let a =
            self.per_name
                .entry(self.name_key(k.short_name))
                .or_insert((0, 0, Ns::MAX, Ns::MIN));
        *a = (a.0 + 1, a.1 + d, a.2.min(d), a.3.max(d));
        if k.end - k.start < TINY_KERNEL_NS {
            self.tiny += 1;
        }
        if let Some(c) = self.per_process.get_mut(k.process as usize) {
            *c += 1;
        }
    }

    /// The key a kernel name is counted under.
    pub fn name_key(&self, name: NameId) -> usize {
        name_key(name, self.unknown_name)
    }

    /// How many kernels were read.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// First kernel start and last kernel end; `None` without kernels.
    pub fn extent(&self) -> Option<(Ns, Ns)> {
        self.extent
    }

    /// The `top` names by total time (ties by id): the names whose durations the second pass
    /// counts.
    pub fn top_names(&self, top: usize) -> Vec<usize> {
        top_by_time(&self.per_name, |a| (a.0, a.1), top)
    }
}

/// A kernel short name's key in a trace of `strings` strings: its id, or one past the string
/// table for every id past it.
pub fn name_key(name: NameId, strings: usize) -> usize {
    (name as usize).min(strings)
}

/// [`KernelTally::top_names`] from each short name's kernel count and summed duration as
/// another pass counted them (`(name, count, total ns)`, the drill-down's index): the same
/// names, known before this pass reads a kernel.
pub fn top_names_of(
    times: impl Iterator<Item = (NameId, u64, Ns)>,
    strings: usize,
    top: usize,
) -> Vec<usize> {
    let mut per_name: HashMap<usize, (u64, Ns)> = HashMap::new();
    for (name, count, total) in times {
        let a = per_name.entry(name_key(name, strings)).or_default();
        *a = (a.0 + count, a.1 + total);
    }
    top_by_time(&per_name, |&a| a, top)
}

/// The `top` names with kernels by total time (ties by id); `time` gives `(count, total)`.
fn top_by_time<T: Copy>(
    per_name: &HashMap<usize, T>,
    time: impl Fn(&T) -> (u64, Ns),
    top: usize,
) -> Vec<usize> {
    let mut order = most_first(per_name, |a| time(a).0 > 0, |a| time(a).1);
    order.truncate(top);
    order.into_iter().map(|(name, _)| name).collect()
}

/// The quantiles of each top name's durations: p50, p90.
pub const KERNEL_QUANTILES: [f64; 2] = [0.5, 0.9];

/// The `top` names by total kernel time, with percentiles; `durations` holds the durations of
/// [`KernelTally::top_names`]`(top)` at [`KERNEL_QUANTILES`].
pub fn kernel_summary(
    tally: &KernelTally,
    durations: &HashMap<usize, Percentiles>,
    strings: &Strings,
    top: usize,
) -> KernelTime {
    let total: Ns = tally
        .per_name
        .values()
        .map(|a| a.1)
        .fold(0, Ns::saturating_add);
    let distinct = tally.per_name.values().filter(|a| a.0 > 0).count() as u64;
    let top = tally
        .top_names(top)
        .into_iter()
        .map(|name| {
            let (count, sum, min, max) = tally.per_name[&name];
            let q = durations.get(&name).map(Percentiles::values);
            let at = |i: usize| q.as_ref().and_then(|q| q.get(i).copied()).unwrap_or(0);
            let (p50, p90) = (at(0), at(1));
            KernelStats {
                name: match strings.get(name as NameId) {
                    "" => "(unnamed)".to_string(),
                    s => s.to_string(),
                },
                count,
                total_us: us(sum),
                avg_us: us(sum) / count as f64,
                p50_us: us(p50),
                p90_us: us(p90),
                min_us: us(min),
                max_us: us(max),
                share: ratio(sum as f64, total as f64),
            }
        })
        .collect();
    KernelTime {
        kernels: tally.count,
        total_us: us(total),
        distinct_names: distinct,
        top,
    }
}

/// Kernel and graph launch calls, counted over the calls pass.
#[derive(Debug, Clone, Default)]
pub struct LaunchCalls {
    calls: u64,
    per_process: Vec<u64>,
}

impl LaunchCalls {
    pub fn new(processes: usize) -> LaunchCalls {
        LaunchCalls {
            calls: 0,
            per_process: vec![0; processes],
        }
    }

    /// Counts a call of kind `kind`, made by `process`, if it launches kernels.
    pub fn add(&mut self, kind: ApiKind, process: Option<ProcessIdx>) {
        if kind.launches_kernels() {
            self.calls += 1;
            if let Some(c) = process.and_then(|p| self.per_process.get_mut(p as usize)) {
                *c += 1;
            }
        }
    }
}

/// Launch rate over the window and the share of tiny kernels; `runtime` says whether the trace
/// has a runtime table (without one, each kernel counts as its launch).
pub fn launch_storm(
    tally: &KernelTally,
    launches: &LaunchCalls,
    runtime: bool,
    window: (Ns, Ns),
) -> LaunchStorm {
    let window_s = (window.1 - window.0).max(0) as f64 / 1e9;
    let mut per_process = launches.per_process.clone();
    let calls = match runtime {
        true => launches.calls,
        false => {
            for (c, k) in per_process.iter_mut().zip(&tally.per_process) {
                *c += k;
            }
            tally.count
        }
    };
    let rate = |n: u64| ratio(n as f64, window_s);
    let max_rate = per_process.iter().map(|&n| rate(n)).fold(0.0, f64::max);
    let tiny_share = ratio(tally.tiny as f64, tally.count as f64);
    LaunchStorm {
        launch_calls: calls,
        window_us: window_s * 1e6,
        launches_per_s: rate(calls),
        max_process_launches_per_s: max_rate,
        tiny_kernels: tally.tiny,
        tiny_share,
        tiny_threshold_us: us(TINY_KERNEL_NS),
        storm: max_rate > STORM_LAUNCHES_PER_S && tiny_share > STORM_TINY_SHARE,
    }
}
