//! What a device lane shows of a row of GPU work read back from the source: a kernel by its
//! name; a graph replay by its name and graph; a copy or memset by its name (a copy's says its
//! direction) and the bytes it moved, as nsys's timeline labels them on their stream.

use super::KernelSource;
use super::summary::Label;
use crate::model::rows::KernelRow;
use crate::model::{NameId, Ns, Work, WorkTable};

/// A row of GPU work as a view reads it back: where it is and what it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkEvent {
    pub start: Ns,
    pub end: Ns,
    pub table: WorkTable,
    pub row: i64,
    pub label: WorkLabel,
}

impl WorkEvent {
    pub fn of(row: &KernelRow) -> WorkEvent {
        WorkEvent {
            start: row.start,
            end: row.end,
            table: WorkTable::of(row.work),
            row: row.row,
            label: WorkLabel::of(row),
        }
    }

    /// The order of a lane's events: start, then table and row (ties as a merge of the tables
    /// in start order breaks them).
    pub fn order_key(&self) -> (Ns, WorkTable, i64) {
        (self.start, self.table, self.row)
    }
}

/// What a row of GPU work is called: its name, and for other work than a kernel what tells one
/// such row from another (a replay's graph id, a copy's or memset's bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkLabel {
    pub work: Work,
    pub name: NameId,
    /// `graphId` of a replay, bytes of a copy or memset, 0 for a kernel.
    pub detail: u64,
}

impl WorkLabel {
    pub fn of(row: &KernelRow) -> WorkLabel {
        let detail = match row.work {
            Work::Kernel => 0,
            Work::Replay => u64::from(row.graph_id),
            Work::Copy { .. } | Work::Memset => row.bytes,
        };
        WorkLabel {
            work: row.work,
            name: row.short_name,
            detail,
        }
    }

    /// The label as text: `[CUDA graph replay] graph 3`, `[CUDA memcpy Host-to-Device] 4.0 GiB`.
    pub fn text(self, source: &dyn KernelSource) -> String {
        let name = match self.work.name() {
            // The name the row carries, else the one every load gives it.
            Some(fallback) => Some(source.name(self.name))
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| fallback.to_string()),
            None => return source.name(self.name),
        };
        match self.work {
            Work::Replay if self.detail != 0 => format!("{name} graph {}", self.detail),
            Work::Copy { .. } | Work::Memset => {
                format!("{name} {}", crate::format::bytes(self.detail))
            }
            _ => name,
        }
    }

    /// The kind of work, as the hover says it.
    pub fn kind(self) -> &'static str {
        work_kind(self.work)
    }
}

/// What the view's columns and items label a row by: a kernel by its name id (as the summary
/// does), other work by its whole label, made text only when the view names it.
impl From<WorkLabel> for Label {
    fn from(label: WorkLabel) -> Label {
        match label.work {
            Work::Kernel => Label::Name(label.name),
            _ => Label::Work(label),
        }
    }
}

/// A kind of GPU work in words: `kernel`, `graph replay`, `copy`, `memset`.
pub fn work_kind(work: Work) -> &'static str {
    match work {
        Work::Kernel => "kernel",
        Work::Replay => "graph replay",
        Work::Copy { .. } => "copy",
        Work::Memset => "memset",
    }
}
