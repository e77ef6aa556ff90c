//! The integration tests, as one test binary: each module is one behaviour's tests (named by
//! what they check), `common` the helpers they share. One binary links once where forty did
//! (the suite's build time was mostly linking); `fuzz`, `file_rows_memory` (a counting global
//! allocator) and `web` (wasm32) stay binaries of their own.

mod common;

mod action;
mod analysis_over_rows;
mod analyze;
mod architecture;
mod bad_inputs;
mod capture;
mod catalogue;
mod ci_gates;
mod cli_help;
mod docs;
mod drill;
mod evidence;
mod explain;
mod file_rows;
mod file_rows_cache;
mod gaps;
mod gpu_work;
mod inferred_steps;
mod json_schemas;
mod kernel_classes;
mod lanes;
mod loading;
mod lprof;
mod op_shapes;
mod page_engine;
mod page_verdict;
mod public_traces;
mod ranks;
mod ranks_merge;
mod reference_oracle;
mod report;
mod scan_fold;
mod scenarios;
mod skill;
mod step_markers;
mod timeline;
mod timeline_gpu_work;
mod views_over_file;
mod whatif;
