//! A tiny host/GPU simulator that places rows the way a real capture records them.
//!
//! Each process has a host clock (its main thread); each device has a "free at" clock for its
//! one compute stream. A launch API call runs on the host clock, and its kernel starts no earlier
//! than the call's end plus a launch latency and no earlier than the stream is free — so kernels
//! on a device never overlap and every kernel follows the call that launched it, with the same
//! correlation id in the same process.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::costs::Costs;
use super::kinds::{self, KernelKind};
use super::timeline::{
    Api, COPY_DTOH, COPY_HTOD, GraphReplay, Kernel, MEM_DEVICE, MEM_PAGEABLE, MEM_PINNED, MemOp,
    NVTX_DOMAIN_CREATE, NVTX_MARK, NVTX_PUSH_POP, Ns, Nvtx, SyncOp, Timeline, US,
};

/// Which CUDA graph a replay runs: `graphId` and `graphExecId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphIds {
    pub graph: u32,
    pub exec: u32,
}

/// Time from a launch call's return to the earliest start of its kernel.
pub const LAUNCH_LATENCY: Ns = 4 * US;
/// The compute stream every kernel runs on (one stream per device keeps kernels disjoint).
pub const STREAM: u8 = 7;
/// Where captures begin on the host clock: ~15 s, like real exports' session-relative times.
pub const T0: Ns = 15_000_000_000;

/// NVTX domain id used for TensorRT-LLM ranges (0 is the default domain).
const DOMAIN: u32 = 0;

/// Places events on a [`Timeline`] with per-process host clocks and per-device stream clocks.
pub struct Sim {
    pub tl: Timeline,
    pub rng: ChaCha8Rng,
    host: Vec<Ns>,
    gpu_free: Vec<Ns>,
    kind_ids: HashMap<&'static str, (u32, u32, u16)>,
    /// Whether NVTX names go inline (`text`) rather than registered (`textId`).
    pub inline_nvtx: bool,
    costs: Costs,
    /// Per process, its open ranges (`Sim::open`) as `(row, op factor)`, innermost last.
    open: Vec<Vec<(usize, f64)>>,
}

impl Sim {
    /// A simulator whose clocks all start at [`T0`]; `seed` drives every random choice.
    pub fn new(tl: Timeline, seed: u64, inline_nvtx: bool) -> Sim {
        let n = tl.procs.len();
        let devices = tl
            .procs
            .iter()
            .map(|p| p.device as usize + 1)
            .max()
            .unwrap_or(1);
        Sim {
            tl,
            rng: ChaCha8Rng::seed_from_u64(seed),
            host: vec![T0; n],
            gpu_free: vec![T0; devices],
            kind_ids: HashMap::new(),
            inline_nvtx,
            costs: Costs::default(),
            open: vec![Vec::new(); n],
        }
    }

    /// This simulator with `costs` applied to every duration it places from now on.
    pub fn costed(mut self, costs: &Costs) -> Sim {
        self.costs = costs.clone();
        self
    }

    pub fn costs(&self) -> &Costs {
        &self.costs
    }

    pub fn now(&self, p: usize) -> Ns {
        self.host[p]
    }

    /// Host work of `dt` on `p` (scaled by the host factor, and by the op's when the op is
    /// `p`'s innermost open range).
    pub fn advance(&mut self, p: usize, dt: Ns) {
        let op = self.open[p].last().map_or(1.0, |o| o.1);
        self.host[p] += self.costs.host_ns(dt, op).max(0);
    }

    /// Blocks process `p`'s host until `t` (no-op if already later).
    pub fn wait_until(&mut self, p: usize, t: Ns) {
        self.host[p] = self.host[p].max(t);
    }

    /// When device `d`'s stream is next free.
    pub fn gpu_free(&self, d: u32) -> Ns {
        self.gpu_free[d as usize]
    }

    pub fn set_gpu_free(&mut self, d: u32, t: Ns) {
        self.gpu_free[d as usize] = t;
    }

    /// A uniform draw in `[lo, hi]` (ns).
    pub fn uniform(&mut self, lo: Ns, hi: Ns) -> Ns {
        if hi <= lo {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    /// `base` ± `pct` percent.
    pub fn jitter(&mut self, base: Ns, pct: i64) -> Ns {
        let d = base * pct / 100;
        self.uniform(base - d, base + d)
    }

    fn nvtx_row(
        &mut self,
        p: usize,
        name: &str,
        start: Ns,
        end: Option<Ns>,
        event_type: u8,
        inline: bool,
    ) -> usize {
        let name = self.tl.names.id(name);
        let tid = self.tl.procs[p].main_tid();
        self.tl.nvtx.push(Nvtx {
            start,
            end,
            name,
            inline,
            event_type,
            proc: p as u8,
            tid,
            domain: DOMAIN,
        });
        self.tl.nvtx.len() - 1
    }

    /// A push/pop range of `dur` of host work on `p`'s main thread at its host clock; the clock
    /// advances.
    pub fn range(&mut self, p: usize, name: &str, dur: Ns) -> (Ns, Ns) {
        let dur = self.costs.host_ns(dur, self.costs.op_factor(name));
        let s = self.host[p];
        let inline = self.inline_nvtx;
        self.nvtx_row(p, name, s, Some(s + dur), NVTX_PUSH_POP, inline);
        self.host[p] = s + dur;
        (s, s + dur)
    }

    /// Opens a push/pop range now; [`Sim::close`] sets its end.
    pub fn open(&mut self, p: usize, name: &str) -> usize {
        let s = self.host[p];
        let inline = self.inline_nvtx;
        let row = self.nvtx_row(p, name, s, Some(s), NVTX_PUSH_POP, inline);
        let op = self.costs.op_factor(name);
        self.open[p].push((row, op));
        row
    }

    /// Closes a range opened by [`Sim::open`] at `p`'s host clock.
    pub fn close(&mut self, p: usize, idx: usize) -> (Ns, Ns) {
        self.open[p].retain(|o| o.0 != idx);
        let end = self.host[p];
        let r = &mut self.tl.nvtx[idx];
        r.end = Some(end);
        (r.start, end)
    }

    /// An NVTX mark (eventType 34, `end` NULL) at `p`'s host clock.
    pub fn mark(&mut self, p: usize, name: &str) {
        let s = self.host[p];
        self.nvtx_row(p, name, s, None, NVTX_MARK, true);
    }

    /// An NVTX domain creation (eventType 75, `end` NULL, name inline as nsys writes it).
    pub fn domain_create(&mut self, p: usize, name: &str) {
        let s = self.host[p];
        self.nvtx_row(p, name, s, None, NVTX_DOMAIN_CREATE, true);
    }

    fn kind_id(&mut self, k: &KernelKind) -> (u32, u32, u16) {
        if let Some(&ids) = self.kind_ids.get(k.short) {
            return ids;
        }
        let ids = (
            self.tl.names.id(k.short),
            self.tl.names.id(k.demangled),
            self.tl.geometry.len() as u16,
        );
        self.tl.geometry.push([k.registers, k.grid_x, k.block_x]);
        self.kind_ids.insert(k.short, ids);
        ids
    }

    /// A runtime API row on `p`'s main thread; returns its correlation id. The host clock is untouched.
    pub fn api_row(&mut self, p: usize, name: &str, start: Ns, end: Ns) -> u32 {
        let name = self.tl.names.id(name);
        let corr = self.tl.next_corr(p);
        let tid = self.tl.procs[p].main_tid();
        self.tl.apis.push(Api {
            start,
            end,
            corr,
            name,
            tid,
            proc: p as u8,
        });
        corr
    }

    /// A kernel row at an explicit place, attributed to launch `corr` of process `p` (placed as
    /// given: a caller scales its duration by [`Sim::kernel_ns`]).
    pub fn kernel_row(
        &mut self,
        p: usize,
        k: &KernelKind,
        start: Ns,
        end: Ns,
        corr: u32,
        graph_node: u32,
    ) {
        let (short, demangled, kind) = self.kind_id(k);
        let device = self.tl.procs[p].device as u8;
        self.tl.kernels.push(Kernel {
            start,
            end,
            corr,
            short,
            demangled,
            graph_node,
            graph_id: 0,
            kind,
            proc: p as u8,
            device,
            stream: STREAM,
        });
    }

    /// An eager launch: the call `api` takes `api_dur` on the host, then the kernel runs `dur` on
    /// the process's device once the call has returned and the stream is free (plus `gap`).
    /// Returns the kernel's `(start, end)`. The costs scale `api_dur` and `dur`.
    pub fn launch(
        &mut self,
        p: usize,
        api: &str,
        api_dur: Ns,
        k: &KernelKind,
        dur: Ns,
        gap: Ns,
    ) -> (Ns, Ns) {
        let api_dur = self.costs.launch_ns(api_dur);
        let dur = self.costs.kernel_ns(k.short, dur);
        let s = self.host[p];
        let corr = self.api_row(p, api, s, s + api_dur);
        self.host[p] = s + api_dur;
        let d = self.tl.procs[p].device;
        let ks = (s + api_dur + LAUNCH_LATENCY).max(self.gpu_free(d) + gap);
        self.kernel_row(p, k, ks, ks + dur, corr, 0);
        self.set_gpu_free(d, ks + dur);
        (ks, ks + dur)
    }

    /// A CUDA graph replay: one `cudaGraphLaunch` call, then each node's kernel back to back
    /// (separated by `gap`) on the process's device. How it is recorded follows the timeline's
    /// `graph_trace_mode`: `Node` writes each node's kernel, sharing the call's correlation id and
    /// carrying its `graphNodeId` (and the `graphId` of `ids` when given); `Graph` writes one
    /// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row from the first node's start to the last node's end
    /// (`ids`, or graph 1 / exec 1) and no kernel. The placement is the same in both modes.
    /// Returns the replay's `(start, end)` on the GPU. The costs scale `api_dur` and each node's
    /// duration.
    pub fn graph_launch(
        &mut self,
        p: usize,
        api_dur: Ns,
        nodes: &[(KernelKind, Ns, u32)],
        gap: Ns,
        ids: Option<GraphIds>,
    ) -> (Ns, Ns) {
        let api_dur = self.costs.launch_ns(api_dur);
        let s = self.host[p];
        let corr = self.api_row(p, kinds::GRAPH_LAUNCH, s, s + api_dur);
        self.host[p] = s + api_dur;
        let d = self.tl.procs[p].device;
        let first = (s + api_dur + LAUNCH_LATENCY).max(self.gpu_free(d) + gap);
        let node_level = self.tl.graph_trace_mode != "Graph";
        let mut t = first;
        for (i, (k, dur, node)) in nodes.iter().enumerate() {
            if i > 0 {
                t += gap;
            }
            let dur = self.costs.kernel_ns(k.short, *dur);
            if node_level {
                self.kernel_row(p, k, t, t + dur, corr, *node);
                if let (Some(ids), Some(last)) = (ids, self.tl.kernels.last_mut()) {
                    last.graph_id = ids.graph;
                }
            }
            t += dur;
        }
        if !node_level && t > first {
            let ids = ids.unwrap_or(GraphIds { graph: 1, exec: 1 });
            self.tl.graph_replays.push(GraphReplay {
                start: first,
                end: t,
                corr,
                graph_id: ids.graph,
                graph_exec_id: ids.exec,
                proc: p as u8,
                device: d as u8,
                stream: STREAM,
            });
        }
        self.set_gpu_free(d, t);
        (first, t)
    }

    /// Kernel `k`'s GPU duration `dur` under the costs.
    pub fn kernel_ns(&self, k: &KernelKind, dur: Ns) -> Ns {
        self.costs.kernel_ns(k.short, dur)
    }

    /// A kernel-launch call's duration `dur` under the costs.
    pub fn launch_ns(&self, dur: Ns) -> Ns {
        self.costs.launch_ns(dur)
    }

    /// A non-launch API call of `dur` on the host (e.g. `cudaEventRecord`; not scaled).
    pub fn host_api(&mut self, p: usize, name: &str, dur: Ns) {
        let s = self.host[p];
        self.api_row(p, name, s, s + dur);
        self.host[p] = s + dur;
    }

    /// `cudaMemcpyAsync` device-to-host of `bytes` into pinned memory, queued on the compute
    /// stream.
    pub fn memcpy_dtoh(&mut self, p: usize, bytes: i64, api_dur: Ns, dur: Ns) {
        let mut op = self.mem_op(p, kinds::MEMCPY_ASYNC, COPY_DTOH, bytes, api_dur, dur);
        (op.src_kind, op.dst_kind) = (MEM_DEVICE, MEM_PINNED);
        self.tl.memcpy.push(op);
    }

    /// `cudaMemcpyAsync` host-to-device of `bytes` from pinned memory, queued on the compute
    /// stream; returns the copy's `(start, end)` on the GPU.
    pub fn memcpy_htod(&mut self, p: usize, bytes: i64, api_dur: Ns, dur: Ns) -> (Ns, Ns) {
        let mut op = self.mem_op(p, kinds::MEMCPY_ASYNC, COPY_HTOD, bytes, api_dur, dur);
        (op.src_kind, op.dst_kind) = (MEM_PINNED, MEM_DEVICE);
        self.tl.memcpy.push(op);
        (op.start, op.end)
    }

    /// `cudaMemcpyAsync` host-to-device of `bytes` from pageable memory: the call stages the
    /// buffer through pinned memory and returns `api_dur` after the copy has ended (NVIDIA's
    /// "API synchronization behavior": an async copy from pageable memory is synchronous with
    /// the host), so the host waits out the copy; returns the copy's `(start, end)` on the GPU.
    pub fn memcpy_htod_pageable(&mut self, p: usize, bytes: i64, api_dur: Ns, dur: Ns) -> (Ns, Ns) {
        let op = self.mem_op_of(
            p,
            (kinds::MEMCPY_ASYNC, COPY_HTOD, bytes),
            api_dur,
            dur,
            true,
        );
        let op = MemOp {
            src_kind: MEM_PAGEABLE,
            dst_kind: MEM_DEVICE,
            ..op
        };
        self.tl.memcpy.push(op);
        (op.start, op.end)
    }

    /// `cudaMemsetAsync` of `bytes` of device memory, queued on the compute stream.
    pub fn memset(&mut self, p: usize, bytes: i64, api_dur: Ns, dur: Ns) {
        let op = self.mem_op(p, kinds::MEMSET_ASYNC, MEM_DEVICE, bytes, api_dur, dur);
        self.tl.memset.push(op);
    }

    /// The API call of an async memory operation and the operation it queues on the device.
    fn mem_op(
        &mut self,
        p: usize,
        api: &'static str,
        kind: u8,
        bytes: i64,
        api_dur: Ns,
        dur: Ns,
    ) -> MemOp {
        self.mem_op_of(p, (api, kind, bytes), api_dur, dur, false)
    }

    /// [`Sim::mem_op`]; when `waits`, the call returns `api_dur` after the operation ends
    /// instead of after `api_dur`.
    fn mem_op_of(
        &mut self,
        p: usize,
        (api, kind, bytes): (&'static str, u8, i64),
        api_dur: Ns,
        dur: Ns,
        waits: bool,
    ) -> MemOp {
        let dur = self.costs.copy_ns(dur);
        let s = self.host[p];
        let d = self.tl.procs[p].device;
        let ms = (s + api_dur + LAUNCH_LATENCY).max(self.gpu_free(d) + US);
        let e = match waits {
            true => ms + dur + api_dur,
            false => s + api_dur,
        };
        let corr = self.api_row(p, api, s, e);
        self.host[p] = e;
        self.set_gpu_free(d, ms + dur);
        MemOp {
            start: ms,
            end: ms + dur,
            corr,
            bytes,
            kind,
            src_kind: 0,
            dst_kind: 0,
            proc: p as u8,
            device: d as u8,
            stream: STREAM,
        }
    }

    /// `cudaStreamSynchronize` that blocks the host until `until` (at least 2 µs), with the
    /// matching SYNCHRONIZATION activity row.
    pub fn stream_sync(&mut self, p: usize, until: Ns) {
        let s = self.host[p];
        let e = (until + 2 * US).max(s + 2 * US);
        let corr = self.api_row(p, kinds::STREAM_SYNC, s, e);
        let d = self.tl.procs[p].device as u8;
        self.tl.syncs.push(SyncOp {
            start: s,
            end: e - US,
            corr,
            sync_type: 3,
            proc: p as u8,
            device: d,
            stream: STREAM,
        });
        self.host[p] = e;
    }
}
