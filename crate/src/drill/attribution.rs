//! What the host was doing during a gap: the NVTX ranges open on the threads that launched the
//! kernels on either side, and the CUDA API calls of their processes (reference §9.1: "a gap
//! between launches is pure host overhead").
//!
//! One pass over the NVTX table and one over the runtime table serve all the gaps at once; the
//! gaps are few (a top-N), the tables large.

use std::collections::HashMap;

use serde::Serialize;

use crate::drill::gap_report::KernelRef;
use crate::index::rows::RowIndex;
use crate::model::{NameId, Ns, ProcessIdx, ThreadIdx};
use crate::names::api::api_base_name;
use crate::names::ranges::emit_nvtx_op;
use crate::profile::Profile;
use crate::steps::visible_row_name;

/// At most this many names are listed per gap (largest overlap first).
pub const MAX_NAMES: usize = 10;

/// A name's share of a gap: how many events of that name overlap it, and by how much in total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overlap {
    pub name: String,
    pub count: u64,
    pub overlap_us: f64,
}

/// A gap to attribute: `[start, end)` between the kernels before and after it.
#[derive(Debug, Clone, Copy)]
pub struct GapSpan {
    pub start: Ns,
    pub end: Ns,
    pub kernels: [KernelRef; 2],
}

/// The NVTX ranges and API calls overlapping one gap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostActivity {
    pub nvtx: Vec<Overlap>,
    pub api: Vec<Overlap>,
}

/// Whose events count for a gap: the launching threads, or (when no launch call is known) any
/// thread of the kernels' processes.
struct Scope {
    threads: Vec<ThreadIdx>,
    processes: Vec<ProcessIdx>,
}

type Acc = HashMap<NameId, (u64, Ns)>;

/// Attributes every gap in `gaps` (all from the trace of `ix`): one pass over its NVTX ranges
/// and one over its calls, each stopping at the last gap's end.
pub fn attribute(ix: &RowIndex<'_>, gaps: &[GapSpan]) -> Vec<HostActivity> {
    if gaps.is_empty() {
        return Vec::new();
    }
    let scopes: Vec<Scope> = gaps.iter().map(scope).collect();
    let lo = gaps.iter().map(|g| g.start).min().unwrap_or(0);
    let hi = gaps.iter().map(|g| g.end).max().unwrap_or(0);
    let nvtx = nvtx_overlaps(ix, gaps, &scopes, (lo, hi));
    let api = api_overlaps(ix, gaps, &scopes, (lo, hi));
    nvtx.into_iter()
        .zip(api)
        .map(|(n, a)| HostActivity {
            nvtx: ranked(ix, n, emit_nvtx_op),
            api: ranked(ix, a, api_base_name),
        })
        .collect()
}

fn scope(g: &GapSpan) -> Scope {
    let mut threads = Vec::new();
    let mut processes = Vec::new();
    for k in &g.kernels {
        if !processes.contains(&k.process) {
            processes.push(k.process);
        }
        if let Some(t) = k.thread
            && !threads.contains(&t)
        {
            threads.push(t);
        }
    }
    Scope { threads, processes }
}

fn overlap(start: Ns, end: Ns, g: &GapSpan) -> Ns {
    end.min(g.end) - start.max(g.start)
}

fn nvtx_overlaps(
    ix: &RowIndex<'_>,
    gaps: &[GapSpan],
    scopes: &[Scope],
    (lo, hi): (Ns, Ns),
) -> Vec<Acc> {
    let threads = &ix.meta().threads;
    let sw = Profile::Standard.switches();
    let mut acc: Vec<Acc> = vec![Acc::new(); gaps.len()];
    // In start order: no range starting at or after the last gap's end overlaps one.
    for r in ix.rows.ranges().take_while(|r| r.start < hi) {
        if r.end <= lo {
            continue;
        }
        let Some(name) = visible_row_name(&r, &sw) else {
            continue;
        };
        let process = threads.process.get(r.thread as usize).copied();
        for ((g, sc), a) in gaps.iter().zip(scopes).zip(acc.iter_mut()) {
            let ov = overlap(r.start, r.end, g);
            let ours = if sc.threads.is_empty() {
                process.is_some_and(|p| sc.processes.contains(&p))
            } else {
                sc.threads.contains(&r.thread)
            };
            if ov > 0 && ours {
                let entry = a.entry(name).or_default();
                entry.0 += 1;
                entry.1 += ov;
            }
        }
    }
    acc
}

fn api_overlaps(
    ix: &RowIndex<'_>,
    gaps: &[GapSpan],
    scopes: &[Scope],
    (lo, hi): (Ns, Ns),
) -> Vec<Acc> {
    let mut acc: Vec<Acc> = vec![Acc::new(); gaps.len()];
    for c in ix.rows.calls().take_while(|c| c.start < hi) {
        if c.end <= lo {
            continue;
        }
        for ((g, sc), a) in gaps.iter().zip(scopes).zip(acc.iter_mut()) {
            let ov = overlap(c.start, c.end, g);
            if ov > 0 && sc.processes.contains(&c.process) {
                let entry = a.entry(c.name).or_default();
                entry.0 += 1;
                entry.1 += ov;
            }
        }
    }
    acc
}

/// Largest overlap first (ties by name), at most [`MAX_NAMES`], names read by `label`: the
/// calls of one PyTorch `emit_nvtx` op (`aten::mul, op_id = 7`, `aten::mul, op_id = 9`) are one
/// name, and so are the versions of one API (`cudaStreamSynchronize_v3020`).
fn ranked(ix: &RowIndex<'_>, acc: Acc, label: fn(&str) -> &str) -> Vec<Overlap> {
    let mut by_op: HashMap<&str, (u64, Ns)> = HashMap::new();
    for (name, (count, ns)) in acc {
        let e = by_op.entry(label(name_or_unnamed(ix, name))).or_default();
        *e = (e.0 + count, e.1 + ns);
    }
    let mut v: Vec<(Ns, &str, u64)> = by_op
        .into_iter()
        .map(|(name, (count, ns))| (ns, name, count))
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    v.into_iter()
        .take(MAX_NAMES)
        .map(|(ns, name, count)| Overlap {
            name: name.to_string(),
            count,
            overlap_us: ns as f64 / 1000.0,
        })
        .collect()
}

fn name_or_unnamed<'a>(ix: &RowIndex<'a>, name: NameId) -> &'a str {
    match ix.string(name) {
        "" => "(unnamed)",
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// The gap between kernels 0 and 1 of `t`, each launched on the first call's thread when
    /// `launched`.
    fn gap(t: &crate::model::Trace, launched: bool) -> GapSpan {
        let k = |i: usize| KernelRef {
            short_name: t.kernels.short_name[i],
            demangled_name: t.kernels.demangled_name[i],
            process: t.kernels.process[i],
            thread: launched.then(|| t.runtime.thread[0]),
        };
        GapSpan {
            start: 20,
            end: 100,
            kernels: [k(0), k(1)],
        }
    }

    #[test]
    fn a_gap_lists_overlapping_ranges_and_calls_by_overlap() {
        let mut b = TraceBuilder::new();
        let c1 = b.call("cudaLaunchKernel", 0, 5);
        b.kernel("k1", 10, 20, c1);
        b.range("step", 0, 1_000);
        b.range("prep", 30, 60);
        b.range("prep", 70, 80);
        b.range("before", 0, 19);
        b.call("cudaStreamSynchronize_v3020", 25, 95);
        let c2 = b.call("cudaLaunchKernel", 90, 95);
        b.kernel("k2", 100, 110, c2);
        let ix = RowIndex::loaded(&b.trace, "t", None);
        let a = attribute(&ix, &[gap(&b.trace, true)]);
        let names = |v: &[Overlap]| -> Vec<(String, u64, f64)> {
            v.iter()
                .map(|o| (o.name.clone(), o.count, o.overlap_us))
                .collect()
        };
        assert_eq!(
            names(&a[0].nvtx),
            vec![("step".into(), 1, 0.08), ("prep".into(), 2, 0.04)]
        );
        assert_eq!(
            names(&a[0].api),
            vec![
                ("cudaStreamSynchronize".into(), 1, 0.07),
                ("cudaLaunchKernel".into(), 1, 0.005)
            ]
        );
    }

    #[test]
    fn without_launch_calls_the_processes_threads_count() {
        let mut b = TraceBuilder::new();
        b.kernel("k1", 10, 20, 0);
        b.kernel("k2", 100, 110, 0);
        b.range("python", 30, 40);
        let ix = RowIndex::loaded(&b.trace, "t", None);
        let a = attribute(&ix, &[gap(&b.trace, false)]);
        assert_eq!(a[0].nvtx.len(), 1);
        assert!(a[0].api.is_empty());
    }
}
