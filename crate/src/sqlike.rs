//! SQLite `LIKE` semantics, evaluated in Rust: `%` any run, `_` exactly one character,
//! ASCII-only case folding, no escape character.
//!
//! The `trtllm-skill` profile must select exactly the rows the reference scripts' SQL selects
//! (e.g. `'%_prepare_tp_inputs%'` needs a character before `prepare`), while the data is filtered
//! in Rust rather than in SQL.

/// A compiled `LIKE` pattern.
#[derive(Debug, Clone)]
pub struct Like {
    pattern: Vec<char>,
    /// The longest run of ASCII literal characters: every match contains it (ASCII case folded),
    /// so most texts are rejected by one substring search.
    required: Vec<u8>,
}

impl Like {
    pub fn new(pattern: &str) -> Like {
        Like {
            pattern: pattern.chars().collect(),
            required: longest_literal(pattern),
        }
    }

    /// Whether `text LIKE pattern` is true in SQLite (default `case_sensitive_like=OFF`).
    /// Allocation-free: it runs over every distinct string of a trace (hundreds of thousands).
    pub fn matches(&self, text: &str) -> bool {
        contains_folded(text.as_bytes(), &self.required) && like(&self.pattern, text)
    }
}

/// The longest run of ASCII characters other than the wildcards `%` and `_`.
fn longest_literal(pattern: &str) -> Vec<u8> {
    pattern
        .split(|c: char| c == '%' || c == '_' || !c.is_ascii())
        .max_by_key(|run| run.len())
        .unwrap_or("")
        .as_bytes()
        .to_vec()
}

/// Whether `needle` (ASCII) occurs in `hay`, ASCII case folded. A UTF-8 byte ≥ 0x80 never
/// equals an ASCII byte, so a byte search finds exactly the character matches.
pub fn contains_folded(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut from = 0;
    while let Some(i) = hay
        .get(from..)
        .and_then(|h| memchr::memchr2(lower, upper, h))
    {
        let at = from + i + 1;
        match hay.get(at..at + rest.len()) {
            Some(tail) if tail.eq_ignore_ascii_case(rest) => return true,
            Some(_) => from = at,
            None => return false,
        }
    }
    false
}

fn eq_fold(a: char, b: char) -> bool {
    a == b || (a.is_ascii() && b.is_ascii() && a.eq_ignore_ascii_case(&b))
}

/// The character at byte `at` of `t` and the byte after it.
fn char_at(t: &str, at: usize) -> Option<(char, usize)> {
    let c = t.get(at..)?.chars().next()?;
    Some((c, at + c.len_utf8()))
}

/// Iterative wildcard match with single-star backtracking (linear in practice); `ti` and the
/// star's restart point are byte offsets on character boundaries of `t`.
fn like(p: &[char], t: &str) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some((c, next)) = char_at(t, ti) {
        if pi < p.len() && (p[pi] == '_' || (p[pi] != '%' && eq_fold(p[pi], c))) {
            pi += 1;
            ti = next;
        } else if pi < p.len() && p[pi] == '%' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            let Some((_, after)) = char_at(t, st) else {
                return false;
            };
            pi = sp + 1;
            ti = after;
            star = Some((sp, after));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '%')
}

#[cfg(test)]
mod tests {
    use super::Like;

    #[test]
    fn underscore_is_one_character_and_case_folds_ascii() {
        let fwd = Like::new("%[Executor] _forward_step%");
        assert!(fwd.matches("[Executor] _forward_step 3: 0 ctx reqs, 8 gen reqs"));
        assert!(fwd.matches("[executor] Xforward-step"));
        assert!(!fwd.matches("[Executor]_forward_step"));
        let prep = Like::new("%_prepare_tp_inputs%");
        assert!(prep.matches("_prepare_tp_inputs"));
        assert!(!prep.matches("prepare_tp_inputs"));
        assert!(Like::new("%nccl%").matches("ncclDevKernel_AllReduce"));
        assert!(Like::new("%nccl%").matches("NCCL"));
        assert!(Like::new("%allreduce%").matches("AllReduce_fusion"));
        assert!(!Like::new("%é%").matches("É"));
        assert!(Like::new("").matches(""));
        assert!(!Like::new("").matches("x"));
        assert!(Like::new("%").matches(""));
        assert!(Like::new("%_é_%").matches("aéb"));
        assert!(Like::new("a_c").matches("aéc"));
        assert!(!Like::new("a__c").matches("aéc"));
        assert!(Like::new("%ab%ab%").matches("xaaabyyab"));
        assert!(Like::new("%NcCl%").matches("xxncclyy"));
        assert!(!Like::new("%nccl%").matches("ncc"));
        assert!(!Like::new("%nccl%").matches("nccnccxl"));
        assert!(Like::new("é%").matches("é"));
    }
}
