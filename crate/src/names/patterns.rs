//! NVTX and kernel name patterns of the verdict: NCCL kernels, host-prep ranges, and the
//! ranges that may define windows, matched by substring or by SQLite `LIKE` as each profile says.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::sqlike::Like;

/// Host-prep NVTX name patterns, most specific first (reference `detect_host_overhead.py`).
pub const PREP_PATTERNS: [&str; 3] = ["_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs"];

/// How NVTX names are matched against the NCCL, host-prep and forward-step patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NameMatch {
    /// Case-sensitive substring (NCCL: case-insensitive).
    Substring,
    /// SQLite `LIKE` with `%`/`_` wildcards, ASCII case folding.
    SqliteLike,
}

/// Whether `name` is an NCCL kernel's: `LIKE '%nccl%'` (`like`), else a case-insensitive
/// substring.
pub fn is_nccl_name(name: &str, like: bool) -> bool {
    static LIKE: OnceLock<Like> = OnceLock::new();
    match like {
        true => LIKE.get_or_init(|| Like::new("%nccl%")).matches(name),
        false => crate::sqlike::contains_folded(name.as_bytes(), b"nccl"),
    }
}

/// Whether `name` matches host-prep pattern `p` (of [`PREP_PATTERNS`]): `LIKE '%p%'` (`like`),
/// else a substring.
pub fn is_prep_name(name: &str, p: usize, like: bool) -> bool {
    static LIKES: OnceLock<Vec<Like>> = OnceLock::new();
    let likes = || {
        PREP_PATTERNS
            .map(|pat| Like::new(&format!("%{pat}%")))
            .to_vec()
    };
    match like {
        true => LIKES
            .get_or_init(likes)
            .get(p)
            .is_some_and(|l| l.matches(name)),
        false => PREP_PATTERNS.get(p).is_some_and(|pat| name.contains(pat)),
    }
}
