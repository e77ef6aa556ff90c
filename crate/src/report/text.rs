//! Text report of a detection result.
