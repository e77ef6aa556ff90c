//! One device, one stream, and inter-kernel gaps of known sizes in every bucket.
//!
//! Gap sizes are drawn well inside each half-open bucket (never on an edge), then shuffled, so a
//! histogram must put exactly the planned count in each bucket.

use rand::seq::SliceRandom;
use serde_json::Map;

use super::Built;
use crate::synth::answers;
use crate::synth::costs::Costs;
use crate::synth::kinds;
use crate::synth::sim::{LAUNCH_LATENCY, Sim, T0};
use crate::synth::timeline::{MS, Ns, Timeline, US};

/// Gaps per bucket at scale 1, and the range (ns) each bucket's gaps are drawn from.
const PLAN: [(u32, Ns, Ns); 9] = [
    (30, 200, 900),
    (30, 1_200, 4_800),
    (25, 5_200, 9_800),
    (25, 11 * US, 49 * US),
    (20, 52 * US, 98 * US),
    (15, 110 * US, 490 * US),
    (10, 520 * US, 980 * US),
    (6, 1_100 * US, 4_900 * US),
    (3, 5_200 * US, 12 * MS),
];

const KINDS: [kinds::KernelKind; 4] = [kinds::GEMM, kinds::FLASH, kinds::RMS_NORM, kinds::SILU];

/// Builds the scenario; `scale` multiplies every bucket's count. Places its rows explicitly: no
/// cost knob.
pub fn gaps(seed: u64, scale: u32, _: &Costs) -> Built {
    let mut sim = Sim::new(Timeline::new(&[(27182, "python3", 0)]), seed, false);
    sim.domain_create(0, "TensorRT-LLM");
    sim.mark(0, "gap sweep start");
    let mut gaps: Vec<Ns> = Vec::new();
    for (count, lo, hi) in PLAN {
        for _ in 0..u64::from(count) * u64::from(scale) {
            gaps.push(sim.uniform(lo, hi));
        }
    }
    gaps.shuffle(&mut sim.rng);
    let mut t = T0 + MS;
    for (i, gap) in gaps.iter().copied().chain(std::iter::once(0)).enumerate() {
        let dur = sim.uniform(6 * US, 30 * US);
        // The launch call returns LAUNCH_LATENCY before its kernel starts; calls never overlap
        // because every kernel lasts longer than call + latency minus the previous kernel's.
        let api_end = t - LAUNCH_LATENCY;
        let corr = sim.api_row(0, kinds::LAUNCH_EXACT, api_end - 5 * US, api_end);
        sim.kernel_row(0, &KINDS[i % KINDS.len()], t, t + dur, corr, 0);
        t += dur + gap;
    }
    let mut extras = Map::new();
    extras.insert("gap_buckets".into(), answers::gap_buckets(&sim.tl));
    Built { tl: sim.tl, extras }
}
