//! The name catalogue: what the names in a trace mean (launch APIs, other API kinds, NCCL and
//! collective kernels, kernel classes, host-prep ranges, forward-step markers, what an NVTX
//! range says the host was doing, the shape NVTX ops are grouped by).
//!
//! Pure rules over `&str`, with no trace, table or profile behind them: every layer above
//! asks here, so a rule is written once. Tables that evaluate a rule once per string of a trace
//! live with their readers ([`crate::detect::name_tables`], [`crate::index::rows::RowIndex`]).

pub mod api;
pub mod kernels;
pub mod launch;
pub mod patterns;
pub mod phase_map;
pub mod ranges;
pub mod shape;
pub mod steps;
