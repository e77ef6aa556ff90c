//! GPU metric samples (`nsys profile --gpu-metrics-devices`): the two tables nsys writes for
//! them, created only when a scenario samples (nsys creates tables lazily). The DDL is NVIDIA's
//! export schema for these tables as its documentation gives it; the schemas in
//! `../shared/reference/nsys-schema/` and the public exports do not hold them.

use rusqlite::{Connection, params};

use super::timeline::{Ns, Timeline};

pub const DDL: &str = "
CREATE TABLE TARGET_INFO_GPU_METRICS (
    typeId                      INTEGER   NOT NULL,                    -- REFERENCES ENUM_GPU_CTR_TYPE(id); the GPU id in the low byte
    sourceId                    INTEGER   NOT NULL,                    -- REFERENCES GPU_METRICS_SOURCE? (sampling source)
    typeName                    TEXT      NOT NULL,                    -- Name of the counter set (chip)
    metricId                    INTEGER   NOT NULL,                    -- Metric ID
    metricName                  TEXT      NOT NULL                     -- Metric name
);
CREATE TABLE GPU_METRICS (
    timestamp                   INTEGER,                               -- Event timestamp (ns).
    typeId                      INTEGER   NOT NULL,                    -- REFERENCES TARGET_INFO_GPU_METRICS(typeId)
    metricId                    INTEGER   NOT NULL,                    -- REFERENCES TARGET_INFO_GPU_METRICS(metricId)
    value                       INTEGER   NOT NULL                     -- Counter data value
);
";

/// One sample: when, on which device, which metric (by its id in [`Timeline::metric_names`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricSample {
    pub t: Ns,
    pub device: u32,
    pub metric: u32,
    pub value: i64,
}

/// The counter type of a device: nsys's `typeId` keeps the GPU id in its low byte.
fn type_id(device: u32) -> i64 {
    0x1_0000 | i64::from(device)
}

/// Writes the metric names (per device that sampled) and the samples, if any.
pub fn write(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    if tl.metric_samples.is_empty() {
        return Ok(());
    }
    conn.execute_batch(DDL)?;
    let mut devices: Vec<u32> = tl.metric_samples.iter().map(|s| s.device).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut names = conn.prepare(
        "INSERT INTO TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, metricName) VALUES (?1, 0, 'GH100', ?2, ?3)",
    )?;
    for d in devices {
        for &(id, name) in &tl.metric_names {
            names.execute(params![type_id(d), id, name])?;
        }
    }
    let mut rows = conn.prepare(
        "INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for s in &tl.metric_samples {
        rows.execute(params![s.t, type_id(s.device), s.metric, s.value])?;
    }
    Ok(())
}
