//! What the capture checks read of the host side beyond the verdict's tables: the warm-up
//! activity (module loading, run-time compilation, slow launches) and whether the Python GC and
//! GIL markers were recorded. Read by `trace::capture` with two filtered `SELECT`s, so the
//! page's bounded open holds it as the CLI does.

use super::Ns;

/// What a warm-up span was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WarmupKind {
    /// `cuModuleLoad*`, `cuLibraryLoad*` and the lazy-loading lookups (`names::api`).
    ModuleLoad,
    /// NVRTC, `cuLink*`, nvJitLink calls, or an NVTX range naming a compile or autotuning.
    Jit,
    /// A kernel-launch call of [`SLOW_LAUNCH_NS`] or more: a first launch loading its module.
    SlowLaunch,
}

/// A launch call at least this long is counted as warm-up (lazy loading of its module on first
/// launch takes milliseconds; a steady launch call takes microseconds, and one slowed by a busy
/// host rarely reaches this).
pub const SLOW_LAUNCH_NS: Ns = 5_000_000;

/// At most this many warm-up spans are held; more are counted, not kept.
pub const MAX_WARMUP_SPANS: usize = 1 << 16;

/// One warm-up span on any thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmupSpan {
    pub start: Ns,
    pub end: Ns,
    pub kind: WarmupKind,
    /// The API's base name or the NVTX range's label.
    pub label: String,
}

/// The capture facts the loader read (empty when the tables are absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptureMarks {
    /// Warm-up spans in start order (at most [`MAX_WARMUP_SPANS`]).
    pub warmup: Vec<WarmupSpan>,
    /// Warm-up spans beyond [`MAX_WARMUP_SPANS`], not kept.
    pub warmup_dropped: u64,
    /// Whether the warm-up spans were read (a runtime or NVTX table exists).
    pub read: bool,
    /// `Python GC` NVTX ranges (`TLLM_PROFILE_RECORD_GC=1`).
    pub gc_ranges: u64,
    /// `Waiting for GIL` / `Holding GIL` NVTX ranges (`-t …,python-gil`).
    pub gil_ranges: u64,
    /// Rows of `GPU_METRICS` (`--gpu-metrics-devices`), when the table exists.
    pub gpu_metrics: Option<u64>,
}
