//! The report as Markdown (`report.md`): the outline's text, findings and pipe tables.

use super::document::Document;
use super::outline::{Section, outline};
use super::tables::Table;
use crate::findings::Finding;

/// Escapes a cell for a pipe table: `|` and line breaks would end the cell (the items of a list
/// cell, one per line, are `; `-separated).
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "; ")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

fn table(out: &mut String, t: &Table) {
    out.push_str(&format!("**{}**\n\n", t.title));
    if t.rows.is_empty() {
        out.push_str("(none)\n\n");
        return;
    }
    let shown = t.shown();
    let headers: Vec<String> = shown.headers.iter().map(|h| cell(h)).collect();
    out.push_str(&format!("| {} |\n", headers.join(" | ")));
    let align: Vec<&str> = shown
        .kinds
        .iter()
        .map(|k| if k.is_number() { "---:|" } else { "---|" })
        .collect();
    out.push_str(&format!("|{}\n", align.concat()));
    for row in &shown.rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
}

fn finding(out: &mut String, i: usize, f: &Finding) {
    let pattern = f
        .pattern
        .as_ref()
        .map_or(String::new(), |p| format!(" Pattern: {p}."));
    out.push_str(&format!(
        "{}. **[{}] {}** — {}.\n   Fix: {}{pattern}\n",
        i + 1,
        f.severity.label().to_uppercase(),
        f.title,
        f.evidence,
        f.fix
    ));
}

fn section(out: &mut String, s: &Section) {
    out.push_str(&format!("## {}\n\n", s.title));
    for line in &s.text {
        out.push_str(line);
        out.push_str("\n\n");
    }
    for (i, f) in s.findings.iter().enumerate() {
        finding(out, i, f);
    }
    if !s.findings.is_empty() {
        out.push('\n');
    }
    for t in &s.tables {
        table(out, t);
    }
}

/// The whole report as Markdown.
pub fn render(doc: &Document) -> String {
    let mut out = format!(
        "# nsys-lens report: {}\n\n_{}; derived results only, no trace data._\n\n",
        doc.file, doc.generated_by
    );
    for s in outline(doc) {
        section(&mut out, &s);
    }
    out
}
