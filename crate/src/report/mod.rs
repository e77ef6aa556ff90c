//! Rendering results for people: the CLI's text report.

pub mod analyze;
pub mod text;
