//! A loaded trace together with its timeline index, built once on first use.
//!
//! Why: `Timeline::new` passes over every kernel once to build its summary, and the page asks
//! for a view on every zoom and a hit on every pointer move, so the summary must outlive one
//! call.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use crate::model::Trace;
use crate::timeline::Timeline;

pub(crate) struct Indexed {
    trace: Trace,
    /// The file's name, as results label the trace.
    label: String,
    timeline: OnceCell<Timeline>,
}

impl Indexed {
    pub(crate) fn new(trace: Trace, label: &str) -> Indexed {
        Indexed {
            trace,
            label: label.to_string(),
            timeline: OnceCell::new(),
        }
    }

    pub(crate) fn trace(&self) -> &Trace {
        &self.trace
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The timeline index, built on the first call.
    pub(crate) fn timeline(&self) -> &Timeline {
        self.timeline.get_or_init(|| Timeline::new(&self.trace))
    }
}

thread_local! {
    /// Every open trace of this worker by id, so one call can read several (a baseline and a
    /// target, the rank files of one run). Weak: the `Analysis` owning a trace decides its life.
    static OPEN: RefCell<(u32, HashMap<u32, Weak<Indexed>>)> = RefCell::new((0, HashMap::new()));
}

/// Registers `trace` and returns its id.
pub(crate) fn register(trace: &Rc<Indexed>) -> u32 {
    OPEN.with_borrow_mut(|(next, open)| {
        *next += 1;
        open.retain(|_, w| w.strong_count() > 0);
        open.insert(*next, Rc::downgrade(trace));
        *next
    })
}

/// The open trace with this id, if it is still open.
pub(crate) fn lookup(id: u32) -> Option<Rc<Indexed>> {
    OPEN.with_borrow(|(_, open)| open.get(&id).and_then(Weak::upgrade))
}
