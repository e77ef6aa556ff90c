//! Where each device's GPU-idle time went: every nanosecond of its idle gaps in the window gets
//! exactly one cause, read from what the trace recorded on the threads of the processes that
//! launch kernels on the device (CUDA API calls, NVTX ranges) during that time.
//!
//! Per device, the idle gaps ([`super::gaps::IdleLane`], as the gap report finds them) and the
//! host intervals that overlap them, each with its cause (the catalogue's [`ApiKind`] of a call,
//! [`RangeClass`] of a range), are swept in time order; each stretch of idle time goes to the
//! highest-ranked cause in [`PRECEDENCE`] with an interval open over it, and to that cause's
//! innermost interval (the latest to start) for its label. What no interval covers is
//! [`CauseKind::Untraced`]. So the causes of a device add up to its idle time exactly, and the
//! causes of one gap are the same sweep restricted to it.

use std::cmp::Reverse;

use hashbrown::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::Ns;
use crate::model::host_records::OverheadKind;
use crate::names::api::ApiKind;
use crate::names::ranges::RangeClass;

/// What kept the GPU idle, as far as the host's recorded activity says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// nsys's own work on the launching processes (`PROFILER_OVERHEAD`, CUPTI buffer flushes,
    /// instrumentation): not the application's.
    Profiler,
    /// Blocking synchronization (`cudaStreamSynchronize`, `cudaDeviceSynchronize` …) and
    /// synchronous copies: `cudaMemcpy` without `Async`, and async copies with a pageable host
    /// side (the driver stages them synchronously; labelled by their API, `cudaMemcpyAsync`).
    Sync,
    /// Kernel and graph launch calls (the time no driver record inside them explains).
    Launch,
    /// The launch waited for room in the GPU's command queue (the driver's "command buffer
    /// full" record): the host was ahead of the GPU, so this is not host overhead.
    HostAhead,
    /// Loading device code: `cuModuleLoad*`, `cuLibraryLoad*`, or the driver's record of
    /// module loading the runtime triggered.
    ModuleLoad,
    /// The driver loading a function on its first launch (its "lazy function loading"
    /// record; `CUDA_MODULE_LOADING=LAZY`).
    LazyLoad,
    /// Run-time compilation: NVRTC, `cuLink*`, the driver's JIT compiler record, or NVTX
    /// ranges naming a compile or autotuning.
    Jit,
    /// Device or pinned memory allocation and release, runtime object creation (events,
    /// streams).
    Alloc,
    /// Asynchronous copy and memset calls (host time spent issuing them).
    Memop,
    /// A Python garbage collection (`Python GC` ranges).
    Gc,
    /// Waiting for the Python GIL (`Waiting for GIL` ranges).
    Gil,
    /// OS runtime calls (`OSRT_API`: `poll`, `read`, `pthread_cond_wait` …) of a launching
    /// thread (another thread's waits are its own business).
    Osrt,
    /// A collective or its wait (NCCL and `c10d` ranges, all-reduce, barrier …).
    Comm,
    /// Any other traced CUDA API call (queries, event records, attributes …).
    Api,
    /// Host work inside a named NVTX range with no traced call: labelled by the innermost range.
    Nvtx,
    /// No traced call, and a launching thread on a CPU (`SCHED_EVENTS`): host code nsys did not
    /// trace was running. Labelled by the CPU sample inside, when there is one.
    CpuBusy,
    /// No traced call, and every launching thread off its CPU: blocked, or runnable but not
    /// scheduled (labelled by the reason the scheduling record gives).
    CpuWaiting,
    /// No recorded activity on the launching processes' threads.
    Untraced,
}

use CauseKind::*;

/// The order in which causes claim idle time that several of them cover (first wins). Written
/// once, read by every attribution (per device, per gap, per bucket):
///
/// 0. `profiler`: nsys's own work on a launching process stalls whatever the application was
///    doing, so its time is the profiler's, whatever else is open.
/// 1. `gc`, `gil`, `jit`, `comm`: ranges that name what the host was doing *for*. A call inside
///    one is part of it: the module load or `cudaMalloc` of a compile is the compile, the
///    `cudaStreamSynchronize` inside a collective's range is the wait for the collective. A GC
///    pause or a GIL wait interrupts whatever code was running, so they come first, then
///    compilation (which may run collectives' set-up, not the reverse), then collectives.
/// 2. CUDA API calls, the thread's own leaf activity, the most direct stall first: `sync` (the
///    host waits for the device), `host_ahead` (a launch waiting for room in the GPU's queue),
///    `module_load`, `lazy_load` and `alloc` (one-off or avoidable costs that block the launch
///    stream), `memop` (issuing copies), `launch` (the launches themselves), `api` (anything
///    else traced). The driver's overhead records lie inside the call they slowed, on its
///    thread, and rank above `launch` and `api`, so they refine it: a launch that spent its time
///    loading a module is `module_load`. Calls of one thread do not overlap; otherwise this
///    order only decides between threads.
/// 3. `osrt`: blocking OS calls are leaf activity too, but generic: a `read` inside a compile is
///    the compile, a `poll` inside a collective is the collective, and a CUDA call says more.
/// 4. `nvtx`: a named range with nothing more specific inside it (labelled by the innermost).
/// 5. `cpu_busy`, `cpu_waiting`: no interval at all, split by where the launching threads were
///    (`SCHED_EVENTS`): on a CPU running untraced code, or all off-CPU.
/// 6. `untraced`: nothing recorded.
pub const PRECEDENCE: [CauseKind; 18] = [
    Profiler, Gc, Gil, Jit, Comm, Sync, HostAhead, ModuleLoad, LazyLoad, Alloc, Memop, Launch, Api,
    Osrt, Nvtx, CpuBusy, CpuWaiting, Untraced,
];

impl CauseKind {
    /// The JSON name (`module_load`).
    pub fn name(self) -> &'static str {
        match self {
            Profiler => "profiler",
            Sync => "sync",
            Launch => "launch",
            HostAhead => "host_ahead",
            ModuleLoad => "module_load",
            LazyLoad => "lazy_load",
            Jit => "jit",
            Alloc => "alloc",
            Memop => "memop",
            Gc => "gc",
            Gil => "gil",
            Osrt => "osrt",
            Comm => "comm",
            Api => "api",
            Nvtx => "nvtx",
            CpuBusy => "cpu_busy",
            CpuWaiting => "cpu_waiting",
            Untraced => "untraced",
        }
    }

    /// Its place in [`PRECEDENCE`] (0 first).
    pub fn rank(self) -> usize {
        PRECEDENCE
            .iter()
            .position(|&k| k == self)
            .unwrap_or(PRECEDENCE.len())
    }

    /// The cause of time spent in a CUDA API call of this kind.
    pub fn of_api(kind: ApiKind) -> CauseKind {
        match kind {
            ApiKind::BlockingSync | ApiKind::Memcpy { is_async: false } => Sync,
            ApiKind::Memcpy { is_async: true } | ApiKind::Memset { .. } => Memop,
            ApiKind::Launch | ApiKind::GraphLaunch => Launch,
            ApiKind::ObjectCreate | ApiKind::Alloc => Alloc,
            ApiKind::ModuleLoad => ModuleLoad,
            ApiKind::Jit => Jit,
            ApiKind::Other => Api,
        }
    }

    /// The cause of time inside an overhead record of this kind (`None`: the record does not
    /// say what the time went to).
    pub fn of_overhead(kind: OverheadKind) -> Option<CauseKind> {
        match kind {
            OverheadKind::Profiler => Some(Profiler),
            OverheadKind::Jit => Some(Jit),
            OverheadKind::ModuleLoad => Some(ModuleLoad),
            OverheadKind::LazyLoad => Some(LazyLoad),
            OverheadKind::CommandBufferFull => Some(HostAhead),
            OverheadKind::Unknown => None,
        }
    }

    /// The cause of time inside an NVTX range of this class.
    pub fn of_range(class: RangeClass) -> CauseKind {
        match class {
            RangeClass::Gc => Gc,
            RangeClass::GilWait => Gil,
            RangeClass::Jit => Jit,
            RangeClass::Comm => Comm,
            RangeClass::GilHeld | RangeClass::Other => Nvtx,
        }
    }
}

/// One cause of a device's idle time: its kind, the API or NVTX name holding most of its time
/// (`""` for `untraced`), its time and its share of the device's idle time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleCause {
    pub kind: CauseKind,
    pub label: String,
    pub ns: Ns,
    pub share: f64,
    /// The API calls or NVTX ranges holding this cause's time, largest first (at most
    /// [`DETAIL`]): the evidence a finding shows.
    #[serde(default)]
    pub labels: Vec<LabelTime>,
    /// The gaps in which this cause holds the most time, largest share of the cause first (at
    /// most [`DETAIL`]): where the page's timeline goes when the cause is clicked.
    #[serde(default)]
    pub gaps: Vec<CauseGap>,
    /// Its time per gap-size bucket (the nine of spec §4, in order).
    #[serde(default)]
    pub by_bucket: Vec<Ns>,
    /// The frames the launching threads' CPU samples inside this cause's time name, most
    /// sampled first (at most [`DETAIL`]); empty when the capture has no samples there.
    #[serde(default)]
    pub frames: Vec<FrameShare>,
    /// Every CPU sample of the launching threads inside this cause's time.
    #[serde(default)]
    pub samples: u32,
    /// For `host_ahead`: what the other devices of the trace ran during its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meanwhile: Option<Meanwhile>,
}

/// A sampled frame (`symbol (module)`) and its share of a cause's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShare {
    pub frame: String,
    pub samples: u32,
    pub share: f64,
}

/// How many labels and gaps a cause keeps as evidence.
pub const DETAIL: usize = 5;

/// One label's time inside a cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelTime {
    pub label: String,
    pub ns: Ns,
}

/// One idle gap and the time a cause holds in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseGap {
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// The cause's time inside the gap.
    pub ns: Ns,
}

/// Per cause, what [`IdleCause`] shows beyond its total: the time per label, the gaps holding
/// most of it and its time per bucket, gathered gap by gap as the sweep hands them over.
#[derive(Debug, Clone, Default)]
pub struct CauseLedger<'t> {
    /// By cause's rank in [`PRECEDENCE`].
    per: [Ledger<'t>; PRECEDENCE.len()],
    /// What the other devices ran during the `host_ahead` time.
    meanwhile: MeanwhileTally,
}

#[derive(Debug, Clone, Default)]
struct Ledger<'t> {
    labels: HashMap<Label<'t>, Ns>,
    /// The label of the last gaps, with their time not yet in `labels` (a cause's label mostly
    /// stays the same from gap to gap: it is looked up once a run).
    run: Option<(&'t str, Ns)>,
    /// Min-heap of the kept gaps by the cause's time in them.
    gaps: std::collections::BinaryHeap<Reverse<(Ns, Reverse<Ns>, Ns)>>,
    by_bucket: [Ns; 9],
    /// Samples per frame.
    frames: HashMap<Label<'t>, u32>,
}

impl<'t> CauseLedger<'t> {
    /// Adds one gap `[start, end)` and its causes.
    pub fn add_gap(&mut self, (start, end): (Ns, Ns), causes: &Tally<'t>) {
        let bucket = super::gaps::bucket_of(end - start);
        let mut in_gap: [Ns; PRECEDENCE.len()] = [0; PRECEDENCE.len()];
        for (kind, label, ns) in causes.iter() {
            let Some(l) = self.per.get_mut(kind.rank()) else {
                continue;
            };
            l.add_label(label, ns);
            l.by_bucket[bucket] = l.by_bucket[bucket].saturating_add(ns);
            in_gap[kind.rank()] = in_gap[kind.rank()].saturating_add(ns);
        }
        for &(kind, frame, n) in &causes.samples {
            if let Some(l) = self.per.get_mut(kind.rank()) {
                *l.frames.entry(Label(frame)).or_default() += n;
            }
        }
        self.meanwhile.merge(&causes.meanwhile);
        for (l, &ns) in self.per.iter_mut().zip(&in_gap) {
            let gap = (ns, Reverse(start), end);
            // Full, the heap keeps a gap only above its least one.
            let kept = l.gaps.len() < DETAIL || l.gaps.peek().is_some_and(|least| gap > least.0);
            if ns > 0 && kept {
                l.gaps.push(Reverse(gap));
                if l.gaps.len() > DETAIL {
                    l.gaps.pop();
                }
            }
        }
    }

    /// Every cause of the gaps added (a device's), as a share of `idle_ns`, with its evidence;
    /// largest first (ties: precedence order), each labelled by its largest label (ties: the
    /// first name).
    pub fn causes(mut self, idle_ns: Ns) -> Vec<IdleCause> {
        self.per.iter_mut().for_each(Ledger::end_run);
        let mut kinds: Vec<(KindTotal<'t>, &Ledger<'t>)> = self
            .per
            .iter()
            .zip(PRECEDENCE)
            .filter_map(|(l, kind)| {
                let (&Label(label), _) = l
                    .labels
                    .iter()
                    .max_by_key(|&(&label, &ns)| (ns, Reverse(label.0)))?;
                let ns = l.labels.values().sum();
                Some((KindTotal { kind, ns, label }, l))
            })
            .collect();
        kinds.sort_by_key(|(k, _)| (Reverse(k.ns), k.kind.rank()));
        kinds
            .into_iter()
            .map(|(k, l)| IdleCause {
                kind: k.kind,
                label: k.label.to_string(),
                ns: k.ns,
                share: share(k.ns, idle_ns),
                labels: l.top_labels(),
                gaps: l.top_gaps(),
                by_bucket: l.by_bucket.to_vec(),
                frames: top_frames(l.frames.iter().map(|(&Label(f), &n)| (f, n))),
                samples: l.frames.values().sum(),
                meanwhile: (k.kind == HostAhead)
                    .then(|| self.meanwhile.report())
                    .flatten(),
            })
            .collect()
    }
}

/// The [`DETAIL`] most sampled frames of `frames`, each with its share of them all (ties: by
/// name).
fn top_frames<'a>(frames: impl Iterator<Item = (&'a str, u32)>) -> Vec<FrameShare> {
    let mut all: Vec<(&str, u32)> = frames.collect();
    let total: u32 = all.iter().map(|f| f.1).sum();
    all.sort_by_key(|&(frame, n)| (Reverse(n), frame));
    all.into_iter()
        .take(DETAIL)
        .map(|(frame, samples)| FrameShare {
            frame: frame.to_string(),
            samples,
            share: f64::from(samples) / f64::from(total.max(1)),
        })
        .collect()
}

impl<'t> Ledger<'t> {
    fn add_label(&mut self, label: &'t str, ns: Ns) {
        match &mut self.run {
            Some((last, run)) if std::ptr::eq(*last, label) => *run += ns,
            _ => {
                self.end_run();
                self.run = Some((label, ns));
            }
        }
    }

    /// Adds the last run's time to its label.
    fn end_run(&mut self) {
        if let Some((label, ns)) = self.run.take() {
            *self.labels.entry(Label(label)).or_default() += ns;
        }
    }

    /// The [`DETAIL`] labels holding the most time, largest first (ties: by name): kept as
    /// they pass, without a list of every label (a long trace names every step differently).
    fn top_labels(&self) -> Vec<LabelTime> {
        let mut top: Vec<(Reverse<Ns>, &str)> = Vec::with_capacity(DETAIL + 1);
        for (&Label(label), &ns) in &self.labels {
            let item = (Reverse(ns), label);
            if top.len() < DETAIL || top.last().is_some_and(|last| item < *last) {
                let at = top.partition_point(|t| *t < item);
                top.insert(at, item);
                top.truncate(DETAIL);
            }
        }
        top.into_iter()
            .map(|(Reverse(ns), label)| LabelTime {
                label: label.to_string(),
                ns,
            })
            .collect()
    }

    /// The kept gaps, the cause's largest time in them first (ties: the earlier).
    fn top_gaps(&self) -> Vec<CauseGap> {
        let mut gaps: Vec<CauseGap> = self
            .gaps
            .iter()
            .map(|&Reverse((ns, Reverse(start_ns), end_ns))| CauseGap {
                start_ns,
                end_ns,
                ns,
            })
            .collect();
        gaps.sort_by_key(|g| (Reverse(g.ns), g.start_ns));
        gaps
    }
}

/// One device's idle time and its causes, largest first (they add up to `idle_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceIdle {
    pub device: u32,
    /// Time in the device's idle gaps inside the window (the device-idle gaps' total).
    pub idle_ns: Ns,
    pub causes: Vec<IdleCause>,
    pub file: String,
    /// Whether the launching threads' scheduling and CPU samples were recorded.
    #[serde(default)]
    pub cpu_records: CpuRecords,
}

/// The `idle` section of the drill-down: per device (per file), where its idle time went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleAttribution {
    pub per_device: Vec<DeviceIdle>,
}

/// The cause holding most of one gap's time, and its share of the gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapCause {
    pub kind: CauseKind,
    pub label: String,
    pub share: f64,
    /// The frame the launching threads' CPU samples inside this cause's time in the gap name
    /// most, if any were taken there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<String>,
    /// For `host_ahead`: what the other devices ran during its time in the gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meanwhile: Option<Meanwhile>,
}

/// One cause's share of some gap time (a bucket's): its kind, the API or NVTX name holding most
/// of it (`""` for `untraced`), its time and its share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    pub kind: CauseKind,
    pub label: String,
    pub ns: Ns,
    pub share: f64,
}

/// Idle time per (cause, label): a gap's, a bucket's or a device's.
///
/// A gap's tally holds a few entries and is merged into several others (its bucket's, each
/// stream's pending causes): up to eight entries are a list searched in order, which in wasm
/// costs a fraction of hashing each label at each merge; past that, a map.
#[derive(Debug, Clone, Default)]
pub struct Tally<'t> {
    few: Vec<(CauseKind, &'t str, Ns)>,
    /// Every entry, once there are more than [`FEW`] (`few` is then empty).
    many: HashMap<(CauseKind, Label<'t>), Ns>,
    /// CPU samples of the launching threads per (cause, frame): evidence, not time (equal
    /// tallies may differ here).
    pub samples: Vec<(CauseKind, &'t str, u32)>,
    /// What the other devices ran during the `host_ahead` time (evidence, as `samples`).
    pub meanwhile: MeanwhileTally,
}

/// The most entries a [`Tally`] keeps as a list.
const FEW: usize = 8;

/// The same time per (cause, label), however each tally holds it.
impl PartialEq for Tally<'_> {
    fn eq(&self, other: &Self) -> bool {
        let map = |t: &Self| -> HashMap<(CauseKind, Label<'_>), Ns> {
            t.iter().map(|(k, l, ns)| ((k, Label(l)), ns)).collect()
        };
        map(self) == map(other)
    }
}

/// A label as a map key: hashed by its length and its first and last eight bytes, compared
/// whole. Labels are short names met again and again (a cause's label in every stretch of every
/// gap); hashing each byte of each was a tenth of the drill-down's time in wasm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Label<'t>(&'t str);

impl std::hash::Hash for Label<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let b = self.0.as_bytes();
        let word = |bytes: &[u8]| {
            let mut w = [0u8; 8];
            w[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(w)
        };
        let (head, tail) = (&b[..b.len().min(8)], &b[b.len().saturating_sub(8)..]);
        state.write_u64(word(head) ^ word(tail).rotate_left(29) ^ b.len() as u64);
    }
}

/// One cause's total in a [`Tally`], with the label holding most of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindTotal<'t> {
    pub kind: CauseKind,
    pub ns: Ns,
    pub label: &'t str,
}

impl<'t> Tally<'t> {
    pub fn add(&mut self, kind: CauseKind, label: &'t str, ns: Ns) {
        if ns <= 0 {
            return;
        }
        if !self.many.is_empty() {
            *self.many.entry((kind, Label(label))).or_default() += ns;
            return;
        }
        let same = |&(k, l, _): &(CauseKind, &str, Ns)| {
            k == kind && (std::ptr::eq(l, label) || l == label)
        };
        match self.few.iter().position(same) {
            Some(at) => self.few[at].2 += ns,
            None if self.few.len() < FEW => self.few.push((kind, label, ns)),
            None => {
                let few = self.few.drain(..).map(|(k, l, ns)| ((k, Label(l)), ns));
                self.many.extend(few);
                self.many.insert((kind, Label(label)), ns);
            }
        }
    }

    pub fn merge(&mut self, other: &Tally<'t>) {
        for (kind, label, ns) in other.iter() {
            self.add(kind, label, ns);
        }
        for &(kind, frame, n) in &other.samples {
            self.add_samples(kind, frame, n);
        }
        self.meanwhile.merge(&other.meanwhile);
    }

    /// The sampled frames of `kind`'s time, with their samples.
    fn frames_of(&self, kind: CauseKind) -> impl Iterator<Item = (&'t str, u32)> + '_ {
        self.samples
            .iter()
            .filter(move |s| s.0 == kind)
            .map(|&(_, frame, n)| (frame, n))
    }

    /// Counts `n` samples naming `frame` in time given to `kind`.
    pub fn add_samples(&mut self, kind: CauseKind, frame: &'t str, n: u32) {
        let same = |&&mut (k, f, _): &&mut (CauseKind, &str, u32)| k == kind && f == frame;
        match self.samples.iter_mut().find(same) {
            Some(e) => e.2 += n,
            None => self.samples.push((kind, frame, n)),
        }
    }

    /// Every (cause, label) with its time, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (CauseKind, &'t str, Ns)> + '_ {
        let many = self.many.iter().map(|(&(k, Label(l)), &ns)| (k, l, ns));
        self.few.iter().copied().chain(many)
    }

    pub fn total(&self) -> Ns {
        self.iter().map(|(_, _, ns)| ns).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.few.is_empty() && self.many.is_empty()
    }

    /// Empties the tally, keeping its room.
    pub fn clear(&mut self) {
        self.few.clear();
        self.many.clear();
        self.samples.clear();
        self.meanwhile.clear();
    }

    /// Per cause: its time and its largest label (ties: the first name), largest cause first
    /// (ties: precedence order).
    pub fn kinds(&self) -> Vec<KindTotal<'t>> {
        let mut per: HashMap<CauseKind, (Ns, Ns, &'t str)> = HashMap::new();
        for (kind, label, ns) in self.iter() {
            let e = per.entry(kind).or_insert((0, 0, label));
            e.0 = e.0.saturating_add(ns);
            if (ns, Reverse(label)) > (e.1, Reverse(e.2)) {
                (e.1, e.2) = (ns, label);
            }
        }
        let mut out: Vec<KindTotal<'t>> = per
            .into_iter()
            .map(|(kind, (ns, _, label))| KindTotal { kind, ns, label })
            .collect();
        out.sort_by_key(|k| (Reverse(k.ns), k.kind.rank()));
        out
    }

    /// The cause holding most of the time, if any.
    pub fn dominant(&self) -> Option<KindTotal<'t>> {
        self.kinds().into_iter().next()
    }

    /// Every cause as a share of `of_ns` (a bucket's gap time), largest first: the mix of
    /// causes measured in it.
    pub fn mix(&self, of_ns: Ns) -> Vec<CauseShare> {
        self.kinds()
            .into_iter()
            .map(|k| CauseShare {
                kind: k.kind,
                label: k.label.to_string(),
                ns: k.ns,
                share: share(k.ns, of_ns),
            })
            .collect()
    }

    /// The dominant cause as a share of `of_ns` (a gap's length).
    pub fn gap_cause(&self, of_ns: Ns) -> Option<GapCause> {
        self.dominant().map(|k| GapCause {
            kind: k.kind,
            label: k.label.to_string(),
            share: share(k.ns, of_ns),
            sampled: self
                .samples
                .iter()
                .filter(|s| s.0 == k.kind)
                .max_by_key(|&&(_, frame, n)| (n, Reverse(frame)))
                .map(|&(_, frame, _)| frame.to_string()),
            meanwhile: self.meanwhile_of(k.kind),
        })
    }

    /// What the other devices ran during `kind`'s time, when it is `host_ahead`.
    fn meanwhile_of(&self, kind: CauseKind) -> Option<Meanwhile> {
        (kind == HostAhead)
            .then(|| self.meanwhile.report())
            .flatten()
    }

    /// Every cause as a share of `idle_ns` (the tally's total for a device).
    pub fn causes(&self, idle_ns: Ns) -> Vec<IdleCause> {
        self.kinds()
            .into_iter()
            .map(|k| IdleCause {
                kind: k.kind,
                label: k.label.to_string(),
                ns: k.ns,
                share: share(k.ns, idle_ns),
                labels: Vec::new(),
                gaps: Vec::new(),
                by_bucket: Vec::new(),
                frames: top_frames(self.frames_of(k.kind)),
                samples: self.frames_of(k.kind).map(|(_, n)| n).sum(),
                meanwhile: self.meanwhile_of(k.kind),
            })
            .collect()
    }
}

fn share(ns: Ns, of: Ns) -> f64 {
    if of > 0 {
        (ns as f64 / of as f64).min(1.0)
    } else {
        0.0
    }
}

/// What the measured causes of some gap time say, for a reading: the dominant cause and its
/// share of `of_ns` (named: a bucket's gaps hold more time than the device's idle time when
/// other streams ran meanwhile) when the host recorded something; else that nothing was
/// recorded. No cause the trace does not show (the reference's typical cause of a gap size is
/// a guess, not a measurement).
pub fn cause_sentence(tally: &Tally<'_>, of_ns: Ns) -> String {
    let kinds = tally.kinds();
    let pct = |ns: Ns| crate::format::percent(share(ns, of_ns));
    let of = crate::format::duration_ns(of_ns);
    match kinds.first() {
        None if of_ns > 0 => "the GPU ran other streams' kernels throughout".to_string(),
        Some(k) if k.kind != Untraced => {
            let cause = tally.gap_cause(of_ns);
            let sampled = cause
                .as_ref()
                .and_then(|c| c.sampled.as_ref())
                .map(|f| format!("; CPU samples there: {f}"))
                .unwrap_or_default();
            let meanwhile = cause
                .and_then(|c| c.meanwhile)
                .map(|m| format!("; meanwhile {}", m.sentence()))
                .unwrap_or_default();
            format!(
                "{} ({}) holds {} of the {of} of gap time{sampled}{meanwhile}",
                k.kind.name(),
                k.label,
                pct(k.ns)
            )
        }
        Some(k) => {
            let next = kinds
                .get(1)
                .map(|n| format!(", then {} ({}) {}", n.kind.name(), n.label, pct(n.ns)))
                .unwrap_or_default();
            format!(
                "no host activity recorded for {} of the {of} of gap time{next}",
                pct(k.ns)
            )
        }
        None => "no host activity recorded".to_string(),
    }
}

mod cpu;
pub mod meanwhile;
mod sweep;
#[cfg(test)]
mod tests;

pub use cpu::{CpuRecords, CpuView, UNSAMPLED};
pub use meanwhile::{AheadWatch, Meanwhile, MeanwhileTally};
pub use sweep::{DeviceSweep, HostCauses};
