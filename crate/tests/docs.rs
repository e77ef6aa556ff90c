//! The documents a reader follows: every relative link of the README, ARCHITECTURE, CHANGELOG,
//! the agent skill and `docs/*.md` names a file that exists (and, with `#anchor`, a heading of
//! that Markdown file), and the README opens with what a newcomer needs: the picture of the
//! verdict the browser suite takes, then the two commands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text outside fenced code blocks, with inline code spans blanked (a link inside code is
/// an example, not a link).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let mut code = false;
            for part in line.split('`') {
                if !code {
                    out.push_str(part);
                }
                code = !code;
            }
        }
        out.push('\n');
    }
    out
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, other punctuation dropped; repeated
/// headings get `-1`, `-2` ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.trim_start_matches('#').strip_prefix(' ') else {
            continue;
        };
        if fenced || !line.starts_with('#') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.iter().filter(|s| **s == slug).count();
        out.insert(if n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        seen.push(slug);
    }
    out
}

/// The targets of `[text](target)` links in `text`'s prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    prose
        .match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &prose[i + 2..];
            let end = rest.find(|c: char| c == ')' || c.is_whitespace())?;
            (rest.as_bytes().get(end) == Some(&b')')).then(|| rest[..end].to_string())
        })
        .collect()
}

fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut out: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    out.push(root.join("skills/nsys-lens/SKILL.md"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

#[test]
fn every_relative_link_of_the_documents_names_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().expect("a folder").join(path)
            };
            if !target.exists() {
                broken.push(format!(
                    "{}: {link}: no {}",
                    doc.display(),
                    target.display()
                ));
            } else if !anchor.is_empty()
                && target.extension().is_some_and(|e| e == "md")
                && !anchors(&read(&target)).contains(anchor)
            {
                broken.push(format!("{}: {link}: no heading #{anchor}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 20, "{checked} links checked");
}

/// What a newcomer reads first: the picture of the verdict (taken by
/// `tests/e2e/views/verdict-picture.mjs`) and the two commands, in the first screen of the README.
#[test]
fn the_readme_opens_with_the_verdict_picture_and_the_two_commands() {
    let text = read(&root().join("README.md"));
    let first: String = text.lines().take(30).collect::<Vec<_>>().join("\n");
    for want in [
        "](docs/img/verdict.png)",
        "cargo xtask serve",
        "cargo xtask test",
    ] {
        assert!(
            first.contains(want),
            "{want} not in the README's first 30 lines"
        );
    }
    let picture = read_bytes(&root().join("docs/img/verdict.png"));
    assert_eq!(&picture[1..4], b"PNG", "docs/img/verdict.png is a PNG");
    let script = read(&root().join("tests/e2e/views/verdict-picture.mjs"));
    assert!(script.contains("'docs', 'img', 'verdict.png'"));
    assert!(
        text.lines().count() < 150,
        "the README stays short: the reference lives in docs/"
    );
}

fn read_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
