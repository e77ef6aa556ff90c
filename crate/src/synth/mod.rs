//! Synthetic nsys exports with known answers (spec §7).
//!
//! `nsys-lens gen SCENARIO OUT.sqlite [--scale N] [--seed S]` writes a schema-faithful export
//! (the real 2025.3.1 DDL, real id packing, colliding correlation ids, versioned API names) and
//! `OUT.answers.json` beside it: what a correct analysis must report, derived from the placed
//! events by an oracle independent of the analyzer. Tests compare the two; benchmarks use
//! `--scale` to write millions of kernels (`host-bound --scale 4000` writes 5.12 M).
//! [`Costs`] (`--host`, `--launch`, `--kernels`, `--kernel-class`, `--op`) write the same run with
//! one cost scaled, every random draw unchanged, for checking a what-if replay (issue 49).
//!
//! Layout: [`timeline`] holds placed events, [`sim`] places them like a host/GPU pair would,
//! [`decode`] runs a TensorRT-LLM executor loop, `scenarios` defines the named runs,
//! [`writer`]/[`schema`] store them, and [`answers`] is the oracle.

pub mod answers;
pub mod costs;
pub mod decode;
pub mod gpu_metrics;
pub mod host_records;
pub mod kinds;
pub mod markers;
mod scenarios;
pub mod schema;
pub mod sim;
#[cfg(test)]
mod tests;
pub mod timeline;
pub mod writer;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};

/// Generation options: `scale` multiplies the number of steps (≥ 1); the seed drives every
/// random duration, so equal options give byte-identical answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenOptions {
    pub scale: u32,
    pub seed: u64,
}

impl Default for GenOptions {
    fn default() -> GenOptions {
        GenOptions { scale: 1, seed: 42 }
    }
}

pub use costs::{Costs, Knobs};
pub use markers::MarkerStyle;

/// Kernels `host-bound` writes per unit of `--scale` (64 steps × 20 kernels).
pub const HOST_BOUND_KERNELS_PER_SCALE: u64 = 1280;

/// The known scenarios as `(name, one-line description)`.
pub fn scenarios() -> &'static [(&'static str, &'static str)] {
    static LIST: std::sync::OnceLock<Vec<(&'static str, &'static str)>> =
        std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        scenarios::SCENARIOS
            .iter()
            .map(|(n, d, _, _)| (*n, *d))
            .collect()
    })
}

/// The cost knobs scenario `scenario` supports (`None` for an unknown name).
pub fn knobs(scenario: &str) -> Option<Knobs> {
    scenarios::SCENARIOS
        .iter()
        .find(|s| s.0 == scenario)
        .map(|s| s.3)
}

/// `OUT.sqlite` → `OUT.answers.json` (any other name gets `.answers.json` appended).
pub fn answers_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".sqlite").unwrap_or(&name);
    out.with_file_name(format!("{stem}.answers.json"))
}

/// Writes scenario `scenario` to `out` (replacing it) and its answers beside it; returns the answers.
pub fn generate(scenario: &str, out: &Path, opts: &GenOptions) -> Result<Value> {
    generate_with_markers(scenario, out, opts, MarkerStyle::TensorrtLlm)
}

/// [`generate`] with the steps named by another framework's marker; the answers are the
/// TensorRT-LLM run's (plus `"markers"`: the style written and whether it carries counts).
pub fn generate_with_markers(
    scenario: &str,
    out: &Path,
    opts: &GenOptions,
    style: MarkerStyle,
) -> Result<Value> {
    generate_with_costs(scenario, out, opts, style, &Costs::default())
}

/// [`generate_with_markers`] with `costs` applied (issue 49): the same draws, one cost scaled.
/// The answers are the scaled run's and state the factors (`"costs"`, absent when all are 1).
/// A scenario that does not support a knob the costs turn is refused.
pub fn generate_with_costs(
    scenario: &str,
    out: &Path,
    opts: &GenOptions,
    style: MarkerStyle,
    costs: &Costs,
) -> Result<Value> {
    let Some(&(name, _, build, knobs)) = scenarios::SCENARIOS.iter().find(|s| s.0 == scenario)
    else {
        let known: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.0).collect();
        return Err(Error::Usage(format!(
            "unknown scenario '{scenario}'; known scenarios: {}",
            known.join(", ")
        )));
    };
    if opts.scale == 0 {
        return Err(Error::Usage("--scale must be at least 1".into()));
    }
    costs.check()?;
    let refused = knobs.refusing(costs.used());
    if refused != Knobs::NONE {
        let supported = knobs.flags();
        let supported = if supported.is_empty() {
            "no cost factor".to_string()
        } else {
            supported.join(", ")
        };
        return Err(Error::Usage(format!(
            "scenario '{name}' does not support {}: its rows are placed explicitly or its answers planned from the unscaled durations; it supports {supported}",
            refused.flags().join(", "),
        )));
    }
    let mut built = build(opts.seed, opts.scale, costs);
    let renamed = markers::restyle(&mut built.tl, style);
    let written = writer::write(&mut built.tl, out, name);
    markers::restore(&mut built.tl, &renamed);
    written?;
    let mut doc = answers::document(&built.tl, name, opts.seed, opts.scale, built.extras);
    if let Some(map) = doc.as_object_mut() {
        let key = MarkerStyle::ALL
            .iter()
            .find(|(_, m)| *m == style)
            .map(|(k, _)| *k);
        map.insert(
            "markers".into(),
            serde_json::json!({"style": key, "counts": style.has_counts(), "renamed": renamed.len()}),
        );
        if let Some(c) = costs.to_json() {
            map.insert("costs".into(), c);
        }
    }
    write_answers(&answers_path(out), &doc)?;
    Ok(doc)
}

fn write_answers(path: &Path, doc: &Value) -> Result<()> {
    let io = |detail: String| Error::Io {
        path: path.display().to_string(),
        detail,
    };
    let text = serde_json::to_string_pretty(doc).map_err(|e| io(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| io(e.to_string()))
}
