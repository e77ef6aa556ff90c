//! NVTX ops as a tree (`standard`): which range runs directly inside which, each op's self
//! time, and the ops grouped by shape ([`crate::names::shape`]).
//!
//! NVTX push/pop ranges nest per thread: a range's parent is the nearest range of its thread
//! that encloses it wholly (start-end ranges that only overlap are no parent). [`Nesting`]
//! folds the counted ranges in start order with one stack of open ranges per thread — state
//! bounded by nesting depth × threads, plus a time per name and per (child, parent) pair of
//! names — never a row per range. Nsight Systems' `nvtx_pushpop_sum` report splits a range's
//! time the same way (`DurNonChild` is the self time, `DurChild` the children's).

use std::collections::BTreeMap;

use hashbrown::HashMap;

use super::breakdown::{MemberRow, OpRow};
use crate::model::{Ns, ThreadIdx};
use crate::names::ranges::emit_nvtx_op;
use crate::names::shape::op_shape;

/// The parent of a range at the top of its thread's stack.
const TOP: u32 = u32::MAX;

/// An open range of a thread: where it ends, and its name's index.
#[derive(Debug, Clone, Copy)]
struct Open {
    end: Ns,
    member: u32,
}

/// The fold: per thread the open ranges; per name its time and its direct children's.
#[derive(Debug, Default)]
pub struct Nesting<'a> {
    stacks: HashMap<ThreadIdx, Vec<Open>>,
    /// Per name index: `(time inside the cycles over every copy, direct children's time)`.
    time: Vec<(Ns, Ns)>,
    /// `(child, parent or TOP)` → the child's time under that parent.
    edges: HashMap<(u32, u32), Ns>,
    /// The ranges met at the current start time, placed once a later start comes: among
    /// ranges starting together the longer one encloses, whatever order the table gave them.
    same_start: Vec<Pending<'a>>,
    /// The deepest stack held.
    pub peak_depth: usize,
}

/// A range waiting in [`Nesting::same_start`].
#[derive(Debug, Clone, Copy)]
struct Pending<'a> {
    thread: ThreadIdx,
    start: Ns,
    end: Ns,
    name: &'a str,
    member: u32,
    inside: Ns,
}

impl<'a> Nesting<'a> {
    /// A counted range named `name` (its name index `member`) on `thread` at `[start, end)`,
    /// `inside` ns of it inside the cycles; ranges come in start order. Call
    /// [`Nesting::finish`] after the last.
    pub fn push(
        &mut self,
        thread: ThreadIdx,
        (start, end): (Ns, Ns),
        (name, member): (&'a str, u32),
        inside: Ns,
    ) {
        if self.same_start.first().is_some_and(|p| p.start != start) {
            self.flush();
        }
        self.same_start.push(Pending {
            thread,
            start,
            end,
            name,
            member,
            inside,
        });
    }

    /// Places the ranges still waiting.
    pub fn finish(&mut self) {
        self.flush();
    }

    /// Places the ranges of one start time, the longest first (then by thread and name: an
    /// order that does not depend on the table's).
    fn flush(&mut self) {
        let mut waiting = std::mem::take(&mut self.same_start);
        waiting.sort_by(|a, b| {
            b.end
                .cmp(&a.end)
                .then(a.thread.cmp(&b.thread))
                .then(a.name.cmp(b.name))
        });
        for p in waiting.drain(..) {
            self.place(p.thread, p.end, p.member, p.inside);
        }
        self.same_start = waiting;
    }

    fn place(&mut self, thread: ThreadIdx, end: Ns, member: u32, inside: Ns) {
        let need = member as usize + 1;
        if self.time.len() < need {
            self.time.resize(need, (0, 0));
        }
        let stack = self.stacks.entry(thread).or_default();
        // Ranges that end before this one does cannot enclose it (nor any later range that
        // this one does not enclose): closed, or overlapping without nesting.
        while stack.last().is_some_and(|o| o.end < end) {
            stack.pop();
        }
        let parent = stack.last().map_or(TOP, |o| o.member);
        if let Some(p) = self.time.get_mut(parent as usize) {
            p.1 = p.1.saturating_add(inside);
        }
        let e = self.edges.entry((member, parent)).or_default();
        *e = e.saturating_add(inside);
        if let Some(m) = self.time.get_mut(member as usize) {
            m.0 = m.0.saturating_add(inside);
        }
        stack.push(Open { end, member });
        self.peak_depth = self.peak_depth.max(stack.len());
    }

    /// The own part of `total_ns` of a name: `total × (all − children) / all` in integers, so
    /// that with each instance counted once (`total == all`) it is exactly `all − children`.
    fn self_ns(&self, member: u32, total_ns: i64) -> i64 {
        match self.time.get(member as usize) {
            Some(&(all, children)) if all > 0 => {
                let own = i128::from(all.saturating_sub(children).max(0));
                (i128::from(total_ns) * own / i128::from(all)) as i64
            }
            _ => total_ns,
        }
    }
}

/// The op rows of the names in `members` (rows per name, by total), grouped by shape: each
/// shape's time, calls, self time (each name's total × its self share over every copy: exactly
/// its time minus its direct children's when each instance counts once; TP ranks' copies count
/// at the longest), parent and depth. `per_step` turns µs into µs per step, as for the rows.
/// By total time (desc), then shape.
pub fn group(
    members: Vec<OpRow>,
    index: &HashMap<&str, u32>,
    nest: &Nesting<'_>,
    per_step: impl Fn(f64) -> f64,
) -> Vec<OpRow> {
    let mut shapes: BTreeMap<String, Vec<OpRow>> = BTreeMap::new();
    for mut row in members {
        // `total_us` is a whole number of ns over 1000.
        let total_ns = (row.total_us * 1000.0).round() as i64;
        let own = index
            .get(row.name.as_str())
            .map_or(total_ns, |&m| nest.self_ns(m, total_ns));
        row.self_us_per_step = Some(per_step(own as f64 / 1000.0));
        shapes
            .entry(op_shape(&row.name).into_owned())
            .or_default()
            .push(row);
    }
    let shape_of_member: HashMap<u32, &str> = index
        .iter()
        .filter_map(|(name, &m)| {
            let shape = op_shape(name);
            shapes
                .get_key_value(shape.as_ref())
                .map(|(k, _)| (m, k.as_str()))
        })
        .collect();
    let parents = parents(nest, &shape_of_member);
    let mut out: Vec<OpRow> = shapes
        .iter()
        .map(|(shape, rows)| shape_row(shape, rows, parents.get(shape.as_str()).copied()))
        .collect();
    set_depths(&mut out);
    out.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.name.cmp(&b.name)));
    out
}

/// Rows of whole NVTX names (a kernel window's, which has no nesting) as op rows by shape:
/// each name's PyTorch op (`emit_nvtx_op`), then its shape, time and calls summed, as the
/// per-step table groups them. By total time (desc), then shape.
pub fn by_shape(rows: Vec<OpRow>) -> Vec<OpRow> {
    let ops = rows
        .into_iter()
        .map(|mut r| {
            r.name = emit_nvtx_op(&r.name).to_string();
            r
        })
        .collect();
    let mut out = group(ops, &HashMap::new(), &Nesting::default(), |v| v);
    for r in &mut out {
        (r.self_us_per_step, r.parent, r.depth) = (None, None, None);
        r.members.clear();
    }
    out
}

/// One shape's row from its names' rows.
fn shape_row(shape: &str, rows: &[OpRow], parent: Option<&str>) -> OpRow {
    let sum = |f: fn(&OpRow) -> f64| rows.iter().map(f).sum::<f64>();
    let longest = rows
        .iter()
        .filter_map(|r| r.longest)
        .max_by_key(|w| (w.end_ns - w.start_ns, std::cmp::Reverse(w.start_ns)));
    let whole = rows.len() == 1 && rows[0].name == shape;
    let mut members: Vec<MemberRow> = if whole {
        Vec::new()
    } else {
        rows.iter()
            .map(|r| MemberRow {
                name: r.name.clone(),
                us_per_step: r.us_per_step,
                calls: r.calls,
            })
            .collect()
    };
    members.sort_by(|a, b| {
        b.us_per_step
            .total_cmp(&a.us_per_step)
            .then(a.name.cmp(&b.name))
    });
    OpRow {
        name: shape.to_string(),
        us_per_step: sum(|r| r.us_per_step),
        calls_per_step: sum(|r| r.calls_per_step),
        total_us: sum(|r| r.total_us),
        calls: rows.iter().map(|r| r.calls).sum(),
        longest,
        self_us_per_step: Some(sum(|r| r.self_us_per_step.unwrap_or(r.us_per_step))),
        parent: parent.map(str::to_string),
        depth: None,
        members,
    }
}

/// Each shape's parent: the shape most of its time runs directly inside (the top when more of
/// it runs at the top of its thread; a shape inside itself, recursion, is not its own parent).
fn parents<'s>(nest: &Nesting<'_>, shape_of: &HashMap<u32, &'s str>) -> HashMap<&'s str, &'s str> {
    let mut by_pair: BTreeMap<(&str, Option<&str>), Ns> = BTreeMap::new();
    for (&(child, parent), &ns) in &nest.edges {
        let Some(&c) = shape_of.get(&child) else {
            continue;
        };
        let p = if parent == TOP {
            None
        } else {
            shape_of.get(&parent).copied()
        };
        if p == Some(c) {
            continue;
        }
        let e = by_pair.entry((c, p)).or_default();
        *e = e.saturating_add(ns);
    }
    // The heaviest parent per shape; ties: the top, then by name (the map's order).
    let mut best: HashMap<&str, (Option<&str>, Ns)> = HashMap::new();
    for ((c, p), ns) in by_pair {
        let e = best.entry(c).or_insert((p, ns));
        if ns > e.1 {
            *e = (p, ns);
        }
    }
    best.into_iter()
        .filter_map(|(c, (p, _))| Some((c, p?)))
        .collect()
}

/// Sets each row's depth (parents up the chain), first cutting the parent link of the first
/// row (in `rows` order) of each parent cycle: it sits at the top.
fn set_depths(rows: &mut [OpRow]) {
    let at: HashMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.clone(), i))
        .collect();
    let parent =
        |rows: &[OpRow], i: usize| rows[i].parent.as_deref().and_then(|p| at.get(p).copied());
    for i in 0..rows.len() {
        let mut seen = vec![i];
        let mut cur = i;
        while let Some(p) = parent(&*rows, cur) {
            if p == i {
                rows[i].parent = None;
                break;
            }
            if seen.contains(&p) {
                break;
            }
            seen.push(p);
            cur = p;
        }
    }
    for i in 0..rows.len() {
        let mut depth = 0u32;
        let mut cur = i;
        while let Some(p) = parent(&*rows, cur) {
            depth += 1;
            cur = p;
            if depth as usize > rows.len() {
                break;
            }
        }
        rows[i].depth = Some(depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, us: f64) -> OpRow {
        OpRow {
            name: name.into(),
            us_per_step: us,
            calls_per_step: 1.0,
            total_us: us,
            calls: 1,
            ..OpRow::default()
        }
    }

    #[test]
    fn self_time_is_time_minus_direct_children_on_the_same_thread() {
        // Thread 1: to [0,100) ⊃ _to_copy [10,90) ⊃ copy_ [20,80); thread 2: copy_ [30,50)
        // overlaps in time but is no child. Then a sibling to [100,130) with no child.
        let mut nest = Nesting::default();
        let mut index: HashMap<&str, u32> = HashMap::new();
        for (i, n) in ["to", "_to_copy", "copy_"].into_iter().enumerate() {
            index.insert(n, i as u32);
        }
        nest.push(1, (0, 100), ("to", 0), 100);
        nest.push(1, (10, 90), ("_to_copy", 1), 80);
        nest.push(1, (20, 80), ("copy_", 2), 60);
        nest.push(2, (30, 50), ("copy_", 2), 20);
        nest.push(1, (100, 130), ("to", 0), 30);
        nest.finish();
        assert_eq!(nest.peak_depth, 3);
        let rows = vec![row("to", 130.0), row("_to_copy", 80.0), row("copy_", 80.0)];
        let out = group(rows, &index, &nest, |v| v);
        let get = |n: &str| {
            out.iter()
                .find(|r| r.name == n)
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(get("to").self_us_per_step, Some(50.0));
        assert_eq!(get("_to_copy").self_us_per_step, Some(20.0));
        assert_eq!(get("copy_").self_us_per_step, Some(80.0));
        assert_eq!(
            (get("to").depth, get("_to_copy").depth, get("copy_").depth),
            (Some(0), Some(1), Some(2))
        );
        assert_eq!(get("copy_").parent.as_deref(), Some("_to_copy"));
        assert_eq!(get("to").parent, None);
    }

    #[test]
    fn names_differing_in_numbers_are_one_op_with_their_members() {
        let mut index: HashMap<&str, u32> = HashMap::new();
        index.insert("pre (blocks.2.m)", 0);
        index.insert("pre (blocks.3.m)", 1);
        let mut nest = Nesting::default();
        nest.push(1, (0, 10), ("pre (blocks.2.m)", 0), 10);
        nest.push(1, (10, 30), ("pre (blocks.3.m)", 1), 20);
        nest.finish();
        let out = group(
            vec![row("pre (blocks.3.m)", 20.0), row("pre (blocks.2.m)", 10.0)],
            &index,
            &nest,
            |v| v,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "pre (blocks.*.m)");
        assert_eq!((out[0].us_per_step, out[0].calls), (30.0, 2));
        let members: Vec<&str> = out[0].members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(members, ["pre (blocks.3.m)", "pre (blocks.2.m)"]);
    }

    #[test]
    fn ranges_starting_together_nest_by_length_in_any_table_order() {
        let mut index: HashMap<&str, u32> = HashMap::new();
        index.insert("outer", 0);
        index.insert("inner", 1);
        for order in [[0, 1], [1, 0]] {
            let spans = [("outer", 0u32, (0, 100)), ("inner", 1, (0, 40))];
            let mut nest = Nesting::default();
            for i in order {
                let (name, m, span) = spans[i];
                nest.push(1, span, (name, m), span.1 - span.0);
            }
            nest.finish();
            let out = group(
                vec![row("outer", 100.0), row("inner", 40.0)],
                &index,
                &nest,
                |v| v,
            );
            let get = |n: &str| {
                out.iter()
                    .find(|r| r.name == n)
                    .cloned()
                    .unwrap_or_default()
            };
            assert_eq!(get("inner").parent.as_deref(), Some("outer"), "{order:?}");
            assert_eq!(get("outer").self_us_per_step, Some(60.0), "{order:?}");
        }
    }

    #[test]
    fn window_names_group_by_op_and_shape() {
        let rows = vec![
            row("aten::mm, seq = 1, op_id = 7", 3.0),
            row("aten::mm, seq = 2, op_id = 8", 4.0),
            row("FSDP::pre_forward (blocks.3.m)", 5.0),
            row("FSDP::pre_forward (blocks.4.m)", 1.0),
        ];
        let out = by_shape(rows);
        let got: Vec<(&str, f64, u64)> = out
            .iter()
            .map(|r| (r.name.as_str(), r.total_us, r.calls))
            .collect();
        assert_eq!(
            got,
            [
                ("aten::mm", 7.0, 2),
                ("FSDP::pre_forward (blocks.*.m)", 6.0, 2)
            ]
        );
        assert!(
            out.iter()
                .all(|r| r.members.is_empty() && r.self_us_per_step.is_none())
        );
    }

    #[test]
    fn a_parent_cycle_is_cut_and_recursion_is_no_parent() {
        let mut index: HashMap<&str, u32> = HashMap::new();
        index.insert("a", 0);
        index.insert("b", 1);
        let mut nest = Nesting::default();
        // a ⊃ b ⊃ a ⊃ b ⊃ a: most of a's time is under b and most of b's under a.
        for (i, (s, e)) in [(0, 100), (1, 99), (2, 98), (3, 97), (4, 96)]
            .into_iter()
            .enumerate()
        {
            nest.push(1, (s, e), (["a", "b"][i % 2], (i % 2) as u32), e - s);
        }
        nest.finish();
        let out = group(vec![row("a", 100.0), row("b", 98.0)], &index, &nest, |v| v);
        let get = |n: &str| {
            out.iter()
                .find(|r| r.name == n)
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(
            (get("a").parent, get("a").depth),
            (None, Some(0)),
            "{out:?}"
        );
        assert_eq!(get("b").parent.as_deref(), Some("a"));
        assert_eq!(get("b").depth, Some(1));
    }
}
