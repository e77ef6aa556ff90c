//! The round report as Markdown: the CLI prints it, the page exports it (the same text).

use std::fmt::Write;

use super::rounds::{Comparison, Step, fmt_s};
use super::{LprofReport, Round};

/// The whole report: each round's functions, hot lines and drill-down, the comparison, the
/// stopping advice and the next `TLLM_LINE_PROFILER_FUNCTIONS` line.
pub fn markdown(r: &LprofReport) -> String {
    let mut out = String::from("# line_profiler rounds\n\n");
    let many = r.rounds.len() > 1;
    for (i, round) in r.rounds.iter().enumerate() {
        let title = if many {
            format!("Round {} · {}", i + 1, round.label)
        } else {
            round.label.clone()
        };
        write_round(&mut out, &title, round);
    }
    if let Some(c) = &r.comparison {
        write_comparison(&mut out, c, &r.rounds);
    }
    out.push_str("## Next profiling round\n\n");
    match &r.line_profiler {
        Some(line) => {
            let _ = writeln!(out, "```\n{line}\n```\n");
            for f in &r.next_functions {
                let _ = writeln!(out, "- `{}` ({}, {:?})", f.name, f.source, f.certainty);
            }
            out.push_str(
                "\nTLLM_LINE_PROFILER_FUNCTIONS replaces TensorRT-LLM's default targets: the line keeps \
                 the profiled functions whose names are known.\n\n",
            );
        }
        None => out.push_str(
            "No function to name: no known profiled function, hand-off or drill-down target.\n\n",
        ),
    }
    out
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".into(), f)
}

fn write_round(out: &mut String, title: &str, r: &Round) {
    let _ = writeln!(out, "## {}\n", cell(title));
    let _ = writeln!(
        out,
        "{} function(s), {} profiled in total (a profiled callee also counts in its caller).\n",
        r.functions.len(),
        fmt_s(r.total_s)
    );
    out.push_str("| Function | Total | Calls | Per call | File |\n|---|---:|---:|---:|---|\n");
    for f in &r.functions {
        let per_call = f.calls.filter(|c| *c > 0).map(|c| f.total_s / c as f64);
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {} | {} |",
            cell(&f.key),
            if f.truncated { " (cut)" } else { "" },
            fmt_s(f.total_s),
            f.calls.map_or_else(|| "–".into(), |c| c.to_string()),
            opt(per_call, fmt_s),
            cell(&f.file)
        );
    }
    out.push_str("\n### Hot lines (by absolute time)\n\n");
    out.push_str(
        "| # | Function | Line | Time | % of fn | Hits | Per hit | Hits/call | Type | Code |\n",
    );
    out.push_str("|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (i, h) in r.hot_lines.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | `{}` |",
            i + 1,
            cell(&h.function),
            h.line,
            fmt_s(h.time_s),
            h.share_of_function * 100.0,
            h.hits,
            opt(h.per_hit_us, |v| format!("{v:.2} µs")),
            opt(h.hits_per_call, |v| format!("{v:.1}")),
            h.kind.map_or("–", |k| k.label()),
            cell(&h.text)
        );
    }
    out.push('\n');
    for h in r.hot_lines.iter().filter(|h| h.rule.is_some()).take(5) {
        let _ = writeln!(
            out,
            "- line {} {}: {}",
            h.line,
            h.kind.map_or("", |k| k.label()),
            h.rule.as_deref().unwrap_or("")
        );
    }
    if !r.drill_down.is_empty() {
        out.push_str("\n### Drill down\n\n");
        for s in &r.drill_down {
            let _ = writeln!(
                out,
                "- {} → profile `{}`",
                s.reason,
                s.qualified.as_deref().unwrap_or(&s.callee)
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "\n> {w}");
    }
    out.push('\n');
}

fn write_comparison(out: &mut String, c: &Comparison, rounds: &[Round]) {
    out.push_str("## Rounds compared\n\n");
    for s in &c.steps {
        write_step(out, s, rounds);
    }
    let _ = writeln!(
        out,
        "Cumulative improvement: {}.\n\n**{}**\n",
        opt(c.cumulative_improvement_pct, |p| format!("{p:.1} %")),
        c.stopping.advice
    );
}

fn write_step(out: &mut String, s: &Step, rounds: &[Round]) {
    let label = |i: usize| rounds.get(i).map_or("?", |r| r.label.as_str());
    let _ = writeln!(
        out,
        "### Round {} → {} ({} → {})\n\nFunctions in both: {} → {} ({}).\n",
        s.from + 1,
        s.to + 1,
        cell(label(s.from)),
        cell(label(s.to)),
        fmt_s(s.common_before_s),
        fmt_s(s.common_after_s),
        opt(s.improvement_pct, |p| format!("{p:.1} % faster"))
    );
    if let Some(shift) = &s.shift {
        let _ = writeln!(out, "Bottleneck shift: {}.\n", cell(shift));
    }
    out.push_str("| Function | Before | After | Delta | Status |\n|---|---:|---:|---:|---|\n");
    for f in &s.functions {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&f.function),
            opt(f.before_s, fmt_s),
            opt(f.after_s, fmt_s),
            signed(f.delta_s, f.delta_pct),
            f.status.label()
        );
    }
    out.push_str(
        "\n| Function | Code | Before | After | Delta | Status |\n|---|---|---:|---:|---:|---|\n",
    );
    for l in &s.lines {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} |",
            cell(&l.function),
            cell(&l.text),
            opt(l.before_s, fmt_s),
            opt(l.after_s, fmt_s),
            signed(l.delta_s, l.delta_pct),
            l.status.label()
        );
    }
    out.push('\n');
}

fn signed(d: f64, pct: Option<f64>) -> String {
    let sign = if d < 0.0 { "−" } else { "+" };
    let p = pct.map_or_else(String::new, |p| format!(" ({p:+.1} %)"));
    format!("{sign}{}{p}", fmt_s(d.abs()))
}
