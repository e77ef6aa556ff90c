//! Synthetic nsys exports with known answers (SPEC §7).
