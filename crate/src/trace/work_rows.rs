//! Rows of the four GPU-work tables read again by `rowid`, named as
//! `model::rows::EventRows::gpu_work` names them: the timeline's zoomed-in views and hovers in
//! the page, which index each table by row number and hold none of its rows.

use rusqlite::Connection;

use super::decode::{
    REPLAY_COLUMNS, Selected, kernel_columns, kernel_row, memop_columns, memop_row,
};
use super::load::{GRAPH_TRACE_TABLE, KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE};
use super::open::sqlite_error;
use super::schema::Schema;
use super::tables::select;
use crate::error::Result;
use crate::model::rows::KernelRow;
use crate::model::{NO_NAME, REPLAY_NAME, Strings, WorkTable};

/// The SQLite table holding `table`'s rows.
pub fn work_table_name(table: WorkTable) -> &'static str {
    match table {
        WorkTable::Kernels => KERNEL_TABLE,
        WorkTable::Replays => GRAPH_TRACE_TABLE,
        WorkTable::Memcpy => MEMCPY_TABLE,
        WorkTable::Memset => MEMSET_TABLE,
    }
}

/// One `SELECT` by `rowid` range per GPU-work table the export has (`None`: absent, as in
/// exports of older nsys, which then read as empty).
#[derive(Debug, Clone)]
pub struct WorkRows {
    sql: [Option<String>; 4],
}

impl WorkRows {
    pub fn new(schema: &Schema) -> WorkRows {
        WorkRows {
            sql: WorkTable::ALL.map(|table| {
                let name = work_table_name(table);
                let columns = match table {
                    WorkTable::Kernels => kernel_columns(true, true),
                    WorkTable::Replays => REPLAY_COLUMNS,
                    WorkTable::Memcpy | WorkTable::Memset => memop_columns(name),
                };
                let filter = "WHERE rowid BETWEEN ?1 AND ?2";
                schema
                    .has_table(name)
                    .then(|| select(schema, name, &columns, filter))
            }),
        }
    }

    /// Visits the rows of `table` with `rowid` in `[first, last]`, in `rowid` order, named
    /// through `strings` (kernels by `shortName`, the others by the names every load interns).
    /// The process is left 0: the timeline places rows by device and stream.
    pub fn read(
        &self,
        conn: &Connection,
        path: &str,
        table: WorkTable,
        (first, last): (i64, i64),
        strings: &Strings,
        visit: &mut dyn FnMut(KernelRow),
    ) -> Result<()> {
        let Some(sql) = &self.sql[table.index()] else {
            return Ok(());
        };
        let fail = |e: rusqlite::Error| sqlite_error(path, work_table_name(table), &e);
        let mut stmt = conn.prepare_cached(sql).map_err(fail)?;
        let mut rows = stmt.query([first, last]).map_err(fail)?;
        let replay_name = strings.find_text(REPLAY_NAME).unwrap_or(NO_NAME);
        while let Some(r) = rows.next().map_err(fail)? {
            let row = match table {
                WorkTable::Kernels => kernel_row(r, strings, &Selected::ALL).map(|(k, _)| k),
                WorkTable::Replays => {
                    kernel_row(r, strings, &Selected::ALL).map(|(k, _)| KernelRow {
                        short_name: replay_name,
                        demangled_name: replay_name,
                        work: crate::model::Work::Replay,
                        ..k
                    })
                }
                WorkTable::Memcpy => memop_row(r).map(|(op, _)| KernelRow::of_copy(&op, strings)),
                WorkTable::Memset => memop_row(r).map(|(op, _)| KernelRow::of_memset(&op, strings)),
            }
            .map_err(fail)?;
            visit(row);
        }
        Ok(())
    }
}

/// Each GPU-work table's first row's start and last row's end in `rowid` order, read in two
/// descents of its b-tree (no scan). A table written in start order, as nsys writes them,
/// begins with its earliest row, and any row's end is one the table's work reaches at least: a
/// fold of the launch calls read before the kernel table (the page's host side) takes its
/// window from these, and the join checks them against what the sweep of the GPU work found
/// (`detect::launch_sweep::LaunchSweepResult::fits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkEnds {
    /// By [`WorkTable::index`]; `None` for a table absent, empty or unreadable.
    ends: [Option<(crate::model::Ns, crate::model::Ns)>; 4],
}

impl WorkEnds {
    /// Reads every GPU-work table's ends; a table it cannot read counts as empty (what it gives
    /// is checked before it is used).
    pub fn read(conn: &Connection) -> WorkEnds {
        let end_of = |table: WorkTable| {
            let name = work_table_name(table);
            let first = format!("SELECT start FROM {name} ORDER BY rowid LIMIT 1");
            let last = format!("SELECT \"end\" FROM {name} ORDER BY rowid DESC LIMIT 1");
            let one = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).ok();
            Some((one(&first)?, one(&last)?))
        };
        WorkEnds {
            ends: WorkTable::ALL.map(end_of),
        }
    }

    /// The GPU work's start and an end it reaches at least, over every GPU-work table
    /// (`all_work`) or the kernels alone: the first rows' earliest start, the last rows'
    /// latest end. `None` without such work.
    pub fn bounds(&self, all_work: bool) -> Option<(crate::model::Ns, crate::model::Ns)> {
        let tables = if all_work {
            &self.ends[..]
        } else {
            &self.ends[..1]
        };
        tables
            .iter()
            .flatten()
            .copied()
            .reduce(|(s, e), (s2, e2)| (s.min(s2), e.max(e2)))
    }
}
