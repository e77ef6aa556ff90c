//! Hotspot types from a line's own text (the optimization skill's table, `docs/line-profiler.md`):
//! each line that was hit gets one type, from the first rule below that matches, and the rule is
//! reported with it so the user sees why.

use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

/// A hotspot type of the TensorRT-LLM optimization skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    /// A device sync (`.item()`, `.cpu()`, `.tolist()`, `synchronize()`) run several times per call.
    HostSync,
    /// A device sync run once per call.
    Sync,
    Alloc,
    Pyloop,
    RedundantIter,
    Container,
    Funcall,
    Comm,
    Gil,
    Serialize,
    Gc,
    Compute,
}

impl Kind {
    /// The skill's severity of the type.
    pub fn severity(self) -> &'static str {
        match self {
            Kind::HostSync | Kind::Sync => "critical",
            Kind::Alloc | Kind::Pyloop | Kind::RedundantIter | Kind::Comm => "high",
            Kind::Container | Kind::Funcall | Kind::Gil | Kind::Serialize => "medium",
            Kind::Gc | Kind::Compute => "low",
        }
    }

    /// The name as the skill writes it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::HostSync => "HOST_SYNC",
            Kind::Sync => "SYNC",
            Kind::Alloc => "ALLOC",
            Kind::Pyloop => "PYLOOP",
            Kind::RedundantIter => "REDUNDANT_ITER",
            Kind::Container => "CONTAINER",
            Kind::Funcall => "FUNCALL",
            Kind::Comm => "COMM",
            Kind::Gil => "GIL",
            Kind::Serialize => "SERIALIZE",
            Kind::Gc => "GC",
            Kind::Compute => "COMPUTE",
        }
    }
}

/// A loop header runs once per iteration plus once to exit: at least this many iterations per
/// call make it a PYLOOP hotspot ("`for x in collection:` with many iterations").
pub const PYLOOP_MIN_ITERATIONS: f64 = 8.0;

/// At least this many hits per call of its function put a line inside a loop (the skill's
/// "Hits ≫ expected": a line run once per call has 1).
pub const LOOP_HITS_PER_CALL: f64 = 2.0;

/// What a rule sees of a line.
pub struct LineFacts<'a> {
    /// The code, comments removed.
    pub code: &'a str,
    /// Hits per call of the function, when the calls are known.
    pub hits_per_call: Option<f64>,
    /// Another line of the function that iterates over the same collection, first seen.
    pub same_iterable_line: Option<u32>,
}

/// The type and the rule that matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    pub kind: Kind,
    pub rule: String,
}

static SYNC: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\.(item|cpu|tolist|numpy)\(\)|synchronize\(|cudaMemcpy|\.to\(\s*['\x22]cpu['\x22]")
});
static COMM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\w*(all_reduce|allreduce|all_gather|allgather|reduce_scatter|broadcast|barrier|bcast|alltoall)\w*\s*\(|\bdist\.\w+\(|\b(send|recv|isend|irecv)\s*\(",
    )
});
static SERIALIZE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b(pickle|cloudpickle|json|msgpack|marshal)\.\w+|SerializeToString|ParseFromString")
});
static GIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b[Ll]ock\b|_lock\b|\.(acquire|release|wait|notify|notify_all|put|put_nowait|get_nowait)\(|\.get\(\s*(timeout|block)|\bqueue\.get\(|\b(Queue|Condition|Semaphore|Event)\(",
    )
});
static GC: LazyLock<Regex> = LazyLock::new(|| re(r"\bgc\.\w+\("));
static ALLOC: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(torch|np|numpy)\.(zeros|empty|ones|full|tensor|as_tensor|arange|rand|randn|cat|stack|array)(_like)?\(|\.(clone|contiguous|copy|new_zeros|new_empty|new_tensor|new_ones|pin_memory)\(|\.to\(|\bdeepcopy\(|\[None\]\s*\*",
    )
});
static LOOP_HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(async\s+)?(for\s+.+\s+in\s+.+|while\s+.+):\s*$"));
static CALL: LazyLock<Regex> = LazyLock::new(|| re(r"([A-Za-z_][\w\.]*)\s*\("));
static CONTAINER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\w\[[^\]:]+\]|\s(not\s+)?in\s+[\w\.]+|\.(get|setdefault|items|keys|values|pop|add|append|update)\(",
    )
});

fn re(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

/// Keywords and builtins that look like calls but are not a profiled function's callee.
pub const NOT_CALLEES: [&str; 24] = [
    "if",
    "elif",
    "while",
    "for",
    "return",
    "and",
    "or",
    "not",
    "in",
    "print",
    "len",
    "range",
    "isinstance",
    "list",
    "dict",
    "tuple",
    "set",
    "int",
    "float",
    "str",
    "bool",
    "enumerate",
    "zip",
    "super",
];

/// The calls on a line, outermost first (left to right), keywords and builtins left out.
pub fn calls(code: &str) -> Vec<&str> {
    CALL.captures_iter(code)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .filter(|name| !NOT_CALLEES.contains(name))
        .collect()
}

/// Library roots and builtin methods whose code is C, not Python: line_profiler has no lines to
/// show in them, so a line spending its time there is not drilled into (its type says why).
const C_ROOTS: [&str; 14] = [
    "torch",
    "np",
    "numpy",
    "json",
    "pickle",
    "math",
    "time",
    "os",
    "gc",
    "threading",
    "queue",
    "dist",
    "copy",
    "itertools",
];
const BUILTIN_METHODS: [&str; 24] = [
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "get",
    "items",
    "keys",
    "values",
    "update",
    "add",
    "discard",
    "setdefault",
    "copy",
    "join",
    "split",
    "strip",
    "format",
    "item",
    "tolist",
    "cpu",
    "numpy",
    "clone",
    "sort",
];

/// Whether a callee can be a Python function with lines of its own to profile.
pub fn is_python_callee(callee: &str) -> bool {
    let root = callee.split('.').next().unwrap_or(callee);
    let method = callee.rsplit('.').next().unwrap_or(callee);
    let is_method = callee.contains('.');
    !(C_ROOTS.contains(&root) || is_method && BUILTIN_METHODS.contains(&method))
}

/// Whether the line is a `for`/`while` header.
pub fn is_loop_header(code: &str) -> bool {
    LOOP_HEADER.is_match(code)
}

/// Classifies a line that was hit; the first matching rule wins.
pub fn classify(f: &LineFacts<'_>) -> Classification {
    let code = f.code;
    let hpc = f.hits_per_call;
    let looped = hpc.is_some_and(|h| h >= LOOP_HITS_PER_CALL);
    let per_call =
        |h: Option<f64>| h.map_or_else(String::new, |h| format!(" ({h:.1} hits per call)"));
    let found = |r: &Regex| r.find(code).map(|m| m.as_str().trim().to_string());
    let c = |kind: Kind, rule: String| Classification { kind, rule };
    if let Some(m) = found(&GC) {
        return c(Kind::Gc, format!("garbage-collector call `{m}`"));
    }
    if let Some(m) = found(&SYNC) {
        return if looped {
            c(
                Kind::HostSync,
                format!("device sync `{m}` repeated within a call{}", per_call(hpc)),
            )
        } else {
            c(
                Kind::Sync,
                format!("device sync `{m}`: the host waits for the GPU"),
            )
        };
    }
    if let Some(m) = found(&COMM) {
        return c(
            Kind::Comm,
            format!("collective or rank communication `{m}`"),
        );
    }
    if let Some(m) = found(&SERIALIZE) {
        return c(Kind::Serialize, format!("serialization `{m}`"));
    }
    if let Some(m) = found(&GIL) {
        return c(Kind::Gil, format!("lock, queue or wait `{m}`"));
    }
    if let Some(m) = found(&ALLOC) {
        let where_ = if looped { " in a loop" } else { "" };
        return c(
            Kind::Alloc,
            format!("allocation or copy `{m}`{where_}{}", per_call(hpc)),
        );
    }
    if let Some(other) = f.same_iterable_line {
        return c(
            Kind::RedundantIter,
            format!("iterates over the same collection as line {other} again"),
        );
    }
    if let Some(h) = hpc.filter(|h| is_loop_header(code) && h - 1.0 >= PYLOOP_MIN_ITERATIONS) {
        return c(
            Kind::Pyloop,
            format!("Python loop of {:.1} iterations per call", h - 1.0),
        );
    }
    if looped
        && !is_loop_header(code)
        && CONTAINER.is_match(code)
        && calls(code).iter().all(|n| is_container_method(n))
    {
        return c(
            Kind::Container,
            format!("dict/set/list access inside a loop{}", per_call(hpc)),
        );
    }
    if let Some(name) = calls(code).first() {
        return c(Kind::Funcall, format!("calls `{name}(…)`{}", per_call(hpc)));
    }
    c(
        Kind::Compute,
        "plain Python computation (no call, sync, allocation or loop)".into(),
    )
}

fn is_container_method(name: &str) -> bool {
    let method = name.rsplit('.').next().unwrap_or(name);
    [
        "get",
        "setdefault",
        "items",
        "keys",
        "values",
        "pop",
        "add",
        "append",
        "update",
    ]
    .contains(&method)
}

/// The collection a `for` header or a comprehension iterates over (`for r in self.requests:` →
/// `self.requests`), for REDUNDANT_ITER.
pub fn iterable(code: &str) -> Option<String> {
    static ITER: LazyLock<Regex> =
        LazyLock::new(|| re(r"\bfor\s+[\w\s,\(\)]+?\s+in\s+([A-Za-z_][\w\.]*(?:\(\))?)"));
    ITER.captures(code)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
        .filter(|s| !s.starts_with("range") && !s.starts_with("enumerate"))
}

/// The code of a line without its trailing comment (a `#` outside quotes).
pub fn code_of(text: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, ch) in text.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch == q {
                    quote = None;
                }
            }
            None if ch == '\'' || ch == '"' => quote = Some(ch),
            None if ch == '#' => return text[..i].trim_end(),
            None => {}
        }
    }
    text.trim_end()
}
