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
}

impl Like {
    pub fn new(pattern: &str) -> Like {
        Like {
            pattern: pattern.chars().collect(),
        }
    }

    /// Whether `text LIKE pattern` is true in SQLite (default `case_sensitive_like=OFF`).
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        like(&self.pattern, &text)
    }
}

fn eq_fold(a: char, b: char) -> bool {
    a == b || (a.is_ascii() && b.is_ascii() && a.eq_ignore_ascii_case(&b))
}

/// Iterative wildcard match with single-star backtracking (linear in practice).
fn like(p: &[char], t: &[char]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '_' || (p[pi] != '%' && eq_fold(p[pi], t[ti]))) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '%' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
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
    }
}
