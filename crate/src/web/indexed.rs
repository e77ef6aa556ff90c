//! A loaded trace together with its timeline index, built once on first use.
//!
//! Why: `Timeline::new` groups and sorts every kernel (about 0.7 s for 5 M kernels in wasm), and
//! the page asks for a view on every zoom and a hit on every pointer move, so the index must
//! outlive one call.

use std::cell::OnceCell;

use crate::model::Trace;
use crate::timeline::Timeline;

pub(crate) struct Indexed {
    trace: Trace,
    timeline: OnceCell<Timeline>,
}

impl Indexed {
    pub(crate) fn new(trace: Trace) -> Indexed {
        Indexed {
            trace,
            timeline: OnceCell::new(),
        }
    }

    pub(crate) fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The timeline index, built on the first call.
    pub(crate) fn timeline(&self) -> &Timeline {
        self.timeline.get_or_init(|| Timeline::new(&self.trace))
    }
}
