//! The capture checks' host facts ([`CaptureMarks`]): warm-up calls from the runtime table and
//! compile / GC / GIL ranges from NVTX, gathered from the rows the load reads anyway
//! ([`WarmupCalls`] in `load_runtime`, [`MarkedRanges`] in `read_nvtx`: no second scan of the
//! two largest host tables), else (the page sweeps its launch calls instead of loading them) by
//! one `SELECT` whose `WHERE` keeps only candidate rows. Names are classified once per distinct
//! string, behind a prefilter that rejects most names (step names, kernels) in one pass. Run by
//! every load, the page's staged one included, so both front ends check the same facts.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use rusqlite::types::ValueRef;

use super::decode::{int, opt_int, opt_time, time};
use super::load::{NVTX_TABLE, RUNTIME_TABLE};
use super::schema::{Schema, text_ref};
use super::tables::{Loader, id_list};
use crate::error::Result;
use crate::model::capture::{
    CaptureMarks, MAX_WARMUP_SPANS, MetricClass, MetricSeries, SLOW_LAUNCH_NS, WarmupKind,
    WarmupSpan,
};
use crate::model::{NO_NAME, NVTX_RANGE_TYPES, NameFlags, NameId, Strings, Trace};
use crate::names::api::{ApiKind, api_base_name, api_kind};
use crate::names::ranges::{RangeClass, range_class, range_label};

/// The table `--gpu-metrics-devices` fills, and the one naming its metrics.
const GPU_METRICS_TABLE: &str = "GPU_METRICS";
const METRIC_NAMES_TABLE: &str = "TARGET_INFO_GPU_METRICS";

/// Substrings an NVTX name must contain (ASCII case-insensitive, as [`range_class`] and `LIKE`
/// compare) to be a GC, GIL or compile range: every such class of [`range_class`] needs one.
const TEXT_CANDIDATES: [&str; 6] = ["compile", "nvrtc", "jit", "autotun", "python gc", "gil"];

fn text_candidates() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .build(TEXT_CANDIDATES)
            .unwrap_or_else(|e| unreachable!("constant patterns: {e}"))
    })
}

/// The class of an NVTX range the capture checks count (GC, GIL, compile), if it is one.
fn marked_class(name: &str) -> Option<RangeClass> {
    if !text_candidates().is_match(name) {
        return None;
    }
    match range_class(name) {
        RangeClass::Comm | RangeClass::Other => None,
        class => Some(class),
    }
}

/// The warm-up class of a call, if it is one (slow launches are decided by duration).
fn call_kind(name: &str) -> Option<WarmupKind> {
    // Every launch, module-loading and JIT API starts with `cu` or `nv` (`api_kind` matches the
    // base name's prefix, and the base name is a prefix of the name): most names skip the rules.
    if !(name.starts_with("cu") || name.starts_with("nv")) {
        return None;
    }
    match api_kind(name) {
        ApiKind::ModuleLoad => Some(WarmupKind::ModuleLoad),
        ApiKind::Jit => Some(WarmupKind::Jit),
        ApiKind::Launch | ApiKind::GraphLaunch => Some(WarmupKind::SlowLaunch),
        _ => None,
    }
}

/// The `StringIds.id`s of the names `pick` takes, by [`NameId`].
fn sqlite_ids(strings: &Strings, pick: impl Fn(NameId) -> bool) -> Vec<i64> {
    strings
        .row_ids()
        .iter()
        .enumerate()
        .filter(|&(i, _)| pick(i as NameId))
        .map(|(_, id)| id)
        .collect()
}

/// Warm-up calls (module loads, compiles, launches of [`SLOW_LAUNCH_NS`] or more) from runtime
/// rows, each name's class decided once.
pub(super) struct WarmupCalls {
    kinds: Vec<Option<WarmupKind>>,
    marks: CaptureMarks,
}

impl WarmupCalls {
    /// `None` when the runtime table lacks a column the calls are read by.
    pub(super) fn new(schema: &Schema, strings: &Strings) -> Option<WarmupCalls> {
        let has = |c: &str| schema.has_column(RUNTIME_TABLE, c);
        (has("start") && has("end") && has("nameId")).then(|| WarmupCalls {
            kinds: (0..strings.len())
                .map(|id| call_kind(strings.get(id as NameId)))
                .collect(),
            marks: CaptureMarks::default(),
        })
    }

    fn kind(&self, name: NameId) -> Option<WarmupKind> {
        self.kinds.get(name as usize).copied().flatten()
    }

    /// The `StringIds.id`s of the warm-up calls' names, and of `also`'s.
    pub(super) fn sqlite_ids_or(&self, strings: &Strings, also: &NameFlags) -> Vec<i64> {
        sqlite_ids(strings, |id| self.kind(id).is_some() || also.get(id))
    }

    /// Keeps the call if it is warm-up.
    pub(super) fn observe(&mut self, strings: &Strings, start: i64, end: i64, name: NameId) {
        let Some(kind) = self.kind(name) else {
            return;
        };
        if end <= start || (kind == WarmupKind::SlowLaunch && end - start < SLOW_LAUNCH_NS) {
            return;
        }
        keep(
            &mut self.marks,
            start,
            end,
            kind,
            api_base_name(strings.get(name)),
        );
    }

    pub(super) fn finish(self) -> CaptureMarks {
        self.marks
    }
}

/// Compile ranges (kept as warm-up) and GC / GIL ranges (counted) from NVTX rows, each
/// `StringIds` name classified once, when a row first names it (a trace's strings are mostly
/// kernel and call names no range names: classifying them all took 36 ms of the host side's
/// thread at `--scale 4000`, before its first range), inline text by row.
pub(super) struct MarkedRanges {
    /// Per name: `None` until a row names it, then its class.
    classes: Vec<Option<Option<RangeClass>>>,
    marks: CaptureMarks,
}

impl MarkedRanges {
    /// `None` when the NVTX table lacks `start` or `end`.
    pub(super) fn new(schema: &Schema, strings: &Strings) -> Option<MarkedRanges> {
        let has = |c: &str| schema.has_column(NVTX_TABLE, c);
        (has("start") && has("end")).then(|| MarkedRanges {
            classes: vec![None; strings.len()],
            marks: CaptureMarks::default(),
        })
    }

    /// Counts or keeps a row: its inline `text` names it when not NULL, else `textId`.
    pub(super) fn observe(
        &mut self,
        strings: &Strings,
        (start, end): (i64, Option<i64>),
        event_type: i64,
        text: ValueRef<'_>,
        text_id: Option<i64>,
    ) {
        if !NVTX_RANGE_TYPES.iter().any(|&t| i64::from(t) == event_type) {
            return;
        }
        let (class, name) = match text {
            ValueRef::Null => {
                let id = text_id.map_or(NO_NAME, |id| strings.resolve(id));
                let class = self.class_of(strings, id);
                // Most rows name nothing marked: their name is not looked up.
                let name = class.map(|_| Cow::Borrowed(strings.get(id)));
                (class, name)
            }
            // Inline text: the prefilter reads the bytes (its substrings are ASCII), so most
            // texts are never decoded.
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) if !text_candidates().is_match(bytes) => {
                (None, None)
            }
            other => {
                let name = text_ref(other);
                (marked_class(&name), Some(name))
            }
        };
        match (class, name) {
            (Some(RangeClass::Gc), _) => self.marks.gc_ranges += 1,
            (Some(RangeClass::GilWait | RangeClass::GilHeld), _) => self.marks.gil_ranges += 1,
            (Some(RangeClass::Jit), Some(name)) => {
                if let Some(end) = end.filter(|&e| e > start) {
                    keep(
                        &mut self.marks,
                        start,
                        end,
                        WarmupKind::Jit,
                        range_label(&name),
                    );
                }
            }
            _ => {}
        }
    }

    /// The class of the name `id` (`None` past the names there were when the read began).
    fn class_of(&mut self, strings: &Strings, id: NameId) -> Option<RangeClass> {
        let slot = self.classes.get_mut(id as usize)?;
        *slot.get_or_insert_with(|| marked_class(strings.get(id)))
    }

    /// The `StringIds.id`s of marked names.
    fn sqlite_ids(&self, strings: &Strings) -> Vec<i64> {
        sqlite_ids(strings, |id| {
            (id as usize) < self.classes.len() && marked_class(strings.get(id)).is_some()
        })
    }

    pub(super) fn finish(self) -> CaptureMarks {
        self.marks
    }
}

impl Loader<'_, '_> {
    /// Reads the capture facts into `trace.capture`: what the load gathered from the runtime
    /// and NVTX tables (runtime calls first, as the warm-up spans are kept in that order), each
    /// read by a `SELECT` of its own when the load did not read that table whole.
    pub(super) fn load_capture_marks(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        let mut marks = CaptureMarks::default();
        let fold = std::mem::take(&mut trace.capture_fold);
        if schema.has_table(RUNTIME_TABLE) {
            let part = match fold.runtime {
                Some(part) => Some(part),
                None => self.warmup_calls(schema, &trace.strings)?,
            };
            if let Some(part) = part {
                merge(&mut marks, part);
            }
            marks.read = true;
        }
        if schema.has_table(NVTX_TABLE) {
            let part = match fold.nvtx {
                Some(part) => Some(part),
                None => self.marked_ranges(schema, &trace.strings)?,
            };
            if let Some(part) = part {
                merge(&mut marks, part);
            }
            marks.read = true;
        }
        marks.warmup.sort_by_key(|s| (s.start, s.end));
        if schema.has_table(GPU_METRICS_TABLE) {
            marks.gpu_metrics = Some(self.estimate_rows(GPU_METRICS_TABLE));
            if schema.has_table(METRIC_NAMES_TABLE) {
                self.metric_series(schema, &mut marks)?;
            }
        }
        trace.capture = marks;
        Ok(())
    }

    /// Warm-up calls by their own `SELECT` (launch calls are most of the table: SQLite keeps
    /// only the slow ones).
    fn warmup_calls(&mut self, schema: &Schema, strings: &Strings) -> Result<Option<CaptureMarks>> {
        let Some(mut calls) = WarmupCalls::new(schema, strings) else {
            return Ok(None);
        };
        let launch = |id| calls.kind(id) == Some(WarmupKind::SlowLaunch);
        let loads = sqlite_ids(strings, |id| calls.kind(id).is_some() && !launch(id));
        let launches = sqlite_ids(strings, launch);
        let mut any = Vec::new();
        if !loads.is_empty() {
            any.push(format!("nameId IN ({})", id_list(&loads)));
        }
        if !launches.is_empty() {
            any.push(format!(
                "(nameId IN ({}) AND \"end\" - start >= {SLOW_LAUNCH_NS})",
                id_list(&launches)
            ));
        }
        if any.is_empty() {
            return Ok(None);
        }
        let sql = Loader::select(
            schema,
            RUNTIME_TABLE,
            &["start", "end", "nameId"],
            &format!("WHERE {}", any.join(" OR ")),
        );
        self.read_rows("reading warm-up calls", RUNTIME_TABLE, &sql, |r| {
            let (start, end) = (time(r.get_ref(0)?)?, time(r.get_ref(1)?)?);
            let name = opt_int(r.get_ref(2)?).map_or(NO_NAME, |id| strings.resolve(id));
            calls.observe(strings, start, end, name);
            Ok(())
        })?;
        Ok(Some(calls.finish()))
    }

    /// Compile and GC/GIL ranges by their own `SELECT`.
    fn marked_ranges(
        &mut self,
        schema: &Schema,
        strings: &Strings,
    ) -> Result<Option<CaptureMarks>> {
        let Some(mut ranges) = MarkedRanges::new(schema, strings) else {
            return Ok(None);
        };
        let has = |c: &str| schema.has_column(NVTX_TABLE, c);
        let mut any: Vec<String> = Vec::new();
        if has("textId") {
            let ids = ranges.sqlite_ids(strings);
            if !ids.is_empty() {
                any.push(format!("textId IN ({})", id_list(&ids)));
            }
        }
        if has("text") {
            any.extend(TEXT_CANDIDATES.iter().map(|t| format!("text LIKE '%{t}%'")));
        }
        if any.is_empty() {
            return Ok(None);
        }
        let types: Vec<String> = NVTX_RANGE_TYPES.iter().map(|t| t.to_string()).collect();
        let filter = format!(
            "WHERE eventType IN ({}) AND ({})",
            types.join(","),
            any.join(" OR ")
        );
        let sql = Loader::select(
            schema,
            NVTX_TABLE,
            &["start", "end", "eventType", "text", "textId"],
            &filter,
        );
        self.read_rows("reading compile and GC/GIL ranges", NVTX_TABLE, &sql, |r| {
            let span = (time(r.get_ref(0)?)?, opt_time(r.get_ref(1)?)?);
            let event_type = int(r.get_ref(2)?, -1);
            ranges.observe(
                strings,
                span,
                event_type,
                r.get_ref(3)?,
                opt_int(r.get_ref(4)?),
            );
            Ok(())
        })?;
        Ok(Some(ranges.finish()))
    }
}

impl Loader<'_, '_> {
    /// The matched metrics' samples, summed per device and class in time bins. The device is
    /// `typeId & 0xFF` (nsys numbers a GPU's counter type by its id in the low byte).
    fn metric_series(&mut self, schema: &Schema, marks: &mut CaptureMarks) -> Result<()> {
        let mut classes: Vec<(i64, MetricClass)> = Vec::new();
        let sql = Loader::select(schema, METRIC_NAMES_TABLE, &["metricId", "metricName"], "");
        self.read_rows("reading GPU metric names", METRIC_NAMES_TABLE, &sql, |r| {
            let id = int(r.get_ref(0)?, -1);
            let name = text_ref(r.get_ref(1)?);
            if let Some(class) = MetricClass::of(&name)
                && !classes.iter().any(|&(i, _)| i == id)
            {
                classes.push((id, class));
                if !marks
                    .metric_names
                    .iter()
                    .any(|(c, n)| *c == class && *n == *name)
                {
                    marks.metric_names.push((class, name.into_owned()));
                }
            }
            Ok(())
        })?;
        let has = |c: &str| schema.has_column(GPU_METRICS_TABLE, c);
        if classes.is_empty() || !(has("timestamp") && has("metricId") && has("value")) {
            return Ok(());
        }
        let ids: Vec<i64> = classes.iter().map(|c| c.0).collect();
        let sql = Loader::select(
            schema,
            GPU_METRICS_TABLE,
            &["timestamp", "typeId", "metricId", "value"],
            &format!("WHERE metricId IN ({})", id_list(&ids)),
        );
        let series = &mut marks.metric_series;
        self.read_rows("reading GPU metrics", GPU_METRICS_TABLE, &sql, |r| {
            let t = time(r.get_ref(0)?)?;
            let device = (int(r.get_ref(1)?, 0) & 0xFF) as u32;
            let id = int(r.get_ref(2)?, -1);
            let value = match r.get_ref(3)? {
                rusqlite::types::ValueRef::Real(f) => f,
                other => int(other, 0) as f64,
            };
            let Some(&(_, class)) = classes.iter().find(|c| c.0 == id) else {
                return Ok(());
            };
            let i = match series
                .iter()
                .position(|s| s.device == device && s.class == class)
            {
                Some(i) => i,
                None => {
                    series.push(MetricSeries::new(device, class, t));
                    series.len() - 1
                }
            };
            series[i].add(t, value);
            Ok(())
        })?;
        series.sort_by_key(|s| (s.device, s.class));
        Ok(())
    }
}

/// Holds a span unless [`MAX_WARMUP_SPANS`] are held already (then it is counted).
fn keep(marks: &mut CaptureMarks, start: i64, end: i64, kind: WarmupKind, label: &str) {
    if marks.warmup.len() < MAX_WARMUP_SPANS {
        marks.warmup.push(WarmupSpan {
            start,
            end,
            kind,
            label: label.to_string(),
        });
    } else {
        marks.warmup_dropped += 1;
    }
}

/// Appends one table's facts: its spans after those held (held while fewer than
/// [`MAX_WARMUP_SPANS`], as if read in one pass), its counts added.
fn merge(marks: &mut CaptureMarks, part: CaptureMarks) {
    for span in part.warmup {
        if marks.warmup.len() < MAX_WARMUP_SPANS {
            marks.warmup.push(span);
        } else {
            marks.warmup_dropped += 1;
        }
    }
    marks.warmup_dropped += part.warmup_dropped;
    marks.gc_ranges += part.gc_ranges;
    marks.gil_ranges += part.gil_ranges;
}
