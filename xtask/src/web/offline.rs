//! `dist/nsys-lens-offline.html`: the page as ONE file that works from `file://`, offline, in a
//! browser with its default settings.
//!
//! Built from the assembled `dist/` by plain text substitution (no bundler), following the
//! contract in `docs/offline-file.md`:
//! 1. each `<script type="module" src="Y">` becomes one inline module: Y and the modules it
//!    imports (relative `import … from './…'` lines, one line each), dependencies first, with
//!    those import lines removed, and the import of `pkg/nsys_lens.js` replaced by the
//!    wasm-bindgen glue's text (it declares `__wbg_init` and the exports at top level);
//! 2. before it, a data block `<script type="application/json" id="nsys-lens-inline">` holding
//!    `{wasmBase64, workerSource}`; `workerSource` is `worker.js` bundled the same way (glue
//!    inlined) and made a CLASSIC script ([`classic_script`]: `export` keywords and export lists
//!    removed, `import.meta.url` replaced by a throw, since this page always hands the worker the
//!    wasm bytes). A page on `file://` has an opaque origin, and browsers refuse it a module worker
//!    from a `blob:` URL but start a classic one, which the page does;
//! 3. `<link rel="stylesheet">` becomes `<style>`, icons and images become `data:` URLs;
//! 4. the CSP meta is replaced by one that allows exactly that inline code (SHA-256 hashes),
//!    Blob-URL workers and wasm compilation, and still `connect-src 'none'`.

use std::collections::HashSet;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::MODULE;
use super::codec::{base64, csp_hash, json_string};
use crate::Result;

/// The output file's name inside `dist/`.
pub const OFFLINE_HTML: &str = "nsys-lens-offline.html";

/// Writes the offline page from an assembled `dist/`; returns its path.
pub fn write(dist: &Path) -> Result<PathBuf> {
    let html = read_text(&dist.join("index.html"))?;
    let inliner = Inliner::new(dist)?;
    let page = inliner.page(&html)?;
    let out = dist.join(OFFLINE_HTML);
    fs::write(&out, page).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(out)
}

/// What the inlining reads once: the dist folder and the glue.
struct Inliner<'a> {
    dist: &'a Path,
    glue: String,
    glue_path: String,
}

/// One text substitution in the HTML.
struct Edit {
    range: Range<usize>,
    text: String,
}

impl<'a> Inliner<'a> {
    fn new(dist: &'a Path) -> Result<Inliner<'a>> {
        let glue_path = format!("pkg/{MODULE}.js");
        let glue = read_text(&dist.join(&glue_path))?;
        Ok(Inliner {
            dist,
            glue,
            glue_path,
        })
    }

    /// The whole offline page from `index.html`'s text.
    fn page(&self, html: &str) -> Result<String> {
        let mut edits = Vec::new();
        let mut scripts = Vec::new();
        let mut styles = Vec::new();
        let mut data_block_placed = false;
        for tag in tags(html, "script") {
            let Some(src) = attr(tag.text, "src") else {
                continue;
            };
            if attr(tag.text, "type").as_deref() != Some("module") {
                return Err(format!(
                    "index.html: <script src=\"{src}\"> must be type=\"module\" to be inlined"
                ));
            }
            let end = html[tag.range.end..]
                .find("</script>")
                .map(|i| tag.range.end + i + "</script>".len())
                .ok_or_else(|| format!("index.html: <script src=\"{src}\"> is not closed"))?;
            let code = escape_closing(&self.bundle(&src)?, "</script");
            let mut text = String::new();
            if !data_block_placed {
                text.push_str(&self.data_block()?);
                text.push('\n');
                data_block_placed = true;
            }
            text.push_str(&format!("<script type=\"module\">{code}</script>"));
            scripts.push(csp_hash(&code));
            edits.push(Edit {
                range: tag.range.start..end,
                text,
            });
        }
        for tag in tags(html, "link") {
            let Some(href) = attr(tag.text, "href").filter(|h| is_local(h)) else {
                continue;
            };
            if attr(tag.text, "rel").as_deref() == Some("stylesheet") {
                let css = escape_closing(&read_text(&self.dist.join(&href))?, "</style");
                styles.push(csp_hash(&css));
                edits.push(Edit {
                    range: tag.range,
                    text: format!("<style>{css}</style>"),
                });
            } else {
                edits.push(self.data_url_attr(&tag, "href", &href)?);
            }
        }
        for tag in tags(html, "img") {
            if let Some(src) = attr(tag.text, "src").filter(|s| is_local(s)) {
                edits.push(self.data_url_attr(&tag, "src", &src)?);
            }
        }
        edits.push(csp_edit(html, &csp(&scripts, &styles))?);
        Ok(apply(html, edits))
    }

    /// `<script type="application/json" id="nsys-lens-inline">` with the wasm and the worker (a
    /// classic script).
    fn data_block(&self) -> Result<String> {
        let wasm_path = self.dist.join(format!("pkg/{MODULE}_bg.wasm"));
        let wasm = fs::read(&wasm_path)
            .map_err(|e| format!("cannot read {}: {e}", wasm_path.display()))?;
        let worker = classic_script(&self.bundle("worker.js")?)
            .map_err(|e| format!("worker.js as a classic script: {e}"))?;
        Ok(format!(
            "<script type=\"application/json\" id=\"nsys-lens-inline\">{{\"wasmBase64\":{},\"workerSource\":{}}}</script>",
            json_string(&base64(&wasm)),
            json_string(&worker),
        ))
    }

    /// The module `entry` and its relative imports as one module's text, dependencies first.
    fn bundle(&self, entry: &str) -> Result<String> {
        let mut order = Vec::new();
        self.visit(&normalize(entry)?, &mut HashSet::new(), &mut order)?;
        no_name_twice(&order)?;
        let mut glue_placed = false;
        let mut out = String::new();
        for (path, text) in order {
            out.push_str(&format!("// ── {path} ──\n"));
            for line in text.lines() {
                match relative_import(line, &path)? {
                    Some(target) if target == self.glue_path && !glue_placed => {
                        out.push_str(&self.glue);
                        out.push('\n');
                        glue_placed = true;
                    }
                    Some(_) => {}
                    None => {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
            }
        }
        Ok(out)
    }

    /// Depth-first over relative imports (the glue excepted), pushing each module after its
    /// dependencies.
    fn visit(
        &self,
        path: &str,
        seen: &mut HashSet<String>,
        order: &mut Vec<(String, String)>,
    ) -> Result<()> {
        if !seen.insert(path.to_string()) {
            return Ok(());
        }
        let text = read_text(&self.dist.join(path))?;
        for line in text.lines() {
            if let Some(dep) = relative_import(line, path)?
                && dep != self.glue_path
            {
                self.visit(&dep, seen, order)?;
            }
        }
        order.push((path.to_string(), text));
        Ok(())
    }

    /// Replaces attribute `name="value"` of a tag by a `data:` URL of the file.
    fn data_url_attr(&self, tag: &Tag<'_>, name: &str, value: &str) -> Result<Edit> {
        let path = self.dist.join(value);
        let bytes = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let url = format!("data:{};base64,{}", image_type(value)?, base64(&bytes));
        let needle = format!("{name}=\"{value}\"");
        let at = tag.text.find(&needle).ok_or_else(|| {
            format!(
                "index.html: write {name}=\"…\" with double quotes in {}",
                tag.text
            )
        })?;
        let start = tag.range.start + at;
        Ok(Edit {
            range: start..start + needle.len(),
            text: format!("{name}=\"{url}\""),
        })
    }
}

/// A tag's opening text (`<name …>`) and where it is.
struct Tag<'h> {
    range: Range<usize>,
    text: &'h str,
}

/// Opening tags `<name …>` in `html` (quote-aware, case-sensitive lower-case names).
fn tags<'h>(html: &'h str, name: &str) -> Vec<Tag<'h>> {
    let open = format!("<{name}");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = html[from..].find(&open).map(|i| i + from) {
        let after = html[i + open.len()..].chars().next();
        from = i + open.len();
        if !after.is_some_and(|c| c.is_ascii_whitespace() || c == '>') {
            continue;
        }
        let Some(end) = tag_end(&html[i..]).map(|e| i + e) else {
            break;
        };
        found.push(Tag {
            range: i..end,
            text: &html[i..end],
        });
        from = end;
    }
    found
}

/// Length of the tag starting `s` up to and including its `>`, skipping quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The value of attribute `name` in an opening tag's text.
fn attr(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(i) = rest.find(name) {
        let before = rest[..i].chars().last();
        let after = &rest[i + name.len()..];
        rest = after;
        if !before.is_some_and(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let Some(value) = after.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let quote = value.chars().next()?;
        if quote == '"' || quote == '\'' {
            let inner = &value[1..];
            return inner.find(quote).map(|end| inner[..end].to_string());
        }
        let end = value
            .find(|c: char| c.is_ascii_whitespace() || c == '>')
            .unwrap_or(value.len());
        return Some(value[..end].to_string());
    }
    None
}

/// A URL of a file of the page (not `data:`, `blob:`, absolute or scheme-qualified).
fn is_local(url: &str) -> bool {
    !url.is_empty() && !url.starts_with('/') && !url.starts_with('#') && !url.contains(':')
}

/// Fails when two of the modules joined into one declare the same name at their top level: each
/// was a scope of its own, joined they are one, where a second `const`/`let` of a name is a
/// syntax error and the whole offline page fails to start.
fn no_name_twice(modules: &[(String, String)]) -> Result<()> {
    let mut first: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for (path, text) in modules {
        for name in text.lines().filter_map(top_level_name) {
            if let Some(other) = first.insert(name.to_string(), path) {
                return Err(format!(
                    "{other} and {path} both declare `{name}` at their top level: the offline page joins them into one module, where that is an error; rename one"
                ));
            }
        }
    }
    Ok(())
}

/// The name a line declares at a module's top level (`const x`, `export function f`, `class C`
/// at the line's start), if it does.
fn top_level_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("export ").unwrap_or(line);
    let rest = [
        "const ",
        "let ",
        "var ",
        "function ",
        "async function ",
        "class ",
    ]
    .iter()
    .find_map(|k| rest.strip_prefix(k))?;
    let rest = rest.strip_prefix('*').unwrap_or(rest).trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The module a line imports, when it is a relative import (`import … from './x.js';` or
/// `import './x.js';`), resolved against the importing module's path.
fn relative_import(line: &str, importer: &str) -> Result<Option<String>> {
    let trimmed = line.trim_start();
    if !trimmed.starts_with("import ") && !trimmed.starts_with("import{") {
        return Ok(None);
    }
    let spec = trimmed
        .rsplit_once(" from ")
        .map(|(_, s)| s)
        .or_else(|| trimmed.strip_prefix("import "))
        .map(|s| s.trim().trim_end_matches(';').trim());
    let Some(spec) = spec
        .and_then(|s| s.strip_prefix(['\'', '"']))
        .and_then(|s| s.strip_suffix(['\'', '"']))
    else {
        if trimmed.contains("'./") || trimmed.contains("'../") || !trimmed.contains(" from ") {
            return Err(format!(
                "{importer}: cannot read the import `{trimmed}` (keep each import on one line)"
            ));
        }
        return Ok(None);
    };
    if !spec.starts_with("./") && !spec.starts_with("../") {
        return Ok(None);
    }
    let base = importer.rsplit_once('/').map_or("", |(dir, _)| dir);
    normalize(&format!("{base}/{spec}")).map(Some)
}

/// What stands for `import.meta.url` in a classic script: the glue reads it only to locate the
/// wasm file when `init` is given no bytes, which the offline page never does.
const NO_IMPORT_META: &str = "(() => { throw new Error('the offline worker has no module URL: pass the wasm bytes to init'); })()";

/// A bundled module (no import left) as a classic script with the same meaning: strict mode,
/// `export` dropped from top-level declarations (`export function f` → `function f`), export
/// lists (`export { a, b as default };`) deleted, `import.meta.url` replaced by
/// [`NO_IMPORT_META`]. Fails on what a classic script cannot hold (an import, another use of
/// `import.meta`, `export default`, an export not at the start of a line).
fn classic_script(module: &str) -> Result<String> {
    let mut out = String::with_capacity(module.len() + 16);
    out.push_str("\"use strict\";\n");
    for line in module.lines() {
        let line = line.replace("import.meta.url", NO_IMPORT_META);
        let trimmed = line.trim_start();
        if let Some(rest) = line.strip_prefix("export ") {
            if rest.starts_with('{') && rest.trim_end().ends_with(';') {
                continue;
            }
            const DECLARATIONS: [&str; 6] = [
                "function ",
                "function*",
                "async function",
                "class ",
                "const ",
                "let ",
            ];
            if !DECLARATIONS.iter().any(|d| rest.starts_with(d)) {
                return Err(format!(
                    "cannot turn `{}` into a classic script",
                    line.trim()
                ));
            }
            out.push_str(rest);
        } else if trimmed.starts_with("export ")
            || trimmed.starts_with("import ")
            || trimmed.starts_with("import{")
            || line.contains("import.meta")
        {
            return Err(format!(
                "module syntax left in a classic script: `{}`",
                trimmed
            ));
        } else {
            out.push_str(&line);
        }
        out.push('\n');
    }
    Ok(out)
}

/// `a/./b/../c.js` → `a/c.js`; a path leaving `dist/` is an error.
fn normalize(path: &str) -> Result<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts
                    .pop()
                    .ok_or_else(|| format!("import path {path} leaves the page's folder"))?;
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Inline code must not end its element early: `</script` (any case) becomes `<\/script`, which
/// means the same inside JS strings, regexes and comments (and in CSS strings and comments) —
/// the only places such text can occur in valid code.
fn escape_closing(code: &str, closing: &str) -> String {
    let lower = code.to_ascii_lowercase();
    let mut out = String::with_capacity(code.len());
    let mut last = 0;
    for (at, _) in lower.match_indices(closing) {
        out.push_str(&code[last..at + 1]);
        out.push('\\');
        last = at + 1;
    }
    out.push_str(&code[last..]);
    out
}

fn image_type(path: &str) -> Result<&'static str> {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        _ => {
            return Err(format!(
                "{path}: cannot inline this file type as a data: URL"
            ));
        }
    })
}

/// The offline page's policy: only the hashed inline code runs, workers only from Blob URLs,
/// wasm may compile, and nothing may be fetched or sent.
fn csp(scripts: &[String], styles: &[String]) -> String {
    format!(
        "default-src 'none'; script-src {} 'wasm-unsafe-eval'; worker-src blob:; style-src {}; \
         img-src data: blob:; connect-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'",
        scripts.join(" "),
        if styles.is_empty() {
            "'none'".to_string()
        } else {
            styles.join(" ")
        },
    )
}

/// Replaces the `content` of the CSP meta, or adds the meta at the start of `<head>`.
fn csp_edit(html: &str, policy: &str) -> Result<Edit> {
    let meta = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">");
    if let Some(tag) = tags(html, "meta").into_iter().find(|t| {
        attr(t.text, "http-equiv")
            .is_some_and(|v| v.eq_ignore_ascii_case("content-security-policy"))
    }) {
        return Ok(Edit {
            range: tag.range,
            text: meta,
        });
    }
    let head = tags(html, "head")
        .into_iter()
        .next()
        .ok_or("index.html has no <head>")?;
    Ok(Edit {
        range: head.range.end..head.range.end,
        text: format!("\n{meta}"),
    })
}

/// Applies non-overlapping edits (any order).
fn apply(html: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let mut out = html.to_string();
    for e in edits {
        out.replace_range(e.range, &e.text);
    }
    out
}

fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_imports() {
        assert_eq!(
            relative_import("import { a } from './ui/x.js';", "app.js").unwrap(),
            Some("ui/x.js".into())
        );
        assert_eq!(
            relative_import("import { a } from './x.js';", "ui/y.js").unwrap(),
            Some("ui/x.js".into())
        );
        assert_eq!(
            relative_import("import { a } from '../pkg/g.js';", "ui/y.js").unwrap(),
            Some("pkg/g.js".into())
        );
        assert_eq!(
            relative_import("import './side.js';", "app.js").unwrap(),
            Some("side.js".into())
        );
        assert_eq!(
            relative_import("import x from 'bare';", "app.js").unwrap(),
            None
        );
        assert_eq!(
            relative_import("  const x = 1; // import", "app.js").unwrap(),
            None
        );
        assert!(relative_import("import {", "app.js").is_err());
        assert!(normalize("../x.js").is_err());
    }

    #[test]
    fn escapes_closing_tags() {
        assert_eq!(
            escape_closing("// see </script> and </SCRIPT", "</script"),
            "// see <\\/script> and <\\/SCRIPT"
        );
        assert_eq!(escape_closing("a{}", "</style"), "a{}");
    }

    #[test]
    fn reads_tags_and_attributes() {
        let html = r#"<head><link rel="icon" href="f.svg"><link rel='stylesheet' href=s.css><script type="module" src="app.js"></script>"#;
        let links = tags(html, "link");
        assert_eq!(links.len(), 2);
        assert_eq!(attr(links[0].text, "href").as_deref(), Some("f.svg"));
        assert_eq!(attr(links[1].text, "rel").as_deref(), Some("stylesheet"));
        assert_eq!(attr(links[1].text, "href").as_deref(), Some("s.css"));
        let scripts = tags(html, "script");
        assert_eq!(attr(scripts[0].text, "src").as_deref(), Some("app.js"));
        assert_eq!(attr(scripts[0].text, "type").as_deref(), Some("module"));
        assert!(
            is_local("f.svg") && !is_local("data:x") && !is_local("https://x") && !is_local("/abs")
        );
    }

    #[test]
    fn bundles_a_small_page() {
        let dir = std::env::temp_dir().join(format!("xtask-offline-{}", std::process::id()));
        let w = |p: &str, t: &str| {
            let path = dir.join(p);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, t).unwrap();
        };
        w(
            "index.html",
            "<html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'\">\n<link rel=\"stylesheet\" href=\"s.css\"><script type=\"module\" src=\"app.js\"></script></head><body><img src=\"logo.svg\"></body></html>",
        );
        w("s.css", "body{color:red}");
        w("logo.svg", "<svg/>");
        w(
            "app.js",
            "import init, { f } from './pkg/nsys_lens.js';\nimport { g } from './ui/g.js';\ng(f);\n",
        );
        w(
            "ui/g.js",
            "import { h } from './h.js';\nexport function g(x) { return h(x); }\n",
        );
        w("ui/h.js", "export const h = (x) => x;\n");
        w(
            "worker.js",
            "import init, { Analysis } from './pkg/nsys_lens.js';\nonmessage = () => {};\n",
        );
        w(
            "pkg/nsys_lens.js",
            "export function f() {}\nexport class Analysis {}\nasync function __wbg_init(p) {\n    if (p === undefined) p = new URL('x.wasm', import.meta.url);\n}\nexport { __wbg_init as default };\n",
        );
        w("pkg/nsys_lens_bg.wasm", "\0asm");
        let out = write(&dir).unwrap();
        let page = fs::read_to_string(out).unwrap();
        fs::remove_dir_all(&dir).unwrap();

        let h = page.find("export const h").unwrap();
        let g = page.find("export function g").unwrap();
        let app = page.find("g(f);").unwrap();
        assert!(h < g && g < app, "dependencies first");
        assert!(!page.contains("from './"), "no relative import left");
        assert!(page.contains("<style>body{color:red}</style>"));
        assert!(page.contains("src=\"data:image/svg+xml;base64,PHN2Zy8+\""));
        assert!(page.contains("id=\"nsys-lens-inline\">{\"wasmBase64\":\"AGFzbQ==\""));
        assert!(page.contains("connect-src 'none'"));
        assert!(!page.contains("default-src 'self'"));
        let code_start =
            page.find("<script type=\"module\">").unwrap() + "<script type=\"module\">".len();
        let code_end = code_start + page[code_start..].find("</script>").unwrap();
        assert!(
            page.contains(&csp_hash(&page[code_start..code_end])),
            "the module's hash is in the CSP"
        );
        let data_start = page.find("id=\"nsys-lens-inline\">").unwrap();
        let data = &page[data_start..data_start + page[data_start..].find("</script>").unwrap()];
        assert!(!data.contains("glueSource"));
        assert!(
            data.contains(
                "\"workerSource\":\"\\\"use strict\\\";\\n// ── worker.js ──\\nfunction f() {}\\nclass Analysis {}\\n"
            ),
            "the worker is a classic script with the glue inlined: {data}"
        );
        assert!(!data.contains("import.meta") && !data.contains("export "));
    }

    #[test]
    fn a_name_declared_by_two_modules_is_refused() {
        let module = |path: &str, text: &str| (path.to_string(), text.to_string());
        assert_eq!(
            top_level_name("export async function open(x) {"),
            Some("open")
        );
        assert_eq!(top_level_name("let shown = null;"), Some("shown"));
        assert_eq!(
            top_level_name("  const inner = 1;"),
            None,
            "not at the top level"
        );
        assert_eq!(top_level_name("const { a } = b;"), None);
        let apart = [
            module("ui/a.js", "const shown = 1;\nexport function f() {}"),
            module(
                "ui/b.js",
                "let ranksOnScreen = null;\nfunction g() { const shown = 2; }",
            ),
        ];
        assert!(no_name_twice(&apart).is_ok());
        let clash = [
            module("ui/a.js", "const shown = 1;"),
            module("ui/b.js", "let shown = null;"),
        ];
        let e = no_name_twice(&clash).expect_err("refused").to_string();
        assert!(
            e.contains("ui/a.js and ui/b.js both declare `shown`"),
            "{e}"
        );
    }

    #[test]
    fn classic_script_keeps_declarations_and_drops_module_syntax() {
        let module = "export function a() {}\nexport async function b() {}\nexport class C {\n    m() { return `export ${1}`; }\n}\nexport const d = 1;\nconst u = new URL('x', import.meta.url);\nexport { a, C as default };\nself.postMessage(d);\n";
        let script = classic_script(module).unwrap();
        assert_eq!(
            script,
            format!(
                "\"use strict\";\nfunction a() {{}}\nasync function b() {{}}\nclass C {{\n    m() {{ return `export ${{1}}`; }}\n}}\nconst d = 1;\nconst u = new URL('x', {NO_IMPORT_META});\nself.postMessage(d);\n"
            )
        );
        for bad in [
            "import x from 'bare';\n",
            "export default function f() {}\n",
            "  export function f() {}\n",
            "const m = import.meta;\n",
        ] {
            assert!(classic_script(bad).is_err(), "{bad}");
        }
    }
}
