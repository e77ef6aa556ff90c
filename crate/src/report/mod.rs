//! Rendering results for people: the CLI's text report; and the version of every JSON output.

pub mod analyze;
pub mod capture;
pub mod charts;
pub mod csv;
pub mod document;
pub mod drill;
pub mod html;
pub mod markdown;
pub mod outline;
pub mod tables;
pub mod text;
pub mod whatif;

use serde::Serialize;

/// The version of the JSON that `--json` and `report.json` write (`schemas/` at the repository
/// root describes each command's). A field removed, renamed or given another type raises it; a
/// field added does not.
pub const SCHEMA_VERSION: u32 = 1;

/// A result as `--json` writes it: `{"schema_version": N, …the result's own keys, in order}`.
#[derive(Debug, Clone, Copy)]
pub struct Versioned<'a, T>(pub &'a T);

impl<T: Serialize> Serialize for Versioned<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a, T> {
            schema_version: u32,
            #[serde(flatten)]
            result: &'a T,
        }
        Out {
            schema_version: SCHEMA_VERSION,
            result: self.0,
        }
        .serialize(s)
    }
}
