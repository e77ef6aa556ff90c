//! Table definitions and the small descriptive tables of a synthetic export.
//!
//! The DDL is the real nsys 2025.3.1 (schema 3.20.2) text, so a synthetic file probes exactly
//! like a real one; the metadata says which nsys version it imitates and that nsys-lens made it.

use rusqlite::{Connection, params};

use super::timeline::Timeline;

/// `CREATE TABLE` statements copied from `reference/nsys-schema/schema_2025.3.1_3.20.2.sql`.
pub const DDL: &str = include_str!("ddl.sql");

/// The nsys version the synthetic files claim to come from.
pub const NSYS_VERSION: &str = "2025.3.1.90";
pub const SCHEMA_VERSION: &str = "3.20.2";

/// GPU model written to `TARGET_INFO_GPU` for every device.
pub const GPU_NAME: &str = "NVIDIA H100 80GB HBM3";

/// NVTX event types described in `ENUM_NSYS_EVENT_TYPE` (the subset the generator writes or
/// analyses read), from `reference/nsys-schema/ENUM_NSYS_EVENT_TYPE_2026.2.tsv`.
const EVENT_TYPES: [(i64, &str, &str); 9] = [
    (33, "NvtxCategory", "NVTX Category"),
    (34, "NvtxMark", "NVTX Mark"),
    (39, "NvtxThread", "NVTX Thread"),
    (59, "NvtxPushPopRange", "NVTX PushPop Range"),
    (60, "NvtxStartEndRange", "NVTX StartEnd Range"),
    (70, "NvtxtPushPopRange", "NVTXT PushPop Range"),
    (71, "NvtxtStartEndRange", "NVTXT StartEnd Range"),
    (75, "NvtxDomainCreate", "NVTX Domain Create"),
    (76, "NvtxDomainDestroy", "NVTX Domain Destroy"),
];

/// Creates every table (no indexes: they would only slow the bulk insert down).
pub fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(DDL)
}

/// Writes META_DATA_*, TARGET_INFO_*, PROCESSES, ThreadNames and ENUM_NSYS_EVENT_TYPE.
/// Thread names are `StringIds` references, so their strings must be interned before
/// `StringIds` is written: call this first.
pub fn write_descriptive(
    conn: &Connection,
    tl: &mut Timeline,
    scenario: &str,
) -> rusqlite::Result<()> {
    write_export_meta(conn, scenario)?;
    write_capture_meta(conn, tl)?;
    write_session(conn, tl)?;
    write_gpus(conn, tl)?;
    write_processes(conn, tl)?;
    let mut stmt =
        conn.prepare("INSERT INTO ENUM_NSYS_EVENT_TYPE (id, name, label) VALUES (?1, ?2, ?3)")?;
    for (id, name, label) in EVENT_TYPES {
        stmt.execute(params![id, name, label])?;
    }
    Ok(())
}

fn name_values(conn: &Connection, table: &str, rows: &[(&str, String)]) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&format!(
        "INSERT INTO {table} (name, value) VALUES (?1, ?2)"
    ))?;
    for (name, value) in rows {
        stmt.execute(params![name, value])?;
    }
    Ok(())
}

fn write_export_meta(conn: &Connection, scenario: &str) -> rusqlite::Result<()> {
    let rows = [
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems".to_string()),
        ("EXPORT_PRODUCT_VERSION", NSYS_VERSION.to_string()),
        ("EXPORT_PRODUCT_DATE", "2025.3".to_string()),
        ("EXPORT_SCHEMA_VERSION", SCHEMA_VERSION.to_string()),
        ("EXPORT_SCHEMA_VERSION_MAJOR", "3".to_string()),
        ("EXPORT_SCHEMA_VERSION_MINOR", "20".to_string()),
        ("EXPORT_SCHEMA_VERSION_MICRO", "2".to_string()),
        ("EXPORT_PLATFORM", "linux-desktop".to_string()),
        ("EXPORT_ARCH", "x64".to_string()),
        (
            "EXPORT_GENERATOR",
            format!(
                "nsys-lens synth {} (scenario {scenario})",
                env!("CARGO_PKG_VERSION")
            ),
        ),
    ];
    name_values(conn, "META_DATA_EXPORT", &rows)
}

fn write_capture_meta(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    let mut rows = vec![
        ("CAPTURE_EVENT_TYPE", "NvtxEvents".to_string()),
        ("CAPTURE_EVENT_TYPE", "Cuda".to_string()),
        ("DEVICE_TYPE", "Unix".to_string()),
        (
            "CUDA_GRAPH_TRACE_OPTIONS:MODE",
            tl.graph_trace_mode.to_string(),
        ),
    ];
    if let Some(trigger) = tl.start_trigger {
        rows.push(("START_TRIGGER", trigger.to_string()));
    }
    name_values(conn, "META_DATA_CAPTURE", &rows)
}

fn write_session(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?1, ?2, ?2)",
        params![tl.session_start_utc_ns, "2025-11-21T00:00:00"],
    )?;
    Ok(())
}

fn write_gpus(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(
        "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, l2CacheSize, totalMemory, \
         memoryBandwidth, clockRate, smCount, chipName, cuDevice, computeMajor, computeMinor, threadsPerWarp, \
         maxThreadsPerBlock) VALUES (?1, ?2, ?3, ?4, 1, 52428800, 85520809984, 3352320000000, 1980000000, 132, \
         'GH100', ?2, 9, 0, 32, 1024)",
    )?;
    let mut devices: Vec<u32> = tl.procs.iter().map(|p| p.device).collect();
    devices.sort_unstable();
    devices.dedup();
    for d in devices {
        let bus = format!("0000:{:02x}:00.0", 0x18 + d * 0x10);
        stmt.execute(params![1i64 << 48, d, GPU_NAME, bus])?;
    }
    Ok(())
}

fn write_processes(conn: &Connection, tl: &mut Timeline) -> rusqlite::Result<()> {
    let mut procs =
        conn.prepare("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)")?;
    let mut threads =
        conn.prepare("INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, 0, ?2)")?;
    for i in 0..tl.procs.len() {
        let p = tl.procs[i].clone();
        procs.execute(params![p.global_pid(), p.pid, p.name])?;
        let name = tl.names.id(p.name);
        threads.execute(params![name, p.global_tid(p.main_tid())])?;
    }
    Ok(())
}
