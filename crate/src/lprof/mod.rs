//! The optimization loop's second half (spec §4's hand-off, `docs/line-profiler.md`): line_profiler
//! text output read into functions and lines, hotspots ranked by absolute time, each hit line
//! typed by its own text, the next function to profile, and rounds compared.
//!
//! Pure: text in, [`LprofReport`] out, no SQLite. The CLI (`nsys-lens lprof`) and the page
//! (`web/lprof.rs`) call [`analyze`] with the same inputs and get the same JSON.

pub mod classify;
pub mod names;
pub mod parse;
pub mod report;
pub mod rounds;

use serde::Serialize;

use crate::error::{Error, Result};
use classify::{Kind, LineFacts};
use names::Certainty;
use parse::{ParsedFunction, ParsedRow};

/// One line_profiler output file as given.
#[derive(Debug, Clone)]
pub struct LprofInput {
    pub name: String,
    pub text: String,
}

/// What to compute.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Hot lines and changed lines listed per round (0 = [`DEFAULT_TOP`]).
    pub top: usize,
    /// The files are the ranks of one round (merged), not rounds in order.
    pub ranks: bool,
    /// Functions of the nsys hand-off's `TLLM_LINE_PROFILER_FUNCTIONS` line, merged into the next one.
    pub handoff_functions: Vec<String>,
}

pub const DEFAULT_TOP: usize = 10;

/// A line holding more than this share of its function's time while calling a function that is
/// not profiled is drilled into (the skill's "> 80 % of a function's time").
pub const DRILL_SHARE: f64 = 0.80;

/// The whole answer: rounds, their comparison, and the next line_profiler setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LprofReport {
    pub rounds: Vec<Round>,
    /// Rounds compared in order (two or more rounds).
    pub comparison: Option<rounds::Comparison>,
    /// The functions to profile next: the last round's known ones, the hand-off's, the
    /// drill-down's, in that order.
    pub next_functions: Vec<NextFunction>,
    /// `TLLM_LINE_PROFILER_FUNCTIONS="…"` for `next_functions`, ready to paste.
    pub line_profiler: Option<String>,
}

/// One profiling round: one file, or the merged rank files of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    pub label: String,
    pub files: Vec<String>,
    /// Sum of the functions' `Total time` (a profiled callee's time also counts in its caller).
    pub total_s: f64,
    pub functions: Vec<Function>,
    /// The lines with the most absolute time, all functions together.
    pub hot_lines: Vec<HotLine>,
    pub drill_down: Vec<Suggestion>,
    pub warnings: Vec<String>,
}

/// One profiled function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Function {
    /// Identity across rounds: `name (file basename)`, `#k` added for a repeated name.
    pub key: String,
    pub name: String,
    pub file: String,
    pub start_line: u32,
    /// Its `TLLM_LINE_PROFILER_FUNCTIONS` name, when known.
    pub qualified: Option<String>,
    pub total_s: f64,
    /// Calls: hits of the first statement run once per call (None without rows).
    pub calls: Option<u64>,
    pub lines: Vec<Line>,
    pub truncated: bool,
    pub source_missing: bool,
    pub summary_only: bool,
}

/// One source line of a function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub line: u32,
    pub text: String,
    /// None for a line never hit.
    pub hits: Option<u64>,
    pub time_s: f64,
    pub per_hit_us: Option<f64>,
    /// Share of the function's time, 0–100.
    pub percent: Option<f64>,
    pub hits_per_call: Option<f64>,
    /// Hits per call ≥ [`classify::LOOP_HITS_PER_CALL`].
    pub in_loop: bool,
    /// A `for`/`while` header: iterations per call (hits per call − 1).
    pub loop_iterations_per_call: Option<f64>,
    pub kind: Option<Kind>,
    pub severity: Option<&'static str>,
    pub rule: Option<String>,
}

/// A line among a round's hottest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotLine {
    pub function: String,
    pub function_name: String,
    pub line: u32,
    pub text: String,
    pub time_s: f64,
    pub share_of_function: f64,
    pub hits: u64,
    pub per_hit_us: Option<f64>,
    pub hits_per_call: Option<f64>,
    pub kind: Option<Kind>,
    pub severity: Option<&'static str>,
    pub rule: Option<String>,
}

/// A function to profile next because one line of a profiled function spends most of its time
/// calling it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub function: String,
    pub line: u32,
    pub text: String,
    /// The line's share of its function's time, 0–1.
    pub share: f64,
    pub callee: String,
    pub qualified: Option<String>,
    pub certainty: Option<Certainty>,
    pub reason: String,
}

/// One function of the next profiling setting and why it is there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NextFunction {
    pub name: String,
    /// `profiled` (kept from the last round), `handoff` (nsys root cause), `drill_down`.
    pub source: &'static str,
    pub certainty: Certainty,
}

/// Parses and analyses the inputs: one round per file, or (`ranks`) one round of all files.
pub fn analyze(inputs: &[LprofInput], options: &Options) -> Result<LprofReport> {
    if inputs.is_empty() {
        return Err(Error::Usage("no line_profiler output given".into()));
    }
    let top = if options.top == 0 {
        DEFAULT_TOP
    } else {
        options.top
    };
    let mut parsed = Vec::with_capacity(inputs.len());
    for input in inputs {
        let file = parse::parse(&input.text).map_err(|e| Error::NotLineProfiler {
            path: input.name.clone(),
            detail: e.0,
        })?;
        parsed.push((input.name.clone(), file));
    }
    let groups: Vec<Vec<(String, parse::ParsedFile)>> = if options.ranks {
        vec![parsed]
    } else {
        parsed.into_iter().map(|p| vec![p]).collect()
    };
    let rounds: Vec<Round> = groups.into_iter().map(|g| round(g, top)).collect();
    let comparison = (rounds.len() > 1).then(|| rounds::compare(&rounds, top));
    let next_functions = next_functions(rounds.last(), &options.handoff_functions);
    let names: Vec<String> = next_functions.iter().map(|f| f.name.clone()).collect();
    Ok(LprofReport {
        line_profiler: names::profiler_line(&names),
        rounds,
        comparison,
        next_functions,
    })
}

fn round(files: Vec<(String, parse::ParsedFile)>, top: usize) -> Round {
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    let label = match names.as_slice() {
        [one] => one.clone(),
        many => format!("{} rank files", many.len()),
    };
    let mut warnings = Vec::new();
    let mut merged: Vec<ParsedFunction> = Vec::new();
    for (name, file) in files {
        warnings.extend(file.warnings.into_iter().map(|w| format!("{name}: {w}")));
        for f in file.functions {
            merge_into(&mut merged, f);
        }
    }
    let mut functions: Vec<Function> = merged.iter().map(function).collect();
    assign_keys(&mut functions);
    let total_s = functions.iter().map(|f| f.total_s).sum();
    let hot_lines = hot_lines(&functions, top);
    let drill_down = drill_down(&functions);
    Round {
        label,
        files: names,
        total_s,
        functions,
        hot_lines,
        drill_down,
        warnings,
    }
}

/// Adds a rank's function to the round: the same function (file, name, first line) sums its
/// rows' hits and times.
fn merge_into(merged: &mut Vec<ParsedFunction>, f: ParsedFunction) {
    let same = merged
        .iter_mut()
        .find(|m| m.name == f.name && m.file == f.file && m.start_line == f.start_line);
    let Some(m) = same else {
        merged.push(f);
        return;
    };
    m.total_s = match (m.total_s, f.total_s) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    m.truncated |= f.truncated;
    m.summary_only &= f.summary_only;
    for row in f.rows {
        match m.rows.iter_mut().find(|r| r.line == row.line) {
            Some(r) => add_row(r, &row),
            None => m.rows.push(row),
        }
    }
    m.rows.sort_by_key(|r| r.line);
}

fn add_row(into: &mut ParsedRow, row: &ParsedRow) {
    if into.text.is_empty() {
        into.text.clone_from(&row.text);
    }
    into.timing = match (into.timing, row.timing) {
        (Some(a), Some(b)) => {
            let hits = a.hits + b.hits;
            let time_s = a.time_s + b.time_s;
            Some(parse::Timing {
                hits,
                time_s,
                per_hit_s: if hits > 0 { time_s / hits as f64 } else { 0.0 },
                percent: None,
            })
        }
        (a, b) => a.or(b),
    };
}

fn function(f: &ParsedFunction) -> Function {
    let row_sum: f64 = f
        .rows
        .iter()
        .filter_map(|r| r.timing)
        .map(|t| t.time_s)
        .sum();
    let total_s = f.total_s.unwrap_or(row_sum);
    let calls = calls(&f.rows);
    let mut lines: Vec<Line> = f.rows.iter().map(|r| line(r, total_s, calls)).collect();
    classify_lines(&mut lines);
    Function {
        key: String::new(),
        name: f.name.clone(),
        file: f.file.clone(),
        start_line: f.start_line,
        qualified: names::profiled_name(&f.file, &f.name).map(|(n, _)| n),
        total_s,
        calls,
        lines,
        truncated: f.truncated,
        source_missing: f.source_missing,
        summary_only: f.summary_only,
    }
}

/// Hits of the first statement that runs once per call: the first hit line at the body's own
/// indentation that is not a loop header or a `with` (3.10+ counts a `with` line again at exit).
/// None when the body is only a loop: its header's hits are calls × (iterations + 1).
fn calls(rows: &[ParsedRow]) -> Option<u64> {
    let hit: Vec<&ParsedRow> = rows.iter().filter(|r| r.timing.is_some()).collect();
    let first = hit.first()?;
    let indent = |r: &ParsedRow| r.text.len() - r.text.trim_start().len();
    let body = indent(first);
    let once = hit.iter().find(|r| {
        let code = r.text.trim_start();
        indent(r) == body
            && !classify::is_loop_header(code)
            && !code.starts_with("with ")
            && !code.starts_with("async with ")
    });
    once.and_then(|r| r.timing).map(|t| t.hits.max(1))
}

fn line(r: &ParsedRow, total_s: f64, calls: Option<u64>) -> Line {
    let t = r.timing;
    let hits_per_call = match (t, calls) {
        (Some(t), Some(c)) if c > 0 => Some(t.hits as f64 / c as f64),
        _ => None,
    };
    let code = classify::code_of(r.text.trim());
    let loop_iterations_per_call = hits_per_call
        .filter(|_| classify::is_loop_header(code))
        .map(|h| (h - 1.0).max(0.0));
    Line {
        line: r.line,
        text: r.text.clone(),
        hits: t.map(|t| t.hits),
        time_s: t.map_or(0.0, |t| t.time_s),
        per_hit_us: t.filter(|t| t.hits > 0).map(|t| t.per_hit_s * 1e6),
        percent: t.and_then(|t| {
            t.percent
                .or_else(|| (total_s > 0.0).then(|| t.time_s / total_s * 100.0))
        }),
        hits_per_call,
        in_loop: hits_per_call.is_some_and(|h| h >= classify::LOOP_HITS_PER_CALL),
        loop_iterations_per_call,
        kind: None,
        severity: None,
        rule: None,
    }
}

/// Types every hit line; a collection iterated again after an earlier line is REDUNDANT_ITER.
fn classify_lines(lines: &mut [Line]) {
    let iterables: Vec<Option<String>> = lines
        .iter()
        .map(|l| classify::iterable(classify::code_of(l.text.trim())))
        .collect();
    for i in 0..lines.len() {
        if lines[i].hits.is_none_or(|h| h == 0) {
            continue;
        }
        let same_iterable_line = iterables[i].as_ref().and_then(|it| {
            (0..i)
                .find(|&j| iterables[j].as_ref() == Some(it) && lines[j].hits.is_some())
                .map(|j| lines[j].line)
        });
        let text = lines[i].text.clone();
        let c = classify::classify(&LineFacts {
            code: classify::code_of(text.trim()),
            hits_per_call: lines[i].hits_per_call,
            same_iterable_line,
        });
        lines[i].severity = Some(c.kind.severity());
        lines[i].kind = Some(c.kind);
        lines[i].rule = Some(c.rule);
    }
}

/// `name (file)`, numbered when a round holds two functions of that name in one file.
fn assign_keys(functions: &mut [Function]) {
    let base: Vec<String> = functions
        .iter()
        .map(|f| {
            let file = f.file.rsplit(['/', '\\']).next().unwrap_or(&f.file);
            if file.is_empty() {
                f.name.clone()
            } else {
                format!("{} ({file})", f.name)
            }
        })
        .collect();
    for i in 0..functions.len() {
        let seen = base[..i].iter().filter(|b| **b == base[i]).count();
        functions[i].key = if seen == 0 {
            base[i].clone()
        } else {
            format!("{} #{}", base[i], seen + 1)
        };
    }
}

/// The lines with the most absolute time (the skill ranks by time, not by % of a function).
fn hot_lines(functions: &[Function], top: usize) -> Vec<HotLine> {
    let mut all: Vec<HotLine> = functions
        .iter()
        .flat_map(|f| {
            f.lines
                .iter()
                .filter(|l| l.time_s > 0.0)
                .map(move |l| HotLine {
                    function: f.key.clone(),
                    function_name: f.name.clone(),
                    line: l.line,
                    text: l.text.trim().to_string(),
                    time_s: l.time_s,
                    share_of_function: if f.total_s > 0.0 {
                        l.time_s / f.total_s
                    } else {
                        0.0
                    },
                    hits: l.hits.unwrap_or(0),
                    per_hit_us: l.per_hit_us,
                    hits_per_call: l.hits_per_call,
                    kind: l.kind,
                    severity: l.severity,
                    rule: l.rule.clone(),
                })
        })
        .collect();
    all.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));
    all.truncate(top);
    all
}

/// Lines holding more than [`DRILL_SHARE`] of their function's time while calling a function
/// that no table of this round shows.
fn drill_down(functions: &[Function]) -> Vec<Suggestion> {
    let profiled: Vec<&str> = functions
        .iter()
        .map(|f| names::method_of(&f.name))
        .collect();
    let mut out = Vec::new();
    for f in functions.iter().filter(|f| f.total_s > 0.0) {
        for l in &f.lines {
            let share = l.time_s / f.total_s;
            if share <= DRILL_SHARE {
                continue;
            }
            let code = classify::code_of(l.text.trim());
            let Some(callee) = classify::calls(code).into_iter().next() else {
                continue;
            };
            let method = callee.rsplit('.').next().unwrap_or(callee);
            if profiled.contains(&method) || !classify::is_python_callee(callee) {
                continue;
            }
            let resolved = names::callee_name(callee, &f.file, &f.name);
            let reason = match &resolved {
                Some((_, Certainty::Known)) => format!(
                    "line {} holds {:.1} % of {} calling `{callee}`, which is not profiled",
                    l.line,
                    share * 100.0,
                    f.name
                ),
                Some((_, Certainty::Assumed)) => format!(
                    "line {} holds {:.1} % of {} calling `{callee}`, which is not profiled \
                     (module and class assumed from the caller: check them)",
                    l.line,
                    share * 100.0,
                    f.name
                ),
                None => format!(
                    "line {} holds {:.1} % of {} calling `{callee}`, which is not profiled; \
                     its class cannot be told from the text: add its module.Class.method",
                    l.line,
                    share * 100.0,
                    f.name
                ),
            };
            out.push(Suggestion {
                function: f.key.clone(),
                line: l.line,
                text: l.text.trim().to_string(),
                share,
                callee: callee.to_string(),
                qualified: resolved.as_ref().map(|(n, _)| n.clone()),
                certainty: resolved.map(|(_, c)| c),
                reason,
            });
        }
    }
    out
}

/// The last round's known functions, then the hand-off's, then the drill-down's.
fn next_functions(last: Option<&Round>, handoff: &[String]) -> Vec<NextFunction> {
    let mut out: Vec<NextFunction> = Vec::new();
    let mut push = |name: String, source: &'static str, certainty: Certainty| {
        if !out.iter().any(|f| f.name == name) {
            out.push(NextFunction {
                name,
                source,
                certainty,
            });
        }
    };
    if let Some(r) = last {
        for f in &r.functions {
            if let Some(q) = &f.qualified {
                push(q.clone(), "profiled", Certainty::Known);
            }
        }
    }
    for h in handoff {
        push(h.clone(), "handoff", Certainty::Known);
    }
    if let Some(r) = last {
        for s in &r.drill_down {
            if let (Some(q), Some(c)) = (&s.qualified, s.certainty) {
                push(q.clone(), "drill_down", c);
            }
        }
    }
    out
}
