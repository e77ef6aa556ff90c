//! The report as one self-contained HTML file (`report.html`): derived results only, the
//! plots as inline SVG drawn by plotters, the style inline, no script and no external reference,
//! so it opens offline and from an attachment. The markup is well-formed XML (every element
//! closed, attributes quoted) so a strict parser can check it.

use super::charts::{bar_chart_height, draw_bar_chart, svg};
use super::document::Document;
use super::outline::{Chart, Section, outline};
use super::tables::{Kind, Table};
use crate::findings::Finding;
use crate::plot::draw_gap_histogram;

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#282c34;margin:0 auto;max-width:1100px;padding:0 20px 40px}
h1{font-size:1.5em;margin:24px 0 4px;overflow-wrap:anywhere}h2{font-size:1.2em;margin:32px 0 8px;border-bottom:1px solid #e1e4ea;padding-bottom:4px}
.meta{color:#5c6370;margin:0 0 16px}nav ul{padding-left:18px;columns:3}
div.scroll{overflow-x:auto;margin:8px 0 18px}table{border-collapse:collapse;font-size:.8em}
caption{text-align:left;font-weight:600;padding:4px 0}th,td{border:1px solid #e1e4ea;padding:3px 5px;text-align:left;vertical-align:top}
th{background:#f5f6f8;font-weight:600}td.text{max-width:520px;overflow-wrap:anywhere}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}.key{white-space:nowrap}th.num{white-space:normal}
ol.findings li{margin:0 0 10px;overflow-wrap:anywhere}p{overflow-wrap:anywhere}.sev{font-weight:700;text-transform:uppercase;font-size:.8em;padding:1px 5px;border-radius:3px;color:#fff}
.sev-high{background:#dc2626}.sev-medium{background:#d97706}.sev-low{background:#2563eb}.sev-info{background:#6b7280}
.fix{color:#3b4048}tr.em td{background:#fef2f2}tr.em td:first-child{box-shadow:inset 3px 0 #dc2626}figure{margin:8px 0 16px}svg{max-width:100%;height:auto}
";

/// Escapes text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A cell's markup: its lines (a list cell's items) on lines of their own, and in text a break
/// opportunity after each `_` and `::`, so a long kernel name wraps between its words rather
/// than anywhere.
fn cell(text: &str, kind: Kind) -> String {
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            let e = escape(line);
            if kind == Kind::Text {
                e.replace('_', "_<wbr/>").replace("::", "::<wbr/>")
            } else {
                e
            }
        })
        .collect();
    lines.join("<br/>")
}

fn table(out: &mut String, t: &Table) {
    out.push_str(&format!(
        "<div class=\"scroll\"><table><caption>{}</caption>",
        escape(t.title)
    ));
    if t.rows.is_empty() {
        out.push_str("<tbody><tr><td>(none)</td></tr></tbody></table></div>\n");
        return;
    }
    let shown = t.shown();
    out.push_str("<thead><tr>");
    for (h, &k) in shown.headers.iter().zip(&shown.kinds) {
        out.push_str(&format!("<th class=\"{}\">{}</th>", k.class(), escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for (i, row) in shown.rows.iter().enumerate() {
        match t.emphasis(i) {
            Some(why) => out.push_str(&format!("<tr class=\"em\" title=\"{}\">", escape(why))),
            None => out.push_str("<tr>"),
        }
        for (c, &k) in row.iter().zip(&shown.kinds) {
            out.push_str(&format!("<td class=\"{}\">{}</td>", k.class(), cell(c, k)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

fn finding(out: &mut String, f: &Finding) {
    let sev = f.severity.label();
    let pattern = f.pattern.as_ref().map_or(String::new(), |p| {
        format!(" <em>Pattern: {}.</em>", escape(p))
    });
    out.push_str(&format!(
        "<li><span class=\"sev sev-{sev}\">{sev}</span> <strong>{}</strong><br/>{}<br/><span class=\"fix\">Fix: {}</span>{pattern}</li>\n",
        escape(&f.title),
        escape(&f.evidence),
        escape(&f.fix)
    ));
}

fn chart(out: &mut String, c: &Chart) {
    let drawn = match c {
        Chart::Bars(b) => svg((760, bar_chart_height(b)), |root| draw_bar_chart(root, b)),
        Chart::Gaps(h) => svg((760, 280), |root| draw_gap_histogram(root, h)),
        Chart::Classes(c) => svg(
            (760, crate::plot::kernel_classes::class_bars_height(c, 760)),
            |root| crate::plot::kernel_classes::draw_class_bars(root, c),
        ),
        Chart::Skew(s) => svg((760, crate::plot::skew::SKEW_CHART_HEIGHT), |root| {
            crate::plot::skew::draw_skew_chart(root, s)
        }),
    };
    match drawn {
        Ok(svg) => out.push_str(&format!("<figure>{svg}</figure>\n")),
        Err(e) => out.push_str(&format!("<p>(plot not drawn: {})</p>\n", escape(&e))),
    }
}

fn section(out: &mut String, id: usize, s: &Section) {
    out.push_str(&format!(
        "<section id=\"s{id}\"><h2>{}</h2>\n",
        escape(s.title)
    ));
    for line in &s.text {
        out.push_str(&format!("<p>{}</p>\n", escape(line)));
    }
    if !s.findings.is_empty() {
        out.push_str("<ol class=\"findings\">\n");
        for f in &s.findings {
            finding(out, f);
        }
        out.push_str("</ol>\n");
    }
    for c in &s.charts {
        chart(out, c);
    }
    for t in &s.tables {
        table(out, t);
    }
    out.push_str("</section>\n");
}

/// The whole report as one HTML document.
pub fn render(doc: &Document) -> String {
    let sections = outline(doc);
    let title = format!("nsys-lens report: {}", doc.file);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n<h1>{}</h1>\n\
         <p class=\"meta\">{}; derived results only, no trace data.</p>\n<nav><ul>",
        escape(&title),
        escape(&title),
        escape(&doc.generated_by)
    );
    for (i, s) in sections.iter().enumerate() {
        out.push_str(&format!(
            "<li><a href=\"#s{i}\">{}</a></li>",
            escape(s.title)
        ));
    }
    out.push_str("</ul></nav>\n");
    for (i, s) in sections.iter().enumerate() {
        section(&mut out, i, s);
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tables::{Kind, col};

    #[test]
    fn an_emphasized_row_is_marked_and_says_why_in_the_markup_and_the_json() {
        let mut t = Table::new("t", "T", &[col("name", "Name", Kind::Text)]);
        t.row(vec!["a".into()]);
        t.row(vec!["b".into()]);
        t.emphasize_last("the straggler");
        let mut out = String::new();
        table(&mut out, &t);
        assert!(out.contains("<tr><td class=\"text\">a</td></tr>"), "{out}");
        assert!(
            out.contains("<tr class=\"em\" title=\"the straggler\"><td class=\"text\">b</td></tr>"),
            "{out}"
        );
        let json = serde_json::to_value(&t).expect("json");
        assert_eq!(
            json["emphasized"],
            serde_json::json!([{"row": 1, "why": "the straggler"}])
        );
    }

    /// The page classes a table's cells as the report does: the JSON names each column's class.
    #[test]
    fn each_columns_cell_class_is_the_same_in_the_markup_and_the_json() {
        let columns = [
            col("name", "Name", Kind::Text),
            col("rank", "Rank", Kind::Key),
            col("bound", "Bound", Kind::Label),
            col("calls", "Calls", Kind::Count),
        ];
        let mut t = Table::new("t", "T", &columns);
        t.row(vec![
            "a".into(),
            "pid 1".into(),
            "host-bound".into(),
            3u64.into(),
        ]);
        let mut out = String::new();
        table(&mut out, &t);
        let json = serde_json::to_value(&t).expect("json");
        assert_eq!(
            json["classes"],
            serde_json::json!(["text", "key", "label", "num"])
        );
        for class in ["text", "key", "label", "num"] {
            assert!(
                out.contains(&format!("<td class=\"{class}\">")),
                "{class}: {out}"
            );
        }
    }
}
