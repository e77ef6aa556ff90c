//! What the export says about itself (nsys version, GPUs, capture options) and what could
//! not be loaded.

use serde::{Deserialize, Serialize};

/// One GPU from `TARGET_INFO_GPU` (or `TARGET_INFO_CUDA_DEVICE`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuInfo {
    pub id: i64,
    pub name: String,
    pub bus_location: Option<String>,
    pub sm_count: Option<i64>,
    pub total_memory: Option<i64>,
}

/// Facts about the export itself: version, capture options, which tables exist.
#[derive(Debug, Default, Clone, Serialize)]
pub struct TraceMeta {
    /// `EXPORT_PRODUCT_VERSION`, e.g. `2025.3.1.90`.
    pub nsys_version: Option<String>,
    /// `EXPORT_SCHEMA_VERSION`, e.g. `3.20.2`.
    pub schema_version: Option<String>,
    /// Which metadata table held the version (`META_DATA_EXPORT` or the old `EXPORT_META_DATA`).
    pub metadata_table: Option<String>,
    /// `META_DATA_CAPTURE` rows (name, value), in table order.
    pub capture: Vec<(String, String)>,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`, to align several files.
    pub session_start_utc_ns: Option<i64>,
    /// All tables in the file, sorted.
    pub tables: Vec<String>,
    /// `CUDA_GRAPH_NODE_EVENTS`, when the export has it (node-level graph tracing).
    pub graph_node_events: Option<GraphNodeEvents>,
    /// What NCCL said of its communicators: the payloads of its `ncclCommInitRank*` (and
    /// `ncclCommDestroy`/`Abort`) NVTX ranges, when the export carries them (`nsys export
    /// --include-blobs=true`); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nccl_ranks: Vec<NcclRank>,
}

/// One rank as NCCL knows it: the payload of an NVTX range in its `NcclNvtxParamsCommInitRank`
/// schema (communicator hash, number of ranks, the caller's rank, its CUDA device), with the
/// process that recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NcclRank {
    /// OS process id of the range's thread (`globalTid >> 24 & 0xFFFFFF`).
    pub pid: u32,
    pub communicator: u64,
    pub nranks: u32,
    pub rank: u32,
    pub cuda_device: u32,
}

/// What `CUDA_GRAPH_NODE_EVENTS` holds: one row per graph node created (captured, added or
/// cloned when a graph is instantiated), `originalGraphNodeId` set on a clone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GraphNodeEvents {
    pub rows: u64,
    /// Rows with an `originalGraphNodeId`: nodes cloned from another (instantiation).
    pub cloned: u64,
}

impl TraceMeta {
    /// Whether CUDA graphs were traced as whole graphs (`--cuda-graph-trace=graph`): their
    /// kernels then carry no `graphNodeId`, which the verdict's warning looks for.
    pub fn traces_whole_graphs(&self) -> bool {
        self.capture_option("CUDA_GRAPH_TRACE_OPTIONS:MODE") == Some("Graph")
    }

    /// The first capture option with this name, also as a per-process key (`PROCESS_0:NAME`).
    pub fn capture_option(&self, name: &str) -> Option<&str> {
        let matches = |k: &str| {
            k == name
                || k.strip_suffix(name)
                    .is_some_and(|p| p.starts_with("PROCESS_") && p.ends_with(':'))
        };
        self.capture
            .iter()
            .find(|(k, _)| matches(k))
            .map(|(_, v)| v.as_str())
    }
}

/// One thing that could not be loaded or computed, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CoverageNote {
    /// What is affected (a table, a metric, a phase ...).
    pub subject: String,
    /// Why, and what it means for the results.
    pub reason: String,
}
