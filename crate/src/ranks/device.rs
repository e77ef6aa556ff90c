//! What `detect` says of a rank's device: its GPU bound, its idle share and the rank's verdict,
//! read from the file's detect report so that a rank's figures are detect's own, over detect's
//! window, and worded by detect.
//!
//! Detect gives its verdict per file (the host-overhead verdict of the file's processes
//! together; no verdict per process or device), so a rank's verdict is its file's: `host-bound`
//! when the file's verdict is YES, else what fills its own device's time — detect's bound rule
//! ([`classify`]) over its device's work alone, with that device's shares of the window.

use crate::detect::DetectReport;
use crate::detect::bound::{Bound, BoundKind, classify};
use crate::detect::sweep::work::WorkSummary;
use crate::model::Ns;

/// One device's figures, as detect measured them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFigures {
    /// What fills its time (never host-bound).
    pub gpu_bound: Option<BoundKind>,
    /// Its idle share of the window (detect's `per_device[].gpu_idle_ratio`).
    pub gpu_idle_ratio: Option<f64>,
    /// Its rank's verdict in one phrase ([`Bound::sentence`]).
    pub verdict: Option<String>,
}

/// `device`'s figures in `report`; empty when detect could not tell (no report, no bound, or
/// the device not in it).
pub fn figures(report: Option<&DetectReport>, device: u32) -> DeviceFigures {
    let Some(r) = report else {
        return DeviceFigures::default();
    };
    let idle = r.per_device.iter().find(|d| d.device == device);
    let bound = |host: bool| device_bound(r.bound.as_ref()?, device, host);
    DeviceFigures {
        gpu_bound: bound(false).map(|b| b.kind),
        gpu_idle_ratio: idle.map(|d| d.gpu_idle_ratio),
        verdict: bound(r.verdict == "YES").map(|b| b.sentence()),
    }
}

/// Detect's bound rule over `device`'s work alone in `file`'s bound (host-bound when `host`),
/// over the same window: the file's bound spans its window once per device.
fn device_bound(file: &Bound, device: u32, host: bool) -> Option<Bound> {
    let work = file.per_device.iter().find(|d| d.device == device)?;
    let len = file.window_ns / (file.per_device.len().max(1) as Ns);
    let one = WorkSummary {
        devices: vec![work.clone()],
    };
    Some(classify(host, &one, len))
}
