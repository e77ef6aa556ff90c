//! Passes that end: at the first error, or past the rows the scan counted; and the heartbeat
//! the page's watchdog listens to while they run.

use crate::error::{Error, Result};
use crate::model::rows::ErrorLatch;

/// Ends at the first error, keeping it in the latch; a pass that would hand out more rows than
/// the scan counted in its table ends with an error too, so no pass runs for ever whatever the
/// file holds. Every [`HEARTBEAT_ROWS`] rows it beats the [`heartbeat`] (the page's watchdog).
pub(super) struct Latched<'e, I> {
    pub(super) rows: I,
    pub(super) errors: &'e ErrorLatch,
    pub(super) failed: bool,
    /// Rows the pass may still hand out: the table's rows as the scan counted them.
    pub(super) left: u64,
    pub(super) table: &'static str,
    pub(super) path: &'e str,
}

impl<T, I: Iterator<Item = Result<T>>> Iterator for Latched<'_, I> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.failed {
            return None;
        }
        let next = self.rows.next()?;
        let next = match self.left.checked_sub(1) {
            Some(left) => {
                self.left = left;
                beat();
                next
            }
            None => Err(Error::Corrupt {
                path: self.path.into(),
                detail: format!(
                    "reading {} again gave more rows than its scan counted",
                    self.table
                ),
            }),
        };
        match next {
            Ok(row) => Some(row),
            Err(e) => {
                self.errors.set(e);
                self.failed = true;
                None
            }
        }
    }
}

/// Rows handed out by passes between two beats of the [`heartbeat`].
pub const HEARTBEAT_ROWS: u64 = 1 << 16;

/// Rows handed out by passes on this thread, and the heartbeat, if one is set.
type Beats = (u64, Option<fn(u64)>);

thread_local! {
    static BEATS: std::cell::Cell<Beats> = const { std::cell::Cell::new((0, None)) };
}

/// Sets `beat` to be called with the rows handed out so far on this thread every
/// [`HEARTBEAT_ROWS`] rows any pass hands out: the page's worker tells the page it is alive
/// while a view folds (a synchronous call, during which it can send but not receive).
pub fn heartbeat(beat: fn(u64)) {
    BEATS.with(|b| b.set((b.get().0, Some(beat))));
}

/// Rows handed out by passes on this thread so far (what the [`heartbeat`] counts): a view's
/// progress is the difference over it.
pub fn rows_handed_out() -> u64 {
    BEATS.with(|b| b.get().0)
}

fn beat() {
    BEATS.with(|b| {
        let (rows, f) = b.get();
        let rows = rows.wrapping_add(1);
        b.set((rows, f));
        if rows.is_multiple_of(HEARTBEAT_ROWS)
            && let Some(f) = f
        {
            f(rows);
        }
    });
}
