//! The loader worker's side of the streamed open as one state machine: the page forwards the
//! analysis worker's messages ([`Message`]) and does what the machine answers ([`Action`]).
//!
//! The schedule lives here, not in JavaScript: read the kernel table ahead of the plan into a
//! bounded buffer; take the plan; take the chunks of windows only when the sweeps wait for them
//! (they stay outside wasm memory until then); answer the analysis worker's offer with a share of
//! the rows left ([`TAIL_SHARE`]); after this pass's own rows, take the rows it read; finish.
//! Every order of messages leads to the same results (a test drives it with several).

use rusqlite::Connection;

use super::pass::{KernelPass, MIN_TAIL_ROWS};
use super::plan::KernelPlan;
use crate::error::Result;

/// Rows read per [`Action::Continue`]: between two, the worker takes its messages.
pub const CHUNK_ROWS: u32 = 1 << 16;

/// The share of the rows left that the analysis worker reads once its host side is loaded: it
/// reads about as fast as the loader, and the analyses stay here.
pub const TAIL_SHARE: f64 = 0.62;

/// What the page hands the machine: a message of the analysis worker, or nothing new.
#[derive(Debug, Clone, Copy)]
pub enum Message<'a> {
    /// Nothing arrived: go on.
    Continue,
    /// The plan ([`KernelPlan`] bytes).
    Plan(&'a [u8]),
    /// The next chunk of windows, in order.
    Feed(&'a [u8]),
    /// The analysis worker offers to read part of the kernel table.
    Offer,
    /// The next chunk of the rows it reads for this pass, in order.
    Tail(&'a [u8]),
}

/// What the page must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// More to read: call again after letting messages in (a plan or an offer goes first).
    Continue,
    /// Wait for the plan and hand it in.
    NeedPlan,
    /// Wait for the next chunk of windows and hand it in.
    NeedFeed,
    /// Wait for the analysis worker's offer (the page's test hook only).
    NeedOffer,
    /// Wait for the next chunk of the rows the analysis worker reads.
    NeedTail,
    /// Tell the analysis worker which rows to read (`None`: none).
    Answer(Option<(i64, i64)>),
    /// The results, for the analysis worker's `attach`.
    Done(Vec<u8>),
}

/// How the loader shares its work: the page's [`Schedule::page`], or smaller steps in tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Rows read per [`Action::Continue`].
    pub chunk_rows: u32,
    /// Share of the rows left given to the analysis worker at its offer.
    pub tail_share: f64,
    /// Fewer rows than this are not worth giving away.
    pub min_tail_rows: i64,
    /// Test hook: read nothing before the plan, then wait for the offer, so that the analysis
    /// worker always reads part of the table.
    pub wait_for_offer: bool,
}

impl Schedule {
    pub fn page(wait_for_offer: bool) -> Schedule {
        Schedule {
            chunk_rows: CHUNK_ROWS,
            tail_share: TAIL_SHARE,
            min_tail_rows: MIN_TAIL_ROWS,
            wait_for_offer,
        }
    }
}

/// The loader's pass and where its exchange with the analysis worker stands.
pub struct LoaderMachine {
    pass: Option<KernelPass>,
    schedule: Schedule,
    offered: bool,
    answered: bool,
    read_all: bool,
}

impl LoaderMachine {
    pub fn new(pass: KernelPass, schedule: Schedule) -> LoaderMachine {
        LoaderMachine {
            pass: Some(pass),
            schedule,
            offered: false,
            answered: false,
            read_all: false,
        }
    }

    /// The pass, while it runs (progress, held spans).
    pub fn pass(&self) -> Option<&KernelPass> {
        self.pass.as_ref()
    }

    /// Takes `message`, then reads or says what it waits for.
    pub fn next(&mut self, conn: &Connection, message: Message<'_>) -> Result<Action> {
        let pass = self.pass_mut()?;
        match message {
            Message::Continue => {}
            Message::Plan(bytes) => pass.set_plan(KernelPlan::from_bytes(bytes)?)?,
            Message::Feed(bytes) => pass.feed(bytes)?,
            Message::Tail(bytes) => pass.push_tail(bytes)?,
            Message::Offer => self.offered = true,
        }
        self.decide(conn)
    }

    fn decide(&mut self, conn: &Connection) -> Result<Action> {
        let (offered, answered, read_all) = (self.offered, self.answered, self.read_all);
        let s = self.schedule;
        let pass = self.pass_mut()?;
        if !pass.has_plan() {
            if read_all || s.wait_for_offer || pass.buffer_full() {
                return Ok(Action::NeedPlan);
            }
        } else if offered && !answered {
            let range = match read_all {
                true => None,
                false => pass.split_tail(s.tail_share, s.min_tail_rows),
            };
            self.answered = true;
            return Ok(Action::Answer(range));
        } else if s.wait_for_offer && !offered {
            return Ok(Action::NeedOffer);
        } else if pass.needs_feed() {
            return Ok(Action::NeedFeed);
        }
        if !read_all {
            self.read_all = !pass.step(conn, s.chunk_rows)?;
            return Ok(Action::Continue);
        }
        if pass.tail_pending() {
            return Ok(Action::NeedTail);
        }
        let pass = self.pass.take().ok_or_else(ended)?;
        Ok(Action::Done(pass.finish()?.to_bytes()))
    }

    fn pass_mut(&mut self) -> Result<&mut KernelPass> {
        self.pass.as_mut().ok_or_else(ended)
    }
}

fn ended() -> crate::error::Error {
    crate::error::Error::Internal {
        detail: "the kernel pass was called again after it finished".into(),
    }
}
