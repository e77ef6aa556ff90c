//! The GPU work besides the kernels as a reader of the kernel table folds it: graph replays,
//! copies and memsets read whole and merged in start order ([`other_work`]), then merged with
//! the kernels as they come ([`Merged`]), as `EventRows::gpu_work` merges them. Natively the
//! kernel table's thread folds so while it reads (`fold.rs`); in the page the reader worker,
//! once it has read its part (`KernelPart::fold_gpu_work`).

use super::super::decode::{REPLAY_COLUMNS, memop_columns};
use super::super::load::{MEMCPY_TABLE, MEMSET_TABLE};
use super::super::row_cache::Budget;
use super::super::runs::Keyed;
use super::super::schema::Schema;
use super::super::tables::Loader;
use crate::error::Result;
use crate::model::rows::{KernelRow, MemOpRow, merged_in_start_order, work_name};
use crate::model::{NO_NAME, Processes, REPLAY_NAME, Strings, Trace, Work};

/// Copies, memsets and graph replays a fold holds in start order beside the kernels (about
/// 80 bytes each) at least; more as the scan's budget allows ([`other_rows_room`]). A file with
/// more gives way to the passes.
pub(super) const MAX_OTHER_ROWS: usize = 1 << 18;

/// The bytes of `budget` the other GPU work may take (half of what is left: the scan that folds
/// keeps no event row, but the host side may keep copies), and how many rows that holds: their
/// merge holds them twice at its peak.
pub(super) fn other_rows_room(budget: &Budget) -> (usize, usize) {
    let room = budget.take_up_to(budget.left() / 2);
    let rows = room / (2 * std::mem::size_of::<KernelRow>());
    (room, rows.max(MAX_OTHER_ROWS))
}

/// Graph replays, copies and memsets as GPU work, each table in start order as a pass reads
/// it (sorted by its key, ties in table order), merged as `EventRows::gpu_work` merges them;
/// `None` when there are more than `most`.
pub(super) fn other_work(
    ctx: &mut Loader<'_, '_>,
    (schema, strings): (&Schema, &mut Strings),
    listed: &Processes,
    most: usize,
) -> Result<Option<Vec<KernelRow>>> {
    // Read into a trace of their own (the host side reads the same tables and notes them),
    // its processes numbered after the listed ones, as every reader numbers them; the
    // strings lent to it, not copied (at 10 GB they are 200 MB).
    let mut apart = Trace {
        strings: std::mem::take(strings),
        processes: listed.clone(),
        ..Trace::default()
    };
    let read = read_other_work(ctx, schema, &mut apart, most);
    *strings = std::mem::take(&mut apart.strings);
    read
}

fn read_other_work(
    ctx: &mut Loader<'_, '_>,
    schema: &Schema,
    apart: &mut Trace,
    most: usize,
) -> Result<Option<Vec<KernelRow>>> {
    let mut rows = 0usize;
    let held = |rows: &mut usize| {
        *rows += 1;
        *rows <= most
    };
    let mut replays = Vec::new();
    ctx.read_replays(schema, apart, &REPLAY_COLUMNS, &mut |r| {
        if held(&mut rows) {
            replays.push(r);
        }
    })?;
    let replay_name = apart.strings.find_text(REPLAY_NAME).unwrap_or(NO_NAME);
    for r in &mut replays {
        r.work = Work::Replay;
        r.short_name = replay_name;
        r.demangled_name = replay_name;
    }
    replays.sort_by_key(|r| r.key());
    let mut memops = |table: &'static str| -> Result<Vec<MemOpRow>> {
        let mut ops = Vec::new();
        let columns = memop_columns(table);
        ctx.read_memops(schema, apart, table, &columns, &mut |op| {
            if held(&mut rows) {
                ops.push(op);
            }
        })?;
        ops.sort_by_key(|op| op.key());
        Ok(ops)
    };
    let copies = memops(MEMCPY_TABLE)?;
    let memsets = memops(MEMSET_TABLE)?;
    if rows > most {
        return Ok(None);
    }
    let strings = &apart.strings;
    let memset_name = work_name(strings, Work::Memset);
    let merged = merged_in_start_order(vec![
        Box::new(replays.into_iter()),
        Box::new(copies.iter().map(|op| KernelRow::of_copy(op, strings))),
        Box::new(
            memsets
                .iter()
                .map(|op| KernelRow::of_memop(op, Work::Memset, memset_name)),
        ),
    ])
    .collect();
    Ok(Some(merged))
}

/// The other GPU work merged with the kernels as they come: the kernels' source comes first in
/// the merge, so another row goes before a kernel only when it sorts strictly before it.
pub(super) struct Merged {
    others: Vec<KernelRow>,
    /// The first of `others` not handed out yet (read in place: a kernel that sorts first
    /// moves no row).
    next: usize,
}

impl Merged {
    pub(super) fn new(others: Vec<KernelRow>) -> Merged {
        Merged { others, next: 0 }
    }

    /// Hands `fold` the other rows sorting before `k`, then `k`; `false` once `fold` refuses.
    pub(super) fn kernel(
        &mut self,
        k: &KernelRow,
        fold: &mut impl FnMut(&KernelRow) -> bool,
    ) -> bool {
        let key = k.key();
        while let Some(o) = self.others.get(self.next).filter(|o| o.key() < key) {
            self.next += 1;
            if !fold(o) {
                return false;
            }
        }
        fold(k)
    }

    /// Hands `fold` the other rows after the last kernel.
    pub(super) fn finish(self, fold: &mut impl FnMut(&KernelRow) -> bool) -> bool {
        let rest = self.others.get(self.next..).unwrap_or_default();
        rest.iter().all(fold)
    }
}
