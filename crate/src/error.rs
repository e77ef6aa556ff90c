//! Errors that stop an analysis, each phrased as "what is wrong, and what to do".
//!
//! Anything that merely limits an analysis (a missing NVTX table, an old schema) is not an error
//! but a [`crate::model::CoverageNote`]. These are the cases where no verdict can be given.

use thiserror::Error;

/// Why a file cannot be analysed. `Display` is the one line a user sees.
#[derive(Debug, Error)]
pub enum Error {
    #[error(
        "{path}: the file is empty (0 bytes). Export the report again: nsys export --type sqlite -o trace.sqlite trace.nsys-rep"
    )]
    Empty { path: String },

    #[error(
        "{path}: this is an Nsight Systems report (.nsys-rep/.qdrep), not its SQLite export. Convert it first: nsys export --type sqlite -o trace.sqlite {path}"
    )]
    NsysRep { path: String },

    #[error(
        "{path}: not an SQLite database (it does not start with the SQLite header). nsys-lens reads the SQLite export of an Nsight Systems report: nsys export --type sqlite -o trace.sqlite trace.nsys-rep"
    )]
    NotSqlite { path: String },

    #[error(
        "{path}: the SQLite file is truncated ({actual} bytes, but its header says {expected}). Copy or download it again, or re-export it: nsys export --type sqlite -o trace.sqlite trace.nsys-rep"
    )]
    Truncated {
        path: String,
        expected: u64,
        actual: u64,
    },

    #[error(
        "{path}: the SQLite file is damaged ({detail}). Re-export it: nsys export --type sqlite -o trace.sqlite trace.nsys-rep"
    )]
    Corrupt { path: String, detail: String },

    #[error(
        "{path}: an SQLite database, but not an Nsight Systems export (no StringIds table and no CUPTI_*/NVTX_* tables). Export the report with: nsys export --type sqlite -o trace.sqlite trace.nsys-rep"
    )]
    NotNsysExport { path: String },

    /// No kernel records: the verdict cannot be computed (`report` still gives the host side).
    #[error(
        "{path}: no GPU kernels in this export ({why}): verdict not computed: no kernel records. {advice}"
    )]
    NoKernels {
        path: String,
        why: String,
        advice: String,
    },

    #[error("{path}: cannot read the file: {detail}")]
    Io { path: String, detail: String },

    #[error("{path}: SQLite error while reading {what}: {detail}")]
    Sqlite {
        path: String,
        what: String,
        detail: String,
    },

    #[error("the analysis was cancelled")]
    Cancelled,

    #[error("{0}")]
    Usage(String),

    /// A dropped or given text file is not line_profiler's text output.
    #[error("{path}: {detail}")]
    NotLineProfiler { path: String, detail: String },

    /// A message between the page's workers did not decode: a bug, not the user's input.
    #[error("internal error: {detail}. Reload the page; if it happens again, please report it")]
    Internal { detail: String },
}

impl Error {
    /// The CLI exit status: 2 for usage errors, 3 for input that cannot be analysed.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            _ => 3,
        }
    }

    /// A stable name for the kind of error, for a caller that must tell them apart (the page's
    /// workers pass it along with the message; nothing matches the message's text).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Empty { .. } => "empty",
            Error::NsysRep { .. } => "nsys-rep",
            Error::NotSqlite { .. } => "not-sqlite",
            Error::Truncated { .. } => "truncated",
            Error::Corrupt { .. } => "corrupt",
            Error::NotNsysExport { .. } => "not-nsys-export",
            Error::NoKernels { .. } => "no-kernels",
            Error::Io { .. } => "io",
            Error::Sqlite { .. } => "sqlite",
            Error::Cancelled => "cancelled",
            Error::Usage(_) => "usage",
            Error::NotLineProfiler { .. } => "not-line-profiler",
            Error::Internal { .. } => "internal",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
