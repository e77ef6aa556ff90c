//! The CLI's readable detection report: verdict, metric tables with evidence, phases,
//! caveats, what could not be computed, and next steps.

use std::fmt::Write;

use crate::detect::DetectReport;
use crate::detect::catalogue::METRICS;
use crate::detect::result::{DeviceMetrics, Evidence, PhaseResult, ProcessMetrics};

/// Renders the whole report.
pub fn detect_report(r: &DetectReport) -> String {
    let mut out = String::new();
    let o = &mut out;
    if let Some(b) = &r.bound {
        line(
            o,
            &format!("What bounds the run: {} ({})", b.kind.label(), b.evidence),
        );
    }
    line(
        o,
        &format!(
            "Host overhead verdict: {}   (profile: {})",
            r.verdict, r.profile
        ),
    );
    trace_line(o, r);
    line(o, &format!("Steps: {}", r.step_source));
    let window = format!(
        "{} from {} to {} (ns, {})",
        duration(r.window.duration_us),
        r.window.start_ns,
        r.window.end_ns,
        match r.window.source {
            "user" => "chosen window",
            "gpu-work" =>
                "first GPU operation's start to the last one's end: kernels, graph replays, copies, memsets",
            _ => "first kernel start to last kernel end",
        }
    );
    scope_header(
        o,
        "Aggregate",
        r.verdict_of_aggregate(),
        r.crossed_count,
        r.applicable_count,
        r.host_prep_confirmed,
    );
    line(o, &format!("  window: {window}"));
    metric_table(o, &r.evidence);
    summed_note(o, r.per_device.len(), r.per_process.len());
    devices(o, &r.per_device);
    processes(o, &r.per_process);
    for (name, phase) in [
        ("Context", &r.phases.context),
        ("Generation", &r.phases.generation),
    ] {
        if let Some(p) = phase {
            phase_section(o, name, p);
        }
    }
    notes(o, r);
    line(o, "");
    for l in super::capture::text_lines(&r.capture) {
        line(o, &l);
    }
    next_steps(o, r);
    out
}

impl DetectReport {
    /// The aggregate scope's own verdict (the top-level `verdict` also counts the phases).
    pub fn verdict_of_aggregate(&self) -> &'static str {
        if self.crossed_count >= 2 { "YES" } else { "NO" }
    }
}

fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

fn trace_line(o: &mut String, r: &DetectReport) {
    let t = &r.trace;
    let version = t.nsys_version.as_deref().unwrap_or("unknown nsys version");
    let gpus = if t.gpus.is_empty() {
        "GPU models unknown".to_string()
    } else {
        dedup_join(&t.gpus)
    };
    line(
        o,
        &format!(
            "Trace: {} (nsys {version}; {gpus}; {} device(s) ran {} kernels; {} process(es); {} forward steps)",
            t.file,
            t.devices.len(),
            t.kernels,
            t.processes,
            t.forward_steps
        ),
    );
}

fn dedup_join(names: &[String]) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for n in names {
        match seen.iter_mut().find(|(s, _)| s == n) {
            Some((_, c)) => *c += 1,
            None => seen.push((n.clone(), 1)),
        }
    }
    seen.iter()
        .map(|(n, c)| {
            if *c > 1 {
                format!("{c}× {n}")
            } else {
                n.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn scope_header(
    o: &mut String,
    name: &str,
    verdict: &str,
    crossed: u32,
    applicable: u32,
    confirmed: bool,
) {
    line(o, "");
    let confirm = if confirmed {
        "; host prep confirmed as a bottleneck (M3b and M3c crossed)"
    } else {
        ""
    };
    line(
        o,
        &format!(
            "{name}: {verdict} ({crossed} of {applicable} applicable metrics crossed{confirm})"
        ),
    );
}

fn metric_table(o: &mut String, ev: &std::collections::BTreeMap<&'static str, Evidence>) {
    line(
        o,
        &format!(
            "  {:<34} {:>9}  {:<10} {:<8} {}",
            "Metric", "Value", "Threshold", "Crossed", "Numerator / denominator"
        ),
    );
    for m in &METRICS {
        let Some(e) = ev.get(m.key) else { continue };
        let label = format!("{} ({})", m.title, m.id);
        let op = if e.direction == "below" { "<" } else { ">" };
        let threshold = format!("{op} {}", percent(e.threshold));
        let (value, crossed, evidence) = match e.value {
            None => (
                "n/a".to_string(),
                "n/a".to_string(),
                "not applicable".to_string(),
            ),
            Some(v) => (
                percent(v),
                match e.crossed {
                    Some(true) => "YES".into(),
                    Some(false) => "no".into(),
                    None if v > e.threshold => "caveat".into(),
                    None => "no".into(),
                },
                match (e.numerator_us, e.denominator_us) {
                    (Some(n), Some(d)) => format!("{} / {}", duration(n), duration(d)),
                    // A mean of ratios with their own denominators: each one's figures.
                    _ => e.figures(),
                },
            ),
        };
        line(
            o,
            &format!("  {label:<34} {value:>9}  {threshold:<10} {crossed:<8} {evidence}"),
        );
    }
}

/// With several devices/processes a value is the mean of their ratios: the summed numerator
/// and denominator divide to it where the ratios share the window as denominator, and a mean
/// of ratios with their own denominators shows each one's; say so.
fn summed_note(o: &mut String, devices: usize, processes: usize) {
    if devices > 1 || processes > 1 {
        line(
            o,
            &format!(
                "  (values are means over {devices} device(s) / {processes} process(es): numerator / denominator are their sums where each divides by the window, else each one's figures are listed)"
            ),
        );
    }
}

fn devices(o: &mut String, devices: &[DeviceMetrics]) {
    if devices.len() < 2 {
        return;
    }
    line(o, "  per device:");
    for d in devices {
        let name = d
            .gpu_name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        line(
            o,
            &format!(
                "    device {}{name}: {} kernels, busy {} of {} → idle {}, NCCL {}",
                d.device,
                d.kernels,
                duration(d.busy_us),
                duration(d.window_us),
                percent(d.gpu_idle_ratio),
                percent(d.nccl_ratio)
            ),
        );
    }
}

fn processes(o: &mut String, procs: &[ProcessMetrics]) {
    if procs.len() < 2 {
        return;
    }
    line(o, "  per process:");
    for p in procs {
        let launch = p.launch_overhead_ratio.map_or("n/a".into(), percent);
        let prep = match (
            p.host_prep_pattern.as_deref(),
            p.host_prep_us,
            p.host_prep_exposed_us,
        ) {
            (Some(pat), Some(prep), Some(exp)) => format!(
                ", host prep {pat}: {} of which {} exposed",
                duration(prep),
                duration(exp)
            ),
            _ => String::new(),
        };
        let name = if p.name.is_empty() {
            String::new()
        } else {
            format!(" {}", p.name)
        };
        line(
            o,
            &format!(
                "    pid {}{name} on device(s) {:?}: launch overhead {launch}{prep}",
                p.pid, p.devices
            ),
        );
    }
}

fn phase_section(o: &mut String, name: &str, p: &PhaseResult) {
    scope_header(
        o,
        &format!("{name} phase"),
        p.verdict,
        p.crossed_count,
        p.applicable_count,
        p.host_prep_confirmed,
    );
    let dedup = if p.raw_step_count > p.iteration_count {
        format!(" ({} ranges before TP de-duplication)", p.raw_step_count)
    } else {
        String::new()
    };
    let shape = if p.window.source == "steps-union" {
        format!("union of {} step interval(s)", p.window.intervals)
    } else {
        "span from first step start to last step end".to_string()
    };
    line(
        o,
        &format!(
            "  {} steps{dedup}; window {} ({shape})",
            p.iteration_count,
            duration(p.window.duration_us)
        ),
    );
    if let Some(b) = &p.bound {
        line(o, &format!("  GPU work: {} ({})", b.busy_split(), b.label));
    }
    metric_table(o, &p.evidence);
    summed_note(o, p.per_device.len(), p.per_process.len());
    devices(o, &p.per_device);
}

fn notes(o: &mut String, r: &DetectReport) {
    if r.nccl_caveat {
        let share = r
            .aggregate_metrics
            .nccl_ratio
            .map_or(String::new(), percent);
        line(o, "");
        line(
            o,
            &format!(
                "Caveat: NCCL communication accounts for {share} of GPU active time; GPU idle gaps may be partly communication stalls."
            ),
        );
    }
    if !r.warnings.is_empty() {
        line(o, "");
        line(o, "Warnings:");
        for w in &r.warnings {
            line(o, &format!("  - {w}"));
        }
    }
    if !r.coverage.is_empty() {
        line(o, "");
        line(o, "Not computed / not in this export:");
        for c in &r.coverage {
            line(o, &format!("  - {}: {}", c.subject, c.reason));
        }
    }
}

fn next_steps(o: &mut String, r: &DetectReport) {
    line(o, "");
    line(o, "Next steps:");
    if r.verdict == "YES" {
        line(
            o,
            "  Host overhead is a bottleneck. Compare per-step host time with a known-good trace (NVTX ranges",
        );
        line(
            o,
            "  between forward steps), then profile the host code: when host prep is confirmed, start with",
        );
        line(
            o,
            "  TLLM_LINE_PROFILER_FUNCTIONS=PyTorchModelEngine._prepare_tp_inputs.",
        );
        if r.phases
            .generation
            .as_ref()
            .is_some_and(|p| p.verdict == "YES")
        {
            line(
                o,
                "  The generation phase is host-bound: check that CUDA graphs are enabled and replaying.",
            );
        }
    } else {
        line(
            o,
            "  Host overhead is not the bottleneck. Look at kernel efficiency (Nsight Compute, SOL%)",
        );
        line(o, "  or at communication if the NCCL share is high.");
    }
}

/// A ratio as a percentage with one decimal.
fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// A µs quantity in the most readable unit.
pub fn duration(us: f64) -> String {
    let a = us.abs();
    let mut s = String::new();
    let _ = if a >= 1e6 {
        write!(s, "{:.3} s", us / 1e6)
    } else if a >= 1e3 {
        write!(s, "{:.2} ms", us / 1e3)
    } else {
        write!(s, "{us:.1} µs")
    };
    s
}
