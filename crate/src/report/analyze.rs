//! Text layouts of `nsys-lens analyze`: the reference's report byte for byte in `trtllm-skill`
//! (reference §8.3–§8.4), a denser layout with the same facts (and more) in `standard`.

use std::fmt::Write;

use crate::analyze::AnalyzeReport;
use crate::analyze::breakdown::{OpRow, TraceBreakdown};
use crate::analyze::classes::{ClassComparison, ClassDelta, ClassTable, KernelClasses};
use crate::analyze::compare::{Comparison, Delta, OpDelta, Status};
use crate::analyze::window::{WindowComparison, WindowFigures};
use crate::iterations::Method;

/// The whole report in the report's profile layout.
pub fn analyze_report(r: &AnalyzeReport) -> String {
    let mut out = String::new();
    if r.profile == "trtllm-skill" {
        skill::single(&mut out, &r.baseline);
        if let Some(t) = &r.target {
            skill::single(&mut out, t);
        }
        if let (Some(t), Some(c)) = (&r.target, &r.comparison) {
            skill::comparison(&mut out, &r.baseline, t, c);
        }
    } else {
        standard::single(&mut out, &r.baseline);
        if let Some(t) = &r.target {
            standard::single(&mut out, t);
        }
        if let (Some(t), Some(c)) = (&r.target, &r.comparison) {
            standard::comparison(&mut out, &r.baseline, t, c);
        }
    }
    out
}

/// `x[:55] + "..."` beyond 55 characters (NVTX and kernel rows of the reference).
fn short55(name: &str) -> String {
    if name.chars().count() > 55 {
        format!("{}...", name.chars().take(55).collect::<String>())
    } else {
        name.to_string()
    }
}

/// `op[:38] + ".."` beyond 40 characters (comparison rows of the reference).
pub(crate) fn short40(name: &str) -> String {
    if name.chars().count() > 40 {
        format!("{}..", name.chars().take(38).collect::<String>())
    } else {
        name.to_string()
    }
}

/// Seconds since the first kernel, as the reference's `t=` values.
fn t_s(ns: i64, t0: i64) -> f64 {
    (ns - t0) as f64 / 1e9
}

/// The reference's comparison table (§8.4): `first_col`, baseline, target, delta, delta%,
/// status; at most `limit` rows.
fn delta_table(
    o: &mut String,
    first_col: &str,
    rows: &[OpDelta],
    limit: usize,
    status: fn(Status) -> &'static str,
) {
    let _ = writeln!(
        o,
        "  {:<40} {:>10} {:>10} {:>10} {:>8}  Status",
        first_col, "Baseline", "Target", "Delta", "Delta%"
    );
    let dashes = |n: usize| "-".repeat(n);
    let _ = writeln!(
        o,
        "  {} {} {} {} {}  ------",
        dashes(40),
        dashes(10),
        dashes(10),
        dashes(10),
        dashes(8)
    );
    for r in rows.iter().take(limit) {
        let pct = r
            .delta_pct
            .map_or_else(|| "NEW".to_string(), |p| format!("{p:+.0}%"));
        let _ = writeln!(
            o,
            "  {:<40} {:10.1} {:10.1} {:+10.1} {:>8}  {}",
            short40(&r.name),
            r.baseline_us_per_step,
            r.target_us_per_step,
            r.delta_us,
            pct,
            status(r.status)
        );
    }
}

mod skill {
    use super::*;

    const RULE: &str =
        "================================================================================";

    fn banner(o: &mut String, title: &str) {
        let _ = write!(o, "\n\n{RULE}\n{title}\n{RULE}\n");
    }

    /// Reference §8.3.
    pub fn single(o: &mut String, b: &TraceBreakdown) {
        banner(o, &format!("ANALYSIS: {}", b.label));
        let iso = &b.isolation;
        // The script labels its fallback `nvtx` even when it finds no forward steps either.
        let method = match b.iteration_method {
            Method::Allreduce => "allreduce",
            Method::Nvtx | Method::None => "nvtx",
            Method::Inferred => "inferred",
        };
        let _ = writeln!(o, "\n--- Iteration Detection (method: {method}) ---");
        let _ = writeln!(o, "  Total iterations: {}", iso.total_iterations);
        if b.iteration_method == Method::Allreduce {
            let _ = writeln!(
                o,
                "  Most common iteration size: {} allreduce kernels",
                iso.common_size
            );
        }
        let _ = writeln!(o, "  Phases detected: {}", iso.phases.len());
        for (i, p) in iso.phases.iter().enumerate() {
            let n = p.last + 1 - p.first;
            let _ = writeln!(
                o,
                "    Phase {i}: iters {}-{} ({n} iters), t={:.2}s-{:.2}s, {}/{n} have common size",
                p.first,
                p.last,
                t_s(p.start_ns, iso.t0_ns),
                t_s(p.end_ns, iso.t0_ns),
                p.at_common_size
            );
        }
        let (Some(bench), Some(window)) = (
            iso.benchmark_phase.and_then(|i| iso.phases.get(i)),
            b.benchmark_window,
        ) else {
            let _ = writeln!(o, "\n  WARNING: Could not identify benchmark phase.");
            return;
        };
        let n = bench.last + 1 - bench.first;
        let (ts, te) = (
            t_s(window.start_ns, iso.t0_ns),
            t_s(window.end_ns, iso.t0_ns),
        );
        let (w, g) = (&iso.iteration_wall_us, &iso.iteration_gap_us);
        let _ = writeln!(
            o,
            "\n  Benchmark phase: iters {}-{} ({n} iters)",
            bench.first, bench.last
        );
        let _ = writeln!(o, "  Time range: t={ts:.4}s - {te:.4}s ({:.4}s)", te - ts);
        let _ = writeln!(o, "  Avg iteration wall time: {:.1} us", w.avg);
        let _ = writeln!(o, "  P50: {:.1} us, P90: {:.1} us", w.p50, w.p90);
        let _ = writeln!(
            o,
            "\n  Inter-iteration gap: avg={:.1} us, P50={:.1} us, P90={:.1} us",
            g.avg, g.p50, g.p90
        );
        steady(o, b);
    }

    fn steady(o: &mut String, b: &TraceBreakdown) {
        let _ = writeln!(o, "\n--- Steady-State Forward Step Analysis ---");
        let Some(s) = &b.steady else {
            let _ = writeln!(o, "  No [Executor] _forward_step NVTX ranges found.");
            return;
        };
        let _ = writeln!(o, "  Max generation requests observed: {}", s.max_gen);
        let _ = writeln!(
            o,
            "  Steady-state steps (0 ctx, {} gen): {}",
            s.max_gen, s.ranges
        );
        let _ = writeln!(
            o,
            "  Unique steady-state steps: {}",
            b.steady_steps.unwrap_or(0)
        );
        let Some(wps) = b.wall_time_per_step_us else {
            return;
        };
        let (d, g) = (&s.step_duration_us, &s.inter_step_gap_us);
        let _ = writeln!(
            o,
            "\n  Step duration: avg={:.1} us, P50={:.1} us, P90={:.1} us",
            d.avg, d.p50, d.p90
        );
        let _ = writeln!(
            o,
            "  Inter-step gap: avg={:.1} us, P50={:.1} us, P90={:.1} us",
            g.avg, g.p50, g.p90
        );
        let _ = writeln!(
            o,
            "\n  Steady-state wall time: {:.1} us ({:.4}s)",
            s.window_us,
            s.window_us / 1e6
        );
        let _ = writeln!(o, "  Wall time per step: {wps:.1} us");
        let tp = u64::from(b.tp_size.max(1));
        let _ = writeln!(o, "\n--- NVTX Breakdown (steady-state) ---");
        for r in &b.nvtx_ops {
            let _ = writeln!(
                o,
                "    {:<60}: {:8.1} us/step  (total={:.0}us, cnt={})",
                short55(&r.name),
                r.us_per_step,
                r.total_us / tp as f64,
                r.calls / tp
            );
        }
        let _ = writeln!(o, "\n--- GPU Kernels (steady-state) ---");
        for r in &b.kernel_ops {
            let _ = writeln!(
                o,
                "    {:<60}: {:7.1} us/step  (cnt={}, total={:.0}us)",
                short55(&r.name),
                r.us_per_step,
                r.calls,
                r.total_us
            );
        }
        let _ = writeln!(
            o,
            "  Total GPU per step: {:.1} us",
            b.gpu_time_per_step_us.unwrap_or(0.0)
        );
        let _ = writeln!(
            o,
            "  Kernel launches per step: {:.1}",
            b.kernels_per_step.unwrap_or(0.0)
        );
        let _ = writeln!(o, "\n--- CUDA API (steady-state) ---");
        for r in &b.api_ops {
            let _ = writeln!(
                o,
                "    {:<50}: {:7.1} us/step  (cnt={})",
                r.name, r.us_per_step, r.calls
            );
        }
    }

    /// `b vs t us  (+d us, +p%)` with the reference's zero-baseline rule.
    fn versus(d: &Delta) -> String {
        format!(
            "{:.1} vs {:.1} us  ({:+.1} us, {:+.1}%)",
            d.baseline.unwrap_or(0.0),
            d.target.unwrap_or(0.0),
            d.delta.unwrap_or(0.0),
            d.delta_pct.unwrap_or(0.0)
        )
    }

    /// Reference §8.4.
    pub fn comparison(o: &mut String, b: &TraceBreakdown, t: &TraceBreakdown, c: &Comparison) {
        banner(o, &format!("COMPARISON: {} vs {}", b.label, t.label));
        if !c.benchmark_found {
            let _ = writeln!(
                o,
                "\n  Cannot compare: benchmark phase not found in one or both traces."
            );
            return;
        }
        let _ = writeln!(o, "\n--- Allreduce Iteration Comparison ---");
        let _ = writeln!(
            o,
            "  Benchmark iterations: {} vs {}",
            b.iterations.unwrap_or(0),
            t.iterations.unwrap_or(0)
        );
        let _ = writeln!(
            o,
            "  Avg iteration wall time: {}",
            versus(&c.iteration_wall_us)
        );
        let _ = writeln!(
            o,
            "  Inter-iter gap avg: {}",
            versus(&c.iteration_gap_avg_us)
        );
        let p50 = &c.iteration_gap_p50_us;
        let _ = writeln!(
            o,
            "  Inter-iter gap P50: {:.1} vs {:.1} us",
            p50.baseline.unwrap_or(0.0),
            p50.target.unwrap_or(0.0)
        );
        let both_steady = b.wall_time_per_step_us.is_some_and(|v| v != 0.0)
            && t.wall_time_per_step_us.is_some_and(|v| v != 0.0);
        if both_steady {
            let _ = writeln!(o, "\n--- Steady-State Per-Step Comparison ---");
            let _ = writeln!(
                o,
                "  Wall time per step: {}",
                versus(&c.wall_time_per_step_us)
            );
            let _ = writeln!(o, "  Step duration avg: {}", versus(&c.step_duration_us));
            let _ = writeln!(
                o,
                "  Inter-step gap P50: {}",
                versus(&c.inter_step_gap_p50_us)
            );
        }
        if !b.nvtx_per_step_us.is_empty() || !t.nvtx_per_step_us.is_empty() {
            let _ = writeln!(o, "\n--- NVTX Per-Step Comparison (steady-state) ---");
            delta_table(o, "Operation", &c.nvtx, 20, Status::label);
        }
        let gpu = &c.gpu_time_per_step_us;
        if gpu.baseline.unwrap_or(0.0) != 0.0 || gpu.target.unwrap_or(0.0) != 0.0 {
            let k = &c.kernels_per_step;
            let (kb, kt) = (k.baseline.unwrap_or(0.0), k.target.unwrap_or(0.0));
            let _ = writeln!(o, "\n--- GPU Per-Step Comparison ---");
            let _ = writeln!(o, "  GPU time per step: {}", versus(gpu));
            let _ = writeln!(
                o,
                "  Kernels per step: {kb:.1} vs {kt:.1}  ({:+.1})",
                kt - kb
            );
        }
        summary(o, b, t, c, both_steady);
    }

    fn summary(
        o: &mut String,
        b: &TraceBreakdown,
        t: &TraceBreakdown,
        c: &Comparison,
        both_steady: bool,
    ) {
        let _ = writeln!(o, "\n--- Summary ---");
        if !both_steady {
            return;
        }
        let w = &c.wall_time_per_step_us;
        let _ = writeln!(
            o,
            "  Per-step wall time regression: {:+.1} us ({:+.1}%)",
            w.delta.unwrap_or(0.0),
            w.delta_pct.unwrap_or(0.0)
        );
        let _ = writeln!(
            o,
            "    Step duration contribution: {:+.1} us",
            c.step_duration_us.delta.unwrap_or(0.0)
        );
        let _ = writeln!(
            o,
            "    Inter-step gap contribution (P50): {:+.1} us",
            c.inter_step_gap_p50_us.delta.unwrap_or(0.0)
        );
        if c.primary_cause == Some("inter-step host overhead") {
            let _ = writeln!(
                o,
                "\n  CONCLUSION: Regression is primarily in INTER-STEP HOST OVERHEAD."
            );
            let _ = writeln!(
                o,
                "    The gap between forward steps increased more than step execution."
            );
        } else {
            let _ = writeln!(
                o,
                "\n  CONCLUSION: Regression is primarily in STEP EXECUTION TIME."
            );
            let _ = writeln!(
                o,
                "    Forward step duration increased more than inter-step gap."
            );
        }
        if b.nvtx_per_step_us.is_empty() || t.nvtx_per_step_us.is_empty() {
            return;
        }
        let _ = writeln!(o, "\n  Top regression sources (us/step):");
        for r in c
            .top_regressions
            .iter()
            .take(crate::analyze::compare::TOP_SOURCES)
        {
            if r.baseline_us_per_step > 0.0 {
                let _ = writeln!(
                    o,
                    "    {}: {:.0} -> {:.0}  (+{:.0})",
                    r.name, r.baseline_us_per_step, r.target_us_per_step, r.delta_us
                );
            } else {
                let _ = writeln!(o, "    {}: NEW  (+{:.0})", r.name, r.delta_us);
            }
        }
    }
}

mod standard {
    use super::*;

    fn fig(v: Option<f64>, unit: &str) -> String {
        v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}{unit}"))
    }

    /// One trace: isolation, steady state, per-step tables, warnings, hand-off block.
    pub fn single(o: &mut String, b: &TraceBreakdown) {
        let iso = &b.isolation;
        let _ = writeln!(o, "Root cause: {}   (profile: {})", b.label, b.profile);
        let _ = writeln!(
            o,
            "Iterations: {} — {}",
            b.iteration_method.name(),
            iso.reason
        );
        for (i, p) in iso.phases.iter().enumerate() {
            let mark = if iso.benchmark_phase == Some(i) {
                "  ← benchmark"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "  phase {i}: iterations {}–{} ({}), t = {:.3}–{:.3} s, {} at the common size ({}){mark}",
                p.first,
                p.last,
                p.last + 1 - p.first,
                t_s(p.start_ns, iso.t0_ns),
                t_s(p.end_ns, iso.t0_ns),
                p.at_common_size,
                iso.common_size
            );
        }
        if let Some(w) = b.benchmark_window {
            let _ = writeln!(
                o,
                "  benchmark window: {} – {} ns ({:.3} ms), {} iterations; iteration wall time mean {:.1} µs, gap mean {:.1} µs",
                w.start_ns,
                w.end_ns,
                (w.end_ns - w.start_ns) as f64 / 1e6,
                b.iterations.unwrap_or(0),
                iso.iteration_wall_us.avg,
                iso.iteration_gap_us.avg
            );
        }
        if let Some(n) = iso.nvtx_steps_in_window {
            let _ = writeln!(
                o,
                "  cross-check: {n} forward steps (TP ranks merged) in the benchmark window"
            );
        }
        steady(o, b);
        if b.steady.is_none()
            && let Some(w) = &b.window
        {
            whole_window(o, w);
        }
        if let Some(k) = &b.kernel_classes {
            kernel_classes(o, k);
        }
        for w in &b.warnings {
            let _ = writeln!(o, "Warning: {w}");
        }
        let _ = writeln!(o, "\n{}", b.handoff.text);
    }

    /// Without steps: the whole kernel window, normalized, so the trace still gives figures.
    fn whole_window(o: &mut String, w: &WindowFigures) {
        let _ = writeln!(
            o,
            "\nWhole kernel window (no steps: figures per second of window): {:.3} ms, {} kernels on {} device(s), {:.0} kernels/s, GPU busy {:.1}%",
            w.window_s * 1000.0,
            w.kernels,
            w.devices,
            w.kernels_per_s,
            w.gpu_busy_share * 100.0
        );
        for (title, rows) in [
            ("GPU kernels", &w.kernel_ops),
            ("CUDA API calls", &w.api_ops),
            ("NVTX ops", &w.nvtx_ops),
        ] {
            if rows.is_empty() {
                let _ = writeln!(o, "  {title}: none in the window");
                continue;
            }
            let _ = writeln!(
                o,
                "\n  {:<60} {:>10} {:>12}",
                format!("{title} (top 10)"),
                "µs/s",
                "µs/kernel"
            );
            for r in rows.iter().take(10) {
                let _ = writeln!(
                    o,
                    "    {:<58} {:10.1} {:12.3}",
                    short55(&r.name),
                    r.us_per_s,
                    r.us_per_kernel
                );
            }
        }
    }

    fn steady(o: &mut String, b: &TraceBreakdown) {
        let (Some(s), Some(wall)) = (&b.steady, b.wall_time_per_step_us) else {
            return;
        };
        let (d, g) = (&s.step_duration_us, &s.inter_step_gap_us);
        let _ = writeln!(
            o,
            "\nSteady state: {} steps at 0 ctx / {} gen requests ({} ranges), figures per step over {} step cycles ({:.3} ms)",
            b.steady_steps.unwrap_or(0),
            s.max_gen,
            s.ranges,
            s.per_step_divisor,
            s.window_us / 1000.0
        );
        let _ = writeln!(
            o,
            "  wall time per step       {wall:10.1} µs  (a step's start to the next step's start)"
        );
        let _ = writeln!(
            o,
            "  forward step duration    {:10.1} µs  (p50 {:.1}, p90 {:.1})",
            d.avg, d.p50, d.p90
        );
        let _ = writeln!(
            o,
            "  inter-step gap           {:10.1} µs  (p50 {:.1}, p90 {:.1})",
            g.avg, g.p50, g.p90
        );
        let _ = writeln!(
            o,
            "  kernels launched / step  {:>10}",
            fig(b.kernels_per_step, "")
        );
        let _ = writeln!(
            o,
            "  GPU busy / step          {:>10} µs   (every GPU operation: kernels, graph replays, copies, memsets; devices summed)",
            fig(b.gpu_time_per_step_us, "")
        );
        nvtx_table(o, b);
        table(o, "GPU kernels per step (kernel rows only)", &b.kernel_ops);
        table(o, "CUDA API calls per step", &b.api_ops);
    }

    /// GPU time per kernel class: per steady step (else per second of the whole window), and
    /// per phase when the window has context and generation steps.
    fn kernel_classes(o: &mut String, k: &KernelClasses) {
        let tables = std::iter::once(k.main()).chain(&k.phases);
        for t in tables {
            class_table(o, t);
        }
    }

    fn class_table(o: &mut String, t: &ClassTable) {
        let unit = if t.per == crate::analyze::classes::PER_STEP {
            "µs/step"
        } else {
            "µs/s"
        };
        let _ = writeln!(
            o,
            "\n  {:<40} {:>10} {:>10} {:>7}",
            format!("Time per kernel class ({}, summed)", t.scope),
            unit,
            format!("rows/{}", if unit == "µs/s" { "s" } else { "step" }),
            "share"
        );
        if t.classes.is_empty() {
            let _ = writeln!(o, "    (none)");
        }
        for r in &t.classes {
            let _ = writeln!(
                o,
                "    {:<38} {:10.1} {:10.2} {:6.1}%",
                r.label,
                r.gpu_us,
                r.count,
                r.share * 100.0
            );
        }
        let _ = writeln!(o, "    {:<38} {:10.1}", "all classes", t.gpu_us);
    }

    /// Baseline vs target per kernel class, then per phase.
    fn class_deltas(o: &mut String, k: &ClassComparison) {
        let title = format!("Kernel classes ({}, µs per {})", k.scope, k.per);
        class_delta_table(o, &title, &k.classes);
        for p in &k.phases {
            let title = format!("Kernel classes ({}, µs per step)", p.scope);
            class_delta_table(o, &title, &p.classes);
        }
    }

    fn class_delta_table(o: &mut String, title: &str, rows: &[ClassDelta]) {
        let _ = writeln!(
            o,
            "\n  {:<40} {:>10} {:>10} {:>10} {:>8}",
            title, "Baseline", "Target", "Delta", "Delta%"
        );
        for r in rows {
            let pct = r
                .delta_pct
                .map_or_else(|| "NEW".to_string(), |p| format!("{p:+.0}%"));
            let _ = writeln!(
                o,
                "  {:<40} {:10.1} {:10.1} {:+10.1} {:>8}",
                r.label, r.baseline_us, r.target_us, r.delta_us, pct
            );
        }
    }

    fn table(o: &mut String, title: &str, rows: &[OpRow]) {
        let _ = writeln!(
            o,
            "\n  {:<60} {:>10} {:>12}",
            title, "µs/step", "calls/step"
        );
        if rows.is_empty() {
            let _ = writeln!(o, "    (none)");
        }
        for r in rows {
            let _ = writeln!(
                o,
                "    {:<58} {:10.1} {:12.2}",
                short55(&r.name),
                r.us_per_step,
                r.calls_per_step
            );
        }
    }

    /// The NVTX ops of one trace: time and self time per step, nested by parent (indented by
    /// depth), the names an op groups counted; the note says how.
    fn nvtx_table(o: &mut String, b: &TraceBreakdown) {
        let Some(note) = &b.nvtx_note else {
            table(o, "NVTX ops per step", &b.nvtx_ops);
            return;
        };
        let _ = writeln!(
            o,
            "\n  {:<60} {:>10} {:>10} {:>12} {:>6}",
            "NVTX ops per step", "µs/step", "self µs", "calls/step", "names"
        );
        let _ = writeln!(o, "  ({note})");
        if b.nvtx_ops.is_empty() {
            let _ = writeln!(o, "    (none)");
        }
        for r in &b.nvtx_ops {
            let indent = "  ".repeat(r.depth.unwrap_or(0).min(8) as usize);
            let _ = writeln!(
                o,
                "    {:<58} {:10.1} {:10.1} {:12.2} {:>6}",
                short55(&format!("{indent}{}", r.name)),
                r.us_per_step,
                r.self_us_per_step.unwrap_or(r.us_per_step),
                r.calls_per_step,
                r.members.len().max(1)
            );
        }
    }

    /// The NVTX ops of a comparison: self time per step in both traces and its change (the
    /// order), the total time's change, the names an op groups in each trace, the status.
    fn nvtx_deltas(o: &mut String, c: &Comparison) {
        let Some(note) = &c.nvtx_note else {
            deltas(o, "NVTX ops", &c.nvtx);
            return;
        };
        let _ = writeln!(
            o,
            "\nNVTX ops (µs/step, by change in self time)\n  ({note})"
        );
        let _ = writeln!(
            o,
            "  {:<50} {:>10} {:>10} {:>10} {:>10} {:>9}  Status",
            "Operation", "Self base", "Self tgt", "Self Δ", "Total Δ", "Names"
        );
        if c.nvtx.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for r in &c.nvtx {
            let names = r
                .instances
                .map_or_else(String::new, |i| format!("{}→{}", i.baseline, i.target));
            let indent = "  ".repeat(r.depth.unwrap_or(0).min(8) as usize);
            let _ = writeln!(
                o,
                "  {:<50} {:10.1} {:10.1} {:+10.1} {:+10.1} {:>9}  {}",
                short_to(&format!("{indent}{}", r.name), 50),
                r.baseline_self_us_per_step
                    .unwrap_or(r.baseline_us_per_step),
                r.target_self_us_per_step.unwrap_or(r.target_us_per_step),
                r.self_delta_us.unwrap_or(r.delta_us),
                r.delta_us,
                names,
                r.status.name()
            );
        }
    }

    /// `name` cut to `n` characters (`..` ending a cut one).
    fn short_to(name: &str, n: usize) -> String {
        if name.chars().count() > n {
            format!("{}..", name.chars().take(n - 2).collect::<String>())
        } else {
            name.to_string()
        }
    }

    fn line(o: &mut String, what: &str, d: &Delta, unit: &str) {
        let pct = d
            .delta_pct
            .map_or_else(String::new, |p| format!(", {p:+.1}%"));
        let _ = writeln!(
            o,
            "  {what:<28} {:>12} → {:>12}  ({}{pct})",
            fig(d.baseline, unit),
            fig(d.target, unit),
            d.delta
                .map_or_else(|| "n/a".to_string(), |v| format!("{v:+.1}{unit}"))
        );
    }

    /// Baseline vs target: per-step deltas, conclusion, comparability, every op.
    pub fn comparison(o: &mut String, b: &TraceBreakdown, t: &TraceBreakdown, c: &Comparison) {
        let _ = writeln!(
            o,
            "Comparison: {} → {}   (profile: {})",
            b.label, t.label, b.profile
        );
        if let Some(w) = c.window.as_ref().filter(|w| w.replaces_steps) {
            window_comparison(o, c, w);
            return;
        }
        line(o, "wall time per step", &c.wall_time_per_step_us, " µs");
        line(o, "forward step duration", &c.step_duration_us, " µs");
        line(o, "inter-step gap p50", &c.inter_step_gap_p50_us, " µs");
        line(o, "kernels per step", &c.kernels_per_step, "");
        line(
            o,
            "GPU busy per step (devices summed)",
            &c.gpu_time_per_step_us,
            " µs",
        );
        line(
            o,
            "launch-call time per step",
            &c.launch_api_time_per_step_us,
            " µs",
        );
        let _ = writeln!(o, "\nConclusion: {}", c.conclusion);
        if c.comparability.is_empty() {
            let _ = writeln!(
                o,
                "Comparability: same batch, ctx/gen mix, TP size, GPU model and capture options"
            );
        }
        for w in &c.comparability {
            let _ = writeln!(o, "Comparability warning: {w}");
        }
        for w in &c.coverage {
            let _ = writeln!(o, "Coverage warning: {w}");
        }
        if let Some(k) = &c.kernel_classes {
            class_deltas(o, k);
        }
        nvtx_deltas(o, c);
        deltas(o, "GPU kernels", &c.kernels);
        deltas(o, "CUDA API calls", &c.api);
        let _ = writeln!(o, "\n{}", c.handoff.text);
    }

    /// Steps could not be compared: the whole windows, per second of kernel window.
    fn window_comparison(o: &mut String, c: &Comparison, w: &WindowComparison) {
        line(o, "kernel window", &w.window_s, " s");
        line(o, "GPU busy share", &w.gpu_busy_share, "");
        line(o, "kernels per second", &w.kernels_per_s, "");
        line(o, "kernel time per kernel", &w.kernel_us_per_kernel, " µs");
        let _ = writeln!(o, "\nConclusion: {}", c.conclusion);
        for warning in &c.comparability {
            let _ = writeln!(o, "Comparability warning: {warning}");
        }
        if let Some(k) = &c.kernel_classes {
            class_deltas(o, k);
        }
        for (title, rows) in [
            ("NVTX ops", &w.nvtx),
            ("GPU kernels", &w.kernels),
            ("CUDA API calls", &w.api),
            ("GPU-idle time by cause", &w.idle_causes),
        ] {
            let _ = writeln!(o);
            delta_table(
                o,
                &format!("{title} (µs per s of window)"),
                rows,
                20,
                Status::name,
            );
            if rows.is_empty() {
                let _ = writeln!(o, "  (none)");
            }
        }
        let _ = writeln!(o, "\n{}", c.handoff.text);
    }

    fn deltas(o: &mut String, title: &str, rows: &[OpDelta]) {
        let _ = writeln!(o);
        delta_table(
            o,
            &format!("{title} (µs/step)"),
            rows,
            usize::MAX,
            Status::name,
        );
        if rows.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
    }
}
