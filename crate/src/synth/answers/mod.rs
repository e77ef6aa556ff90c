//! The oracle: the answers a correct analysis must give for a synthetic timeline.
//!
//! Computed from the placed events with this module's own, deliberately plain code (sort, merge,
//! intersect); it never calls the analyzer (`detect`, `model::intervals`), so the scenario tests
//! compare two independent derivations of the same definitions.

mod analyze;
mod drill;
mod extras;
mod ivl;
mod skill;
mod standard;
mod verdict;
mod work;

pub use analyze::{PlacedStep, Placement, analyze_answers, expected_comparison};
pub use drill::{LayerPlan, drill_answers, layer_pattern};
pub use extras::{gap_buckets, graph_counts, regression_figures, stragglers};

use serde_json::{Map, Value, json};

use super::schema::NSYS_VERSION;
use super::timeline::{Ns, Timeline};

/// A forward-step NVTX range as parsed by the phase regex.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub name: u32,
    pub number: u64,
    pub ctx: u64,
    pub generation: u64,
    pub start: Ns,
    pub end: Ns,
}

/// Forward-step ranges in table order. `text_fallback`: inline-named rows count too (standard);
/// otherwise only registered (`textId`) rows, as the reference script joins on `textId` alone.
/// Rows need a positive end and an event type accepted by `type_ok`.
pub fn parse_steps(tl: &Timeline, text_fallback: bool, type_ok: impl Fn(u8) -> bool) -> Vec<Step> {
    let re = regex::Regex::new(r"_forward_step\s+(\d+):\s+(\d+)\s+ctx reqs,\s+(\d+)\s+gen reqs")
        .expect("constant regex");
    let mut cache: std::collections::HashMap<u32, Option<(u64, u64, u64)>> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for n in tl
        .nvtx
        .iter()
        .filter(|n| (text_fallback || !n.inline) && type_ok(n.event_type))
    {
        let Some(end) = n.end.filter(|&e| e > 0) else {
            continue;
        };
        let parsed = *cache.entry(n.name).or_insert_with(|| {
            let c = re.captures(tl.names.get(n.name))?;
            let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            Some((num(1)?, num(2)?, num(3)?))
        });
        if let Some((number, ctx, generation)) = parsed {
            out.push(Step {
                name: n.name,
                number,
                ctx,
                generation,
                start: n.start,
                end,
            });
        }
    }
    out
}

/// The whole answers document: facts, both profiles' DETECT-SUBSETs, then scenario `extras`.
pub fn document(
    tl: &Timeline,
    scenario: &str,
    seed: u64,
    scale: u32,
    extras: Map<String, Value>,
) -> Value {
    let mut doc = json!({
        "scenario": scenario,
        "seed": seed,
        "scale": scale,
        "nsys_version": NSYS_VERSION,
        "kernels": tl.kernels.len(),
        "graph_replays": tl.graph_replays.len(),
        "devices": tl.devices(),
        "processes": tl.procs.len(),
        "profiles": {
            "standard": standard::answers(tl),
            "trtllm-skill": skill::answers(tl),
        },
    });
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("drill".into(), drill::drill_answers(tl));
        obj.extend(extras);
    }
    doc
}
