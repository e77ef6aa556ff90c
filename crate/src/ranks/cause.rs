//! Why the straggler was late (issue 50, item 4): for the rank that arrives last most often, the
//! span from its previous collective's end to its late arrival (its collective kernel's start),
//! at each collective it arrived last in, split by what nsys-lens measures on that rank, against
//! the same spans on the other ranks (their previous collective's end → their arrival at the
//! same collective).
//!
//! What a span holds is measured by the map ([`super::spans`], every span of every rank, written
//! into the summaries); this reduce picks the spans and sums them, in one process or over
//! summaries alike. Host side: each rank's spans are swept by the idle attribution's sweep
//! ([`crate::drill::idle::HostCauses`], [`crate::drill::idle::PRECEDENCE`]) as if they were gaps: every ns of a span
//! goes to the first cause with a host interval open over it (a call, an NVTX range, an
//! overhead record or an OS call of the processes launching on the rank's device), labelled by
//! its innermost interval (for `nvtx`, the host's own time in its innermost range: the NVTX op),
//! else to where the launching threads were (`cpu_busy`, `cpu_waiting`) or `untraced`. A rank's
//! host causes add up to its spans. GPU side: the time its device was busy inside its spans with
//! compute kernels, with copies and memsets, and with other collectives (each a union of its
//! work; they may overlap each other and the host's causes).
//!
//! Per cause: the straggler's time per span, the other ranks' mean time per span, and the
//! difference. Spans are durations on each rank's own clock, so no clock correction enters
//! them; the previous collectives end together on every rank, so the host causes' differences
//! add up to the straggler's mean span minus the others' ≈ its lateness.
//!
//! State: per rank the kernels whose spans count, and its time per (cause, label).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::Serialize;

use super::spans::{GPU, SpanCauses};
use super::{RankKernels, RanksReport};
use crate::drill::idle::CauseKind;
use crate::drill::stragglers::Rank;
use crate::index::units::{ratio, us};
use crate::model::Ns;

/// How many NVTX ops are listed, largest excess first.
pub const TOP_OPS: usize = 5;

/// Why the rank arriving last most often was late.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StragglerCause {
    /// The rank (a place in `ranks`) arriving last most often (ties: the first).
    pub rank: usize,
    /// Its name (as in `ranks`).
    pub name: String,
    /// Whether it is the report's `straggler` (last in more than `threshold` of its
    /// collectives).
    pub flagged: bool,
    /// The collectives it arrived last in, of `collectives` it took part in.
    pub late: u64,
    pub collectives: u64,
    pub last_share: f64,
    /// Its mean lateness over the `late` collectives.
    pub mean_lateness_us: f64,
    /// The late collectives measured: those with a collective before them on the straggler.
    pub spans: u64,
    /// The other ranks' spans measured (a rank without a collective before one has none there).
    pub other_spans: u64,
    /// The straggler's mean span (its previous collective's end → its arrival).
    pub span_us: f64,
    /// The other ranks' mean span at the same collectives.
    pub others_span_us: f64,
    /// Per cause: time per span on the straggler and the others' mean, largest excess first.
    pub causes: Vec<CauseRow>,
    /// The host's own time per NVTX op (innermost range, the `nvtx` cause) with the largest
    /// positive excess, at most [`TOP_OPS`].
    pub ops: Vec<OpRow>,
    /// One sentence: how late, how often, and the cause with the largest excess.
    pub sentence: String,
}

/// Which side measured a cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The idle attribution's causes of the host's time (they add up to the span).
    Host,
    /// The rank's device busy inside the span.
    Gpu,
}

/// One cause, per span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CauseRow {
    pub side: Side,
    /// Host: an idle cause's name (`nvtx`, `sync`, `launch`, `untraced` …); GPU: `compute`,
    /// `copies` or `collectives`.
    pub cause: String,
    /// The label holding most of the straggler's time in it (else the others'): an NVTX op, an
    /// API; `""` for the GPU and `untraced`.
    pub label: String,
    pub straggler_us: f64,
    pub others_us: f64,
    /// `straggler_us − others_us`.
    pub excess_us: f64,
}

/// One NVTX op's host time (the `nvtx` cause under that label), per span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    pub op: String,
    pub straggler_us: f64,
    pub others_us: f64,
    pub excess_us: f64,
}

/// What one rank's spans hold.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    spans: u64,
    span_ns: Ns,
    /// Host time per (cause, label).
    host: BTreeMap<(CauseKind, String), Ns>,
    /// Device busy time per [`GPU`] cause.
    gpu: [Ns; 3],
}

impl Measured {
    fn add(&mut self, other: &Measured) {
        self.spans += other.spans;
        self.span_ns = self.span_ns.saturating_add(other.span_ns);
        for (k, &ns) in &other.host {
            let e = self.host.entry(k.clone()).or_default();
            *e = e.saturating_add(ns);
        }
        for (a, b) in self.gpu.iter_mut().zip(other.gpu) {
            *a = a.saturating_add(b);
        }
    }

    /// Host time of `kind`, over every label.
    fn kind_ns(&self, kind: CauseKind) -> Ns {
        let of = self.host.iter().filter(|((k, _), _)| *k == kind);
        of.map(|(_, &ns)| ns).sum()
    }

    /// The label holding most of `kind`'s time (ties: the first name).
    fn top_label(&self, kind: CauseKind) -> Option<&str> {
        self.host
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .max_by_key(|&((_, l), &ns)| (ns, Reverse(l.as_str())))
            .map(|((_, l), _)| l.as_str())
    }

    /// `kind`'s time per span under each label (of either side): `(label, mine, theirs)`.
    fn labels_against<'m>(
        &'m self,
        other: &'m Measured,
        kind: CauseKind,
    ) -> Vec<(&'m str, f64, f64)> {
        let of = |m: &'m Measured| -> BTreeMap<&'m str, Ns> {
            m.host
                .iter()
                .filter(|((k, _), _)| *k == kind)
                .map(|((_, l), &ns)| (l.as_str(), ns))
                .collect()
        };
        let (a, b) = (of(self), of(other));
        let mut labels: Vec<&str> = a.keys().chain(b.keys()).copied().collect();
        labels.sort_unstable();
        labels.dedup();
        labels
            .into_iter()
            .map(|l| {
                let per = |m: &BTreeMap<&str, Ns>, spans: u64| {
                    ratio(us(m.get(l).copied().unwrap_or(0)), spans as f64)
                };
                (l, per(&a, self.spans), per(&b, other.spans))
            })
            .collect()
    }
}

/// The cause of the lateness of the rank arriving last most often in `report`, when one
/// arrived last at all: `ranks` on `report`'s clock, each with what its summary measured of its
/// spans (`kept`, in the same order).
pub(crate) fn explain(
    report: &RanksReport,
    ranks: &[Rank],
    kept: &[&RankKernels],
) -> Option<StragglerCause> {
    let (s, late) = late_spans(report, ranks)?;
    let measured: Vec<Measured> = ranks
        .iter()
        .zip(kept)
        .zip(&late)
        .map(|((rank, kept), at)| measured(rank, (&kept.causes, &kept.spans), at))
        .collect();
    explain_measured(report, s, &measured)
}

/// The rank arriving last most often in `report` (when one arrived last at all) and, per rank
/// of `ranks`, the kernels whose spans count ([`late_kernels`]).
pub(crate) fn late_spans(report: &RanksReport, ranks: &[Rank]) -> Option<(usize, Vec<Vec<usize>>)> {
    let (s, _) = report
        .ranks
        .iter()
        .enumerate()
        .max_by_key(|(i, r)| (r.last, Reverse(*i)))
        .filter(|(_, r)| r.last > 0)?;
    Some((s, late_kernels(ranks, s)))
}

/// [`explain`] from what each rank's spans at [`late_spans`] hold, measured (`s`: the rank
/// arriving last most often).
pub(crate) fn explain_measured(
    report: &RanksReport,
    s: usize,
    measured: &[Measured],
) -> Option<StragglerCause> {
    let summary = report.ranks.get(s)?;
    let straggler = measured.get(s)?;
    let mut others = Measured::default();
    for (r, m) in measured.iter().enumerate() {
        if r != s {
            others.add(m);
        }
    }
    let per = |ns: Ns, spans: u64| ratio(us(ns), spans as f64);
    let (n_s, n_o) = (straggler.spans, others.spans);
    let mut causes: Vec<CauseRow> = host_kinds(straggler, &others)
        .into_iter()
        .map(|kind| {
            // The label the straggler spends most more time in, else its largest.
            let excess = straggler
                .labels_against(&others, kind)
                .into_iter()
                .filter(|&(_, a, b)| a > b)
                .max_by(|x, y| (x.1 - x.2).total_cmp(&(y.1 - y.2)).then(y.0.cmp(x.0)))
                .map(|(l, _, _)| l);
            let label = excess
                .or_else(|| straggler.top_label(kind))
                .or_else(|| others.top_label(kind))
                .unwrap_or("");
            row(
                Side::Host,
                kind.name(),
                label,
                per(straggler.kind_ns(kind), n_s),
                per(others.kind_ns(kind), n_o),
            )
        })
        .collect();
    for (i, name) in GPU.iter().enumerate() {
        let (a, b) = (straggler.gpu[i], others.gpu[i]);
        if a > 0 || b > 0 {
            causes.push(row(Side::Gpu, name, "", per(a, n_s), per(b, n_o)));
        }
    }
    causes.sort_by(|a, b| {
        b.excess_us
            .total_cmp(&a.excess_us)
            .then(a.side.cmp(&b.side))
            .then(a.cause.cmp(&b.cause))
    });
    let ops = top_ops(straggler, &others);
    let mut cause = StragglerCause {
        rank: s,
        name: summary.rank.clone(),
        flagged: report.straggler == Some(s),
        late: summary.last,
        collectives: summary.collectives,
        last_share: summary.last_share,
        mean_lateness_us: summary.mean_lateness_us,
        spans: n_s,
        other_spans: n_o,
        span_us: per(straggler.span_ns, n_s),
        others_span_us: per(others.span_ns, n_o),
        causes,
        ops,
        sentence: String::new(),
    };
    cause.sentence = sentence(&cause);
    Some(cause)
}

fn row(side: Side, cause: &str, label: &str, straggler_us: f64, others_us: f64) -> CauseRow {
    CauseRow {
        side,
        cause: cause.to_string(),
        label: label.to_string(),
        straggler_us,
        others_us,
        excess_us: straggler_us - others_us,
    }
}

/// Every host cause measured on the straggler or the others, in precedence order.
fn host_kinds(a: &Measured, b: &Measured) -> Vec<CauseKind> {
    let mut kinds: Vec<CauseKind> = a.host.keys().chain(b.host.keys()).map(|k| k.0).collect();
    kinds.sort_by_key(|k| k.rank());
    kinds.dedup();
    kinds
}

/// The NVTX ops (labels of the `nvtx` cause) with the largest positive excess per span.
fn top_ops(straggler: &Measured, others: &Measured) -> Vec<OpRow> {
    let mut ops: Vec<OpRow> = straggler
        .labels_against(others, CauseKind::Nvtx)
        .into_iter()
        .map(|(op, s, o)| OpRow {
            op: op.to_string(),
            straggler_us: s,
            others_us: o,
            excess_us: s - o,
        })
        .filter(|o| o.excess_us > 0.0)
        .collect();
    ops.sort_by(|x, y| y.excess_us.total_cmp(&x.excess_us).then(x.op.cmp(&y.op)));
    ops.truncate(TOP_OPS);
    ops
}

/// The sentence: "rank 1 arrives 58.1 µs late in 90.2% of its collectives (119 of 132); over
/// those spans its host spent 54.6 µs more in `_prepare_inputs` than the other ranks' hosts".
fn sentence(c: &StragglerCause) -> String {
    use crate::format::{duration_us, percent};
    let head = format!(
        "{} arrives {} late in {} of its collectives ({} of {})",
        c.name,
        duration_us(c.mean_lateness_us),
        percent(c.last_share),
        c.late,
        c.collectives
    );
    let Some(top) = c.causes.first().filter(|r| r.excess_us > 0.0) else {
        return format!(
            "{head}; over those spans nothing measured on it took longer than on the other ranks"
        );
    };
    let x = duration_us(top.excess_us);
    let what = match (top.side, top.cause.as_str()) {
        (Side::Host, "nvtx") => match c.ops.first() {
            Some(op) => format!(
                "its host spent {} more in `{}`",
                duration_us(op.excess_us),
                op.op
            ),
            None => format!("its host spent {x} more in NVTX ranges"),
        },
        (Side::Host, cause) if top.label.is_empty() => format!("its host spent {x} more {cause}"),
        (Side::Host, cause) => format!("its host spent {x} more in {cause} (`{}`)", top.label),
        (Side::Gpu, "compute") => format!("its GPU computed {x} longer"),
        (Side::Gpu, "copies") => format!("its GPU copied {x} longer"),
        (Side::Gpu, _) => format!("its GPU ran other collectives {x} longer"),
    };
    let whose = match top.side {
        Side::Host => "hosts",
        Side::Gpu => "GPUs",
    };
    format!("{head}; over those spans {what} than the other ranks' {whose}")
}

/// Per rank: the kernels whose spans count at the collectives rank `s` arrived last in
/// (matched by name and place as `ranks` matches them; the first of a tie is last), each with a
/// collective before it on its rank, in its order.
fn late_kernels(ranks: &[Rank], s: usize) -> Vec<Vec<usize>> {
    let mut late: Vec<Vec<usize>> = vec![Vec::new(); ranks.len()];
    let Some(me) = ranks.get(s) else {
        return late;
    };
    // Per rank and name: the places of its kernels of that name.
    let places: Vec<BTreeMap<&str, Vec<usize>>> = ranks
        .iter()
        .map(|r| {
            let mut m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            (0..r.names.len()).for_each(|i| m.entry(r.name(i)).or_default().push(i));
            m
        })
        .collect();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..me.names.len() {
        let name = me.name(i);
        let k = {
            let e = seen.entry(name).or_default();
            *e += 1;
            *e - 1
        };
        // Every rank that ran `name`, and its `k`-th kernel of it: a collective when `k` is
        // below every such rank's count.
        let ran: Vec<(usize, Option<usize>)> = places
            .iter()
            .enumerate()
            .filter_map(|(r, m)| Some((r, m.get(name)?.get(k).copied())))
            .collect();
        if ran.len() < 2 || ran.iter().any(|(_, j)| j.is_none()) {
            continue;
        }
        let arrival = |r: usize, j: usize| ranks.get(r).and_then(|x| x.arrivals.get(j)).copied();
        let Some(mine) = arrival(s, i) else { continue };
        let last = ran.iter().all(|&(r, j)| {
            let t = j.and_then(|j| arrival(r, j)).unwrap_or(Ns::MIN);
            r == s || t < mine || (r > s && t <= mine)
        });
        if !last || i == 0 {
            continue;
        }
        for &(r, j) in &ran {
            if let (Some(j), Some(v)) = (j.filter(|&j| j > 0), late.get_mut(r)) {
                v.push(j);
            }
        }
    }
    late
}

/// What the spans before kernels `at` of `rank` hold, as its summary measured them
/// ([`super::spans`]): each span's length (0 when the previous kernel still ran), host time
/// per (cause, label) and GPU time, summed.
pub(crate) fn measured(
    rank: &Rank,
    (causes, spans): (&[(CauseKind, String)], &[SpanCauses]),
    at: &[usize],
) -> Measured {
    let mut m = Measured::default();
    for &j in at {
        m.spans += 1;
        let prev = j.checked_sub(1).and_then(|p| rank.kernels.get(p));
        let next = rank.kernels.get(j);
        if let (Some(prev), Some(next)) = (prev, next) {
            m.span_ns = m.span_ns.saturating_add((next.0 - prev.1).max(0));
        }
        let Some(span) = spans.get(j) else {
            continue;
        };
        for (a, &b) in m.gpu.iter_mut().zip(&span.gpu) {
            *a = a.saturating_add(b);
        }
        for &(place, ns) in &span.host {
            if let Some(key) = causes.get(place as usize) {
                let e = m.host.entry(key.clone()).or_default();
                *e = e.saturating_add(ns);
            }
        }
    }
    m
}

/// The cause as text (the `ranks` view's last section).
pub fn text(out: &mut String, c: &StragglerCause) {
    use crate::format::duration_us;
    use std::fmt::Write;
    let signed = |v: f64| {
        let sign = if v < 0.0 { "−" } else { "+" };
        format!("{sign}{}", duration_us(v.abs()))
    };
    let _ = writeln!(out);
    let _ = writeln!(out, "Why {} was late: {}", c.name, c.sentence);
    let _ = writeln!(
        out,
        "  previous collective's end → arrival: {} on it ({} spans), {} on the others ({} spans); per span:",
        duration_us(c.span_us),
        c.spans,
        duration_us(c.others_span_us),
        c.other_spans
    );
    let _ = writeln!(
        out,
        "  {:<5} {:<12} {:<32} {:>11} {:>11} {:>11}",
        "side", "cause", "label", "it", "others", "excess"
    );
    for r in &c.causes {
        let side = match r.side {
            Side::Host => "host",
            Side::Gpu => "GPU",
        };
        let _ = writeln!(
            out,
            "  {side:<5} {:<12} {:<32} {:>11} {:>11} {:>11}",
            r.cause,
            r.label,
            duration_us(r.straggler_us),
            duration_us(r.others_us),
            signed(r.excess_us)
        );
    }
    if !c.ops.is_empty() {
        let _ = writeln!(out, "  NVTX ops (host's own time), largest excess first:");
        for o in &c.ops {
            let _ = writeln!(
                out,
                "    {}: {} vs {} ({})",
                o.op,
                duration_us(o.straggler_us),
                duration_us(o.others_us),
                signed(o.excess_us)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::spans::SpanCauses;

    /// A rank on `device` whose collective kernels `(start, end)` are all named `a`.
    fn rank(device: u32, kernels: &[(Ns, Ns)]) -> Rank {
        Rank {
            id: crate::drill::stragglers::RankId {
                device,
                pid: 1,
                file: String::new(),
            },
            input: 0,
            arrivals: kernels.iter().map(|k| k.0).collect(),
            ends: kernels.iter().map(|k| k.1).collect(),
            kernels: kernels.to_vec(),
            names: vec![0; kernels.len()],
            name_list: vec!["a".into()],
        }
    }

    #[test]
    fn spans_are_taken_where_the_rank_was_last_ties_to_the_first() {
        let ranks = [
            rank(0, &[(0, 10), (20, 30), (40, 50)]),
            rank(1, &[(0, 10), (25, 30), (40, 50)]),
        ];
        // Collective 0: a tie (rank 0's); 1: rank 1 last; 2: a tie again.
        assert_eq!(late_kernels(&ranks, 1), vec![vec![1], vec![1]]);
        // Rank 0 is last at the ties: the first has no collective before it.
        assert_eq!(late_kernels(&ranks, 0), vec![vec![2], vec![2]]);
    }

    #[test]
    fn the_chosen_spans_sum_what_the_summary_measured() {
        let r = rank(0, &[(0, 10), (20, 30), (25, 50), (60, 70)]);
        let kept = RankKernels {
            pid: 1,
            device: 0,
            nccl: None,
            gpu_bound: None,
            gpu_idle_ratio: None,
            verdict: None,
            names: vec!["a".into()],
            kernels: vec![(0, 10, 0), (20, 30, 0), (25, 50, 0), (60, 70, 0)],
            causes: vec![
                (CauseKind::Nvtx, "prep".into()),
                (CauseKind::Sync, "s".into()),
            ],
            spans: vec![
                SpanCauses::default(),
                SpanCauses {
                    gpu: [4, 0, 0],
                    host: vec![(0, 7), (1, 3)],
                },
                SpanCauses::default(),
                SpanCauses {
                    gpu: [1, 2, 0],
                    host: vec![(0, 10)],
                },
            ],
        };
        // Kernel 2 started before kernel 1 ended: its span is empty, but counted.
        let m = measured(&r, (&kept.causes, &kept.spans), &[1, 2, 3]);
        assert_eq!((m.spans, m.span_ns), (3, 10 + 10));
        assert_eq!(m.gpu, [5, 2, 0]);
        assert_eq!(m.host[&(CauseKind::Nvtx, "prep".to_string())], 17);
        assert_eq!(m.host[&(CauseKind::Sync, "s".to_string())], 3);
    }
}
