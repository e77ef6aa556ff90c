//! nsys-lens: is the host (CPU) the bottleneck of an LLM serving run, and what regressed?
//!
//! The data flow is importer → tables → metrics, kept apart:
//! - [`trace`] opens an Nsight Systems SQLite export and loads it into the columnar [`model`];
//! - [`detect`] computes the host-overhead verdict (spec §2) in the `standard` or
//!   `trtllm-skill` profile;
//! - [`report`] renders results as text;
//! - [`synth`] writes synthetic exports with known answers for tests and benchmarks.
//!
//! See `ARCHITECTURE.md` at the repository root for the map. Comments cite the product
//! specification as `spec §N` (`docs/spec.md`, anchor `#spec-N`) and the reference scripts'
//! specification as `reference §N` (`docs/reference/trtllm-skill-spec.md`).

pub mod analyze;
pub mod costs;
pub mod detect;
pub mod drill;
pub mod error;
pub mod explain;
pub mod findings;
pub mod format;
pub mod index;
pub mod iterations;
pub mod lprof;
pub mod model;
pub mod names;
pub mod plot;
pub mod profile;
pub mod pyfmt;
pub mod ranks;
pub mod report;
pub mod reread;
pub mod riders;
pub mod sqlike;
pub mod steps;
pub mod synth;
pub mod timeline;
pub mod trace;
#[cfg(target_arch = "wasm32")]
pub mod web;
pub mod whatif;

pub use error::{Error, Result};
