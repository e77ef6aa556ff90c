//! Turning events or summary bins into a view's per-column numbers.
//!
//! `exact` is the original level-of-detail aggregation, unchanged, so a view that re-reads its
//! rows is identical to what the loaded-table timeline always produced. `from_bins` is its
//! bounded-memory approximation for views spanning too many kernels to re-read.

use std::collections::HashMap;

use super::KernelSource;
use super::summary::{Bin, BinGrid, Label, TopKey};
use crate::model::Ns;

/// The view's columns: column `c` covers `[start + c·w, start + (c+1)·w)`.
pub struct Grid {
    pub start: Ns,
    pub end: Ns,
    pub columns: u32,
}

impl Grid {
    pub fn column(&self, t: Ns) -> usize {
        let span = (self.end - self.start) as f64;
        let c = ((t - self.start) as f64 / span * f64::from(self.columns)).floor();
        (c.max(0.0) as usize).min(self.columns as usize - 1)
    }

    pub fn bounds(&self, c: usize) -> (Ns, Ns) {
        let span = (self.end - self.start) as f64;
        let at = |c: usize| self.start + (span * c as f64 / f64::from(self.columns)).round() as Ns;
        (at(c), at(c + 1))
    }
}

/// Names referenced by a view, each once, in order of first reference.
pub struct NameIndex<'a> {
    pub names: Vec<String>,
    by_label: HashMap<Label, i32>,
    by_text: HashMap<String, i32>,
    source: &'a dyn KernelSource,
}

impl<'a> NameIndex<'a> {
    pub fn new(source: &'a dyn KernelSource) -> NameIndex<'a> {
        NameIndex {
            names: Vec::new(),
            by_label: HashMap::new(),
            by_text: HashMap::new(),
            source,
        }
    }

    pub fn index(&mut self, label: impl Into<Label>) -> i32 {
        let label = label.into();
        if let Label::Index(i) = label {
            return i;
        }
        if let Some(&i) = self.by_label.get(&label) {
            return i;
        }
        let i = self.names.len() as i32;
        self.names.push(match label {
            Label::Name(id) => self.source.name(id),
            Label::Work(work) => work.text(self.source),
            Label::Index(_) => String::new(),
        });
        self.by_label.insert(label, i);
        i
    }
}

impl NameIndex<'_> {
    /// The index of a name read as text (a host track's row), added on first sight.
    pub fn index_text(&mut self, text: &str) -> i32 {
        if let Some(&i) = self.by_text.get(text) {
            return i;
        }
        let i = self.names.len() as i32;
        self.names.push(text.to_string());
        self.by_text.insert(text.to_string(), i);
        i
    }
}

/// One lane's columns before labelling.
pub struct Columns {
    pub busy: Vec<f32>,
    pub count: Vec<u32>,
    pub top: Vec<i32>,
}

/// Exact aggregation of one lane's events `(start, end, name)`, given in start order (ties in
/// table order): the order decides which of equally long events is `top` and the order in
/// which names enter the view.
pub fn exact<K: Copy + Into<Label>>(
    events: impl Iterator<Item = (Ns, Ns, K)>,
    grid: &Grid,
    names: &mut NameIndex,
) -> Columns {
    let n = grid.columns as usize;
    let mut covered = vec![0.0f64; n];
    let mut count = vec![0u32; n];
    let mut top: Vec<(Ns, i32)> = vec![(0, -1); n];
    for (s, e, name) in events {
        let (s, e) = (s.max(grid.start), e.min(grid.end));
        if e <= s {
            continue;
        }
        let (c0, c1) = (grid.column(s), grid.column(e - 1));
        for c in c0..=c1 {
            let (cs, ce) = grid.bounds(c);
            covered[c] += (e.min(ce) - s.max(cs)).max(0) as f64;
            count[c] += 1;
            if e - s > top[c].0 {
                top[c] = (e - s, names.index(name));
            }
        }
    }
    Columns {
        busy: fractions(grid, &covered),
        count,
        top: top.into_iter().map(|(_, t)| t).collect(),
    }
}

/// Covered ns per column as a fraction of the column, capped at 1.
fn fractions(grid: &Grid, covered: &[f64]) -> Vec<f32> {
    covered
        .iter()
        .enumerate()
        .map(|(c, &ns)| {
            let (cs, ce) = grid.bounds(c);
            (ns / (ce - cs).max(1) as f64).min(1.0) as f32
        })
        .collect()
}

/// A column from summary bins. Busy time: bins inside the column count whole, a bin cut by a
/// column edge counts in proportion to the part inside (as if its busy time were spread evenly),
/// so the error is at most `f·(1−f)·width` per cut bin (`f` the part inside) — see
/// [`busy_error_bound`]. Count and top: the kernels overlapping the column widened to whole bins
/// (an upper bound on the count; a column is idle only when that widened span is).
pub fn from_bins<K: TopKey>(
    bins: &[Bin<K>],
    bin_grid: &BinGrid,
    grid: &Grid,
    names: &mut NameIndex,
) -> Columns {
    let n = grid.columns as usize;
    let mut covered = vec![0.0f64; n];
    let mut count = vec![0u32; n];
    let mut top = vec![-1i32; n];
    for c in 0..n {
        let (cs, ce) = grid.bounds(c);
        let Some((j0, j1)) = bins_of(bin_grid, cs, ce) else {
            continue;
        };
        let mut best = Bin::default();
        count[c] = bins[j0].carried;
        for (j, bin) in bins.iter().enumerate().take(j1 + 1).skip(j0) {
            covered[c] += bin.busy as f64 * inside(bin_grid, j, cs, ce);
            count[c] = count[c].saturating_add(bin.starts);
            if bin.top_len > best.top_len {
                best = *bin;
            }
        }
        if best.top_len > 0 {
            top[c] = names.index(best.top_name);
        }
    }
    Columns {
        busy: fractions(grid, &covered),
        count,
        top,
    }
}

/// The bins overlapping `[cs, ce)`, if any.
fn bins_of(bin_grid: &BinGrid, cs: Ns, ce: Ns) -> Option<(usize, usize)> {
    if ce <= cs || ce <= bin_grid.origin || cs >= bin_grid.limit() {
        return None;
    }
    Some((bin_grid.bin(cs), bin_grid.bin(ce - 1)))
}

/// The fraction of bin `j` inside `[cs, ce)`.
fn inside(bin_grid: &BinGrid, j: usize, cs: Ns, ce: Ns) -> f64 {
    let b0 = bin_grid.bin_start(j);
    let part = ce.min(b0.saturating_add(bin_grid.width)) - cs.max(b0);
    part.max(0) as f64 / bin_grid.width as f64
}

/// Largest possible difference between a column's busy fraction from bins and the exact one
/// (for a lane whose kernels do not overlap each other, as on one CUDA stream): each bin cut by
/// an edge of the column, with a part `f` of it inside, is off by at most `f·(1−f)·width`.
pub fn busy_error_bound(bin_grid: &BinGrid, cs: Ns, ce: Ns) -> f64 {
    let Some((j0, j1)) = bins_of(bin_grid, cs, ce) else {
        return 0.0;
    };
    let cut = |j: usize| {
        let f = inside(bin_grid, j, cs, ce);
        f * (1.0 - f) * bin_grid.width as f64
    };
    let ns = if j0 == j1 { cut(j0) } else { cut(j0) + cut(j1) };
    (ns / (ce - cs).max(1) as f64).min(1.0)
}

/// A device is idle in a column when none of its streams ran a kernel there.
pub fn mark_idle(lanes: &mut [super::LaneView]) {
    let mut devices: Vec<u32> = lanes.iter().filter_map(|l| l.device).collect();
    devices.sort_unstable();
    devices.dedup();
    for d in devices {
        let n = lanes.first().map_or(0, |l| l.count.len());
        let idle: Vec<bool> = (0..n)
            .map(|c| {
                lanes
                    .iter()
                    .filter(|l| l.device == Some(d))
                    .all(|l| l.count[c] == 0)
            })
            .collect();
        for l in lanes.iter_mut().filter(|l| l.device == Some(d)) {
            l.idle.clone_from(&idle);
        }
    }
}
