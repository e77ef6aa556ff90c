//! One device whose every GPU-idle nanosecond has a planted cause: a warm-up (a JIT compile
//! holding a module load, a module load alone, a slow first launch), then steps whose gaps hold a
//! blocking sync, an allocation, an `IO` NVTX range, sometimes a GC pause or a GIL wait, host time
//! with nothing recorded, and the next launch.
//!
//! Every gap is tiled by the planted pieces in order, so the answers (`idle_causes`) are the sums
//! of the pieces: the time of each cause and the label holding it, independent of the sweep that
//! attributes them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Built;
use crate::synth::costs::Costs;
use crate::synth::kinds::{self, KernelKind};
use crate::synth::sim::{LAUNCH_LATENCY, Sim, T0};
use crate::synth::timeline::{MS, Ns, Timeline, US};

/// Steps at scale 1.
const STEPS: u32 = 20;

/// What one planted piece of a gap is: its cause (the drill-down's `kind`) and label.
#[derive(Clone, Copy)]
enum Piece {
    /// A CUDA API call of this name.
    Call(&'static str, &'static str),
    /// An NVTX range of this name, labelled `label`.
    Range(&'static str, &'static str, &'static str),
    /// Host time with nothing recorded.
    Nothing,
}

impl Piece {
    fn cause(self) -> (&'static str, &'static str) {
        match self {
            Piece::Call(kind, name) => (kind, name),
            Piece::Range(kind, _, label) => (kind, label),
            Piece::Nothing => ("untraced", ""),
        }
    }
}

const SYNC: Piece = Piece::Call("sync", "cudaStreamSynchronize");
const ALLOC: Piece = Piece::Call("alloc", "cudaMalloc");
const MODULE_LOAD: Piece = Piece::Call("module_load", "cuModuleLoadData");
const LAUNCH: Piece = Piece::Call("launch", kinds::LAUNCH_EXACT);
const IO: Piece = Piece::Range("nvtx", "IO 7", "IO");
const GC: Piece = Piece::Range("gc", "Python GC", "Python GC");
const GIL: Piece = Piece::Range("gil", "Waiting for GIL", "Waiting for GIL");
const JIT: Piece = Piece::Range(
    "jit",
    "KernelExecutor::compileFusion",
    "KernelExecutor::compileFusion",
);

/// The planted time per (cause, label).
#[derive(Default)]
struct Planted(BTreeMap<(&'static str, &'static str), Ns>);

impl Planted {
    fn add(&mut self, piece: Piece, ns: Ns) {
        *self.0.entry(piece.cause()).or_default() += ns;
    }

    /// `{"idle_ns", "causes": {kind: {"ns", "label"}}}`: per cause its time and the label
    /// holding most of it.
    fn answers(&self) -> Value {
        json!({"idle_ns": self.0.values().sum::<Ns>(), "causes": per_cause(&self.0)})
    }
}

/// Per cause of planted `(cause, label)` times: `{kind: {"ns", "label"}}`, its time and the
/// label holding most of it.
pub(super) fn per_cause(time: &BTreeMap<(&'static str, &'static str), Ns>) -> Map<String, Value> {
    let mut causes: BTreeMap<&str, (Ns, &str, Ns)> = BTreeMap::new();
    for (&(kind, label), &ns) in time {
        let c = causes.entry(kind).or_insert((0, label, 0));
        c.0 += ns;
        if ns > c.2 {
            (c.1, c.2) = (label, ns);
        }
    }
    causes
        .into_iter()
        .map(|(kind, (ns, label, _))| (kind.to_string(), json!({"ns": ns, "label": label})))
        .collect()
}

/// Places `pieces` one after the other on the host from its clock; returns where they end.
fn place(sim: &mut Sim, planted: &mut Planted, pieces: &[(Piece, Ns)]) -> Ns {
    for &(piece, ns) in pieces {
        let at = sim.now(0);
        match piece {
            Piece::Call(_, name) => {
                sim.api_row(0, name, at, at + ns);
                sim.advance(0, ns);
            }
            Piece::Range(_, name, _) => {
                sim.range(0, name, ns);
            }
            Piece::Nothing => sim.advance(0, ns),
        }
        planted.add(piece, ns);
    }
    sim.now(0)
}

/// A kernel launched by a call `[at - 10 µs, at)` that starts `LAUNCH_LATENCY` after it.
fn launched(sim: &mut Sim, k: &KernelKind, at: Ns, dur: Ns) -> (Ns, Ns) {
    let corr = sim.api_row(0, kinds::LAUNCH_EXACT, at - 10 * US, at);
    let start = at + LAUNCH_LATENCY;
    sim.kernel_row(0, k, start, start + dur, corr, 0);
    (start, start + dur)
}

/// Builds the scenario; `scale` multiplies the steps. Its answers are the planted durations: no
/// cost knob.
pub fn idle_causes(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = Sim::new(Timeline::new(&[(31415, "python3", 0)]), seed, false);
    let mut planted = Planted::default();
    // Warm-up: the first kernel, then a compile range holding a module load (the compile wins),
    // a module load alone and a slow first launch.
    sim.advance(0, MS);
    let (_, end) = launched(&mut sim, &kinds::GEMM, T0 + MS, 50 * US);
    sim.wait_until(0, end);
    let compile = sim.open(0, "KernelExecutor::compileFusion");
    sim.advance(0, 5 * MS);
    let at = sim.now(0);
    sim.api_row(0, "cuModuleLoadData", at, at + MS);
    sim.advance(0, 15 * MS);
    sim.close(0, compile);
    planted.add(JIT, 20 * MS);
    place(&mut sim, &mut planted, &[(MODULE_LOAD, 3 * MS)]);
    // The slow first launch: its call holds 8 ms, its kernel starts LAUNCH_LATENCY after it.
    let at = sim.now(0);
    let corr = sim.api_row(0, kinds::LAUNCH_EXACT, at, at + 8 * MS);
    planted.add(LAUNCH, 8 * MS);
    planted.add(Piece::Nothing, LAUNCH_LATENCY);
    let start = at + 8 * MS + LAUNCH_LATENCY;
    sim.kernel_row(0, &kinds::FLASH, start, start + 300 * US, corr, 0);
    let mut b_end = start + 300 * US;
    for step in 0..STEPS * scale {
        // Kernel A is launched while the previous kernel runs and starts when it ends.
        let b_start = b_end - 300 * US;
        let corr = sim.api_row(0, kinds::LAUNCH_EXACT, b_start + 10 * US, b_start + 20 * US);
        sim.kernel_row(0, &kinds::GEMM, b_end, b_end + 200 * US, corr, 0);
        let a_end = b_end + 200 * US;
        // The host syncs on A from right after its launch; 30 µs of the sync fall in the gap.
        let sync_start = b_start + 20 * US;
        sim.api_row(0, "cudaStreamSynchronize", sync_start, a_end + 30 * US);
        planted.add(SYNC, 30 * US);
        sim.wait_until(0, a_end + 30 * US);
        let mut pieces = vec![(ALLOC, 40 * US), (IO, 300 * US)];
        if step % 5 == 0 {
            pieces.push((GC, 2 * MS));
        }
        if step % 4 == 0 {
            pieces.push((GIL, 500 * US));
        }
        pieces.push((Piece::Nothing, 100 * US));
        let launch_at = place(&mut sim, &mut planted, &pieces) + 10 * US;
        planted.add(LAUNCH, 10 * US);
        planted.add(Piece::Nothing, LAUNCH_LATENCY);
        let (_, end) = launched(&mut sim, &kinds::FLASH, launch_at, 300 * US);
        sim.wait_until(0, launch_at);
        b_end = end;
    }
    let mut extras = Map::new();
    extras.insert("idle_causes".into(), json!({ "0": planted.answers() }));
    Built { tl: sim.tl, extras }
}
