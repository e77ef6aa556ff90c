//! Every rank, one answer (issue 50): the ranks of one or several exports, put on one clock by
//! their collectives, and per collective who arrived last, how far apart the ranks arrived and
//! how long the transfer itself took.
//!
//! A rank is a (file, process, device) that ran collective (NCCL) kernels, named by what the
//! trace says ([`names`]). Collectives are matched by name and place: the `k`-th kernel of a
//! name on each rank that ran that name. Files are put on the first file's clock by their
//! session start times, then by the median difference of matched collectives' ends
//! ([`crate::drill::stragglers`]: matched kernels end together, their starts spread); ranks of
//! one file share its clock and are never moved.
//!
//! Per collective: the earliest and latest arrival (kernel start), the skew (latest −
//! earliest), the transfer time (the shortest duration across ranks, TraceLens's latency: the
//! rank that arrived last waits for no one) and the rank that arrived last (the first of a
//! tie). Per rank: the time its collective kernels spent waiting for the others (its duration
//! − the transfer time) and transferring, the share of its collectives it arrived last in, and
//! its mean and worst lateness over those.
//!
//! The answer is a map and a reduce ([`summary`]): each file [`summarize`]d (its ranks'
//! collective kernels, names, bounds and session start, and what the span before each kernel
//! holds), then the summaries [`merge`]d. Over hundreds of ranks the map runs where the files
//! lie (`nsys-lens ranks --summary`, `examples/ranks_dask.py`) and the reduce reads the
//! summaries; the CLI's one-shot `ranks` runs both. With every file at hand (the page),
//! [`ranks`] reads each file twice instead, to the same answer: the kernels first, then only
//! the spans the cause counts, so no rank's spans are held.
//!
//! State: each rank's collective kernels (as the straggler view keeps them), a bounded list of
//! the worst collectives and per collective its skew (the statistics), first arrival and last rank
//! (the skew chart).

pub mod cause;
pub mod device;
pub mod names;
pub mod spans;
pub mod summary;
pub mod text;

use serde::Serialize;

use crate::detect::bound::BoundKind;
use crate::detect::{DetectConfig, DetectReport, detect_rows};
use crate::drill::stragglers::{self, FileShift, Rank, RankFold};
use crate::drill::{DrillInput, RowIndex, index_inputs};
use crate::error::Result;
use crate::index::kernel_pass::kernel_pass;
use crate::index::units::{ratio, us};
use crate::model::Ns;

pub use names::NamedBy;
pub use summary::{FileSummary, NcclName, RankKernels, SUMMARY_KIND, SUMMARY_VERSION};

/// How many of the worst collectives (largest skew) are listed.
pub const WORST_LISTED: usize = 10;

/// The `ranks` view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RanksReport {
    pub files: Vec<String>,
    pub ranks: Vec<RankSummary>,
    pub collectives: Collectives,
    pub clock: Clock,
    /// The rank (a place in `ranks`) last in more than [`stragglers::STRAGGLER_SHARE`] of its
    /// collectives, if one is.
    pub straggler: Option<usize>,
    pub threshold: f64,
    /// Why the rank arriving last most often was late ([`cause`]); `null` when none was last.
    pub cause: Option<cause::StragglerCause>,
    /// What could not be matched or named, in words.
    pub notes: Vec<String>,
}

/// One rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankSummary {
    pub file: String,
    pub pid: u32,
    /// The device its collective kernels ran on (`deviceId`).
    pub device: u32,
    /// Its name: `rank 3`, or `pid 50002 GPU 1` when nothing names it.
    pub rank: String,
    /// The rank number, when NCCL or the file name gives one.
    pub rank_number: Option<u32>,
    /// The size of the communicator NCCL named it in.
    pub nranks: Option<u32>,
    pub named_by: NamedBy,
    /// Its collective kernels, matched or not.
    pub collective_kernels: u64,
    /// Matched collectives it took part in.
    pub collectives: u64,
    /// Of those, the ones it arrived last in.
    pub last: u64,
    pub last_share: f64,
    /// Mean (its arrival − the first arrival) over the collectives it arrived last in.
    pub mean_lateness_us: f64,
    /// The largest of them.
    pub worst_lateness_us: f64,
    /// Its matched collective kernels' time beyond the transfer: waiting for the others.
    pub waiting_us: f64,
    /// Their transfer time (the shortest duration of each collective).
    pub transferring_us: f64,
    /// What bounds its file's run (`detect`'s bound: its verdict, then the GPU work of every
    /// device of the file); `null` when detect could not tell.
    pub bound: Option<BoundKind>,
    /// What fills its own device's time (compute, communication, transfers, mixed; never
    /// host-bound): detect's bound rule over its device's GPU work in its file's window.
    pub gpu_bound: Option<BoundKind>,
    /// Its device's idle share of its file's window: `detect`'s `per_device[].gpu_idle_ratio`
    /// (the window less the union of the device's kernels, copies and memsets); `null` when
    /// detect could not tell.
    pub gpu_idle_ratio: Option<f64>,
    /// Its verdict in detect's words ([`device`]): detect's verdict is per file, so it is its
    /// file's host-overhead verdict (`host-bound` when YES), else its `gpu_bound`, with its
    /// device's shares of the window (`GPU-compute-bound — kernels and graph replays fill most
    /// of the busy time; of the window's device time, …, idle 8.7%`); `null` when detect could
    /// not tell.
    pub verdict: Option<String>,
}

/// The matched collectives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Collectives {
    pub count: u64,
    pub skew_us: Stats,
    pub transfer_us: Stats,
    /// Per kernel name, in order of first use.
    pub by_name: Vec<NameSummary>,
    /// The [`WORST_LISTED`] largest skews, largest first (ties: the earlier first).
    pub worst: Vec<CollectiveRow>,
    /// Every collective in order of its first arrival: what the skew chart draws (one entry a
    /// collective, so left out of the JSON).
    #[serde(skip)]
    pub sequence: Vec<CollectiveSkew>,
}

/// One collective as the skew chart draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveSkew {
    /// Its first arrival, on the first file's clock.
    pub first_arrival_ns: Ns,
    pub skew_ns: Ns,
    /// The rank that arrived last (a place in `ranks`).
    pub last_rank: usize,
}

/// Mean, median, 90th percentile (nearest rank) and largest; all 0 without collectives.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Stats {
    pub mean: f64,
    pub median: f64,
    pub p90: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameSummary {
    pub name: String,
    pub count: u64,
    /// Ranks that ran it.
    pub ranks: u64,
    pub mean_skew_us: f64,
    pub max_skew_us: f64,
    pub mean_transfer_us: f64,
}

/// One matched collective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveRow {
    pub name: String,
    /// Its place among the collectives of its name, from 0.
    pub index: u64,
    /// The first and last arrival, on the first file's clock.
    pub first_arrival_ns: Ns,
    pub last_arrival_ns: Ns,
    pub skew_us: f64,
    pub transfer_us: f64,
    /// The rank that arrived last (a place in `ranks`).
    pub last_rank: usize,
    /// Its kernel's start on its own file's clock (where to look in that file).
    pub last_start_ns: Ns,
}

/// How the files were put on one clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    /// Per file: the ns added to its times to put them on the first file's clock (file 0: 0):
    /// `session_start_ns + correction_ns`.
    pub offset_ns: Vec<Ns>,
    /// Per file: its session start after the first file's
    /// (`TARGET_INFO_SESSION_START_TIME.utcEpochNs`).
    pub session_start_ns: Vec<Ns>,
    /// Per file: what its collectives' ends moved it by beyond that (0 when not moved).
    pub correction_ns: Vec<Ns>,
    /// Per file: the median distance of its collectives' end differences from the correction.
    pub spread_ns: Vec<Ns>,
    /// Per file: the collectives the correction rests on.
    pub matched: Vec<u64>,
    pub method: String,
}

/// The ranks of `inputs` (one export, or one per rank or node), the same answer as [`merge`]
/// over their summaries, in two reads of each input that hold one input's index at a time:
/// the first summarizes its ranks without their spans ([`summarize_kernels`]), which settles
/// every figure but the cause and which rank was late where; the second measures only the
/// spans the cause counts (`cause::late_spans`), each rank's folded into its sums at once.
/// Memory is then the ranks' collective kernels and one input's spans, not every rank's spans
/// (about 120 bytes per collective kernel). Fails when there is no input, an input has no
/// kernels or a read failed.
///
/// The hooks let a caller that holds state reuse it (the page's open traces):
/// - `kept(i, input)`: input `i`'s index under its built-in step marker when the caller holds it
///   (the page keeps Root cause's), else `None` and it is read here;
/// - `each(i, index)`: input `i`'s index once its first read is summarized, to keep or drop;
/// - `verdict(i, cfg)`: input `i`'s verdict under `cfg` when the caller holds it (the page keeps
///   the verdict it shows), else `None` and it is computed here.
pub fn ranks_seeing<'t>(
    inputs: &[DrillInput<'t>],
    mut kept: impl FnMut(usize, &DrillInput<'t>) -> Option<RowIndex<'t>>,
    mut each: impl FnMut(usize, RowIndex<'t>),
    mut verdict: impl FnMut(usize, &DetectConfig) -> Option<DetectReport>,
) -> Result<(RanksReport, Vec<FileSummary>)> {
    if inputs.is_empty() {
        return Err(crate::error::Error::Usage(
            "ranks needs at least one trace".into(),
        ));
    }
    let summaries = inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let ix = match kept(i, input) {
                Some(ix) => ix,
                None => index_one(input)?,
            };
            let held = verdict(i, &detect_config(&ix));
            let summary = summarize_with(&ix, false, held);
            each(i, ix);
            summary
        })
        .collect::<Result<Vec<FileSummary>>>()?;
    let (mut report, all) = reduce(&summaries)?;
    if let Some((s, late)) = cause::late_spans(&report, &all) {
        let mut measured = Vec::with_capacity(all.len());
        let mut first = 0;
        for (input, summary) in inputs.iter().zip(&summaries) {
            let n = summary.ranks.len();
            let (ranks, at) = (&all[first..first + n], &late[first..first + n]);
            measured.extend(measure_late(input, summary, ranks, at)?);
            first += n;
        }
        report.cause = cause::explain_measured(&report, s, &measured);
    }
    Ok((report, summaries))
}

/// [`ranks_seeing`], the answer alone.
pub fn ranks(inputs: &[DrillInput<'_>]) -> Result<RanksReport> {
    Ok(ranks_seeing(inputs, |_, _| None, |_, _| {}, |_, _| None)?.0)
}

/// One input indexed. Fails when it has no kernels or a read failed.
fn index_one<'t>(input: &DrillInput<'t>) -> Result<RowIndex<'t>> {
    index_inputs(std::slice::from_ref(input))?
        .into_iter()
        .next()
        .ok_or_else(|| crate::error::Error::Usage("ranks needs at least one trace".into()))
}

/// What the spans before `at` hold on each rank of one input (its `summary`, its `ranks` on the
/// common clock), summed per rank: the input read again when a rank has such a span.
fn measure_late(
    input: &DrillInput<'_>,
    summary: &FileSummary,
    ranks: &[Rank],
    at: &[Vec<usize>],
) -> Result<Vec<cause::Measured>> {
    if at.iter().all(Vec::is_empty) {
        return Ok(ranks.iter().map(|_| cause::Measured::default()).collect());
    }
    let kernels: Vec<Vec<(Ns, Ns)>> = summary
        .ranks
        .iter()
        .map(|r| r.kernels.iter().map(|&(s, e, _)| (s, e)).collect())
        .collect();
    let sorted: Vec<Vec<usize>> = at
        .iter()
        .map(|v| {
            let mut v = v.clone();
            v.sort_unstable();
            v
        })
        .collect();
    let asks: Vec<spans::SpanAsk<'_>> = summary
        .ranks
        .iter()
        .zip(&kernels)
        .zip(&sorted)
        .map(|((r, k), only)| spans::SpanAsk {
            device: r.device,
            kernels: k,
            only: Some(only),
        })
        .collect();
    let ix = index_one(input)?;
    let measured = spans::measure(&ix, &asks);
    ix.rows.check()?;
    Ok(ranks
        .iter()
        .zip(&measured)
        .zip(at)
        .map(|((rank, m), at)| cause::measured(rank, (&m.causes, &m.spans), at))
        .collect())
}

/// The map over one input: indexed, then [`summarize`]d. Fails when it has no kernels or a read
/// failed.
pub fn summarize_input(input: &DrillInput<'_>) -> Result<FileSummary> {
    summarize(&index_one(input)?)
}

/// [`ranks`] over traces already indexed: each trace summarized ([`summarize`], the map), then
/// the summaries merged ([`merge`], the reduce) — the one path of the answer, in one process or
/// over many.
pub fn ranks_indexed(indexed: &[RowIndex<'_>]) -> Result<RanksReport> {
    let summaries = indexed
        .iter()
        .map(summarize)
        .collect::<Result<Vec<FileSummary>>>()?;
    merge(&summaries)
}

/// The map: what the ranks of one indexed trace need from it — per rank its collective kernels
/// on the file's own clock (one pass over its kernels), what the span before each holds ([`spans`]: a pass over its GPU work, a sweep of its host intervals),
/// what NCCL named it, and what `detect` says of the file's run and of its device ([`device`]).
/// Fails when a read failed.
pub fn summarize(ix: &RowIndex<'_>) -> Result<FileSummary> {
    summarize_with(ix, true, None)
}

/// [`summarize`] without the spans (`causes` and `spans` empty): what the first read of
/// [`ranks_seeing`] keeps.
pub fn summarize_kernels(ix: &RowIndex<'_>) -> Result<FileSummary> {
    summarize_with(ix, false, None)
}

/// The verdict a summary reports of its file and devices: `detect`'s defaults under the
/// index's step marker.
fn detect_config(ix: &RowIndex<'_>) -> DetectConfig {
    DetectConfig {
        file_label: ix.label.clone(),
        step_marker: ix.step_marker.clone(),
        ..DetectConfig::default()
    }
}

/// [`summarize`], with or without the spans; `held`: the file's verdict under
/// [`detect_config`] when the caller has it.
fn summarize_with(
    ix: &RowIndex<'_>,
    with_spans: bool,
    held: Option<DetectReport>,
) -> Result<FileSummary> {
    let mut fold = RankFold::new(ix, 0, 0);
    kernel_pass(ix, &mut [&mut fold]);
    let detect = held.or_else(|| detect_rows(ix.rows, &detect_config(ix)).ok());
    let bound = detect
        .as_ref()
        .and_then(|d| d.bound.as_ref())
        .map(|b| b.kind);
    let found: Vec<Rank> = fold.finish().collect();
    let spans = match with_spans {
        true => {
            let asks: Vec<spans::SpanAsk<'_>> = found.iter().map(spans::SpanAsk::every).collect();
            spans::measure(ix, &asks)
        }
        false => found.iter().map(|_| spans::RankSpans::default()).collect(),
    };
    ix.rows.check()?;
    let said = &ix.meta().meta.nccl_ranks;
    let ranks = found
        .into_iter()
        .zip(spans)
        .map(|(r, s)| {
            let device = device::figures(detect.as_ref(), r.id.device);
            RankKernels {
                pid: r.id.pid,
                device: r.id.device,
                nccl: names::by_nccl(said, r.id.pid, r.id.device).and_then(|n| {
                    Some(NcclName {
                        rank: n.number?,
                        nranks: n.nranks?,
                    })
                }),
                gpu_bound: device.gpu_bound,
                gpu_idle_ratio: device.gpu_idle_ratio,
                verdict: device.verdict,
                kernels: r
                    .kernels
                    .iter()
                    .zip(&r.names)
                    .map(|(&(start, end), &name)| (start, end, name))
                    .collect(),
                names: r.name_list,
                causes: s.causes,
                spans: s.spans,
            }
        })
        .collect();
    Ok(FileSummary {
        kind: SUMMARY_KIND.to_string(),
        summary_version: SUMMARY_VERSION,
        file: ix.label.clone(),
        session_start_utc_ns: ix.meta().meta.session_start_utc_ns,
        bound,
        ranks,
    })
}

/// The reduce: the ranks of the files `summaries` summarize, in their order, and why the rank
/// arriving last most often was late ([`cause`], from the spans the summaries measured) — the
/// same answer as [`ranks`] over the files themselves. Fails when there is no summary.
pub fn merge(summaries: &[FileSummary]) -> Result<RanksReport> {
    let (mut report, all) = reduce(summaries)?;
    let measured: Vec<&RankKernels> = summaries.iter().flat_map(|f| &f.ranks).collect();
    report.cause = cause::explain(&report, &all, &measured);
    Ok(report)
}

/// [`merge`] but the cause: the answer and its ranks on the common clock, in the summaries'
/// order.
fn reduce(summaries: &[FileSummary]) -> Result<(RanksReport, Vec<Rank>)> {
    if summaries.is_empty() {
        return Err(crate::error::Error::Usage(
            "ranks needs at least one export or summary".into(),
        ));
    }
    let session: Vec<Option<Ns>> = summaries.iter().map(|f| f.session_start_utc_ns).collect();
    let (starts, said) = stragglers::clock_offsets_of(&session);
    let kept: Vec<(usize, &RankKernels)> = summaries
        .iter()
        .enumerate()
        .flat_map(|(input, f)| f.ranks.iter().map(move |r| (input, r)))
        .collect();
    let mut all: Vec<Rank> = kept
        .iter()
        .map(|&(input, r)| {
            let file = summaries.get(input).map_or("", |f| f.file.as_str());
            r.rank(file, input, starts.get(input).copied().unwrap_or(0))
        })
        .collect();
    let shifts = stragglers::align_by_collectives(&mut all);
    let clock = clock_of(&starts, &shifts, said, summaries.len());
    let mut report = report_of(&all, clock);
    report.files = summaries.iter().map(|f| f.file.clone()).collect();
    let named = name_ranks(&kept, &all);
    for (((summary, rank), (_, kept)), named) in
        report.ranks.iter_mut().zip(&all).zip(&kept).zip(named)
    {
        summary.bound = summaries.get(rank.input).and_then(|f| f.bound);
        summary.gpu_bound = kept.gpu_bound;
        summary.gpu_idle_ratio = kept.gpu_idle_ratio;
        summary.verdict = kept.verdict.clone();
        summary.rank = named.name;
        summary.rank_number = named.number;
        summary.nranks = named.nranks;
        summary.named_by = named.by;
    }
    Ok((report, all))
}

/// The clock section from the session-start shifts and the collectives' corrections.
fn clock_of(
    starts: &[Ns],
    shifts: &[Option<FileShift>],
    said: Option<String>,
    files: usize,
) -> Clock {
    let shift = |i: usize| shifts.get(i).copied().flatten();
    let correction: Vec<Ns> = (0..files)
        .map(|i| shift(i).map_or(0, |s| -s.offset_ns))
        .collect();
    let session: Vec<Ns> = (0..files)
        .map(|i| starts.get(i).copied().unwrap_or(0))
        .collect();
    let method = match (files, shifts.iter().any(Option::is_some)) {
        (0 | 1, _) => "one export: one clock, no correction".to_string(),
        (_, true) => format!(
            "{}, then each file moved by the median difference of its matched collectives' ends from the first file's",
            said.unwrap_or_default()
        ),
        (_, false) => format!(
            "{}; no collective matched the first file's: no correction",
            said.unwrap_or_default()
        ),
    };
    Clock {
        offset_ns: session
            .iter()
            .zip(&correction)
            .map(|(s, c)| s.saturating_add(*c))
            .collect(),
        session_start_ns: session,
        correction_ns: correction,
        spread_ns: (0..files)
            .map(|i| shift(i).map_or(0, |s| s.spread_ns))
            .collect(),
        matched: (0..files)
            .map(|i| shift(i).map_or(0, |s| s.matched))
            .collect(),
        method,
    }
}

/// Each rank's name: NCCL's payload in its process, else a rank number in its file's name (the
/// file holding it alone, the number used by no other file), else its process and device.
fn name_ranks(kept: &[(usize, &RankKernels)], ranks: &[Rank]) -> Vec<names::Named> {
    let alone = |input: usize| ranks.iter().filter(|r| r.input == input).count() == 1;
    let from_file: Vec<Option<u32>> = ranks
        .iter()
        .map(|r| {
            alone(r.input)
                .then(|| names::number_in_file_name(&r.id.file))
                .flatten()
        })
        .collect();
    ranks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if let Some(n) = kept.get(i).and_then(|(_, k)| k.nccl) {
                return names::by_nccl_name(n.rank, n.nranks);
            }
            let n = from_file.get(i).copied().flatten();
            let unique = n.is_some() && from_file.iter().filter(|m| **m == n).count() == 1;
            match n {
                Some(n) if unique => names::Named {
                    name: format!("rank {n}"),
                    number: Some(n),
                    nranks: None,
                    by: NamedBy::FileName,
                },
                _ => names::by_process(r.id.pid, r.id.device),
            }
        })
        .collect()
}

/// One rank's tally over the matched collectives.
#[derive(Default, Clone, Copy)]
struct Tally {
    collectives: u64,
    last: u64,
    late_ns: Ns,
    worst_ns: Ns,
    waiting_ns: Ns,
    transfer_ns: Ns,
}

/// Per name: its collectives' count, skew and transfer sums, largest skew and ranks.
#[derive(Default)]
struct NameTally {
    count: u64,
    ranks: u64,
    skew_ns: Ns,
    max_skew_ns: Ns,
    transfer_ns: Ns,
}

/// The report over ranks already on one clock (names and bounds filled in by the caller).
fn report_of(ranks: &[Rank], clock: Clock) -> RanksReport {
    let mut tally = vec![Tally::default(); ranks.len()];
    let mut skews: Vec<Ns> = Vec::new();
    let mut sequence: Vec<CollectiveSkew> = Vec::new();
    let mut transfers: Vec<Ns> = Vec::new();
    let mut worst: Vec<CollectiveRow> = Vec::new();
    let mut by_name: Vec<(String, NameTally)> = Vec::new();
    let mut notes = Vec::new();
    for name in distinct_names(ranks) {
        // Each rank that ran `name`: the places of its kernels of that name.
        let places: Vec<(usize, Vec<usize>)> = ranks
            .iter()
            .enumerate()
            .map(|(r, rank)| {
                let at: Vec<usize> = (0..rank.names.len())
                    .filter(|&i| rank.name(i) == name)
                    .collect();
                (r, at)
            })
            .filter(|(_, at)| !at.is_empty())
            .collect();
        if places.len() < 2 {
            continue;
        }
        let n = places.iter().map(|(_, at)| at.len()).min().unwrap_or(0);
        let most = places.iter().map(|(_, at)| at.len()).max().unwrap_or(0);
        if most != n {
            notes.push(format!(
                "{name}: ranks ran {n} to {most} kernels: only the first {n} of each were matched"
            ));
        }
        let mut nt = NameTally {
            ranks: places.len() as u64,
            ..NameTally::default()
        };
        for c in 0..n {
            let kernel = |(r, at): &(usize, Vec<usize>)| {
                let rank = ranks.get(*r)?;
                let i = *at.get(c)?;
                Some((
                    *r,
                    *rank.arrivals.get(i)?,
                    *rank.ends.get(i)?,
                    rank.kernels.get(i)?.0,
                ))
            };
            let ks: Vec<(usize, Ns, Ns, Ns)> = places.iter().filter_map(kernel).collect();
            let (Some(early), Some(transfer)) = (
                ks.iter().map(|k| k.1).min(),
                ks.iter().map(|k| k.2 - k.1).min(),
            ) else {
                continue;
            };
            let (mut late, mut who, mut own_start) = (Ns::MIN, 0, 0);
            for &(r, start, end, own) in &ks {
                if start > late {
                    (late, who, own_start) = (start, r, own);
                }
                if let Some(t) = tally.get_mut(r) {
                    t.collectives += 1;
                    t.waiting_ns = t.waiting_ns.saturating_add(end - start - transfer);
                    t.transfer_ns = t.transfer_ns.saturating_add(transfer);
                }
            }
            let skew = late - early;
            if let Some(t) = tally.get_mut(who) {
                t.last += 1;
                t.late_ns = t.late_ns.saturating_add(skew);
                t.worst_ns = t.worst_ns.max(skew);
            }
            skews.push(skew);
            sequence.push(CollectiveSkew {
                first_arrival_ns: early,
                skew_ns: skew,
                last_rank: who,
            });
            transfers.push(transfer);
            nt.count += 1;
            nt.skew_ns = nt.skew_ns.saturating_add(skew);
            nt.max_skew_ns = nt.max_skew_ns.max(skew);
            nt.transfer_ns = nt.transfer_ns.saturating_add(transfer);
            keep_worst(
                &mut worst,
                CollectiveRow {
                    name: name.clone(),
                    index: c as u64,
                    first_arrival_ns: early,
                    last_arrival_ns: late,
                    skew_us: us(skew),
                    transfer_us: us(transfer),
                    last_rank: who,
                    last_start_ns: own_start,
                },
            );
        }
        by_name.push((name, nt));
    }
    if ranks.len() < 2 {
        let ran = crate::format::counted(ranks.len() as u64, "rank", "ranks");
        notes.push(format!(
            "{ran} ran collective (NCCL) kernels: lining ranks up needs at least two (give one file per rank, or an export holding several)"
        ));
    }
    let summaries: Vec<RankSummary> = ranks
        .iter()
        .zip(&tally)
        .map(|(r, t)| {
            let named = names::by_process(r.id.pid, r.id.device);
            RankSummary {
                file: r.id.file.clone(),
                pid: r.id.pid,
                device: r.id.device,
                rank: named.name,
                rank_number: None,
                nranks: None,
                named_by: named.by,
                collective_kernels: r.arrivals.len() as u64,
                collectives: t.collectives,
                last: t.last,
                last_share: ratio(t.last as f64, t.collectives as f64),
                mean_lateness_us: ratio(us(t.late_ns), t.last as f64),
                worst_lateness_us: us(t.worst_ns),
                waiting_us: us(t.waiting_ns),
                transferring_us: us(t.transfer_ns),
                bound: None,
                gpu_bound: None,
                gpu_idle_ratio: None,
                verdict: None,
            }
        })
        .collect();
    let straggler = summaries
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.last, std::cmp::Reverse(*i)))
        .filter(|(_, s)| s.last_share > stragglers::STRAGGLER_SHARE)
        .map(|(i, _)| i);
    sequence.sort_by_key(|c| c.first_arrival_ns);
    RanksReport {
        files: Vec::new(),
        ranks: summaries,
        collectives: Collectives {
            count: skews.len() as u64,
            skew_us: stats(&mut skews),
            transfer_us: stats(&mut transfers),
            by_name: by_name
                .into_iter()
                .map(|(name, t)| NameSummary {
                    name,
                    count: t.count,
                    ranks: t.ranks,
                    mean_skew_us: ratio(us(t.skew_ns), t.count as f64),
                    max_skew_us: us(t.max_skew_ns),
                    mean_transfer_us: ratio(us(t.transfer_ns), t.count as f64),
                })
                .collect(),
            worst,
            sequence,
        },
        clock,
        straggler,
        threshold: stragglers::STRAGGLER_SHARE,
        cause: None,
        notes,
    }
}

/// The distinct collective kernel names of every rank, in order of first use (rank by rank).
fn distinct_names(ranks: &[Rank]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in ranks.iter().flat_map(|r| r.name_list.iter()) {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// Keeps the [`WORST_LISTED`] largest skews, largest first; a later collective displaces an
/// earlier one only with a larger skew.
fn keep_worst(worst: &mut Vec<CollectiveRow>, row: CollectiveRow) {
    let at = worst.partition_point(|w| w.skew_us >= row.skew_us);
    if at < WORST_LISTED {
        worst.insert(at, row);
        worst.truncate(WORST_LISTED);
    }
}

/// The statistics of `v` in µs (sorted in place).
fn stats(v: &mut [Ns]) -> Stats {
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_unstable();
    let n = v.len();
    let sum = v.iter().fold(0 as Ns, |a, &x| a.saturating_add(x));
    let nearest = |p: usize| v[((n * p).div_ceil(100)).clamp(1, n) - 1];
    Stats {
        mean: us(sum) / n as f64,
        median: us(v[(n - 1) / 2]),
        p90: us(nearest(90)),
        max: us(v[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// A file of one rank on `device`: collective kernels `(start, end)` on its own clock.
    fn rank_file(session_start: i64, device: u32, kernels: &[(i64, i64)]) -> crate::model::Trace {
        let mut b = TraceBuilder::new();
        for &(start, end) in kernels {
            b.kernel(
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                start,
                end,
                device,
            );
        }
        b.trace.meta.session_start_utc_ns = Some(session_start);
        b.trace
    }

    #[test]
    fn per_collective_arrivals_skew_transfer_and_waiting() {
        // a arrives at 1000 and 5000, b at 1400 and 4900; both end together.
        let a = rank_file(0, 0, &[(1_000, 1_500), (5_000, 5_100)]);
        let b = rank_file(0, 1, &[(1_400, 1_500), (4_900, 5_100)]);
        let ix = [
            RowIndex::loaded(&a, "trace_rank0.sqlite", None),
            RowIndex::loaded(&b, "trace_rank1.sqlite", None),
        ];
        let r = ranks_indexed(&ix).expect("ranks");
        assert_eq!(r.collectives.count, 2);
        let names: Vec<(&str, NamedBy)> = r
            .ranks
            .iter()
            .map(|s| (s.rank.as_str(), s.named_by))
            .collect();
        assert_eq!(
            names,
            vec![("rank 0", NamedBy::FileName), ("rank 1", NamedBy::FileName)]
        );
        // Collective 0: skew 400, transfer 100 (b's); collective 1: skew 100, transfer 100.
        assert_eq!(r.collectives.skew_us.max, 0.4);
        assert_eq!(r.collectives.skew_us.mean, 0.25);
        assert_eq!(r.collectives.transfer_us.max, 0.1);
        let (ra, rb) = (&r.ranks[0], &r.ranks[1]);
        assert_eq!((ra.last, rb.last), (1, 1));
        assert_eq!((ra.waiting_us, ra.transferring_us), (0.4, 0.2));
        assert_eq!((rb.waiting_us, rb.transferring_us), (0.1, 0.2));
        assert_eq!((rb.mean_lateness_us, rb.worst_lateness_us), (0.4, 0.4));
        assert_eq!(r.collectives.worst[0].last_rank, 1);
        assert_eq!(r.collectives.worst[0].first_arrival_ns, 1_000);
        assert_eq!(r.clock.offset_ns, vec![0, 0]);
        assert_eq!(r.straggler, None);
    }

    #[test]
    fn one_rank_is_no_line_up() {
        let a = rank_file(0, 0, &[(1_000, 1_500)]);
        let ix = [RowIndex::loaded(&a, "a", None)];
        let r = ranks_indexed(&ix).expect("ranks");
        assert_eq!(r.collectives.count, 0);
        assert_eq!(r.ranks.len(), 1);
        assert_eq!(r.ranks[0].named_by, NamedBy::ProcessDevice);
        assert!(r.notes.iter().any(|n| n.contains("at least two")));
        assert_eq!(r.clock.method, "one export: one clock, no correction");
    }

    #[test]
    fn statistics_by_nearest_rank() {
        let mut v: Vec<Ns> = (1..=10).map(|i| i * 1000).collect();
        let s = stats(&mut v);
        assert_eq!((s.mean, s.median, s.p90, s.max), (5.5, 5.0, 9.0, 10.0));
        assert_eq!(stats(&mut []), Stats::default());
    }
}
