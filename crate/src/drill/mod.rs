//! Kernel-level drill-down (SPEC §4). For now: the GPU-idle gap histogram.

pub mod gaps;
