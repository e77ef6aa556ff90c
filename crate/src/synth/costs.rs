//! Cost factors (issue 49): the same scenario with one cost scaled and everything else identical,
//! so that a what-if replay's prediction from the unscaled trace can be checked against the
//! measured step time of the scaled one.
//!
//! The factors apply inside [`super::sim::Sim`]'s methods, to durations already drawn: the random
//! stream, and so every other duration, is the unscaled run's. A scaled duration is rounded to
//! the nearest ns; a factor of exactly 1 leaves it untouched, so default costs write the same bytes.

use crate::error::{Error, Result};

use super::timeline::Ns;
use crate::costs::scale;

/// What a scenario lets be scaled: `host` (with `ops`), `launch`, `kernels` (with
/// `kernel_classes`), `copies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    pub host: bool,
    pub launch: bool,
    pub kernels: bool,
    pub copies: bool,
}

impl Knobs {
    pub const ALL: Knobs = Knobs {
        host: true,
        launch: true,
        kernels: true,
        copies: true,
    };
    /// Launch calls and GPU work only: the scenario's answers are planned from its host
    /// durations.
    pub const DEVICE: Knobs = Knobs {
        host: false,
        launch: true,
        kernels: true,
        copies: true,
    };
    /// None: the scenario places its rows explicitly, or its answers are planned statuses.
    pub const NONE: Knobs = Knobs {
        host: false,
        launch: false,
        kernels: false,
        copies: false,
    };

    /// The knobs of `used` these do not support.
    pub fn refusing(self, used: Knobs) -> Knobs {
        Knobs {
            host: used.host && !self.host,
            launch: used.launch && !self.launch,
            kernels: used.kernels && !self.kernels,
            copies: used.copies && !self.copies,
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
        if self.copies {
            out.push("--copies");
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

/// Multipliers of one run's costs (`crate::costs::Costs`): 1 (the default) leaves a cost as
/// drawn. `host` scales every `Sim::advance` and `Sim::range`, `launch` the launch calls'
/// durations, `kernels` every kernel's and graph node's GPU duration, `copies` every copy's and
/// memset's.
pub use crate::costs::Costs;

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
            copies: self.copies != 1.0,
        }
    }

    /// Refuses a factor that is not a finite number in [0, 1000], an unknown kernel class or an
    /// empty op name.
    pub fn check(&self) -> Result<()> {
        self.check_factors()?;
        if self.graphs {
            return Err(Error::Usage(
                "the generator cannot write a run with its launches graphed".into(),
            ));
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
        Ok(())
    }

    /// Host time `ns`, spent in an op of factor `op`.
    pub fn host_ns(&self, ns: Ns, op: f64) -> Ns {
        scale(ns, self.host * op)
    }

    /// A kernel-launch call's duration `ns`.
    pub fn launch_ns(&self, ns: Ns) -> Ns {
        scale(ns, self.launch)
    }

    /// GPU duration `ns` of a copy or a memset.
    pub fn copy_ns(&self, ns: Ns) -> Ns {
        scale(ns, self.copies)
    }

    /// GPU duration `ns` of a kernel (or graph node) named `short`.
    pub fn kernel_ns(&self, short: &str, ns: Ns) -> Ns {
        let factor =
            super::kinds::placed_class(short).map_or(self.kernels, |c| self.class_factor(c));
        scale(ns, factor)
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
