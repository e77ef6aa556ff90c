//! Times and the ids that tie the tables together: names, processes, threads.

/// A timestamp or duration in nanoseconds, as nsys stores them.
pub type Ns = i64;

/// Index into [`super::Strings`]; `NO_NAME` marks a missing/NULL name.
pub type NameId = u32;
pub const NO_NAME: NameId = u32::MAX;

/// Index into [`super::Processes`].
pub type ProcessIdx = u32;
/// Index into [`super::Threads`].
pub type ThreadIdx = u32;

/// Upper 40 bits of a `globalTid` identify the process (`globalPid`).
pub const GLOBAL_PID_MASK: i64 = 0xFFFF_FFFF_FF00_0000_u64 as i64;

/// OS process id packed in a `globalTid`/`globalPid`: bits 24..48.
pub fn os_pid(global_id: i64) -> u32 {
    ((global_id >> 24) & 0xFF_FFFF) as u32
}

/// OS thread id packed in a `globalTid`: bits 0..24.
pub fn os_tid(global_tid: i64) -> u32 {
    (global_tid & 0xFF_FFFF) as u32
}
