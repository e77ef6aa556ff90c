//! The capture checks' host facts ([`CaptureMarks`]): warm-up calls from the runtime table and
//! compile / GC / GIL ranges from NVTX, each by one `SELECT` whose `WHERE` keeps only candidate
//! rows (by `nameId` / `textId`, inline text by `LIKE`), confirmed by the catalogue's rules. Run
//! by every load, the page's staged one included, so both front ends check the same facts.

use super::load::{NVTX_TABLE, RUNTIME_TABLE};
use super::schema::{Schema, text_ref};
use super::tables::{Loader, int, opt_int};
use crate::error::Result;
use crate::model::capture::{
    CaptureMarks, MAX_WARMUP_SPANS, MetricClass, MetricSeries, SLOW_LAUNCH_NS, WarmupKind,
    WarmupSpan,
};
use crate::model::{NVTX_RANGE_TYPES, Strings, Trace};
use crate::names::api::{ApiKind, api_base_name, api_kind};
use crate::names::ranges::{RangeClass, range_class, range_label};

/// The table `--gpu-metrics-devices` fills, and the one naming its metrics.
const GPU_METRICS_TABLE: &str = "GPU_METRICS";
const METRIC_NAMES_TABLE: &str = "TARGET_INFO_GPU_METRICS";

/// Substrings an inline NVTX text must contain to be a candidate (`LIKE` is ASCII
/// case-insensitive, as [`range_class`] is); a superset of the classes read here.
const TEXT_CANDIDATES: [&str; 6] = ["compile", "nvrtc", "jit", "autotun", "python gc", "gil"];

/// The warm-up class of a call, if it is one (slow launches are decided by duration).
fn call_kind(name: &str) -> Option<WarmupKind> {
    match api_kind(name) {
        ApiKind::ModuleLoad => Some(WarmupKind::ModuleLoad),
        ApiKind::Jit => Some(WarmupKind::Jit),
        ApiKind::Launch | ApiKind::GraphLaunch => Some(WarmupKind::SlowLaunch),
        _ => None,
    }
}

fn id_list(ids: &[i64]) -> String {
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    list.join(",")
}

impl Loader<'_, '_> {
    /// Reads the capture facts into `trace.capture`.
    pub(super) fn load_capture_marks(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        let mut marks = CaptureMarks::default();
        if schema.has_table(RUNTIME_TABLE) {
            self.warmup_calls(schema, &trace.strings, &mut marks)?;
            marks.read = true;
        }
        if schema.has_table(NVTX_TABLE) {
            self.marked_ranges(schema, &trace.strings, &mut marks)?;
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

    fn warmup_calls(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        marks: &mut CaptureMarks,
    ) -> Result<()> {
        let has = |c: &str| schema.has_column(RUNTIME_TABLE, c);
        if !(has("start") && has("end") && has("nameId")) {
            return Ok(());
        }
        let loads =
            strings.sqlite_ids_where(|s| call_kind(s).is_some_and(|k| k != WarmupKind::SlowLaunch));
        let launches = strings.sqlite_ids_where(|s| call_kind(s) == Some(WarmupKind::SlowLaunch));
        // Launch calls are most of the table: SQLite keeps only the slow ones.
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
            return Ok(());
        }
        let sql = Loader::select(
            schema,
            RUNTIME_TABLE,
            &["start", "end", "nameId"],
            &format!("WHERE {}", any.join(" OR ")),
        );
        self.stream("reading warm-up calls", RUNTIME_TABLE, &sql, |r| {
            let (start, end) = (int(r.get_ref(0)?, 0), int(r.get_ref(1)?, 0));
            let name = opt_int(r.get_ref(2)?).map_or("", |id| strings.get(strings.resolve(id)));
            let Some(kind) = call_kind(name) else {
                return Ok(());
            };
            if end <= start || (kind == WarmupKind::SlowLaunch && end - start < SLOW_LAUNCH_NS) {
                return Ok(());
            }
            keep(marks, start, end, kind, api_base_name(name));
            Ok(())
        })
    }

    fn marked_ranges(
        &mut self,
        schema: &Schema,
        strings: &Strings,
        marks: &mut CaptureMarks,
    ) -> Result<()> {
        let has = |c: &str| schema.has_column(NVTX_TABLE, c);
        if !(has("start") && has("end")) {
            return Ok(());
        }
        let marked =
            |s: &str| range_class(s) != RangeClass::Comm && range_class(s) != RangeClass::Other;
        let mut any: Vec<String> = Vec::new();
        if has("textId") {
            let ids = strings.sqlite_ids_where(marked);
            if !ids.is_empty() {
                any.push(format!("textId IN ({})", id_list(&ids)));
            }
        }
        if has("text") {
            any.extend(TEXT_CANDIDATES.iter().map(|t| format!("text LIKE '%{t}%'")));
        }
        if any.is_empty() {
            return Ok(());
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
            &["start", "end", "text", "textId"],
            &filter,
        );
        self.stream("reading compile and GC/GIL ranges", NVTX_TABLE, &sql, |r| {
            let (start, end) = (int(r.get_ref(0)?, 0), opt_int(r.get_ref(1)?));
            let text = text_ref(r.get_ref(2)?);
            let name: &str = if r.get_ref(2)?.data_type() != rusqlite::types::Type::Null {
                &text
            } else {
                opt_int(r.get_ref(3)?).map_or("", |id| strings.get(strings.resolve(id)))
            };
            match range_class(name) {
                RangeClass::Gc => marks.gc_ranges += 1,
                RangeClass::GilWait | RangeClass::GilHeld => marks.gil_ranges += 1,
                RangeClass::Jit => {
                    if let Some(end) = end.filter(|&e| e > start) {
                        keep(marks, start, end, WarmupKind::Jit, range_label(name));
                    }
                }
                _ => {}
            }
            Ok(())
        })
    }
}

impl Loader<'_, '_> {
    /// The matched metrics' samples, summed per device and class in time bins. The device is
    /// `typeId & 0xFF` (nsys numbers a GPU's counter type by its id in the low byte).
    fn metric_series(&mut self, schema: &Schema, marks: &mut CaptureMarks) -> Result<()> {
        let mut classes: Vec<(i64, MetricClass)> = Vec::new();
        let sql = Loader::select(schema, METRIC_NAMES_TABLE, &["metricId", "metricName"], "");
        self.stream("reading GPU metric names", METRIC_NAMES_TABLE, &sql, |r| {
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
        self.stream("reading GPU metrics", GPU_METRICS_TABLE, &sql, |r| {
            let t = int(r.get_ref(0)?, 0);
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
