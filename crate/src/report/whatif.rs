//! The readable `whatif` report: measured and replayed step time, the critical path's split
//! and the predicted step time of each change.

use std::fmt::Write;

use crate::whatif::{CriticalPath, WhatIf};

/// Renders the whole report.
pub fn text(w: &WhatIf) -> String {
    let mut o = String::new();
    let step = |t: Option<f64>| t.map_or("—".to_string(), |v| format!("{v:.1} µs"));
    let _ = writeln!(o, "What a fix would buy ({} steady steps)", w.steps);
    let _ = writeln!(
        o,
        "  measured wall time per step   {}   (window {:.1} µs)",
        step(w.measured.wall_time_per_step_us),
        w.measured.window_us
    );
    let _ = writeln!(
        o,
        "  replayed, unchanged costs     {}   (error {:+.3} %)",
        step(w.replayed.wall_time_per_step_us),
        w.replay_error_pct
    );
    let verdict = w.bound.verdict.map_or("—", |b| b.label());
    match w.steps {
        0 => {
            let _ = writeln!(
                o,
                "\nNo critical path (no steady steps); {verdict} by the verdict's busy shares (host bottleneck: {})",
                w.bound.host_verdict
            );
        }
        _ => {
            path(&mut o, "Critical path", &w.critical_path);
            let _ = writeln!(
                o,
                "  bound: {} by the path; {} by the verdict's busy shares (host bottleneck: {})",
                w.bound.path.label(),
                verdict,
                w.bound.host_verdict
            );
        }
    }
    if let Some(n) = &w.bound.note {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "\nPredicted");
    let _ = writeln!(
        o,
        "  {:<40} {:>14} {:>9}  bound",
        "change", "per step", "gain"
    );
    for p in &w.predicted {
        let gain = p.gain_pct.map_or("—".into(), |g| format!("{g:+.1} %"));
        let _ = writeln!(
            o,
            "  {:<40} {:>14} {:>9}  {}",
            p.change,
            step(p.wall_time_per_step_us),
            gain,
            if w.steps == 0 { "—" } else { p.bound.label() }
        );
    }
    if let Some(r) = &w.regression {
        regression(&mut o, r);
    }
    for n in &w.notes {
        let _ = writeln!(o, "\nNote: {n}");
    }
    o
}

fn path(o: &mut String, title: &str, p: &CriticalPath) {
    let _ = writeln!(
        o,
        "\n{title}: {:.1} µs per step, {} by the path",
        p.per_step_us,
        p.bound.label()
    );
    for part in p.parts.iter().filter(|x| x.per_step_us != 0.0) {
        let _ = writeln!(
            o,
            "  {:<18} {:>10.1} µs {:>6.1} %",
            part.label,
            part.per_step_us,
            100.0 * part.share
        );
    }
    for (what, names) in [("NVTX ops", &p.top_ops), ("GPU work", &p.top_kernels)] {
        if names.is_empty() {
            continue;
        }
        let _ = writeln!(o, "  most on the path, {what}:");
        for n in names {
            let _ = writeln!(
                o,
                "    {:<40} {:>10.1} µs {:>6.1} %",
                super::analyze::short40(&n.name),
                n.per_step_us,
                100.0 * n.share
            );
        }
    }
}

fn regression(o: &mut String, r: &crate::whatif::compare::PathRegression) {
    let pct = r.delta_pct.map_or("—".into(), |p| format!("{p:+.1} %"));
    let _ = writeln!(
        o,
        "\nAgainst the baseline: {:.1} → {:.1} µs per step ({:+.1} µs, {pct}); bound by the path {} → {}",
        r.baseline_per_step_us,
        r.target_per_step_us,
        r.delta_us,
        r.baseline_bound.label(),
        r.target_bound.label()
    );
    let _ = writeln!(
        o,
        "  {:<18} {:>12} {:>12} {:>12} {:>9}",
        "on the path", "baseline", "target", "change", "of it"
    );
    for p in r
        .parts
        .iter()
        .filter(|p| p.delta_us != 0.0 || p.target_us != 0.0)
    {
        let of = p
            .share_of_delta
            .map_or("—".into(), |s| format!("{:.1} %", 100.0 * s));
        let _ = writeln!(
            o,
            "  {:<18} {:>9.1} µs {:>9.1} µs {:>+9.1} µs {:>9}",
            p.label, p.baseline_us, p.target_us, p.delta_us, of
        );
    }
    if !r.names.is_empty() {
        let _ = writeln!(o, "  changed most on the path:");
        for n in &r.names {
            let _ = writeln!(
                o,
                "    {:<40} {:>9.1} → {:>9.1} µs {:>+9.1} µs",
                super::analyze::short40(&n.name),
                n.baseline_us,
                n.target_us,
                n.delta_us
            );
        }
    }
}

/// Renders one step's critical path: each stretch with where it ran, on what, for how long.
pub fn step_text(p: &crate::whatif::StepPath) -> String {
    use crate::whatif::PathPlace;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Critical path of steady step {} of {} ({:.1} µs, {} stretches)",
        p.step,
        p.steps,
        (p.end_ns - p.start_ns) as f64 / 1000.0,
        p.segments.len()
    );
    let _ = writeln!(
        o,
        "  {:>12} {:>10}  {:<18} {:<22} name",
        "start (µs)", "µs", "part", "where"
    );
    for s in &p.segments {
        let place = match &s.place {
            PathPlace::Thread { tid } => format!("thread {tid}"),
            PathPlace::Stream { device, stream } => format!("GPU {device} stream {stream}"),
        };
        let _ = writeln!(
            o,
            "  {:>12.3} {:>10.3}  {:<18} {:<22} {}",
            (s.start_ns - p.start_ns) as f64 / 1000.0,
            (s.end_ns - s.start_ns) as f64 / 1000.0,
            s.label,
            place,
            s.name
        );
    }
    o
}
