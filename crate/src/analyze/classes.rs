//! Time per kernel class (issue 40 item 3): GPU time and count per class of GPU work — GEMM,
//! attention, collective, norm, elementwise, reduction, sampling, memory kernels, copies,
//! memsets, graph replays, other — per steady step, per phase (context / generation steps,
//! when the benchmark window holds both) and over the whole kernel window; for a pair, the
//! deltas and the class that grew most.
//!
//! The class of a row is `model::Work::class`, the rule the timeline colours GPU work by. GPU
//! time per class is **summed**: each row counts its whole duration, so two kernels of one class
//! running at once on two streams or devices count twice (the conventional "kernel time", as
//! `nsys stats`' `cuda_gpu_kern_sum` and the per-name kernel table add it; `gpu_time_per_step_us`
//! is the busy union instead, so the classes may add up to more than it). A row counts in a
//! step by when it was launched (its launch call's start; its own start when no call joins it),
//! as the per-step kernel table counts kernels.
//!
//! One fold over the GPU work rows in start order (`ClassFold`), riding on the standard
//! profile's last pass: its state is classes × scopes (whole window, steady steps, two phases)
//! plus the scopes' step spans, never a row per kernel.

use serde::{Deserialize, Serialize};

use super::ops::contains;
use crate::index::Fold;
use crate::model::rows::{CallRow, KernelRow};
use crate::model::{Ns, Strings};
use crate::names::kernels::KernelCategory;

const CLASSES: usize = KernelCategory::ALL.len();

/// Per-step and per-phase figures: µs and rows per step.
pub const PER_STEP: &str = "step";
/// Whole-window figures: µs and rows per second of kernel window.
pub const PER_SECOND: &str = "second of kernel window";

/// One class's GPU time and rows in one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRow {
    pub class: KernelCategory,
    /// The class as the tables say it (`GEMM`, `graph replay` …).
    pub label: String,
    /// Summed GPU time of the class's rows, µs per unit (`per` of the table).
    pub gpu_us: f64,
    /// Rows of the class (kernels, replays, copies, memsets), per unit.
    pub count: f64,
    /// Summed GPU time over the whole scope, µs.
    pub total_us: f64,
    /// Rows over the whole scope.
    pub rows: u64,
    /// Share of the scope's summed GPU time, 0–1.
    pub share: f64,
}

/// GPU time per class in one scope: the steady steps, a phase, or the whole kernel window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassTable {
    /// `steady steps`, `context steps`, `generation steps` or `whole kernel window`.
    pub scope: String,
    /// What `gpu_us` and `count` are per: `step` or `second of kernel window`.
    pub per: String,
    /// The divisor: step cycles, or the window's length in seconds.
    pub divisor: f64,
    /// Summed GPU time of every class, µs per unit.
    pub gpu_us: f64,
    /// The classes with rows in the scope, in [`KernelCategory::ALL`]'s order.
    pub classes: Vec<ClassRow>,
}

impl ClassTable {
    pub fn row(&self, class: KernelCategory) -> Option<&ClassRow> {
        self.classes.iter().find(|r| r.class == class)
    }
}

/// A trace's time per kernel class (`kernel_classes` of a breakdown, `standard` only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelClasses {
    /// Per steady step (the steady step cycles of the per-step figures); null without them.
    pub per_step: Option<ClassTable>,
    /// Per context step and per generation step of the benchmark window (each step's start to
    /// the next step's start), when it holds both; else empty.
    pub phases: Vec<ClassTable>,
    /// The whole kernel window (first GPU operation's start to the last one's end), per
    /// second of it; every GPU work row counts.
    pub window: ClassTable,
}

impl KernelClasses {
    /// The table a chart or a comparison shows: per step when there is one, else the window.
    pub fn main(&self) -> &ClassTable {
        self.per_step.as_ref().unwrap_or(&self.window)
    }
}

/// One scope's step spans (sorted, disjoint) and how many step cycles they hold.
#[derive(Debug, Clone, Default)]
pub(super) struct StepSpans {
    pub scope: &'static str,
    pub spans: Vec<(Ns, Ns)>,
    pub cycles: usize,
}

/// Context and generation step cycles of the benchmark window's steps `(start, end, ctx)` in
/// start order (a step's start to the next step's start; the last step has none): both scopes
/// when the window holds steps of both kinds, else none.
pub(super) fn phase_spans(steps: impl Iterator<Item = (Ns, bool)>) -> Vec<StepSpans> {
    let mut context = StepSpans {
        scope: "context steps",
        ..StepSpans::default()
    };
    let mut generation = StepSpans {
        scope: "generation steps",
        ..StepSpans::default()
    };
    let mut prev: Option<(Ns, bool)> = None;
    for (start, is_context) in steps {
        if let Some((s, ctx)) = prev {
            let scope = if ctx { &mut context } else { &mut generation };
            scope.spans.push((s, start));
            scope.cycles += 1;
        }
        prev = Some((start, is_context));
    }
    if context.cycles == 0 || generation.cycles == 0 {
        return Vec::new();
    }
    for s in [&mut context, &mut generation] {
        s.spans = crate::model::intervals::IntervalSet::from_unsorted(std::mem::take(&mut s.spans))
            .spans()
            .to_vec();
    }
    vec![context, generation]
}

/// Summed ns and rows per class.
#[derive(Debug, Clone, Copy, Default)]
struct Tally([(Ns, u64); CLASSES]);

impl Tally {
    fn add(&mut self, class: KernelCategory, ns: Ns) {
        if let Some(i) = KernelCategory::ALL.iter().position(|c| *c == class)
            && let Some(slot) = self.0.get_mut(i)
        {
            slot.0 = slot.0.saturating_add(ns);
            slot.1 += 1;
        }
    }

    fn table(&self, scope: &str, per: &str, divisor: f64) -> ClassTable {
        let divisor = if divisor > 0.0 { divisor } else { 1.0 };
        let total: Ns = self.0.iter().fold(0, |sum: Ns, t| sum.saturating_add(t.0));
        let classes = KernelCategory::ALL
            .iter()
            .zip(self.0)
            .filter(|(_, (_, rows))| *rows > 0)
            .map(|(&class, (ns, rows))| {
                let total_us = ns as f64 / 1000.0;
                ClassRow {
                    class,
                    label: class.label().to_string(),
                    gpu_us: total_us / divisor,
                    count: rows as f64 / divisor,
                    total_us,
                    rows,
                    share: if total > 0 {
                        ns as f64 / total as f64
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        ClassTable {
            scope: scope.to_string(),
            per: per.to_string(),
            divisor,
            gpu_us: total as f64 / 1000.0 / divisor,
            classes,
        }
    }
}

/// The fold: every GPU work row (`Fold` over `EventRows::gpu_work`) into the whole
/// window's tally, and by its launch time into the steady steps' and each phase's.
pub(super) struct ClassFold<'a> {
    strings: &'a Strings,
    /// Each distinct name's class, once (a trace has far fewer names than rows).
    by_name: std::collections::HashMap<(crate::model::NameId, u8), KernelCategory>,
    window: Tally,
    extent: Option<(Ns, Ns)>,
    steady: Option<(StepSpans, Tally)>,
    phases: Vec<(StepSpans, Tally)>,
}

impl<'a> ClassFold<'a> {
    pub(super) fn new(
        strings: &'a Strings,
        steady: Option<StepSpans>,
        phases: Vec<StepSpans>,
    ) -> ClassFold<'a> {
        ClassFold {
            strings,
            by_name: std::collections::HashMap::new(),
            window: Tally::default(),
            extent: None,
            steady: steady.map(|s| (s, Tally::default())),
            phases: phases.into_iter().map(|p| (p, Tally::default())).collect(),
        }
    }

    pub(super) fn finish(self) -> KernelClasses {
        let per_step = self
            .steady
            .map(|(s, t)| t.table(s.scope, PER_STEP, s.cycles as f64));
        let phases = self
            .phases
            .iter()
            .map(|(s, t)| t.table(s.scope, PER_STEP, s.cycles as f64))
            .collect();
        let window_s = self
            .extent
            .map_or(0.0, |(s, e)| (e - s).max(1) as f64 / 1e9);
        KernelClasses {
            per_step,
            phases,
            window: self
                .window
                .table("whole kernel window", PER_SECOND, window_s),
        }
    }
}

/// GPU time per kernel class over the whole kernel window of `rows`, per second of it (what the
/// explainer report shows of one trace): one pass over its GPU work rows, no launch join.
pub fn window_classes(
    rows: &dyn crate::model::rows::EventRows,
) -> crate::error::Result<ClassTable> {
    let mut fold = ClassFold::new(&rows.meta().strings, None, Vec::new());
    for k in rows.gpu_work() {
        fold.kernel(&k, None);
    }
    rows.check()?;
    Ok(fold.finish().window)
}

/// A small key for a row's kind, so each (name, kind) is classed once.
fn kind_key(work: crate::model::Work) -> u8 {
    use crate::model::Work;
    match work {
        Work::Kernel => 0,
        Work::Replay => 1,
        Work::Copy { .. } => 2,
        Work::Memset => 3,
    }
}

impl Fold for ClassFold<'_> {
    fn kernel(&mut self, k: &KernelRow, call: Option<&CallRow>) {
        let strings = self.strings;
        let class = *self
            .by_name
            .entry((k.short_name, kind_key(k.work)))
            .or_insert_with(|| k.work.class(strings.get(k.short_name)));
        let ns = (k.end - k.start).max(0);
        self.window.add(class, ns);
        self.extent = Some(match self.extent {
            None => (k.start, k.end.max(k.start)),
            Some((s, e)) => (s.min(k.start), e.max(k.end)),
        });
        let launched = call.map_or(k.start, |c| c.start);
        if let Some((s, t)) = &mut self.steady
            && contains(&s.spans, launched)
        {
            t.add(class, ns);
        }
        for (s, t) in &mut self.phases {
            if contains(&s.spans, launched) {
                t.add(class, ns);
            }
        }
    }
}

/// One class in both traces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassDelta {
    pub class: KernelCategory,
    pub label: String,
    /// GPU time per unit (`per` of the comparison), µs.
    pub baseline_us: f64,
    pub target_us: f64,
    pub delta_us: f64,
    /// Null when the class is new (no baseline time).
    pub delta_pct: Option<f64>,
    /// Rows per unit.
    pub baseline_count: f64,
    pub target_count: f64,
}

/// Baseline vs target per kernel class (`kernel_classes` of a comparison, `standard` only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassComparison {
    /// The tables compared: `steady steps` when both traces have per-step figures (and the
    /// comparison is per step), else `whole kernel window`.
    pub scope: String,
    /// What the figures are per: `step` or `second of kernel window`.
    pub per: String,
    /// Summed GPU time per unit, every class.
    pub gpu_us: super::compare::Delta,
    /// Every class with rows in either trace, in [`KernelCategory::ALL`]'s order.
    pub classes: Vec<ClassDelta>,
    /// The class whose GPU time per unit grew most (null when none grew): the one the
    /// conclusion names when GPU execution grew.
    pub grew_most: Option<ClassDelta>,
    /// Per context step and per generation step, when the comparison is per step and both
    /// traces have both phases; else empty.
    pub phases: Vec<PhaseDeltas>,
}

/// One phase's classes in both traces, µs per step of the phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseDeltas {
    /// `context steps` or `generation steps`.
    pub scope: String,
    pub classes: Vec<ClassDelta>,
}

/// Compares two traces' class tables: per step when `per_step` (both have steady figures and
/// the comparison is per step), else over their whole windows.
pub fn compare_classes(
    b: &KernelClasses,
    t: &KernelClasses,
    per_step: bool,
) -> Option<ClassComparison> {
    let (bt, tt) = match (&b.per_step, &t.per_step) {
        (Some(bs), Some(ts)) if per_step => (bs, ts),
        _ => (&b.window, &t.window),
    };
    let classes = deltas(bt, tt);
    let grew_most = classes
        .iter()
        .filter(|c| c.delta_us > 0.0)
        .fold(None::<&ClassDelta>, |best, c| match best {
            Some(b) if b.delta_us >= c.delta_us => Some(b),
            _ => Some(c),
        })
        .cloned();
    Some(ClassComparison {
        scope: bt.scope.clone(),
        per: bt.per.clone(),
        gpu_us: super::compare::Delta::new(
            Some(bt.gpu_us),
            Some(tt.gpu_us),
            crate::profile::Profile::Standard,
        ),
        classes,
        grew_most,
        phases: if per_step {
            phase_deltas(b, t)
        } else {
            Vec::new()
        },
    })
}

/// Each phase of `b` and `t` compared, when both have the same phases.
fn phase_deltas(b: &KernelClasses, t: &KernelClasses) -> Vec<PhaseDeltas> {
    let scopes = |k: &KernelClasses| k.phases.iter().map(|p| p.scope.clone()).collect::<Vec<_>>();
    if b.phases.is_empty() || scopes(b) != scopes(t) {
        return Vec::new();
    }
    b.phases
        .iter()
        .zip(&t.phases)
        .map(|(bp, tp)| PhaseDeltas {
            scope: bp.scope.clone(),
            classes: deltas(bp, tp),
        })
        .collect()
}

/// Every class with rows in either table, in [`KernelCategory::ALL`]'s order.
fn deltas(bt: &ClassTable, tt: &ClassTable) -> Vec<ClassDelta> {
    KernelCategory::ALL
        .iter()
        .filter_map(|&class| {
            let (br, tr) = (bt.row(class), tt.row(class));
            if br.is_none() && tr.is_none() {
                return None;
            }
            let us = |r: Option<&ClassRow>| r.map_or(0.0, |r| r.gpu_us);
            let count = |r: Option<&ClassRow>| r.map_or(0.0, |r| r.count);
            let (bu, tu) = (us(br), us(tr));
            Some(ClassDelta {
                class,
                label: class.label().to_string(),
                baseline_us: bu,
                target_us: tu,
                delta_us: tu - bu,
                delta_pct: (bu > 0.0).then(|| (tu - bu) / bu * 100.0),
                baseline_count: count(br),
                target_count: count(tr),
            })
        })
        .collect()
}

impl ClassComparison {
    /// The conclusion's sentence naming the class that grew most.
    pub fn sentence(&self) -> Option<String> {
        let c = self.grew_most.as_ref()?;
        let pct = c
            .delta_pct
            .map_or_else(|| "new".to_string(), |p| format!("{p:+.1}%"));
        Some(format!(
            "The kernel class that grew most is {}: {:.1} → {:.1} µs per {} ({:+.1} µs, {pct}; summed GPU time).",
            c.label, c.baseline_us, c.target_us, self.per, c.delta_us
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_spans_need_both_kinds_and_end_at_the_next_step() {
        let steps = [(0, true), (10, true), (20, false), (30, false), (45, false)];
        let p = phase_spans(steps.into_iter());
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].spans.clone(), p[0].cycles), (vec![(0, 20)], 2));
        assert_eq!((p[1].spans.clone(), p[1].cycles), (vec![(20, 45)], 2));
        assert!(phase_spans([(0, false), (10, false)].into_iter()).is_empty());
    }

    #[test]
    fn the_class_that_grew_most_is_the_largest_growth() {
        let mut b = Tally::default();
        b.add(KernelCategory::Gemm, 1000);
        b.add(KernelCategory::Norm, 500);
        let mut t = Tally::default();
        t.add(KernelCategory::Gemm, 1200);
        t.add(KernelCategory::Norm, 1000);
        t.add(KernelCategory::Copy, 100);
        let classes = |t: &Tally| KernelClasses {
            per_step: Some(t.table("steady steps", PER_STEP, 1.0)),
            phases: Vec::new(),
            window: t.table("whole kernel window", PER_SECOND, 1.0),
        };
        let c = compare_classes(&classes(&b), &classes(&t), true).expect("compared");
        let keys: Vec<&str> = c.classes.iter().map(|d| d.class.key()).collect();
        assert_eq!(keys, ["gemm", "norm", "copy"]);
        let grew = c.grew_most.as_ref().expect("grew");
        assert_eq!((grew.class, grew.delta_us), (KernelCategory::Norm, 0.5));
        assert_eq!(c.classes[2].delta_pct, None);
        assert!(
            c.sentence()
                .unwrap_or_default()
                .contains("is norm: 0.5 → 1.0 µs per step")
        );
    }
}
