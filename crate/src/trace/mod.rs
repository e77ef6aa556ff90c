//! Importing an nsys SQLite export: recognise the file, probe its schema, read its tables.
//!
//! This is the only module that talks to SQLite. It yields the export's catalog and its rows in
//! start order ([`FileScan`], [`FileRows`]; whole tables loaded into a [`crate::model::Trace`]
//! for tests); analyses never see a connection.

mod capture;
#[cfg(not(target_arch = "wasm32"))]
mod cell_batch;
mod cells;
mod decode;
mod host_records;
mod host_rows;
mod links;
mod load;
mod nccl;
mod nvtx_names;
mod open;
mod row_cache;
pub use row_cache::{READ_MEMORY, RowBudget, SharedBudget, row_budget, view_room};
mod nvtx_rows;
mod rows;
mod runs;
mod schema;
mod tables;
mod work_rows;

pub use host_rows::HostRows;
pub use links::Links;
pub use load::{
    GRAPH_TRACE_TABLE, KERNEL_TABLE, LoadOptions, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE, Part,
    Progress, ProgressFn, RUNTIME_TABLE, SYNC_TABLE, kernel_table_notes, load, load_part,
    merge_kernel_part, probe_export, reads_graph_nodes,
};
pub use nvtx_rows::NvtxRows;
#[cfg(not(target_arch = "wasm32"))]
pub use open::open_path;
pub use open::{HEADER_LEN, check_header, configure, sqlite_error};
pub use rows::{
    FileRows, FileScan, HEARTBEAT_ROWS, HostScan, KernelPart, Lane, MAX_FILE_RUNS, RANGE_ROWIDS,
    RangeAsk, RangeFold, RangeReader, ReaderScan, RowKind, heartbeat, rows_handed_out,
};
#[cfg(not(target_arch = "wasm32"))]
pub use rows::{GpuFold, GpuProgress, ScanFold};
pub use schema::{Schema, read_meta};
pub use work_rows::{WorkEnds, WorkRows, work_table_name};

/// Opens and loads a file on disk in one call (CLI, tests, benchmarks).
#[cfg(not(target_arch = "wasm32"))]
pub fn load_path(
    path: &std::path::Path,
    opts: LoadOptions,
) -> crate::error::Result<crate::model::Trace> {
    let conn = open_path(path)?;
    load::load_parallel(&conn, path, opts)
}
