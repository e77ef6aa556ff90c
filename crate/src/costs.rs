//! Changed costs: a factor on each cost of a run that a fix could change. The what-if replay
//! predicts a run under them (`whatif`); the generator writes a run under them (`synth`), so the
//! prediction can be checked against a measured run.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Each a factor on what it names (1: unchanged).
/// Read from JSON too (the page's what-if options): a factor left out is 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Costs {
    /// The host's own time between CUDA calls.
    pub host: f64,
    /// Kernel-launch calls, `cudaGraphLaunch` included.
    pub launch: f64,
    /// Every kernel, CUDA-graph replay and graph node.
    pub kernels: f64,
    /// Every copy (memcpy) and memset on the GPU: their GPU durations, as pinned host memory or
    /// fewer bytes would shorten them. What waits on one (a synchronous `cudaMemcpy`, a stream
    /// synchronization) follows its replayed end.
    pub copies: f64,
    /// `(class, F)`: kernels of one class (a `KernelCategory` key), on top of `kernels` (the
    /// first pair naming a class counts).
    pub kernel_classes: Vec<(String, f64)>,
    /// `(name, F)`: the host's own time inside one NVTX op (while it is the innermost open range
    /// on its thread), on top of `host`. CUDA calls and waits inside it are not scaled.
    pub ops: Vec<(String, f64)>,
    /// Each steady step's eager kernel launches on a thread replaced by one graph launch (the
    /// replay's `--graphs`; the generator cannot write it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub graphs: bool,
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            host: 1.0,
            launch: 1.0,
            kernels: 1.0,
            copies: 1.0,
            kernel_classes: Vec::new(),
            ops: Vec::new(),
            graphs: false,
        }
    }
}

/// Largest factor accepted: keeps every scaled time far inside `i64` ns.
pub const MAX_FACTOR: f64 = 1000.0;

/// `ns × factor`, rounded to the nearest ns; untouched at 1, so unchanged costs change nothing.
pub fn scale(ns: i64, factor: f64) -> i64 {
    if factor == 1.0 {
        ns
    } else {
        (ns as f64 * factor).round() as i64
    }
}

/// The factor of the first pair naming `key` (1 if none).
fn named(pairs: &[(String, f64)], key: &str) -> f64 {
    pairs.iter().find(|(k, _)| k == key).map_or(1.0, |p| p.1)
}

impl Costs {
    /// The factor on a kernel of class `key`.
    pub fn class_factor(&self, key: &str) -> f64 {
        self.kernels * named(&self.kernel_classes, key)
    }

    /// The factor on the self time of a range named `name` (1 if it is no scaled op).
    pub fn op_factor(&self, name: &str) -> f64 {
        named(&self.ops, name)
    }

    /// The change in words: `host ×0.5, launch ×0.5`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        for (what, f) in [
            ("host", self.host),
            ("launch", self.launch),
            ("kernels", self.kernels),
            ("copies", self.copies),
        ] {
            if f != 1.0 {
                parts.push(format!("{what} ×{f}"));
            }
        }
        for (k, f) in &self.kernel_classes {
            parts.push(format!("{k} kernels ×{f}"));
        }
        for (op, f) in &self.ops {
            parts.push(format!("op {op} ×{f}"));
        }
        if self.graphs {
            parts.push("eager launches as one graph launch per step".into());
        }
        match parts.is_empty() {
            true => "unchanged".into(),
            false => parts.join(", "),
        }
    }

    /// Refuses a factor that is not a finite number in [0, 1000], or an empty op name.
    pub fn check_factors(&self) -> Result<()> {
        let factors = [self.host, self.launch, self.kernels, self.copies]
            .into_iter()
            .chain(self.kernel_classes.iter().map(|c| c.1))
            .chain(self.ops.iter().map(|o| o.1));
        for f in factors {
            if !(f.is_finite() && (0.0..=MAX_FACTOR).contains(&f)) {
                return Err(Error::Usage(format!(
                    "a cost factor must be a number from 0 to {MAX_FACTOR}, not {f}"
                )));
            }
        }
        if self.ops.iter().any(|(name, _)| name.is_empty()) {
            return Err(Error::Usage("--op needs NAME=F with a range name".into()));
        }
        Ok(())
    }
}
