//! The phase windows and host-prep ranges, fed to the kernel pass as the analysis worker reads
//! the NVTX ranges, instead of sent whole in its plan: a long trace has a window piece per
//! forward step and a host-prep range per step and rank, and the pass's sweeps need them only
//! around the kernels they are at ([`crate::detect::KernelSweep::fed`]).
//!
//! The analysis worker writes a [`FeedChunk`] every [`CHUNK_ROWS`] NVTX ranges
//! ([`FeedWriter`]); the page keeps the chunks outside wasm memory and hands the pass the next
//! one when its sweeps wait for it ([`super::KernelPass::needs_feed`]).

use serde::{Deserialize, Serialize};

use crate::detect::sweep::FedSweep;
use crate::error::{Error, Result};
use crate::model::Ns;
use crate::steps::{Step, StepSink, phase_of};

/// NVTX ranges read per chunk.
pub const CHUNK_ROWS: u64 = 1 << 15;

/// What one profile's sweep is fed in a chunk: starts as differences from the previous item's
/// start in the same list (a few varint bytes each).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileFeed {
    /// `(phase, start step, duration)` of each forward step with a phase.
    steps: Vec<(u8, Ns, Ns)>,
    /// `(slot, pattern, start step, duration)` of each host-prep range.
    prep: Vec<(u32, u8, Ns, Ns)>,
    /// Ranges starting before this were all fed.
    until: Ns,
    #[serde(skip)]
    last: (Ns, Ns),
}

/// One chunk for every profile of the pass, in the order of [`super::PROFILES`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedChunk {
    profiles: Vec<ProfileFeed>,
    /// The last chunk: every range was fed.
    done: bool,
}

/// Writes the chunks while the NVTX ranges stream.
pub struct FeedWriter<'f> {
    profiles: Vec<ProfileFeed>,
    rows: u64,
    /// NVTX ranges per chunk ([`CHUNK_ROWS`] in the page).
    chunk_rows: u64,
    out: &'f mut dyn FnMut(Vec<u8>),
}

impl<'f> FeedWriter<'f> {
    /// A writer for `profiles` sweeps, handing the bytes of each chunk of `chunk_rows` NVTX
    /// ranges to `out`.
    pub fn new(
        profiles: usize,
        chunk_rows: u64,
        out: &'f mut dyn FnMut(Vec<u8>),
    ) -> FeedWriter<'f> {
        FeedWriter {
            profiles: vec![ProfileFeed::default(); profiles],
            rows: 0,
            chunk_rows: chunk_rows.max(1),
            out,
        }
    }

    /// The feed of profile `i`, for steps and host-prep ranges.
    pub fn profile(&mut self, i: usize) -> Option<&mut ProfileFeed> {
        self.profiles.get_mut(i)
    }

    /// One more NVTX range read: a chunk goes out every [`CHUNK_ROWS`].
    pub fn row_done(&mut self) {
        self.rows += 1;
        if self.rows.is_multiple_of(self.chunk_rows) {
            self.flush(false);
        }
    }

    /// The last chunk.
    pub fn finish(mut self) {
        self.flush(true);
    }

    fn flush(&mut self, done: bool) {
        let profiles = self
            .profiles
            .iter_mut()
            .map(|p| ProfileFeed {
                until: p.until,
                ..std::mem::take(p)
            })
            .collect();
        (self.out)(super::encode(&FeedChunk { profiles, done }));
    }
}

impl ProfileFeed {
    /// A host-prep range of `pattern` of process `slot`.
    pub fn prep(&mut self, slot: usize, pattern: usize, (s, e): (Ns, Ns)) {
        let from = std::mem::replace(&mut self.last.1, s);
        self.prep.push((
            u32::try_from(slot).unwrap_or(u32::MAX),
            pattern as u8,
            s.wrapping_sub(from),
            e.wrapping_sub(s),
        ));
    }

    /// Ranges starting before `t` were all fed.
    pub fn until(&mut self, t: Ns) {
        self.until = self.until.max(t);
    }
}

/// Forward steps go into the feed (with their phase; those without one are left out).
impl StepSink for ProfileFeed {
    fn step(&mut self, s: &Step) {
        if let Some(phase) = phase_of(s) {
            let from = std::mem::replace(&mut self.last.0, s.start);
            self.steps.push((
                phase as u8,
                s.start.wrapping_sub(from),
                s.end.wrapping_sub(s.start),
            ));
        }
    }

    /// The steps are read again from the start: the plan then goes whole, without a feed.
    fn restart(&mut self) {}
}

impl FeedChunk {
    pub fn from_bytes(bytes: &[u8]) -> Result<FeedChunk> {
        postcard::from_bytes(bytes).map_err(|e| Error::Internal {
            detail: format!("the windows fed to the kernel pass did not decode: {e}"),
        })
    }

    /// Whether this is the last chunk.
    pub fn is_last(&self) -> bool {
        self.done
    }

    /// Feeds the chunk to the sweeps (one per profile, in order); `true` if it was the last.
    pub fn apply<S: FedSweep>(&self, sweeps: &mut [S]) -> Result<bool> {
        if self.profiles.len() != sweeps.len() {
            return Err(Error::Internal {
                detail: format!(
                    "a feed for {} sweeps, not {}",
                    self.profiles.len(),
                    sweeps.len()
                ),
            });
        }
        let unordered = || Error::Internal {
            detail: "the windows fed to the kernel pass came out of start order".into(),
        };
        for (feed, sweep) in self.profiles.iter().zip(sweeps) {
            let mut start: Ns = 0;
            for &(phase, step, len) in &feed.steps {
                start = start.wrapping_add(step);
                sweep
                    .feed_phase(usize::from(phase), start, start.wrapping_add(len))
                    .map_err(|_| unordered())?;
            }
            let mut start: Ns = 0;
            for &(slot, pattern, step, len) in &feed.prep {
                start = start.wrapping_add(step);
                let range = (start, start.wrapping_add(len));
                sweep
                    .feed_prep(slot as usize, usize::from(pattern), range)
                    .map_err(|_| unordered())?;
            }
            sweep.feed_until(feed.until);
            if self.done {
                sweep.feed_done();
            }
        }
        Ok(self.done)
    }
}
