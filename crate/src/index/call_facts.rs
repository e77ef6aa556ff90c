//! What the runtime calls can show, folded over them as they are read: whether any call can be
//! joined to the work it issued, and whether every call launches kernels. Shared by
//! the drill-down's index ([`super::rows::RowIndex`]) and the explainer's fold over rows.

use crate::model::{CoverageNote, ProcessIdx};
use crate::names::api::ApiKind;

/// The calls' coverage facts, one call at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFacts {
    calls: u64,
    correlated: bool,
    launches_only: bool,
}

impl Default for CallFacts {
    fn default() -> CallFacts {
        CallFacts {
            calls: 0,
            correlated: false,
            launches_only: true,
        }
    }
}

impl CallFacts {
    /// A call of kind `kind` with `correlation` (0: none or not loaded), made by `process`
    /// (`None`: its thread is not in the thread table).
    pub fn add(&mut self, kind: ApiKind, correlation: u32, process: Option<ProcessIdx>) {
        self.calls += 1;
        self.correlated |= correlation != 0 && process.is_some();
        self.launches_only &= kind.launches_kernels();
    }

    /// What the calls cannot show, when the trace has a runtime table (`runtime`) and its
    /// correlation ids were loaded (`correlations`); see [`coverage_note`].
    pub fn coverage(&self, runtime: bool, correlations: bool) -> Option<CoverageNote> {
        coverage_note(
            runtime,
            correlations && self.correlated,
            self.calls > 0 && self.launches_only,
        )
    }
}

/// What the loaded runtime calls cannot show (the report lists the explainer's and the
/// drill-down's notes together): the correlation ids were not loaded (`joinable` false), or
/// every call launches kernels (`launches_only`). A missing runtime table (`runtime` false) is
/// the loader's note.
pub fn coverage_note(runtime: bool, joinable: bool, launches_only: bool) -> Option<CoverageNote> {
    let note = |subject: &str, reason: &str| CoverageNote {
        subject: subject.into(),
        reason: reason.into(),
    };
    if !runtime {
        None
    } else if !joinable {
        Some(note(
            "launch latency, NVTX GPU time, memory, gaps, graphs",
            "runtime correlation ids not loaded: kernels and copies cannot be joined to their API calls",
        ))
    } else if launches_only {
        Some(note(
            "syncs, allocations, memory, gaps",
            "the runtime calls (as recorded or loaded) are kernel launches only: no sync, allocation or copy API call to report or to list in gaps",
        ))
    } else {
        None
    }
}
