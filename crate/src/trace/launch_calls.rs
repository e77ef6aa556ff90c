//! The kernel-launch API calls in start order, read twice and never held (the page's M2).
//!
//! Why: the page's analysis worker must not hold millions of launch calls. nsys writes the
//! runtime table in a few runs sorted by start (CUPTI buffers flushed in turn: the public
//! `mfu_2gpu_before` export has five, one going back 290 ms), so a scan of `start` alone finds
//! the runs — interning threads in table order on the way, as a whole load does, so process and
//! thread ids agree — and a k-way merge of the runs yields the calls in start order. A table in
//! too many runs is reported, and the caller loads the calls instead.

use std::collections::VecDeque;

use rusqlite::Connection;

use super::capture::WarmupCalls;
use super::decode::{call_columns, call_row, int, time};
use super::load::RUNTIME_TABLE;
use super::open::sqlite_error;
use super::runs::{SortedRuns, read_chunk, thread_of};
use super::schema::Schema;
use super::tables::{id_list, is_any_launch_api, launch_filter, select};
use crate::error::Result;
use crate::model::rows::CallRow;
use crate::model::{NameId, Ns, ProcessIdx, Processes, Strings, Threads};

/// More sorted runs than this (a table shuffled row by row) and the calls are loaded instead.
pub const MAX_RUNS: usize = 1 << 20;

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

/// Feeds the launch calls to `each` in table order while their starts do not decrease, interning
/// their threads as met (as loading them would): one pass when the table is sorted, the common
/// case. `Ok(None)` at the first call starting before its predecessor (the calls fed so far must
/// then be dropped: [`LaunchRuns::scan`] and [`LaunchRuns::for_each`] give them in order);
/// otherwise the number of calls.
pub fn for_each_if_sorted(
    conn: &Connection,
    (schema, path): (&Schema, &str),
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
    let sql = select(
        schema,
        RUNTIME_TABLE,
        &call_columns(false),
        &format!("WHERE {filter}"),
    );
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let (mut last_start, mut last_tid, mut process, mut calls) = (Ns::MIN, i64::MIN, 0, 0u64);
    while let Some(r) = rows.next().map_err(fail)? {
        let (
            CallRow {
                start, end, name, ..
            },
            gtid,
        ) = call_row(r, strings).map_err(fail)?;
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
    runs: SortedRuns<Ns>,
    /// The launch calls' `SELECT` of one `rowid` range.
    sql: String,
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
        let mut runs = SortedRuns::new(MAX_RUNS);
        let mut last_tid = i64::MIN;
        while let Some(r) = rows.next().map_err(fail)? {
            let value = |i: usize| r.get_ref(i).map(|v| int(v, 0)).map_err(fail);
            let start = r.get_ref(1).and_then(time).map_err(fail)?;
            let (rowid, gtid) = (value(0)?, value(2)?);
            if gtid != last_tid {
                last_tid = gtid;
                threads.intern(gtid, processes);
            }
            runs.push(rowid, start);
            if runs.too_many() {
                return Ok(LaunchScan::Load);
            }
        }
        let sql = select(
            schema,
            RUNTIME_TABLE,
            &call_columns(false),
            &format!("WHERE rowid BETWEEN ?1 AND ?2 AND {filter} ORDER BY rowid LIMIT ?3"),
        );
        Ok(LaunchScan::Runs(LaunchRuns {
            calls: runs.rows(),
            runs,
            sql,
        }))
    }

    /// Sorted runs found by the scan.
    pub fn run_count(&self) -> usize {
        self.runs.count()
    }

    /// Feeds every launch call to `each` in non-decreasing start (ties in table order), the
    /// runs merged (`runs::SortedRuns::merge`). Threads must have been interned by
    /// [`LaunchRuns::scan`].
    pub fn for_each(
        &self,
        conn: &Connection,
        path: &str,
        strings: &Strings,
        threads: &Threads,
        mut each: impl FnMut(LaunchCall) -> Result<()>,
    ) -> Result<()> {
        let fail = |e: rusqlite::Error| sqlite_error(path, RUNTIME_TABLE, &e);
        let read = |first: i64, last: i64, limit: usize, out: &mut VecDeque<CallRow>| {
            read_chunk(conn, &self.sql, (first, last, limit), out, |r| {
                let (mut call, gtid) = call_row(r, strings)?;
                (call.thread, call.process) = thread_of(threads, gtid);
                Ok(call)
            })
            .map_err(fail)
        };
        for call in self.runs.merge(read) {
            let call = call?;
            each(LaunchCall {
                start: call.start,
                end: call.end,
                process: call.process,
                name: call.name,
            })?;
        }
        Ok(())
    }
}
