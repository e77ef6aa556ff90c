//! line_profiler's text output (`LineProfiler.print_stats` / `show_text`, 3.x and ≥ 4) read into
//! functions and rows. The layout, as `docs/line-profiler.md` records it:
//!
//! ```text
//! Timer unit: 1e-09 s
//!
//! Total time: 0.012345 s
//! File: tensorrt_llm/_torch/pyexecutor/py_executor.py
//! Function: _forward_step at line 123
//!
//! Line #      Hits         Time  Per Hit   % Time  Line Contents
//! ==============================================================
//!    123                                           def _forward_step(self):
//!    124         5       1234.0    246.8     10.0      inputs = self._prepare(...)
//! ```
//!
//! Numbers are read by whitespace, never by fixed column: line_profiler ≥ 4.1 widens its columns
//! and switches to `%5.3g` (`1.2e+07`) when a number does not fit, and prints hits as `%g`. The
//! source text is cut where the header's `Line Contents` starts (the header is printed with the
//! same template as the rows), so its indentation survives. `rich` output's ANSI codes are
//! removed first; a `--summarize` block (`  1.23 seconds - file.py:12 - func`) gives totals.

use regex::Regex;
use std::sync::LazyLock;

/// One function's table as printed.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedFunction {
    pub name: String,
    pub file: String,
    pub start_line: u32,
    /// `Total time:` in seconds (None when the header was cut off).
    pub total_s: Option<f64>,
    /// The timer unit the rows are printed in, seconds.
    pub unit_s: f64,
    pub rows: Vec<ParsedRow>,
    /// The file ended inside this function's table.
    pub truncated: bool,
    /// line_profiler could not read the source file ("Could not find file …"): no source text.
    pub source_missing: bool,
    /// Only known from the `--summarize` block.
    pub summary_only: bool,
}

/// One row of a table: a source line, with its timings when it was hit.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRow {
    pub line: u32,
    pub timing: Option<Timing>,
    /// The source text as printed (indentation kept).
    pub text: String,
}

/// A row's numbers, converted to seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub hits: u64,
    pub time_s: f64,
    pub per_hit_s: f64,
    /// `% Time` as printed (None when the function's total was 0 and the column blank).
    pub percent: Option<f64>,
}

/// One parsed output file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedFile {
    /// The `Timer unit:` values met, in order.
    pub units_s: Vec<f64>,
    pub functions: Vec<ParsedFunction>,
    /// Notes about what was skipped or cut, for the user.
    pub warnings: Vec<String>,
}

/// Why a text is not line_profiler output (the caller adds the file name).
#[derive(Debug, Clone, PartialEq)]
pub struct NotLineProfiler(pub String);

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    // CSI sequences (colours) and OSC sequences (rich's hyperlinks), ended by BEL or ESC \.
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)").expect("static regex")
});
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([0-9.]+(?:[eE][-+]?\d+)?) seconds - (.*):(\d+) - (.+?)\s*$")
        .expect("static regex")
});

/// Removes terminal escape codes (line_profiler's `rich` output).
pub fn strip_ansi(text: &str) -> String {
    ANSI.replace_all(text, "").into_owned()
}

/// Parses one output. Text that holds no line_profiler table and no summary block is refused.
pub fn parse(text: &str) -> Result<ParsedFile, NotLineProfiler> {
    if text.contains('\0') {
        return Err(NotLineProfiler(binary_hint(text)));
    }
    let clean = strip_ansi(text);
    let mut p = Parser::default();
    for raw in clean.split_inclusive('\n') {
        let complete = raw.ends_with('\n');
        let line = raw.trim_end_matches(['\n', '\r']);
        p.line(line, complete);
    }
    p.finish();
    if p.out.functions.is_empty() && p.out.units_s.is_empty() {
        return Err(NotLineProfiler(
            "no `Timer unit:` line, no `Total time:` table and no summary block: this is not \
             line_profiler text output. Write it with `LineProfiler.print_stats(stream=f)`, \
             `python -m line_profiler -rmt file.lprof > out.txt`, or TensorRT-LLM's \
             TLLM_LINE_PROFILER_PATH"
                .into(),
        ));
    }
    Ok(p.out)
}

fn binary_hint(text: &str) -> String {
    let pickle = text.as_bytes().first() == Some(&0x80);
    if pickle {
        "a binary file (a pickled `.lprof`?), not line_profiler's text output. Print it as text \
         first: python -m line_profiler file.lprof > out.txt"
            .into()
    } else {
        "a binary file, not line_profiler's text output (a `.txt` written by \
         `LineProfiler.print_stats` or TLLM_LINE_PROFILER_PATH)"
            .into()
    }
}

#[derive(Default)]
struct Parser {
    out: ParsedFile,
    unit_s: Option<f64>,
    current: Option<ParsedFunction>,
    /// Byte column where `Line Contents` starts in the current table's header.
    content_col: Option<usize>,
    /// Between the `=` rule and the blank line that ends the table.
    in_table: bool,
    /// The previous line was a table header: only then does a rule of `=` open a table (tools
    /// such as pytest-line-profiler print rules of `=` around the output too).
    after_header: bool,
    summary: Vec<ParsedFunction>,
}

impl Parser {
    fn line(&mut self, line: &str, complete: bool) {
        let trimmed = line.trim();
        let after_header = std::mem::take(&mut self.after_header);
        if self.in_table {
            if trimmed.is_empty() {
                self.in_table = false;
                return;
            }
            if self.row(line, complete) {
                return;
            }
            self.in_table = false;
        }
        if let Some(v) = trimmed.strip_prefix("Timer unit:") {
            match seconds(v) {
                Some(u) if u > 0.0 => {
                    self.unit_s = Some(u);
                    self.out.units_s.push(u);
                }
                _ => self.warn(format!(
                    "unreadable timer unit `{trimmed}`, kept the previous one"
                )),
            }
        } else if let Some(v) = trimmed.strip_prefix("Total time:") {
            self.close();
            self.current = Some(self.new_function(seconds(v)));
        } else if let Some(v) = trimmed.strip_prefix("File:") {
            self.with_current(|f| f.file = v.trim().to_string());
        } else if let Some(v) = trimmed.strip_prefix("Function:") {
            let (name, at) = v.trim().rsplit_once(" at line ").unwrap_or((v.trim(), ""));
            let start = at.trim().parse().unwrap_or(0);
            self.with_current(|f| {
                f.name = name.to_string();
                f.start_line = start;
            });
        } else if let Some(v) = trimmed.strip_prefix("Could not find file") {
            self.with_current(|f| {
                f.file = v.trim().to_string();
                f.source_missing = true;
            });
        } else if trimmed.starts_with("Line #") && trimmed.contains("Line Contents") {
            self.content_col = line.find("Line Contents");
            self.after_header = true;
        } else if after_header && !trimmed.is_empty() && trimmed.bytes().all(|b| b == b'=') {
            self.in_table = self.current.is_some();
        } else if let Some(c) = SUMMARY.captures(line) {
            self.summary_line(&c);
        }
    }

    fn new_function(&self, total_s: Option<f64>) -> ParsedFunction {
        ParsedFunction {
            name: String::new(),
            file: String::new(),
            start_line: 0,
            total_s,
            unit_s: self.unit_s.unwrap_or(1e-6),
            rows: Vec::new(),
            truncated: false,
            source_missing: false,
            summary_only: false,
        }
    }

    fn with_current(&mut self, f: impl FnOnce(&mut ParsedFunction)) {
        if self.current.is_none() {
            self.current = Some(self.new_function(None));
        }
        if let Some(cur) = self.current.as_mut() {
            f(cur);
        }
    }

    /// Reads a table row; false when the line is not one (the table ended without a blank line).
    fn row(&mut self, line: &str, complete: bool) -> bool {
        let Some(row) = parse_row(line, self.content_col) else {
            return false;
        };
        if !complete && row.timing.is_none() && line.split_whitespace().count() > 1 {
            // The last line was cut mid-row: its numbers cannot be trusted.
            self.with_current(|f| f.truncated = true);
            return true;
        }
        self.with_current(|f| f.rows.push(row));
        if !complete {
            self.with_current(|f| f.truncated = true);
        }
        true
    }

    fn summary_line(&mut self, c: &regex::Captures<'_>) {
        let total = c.get(1).and_then(|m| m.as_str().parse::<f64>().ok());
        let mut f = self.new_function(total);
        f.file = c.get(2).map_or("", |m| m.as_str()).to_string();
        f.start_line = c.get(3).and_then(|m| m.as_str().parse().ok()).unwrap_or(0);
        f.name = c.get(4).map_or("", |m| m.as_str()).to_string();
        f.summary_only = true;
        self.summary.push(f);
    }

    fn warn(&mut self, w: String) {
        self.out.warnings.push(w);
    }

    fn close(&mut self) {
        self.in_table = false;
        self.content_col = None;
        if let Some(mut f) = self.current.take() {
            scale(&mut f);
            if f.name.is_empty() {
                f.name = if f.file.is_empty() {
                    "(unnamed function)".into()
                } else {
                    format!("(function in {})", f.file)
                };
            }
            self.out.functions.push(f);
        }
    }

    fn finish(&mut self) {
        if self.in_table {
            // print_stats ends every table with a blank line; a file ending inside one was cut.
            self.with_current(|f| f.truncated = true);
        }
        self.close();
        if self.out.units_s.is_empty() && !self.out.functions.is_empty() {
            self.warn("no `Timer unit:` line: the times are read as µs (line_profiler 3.x)".into());
        }
        for f in &self.out.functions {
            if f.truncated {
                self.out.warnings.push(format!(
                    "the output ends inside the table of {} (line {}): it was cut before \
                     line_profiler finished writing; its rows so far are shown",
                    f.name, f.start_line
                ));
            }
        }
        // Summary entries add the functions the details did not print (`details=False`).
        for s in std::mem::take(&mut self.summary) {
            let known = self
                .out
                .functions
                .iter()
                .any(|f| f.name == s.name && f.start_line == s.start_line);
            if !known {
                self.out.functions.push(s);
            }
        }
    }
}

/// A number followed by ` s` (`Timer unit: 1e-06 s`, `Total time: 0.25 s`).
fn seconds(v: &str) -> Option<f64> {
    let v = v.trim();
    let v = v.strip_suffix('s').unwrap_or(v).trim();
    v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// A row: the line number, then either nothing (never hit) or hits, time, per hit and % time.
pub fn parse_row(line: &str, content_col: Option<usize>) -> Option<ParsedRow> {
    if let Some(col) = content_col {
        let (lhs, text) = if line.len() >= col && line.is_char_boundary(col) {
            line.split_at(col)
        } else {
            (line, "")
        };
        if let Some(row) = row_numbers(lhs, text) {
            return Some(row);
        }
    }
    whitespace_row(line)
}

/// The numbers left of the source column; None unless they are exactly a row's.
fn row_numbers(lhs: &str, text: &str) -> Option<ParsedRow> {
    let tokens: Vec<&str> = lhs.split_whitespace().collect();
    let line: u32 = tokens.first()?.parse().ok()?;
    let timing = match tokens.len() {
        1 => None,
        4 | 5 => Some(timing(&tokens[1..])?),
        _ => return None,
    };
    Some(ParsedRow {
        line,
        timing,
        text: text.trim_end().to_string(),
    })
}

/// Without a header column: four numbers after the line number make a timed row.
fn whitespace_row(line: &str) -> Option<ParsedRow> {
    let rest = line.trim_start();
    let (num, mut rest) = rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len()));
    let line_no: u32 = num.parse().ok()?;
    let mut tokens = Vec::new();
    let mut probe = rest;
    for _ in 0..4 {
        let t = probe.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        if end == 0 || number(&t[..end]).is_none() {
            break;
        }
        tokens.push(&t[..end]);
        probe = &t[end..];
    }
    let timing = if tokens.len() == 4 {
        rest = probe;
        Some(timing(&tokens)?)
    } else {
        None
    };
    let text = rest.strip_prefix("  ").unwrap_or(rest.trim_start());
    Some(ParsedRow {
        line: line_no,
        timing,
        text: text.trim_end().to_string(),
    })
}

/// hits, time, per hit[, % time] in timer units → seconds (scaled by the caller's unit later).
fn timing(tokens: &[&str]) -> Option<Timing> {
    let hits = number(tokens.first()?)?;
    let time = number(tokens.get(1)?)?;
    let per_hit = number(tokens.get(2)?)?;
    let percent = match tokens.get(3) {
        Some(t) => Some(number(t)?),
        None => None,
    };
    Some(Timing {
        hits: hits.round() as u64,
        time_s: time,
        per_hit_s: per_hit,
        percent,
    })
}

/// A printed number: `%d`, `%5.1f`, `%5.3g` (`1.2e+07`) or `%g`.
fn number(t: &str) -> Option<f64> {
    if !t.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// Rows carry timer units until the function closes: seconds from its unit.
fn scale(f: &mut ParsedFunction) {
    for r in &mut f.rows {
        if let Some(t) = r.timing.as_mut() {
            t.time_s *= f.unit_s;
            t.per_hit_s *= f.unit_s;
        }
    }
}
