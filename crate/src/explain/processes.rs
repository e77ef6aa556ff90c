//! Per-process breakdown (spec §5): what each process ran on the GPUs and spent in CUDA calls.

use serde::Serialize;

use crate::index::TraceIndex;
use crate::index::units::us;
use crate::model::Ns;
use crate::names::api::ApiKind;

/// One process's activity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessStats {
    pub pid: u32,
    pub name: String,
    pub devices: Vec<u32>,
    pub kernels: u64,
    pub kernel_us: f64,
    pub launch_calls: u64,
    pub api_calls: u64,
    pub api_us: f64,
    pub sync_calls: u64,
    pub sync_us: f64,
    pub memcpy: u64,
    pub memcpy_bytes: u64,
    pub nvtx_ranges: u64,
}

#[derive(Default, Clone)]
struct Acc {
    devices: Vec<u32>,
    kernels: u64,
    kernel_ns: Ns,
    launch_calls: u64,
    api_calls: u64,
    api_ns: Ns,
    sync_calls: u64,
    sync_ns: Ns,
    memcpy: u64,
    memcpy_bytes: u64,
    nvtx: u64,
}

/// Processes that ran kernels or called the CUDA API, by pid.
pub fn process_breakdown(ix: &TraceIndex<'_>) -> Vec<ProcessStats> {
    let t = ix.trace;
    let mut acc = vec![Acc::default(); t.processes.len()];
    let k = &t.kernels;
    for i in 0..k.len() {
        if let Some(a) = acc.get_mut(k.process[i] as usize) {
            a.kernels += 1;
            a.kernel_ns += (k.end[i] - k.start[i]).max(0);
            if !a.devices.contains(&k.device[i]) {
                a.devices.push(k.device[i]);
            }
        }
    }
    let rt = &t.runtime;
    for r in 0..rt.len() {
        let Some(a) = ix.call_process(r).and_then(|p| acc.get_mut(p as usize)) else {
            continue;
        };
        let d = (rt.end[r] - rt.start[r]).max(0);
        a.api_calls += 1;
        a.api_ns += d;
        match ix.call_kind(r) {
            kind if kind.launches_kernels() => a.launch_calls += 1,
            ApiKind::BlockingSync => {
                a.sync_calls += 1;
                a.sync_ns += d;
            }
            _ => {}
        }
    }
    for i in 0..t.memcpy.len() {
        if let Some(a) = acc.get_mut(t.memcpy.process[i] as usize) {
            a.memcpy += 1;
            a.memcpy_bytes += t.memcpy.bytes.get(i).copied().unwrap_or(0);
        }
    }
    for &th in &t.nvtx.thread {
        if let Some(a) = t
            .threads
            .process
            .get(th as usize)
            .and_then(|&p| acc.get_mut(p as usize))
        {
            a.nvtx += 1;
        }
    }
    let mut out: Vec<ProcessStats> = acc
        .into_iter()
        .enumerate()
        .filter(|(_, a)| a.kernels > 0 || a.api_calls > 0)
        .map(|(p, mut a)| {
            a.devices.sort_unstable();
            ProcessStats {
                pid: t.processes.pid.get(p).copied().unwrap_or(0),
                name: t.processes.name.get(p).cloned().unwrap_or_default(),
                devices: a.devices,
                kernels: a.kernels,
                kernel_us: us(a.kernel_ns),
                launch_calls: a.launch_calls,
                api_calls: a.api_calls,
                api_us: us(a.api_ns),
                sync_calls: a.sync_calls,
                sync_us: us(a.sync_ns),
                memcpy: a.memcpy,
                memcpy_bytes: a.memcpy_bytes,
                nvtx_ranges: a.nvtx,
            }
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}
