//! Per-process breakdown (spec §5): what each process ran on the GPUs and spent in CUDA calls,
//! folded per process over the kernels, calls, copies and ranges ([`ProcessTally`]).

use serde::Serialize;

use crate::index::units::us;
use crate::model::rows::{CallRow, KernelRow, MemOpRow};
use crate::model::{Ns, NvtxRow, ProcessIdx, Trace};
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

/// Each process's activity, folded over the event tables.
pub struct ProcessTally {
    acc: Vec<Acc>,
}

impl ProcessTally {
    /// For the processes of `meta`.
    pub fn new(meta: &Trace) -> ProcessTally {
        ProcessTally {
            acc: vec![Acc::default(); meta.processes.len()],
        }
    }

    pub fn kernel(&mut self, k: &KernelRow) {
        if let Some(a) = self.acc.get_mut(k.process as usize) {
            a.kernels += 1;
            a.kernel_ns = a.kernel_ns.saturating_add((k.end - k.start).max(0));
            if !a.devices.contains(&k.device) {
                a.devices.push(k.device);
            }
        }
    }

    /// Call `c` of kind `kind`, made by `process`.
    pub fn call(&mut self, c: &CallRow, kind: ApiKind, process: Option<ProcessIdx>) {
        let Some(a) = process.and_then(|p| self.acc.get_mut(p as usize)) else {
            return;
        };
        let d = (c.end - c.start).max(0);
        a.api_calls += 1;
        a.api_ns = a.api_ns.saturating_add(d);
        match kind {
            kind if kind.launches_kernels() => a.launch_calls += 1,
            ApiKind::BlockingSync => {
                a.sync_calls += 1;
                a.sync_ns = a.sync_ns.saturating_add(d);
            }
            _ => {}
        }
    }

    pub fn memcpy(&mut self, op: &MemOpRow) {
        if let Some(a) = self.acc.get_mut(op.process as usize) {
            a.memcpy += 1;
            a.memcpy_bytes = a.memcpy_bytes.saturating_add(op.bytes);
        }
    }

    /// A range (visible or not) of a thread of `meta`.
    pub fn range(&mut self, meta: &Trace, r: &NvtxRow) {
        if let Some(a) = meta
            .threads
            .process
            .get(r.thread as usize)
            .and_then(|&p| self.acc.get_mut(p as usize))
        {
            a.nvtx += 1;
        }
    }

    /// Processes that ran kernels or called the CUDA API, by pid.
    pub fn finish(self, meta: &Trace) -> Vec<ProcessStats> {
        let t = meta;
        let mut out: Vec<ProcessStats> = self
            .acc
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
}
