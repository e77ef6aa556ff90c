//! Cost factors (issue 49): the same scenario with one cost scaled and everything else identical,
//! so that a what-if replay's prediction from the unscaled trace can be checked against the
//! measured step time of the scaled one.
//!
//! The factors apply inside [`super::sim::Sim`]'s methods, to durations already drawn: the random
//! stream, and so every other duration, is the unscaled run's. A scaled duration is rounded to
//! the nearest ns; a factor of exactly 1 leaves it untouched, so default costs write the same bytes.

use serde::Serialize;

use crate::error::{Error, Result};

use super::timeline::Ns;

/// What a scenario lets be scaled: `host` (with `ops`), `launch`, `kernels` (with `kernel_classes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    pub host: bool,
    pub launch: bool,
    pub kernels: bool,
}

impl Knobs {
    pub const ALL: Knobs = Knobs {
        host: true,
        launch: true,
        kernels: true,
    };
    /// Launch calls and kernels only: the scenario's answers are planned from its host durations.
    pub const DEVICE: Knobs = Knobs {
        host: false,
        launch: true,
        kernels: true,
    };
    /// None: the scenario places its rows explicitly, or its answers are planned statuses.
    pub const NONE: Knobs = Knobs {
        host: false,
        launch: false,
        kernels: false,
    };

    /// The knobs of `used` these do not support.
    pub fn refusing(self, used: Knobs) -> Knobs {
        Knobs {
            host: used.host && !self.host,
            launch: used.launch && !self.launch,
            kernels: used.kernels && !self.kernels,
        }
    }

    /// The CLI flags of these knobs, for messages.
    pub fn flags(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.host {
            out.extend(["--host", "--op"]);
        }
        if self.launch {
            out.push("--launch");
        }
        if self.kernels {
            out.extend(["--kernels", "--kernel-class"]);
        }
        out
    }
}

/// Kernel classes a `kernel_classes` factor may name: the keys of the crate's class rule
/// (`model::Work::class`) for the kernels the generator places ([`super::kinds::placed_class`]).
pub const KERNEL_CLASSES: [&str; 9] = [
    "gemm",
    "attention",
    "collective",
    "norm",
    "elementwise",
    "reduction",
    "sampling",
    "memory",
    "other",
];

/// Multipliers of one run's costs; 1 (the default) leaves a cost as drawn. The fields and their
/// meaning are those of the what-if replay's `whatif::Costs`, which predicts what this writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Costs {
    /// The host's own time between CUDA calls: every `Sim::advance` and `Sim::range`.
    pub host: f64,
    /// Kernel-launch calls' durations (`cudaLaunchKernel` and its variants, `cudaGraphLaunch`).
    pub launch: f64,
    /// Every kernel's and graph node's GPU duration.
    pub kernels: f64,
    /// `(class, F)`: kernels and graph nodes of one class, times `kernels` (the first pair naming
    /// a class counts).
    pub kernel_classes: Vec<(String, f64)>,
    /// `(name, F)`: one NVTX op's self time (its host time while it is the innermost open range
    /// on its thread), times `host`. CUDA calls and waits inside it are not scaled.
    pub ops: Vec<(String, f64)>,
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            host: 1.0,
            launch: 1.0,
            kernels: 1.0,
            kernel_classes: Vec::new(),
            ops: Vec::new(),
        }
    }
}

/// Largest factor accepted: keeps every scaled time far inside `i64` ns.
const MAX_FACTOR: f64 = 1000.0;

/// `ns × factor`, rounded to the nearest ns; untouched at 1.
fn scale(ns: Ns, factor: f64) -> Ns {
    if factor == 1.0 {
        ns
    } else {
        (ns as f64 * factor).round() as Ns
    }
}

/// The factor of the first pair naming `key` (1 if none).
fn named(pairs: &[(String, f64)], key: &str) -> f64 {
    pairs.iter().find(|(k, _)| k == key).map_or(1.0, |p| p.1)
}

impl Costs {
    /// Whether every factor is 1 (the unscaled run).
    pub fn is_default(&self) -> bool {
        self.used() == Knobs::NONE
    }

    /// The knobs these costs turn (a factor other than 1).
    pub fn used(&self) -> Knobs {
        let set = |pairs: &[(String, f64)]| pairs.iter().any(|p| p.1 != 1.0);
        Knobs {
            host: self.host != 1.0 || set(&self.ops),
            launch: self.launch != 1.0,
            kernels: self.kernels != 1.0 || set(&self.kernel_classes),
        }
    }

    /// Refuses a factor that is not a finite number in [0, 1000], an unknown kernel class or an
    /// empty op name.
    pub fn check(&self) -> Result<()> {
        let factors = [self.host, self.launch, self.kernels]
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
        if let Some((class, _)) = self
            .kernel_classes
            .iter()
            .find(|(c, _)| !KERNEL_CLASSES.contains(&c.as_str()))
        {
            return Err(Error::Usage(format!(
                "--kernel-class: no kernel class '{class}' the generator places; classes: {}",
                KERNEL_CLASSES.join(", ")
            )));
        }
        if self.ops.iter().any(|(name, _)| name.is_empty()) {
            return Err(Error::Usage("--op needs NAME=F with a range name".into()));
        }
        Ok(())
    }

    /// The factor on the self time of a range named `name` (1 if it is no scaled op).
    pub fn op_factor(&self, name: &str) -> f64 {
        named(&self.ops, name)
    }

    /// Host time `ns`, spent in an op of factor `op`.
    pub fn host_ns(&self, ns: Ns, op: f64) -> Ns {
        scale(ns, self.host * op)
    }

    /// A kernel-launch call's duration `ns`.
    pub fn launch_ns(&self, ns: Ns) -> Ns {
        scale(ns, self.launch)
    }

    /// GPU duration `ns` of a kernel (or graph node) named `short`.
    pub fn kernel_ns(&self, short: &str, ns: Ns) -> Ns {
        let class =
            super::kinds::placed_class(short).map_or(1.0, |c| named(&self.kernel_classes, c));
        scale(ns, self.kernels * class)
    }

    /// The factors as the answers state them (`None` for the unscaled run).
    pub fn to_json(&self) -> Option<serde_json::Value> {
        if self.is_default() {
            return None;
        }
        serde_json::to_value(self).ok()
    }
}

#[cfg(test)]
mod tests;
