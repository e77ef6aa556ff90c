//! Rendering results for people: the CLI's text report.

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
