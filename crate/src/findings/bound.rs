//! The finding of a run bound by its transfers: the copies named by direction, count, bytes,
//! bandwidth and stream, whether compute hid them, and the fixes.

use super::{Finding, Severity, finding};
use crate::detect::bound::{Bound, BoundKind, CopySummary};
use crate::format;

/// Copies from pageable memory at or above this share of a direction's copies get the pinned-memory
/// fix first.
const PAGEABLE_SHARE: f64 = 0.5;

/// From this share of idle device time, a run is not said to be bound by its copies.
const MOSTLY_IDLE: f64 = 0.5;

/// A transfer-bound run's finding (`None` for any other bound).
pub fn transfer_finding(b: &Bound) -> Option<Finding> {
    // A GPU idle most of the window is held by the host, not by its copies (the drill-down
    // classifies without the verdict, so this is said here).
    if b.kind != BoundKind::Transfer || b.window_ns <= 0 || b.shares.idle >= MOSTLY_IDLE {
        return None;
    }
    let share = b.transfer_ns as f64 / b.window_ns as f64;
    let copies: Vec<String> = b.copies.iter().take(3).map(copy_phrase).collect();
    let hidden = b.transfer_hidden_ns + b.transfer_ns;
    let hidden_share = match hidden {
        0 => 0.0,
        all => b.transfer_hidden_ns as f64 / all as f64,
    };
    let memsets = match b.memsets {
        0 => String::new(),
        n => format!("; {}", format::counted(n, "memset", "memsets")),
    };
    let evidence = format!(
        "copies and memsets run alone on the GPU for {} of the window's device time ({} of {}), compute {}, idle {}: {}{}; compute hid {} of the transfer time",
        format::percent(share),
        format::duration_ns(b.transfer_ns),
        format::duration_ns(b.window_ns),
        format::percent(b.shares.compute),
        format::percent(b.shares.idle),
        copies.join("; "),
        memsets,
        format::percent(hidden_share),
    );
    let pageable = b
        .copies
        .iter()
        .any(|c| c.count > 0 && c.pageable as f64 / c.count as f64 >= PAGEABLE_SHARE);
    let mut fix = String::new();
    if pageable {
        fix.push_str("Copy from pinned host memory (cudaHostAlloc, tensor.pin_memory()): pageable copies are staged by the driver and cannot overlap. ");
    }
    fix.push_str("Keep the data resident on the GPU (weights loaded once, not per step) or prefetch it; run the copies on a separate stream so they overlap compute (cudaMemcpyAsync on a copy stream, events between the streams); batch small copies into fewer, larger ones.");
    Some(finding(
        Severity::of_share(share),
        "transfers",
        format!(
            "The run is transfer-bound: copies hold {} of the GPU's time",
            format::percent(share)
        ),
        evidence,
        None,
        &fix,
        b.transfer_ns as f64 / 1e3,
    ))
}

fn copy_phrase(c: &CopySummary) -> String {
    let streams = match c.streams.as_slice() {
        [] => String::new(),
        [s] => format!(" on stream {s}"),
        many => format!(
            " on streams {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let bandwidth = c
        .gb_per_s
        .map(|g| format!(" at {g:.1} GB/s"))
        .unwrap_or_default();
    let pageable = match c.pageable {
        0 => "pinned or device memory".to_string(),
        n if n == c.count => "pageable host memory".to_string(),
        n => format!("{n} from pageable host memory"),
    };
    format!(
        "{} {} ({}) moving {} in {}{}{}",
        format::count(c.count),
        c.direction,
        pageable,
        format::bytes(c.bytes),
        format::duration_ns(c.ns),
        bandwidth,
        streams
    )
}
