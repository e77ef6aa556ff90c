//! The kernel-launch API calls in start order, read twice and never held (the page's M2).
//!
//! Why: the page's analysis worker must not hold millions of launch calls. nsys writes the
//! runtime table in a few runs sorted by start (CUPTI buffers flushed in turn: the public
//! `mfu_2gpu_before` export has five, one going back 290 ms), so a scan of `start` alone finds
//! the runs — interning threads in table order on the way, as a whole load does, so process and
//! thread ids agree — and a k-way merge of the runs yields the calls in start order. A table in
//! too many runs is reported, and the caller loads the calls instead.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rusqlite::Connection;

use super::capture::WarmupCalls;
use super::load::RUNTIME_TABLE;
use super::open::sqlite_error;
use super::schema::Schema;
use super::tables::{id_list, int, is_any_launch_api, launch_filter, opt_int};
use crate::error::Result;
use crate::model::{NO_NAME, NameId, Ns, ProcessIdx, Processes, Strings, Threads};

/// More sorted runs than this (a table shuffled row by row) and the calls are loaded instead.
pub const MAX_RUNS: usize = 1 << 20;
/// Calls read per refill of one run's buffer (one `rowid` seek each).
const REFILL: i64 = 512;

/// One kernel-launch API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchCall {
    pub start: Ns,
    pub end: Ns,
    pub process: ProcessIdx,
    pub name: NameId,
}

/// Where swept launch calls go ([`super::StagedLoad::sweep_launches`]).
pub trait LaunchSink {
    fn push(&mut self, call: LaunchCall);
    /// Forgets every call pushed so far: they come again, in start order (the table turned out
    /// not to be sorted).
    fn restart(&mut self);
}

/// What the scan found.
#[derive(Debug)]
pub enum LaunchScan {
    /// The export has no runtime table.
    Absent,
    /// Load the calls instead: more than [`MAX_RUNS`] sorted runs, or no `nameId`, `start`,
    /// `end` or `globalTid` column to sweep them by.
    Load,
    Runs(LaunchRuns),
}

/// The columns both reads select, in this order (`rowid` last).
const CALL_COLUMNS: &str = "start, \"end\", globalTid, nameId, rowid";

/// A launch row's `(start, end, globalTid, nameId, rowid)`, selected as [`CALL_COLUMNS`].
fn call_values(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Ns, Ns, i64, Option<i64>, i64)> {
    Ok((
        int(r.get_ref(0)?, 0),
        int(r.get_ref(1)?, 0),
        int(r.get_ref(2)?, 0),
        opt_int(r.get_ref(3)?),
        int(r.get_ref(4)?, 0),
    ))
}

/// A sorted run: inclusive `rowid` range and its first call's start.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: i64,
    last: i64,
    first_start: Ns,
}

/// Feeds the launch calls to `each` in table order while their starts do not decrease, interning
/// their threads as met (as loading them would): one pass when the table is sorted, the common
/// case. `Ok(None)` at the first call starting before its predecessor (the calls fed so far must
/// then be dropped: [`LaunchRuns::scan`] and [`LaunchRuns::for_each`] give them in order);
/// otherwise the number of calls.
pub fn for_each_if_sorted(
    conn: &Connection,
    path: &str,
    strings: &Strings,
    (threads, processes): (&mut Threads, &mut Processes),
    mut warmup: Option<&mut WarmupCalls>,
    mut each: impl FnMut(LaunchCall) -> Result<()>,
) -> Result<Option<u64>> {
    let fail = |e: rusqlite::Error| sqlite_error(path, RUNTIME_TABLE, &e);
    // With `warmup`, its calls are read too (for the capture checks), the launch calls told
    // apart by name.
    let launches = warmup.as_ref().map(|_| strings.classify(is_any_launch_api));
    let filter = match (&warmup, &launches) {
        (Some(w), Some(l)) => format!("nameId IN ({})", id_list(&w.sqlite_ids_or(strings, l))),
        _ => launch_filter(strings),
    };
    let sql = format!("SELECT {CALL_COLUMNS} FROM {RUNTIME_TABLE} WHERE {filter}");
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let (mut last_start, mut last_tid, mut process, mut calls) = (Ns::MIN, i64::MIN, 0, 0u64);
    while let Some(r) = rows.next().map_err(fail)? {
        let (start, end, gtid, name, _) = call_values(r).map_err(fail)?;
        let name = name.map_or(NO_NAME, |id| strings.resolve(id));
        if let Some(w) = warmup.as_deref_mut() {
            w.observe(strings, start, end, name);
        }
        if launches.as_ref().is_some_and(|l| !l.get(name)) {
            continue;
        }
        if start < last_start {
            return Ok(None);
        }
        last_start = start;
        if gtid != last_tid {
            last_tid = gtid;
            let t = threads.intern(gtid, processes);
            process = threads.process.get(t as usize).copied().unwrap_or(0);
        }
        each(LaunchCall {
            start,
            end,
            process,
            name,
        })?;
        calls += 1;
    }
    Ok(Some(calls))
}

/// The launch calls' sorted runs, in table order.
#[derive(Debug, Clone)]
pub struct LaunchRuns {
    runs: Vec<Run>,
    filter: String,
    /// Launch calls in the table.
    pub calls: u64,
}

impl LaunchRuns {
    /// Scans the launch calls' `rowid`, `start` and `globalTid` in table order: the sorted runs,
    /// with every launching thread interned into `threads` as a whole load would.
    pub fn scan(
        conn: &Connection,
        schema: &Schema,
        path: &str,
        strings: &Strings,
        threads: &mut Threads,
        processes: &mut Processes,
    ) -> Result<LaunchScan> {
        if !schema.has_table(RUNTIME_TABLE) {
            return Ok(LaunchScan::Absent);
        }
        let has = |c: &str| schema.has_column(RUNTIME_TABLE, c);
        if !(has("start") && has("end") && has("globalTid") && has("nameId")) {
            return Ok(LaunchScan::Load);
        }
        let filter = launch_filter(strings);
        let sql = format!("SELECT rowid, start, globalTid FROM {RUNTIME_TABLE} WHERE {filter}");
        let fail = |e: rusqlite::Error| sqlite_error(path, RUNTIME_TABLE, &e);
        let mut stmt = conn.prepare(&sql).map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut runs: Vec<Run> = Vec::new();
        let (mut last_start, mut last_tid, mut calls) = (Ns::MIN, i64::MIN, 0u64);
        while let Some(r) = rows.next().map_err(fail)? {
            let value = |i: usize| r.get_ref(i).map(|v| int(v, 0)).map_err(fail);
            let (rowid, start, gtid) = (value(0)?, value(1)?, value(2)?);
            if gtid != last_tid {
                last_tid = gtid;
                threads.intern(gtid, processes);
            }
            match runs.last_mut() {
                Some(run) if start >= last_start => run.last = rowid,
                _ => {
                    if runs.len() == MAX_RUNS {
                        return Ok(LaunchScan::Load);
                    }
                    runs.push(Run {
                        first: rowid,
                        last: rowid,
                        first_start: start,
                    });
                }
            }
            last_start = start;
            calls += 1;
        }
        Ok(LaunchScan::Runs(LaunchRuns {
            runs,
            filter,
            calls,
        }))
    }

    /// Sorted runs found by the scan.
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Feeds every launch call to `each` in non-decreasing start (ties in table order). A run is
    /// read only once the merge reaches its first start, through a small buffer refilled by
    /// `rowid`: memory follows the runs live at one instant (about one per launching thread),
    /// not their number. Threads must have been interned by [`LaunchRuns::scan`].
    pub fn for_each(
        &self,
        conn: &Connection,
        path: &str,
        strings: &Strings,
        threads: &Threads,
        mut each: impl FnMut(LaunchCall) -> Result<()>,
    ) -> Result<()> {
        let fail = |e: rusqlite::Error| sqlite_error(path, RUNTIME_TABLE, &e);
        let sql = format!(
            "SELECT {CALL_COLUMNS} FROM {RUNTIME_TABLE} \
             WHERE rowid BETWEEN ?1 AND ?2 AND {} LIMIT {REFILL}",
            self.filter
        );
        let mut stmt = conn.prepare(&sql).map_err(fail)?;
        let process_of = |gtid: i64| {
            threads
                .find(gtid)
                .and_then(|t| threads.process.get(t as usize).copied())
                .unwrap_or(0)
        };
        let mut refill = |cursor: &mut RunCursor| -> Result<()> {
            let mut rows = stmt.query([cursor.next, cursor.last]).map_err(fail)?;
            let mut read = 0;
            while let Some(r) = rows.next().map_err(fail)? {
                let (start, end, gtid, name, rowid) = call_values(r).map_err(fail)?;
                cursor.next = rowid.saturating_add(1);
                cursor.buffer.push_back(LaunchCall {
                    start,
                    end,
                    process: process_of(gtid),
                    name: name.map_or(NO_NAME, |id| strings.resolve(id)),
                });
                read += 1;
            }
            if read < REFILL {
                cursor.next = cursor.last.saturating_add(1);
            }
            Ok(())
        };
        // Runs by first start (table order among equal ones), activated as the merge gets there.
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_by_key(|&i| self.runs[i].first_start);
        let mut pending = order.into_iter().peekable();
        let mut cursors: Vec<Option<RunCursor>> = vec![None; self.runs.len()];
        // The heap orders live runs by their next call's start, then by run (table order).
        let mut heap: BinaryHeap<Reverse<(Ns, usize)>> = BinaryHeap::new();
        loop {
            while let Some(&i) = pending.peek() {
                let due = heap
                    .peek()
                    .is_none_or(|Reverse((t, _))| self.runs[i].first_start <= *t);
                if !due {
                    break;
                }
                pending.next();
                let run = self.runs[i];
                let mut cursor = RunCursor {
                    next: run.first,
                    last: run.last,
                    buffer: Default::default(),
                };
                refill(&mut cursor)?;
                if let Some(head) = cursor.buffer.front() {
                    heap.push(Reverse((head.start, i)));
                    cursors[i] = Some(cursor);
                }
            }
            let Some(Reverse((_, i))) = heap.pop() else {
                break;
            };
            let Some(cursor) = cursors[i].as_mut() else {
                continue;
            };
            if let Some(call) = cursor.buffer.pop_front() {
                each(call)?;
            }
            if cursor.buffer.is_empty() && cursor.next <= cursor.last {
                refill(cursor)?;
            }
            match cursor.buffer.front() {
                Some(head) => heap.push(Reverse((head.start, i))),
                None => cursors[i] = None,
            }
        }
        Ok(())
    }
}

/// A live run: where its next refill starts and the calls read ahead.
#[derive(Debug, Clone)]
struct RunCursor {
    next: i64,
    last: i64,
    buffer: std::collections::VecDeque<LaunchCall>,
}
