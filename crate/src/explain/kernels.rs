//! Top kernels by total time, and launch-storm detection (spec §5).

use serde::Serialize;

use super::stats::quantiles;
use crate::index::TraceIndex;
use crate::index::units::{ratio, us};
use crate::model::{NameId, Ns};

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

/// Per name id: (count, total ns, min, max).
fn per_name(ix: &TraceIndex<'_>) -> Vec<(u64, Ns, Ns, Ns)> {
    let k = &ix.trace.kernels;
    let mut acc = vec![(0u64, 0 as Ns, Ns::MAX, Ns::MIN); ix.trace.strings.len() + 1];
    let last = acc.len() - 1;
    for i in 0..k.len() {
        let d = (k.end[i] - k.start[i]).max(0);
        let a = &mut acc[(k.short_name[i] as usize).min(last)];
        *a = (a.0 + 1, a.1 + d, a.2.min(d), a.3.max(d));
    }
    acc
}

/// The `top` names by total kernel time, with percentiles.
pub fn kernel_summary(ix: &TraceIndex<'_>, top: usize) -> KernelTime {
    let k = &ix.trace.kernels;
    let acc = per_name(ix);
    let total: Ns = acc.iter().map(|a| a.1).sum();
    let mut order: Vec<usize> = (0..acc.len()).filter(|&i| acc[i].0 > 0).collect();
    let distinct = order.len() as u64;
    order.sort_by(|&a, &b| acc[b].1.cmp(&acc[a].1).then(a.cmp(&b)));
    order.truncate(top);
    // Durations of the kept names only, gathered in one pass.
    let mut kept: Vec<Vec<Ns>> = order
        .iter()
        .map(|&o| Vec::with_capacity(acc[o].0 as usize))
        .collect();
    let mut position = vec![usize::MAX; acc.len()];
    for (p, &o) in order.iter().enumerate() {
        position[o] = p;
    }
    let last = acc.len() - 1;
    for i in 0..k.len() {
        let name = (k.short_name[i] as usize).min(last);
        if let Some(durations) = kept.get_mut(position[name]) {
            durations.push((k.end[i] - k.start[i]).max(0));
        }
    }
    let top = order
        .iter()
        .zip(kept.iter_mut())
        .map(|(&name, durations)| {
            let (count, sum, min, max) = acc[name];
            let [p50, p90] = quantiles(durations, [0.5, 0.9]);
            KernelStats {
                name: match ix.trace.strings.get(name as NameId) {
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
        kernels: k.len() as u64,
        total_us: us(total),
        distinct_names: distinct,
        top,
    }
}

/// Launch rate over the window and the share of tiny kernels.
pub fn launch_storm(ix: &TraceIndex<'_>, window: (Ns, Ns)) -> LaunchStorm {
    let k = &ix.trace.kernels;
    let window_s = (window.1 - window.0).max(0) as f64 / 1e9;
    let mut per_process = vec![0u64; ix.trace.processes.len()];
    let rt = &ix.trace.runtime;
    let mut calls = 0u64;
    for r in 0..rt.len() {
        if ix.call_kind(r).launches_kernels() {
            calls += 1;
            if let Some(c) = ix
                .call_process(r)
                .and_then(|p| per_process.get_mut(p as usize))
            {
                *c += 1;
            }
        }
    }
    if !ix.trace.present.runtime {
        calls = k.len() as u64;
        for &p in &k.process {
            if let Some(c) = per_process.get_mut(p as usize) {
                *c += 1;
            }
        }
    }
    let tiny = (0..k.len())
        .filter(|&i| k.end[i] - k.start[i] < TINY_KERNEL_NS)
        .count() as u64;
    let rate = |n: u64| ratio(n as f64, window_s);
    let max_rate = per_process.iter().map(|&n| rate(n)).fold(0.0, f64::max);
    let tiny_share = ratio(tiny as f64, k.len() as f64);
    LaunchStorm {
        launch_calls: calls,
        window_us: window_s * 1e6,
        launches_per_s: rate(calls),
        max_process_launches_per_s: max_rate,
        tiny_kernels: tiny,
        tiny_share,
        tiny_threshold_us: us(TINY_KERNEL_NS),
        storm: max_rate > STORM_LAUNCHES_PER_S && tiny_share > STORM_TINY_SHARE,
    }
}
