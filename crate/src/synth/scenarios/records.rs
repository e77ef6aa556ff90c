//! One device whose idle gaps are explained by the records nsys keeps beside the calls: the
//! driver's overhead records (module loading and lazy function loading inside a first launch, a
//! launch waiting on a full command buffer), a profiler buffer flush, the launching thread's
//! scheduling (blocked, then runnable but preempted) and CPU samples of the untraced code it ran.
//! A second process runs a copy and a kernel on device 1 while device 0's launch waits on the
//! full command buffer: what the other GPU ran meanwhile.
//!
//! Every gap is tiled by planted pieces, so the answers are the sums of the pieces: each cause's
//! time, its largest label, the frames the samples inside its time name, and the other device's
//! work inside the `host_ahead` time.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Built;
use crate::synth::costs::Costs;
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{LAUNCH_LATENCY, Sim, T0};
use crate::synth::timeline::{CpuSample, MS, Ns, Overhead, Switch, Timeline, US};

/// Steady steps at scale 1.
const STEPS: u32 = 10;

/// `ENUM_CUPTI_OVERHEAD_TYPE` ids.
const BUFFER_FLUSH: u8 = 3;
const MODULE_LOADING: u8 = 6;
const LAZY_LOADING: u8 = 7;
const COMMAND_BUFFER_FULL: u8 = 8;

/// `ENUM_SAMPLING_THREAD_STATE` of a switch-out: preempted (runnable) or sleeping (blocked).
const PREEMPTED: u8 = 1;
const BLOCKED: u8 = 2;

/// The label of on-CPU time with no sample inside it (the drill-down's).
const UNSAMPLED: &str = "untraced code";
const TOKENIZE: &str = "tokenize (libserving.so)";

/// The planted time per (cause, label) and samples per (cause, frame).
#[derive(Default)]
struct Planted {
    time: BTreeMap<(&'static str, &'static str), Ns>,
    frames: BTreeMap<(&'static str, &'static str), u32>,
}

impl Planted {
    fn add(&mut self, kind: &'static str, label: &'static str, ns: Ns) {
        *self.time.entry((kind, label)).or_default() += ns;
    }

    /// `{"idle_ns", "causes": {kind: {"ns", "label"}}, "frames": {kind: {frame: samples}},
    /// "meanwhile": …}`.
    fn answers(&self, meanwhile: Value) -> Value {
        let causes = super::causes::per_cause(&self.time);
        let mut frames: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
        for (&(kind, frame), &n) in &self.frames {
            frames
                .entry(kind)
                .or_default()
                .insert(frame.into(), json!(n));
        }
        json!({
            "idle_ns": self.time.values().sum::<Ns>(),
            "causes": causes,
            "frames": frames,
            "meanwhile": meanwhile,
        })
    }
}

/// The scenario's one process and its launching (main) thread.
struct Host {
    sim: Sim,
    planted: Planted,
    main: u32,
}

impl Host {
    fn switch(&mut self, at: Ns, on_cpu: bool, state: u8) {
        self.sim.tl.switches.push(Switch {
            at,
            proc: 0,
            tid: self.main,
            on_cpu,
            state,
        });
    }

    fn overhead(&mut self, (start, end): (Ns, Ns), overhead_type: u8, name: &str, corr: u32) {
        let name = self.sim.tl.names.id(name);
        let profiler = overhead_type == BUFFER_FLUSH;
        // nsys's buffer flushes run on a thread of their own.
        let tid = if profiler { self.main + 1 } else { self.main };
        self.sim.tl.overheads.push(Overhead {
            start,
            end,
            proc: 0,
            tid,
            overhead_type,
            name,
            corr,
            profiler,
        });
    }

    /// A sample of `tid` whose chain is the profiler's own frame, then `frames` (symbol,
    /// module): the first of these names it.
    fn sample(&mut self, at: Ns, tid: u32, frames: &[(&str, &str)]) {
        let names = &mut self.sim.tl.names;
        let injection = (
            names.id("0x7f00deadbeef"),
            names.id("/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so"),
            true,
        );
        let mut chain = vec![injection];
        chain.extend(
            frames
                .iter()
                .map(|&(s, m)| (names.id(s), names.id(m), false)),
        );
        self.sim.tl.samples.push(CpuSample {
            at,
            proc: 0,
            tid,
            frames: chain,
        });
    }

    /// A launch call `[at, at + call)` and its kernel `LAUNCH_LATENCY` after it: the latency is
    /// on-CPU time with no call.
    fn launch(&mut self, k: &KernelKind, at: Ns, call: Ns, dur: Ns) -> (u32, Ns) {
        let corr = self.sim.api_row(0, kinds::LAUNCH_EXACT, at, at + call);
        let start = at + call + LAUNCH_LATENCY;
        self.sim.kernel_row(0, k, start, start + dur, corr, 0);
        self.planted.add("cpu_busy", UNSAMPLED, LAUNCH_LATENCY);
        (corr, start + dur)
    }
}

/// Builds the scenario; `scale` multiplies the steady steps. Its rows are placed explicitly: no
/// cost knob.
pub fn host_records(seed: u64, scale: u32, _: &Costs) -> Built {
    let procs = [(31415, "python3", 0), (31416, "python3", 1)];
    let sim = Sim::new(Timeline::new(&procs), seed, false);
    let main = sim.tl.procs[0].main_tid();
    let mut h = Host {
        sim,
        planted: Planted::default(),
        main,
    };
    h.switch(T0, true, 0);
    // The first kernel opens the window; its launch's latency is no gap.
    let corr = h
        .sim
        .api_row(0, kinds::LAUNCH_EXACT, T0 + MS - 10 * US, T0 + MS);
    let start = T0 + MS + LAUNCH_LATENCY;
    h.sim
        .kernel_row(0, &kinds::GEMM, start, start + 50 * US, corr, 0);
    let e0 = start + 50 * US;
    // Gap 1: untraced on-CPU time, then a first launch whose 5 ms the driver spent loading the
    // module (4 ms) and the function (0.5 ms).
    h.planted.add("cpu_busy", UNSAMPLED, 100 * US);
    let a = e0 + 100 * US;
    let (corr, e1) = h.launch(&kinds::FLASH, a, 5 * MS, 100 * US);
    let launch = kinds::LAUNCH_EXACT;
    h.overhead((a + 200 * US, a + 4200 * US), MODULE_LOADING, launch, corr);
    h.overhead((a + 4300 * US, a + 4800 * US), LAZY_LOADING, launch, corr);
    h.planted
        .add("module_load", "runtime module loading", 4 * MS);
    h.planted
        .add("lazy_load", "lazy function loading", 500 * US);
    h.planted.add("launch", "cudaLaunchKernel", 500 * US);
    // Gap 2: a profiler buffer flush on its own thread (1 ms), then a launch that waited 1.8 ms
    // of its 2 ms for room in the command buffer.
    h.overhead((e1, e1 + MS), BUFFER_FLUSH, "CUPTI Buffer flush", 0);
    h.planted.add("profiler", "CUPTI Buffer flush", MS);
    let (corr, mut end) = h.launch(&kinds::FLASH, e1 + MS, 2 * MS, 100 * US);
    h.overhead(
        (e1 + 1100 * US, e1 + 2900 * US),
        COMMAND_BUFFER_FULL,
        launch,
        corr,
    );
    h.planted
        .add("host_ahead", "command buffer full", 1800 * US);
    h.planted.add("launch", "cudaLaunchKernel", 200 * US);
    let meanwhile = other_device_work(&mut h.sim, e1 + 1100 * US);
    for _ in 0..STEPS * scale {
        end = steady_step(&mut h, end);
    }
    h.sim.wait_until(0, end);
    let mut extras = Map::new();
    extras.insert(
        "idle_causes".into(),
        json!({ "0": h.planted.answers(meanwhile) }),
    );
    Built {
        tl: h.sim.tl,
        extras,
    }
}

/// Process 1 (device 1) copies 1.44 ms host to device from `at`, where device 0's 1.8 ms
/// command-buffer-full wait begins, then runs a 180 µs kernel right after: device 1 is busy for
/// 80 % + 10 % of the wait, and idle for the last 10 %. Returns the answer: the wait, the time
/// device 1 ran anything in it, and per kind of work its time there (largest first).
fn other_device_work(sim: &mut Sim, at: Ns) -> Value {
    let wait = (at, at + 1800 * US);
    let api = 10 * US;
    // The copy call returns `LAUNCH_LATENCY` before the copy starts.
    sim.wait_until(1, at - api - LAUNCH_LATENCY);
    let copy = sim.memcpy_htod(1, 64 << 20, api, 1440 * US);
    // Launched while the copy runs, the kernel starts as it ends.
    let kernel = sim.launch(1, kinds::LAUNCH_EXACT, api, &kinds::GEMM, 180 * US, 0);
    let inside = |(s, e): (Ns, Ns)| (e.min(wait.1) - s.max(wait.0)).max(0);
    json!({
        "ns": wait.1 - wait.0,
        "busy_ns": inside((copy.0, kernel.1)),
        "work": [[1, "copies", inside(copy)], [1, "kernels", inside(kernel)]],
    })
}

/// One step after a kernel ending at `e`: the launching thread blocks 2 ms, runs untraced code
/// for 3 ms (sampled three times), is preempted for 0.5 ms, then launches the next kernel.
/// Returns where that kernel ends.
fn steady_step(h: &mut Host, e: Ns) -> Ns {
    h.switch(e, false, BLOCKED);
    h.switch(e + 2 * MS, true, 0);
    h.planted.add("cpu_waiting", "blocked", 2 * MS);
    for at in [2500, 3500, 4500] {
        let frames = [
            ("tokenize", "/opt/app/libserving.so"),
            ("main", "/usr/bin/python3"),
        ];
        h.sample(e + at * US, h.main, &frames);
        *h.planted.frames.entry(("cpu_busy", TOKENIZE)).or_default() += 1;
    }
    // Another thread's sample in the gap names nothing of the launching thread.
    h.sample(e + 3 * MS, h.main + 1, &[("flush", "/usr/lib/libcupti.so")]);
    h.planted.add("cpu_busy", TOKENIZE, 3 * MS);
    h.switch(e + 5 * MS, false, PREEMPTED);
    h.switch(e + 5500 * US, true, 0);
    h.planted
        .add("cpu_waiting", "runnable, not scheduled", 500 * US);
    let (_, end) = h.launch(&kinds::GEMM, e + 5500 * US, 10 * US, 200 * US);
    h.planted.add("launch", "cudaLaunchKernel", 10 * US);
    // A sample while the kernel runs is in no gap.
    let busy = end - 150 * US;
    h.sample(busy, h.main, &[("forward", "/opt/app/libmodel.so")]);
    end
}
