//! The library's layers, as `ARCHITECTURE.md` writes them, hold in the code.
//!
//! Like rust-analyzer's tidy tests, this reads the sources as text: every `crate::…` path (in
//! `use` lines and in code, grouped imports included) and every `super::` path that climbs out of
//! its top-level module names an edge between two top-level modules. Each edge must be one
//! `ARCHITECTURE.md` allows, and the allowed edges must form no cycle, so a dependency can only
//! point down.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Edges = BTreeMap<String, BTreeSet<String>>;

const BLOCK_START: &str = "```layers";

/// The allowed edges: the fenced `layers` block of ARCHITECTURE.md, one `module: uses…` a line.
fn allowed() -> Edges {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = fs::read_to_string(&path).expect("ARCHITECTURE.md");
    let start = text
        .find(BLOCK_START)
        .expect("a ```layers block in ARCHITECTURE.md");
    let body = &text[start + BLOCK_START.len()..];
    let body = &body[..body.find("```").expect("the layers block is closed")];
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (module, uses) = l.split_once(':').expect("`module: uses…`");
            let uses = uses.split_whitespace().map(str::to_string).collect();
            (module.trim().to_string(), uses)
        })
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file below `src/` (`detect/sweep.rs` → `[detect, sweep]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a file without comments (line comments and doc comments; no block comments here).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names through `crate::`, grouped imports included.
fn crate_targets(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group));
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// The first segment of each path of a `{a::b, c, d::{e}}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && !c.is_whitespace() => {
                heads.push(ident(&group[i..]));
                at_item = false;
            }
            _ => {}
        }
    }
    heads
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules reached by `super::` chains that climb out of the file's own.
fn super_targets(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("super::") {
            continue;
        }
        let mut rest = &code[i..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        // A file's code sits in its module; `mod tests` adds a level the count cannot see, so
        // only a chain that climbs past the crate root from the file itself is an edge.
        if ups == module.len() {
            out.insert(ident(rest));
        }
    }
    out
}

/// Edges between top-level modules as the library's sources write them.
fn actual() -> Edges {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let tops: BTreeSet<String> = files
        .iter()
        .map(|f| module_path(f.strip_prefix(&src).expect("below src"))[0].clone())
        .collect();
    let mut edges = Edges::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("below src");
        let module = module_path(rel);
        let top = module[0].clone();
        if matches!(top.as_str(), "lib" | "main" | "cli") {
            continue; // the crate root and the binary, which sit above every layer
        }
        let code = code_of(&fs::read_to_string(&file).expect("source"));
        let uses = edges.entry(top.clone()).or_default();
        for target in crate_targets(&code)
            .into_iter()
            .chain(super_targets(&code, &module))
        {
            // A name that is no top-level module is a `mod tests`' `super::` into its own file.
            if target != top && tops.contains(&target) {
                uses.insert(target);
            }
        }
    }
    edges
}

#[test]
fn every_module_uses_only_the_layers_architecture_md_allows() {
    let allowed = allowed();
    let mut wrong = Vec::new();
    for (module, uses) in actual() {
        let Some(may) = allowed.get(&module) else {
            wrong.push(format!("{module}: no line in ARCHITECTURE.md's layers"));
            continue;
        };
        for target in uses.difference(may) {
            wrong.push(format!("{module} uses {target}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "edges ARCHITECTURE.md does not allow:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_allowed_layers_point_one_way() {
    let allowed = allowed();
    // Kahn's algorithm: a module is placed once everything it uses is.
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    loop {
        let ready: Vec<&str> = allowed
            .iter()
            .filter(|(m, uses)| {
                !placed.contains(m.as_str()) && uses.iter().all(|u| placed.contains(u.as_str()))
            })
            .map(|(m, _)| m.as_str())
            .collect();
        if ready.is_empty() {
            break;
        }
        placed.extend(ready);
    }
    let cyclic: Vec<&String> = allowed
        .keys()
        .filter(|m| !placed.contains(m.as_str()))
        .collect();
    assert!(
        cyclic.is_empty(),
        "in a cycle or using an unlisted module: {cyclic:?}"
    );
}

#[test]
fn the_edge_reader_sees_grouped_imports_and_climbing_supers() {
    let code = "use crate::{model::Ns, trace::{self, load}, error};\nlet x = crate::names::api::api_kind(s);";
    assert_eq!(
        crate_targets(code),
        ["error", "model", "names", "trace"]
            .map(String::from)
            .into()
    );
    let module = ["detect".to_string(), "sweep".to_string()];
    assert_eq!(
        super_targets("use super::super::trace::X; use super::config::Y;", &module),
        ["trace".to_string()].into()
    );
    assert!(crate_targets(&code_of("// crate::web is only named in a comment")).is_empty());
}

/// Every `spec §N` a source file cites is a section of `docs/spec.md` (its anchor `#spec-N`).
#[test]
fn every_spec_section_the_code_cites_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = fs::read_to_string(root.join("docs/spec.md")).expect("docs/spec.md");
    let mut files = Vec::new();
    sources(&root.join("crate/src"), &mut files);
    let mut cited = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("source");
        for (i, _) in text.match_indices("spec §") {
            let n = ident(&text[i + "spec §".len()..]);
            if n.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                cited.insert(n);
            }
        }
    }
    assert!(cited.len() >= 5, "the code cites the spec: {cited:?}");
    let missing: Vec<&String> = cited
        .iter()
        .filter(|n| !spec.contains(&format!("<a id=\"spec-{n}\"></a>")))
        .collect();
    assert!(
        missing.is_empty(),
        "cited but not in docs/spec.md: {missing:?}"
    );
}

/// Files small enough to read: one job each, no source file of the library or of `xtask` over
/// this many lines (a module that grows past it is split by job, as `trace/rows/` was).
const MAX_LINES: usize = 900;

#[test]
fn no_source_file_is_over_900_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("../xtask/src"), &mut files);
    assert!(files.len() > 100, "{} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).expect("read").lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split by job: {long:?}");
}

/// Where the library may hold `unsafe` code, as ARCHITECTURE.md's invariants list it.
const UNSAFE_ALLOWED: [&str; 2] = ["trace/cells.rs", "web/vfs.rs"];

#[test]
fn unsafe_code_is_only_where_architecture_md_allows_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let holding: BTreeSet<String> = files
        .iter()
        .filter(|f| code_of(&fs::read_to_string(f).expect("read")).contains("unsafe"))
        .filter_map(|f| {
            Some(
                f.strip_prefix(&root)
                    .ok()?
                    .to_string_lossy()
                    .replace('\\', "/"),
            )
        })
        .collect();
    let allowed: BTreeSet<String> = UNSAFE_ALLOWED.iter().map(|s| s.to_string()).collect();
    let outside: Vec<&String> = holding.difference(&allowed).collect();
    assert!(outside.is_empty(), "unsafe code in {outside:?}");
    assert!(
        holding.contains("trace/cells.rs"),
        "the reader of the scan: {holding:?}"
    );
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md");
    for file in UNSAFE_ALLOWED {
        assert!(
            text.contains(file),
            "ARCHITECTURE.md names {file} among the unsafe code"
        );
    }
}
