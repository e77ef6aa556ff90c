//! The verdict view from a kernel table streamed once instead of loaded (issue 3: the page's
//! memory must not grow with the file). The analysis worker loads the host side in steps
//! ([`crate::trace::StagedLoad`]); after NVTX it hands a [`KernelPlan`] to a second worker that
//! reads the kernel table in `rowid` chunks ([`crate::trace::KernelRows`]) into the one-pass
//! analyses; their small results come back and join the host side.

pub mod plan;

pub use plan::{KernelPlan, PlanRange};
