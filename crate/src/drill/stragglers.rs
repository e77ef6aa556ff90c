//! Straggler ranks (reference §9.4, spec §4): collectives matched across ranks by their order
//! within each rank; per collective the rank whose kernel starts last; a rank last in more than
//! 80 % of collectives is flagged with its mean lateness.
//!
//! A rank is a (process, device) pair that ran collective kernels, in one trace or across
//! several files. Files are put on one clock through their session start
//! (`TARGET_INFO_SESSION_START_TIME.utcEpochNs`): file `i`'s times shift by
//! `utc_i − utc_0`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::index::Fold;
use crate::index::kernel_pass::kernel_pass;
use crate::index::rows::RowIndex;
use crate::index::units::{ratio, us};
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{Ns, ProcessIdx};

/// A rank is flagged when it arrives last in more than this share of collectives.
pub const STRAGGLER_SHARE: f64 = 0.8;

/// Which rank: its device, OS process id and file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankId {
    pub device: u32,
    pub pid: u32,
    pub file: String,
}

/// One rank's record over the matched collectives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankStats {
    #[serde(flatten)]
    pub rank: RankId,
    /// Collective kernels of this rank (matched or not).
    pub collective_kernels: u64,
    /// Matched collectives in which this rank arrived last.
    pub last: u64,
    pub share: f64,
    /// Mean (last arrival − first arrival) over the collectives this rank arrived last in.
    pub mean_lateness_us: f64,
    /// The collective this rank arrived latest at (of those it was last in; the first of a
    /// tie), so the page can show it on the rank's timeline; `None` when it was never last.
    pub worst: Option<StragglingCollective>,
}

/// One straggling collective: its kernel on the late rank, in that rank's file's own clock (the
/// absolute ns of its timeline, like every time of the drill-down), and how late it started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StragglingCollective {
    /// Its position among the rank's matched collectives, from 0.
    pub index: u64,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// Its start after the first rank's start of the same collective.
    pub lateness_us: f64,
}

/// The `stragglers` section of the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StragglerReport {
    /// The flagged rank (last in > 80 % of collectives), or `None`.
    pub rank: Option<RankId>,
    /// Share of collectives the most-often-last rank arrived last in (flagged or not).
    pub share: f64,
    pub mean_lateness_us: f64,
    /// Collectives matched across every rank.
    pub collectives: u64,
    pub ranks: Vec<RankStats>,
    pub threshold: f64,
    /// How several files were put on one clock, when they were.
    pub alignment: Option<String>,
    pub note: Option<String>,
}

/// One rank's collective kernels.
pub(crate) struct Rank {
    pub(crate) id: RankId,
    /// The input (file) it was read from.
    pub(crate) input: usize,
    /// Collective kernel starts on the common clock, ascending.
    pub(crate) arrivals: Vec<Ns>,
    /// The same kernels' ends on the common clock.
    pub(crate) ends: Vec<Ns>,
    /// The same kernels' `(start, end)` on their own file's clock.
    pub(crate) kernels: Vec<(Ns, Ns)>,
    /// The same kernels' names, as places in `name_list`.
    pub(crate) names: Vec<u32>,
    /// The distinct names of its collective kernels, in order of first use.
    pub(crate) name_list: Vec<String>,
}

impl Rank {
    /// The name of its collective kernel `i`.
    pub(crate) fn name(&self, i: usize) -> &str {
        let at = self.names.get(i).map_or(usize::MAX, |&n| n as usize);
        self.name_list.get(at).map_or("", String::as_str)
    }

    /// Its kernels matched to `other`'s: `(mine, theirs)` by name and place among the kernels
    /// of that name (the `k`-th `AllReduce` of one rank with the `k`-th of the other), in my
    /// order.
    pub(crate) fn matched_with(&self, other: &Rank) -> Vec<(usize, usize)> {
        let mut theirs: Vec<Vec<usize>> = vec![Vec::new(); other.name_list.len()];
        for (j, &n) in other.names.iter().enumerate() {
            if let Some(v) = theirs.get_mut(n as usize) {
                v.push(j);
            }
        }
        // My name `n` as a place in `other.name_list`.
        let place: Vec<Option<usize>> = self
            .name_list
            .iter()
            .map(|name| other.name_list.iter().position(|o| o == name))
            .collect();
        let mut seen = vec![0usize; self.name_list.len()];
        let mut out = Vec::new();
        for (i, &n) in self.names.iter().enumerate() {
            let n = n as usize;
            let Some(k) = seen.get_mut(n) else { continue };
            let j = place
                .get(n)
                .copied()
                .flatten()
                .and_then(|p| theirs.get(p)?.get(*k).copied());
            *k += 1;
            if let Some(j) = j {
                out.push((i, j));
            }
        }
        out
    }
}

/// How one file was put on the first file's clock by its collectives, after the session start
/// times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FileShift {
    /// The median difference of its collectives' ends from the first file's (subtracted from
    /// its times).
    pub(crate) offset_ns: Ns,
    /// The median distance of the differences from it.
    pub(crate) spread_ns: Ns,
    /// Collectives matched between one of its ranks and one of the first file's (the most).
    pub(crate) matched: u64,
}

/// One rank's tally over the collectives it arrived last in.
#[derive(Default, Clone, Copy)]
struct Tally {
    last: u64,
    late_ns: Ns,
    /// The latest of them: `(collective, lateness)`.
    worst: Option<(usize, Ns)>,
}

/// Stragglers over every rank of every input.
pub fn straggler_report(inputs: &[RowIndex<'_>]) -> StragglerReport {
    let (offsets, alignment) = clock_offsets(inputs);
    let mut ranks: Vec<Rank> = Vec::new();
    for (input, (ix, offset)) in inputs.iter().zip(offsets).enumerate() {
        let mut fold = RankFold::new(ix, input, offset);
        kernel_pass(ix, &mut [&mut fold]);
        ranks.extend(fold.finish());
    }
    report_of(ranks, alignment)
}

/// The report over every rank (of every input, in order), the files put on one clock as
/// `alignment` says.
pub(crate) fn report_of(mut ranks: Vec<Rank>, alignment: Option<String>) -> StragglerReport {
    let shifts = align_by_collectives(&mut ranks);
    let alignment = match said_of(&ranks, &shifts) {
        Some(by_ends) => Some(format!("{}, then {by_ends}", alignment.unwrap_or_default())),
        None => alignment,
    };
    let n = ranks.iter().map(|r| r.arrivals.len()).min().unwrap_or(0);
    let mut last = vec![Tally::default(); ranks.len()];
    if ranks.len() >= 2 {
        for c in 0..n {
            let (mut late, mut who, mut early) = (Ns::MIN, 0, Ns::MAX);
            for (r, rank) in ranks.iter().enumerate() {
                let t = rank.arrivals[c];
                if t > late {
                    (late, who) = (t, r);
                }
                early = early.min(t);
            }
            let tally = &mut last[who];
            tally.last += 1;
            tally.late_ns = tally.late_ns.saturating_add(late - early);
            if tally.worst.is_none_or(|(_, worst)| late - early > worst) {
                tally.worst = Some((c, late - early));
            }
        }
    }
    let collectives = if ranks.len() >= 2 { n as u64 } else { 0 };
    let stats: Vec<RankStats> = ranks
        .iter()
        .zip(&last)
        .map(|(r, tally)| RankStats {
            rank: r.id.clone(),
            collective_kernels: r.arrivals.len() as u64,
            last: tally.last,
            share: ratio(tally.last as f64, collectives as f64),
            mean_lateness_us: if tally.last > 0 {
                us(tally.late_ns) / tally.last as f64
            } else {
                0.0
            },
            worst: tally.worst.and_then(|(c, late)| {
                let &(start_ns, end_ns) = r.kernels.get(c)?;
                Some(StragglingCollective {
                    index: c as u64,
                    start_ns,
                    end_ns,
                    lateness_us: us(late),
                })
            }),
        })
        .collect();
    let candidate = stats
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.last, std::cmp::Reverse(*i)))
        .map(|(_, s)| s);
    StragglerReport {
        rank: candidate
            .filter(|s| s.share > STRAGGLER_SHARE)
            .map(|s| s.rank.clone()),
        share: candidate.map_or(0.0, |s| s.share),
        mean_lateness_us: candidate.map_or(0.0, |s| s.mean_lateness_us),
        collectives,
        note: note(&ranks, n),
        ranks: stats,
        threshold: STRAGGLER_SHARE,
        alignment,
    }
}

/// Puts every file after the first on the first one's clock by its collectives: matched
/// collective kernels end nearly together on every rank (each waits for its peers) while their
/// starts spread, so the median difference of their ends between a file's ranks and the first
/// file's is what the session start times left of the hosts' clock difference. Collectives
/// are matched by name and place among the kernels of that name. Ranks of one file share a
/// clock and are not moved. One entry per file (`None`: the first, or nothing matched).
pub(crate) fn align_by_collectives(ranks: &mut [Rank]) -> Vec<Option<FileShift>> {
    let files = ranks.iter().map(|r| r.input + 1).max().unwrap_or(0);
    let mut shifts = vec![None; files];
    for (input, shift) in shifts.iter_mut().enumerate().skip(1) {
        let mut diffs: Vec<Ns> = Vec::new();
        let mut matched = 0;
        for r in ranks.iter().filter(|r| r.input == input) {
            for q in ranks.iter().filter(|q| q.input == 0) {
                let pairs = r.matched_with(q);
                matched = matched.max(pairs.len() as u64);
                diffs.extend(
                    pairs
                        .iter()
                        .filter_map(|&(i, j)| Some(r.ends.get(i)? - q.ends.get(j)?)),
                );
            }
        }
        let Some(offset) = median(&mut diffs) else {
            continue;
        };
        let mut spread: Vec<Ns> = diffs.iter().map(|d| (d - offset).abs()).collect();
        let spread = median(&mut spread).unwrap_or(0);
        for r in ranks.iter_mut().filter(|r| r.input == input) {
            r.arrivals.iter_mut().for_each(|t| *t -= offset);
            r.ends.iter_mut().for_each(|t| *t -= offset);
        }
        *shift = Some(FileShift {
            offset_ns: offset,
            spread_ns: spread,
            matched,
        });
    }
    shifts
}

/// What [`align_by_collectives`] did, in words; `None` when it moved no file.
fn said_of(ranks: &[Rank], shifts: &[Option<FileShift>]) -> Option<String> {
    let said: Vec<String> = shifts
        .iter()
        .enumerate()
        .filter_map(|(input, s)| {
            let s = s.as_ref()?;
            let file = ranks
                .iter()
                .find(|r| r.input == input)
                .map_or(String::new(), |r| r.id.file.clone());
            Some(format!(
                "{file} {:+.1} µs (spread {:.1} µs over {} collectives)",
                us(-s.offset_ns),
                us(s.spread_ns),
                s.matched
            ))
        })
        .collect();
    (!said.is_empty()).then(|| {
        format!(
            "each file's clock corrected by the median difference of its collectives' ends from the first file's: {}",
            said.join(", ")
        )
    })
}

/// The median of `v` (the lower middle of an even count), `None` if empty.
fn median(v: &mut [Ns]) -> Option<Ns> {
    if v.is_empty() {
        return None;
    }
    let mid = (v.len() - 1) / 2;
    Some(*v.select_nth_unstable(mid).1)
}

/// Shift of each input onto the first input's clock.
pub(crate) fn clock_offsets(inputs: &[RowIndex<'_>]) -> (Vec<Ns>, Option<String>) {
    let starts: Vec<Option<i64>> = inputs
        .iter()
        .map(|ix| ix.meta().meta.session_start_utc_ns)
        .collect();
    clock_offsets_of(&starts)
}

/// [`clock_offsets`] from each input's session start (`utcEpochNs`, when it has one).
pub(crate) fn clock_offsets_of(starts: &[Option<i64>]) -> (Vec<Ns>, Option<String>) {
    if starts.len() < 2 {
        return (vec![0; starts.len()], None);
    }
    match (
        starts.iter().copied().collect::<Option<Vec<i64>>>(),
        starts.first(),
    ) {
        (Some(all), Some(&Some(first))) => (
            all.iter().map(|&s| s.saturating_sub(first)).collect(),
            Some("files aligned on TARGET_INFO_SESSION_START_TIME.utcEpochNs".into()),
        ),
        _ => (
            vec![0; starts.len()],
            Some("a file has no session start time: the files' clocks are assumed equal".into()),
        ),
    }
}

/// Every rank of one input, by device (ascending) then process (in order of its first
/// collective), as its kernels pass in start order; its times shift by `offset` onto the first
/// input's clock.
pub(crate) struct RankFold<'a, 't> {
    ix: &'a RowIndex<'t>,
    input: usize,
    offset: Ns,
    by_device: BTreeMap<u32, Vec<(ProcessIdx, Rank)>>,
}

impl<'a, 't> RankFold<'a, 't> {
    pub(crate) fn new(ix: &'a RowIndex<'t>, input: usize, offset: Ns) -> RankFold<'a, 't> {
        RankFold {
            ix,
            input,
            offset,
            by_device: BTreeMap::new(),
        }
    }

    pub(crate) fn finish(self) -> impl Iterator<Item = Rank> {
        let ranks = self.by_device.into_values().flatten();
        ranks.map(|(_, rank)| rank)
    }
}

impl Fold for RankFold<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, _: Option<&CallRow>) {
        if k.work != crate::model::Work::Kernel {
            return;
        }
        let ix = self.ix;
        if !ix.names.is_collective(k.short_name) {
            return;
        }
        let ranks = self.by_device.entry(k.device).or_default();
        let at = match ranks.iter().position(|(q, _)| *q == k.process) {
            Some(at) => at,
            None => {
                let pid = ix.meta().processes.pid.get(k.process as usize);
                let id = RankId {
                    device: k.device,
                    pid: pid.copied().unwrap_or(0),
                    file: ix.label.clone(),
                };
                let rank = Rank {
                    id,
                    input: self.input,
                    arrivals: Vec::new(),
                    ends: Vec::new(),
                    kernels: Vec::new(),
                    names: Vec::new(),
                    name_list: Vec::new(),
                };
                ranks.push((k.process, rank));
                ranks.len() - 1
            }
        };
        let rank = &mut ranks[at].1;
        rank.arrivals.push(k.start.saturating_add(self.offset));
        rank.ends.push(k.end.saturating_add(self.offset));
        rank.kernels.push((k.start, k.end));
        let name = ix.meta().strings.get(k.short_name);
        let n = match rank.name_list.iter().position(|m| m == name) {
            Some(n) => n,
            None => {
                rank.name_list.push(name.to_string());
                rank.name_list.len() - 1
            }
        };
        rank.names.push(n as u32);
    }
}

fn note(ranks: &[Rank], matched: usize) -> Option<String> {
    if ranks.len() < 2 {
        let ran = crate::format::counted(ranks.len() as u64, "rank", "ranks");
        return Some(format!(
            "{ran} ran collective (NCCL/allreduce) kernels: straggler detection needs at least two (drop one file per rank, or a multi-GPU trace)"
        ));
    }
    let most = ranks.iter().map(|r| r.arrivals.len()).max().unwrap_or(0);
    (most != matched).then(|| {
        format!(
            "ranks ran different numbers of collective kernels ({matched} to {most}): only the first {matched} of each rank were matched"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// A rank's file: its collective kernels `(start, end)` on its own clock.
    fn rank_file(session_start: i64, kernels: &[(i64, i64)]) -> crate::model::Trace {
        let mut b = TraceBuilder::new();
        for &(start, end) in kernels {
            b.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", start, end, 0);
        }
        b.trace.meta.session_start_utc_ns = Some(session_start);
        b.trace
    }

    #[test]
    fn files_are_put_on_one_clock_by_their_session_start() {
        // File b started 500 ns later: its local 600 is file a's 1100. Each collective ends
        // 50 ns after its last arrival on both ranks.
        let a = rank_file(1_000_000, &[(1_000, 1_150), (5_000, 5_050), (9_000, 9_050)]);
        let b = rank_file(1_000_500, &[(600, 650), (4_000, 4_550), (8_000, 8_550)]);
        let ix = [
            RowIndex::loaded(&a, "a", None),
            RowIndex::loaded(&b, "b", None),
        ];
        let s = straggler_report(&ix);
        assert_eq!(s.collectives, 3);
        let last: Vec<u64> = s.ranks.iter().map(|r| r.last).collect();
        assert_eq!(
            last,
            vec![2, 1],
            "a is last at 5000 vs 4500 and 9000 vs 8500"
        );
        assert_eq!(s.ranks[1].mean_lateness_us, 0.1);
        assert_eq!(s.ranks[0].mean_lateness_us, 0.5);
        assert_eq!(s.rank, None, "2 of 3 is not above 80 %");
        // a's latest: collective 1 (500 ns late, tied with 2: the first wins), at a's own 5000;
        // b's: collective 0, 100 ns late, at b's own 600 (1100 on a's clock).
        let worst: Vec<(u64, i64, i64, f64)> = s
            .ranks
            .iter()
            .filter_map(|r| r.worst)
            .map(|w| (w.index, w.start_ns, w.end_ns, w.lateness_us))
            .collect();
        assert_eq!(worst, vec![(1, 5_000, 5_050, 0.5), (0, 600, 650, 0.1)]);
        assert!((s.share - 2.0 / 3.0).abs() < 1e-12);
        let said = s.alignment.unwrap_or_default();
        assert!(
            said.contains("b +0.0 µs (spread 0.0 µs over 3 collectives)"),
            "{said}"
        );
    }

    #[test]
    fn a_clock_the_session_start_misses_is_corrected_by_the_collectives_ends() {
        // b's host clock runs 300 ns ahead of what its session start says: its kernels read
        // 300 ns late, so b seems last at every collective; their ends say by how much.
        let a = rank_file(0, &[(1_000, 1_200), (5_000, 5_200), (9_000, 9_200)]);
        let b = rank_file(0, &[(1_450, 1_500), (5_100, 5_500), (9_050, 9_500)]);
        let ix = [
            RowIndex::loaded(&a, "a", None),
            RowIndex::loaded(&b, "b", None),
        ];
        let s = straggler_report(&ix);
        let last: Vec<u64> = s.ranks.iter().map(|r| r.last).collect();
        assert_eq!(last, vec![2, 1], "b arrives 150 ns late once, a twice");
        assert_eq!(s.ranks[1].mean_lateness_us, 0.15);
        let said = s.alignment.unwrap_or_default();
        assert!(
            said.contains("b -0.3 µs (spread 0.0 µs over 3 collectives)"),
            "{said}"
        );
    }

    #[test]
    fn unequal_collective_counts_match_the_common_prefix() {
        let a = rank_file(0, &[(100, 200), (200, 300), (300, 350), (400, 450)]);
        let b = rank_file(0, &[(150, 200), (250, 300)]);
        let ix = [
            RowIndex::loaded(&a, "a", None),
            RowIndex::loaded(&b, "b", None),
        ];
        let s = straggler_report(&ix);
        assert_eq!(s.collectives, 2);
        assert_eq!(s.rank.map(|r| r.file), Some("b".to_string()));
        assert!(s.note.is_some_and(|n| n.contains("only the first 2")));
    }
}
