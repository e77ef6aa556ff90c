//! The verdict view from a kernel table streamed once instead of loaded (the page's
//! memory must not grow with the file). The analysis worker loads the host side in steps
//! ([`crate::trace::StagedLoad`]); after NVTX it hands a [`KernelPlan`] to a second worker whose
//! [`KernelPass`] reads the kernel table in `rowid` chunks ([`crate::trace::KernelRows`]) into
//! the one-pass analyses ([`consumers`]); their small [`KernelResults`] come back and join the
//! host side as a [`Streamed`] trace.

pub mod consumers;
pub mod feed;
pub mod loader;
pub mod packed;
pub mod pass;
pub mod plan;
pub mod source;

pub use consumers::{KernelResults, PROFILES};
pub use loader::{Action, LoaderMachine, Message, Schedule};
pub use pass::{KernelPass, TailReader};
pub use plan::{HostPlans, KernelPlan};

pub use source::{FileReads, SqliteKernels};

use crate::detect;
use crate::detect::sweep::KernelSummary;
use crate::detect::{DetectConfig, DetectReport};
use crate::drill::gaps::GapHistogram;
use crate::error::{Error, Result};
use crate::model::rows::EventRows;
use crate::model::{ProcessIdx, Trace};
use crate::profile::Profile;
use crate::timeline::Timeline;

/// A trace whose kernel table was streamed: the host side loaded, the kernels summarised.
pub struct Streamed {
    /// Everything but the kernel table (`kernels` stays empty).
    pub host: Trace,
    /// One summary per entry of [`PROFILES`].
    detect: Vec<KernelSummary>,
    /// The host's detect plan per entry of [`PROFILES`], built once.
    plans: HostPlans,
    pub timeline: Timeline,
    /// The kernel table's gap histogram (not the GPU-idle one when `other_gpu_work`).
    pub gaps: GapHistogram,
    /// The export holds copies, memsets or graph replays, which the kernel pass did not read.
    pub other_gpu_work: bool,
    /// The kernel table is not in start order: the pass stopped at the first kernel out of
    /// order, and every view is measured over the file's rows.
    pub unordered: bool,
}

impl Streamed {
    /// Joins the kernel pass's results to the host side loaded by the other worker (with the
    /// plans the pass's plan came from): the processes the pass met are numbered as the host
    /// side numbers them.
    pub fn attach(mut host: Trace, plans: HostPlans, results: KernelResults) -> Result<Streamed> {
        let map: Vec<ProcessIdx> = results
            .processes
            .iter()
            .map(|&gpid| host.processes.intern(gpid))
            .collect();
        let remap = |p: ProcessIdx| map.get(p as usize).copied().unwrap_or(p);
        let mut detect = results.detect;
        for summary in &mut detect {
            summary.remap_processes(remap);
        }
        if detect.len() != PROFILES.len() {
            return Err(Error::Internal {
                detail: format!("the kernel pass sent {} detect summaries", detect.len()),
            });
        }
        host.present.kernels = results.present;
        host.coverage.extend(results.coverage);
        let mut plans = plans.for_trace(&host)?;
        let timeline = results.timeline.with_step_lane(plans.take_step_lane());
        Ok(Streamed {
            host,
            detect,
            plans,
            timeline,
            gaps: results.gaps,
            other_gpu_work: results.other_gpu_work,
            unordered: results.unordered,
        })
    }

    /// The verdict under `cfg` (its profile picks the summary; thresholds apply here).
    pub fn detect(&self, cfg: &DetectConfig) -> Result<DetectReport> {
        if self.needs_rows(cfg.profile) {
            return Err(Error::Usage(NEEDS_ROWS.into()));
        }
        let i = PROFILES.iter().position(|&p| p == cfg.profile);
        let (Some(summary), Some(plan)) = (
            i.and_then(|i| self.detect.get(i)),
            self.plans.get(cfg.profile),
        ) else {
            return Err(Error::Internal {
                detail: "no kernel summary for this profile".into(),
            });
        };
        if cfg.step_marker.is_some() || cfg.window.is_some() {
            if self.plans.swept() {
                return Err(Error::Usage(
                    "a custom step marker or window needs the trace loaded whole: the streamed \
                     open measured the default windows"
                        .into(),
                ));
            }
            // The pass swept the default windows; other ones need the plan rebuilt (and are
            // refused by the summary check when they differ).
            return detect::detect_with_kernels(&self.host, summary, cfg);
        }
        detect::detect_with_host_facts(&self.host, plan, summary, cfg)
    }
}

impl Streamed {
    /// Whether the kernel pass's summaries cannot answer under `profile`, so the verdict, the
    /// timeline and the gap histogram are measured over the file's rows: its kernels came out of
    /// start order, or the profile counts the copies, memsets or graph replays it did not read.
    pub fn needs_rows(&self, profile: Profile) -> bool {
        self.unordered || (self.other_gpu_work && profile.switches().gpu_work)
    }

    /// Whether the timeline and the gap histogram are measured over the file's rows (under
    /// every profile: they count every GPU operation).
    pub fn views_need_rows(&self) -> bool {
        self.unordered || self.other_gpu_work
    }

    /// The timeline of every GPU operation over `rows` (the file's rows, `trace::FileRows`),
    /// with the kernel pass's step lane: the pass read the kernel table alone, so an export
    /// holding copies, memsets or graph replays ([`Streamed::other_gpu_work`]) has its timeline
    /// built again, as its verdict and gap histogram are measured, over every table.
    pub fn work_timeline(&self, rows: &dyn EventRows, label: &str) -> Result<Timeline> {
        let steps = self.timeline.step_lane().cloned();
        Ok(Timeline::of_rows(rows, label)?.with_step_lane(steps))
    }
}

/// Why the streamed verdict is refused ([`Streamed::needs_rows`]): the caller measures it over
/// the file's rows (`detect::detect_rows`).
pub const NEEDS_ROWS: &str = "the streamed pass cannot answer for this export (its kernels are out of start order, or its copies, memsets or graph replays are GPU work): measure the verdict over the file's rows";

/// Where encoded bytes go: told their length, then given them in pieces.
pub trait ByteSink {
    fn begin(&mut self, len: usize);
    fn write(&mut self, bytes: &[u8]);
}

/// Bytes gathered in a buffer of their exact size: a plan or results of tens of MB would
/// otherwise be copied each time the buffer doubles, and the page's wasm memory keeps its
/// high-water mark.
impl ByteSink for Vec<u8> {
    fn begin(&mut self, len: usize) {
        self.reserve_exact(len);
    }

    fn write(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Bytes per piece handed to a [`ByteSink`].
const PIECE: usize = 1 << 16;

/// Buffers bytes into pieces for a [`ByteSink`].
struct Pieces<'s> {
    buf: Vec<u8>,
    sink: &'s mut dyn ByteSink,
}

impl Extend<u8> for Pieces<'_> {
    fn extend<I: IntoIterator<Item = u8>>(&mut self, bytes: I) {
        for b in bytes {
            self.buf.push(b);
            if self.buf.len() == PIECE {
                self.sink.write(&self.buf);
                self.buf.clear();
            }
        }
    }
}

/// Postcard bytes of `value` into `sink`: none if it cannot be encoded, which decoding then
/// reports.
fn encode_to<T: serde::Serialize>(value: &T, sink: &mut dyn ByteSink) {
    let Ok(len) = postcard::experimental::serialized_size(value) else {
        sink.begin(0);
        return;
    };
    sink.begin(len);
    let pieces = Pieces {
        buf: Vec::with_capacity(PIECE.min(len)),
        sink,
    };
    if let Ok(rest) = postcard::to_extend(value, pieces) {
        rest.sink.write(&rest.buf);
    }
}

/// [`encode_to`] a buffer.
fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_to(value, &mut bytes);
    bytes
}

/// The configuration the kernel pass sweeps under for `profile`.
pub fn profile_config(profile: Profile, label: &str) -> DetectConfig {
    DetectConfig {
        profile,
        file_label: label.to_string(),
        ..DetectConfig::default()
    }
}
