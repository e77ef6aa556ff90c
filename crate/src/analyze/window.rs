//! Whole-window figures of one trace (issue 18 item 4): what a comparison falls back to when
//! steps cannot be found in one or both traces. The window is the first GPU operation's start
//! to the last one's end (all devices; kernels, graph replays, copies, memsets: the busy share
//! counts them all, the kernel table is about kernels); every figure is normalized per second
//! of that window and per kernel launched, so two captures of different lengths compare.

use std::collections::BTreeMap;

use serde::Serialize;

use super::breakdown::PerName;
use super::compare::{Delta, OpDelta, regressions, rows};
use super::ops::Tallies;
use crate::drill::gap_report::{SweptGaps, swept_visiting};
use crate::drill::idle::IdleAttribution;
use crate::error::Result;
use crate::index::Fold;
use crate::index::StepInfo;
use crate::index::rows::{IndexFacts, RowIndex};
use crate::model::intervals::UnionLength;
use crate::model::rows::{CallRow, EventRows, KernelRow};
use crate::model::{Ns, NvtxRow, Strings};
use crate::names::steps::StepSource;
use crate::profile::{Profile, Switches};
use crate::steps::names::{ParsedNames, StepNames};
use crate::steps::{Step, step_of_row, visible_row_name};

/// One name's time over the whole window, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowRow {
    pub name: String,
    /// Time per second of kernel window (µs/s).
    pub us_per_s: f64,
    /// Time per kernel launched in the window (µs).
    pub us_per_kernel: f64,
    pub calls_per_s: f64,
    pub total_us: f64,
    pub calls: u64,
}

/// The whole kernel window of one trace, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowFigures {
    pub start_ns: Ns,
    pub end_ns: Ns,
    pub window_s: f64,
    pub kernels: u64,
    pub kernels_per_s: f64,
    pub devices: usize,
    /// Busy share of the window (per device the union of every GPU operation — kernels, graph
    /// replays, copies, memsets —, averaged over devices), 0–1.
    pub gpu_busy_share: f64,
    pub gpu_idle_share: f64,
    /// Kernel time by kernel name, largest first.
    pub kernel_ops: Vec<WindowRow>,
    /// CUDA API time by name (calls starting in the window), largest first.
    pub api_ops: Vec<WindowRow>,
    /// NVTX push/pop and start/end ranges starting in the window, by op grouped by shape
    /// (`names::shape`, as the per-step table), largest first; the
    /// forward-step ranges left out, as in the per-step table (each step names its own range,
    /// so they would be a row per step that no other capture shares).
    pub nvtx_ops: Vec<WindowRow>,
    /// GPU-idle time by cause (`drill::idle`'s attribution, all devices), µs per second of
    /// window, largest first.
    pub idle_causes: Vec<(String, f64)>,
}

/// The figures of a trace's kernel window (`Ok(None)` without kernels), folded over the
/// rows drill's index reads (`WindowPass`).
pub fn window_figures(rows: &dyn EventRows) -> Result<Option<WindowFigures>> {
    Ok(WindowPass::read(rows, None, &mut ())?
        .figures(&mut [], None)?
        .figures)
}

/// A trace's kernel window read in two steps, so an analysis can fold its own tallies over
/// the same passes: [`WindowPass::read`] indexes the rows as drill does (one pass over the
/// kernels, one over the calls, the NVTX ranges for the steps), tallying each device's busy
/// union and the time per name of kernels, of calls and of ranges starting in the window;
/// [`WindowPass::figures`] attributes the GPU-idle time by cause (drill's pass over the
/// kernels joined to their launch calls, and its sweep of the host's activity in the gaps).
pub(crate) struct WindowPass<'r> {
    ix: RowIndex<'r>,
    tally: WindowTally<'r>,
}

impl<'r> WindowPass<'r> {
    /// Indexes `rows` and tallies the window, each row also handed to `also`.
    pub(crate) fn read(
        rows: &'r dyn EventRows,
        marker: Option<&StepSource>,
        also: &mut dyn Fold,
    ) -> Result<WindowPass<'r>> {
        let mut tally = WindowTally::new(rows);
        let ix = RowIndex::visiting(rows, "trace", marker, &mut Both(&mut tally, also))?;
        Ok(WindowPass { ix, tally })
    }

    /// The forward steps its index read (TP ranks merged).
    pub(crate) fn steps(&self) -> &StepInfo {
        &self.ix.steps
    }

    /// The window's figures; `also` folded over the kernels as they are joined to their launch
    /// calls, and every call handed to `visit`.
    pub(crate) fn figures(
        self,
        also: &mut [&mut dyn Fold],
        visit: Option<&mut dyn FnMut(&CallRow)>,
    ) -> Result<WindowRead> {
        let WindowPass { ix, tally } = self;
        let swept = swept_visiting(&ix, also, visit);
        ix.rows.check()?;
        let pending_launches = ix.peak.pending_calls.get();
        let figures = tally
            .first
            .map(|start_ns| tally.figures(start_ns, &swept.idle));
        Ok(WindowRead {
            figures,
            pending_launches,
            drill: DrillRead {
                index: ix.into_facts(),
                gaps: Some(swept),
            },
        })
    }
}

/// What [`WindowPass::figures`] found.
pub(crate) struct WindowRead {
    /// `None` without kernels.
    pub(crate) figures: Option<WindowFigures>,
    /// The most launch calls its join held.
    pub(crate) pending_launches: usize,
    /// What a drill-down of the same rows would read again.
    pub(crate) drill: DrillRead,
}

/// What Root cause read of a trace's rows that a drill-down of the same rows reads too:
/// drill's index (the steps under the user's marker, else the first built-in marker met), and,
/// from the standard profile's window pass, the gaps and idle time its sweep found as the
/// drill-down's first pass does. The page keeps it for the drill-down of the same trace.
#[derive(Debug)]
pub struct DrillRead {
    pub index: IndexFacts,
    pub gaps: Option<SweptGaps>,
}

impl WindowTally<'_> {
    /// The figures of a window whose first kernel starts at `start_ns`, its idle time `idle`.
    fn figures(self, start_ns: Ns, idle: &IdleAttribution) -> WindowFigures {
        let tally = self;
        let (end_ns, kernels) = (tally.end_ns, tally.kernels);
        let span = (end_ns - start_ns).max(1);
        let window_s = span as f64 / 1e9;
        let (devices, busy) = busy_share(tally.busy.into_values(), span);
        let window_rows = |rows: Vec<super::breakdown::OpRow>| -> Vec<WindowRow> {
            rows.into_iter()
                .map(|r| WindowRow {
                    us_per_s: r.total_us / window_s,
                    us_per_kernel: r.total_us / kernels.max(1) as f64,
                    calls_per_s: r.calls as f64 / window_s,
                    name: r.name,
                    total_us: r.total_us,
                    calls: r.calls,
                })
                .collect()
        };
        let rows_of = |t: Tallies<'_>| window_rows(t.rows(None, |v| v));
        WindowFigures {
            start_ns,
            end_ns,
            window_s,
            kernels,
            kernels_per_s: kernels as f64 / window_s,
            devices,
            gpu_busy_share: busy,
            gpu_idle_share: 1.0 - busy,
            kernel_ops: rows_of(tally.kernel_ops),
            api_ops: rows_of(tally.api_ops),
            // By op and shape, as the per-step table (`nesting::by_shape`).
            nvtx_ops: window_rows(super::nesting::by_shape(tally.nvtx_ops.rows(None, |v| v))),
            idle_causes: idle_causes(idle, window_s),
        }
    }
}

/// Two folds fed the same rows.
struct Both<'a, 'b>(&'a mut dyn Fold, &'b mut dyn Fold);

impl Fold for Both<'_, '_> {
    fn kernel(&mut self, k: &KernelRow, launch: Option<&CallRow>) {
        self.0.kernel(k, launch);
        self.1.kernel(k, launch);
    }
    fn call(&mut self, c: &CallRow) {
        self.0.call(c);
        self.1.call(c);
    }
    fn range(&mut self, r: &NvtxRow) {
        self.0.range(r);
        self.1.range(r);
    }
    fn raw_steps(&mut self, steps: &[Step]) {
        self.0.raw_steps(steps);
        self.1.raw_steps(steps);
    }
}

/// The window's tallies, folded as drill's index reads the rows: the kernels first (which
/// make the window), then the calls and the ranges starting in it.
struct WindowTally<'t> {
    strings: &'t Strings,
    sw: Switches,
    step_names: ParsedNames<'t>,
    first: Option<Ns>,
    end_ns: Ns,
    kernels: u64,
    busy: BTreeMap<u32, UnionLength>,
    kernel_ops: Tallies<'t>,
    api_ops: Tallies<'t>,
    nvtx_ops: Tallies<'t>,
}

impl<'t> WindowTally<'t> {
    fn new(rows: &'t dyn EventRows) -> WindowTally<'t> {
        let sw = Profile::Standard.switches();
        WindowTally {
            strings: &rows.meta().strings,
            step_names: StepNames::parser(&rows.meta().strings, &sw, None),
            sw,
            first: None,
            end_ns: Ns::MIN,
            kernels: 0,
            busy: BTreeMap::new(),
            kernel_ops: Tallies::default(),
            api_ops: Tallies::default(),
            nvtx_ops: Tallies::default(),
        }
    }

    fn inside(&self, t: Ns) -> bool {
        self.first
            .is_some_and(|start| t >= start && t < self.end_ns)
    }
}

impl Fold for WindowTally<'_> {
    fn kernel(&mut self, k: &KernelRow, _launch: Option<&CallRow>) {
        self.first.get_or_insert(k.start);
        self.end_ns = self.end_ns.max(k.end);
        self.busy.entry(k.device).or_default().push(k.start, k.end);
        if k.work != crate::model::Work::Kernel {
            return;
        }
        self.kernels += 1;
        self.kernel_ops
            .add(self.strings.get(k.short_name), k.end - k.start);
    }

    fn call(&mut self, c: &CallRow) {
        if self.inside(c.start) {
            self.api_ops.add(self.strings.get(c.name), c.end - c.start);
        }
    }

    /// NVTX ranges starting in the window, by their visible name; not the forward steps.
    fn range(&mut self, r: &NvtxRow) {
        let Some(name) = visible_row_name(r, &self.sw) else {
            return;
        };
        if step_of_row(r, &self.sw, &self.step_names).is_some() {
            return;
        }
        if self.inside(r.start) {
            self.nvtx_ops
                .add(self.strings.get(name), (r.end - r.start).max(0));
        }
    }
}

/// Every device's idle time by cause, as the drill-down attributes it, per second of window.
fn idle_causes(idle: &IdleAttribution, window_s: f64) -> Vec<(String, f64)> {
    let mut by_kind: Vec<(String, f64)> = Vec::new();
    for cause in idle.per_device.iter().flat_map(|d| &d.causes) {
        let us_per_s = cause.ns as f64 / 1000.0 / window_s;
        match by_kind.iter_mut().find(|(k, _)| k == cause.kind.name()) {
            Some((_, v)) => *v += us_per_s,
            None => by_kind.push((cause.kind.name().to_string(), us_per_s)),
        }
    }
    by_kind.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    by_kind
}

/// Devices with GPU work (ascending), and the mean over them of their GPU work's union over
/// the window.
fn busy_share(devices: impl Iterator<Item = UnionLength>, span: Ns) -> (usize, f64) {
    let (mut count, mut busy) = (0usize, 0f64);
    for d in devices {
        count += 1;
        busy += d.total() as f64 / span as f64;
    }
    let devices = count.max(1);
    (devices, busy / devices as f64)
}

/// Baseline vs target over their whole kernel windows: every per-name value is µs per second
/// of kernel window (the `*_us_per_step` fields of the rows hold that figure here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowComparison {
    /// Says plainly that this is a window comparison, and why.
    pub note: String,
    /// Steps could not be compared in one or both traces: this comparison is the answer.
    pub replaces_steps: bool,
    pub unit: &'static str,
    pub window_s: Delta,
    pub gpu_busy_share: Delta,
    pub kernels_per_s: Delta,
    /// Mean kernel time: kernel time per kernel launched (µs).
    pub kernel_us_per_kernel: Delta,
    pub kernels: Vec<OpDelta>,
    pub api: Vec<OpDelta>,
    pub nvtx: Vec<OpDelta>,
    /// GPU-idle time by cause (`sync`, `launch`, `untraced` …), µs per second of window.
    pub idle_causes: Vec<OpDelta>,
    /// The kernel, CUDA API or NVTX op that grew most per second of window.
    pub top_regression: Option<WindowRegression>,
    pub primary_cause: Option<&'static str>,
    pub conclusion: String,
}

/// The largest growth of one table, with the table it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowRegression {
    /// `kernel`, `cuda-api` or `nvtx`.
    pub kind: &'static str,
    #[serde(flatten)]
    pub row: OpDelta,
}

fn per_s(rows: &[WindowRow]) -> PerName {
    PerName(rows.iter().map(|r| (r.name.clone(), r.us_per_s)).collect())
}

fn mean_kernel_us(w: &WindowFigures) -> f64 {
    w.kernel_ops.iter().map(|r| r.total_us).sum::<f64>() / w.kernels.max(1) as f64
}

/// Compares two kernel windows; `missing` names the trace(s) without per-step figures (empty:
/// both have them).
pub fn compare_windows(b: &WindowFigures, t: &WindowFigures, missing: &str) -> WindowComparison {
    let d = |x: f64, y: f64| Delta::new(Some(x), Some(y), Profile::Standard);
    let kernels = rows(&per_s(&b.kernel_ops), &per_s(&t.kernel_ops));
    let api = rows(&per_s(&b.api_ops), &per_s(&t.api_ops));
    let nvtx = rows(&per_s(&b.nvtx_ops), &per_s(&t.nvtx_ops));
    let idle_causes = rows(
        &PerName(b.idle_causes.clone()),
        &PerName(t.idle_causes.clone()),
    );
    // Host tables and the kernel table each nominate their largest growth; the largest wins.
    let top_regression = [("kernel", &kernels), ("cuda-api", &api), ("nvtx", &nvtx)]
        .into_iter()
        .filter_map(|(kind, table)| {
            regressions(table)
                .into_iter()
                .next()
                .map(|row| WindowRegression { kind, row })
        })
        .max_by(|x, y| x.row.delta_us.total_cmp(&y.row.delta_us));
    let busy = d(b.gpu_busy_share, t.gpu_busy_share);
    let primary_cause = top_regression.as_ref().map(|r| match r.kind {
        "kernel" => "GPU execution",
        _ => "host overhead",
    });
    let why = if missing.is_empty() {
        "alongside the per-step comparison".to_string()
    } else {
        format!("no per-step figures in {missing}, so")
    };
    let note = format!(
        "Window comparison: {why} the whole kernel windows are compared (first kernel start to last kernel end), normalized per second of kernel window and per kernel launched"
    );
    let conclusion = window_conclusion(&note, &busy, top_regression.as_ref());
    WindowComparison {
        note,
        replaces_steps: !missing.is_empty(),
        unit: "µs per second of kernel window",
        window_s: d(b.window_s, t.window_s),
        gpu_busy_share: busy,
        kernels_per_s: d(b.kernels_per_s, t.kernels_per_s),
        kernel_us_per_kernel: d(mean_kernel_us(b), mean_kernel_us(t)),
        kernels,
        api,
        nvtx,
        idle_causes,
        top_regression,
        primary_cause,
        conclusion,
    }
}

fn window_conclusion(note: &str, busy: &Delta, top: Option<&WindowRegression>) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.1}%", v * 100.0));
    let busy_text = format!("GPU busy {} → {}", pct(busy.baseline), pct(busy.target));
    let top_text = match top {
        Some(r) => format!(
            "the largest regression is {} `{}`: {:.0} → {:.0} µs per second of window ({})",
            r.kind,
            r.row.name,
            r.row.baseline_us_per_step,
            r.row.target_us_per_step,
            r.row
                .delta_pct
                .map_or("new".to_string(), |p| format!("{p:+.1}%"))
        ),
        None => "no kernel, CUDA API or NVTX op grew per second of window".to_string(),
    };
    format!("{note}. {busy_text}; {top_text}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::TraceBuilder;

    /// Device 0: 0..100, 50..150 and 300..400 ns, a union of 250 ns; device 1: 100..200 and
    /// 120..130 ns (100 ns) and a zero-length kernel at 500 ns. Over a 500 ns window: 50 % and
    /// 20 % busy, 35 % on average.
    fn kernels(order: &[usize]) -> TraceBuilder {
        let all = [
            (0, 0, 100),
            (0, 50, 150),
            (0, 300, 400),
            (1, 100, 200),
            (1, 120, 130),
            (1, 500, 500),
        ];
        let mut b = TraceBuilder::new();
        for &i in order {
            let (device, start, end) = all[i];
            b.kernel_on((device, 7), "k", (start, end), 0);
        }
        b
    }

    #[test]
    fn busy_share_is_each_devices_union_averaged_in_start_order_or_not() {
        for order in [[0, 1, 3, 4, 2, 5], [2, 5, 4, 0, 3, 1]] {
            let b = kernels(&order);
            let w = window_figures(&b.trace).ok().flatten().expect("kernels");
            assert_eq!((w.start_ns, w.end_ns, w.devices), (0, 500, 2), "{order:?}");
            let busy = w.gpu_busy_share;
            assert!((busy - 0.35).abs() < 1e-12, "{order:?}: {busy}");
        }
    }
}
