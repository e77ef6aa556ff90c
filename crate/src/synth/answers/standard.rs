//! The `standard` profile's answers (spec §2), computed from the placed events.
//!
//! Everything is clipped to the window `W` (a set of disjoint intervals), busy time is per
//! device, launch time a per-process union, host prep per process against the idle time of that
//! process's own devices; aggregates are means.
//!
//! GPU work is every kernel, graph-level replay (`CUPTI_ACTIVITY_KIND_GRAPH_TRACE`), memcpy and
//! memset row ([`super::work`]): a device's busy time is the union of its rows, the aggregate
//! window runs from the first start to the last end of any of them, and a device or a process
//! counts in a scope when it has work there. M5 is the NCCL kernels' union over that busy time.
//! `bound` splits the aggregate's busy time by kind (compute, then communication, then
//! transfer). The `trtllm-skill` profile ([`super::skill`]) stays kernel-only.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::ivl::{Iv, intersect, measure, subtract, union};
use super::verdict::{self, Metrics, Thresholds};
use super::work::{self, Class};
use super::{Step, parse_steps};
use crate::synth::timeline::{Ns, Timeline};

/// Launch API names counted by M2 (any `_ptsz` / `_vNNNN` suffix).
const LAUNCH_RE: &str = r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|cudaLaunchCooperativeKernel|cudaGraphLaunch|cuGraphLaunch)(_ptsz)?(_v\d+)?$";
/// Host-prep name patterns, first match wins (plain case-sensitive substrings).
const PREP_PATTERNS: [&str; 3] = ["_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs"];
/// NVTX range event types (push/pop, start/end and their NVTXT variants).
const RANGE_TYPES: [u8; 4] = [59, 60, 70, 71];
/// Steps of the same number starting less than this after their group's first start are one step.
const DEDUP_NS: Ns = 100_000;

/// Per-device and per-process interval sets, built once for all scopes.
struct Model {
    /// device → union of its GPU work rows (kernels, graph replays, memcpy, memset).
    busy: BTreeMap<u32, Vec<Iv>>,
    /// device → union of its NCCL kernels.
    nccl: BTreeMap<u32, Vec<Iv>>,
    /// device → union of its non-NCCL kernels and graph replays.
    compute: BTreeMap<u32, Vec<Iv>>,
    /// device → union of its memcpy and memset rows.
    transfer: BTreeMap<u32, Vec<Iv>>,
    /// process → device → union of the process's GPU work rows on that device.
    proc_work: BTreeMap<u8, BTreeMap<u32, Vec<Iv>>>,
    /// process → union of its launch calls.
    launches: BTreeMap<u8, Vec<Iv>>,
    /// process → per host-prep pattern, the union of its ranges whose name contains it.
    prep: BTreeMap<u8, [Vec<Iv>; 3]>,
}

type PerDevice = BTreeMap<u32, Vec<Iv>>;

fn unions(m: PerDevice) -> PerDevice {
    m.into_iter().map(|(d, v)| (d, union(v))).collect()
}

fn build(tl: &Timeline) -> Model {
    let mut busy: PerDevice = BTreeMap::new();
    let mut nccl: PerDevice = BTreeMap::new();
    let mut compute: PerDevice = BTreeMap::new();
    let mut transfer: PerDevice = BTreeMap::new();
    let mut pw: BTreeMap<u8, PerDevice> = BTreeMap::new();
    for w in work::rows(tl) {
        let iv = (w.start, w.end);
        busy.entry(w.device).or_default().push(iv);
        let by_class = match w.class {
            Class::Compute => &mut compute,
            Class::Communication => &mut nccl,
            Class::Transfer => &mut transfer,
        };
        by_class.entry(w.device).or_default().push(iv);
        pw.entry(w.proc)
            .or_default()
            .entry(w.device)
            .or_default()
            .push(iv);
    }
    let launch_re = regex::Regex::new(LAUNCH_RE).expect("constant regex");
    let mut launches: BTreeMap<u8, Vec<Iv>> = BTreeMap::new();
    let mut is_launch: HashMap<u32, bool> = HashMap::new();
    for a in tl.apis.iter().filter(|a| {
        *is_launch
            .entry(a.name)
            .or_insert_with(|| launch_re.is_match(tl.names.get(a.name)))
    }) {
        launches.entry(a.proc).or_default().push((a.start, a.end));
    }
    let mut prep: BTreeMap<u8, [Vec<Iv>; 3]> = BTreeMap::new();
    let mut matches: HashMap<u32, [bool; 3]> = HashMap::new();
    for n in tl
        .nvtx
        .iter()
        .filter(|n| RANGE_TYPES.contains(&n.event_type))
    {
        let Some(end) = n.end else { continue };
        let hit = *matches
            .entry(n.name)
            .or_insert_with(|| PREP_PATTERNS.map(|p| tl.names.get(n.name).contains(p)));
        let lists = prep.entry(n.proc).or_default();
        for (i, _) in hit.iter().enumerate().filter(|(_, h)| **h) {
            lists[i].push((n.start, end));
        }
    }
    Model {
        busy: unions(busy),
        nccl: unions(nccl),
        compute: unions(compute),
        transfer: unions(transfer),
        proc_work: pw
            .into_iter()
            .map(|(p, per_dev)| (p, unions(per_dev)))
            .collect(),
        launches: launches.into_iter().map(|(p, v)| (p, union(v))).collect(),
        prep: prep
            .into_iter()
            .map(|(p, lists)| (p, lists.map(union)))
            .collect(),
    }
}

/// One scope's metrics plus the per-device figures.
struct Scope {
    metrics: Metrics,
    per_device: Vec<(u32, f64, f64)>,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn scope(m: &Model, w: &[Iv]) -> Scope {
    let wlen = measure(w) as f64;
    let mut per_device = Vec::new();
    let mut nccl_ratios = Vec::new();
    let mut busy_in_w: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
    for (&d, busy) in &m.busy {
        let clipped = intersect(busy, w);
        let b = measure(&clipped);
        if b == 0 {
            continue;
        }
        let n = m.nccl.get(&d).map_or(0, |v| measure(&intersect(v, w)));
        per_device.push((d, 1.0 - b as f64 / wlen, b as f64 / wlen));
        nccl_ratios.push(n as f64 / b as f64);
        busy_in_w.insert(d, clipped);
    }
    let procs: Vec<u8> = m
        .proc_work
        .keys()
        .copied()
        .filter(|&p| !devices_in(m, p, w).is_empty())
        .collect();
    let launch: Vec<f64> = procs
        .iter()
        .map(|p| m.launches.get(p).map_or(0, |l| measure(&intersect(l, w))) as f64 / wlen)
        .collect();
    let prep: Vec<[f64; 3]> = procs
        .iter()
        .filter_map(|&p| host_prep(m, p, w, &busy_in_w))
        .collect();
    let col = |i: usize| mean(&prep.iter().map(|x| x[i]).collect::<Vec<_>>());
    let metrics = Metrics {
        gpu_idle_ratio: mean(&per_device.iter().map(|x| x.1).collect::<Vec<_>>()),
        launch_overhead_ratio: mean(&launch),
        gpu_utilization: mean(&per_device.iter().map(|x| x.2).collect::<Vec<_>>()),
        nccl_ratio: mean(&nccl_ratios),
        host_prep_exposed_ratio: col(0),
        host_prep_perf_impact: col(1),
        host_prep_idle_attribution: col(2),
    };
    Scope {
        metrics,
        per_device,
    }
}

/// The devices on which process `p` had GPU work overlapping `w`.
fn devices_in(m: &Model, p: u8, w: &[Iv]) -> Vec<u32> {
    m.proc_work.get(&p).map_or_else(Vec::new, |per_dev| {
        per_dev
            .iter()
            .filter(|(_, k)| measure(&intersect(k, w)) > 0)
            .map(|(&d, _)| d)
            .collect()
    })
}

/// `[M3a, M3b, M3c]` of process `p` in `w`, or `None` when it has no host-prep range there.
fn host_prep(m: &Model, p: u8, w: &[Iv], busy_in_w: &BTreeMap<u32, Vec<Iv>>) -> Option<[f64; 3]> {
    // A pattern is chosen when some range of it overlaps W, i.e. its union meets W.
    let prep = m
        .prep
        .get(&p)?
        .iter()
        .map(|u| intersect(u, w))
        .find(|x| measure(x) > 0)?;
    let own_busy: Vec<Iv> = devices_in(m, p, w)
        .iter()
        .flat_map(|d| busy_in_w.get(d).cloned().unwrap_or_default())
        .collect();
    let own_busy = union(own_busy);
    let wlen = measure(w) as f64;
    let idle = wlen - measure(&own_busy) as f64;
    let prep_len = measure(&prep) as f64;
    let exposed = prep_len - measure(&intersect(&prep, &own_busy)) as f64;
    let m3c = if idle > 0.0 { exposed / idle } else { 0.0 };
    Some([exposed / prep_len, exposed / wlen, m3c])
}

/// Forward steps after TP de-duplication: `(start, end, ctx, generation)`.
fn dedup_steps(raw: &[Step]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut group_first_start = Ns::MIN;
    for s in raw {
        match out.last_mut() {
            Some(last) if last.number == s.number && s.start - group_first_start < DEDUP_NS => {
                last.end = last.end.max(s.end);
            }
            _ => {
                group_first_start = s.start;
                out.push(*s);
            }
        }
    }
    out
}

/// The `standard` DETECT-SUBSET of `tl`.
pub fn answers(tl: &Timeline) -> Value {
    let m = build(tl);
    // The aggregate window: first start to last end of any GPU work row (unions are sorted).
    let ws = m
        .busy
        .values()
        .filter_map(|v| v.first())
        .map(|iv| iv.0)
        .min();
    let we = m
        .busy
        .values()
        .filter_map(|v| v.last())
        .map(|iv| iv.1)
        .max();
    let (ws, we) = (ws.unwrap_or(0), we.unwrap_or(0));
    let agg = scope(&m, &[(ws, we)]);
    let v = verdict::judge(&agg.metrics, &verdict::DEFAULT);
    let mut raw = parse_steps(tl, true, |t| RANGE_TYPES.contains(&t));
    raw.sort_by_key(|s| (s.start, s.end));
    let steps = dedup_steps(&raw);
    let mut phases = serde_json::Map::new();
    let mut any_phase_yes = false;
    let ctx: Vec<Step> = steps.iter().filter(|s| s.ctx > 0).copied().collect();
    let generation: Vec<Step> = steps
        .iter()
        .filter(|s| s.ctx == 0 && s.generation > 0)
        .copied()
        .collect();
    for (key, list, thr) in [
        ("context", ctx, verdict::DEFAULT),
        ("generation", generation, verdict::GENERATION),
    ] {
        if let Some((value, yes)) = phase(&m, &list, &thr) {
            any_phase_yes |= yes;
            phases.insert(key.to_string(), value);
        }
    }
    // Host-bound is the overall verdict's YES (any scope's), as the report says it first.
    let bound = bound(&m, &[(ws, we)], v.yes || any_phase_yes);
    json!({
        "verdict": verdict::yes_no(v.yes || any_phase_yes),
        "aggregate_metrics": verdict::metrics_json(&agg.metrics, false),
        "crossed_count": v.crossed,
        "applicable_count": v.applicable,
        "host_prep_confirmed": v.confirmed,
        "nccl_caveat": agg.metrics.nccl_ratio.is_some_and(|x| x > verdict::NCCL_CAVEAT),
        "phases": phases,
        "per_device": agg.per_device.iter().map(|&(d, idle, util)| json!({
            "device": d, "gpu_idle_ratio": idle, "gpu_utilization": util,
        })).collect::<Vec<_>>(),
        "bound": bound.json(),
    })
}

/// Where the aggregate window's device time went, each busy nanosecond counted once by
/// precedence: compute (non-NCCL kernels, graph replays), then communication (NCCL kernels),
/// then transfer (memcpy, memset). Sums over the devices with GPU work in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub compute: Ns,
    pub communication: Ns,
    pub transfer: Ns,
    /// Window length × devices counted.
    pub window: Ns,
    /// Whether the aggregate scope's verdict is YES.
    pub host_bound: bool,
}

impl Bound {
    pub fn busy(&self) -> Ns {
        self.compute + self.communication + self.transfer
    }

    pub fn idle(&self) -> Ns {
        self.window - self.busy()
    }

    /// `host-bound` on an overall YES; else the kind holding at least half of the busy time
    /// (compute, then transfer, then communication, should two hold exactly half); else `mixed`.
    pub fn kind(&self) -> &'static str {
        let busy = self.busy();
        let half = |ns: Ns| busy > 0 && 2 * ns >= busy;
        if self.host_bound {
            "host-bound"
        } else if half(self.compute) {
            "gpu-compute-bound"
        } else if half(self.transfer) {
            "transfer-bound"
        } else if half(self.communication) {
            "communication-bound"
        } else {
            "mixed"
        }
    }

    pub fn json(&self) -> Value {
        let share = |ns: Ns| {
            if self.window > 0 {
                ns as f64 / self.window as f64
            } else {
                0.0
            }
        };
        json!({
            "kind": self.kind(),
            "shares": {
                "compute": share(self.compute),
                "communication": share(self.communication),
                "transfer": share(self.transfer),
                "idle": share(self.idle()),
            },
            "window_ns": self.window,
            "busy_ns": self.busy(),
            "compute_ns": self.compute,
            "communication_ns": self.communication,
            "transfer_ns": self.transfer,
        })
    }
}

/// The exclusive partition of busy time in `w` (the aggregate's one interval, or a phase's
/// steps' union).
fn bound(m: &Model, w: &[Iv], host_bound: bool) -> Bound {
    let mut b = Bound {
        compute: 0,
        communication: 0,
        transfer: 0,
        window: 0,
        host_bound,
    };
    let clip = |map: &PerDevice, d: u32| map.get(&d).map_or_else(Vec::new, |v| intersect(v, w));
    for &d in m.busy.keys() {
        if measure(&clip(&m.busy, d)) == 0 {
            continue;
        }
        let compute = clip(&m.compute, d);
        let comm = subtract(&clip(&m.nccl, d), &compute);
        let taken = union(compute.iter().chain(&comm).copied().collect());
        let transfer = subtract(&clip(&m.transfer, d), &taken);
        b.compute += measure(&compute);
        b.communication += measure(&comm);
        b.transfer += measure(&transfer);
        b.window += measure(w);
    }
    b
}

fn phase(m: &Model, steps: &[Step], thr: &Thresholds) -> Option<(Value, bool)> {
    if steps.is_empty() {
        return None;
    }
    let w = union(steps.iter().map(|s| (s.start, s.end)).collect());
    let sc = scope(m, &w);
    let (mut value, yes) = verdict::phase_json(steps.len(), &sc.metrics, thr, false);
    // The phase's own busy time by kind, within its steps' union; host-bound on its own YES.
    if let Some(obj) = value.as_object_mut() {
        obj.insert("bound".into(), bound(m, &w, yes).json());
    }
    Some((value, yes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::timeline::{
        COPY_HTOD, GraphReplay, Kernel, MEM_DEVICE, MEM_PINNED, MemOp, Timeline,
    };

    fn kernel(tl: &mut Timeline, name: &str, device: u8, (start, end): (Ns, Ns)) {
        let short = tl.names.id(name);
        tl.kernels.push(Kernel {
            start,
            end,
            corr: 0,
            short,
            demangled: short,
            graph_node: 0,
            graph_id: 0,
            kind: 0,
            proc: 0,
            device,
            stream: 7,
        });
    }

    fn mem_op(device: u8, (start, end): (Ns, Ns)) -> MemOp {
        MemOp {
            start,
            end,
            corr: 0,
            bytes: 1 << 20,
            kind: COPY_HTOD,
            src_kind: MEM_PINNED,
            dst_kind: MEM_DEVICE,
            proc: 0,
            device,
            stream: 7,
        }
    }

    /// Device 0, window [1000, 1100): a kernel, a graph replay, an NCCL kernel overlapping the
    /// replay, a copy overlapping the NCCL kernel, a memset.
    fn one_device() -> Timeline {
        let mut tl = Timeline::new(&[(100, "python3", 0)]);
        kernel(&mut tl, "gemm", 0, (1000, 1010));
        tl.graph_replays.push(GraphReplay {
            start: 1020,
            end: 1030,
            corr: 0,
            graph_id: 1,
            graph_exec_id: 1,
            proc: 0,
            device: 0,
            stream: 7,
        });
        kernel(&mut tl, "ncclDevKernel_AllReduce", 0, (1025, 1040));
        tl.memcpy.push(mem_op(0, (1035, 1060)));
        let mut set = mem_op(0, (1090, 1100));
        set.kind = MEM_DEVICE;
        tl.memset.push(set);
        tl
    }

    #[test]
    fn bound_partitions_busy_time_by_precedence() {
        let a = answers(&one_device());
        let b = &a["bound"];
        // compute [1000,1010) + [1020,1030); NCCL [1025,1040) less compute = [1030,1040);
        // transfer [1035,1060) + [1090,1100) less both = [1040,1060) + [1090,1100).
        let ns = |k: &str| b[k].as_i64();
        assert_eq!(
            [ns("compute_ns"), ns("communication_ns"), ns("transfer_ns")],
            [Some(20), Some(10), Some(30)]
        );
        assert_eq!((ns("busy_ns"), ns("window_ns")), (Some(60), Some(100)));
        // Transfer holds exactly half of the busy time: enough (≥ 50 %).
        assert_eq!(b["kind"], "transfer-bound");
        let shares: f64 = ["compute", "communication", "transfer", "idle"]
            .iter()
            .filter_map(|k| b["shares"][k].as_f64())
            .sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
        assert_eq!(b["shares"]["transfer"].as_f64(), Some(0.3));
        // Busy is the union of all the work rows: M1 and M4 follow it, M5 is NCCL over it.
        let m = &a["aggregate_metrics"];
        assert_eq!(m["gpu_utilization"].as_f64(), Some(0.6));
        assert_eq!(m["nccl_ratio"].as_f64(), Some(15.0 / 60.0));
        assert_eq!(a["per_device"][0]["gpu_idle_ratio"].as_f64(), Some(0.4));
    }

    #[test]
    fn bound_sums_devices_over_one_window() {
        let mut tl = one_device();
        tl.procs
            .push(crate::synth::timeline::Proc::new(101, "python3", 1));
        kernel(&mut tl, "gemm", 1, (1000, 1090));
        if let Some(k) = tl.kernels.last_mut() {
            k.proc = 1;
        }
        let a = answers(&tl);
        let b = &a["bound"];
        let ns = |k: &str| b[k].as_i64();
        assert_eq!(
            [ns("compute_ns"), ns("communication_ns"), ns("transfer_ns")],
            [Some(110), Some(10), Some(30)]
        );
        assert_eq!((ns("busy_ns"), ns("window_ns")), (Some(150), Some(200)));
        assert_eq!(b["shares"]["idle"].as_f64(), Some(0.25));
        assert_eq!(a["verdict"], "NO");
        assert_eq!(b["kind"], "gpu-compute-bound");
    }

    #[test]
    fn the_window_reaches_past_the_kernels() {
        // A copy before the only kernel and a memset after it: the aggregate window runs from
        // the copy's start to the memset's end.
        let mut tl = Timeline::new(&[(100, "python3", 0)]);
        tl.memcpy.push(mem_op(0, (0, 400)));
        kernel(&mut tl, "gemm", 0, (400, 600));
        tl.memset.push(mem_op(0, (700, 1000)));
        let a = answers(&tl);
        assert_eq!(a["bound"]["window_ns"].as_i64(), Some(1000));
        assert_eq!(
            a["aggregate_metrics"]["gpu_utilization"].as_f64(),
            Some(0.9)
        );
        assert_eq!(a["verdict"], "NO");
        assert_eq!(a["bound"]["kind"], "transfer-bound");
    }

    #[test]
    fn an_aggregate_yes_is_host_bound() {
        // 30 % busy: M1 and M4 cross, the aggregate verdict is YES, whatever the GPU did.
        let mut tl = Timeline::new(&[(100, "python3", 0)]);
        tl.memcpy.push(mem_op(0, (0, 100)));
        kernel(&mut tl, "gemm", 0, (300, 400));
        tl.memset.push(mem_op(0, (900, 1000)));
        let a = answers(&tl);
        assert_eq!(a["crossed_count"], 2);
        assert_eq!(a["bound"]["kind"], "host-bound");
        assert_eq!(a["bound"]["transfer_ns"], 200);
    }

    #[test]
    fn bound_kinds() {
        let b = |compute, communication, transfer, host_bound| Bound {
            compute,
            communication,
            transfer,
            window: 1000,
            host_bound,
        };
        assert_eq!(b(50, 25, 25, false).kind(), "gpu-compute-bound");
        assert_eq!(b(20, 60, 20, false).kind(), "communication-bound");
        assert_eq!(b(40, 30, 30, false).kind(), "mixed");
        assert_eq!(b(0, 50, 50, false).kind(), "transfer-bound");
        assert_eq!(b(90, 0, 0, true).kind(), "host-bound");
        assert_eq!(b(0, 0, 0, false).kind(), "mixed");
        assert_eq!(b(20, 60, 20, false).idle(), 900);
    }
}
