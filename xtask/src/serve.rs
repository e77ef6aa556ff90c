//! `cargo xtask serve [--port N]`: `dist`, then serve `dist/` on `http://127.0.0.1:N`.
//!
//! A small std-only static HTTP/1.1 server (one thread per connection, `Connection: close`):
//! enough for trying the page and for the browser tests, with the content types browsers insist
//! on (`application/wasm` for streaming compilation, `text/javascript` for modules) and
//! `Cache-Control: no-cache` so a rebuild is picked up on reload.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use crate::Result;
use crate::web;

pub const DEFAULT_PORT: u16 = 8000;

/// Parsed `serve` options.
pub struct Options {
    pub port: u16,
}

impl Options {
    pub fn parse(args: &[String]) -> std::result::Result<Options, String> {
        let mut opts = Options { port: DEFAULT_PORT };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--port" => {
                    let v = it.next().ok_or("--port needs a value")?;
                    opts.port = v
                        .parse()
                        .map_err(|_| format!("--port: not a port number: {v}"))?;
                }
                other => return Err(format!("`serve`: unknown option `{other}`")),
            }
        }
        Ok(opts)
    }
}

/// Builds `dist/` and serves it until interrupted.
pub fn serve(opts: &Options) -> Result<()> {
    web::dist()?;
    let root = web::dist_dir();
    let listener = TcpListener::bind(("127.0.0.1", opts.port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", opts.port))?;
    println!(
        "serving {} at http://127.0.0.1:{}/ (Ctrl-C to stop)",
        root.display(),
        opts.port
    );
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        thread::spawn(move || {
            if let Err(e) = handle(stream, &root) {
                eprintln!("serve: {e}");
            }
        });
    }
    Ok(())
}

/// One request, one response, then the connection closes.
fn handle(stream: TcpStream, root: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes a static response.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 0 && header.trim_end() != "" {
        header.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let response = respond(method, target, root);
    let mut out = stream;
    out.write_all(&response.head())?;
    if method != "HEAD" {
        out.write_all(&response.body)?;
    }
    out.flush()
}

/// A response before it is written.
struct Response {
    status: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Response {
    fn text(status: &'static str, body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.as_bytes().to_vec(),
        }
    }

    fn head(&self) -> Vec<u8> {
        let allow = if self.status.starts_with("405") {
            "Allow: GET, HEAD\r\n"
        } else {
            ""
        };
        format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n\
             X-Content-Type-Options: nosniff\r\n{allow}Connection: close\r\n\r\n",
            self.status,
            self.content_type,
            self.body.len()
        )
        .into_bytes()
    }
}

fn respond(method: &str, target: &str, root: &Path) -> Response {
    if method != "GET" && method != "HEAD" {
        return Response::text("405 Method Not Allowed", "only GET and HEAD\n");
    }
    let Some(path) = resolve(root, target) else {
        return Response::text("400 Bad Request", "bad path\n");
    };
    match fs::read(&path) {
        Ok(body) => Response {
            status: "200 OK",
            content_type: content_type(&path),
            body,
        },
        Err(_) => Response::text("404 Not Found", "not found\n"),
    }
}

/// The file a request target names below `root`: query and fragment dropped, percent-decoded,
/// `..` refused, directories mapped to their `index.html`.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let decoded = percent_decode(path)?;
    if !decoded.starts_with('/') || decoded.contains('\\') || decoded.contains('\0') {
        return None;
    }
    let mut file = root.to_path_buf();
    for segment in decoded.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if segment == ".." {
            return None;
        }
        file.push(segment);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    Some(file)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        "ts" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_traversal_and_maps_paths() {
        let root = Path::new("/srv/dist");
        assert_eq!(resolve(root, "/app.js?v=1"), Some(root.join("app.js")));
        assert_eq!(
            resolve(root, "/pkg/nsys_lens.js"),
            Some(root.join("pkg/nsys_lens.js"))
        );
        assert_eq!(resolve(root, "/a%20b.svg"), Some(root.join("a b.svg")));
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/pkg/%2e%2e/%2e%2e/x"), None);
        assert_eq!(resolve(root, "/%zz"), None);
        assert_eq!(resolve(root, "relative"), None);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type(Path::new("a.wasm")), "application/wasm");
        assert_eq!(
            content_type(Path::new("a.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("index.html")),
            "text/html; charset=utf-8"
        );
    }
}
