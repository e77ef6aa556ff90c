//! Phase 1: is host (CPU) overhead the bottleneck? Metrics M1–M5, verdicts, phases (SPEC §2).
//!
//! One implementation serves both profiles; [`config::Switches`] say where they differ.

pub mod config;
pub mod result;

pub use config::{DetectConfig, Profile, ScopeThresholds, ThresholdOverrides, Thresholds};
pub use result::DetectReport;

use crate::error::{Error, Result};
use crate::model::Trace;

/// Runs detection on a loaded trace. Fails only when there are no kernels to measure.
pub fn detect(trace: &Trace, cfg: &DetectConfig) -> Result<DetectReport> {
    if trace.kernels.is_empty() {
        return Err(Error::NoKernels { path: cfg.file_label.clone(), why: "kernel table is empty".into() });
    }
    todo!()
}
