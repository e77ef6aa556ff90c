//! The map of `ranks` over many files (issue 50, "hundreds of ranks"): what the ranks
//! computation needs from one export, written once per file (`nsys-lens ranks --summary`) and
//! merged by [`super::merge`] into the answer of reading every file at once.
//!
//! A summary holds the file's name and session start, what bounds its run and, per rank
//! (process, device that ran collective kernels, in the order the one-shot read finds them):
//! its identity, what NCCL named it, what detect says of its device (bound, idle share,
//! verdict), and its collective kernels' start, end and name on the file's own clock, in start
//! order, with what the span before each holds ([`super::spans`]: the host's time per cause and
//! label, the device's busy time). Its size is bounded by the collectives and the distinct
//! (cause, label) pairs in their spans, never a row per ordinary kernel.
//!
//! Read back ([`read`]), a summary is checked before it is used: JSON, of this kind and
//! version, every time within 2^53 ns (as the export reader refuses), every name and cause place
//! in its list and one span per kernel; anything else is a usage error saying what to do.

use serde::{Deserialize, Serialize};

use super::spans::SpanCauses;
use crate::detect::bound::BoundKind;
use crate::drill::idle::CauseKind;
use crate::drill::stragglers::{Rank, RankId};
use crate::error::{Error, Result};
use crate::model::Ns;

/// What a summary's `kind` says.
pub const SUMMARY_KIND: &str = "ranks-summary";

/// The version of the summary's content: raised when a field is removed, renamed, given
/// another type or another meaning. A summary of another version is refused (written again by
/// the same nsys-lens that merges it).
pub const SUMMARY_VERSION: u32 = 2;

/// Times further than this from the session start are damage (as `trace::decode::time` says).
const MAX_TIME: Ns = 1 << 53;
/// Session starts (ns since the epoch) beyond this are damage: differences of two stay in range.
const MAX_SESSION_START: Ns = 1 << 62;

/// What `ranks` needs from one export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSummary {
    /// Always [`SUMMARY_KIND`].
    pub kind: String,
    /// [`SUMMARY_VERSION`] when written.
    pub summary_version: u32,
    /// The file as the map was given it (the rank's `file` in the merged answer).
    pub file: String,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`, when the export has it.
    pub session_start_utc_ns: Option<Ns>,
    /// What bounds the file's run (`detect`'s bound), when detect could tell.
    pub bound: Option<BoundKind>,
    /// Its ranks, by device (ascending) then process (in order of its first collective).
    pub ranks: Vec<RankKernels>,
}

/// One rank of a file and its collective kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankKernels {
    pub pid: u32,
    pub device: u32,
    /// What NCCL's payloads in its process named it, if they did.
    pub nccl: Option<NcclName>,
    /// What fills its device's time over the file's window.
    pub gpu_bound: Option<BoundKind>,
    /// Its device's idle share of the file's window (detect's).
    pub gpu_idle_ratio: Option<f64>,
    /// Its verdict in detect's words ([`super::device`]).
    pub verdict: Option<String>,
    /// The distinct names of its collective kernels, in order of first use.
    pub names: Vec<String>,
    /// Its collective kernels in start order: `[start, end, name]`, times in ns on the file's
    /// own clock, `name` a place in `names`.
    pub kernels: Vec<(Ns, Ns, u32)>,
    /// The (host cause, label) pairs its spans' host time falls in ([`super::spans`]).
    pub causes: Vec<(CauseKind, String)>,
    /// One per kernel: what the span from the previous collective kernel's end to its start
    /// holds (the first's is empty), for why the rank arriving last was late.
    pub spans: Vec<SpanCauses>,
}

/// A rank as NCCL named it: its rank in its largest communicator, and that communicator's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclName {
    pub rank: u32,
    pub nranks: u32,
}

impl RankKernels {
    /// The rank read from `input` (file `file`), its times moved by `offset` onto the first
    /// file's clock (the arrivals and ends; `kernels` stay on its own clock).
    pub(crate) fn rank(&self, file: &str, input: usize, offset: Ns) -> Rank {
        let on = |t: Ns| t.saturating_add(offset);
        Rank {
            id: RankId {
                device: self.device,
                pid: self.pid,
                file: file.to_string(),
            },
            input,
            arrivals: self.kernels.iter().map(|k| on(k.0)).collect(),
            ends: self.kernels.iter().map(|k| on(k.1)).collect(),
            kernels: self.kernels.iter().map(|k| (k.0, k.1)).collect(),
            names: self.kernels.iter().map(|k| k.2).collect(),
            name_list: self.names.clone(),
        }
    }
}

/// The summary in `text`, read from `path` (named in the errors). Fails, as a usage error
/// saying what to do, when `text` is not JSON, not a ranks summary, of another version, or
/// damaged.
pub fn read(text: &str, path: &str) -> Result<FileSummary> {
    let again = "write it again with `nsys-lens ranks --summary TRACE.sqlite -o TRACE.json`";
    if text.starts_with("SQLite format 3\0") {
        return Err(Error::Usage(format!(
            "{path}: an SQLite export, not a ranks summary: give --merge the summaries `nsys-lens ranks --summary` writes, or run `nsys-lens ranks` on the exports without --merge"
        )));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Error::Usage(format!(
            "{path}: not JSON ({e}), so not a ranks summary: {again}"
        ))
    })?;
    let kind = value.get("kind").and_then(serde_json::Value::as_str);
    if kind != Some(SUMMARY_KIND) {
        let seen = match kind {
            Some(k) => format!("its kind is {k:?}"),
            None => "it has no \"kind\"".to_string(),
        };
        return Err(Error::Usage(format!(
            "{path}: JSON, but not a ranks summary ({seen}, not {SUMMARY_KIND:?}; `ranks --json` output cannot be merged): {again}"
        )));
    }
    let version = value
        .get("summary_version")
        .and_then(serde_json::Value::as_u64);
    if version != Some(u64::from(SUMMARY_VERSION)) {
        let seen = version.map_or("no version".to_string(), |v| format!("version {v}"));
        return Err(Error::Usage(format!(
            "{path}: a ranks summary of {seen}, but this nsys-lens reads version {SUMMARY_VERSION}: {again}"
        )));
    }
    let damaged =
        |what: String| Error::Usage(format!("{path}: a damaged ranks summary ({what}): {again}"));
    let summary: FileSummary = serde_json::from_value(value).map_err(|e| damaged(e.to_string()))?;
    if let Some(s) = summary.session_start_utc_ns
        && s.unsigned_abs() > MAX_SESSION_START as u64
    {
        return Err(damaged(format!("session start {s} ns")));
    }
    for (r, rank) in summary.ranks.iter().enumerate() {
        check_spans(rank).map_err(|what| damaged(format!("rank {r}: {what}")))?;
        for &(start, end, name) in &rank.kernels {
            if start.unsigned_abs() > MAX_TIME as u64 || end.unsigned_abs() > MAX_TIME as u64 {
                return Err(damaged(format!(
                    "rank {r}: a kernel at {start}..{end} ns, further than 2^53 ns from the session start"
                )));
            }
            if name as usize >= rank.names.len() {
                return Err(damaged(format!(
                    "rank {r}: a kernel's name {name} is not among its {} names",
                    rank.names.len()
                )));
            }
        }
    }
    Ok(summary)
}

/// Whether `rank`'s spans fit its kernels and causes: one per kernel, every time within
/// 2^53 ns and not negative, every cause a place in its list. Says what does not.
fn check_spans(rank: &RankKernels) -> std::result::Result<(), String> {
    if rank.spans.len() != rank.kernels.len() {
        return Err(format!(
            "{} spans for {} kernels",
            rank.spans.len(),
            rank.kernels.len()
        ));
    }
    let fits = |ns: Ns| (0..=MAX_TIME).contains(&ns);
    for (j, span) in rank.spans.iter().enumerate() {
        let host = span.host.iter().map(|h| h.1);
        if !span.gpu.iter().copied().chain(host).all(fits) {
            return Err(format!("span {j} holds a time outside 0..2^53 ns"));
        }
        if let Some(&(place, _)) = span.host.iter().find(|h| h.0 as usize >= rank.causes.len()) {
            return Err(format!(
                "span {j}'s cause {place} is not among its {} causes",
                rank.causes.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> FileSummary {
        FileSummary {
            kind: SUMMARY_KIND.into(),
            summary_version: SUMMARY_VERSION,
            file: "r0.sqlite".into(),
            session_start_utc_ns: Some(1_700_000_000_000_000_000),
            bound: Some(BoundKind::Compute),
            ranks: vec![RankKernels {
                pid: 7,
                device: 0,
                nccl: None,
                gpu_bound: None,
                gpu_idle_ratio: Some(0.25),
                verdict: Some("mixed — …".into()),
                names: vec!["ncclDevKernel_AllReduce".into()],
                kernels: vec![(1_000, 1_500, 0), (2_000, 2_500, 0)],
                causes: vec![(CauseKind::Nvtx, "_prepare_inputs".into())],
                spans: vec![
                    SpanCauses::default(),
                    SpanCauses {
                        gpu: [100, 0, 0],
                        host: vec![(0, 500)],
                    },
                ],
            }],
        }
    }

    fn err(text: &str) -> String {
        match read(text, "s.json") {
            Err(e @ Error::Usage(_)) => e.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let s = one();
        let text = serde_json::to_string(&s).expect("json");
        assert_eq!(read(&text, "s.json").expect("read"), s);
    }

    #[test]
    fn bad_summaries_are_usage_errors_saying_what_to_do() {
        assert!(err("{oops").contains("not JSON"));
        assert!(err("SQLite format 3\0...").contains("an SQLite export"));
        assert!(err(r#"{"schema_version":1,"ranks":[]}"#).contains("no \"kind\""));
        let mut v = serde_json::to_value(one()).expect("json");
        v["summary_version"] = 99.into();
        assert!(err(&v.to_string()).contains("version 99"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"][0]["kernels"][0][2] = 5.into();
        assert!(err(&v.to_string()).contains("not among its 1 names"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"][0]["kernels"][0][1] = i64::MAX.into();
        assert!(err(&v.to_string()).contains("2^53"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"] = "none".into();
        assert!(err(&v.to_string()).contains("damaged"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"][0]["spans"][1][1][0][0] = 3.into();
        assert!(err(&v.to_string()).contains("not among its 1 causes"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"][0]["spans"][1][0][0] = (-1).into();
        assert!(err(&v.to_string()).contains("outside 0..2^53"));
        let mut v = serde_json::to_value(one()).expect("json");
        v["ranks"][0]["spans"] = serde_json::json!([]);
        assert!(err(&v.to_string()).contains("0 spans for 2 kernels"));
    }
}
