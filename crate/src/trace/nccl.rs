//! NCCL's own word on its ranks: the extended NVTX payloads of its communicator ranges.
//!
//! NCCL (≥ 2.24, `src/include/nvtx_payload_schemas.h`) attaches to `ncclCommInitRank`,
//! `ncclCommInitRankConfig`, `ncclCommInitRankScalable`, `ncclCommDestroy` and `ncclCommAbort`
//! one payload schema, `NcclNvtxParamsCommInitRank`: the communicator hash (u64), the number
//! of ranks, the caller's rank and its CUDA device (ints), registered in the export's
//! `NVTX_PAYLOAD_SCHEMA_ENTRIES` under the names read here. The payloads themselves are in
//! `NVTX_EVENTS.binaryData` only when the report was exported with `--include-blobs=true`:
//! a 32-byte header (domain id, schema id, payload size, payload offset; little-endian u64)
//! then the payload. None of the public exports carries them (`mfu_2gpu_before` has the schemas
//! and an empty `binaryData`), so this reader is tested on payloads written by the tests.

use std::collections::BTreeMap;

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::schema::Schema;
use crate::model::NcclRank;

/// The fields of NCCL's communicator payload, by the names its schema entries carry.
const COMMUNICATOR: &str = "NCCL communicator ID";
const NRANKS: &str = "No. of ranks";
const RANK: &str = "Rank";
const DEVICE: &str = "CUDA device";

/// The header before each payload in `binaryData`.
const HEADER: usize = 32;

/// Where each field of one payload schema lies: byte offsets of communicator, nranks, rank,
/// device.
#[derive(Debug, Clone, Copy, Default)]
struct Layout {
    communicator: Option<usize>,
    nranks: Option<usize>,
    rank: Option<usize>,
    device: Option<usize>,
}

/// The ranks NCCL's payloads name, in table order, one per (process, communicator, rank);
/// empty when the export has no NCCL payload schema or no payload (a failed read as well: the
/// names are a nicety, the rank then named another way).
pub fn nccl_ranks(conn: &Connection, schema: &Schema) -> Vec<NcclRank> {
    let layouts = layouts(conn, schema);
    if layouts.is_empty()
        || !schema.has_column("NVTX_EVENTS", "binaryData")
        || !schema.has_column("NVTX_EVENTS", "globalTid")
    {
        return Vec::new();
    }
    let Ok(mut stmt) =
        conn.prepare("SELECT globalTid, binaryData FROM NVTX_EVENTS WHERE binaryData IS NOT NULL")
    else {
        return Vec::new();
    };
    let Ok(rows) = stmt.query_map([], |r| {
        let tid = match r.get_ref(0)? {
            ValueRef::Integer(i) => i,
            _ => 0,
        };
        Ok((tid, bytes_of(r.get_ref(1)?)))
    }) else {
        return Vec::new();
    };
    let mut out: Vec<NcclRank> = Vec::new();
    for (tid, blob) in rows.flatten() {
        let Some(rank) = decode(&blob, &layouts, tid) else {
            continue;
        };
        if !out.contains(&rank) {
            out.push(rank);
        }
    }
    out
}

/// The payload schemas that carry a rank and a number of ranks, by (domain, schema id).
fn layouts(conn: &Connection, schema: &Schema) -> BTreeMap<(i64, i64), Layout> {
    const T: &str = "NVTX_PAYLOAD_SCHEMA_ENTRIES";
    let mut out: BTreeMap<(i64, i64), Layout> = BTreeMap::new();
    if !["domainId", "schemaId", "name", "offset"]
        .iter()
        .all(|c| schema.has_column(T, c))
    {
        return out;
    }
    let Ok(mut stmt) = conn.prepare(&format!("SELECT domainId, schemaId, name, offset FROM {T}"))
    else {
        return out;
    };
    let int = |v: ValueRef<'_>| match v {
        ValueRef::Integer(i) => Some(i),
        _ => None,
    };
    let Ok(rows) = stmt.query_map([], |r| {
        Ok((
            int(r.get_ref(0)?),
            int(r.get_ref(1)?),
            super::schema::text_of(r.get_ref(2)?),
            int(r.get_ref(3)?),
        ))
    }) else {
        return out;
    };
    for (domain, id, name, offset) in rows.flatten() {
        let (Some(domain), Some(id)) = (domain, id) else {
            continue;
        };
        // The first entry's offset is NULL in the exports seen: it starts the payload.
        let offset = usize::try_from(offset.unwrap_or(0)).ok();
        let layout = out.entry((domain, id)).or_default();
        match name.as_str() {
            COMMUNICATOR => layout.communicator = offset,
            NRANKS => layout.nranks = offset,
            RANK => layout.rank = offset,
            DEVICE => layout.device = offset,
            _ => {}
        }
    }
    out.retain(|_, l| l.rank.is_some() && l.nranks.is_some());
    out
}

/// A `binaryData` value as bytes: a blob as is, text of hex digits decoded (some exports write
/// blobs as hex), other text as its bytes.
fn bytes_of(v: ValueRef<'_>) -> Vec<u8> {
    match v {
        ValueRef::Blob(b) => b.to_vec(),
        ValueRef::Text(t) => {
            let hex = t.len() % 2 == 0 && t.iter().all(u8::is_ascii_hexdigit);
            match hex {
                true => t
                    .chunks(2)
                    .filter_map(|p| {
                        let s = std::str::from_utf8(p).ok()?;
                        u8::from_str_radix(s, 16).ok()
                    })
                    .collect(),
                false => t.to_vec(),
            }
        }
        _ => Vec::new(),
    }
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// One `binaryData` value as a rank, when its header names a schema of `layouts` and its
/// payload holds the fields; `None` otherwise (another payload, or damage).
fn decode(blob: &[u8], layouts: &BTreeMap<(i64, i64), Layout>, tid: i64) -> Option<NcclRank> {
    let domain = i64::try_from(u64_at(blob, 0)?).ok()?;
    let id = i64::try_from(u64_at(blob, 8)?).ok()?;
    let size = usize::try_from(u64_at(blob, 16)?).ok()?;
    let offset = usize::try_from(u64_at(blob, 24)?).ok()?;
    if offset < HEADER {
        return None;
    }
    let payload = blob.get(offset..offset.checked_add(size)?)?;
    let layout = layouts.get(&(domain, id))?;
    let rank = u32_at(payload, layout.rank?)?;
    let nranks = u32_at(payload, layout.nranks?)?;
    // A negative int (an unset field) or a rank outside the communicator is not a rank.
    if rank >= nranks || nranks > i32::MAX as u32 {
        return None;
    }
    Some(NcclRank {
        pid: ((tid >> 24) & 0xFF_FFFF) as u32,
        communicator: layout
            .communicator
            .and_then(|at| u64_at(payload, at))
            .unwrap_or(0),
        nranks,
        rank,
        cuda_device: layout
            .device
            .and_then(|at| u32_at(payload, at))
            .unwrap_or(u32::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload in NCCL's layout behind the export's header.
    fn blob(domain: u64, schema: u64, comm: u64, nranks: i32, rank: i32, dev: i32) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [domain, schema, 24, HEADER as u64] {
            b.extend(v.to_le_bytes());
        }
        b.extend(comm.to_le_bytes());
        for v in [nranks, rank, dev] {
            b.extend(v.to_le_bytes());
        }
        b.extend([0u8; 4]);
        b
    }

    fn layouts() -> BTreeMap<(i64, i64), Layout> {
        BTreeMap::from([(
            (1, 16777218),
            Layout {
                communicator: Some(0),
                nranks: Some(8),
                rank: Some(12),
                device: Some(16),
            },
        )])
    }

    #[test]
    fn a_payload_in_nccls_schema_names_its_rank() {
        let tid = (4242_i64 << 24) | 7;
        let r = decode(&blob(1, 16777218, 0xabc, 8, 3, 1), &layouts(), tid);
        assert_eq!(
            r,
            Some(NcclRank {
                pid: 4242,
                communicator: 0xabc,
                nranks: 8,
                rank: 3,
                cuda_device: 1
            })
        );
    }

    #[test]
    fn other_or_damaged_payloads_name_nothing() {
        let l = layouts();
        assert_eq!(
            decode(&blob(1, 99, 1, 8, 3, 1), &l, 0),
            None,
            "another schema"
        );
        assert_eq!(
            decode(&blob(1, 16777218, 1, 8, 9, 1), &l, 0),
            None,
            "rank ≥ nranks"
        );
        assert_eq!(
            decode(&blob(1, 16777218, 1, 8, -1, 1), &l, 0),
            None,
            "unset rank"
        );
        let b = blob(1, 16777218, 1, 8, 3, 1);
        assert_eq!(decode(&b[..40], &l, 0), None, "truncated");
        assert_eq!(decode(&[], &l, 0), None);
        let mut far = b.clone();
        far[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(decode(&far, &l, 0), None, "offset past the end");
    }

    #[test]
    fn hex_text_reads_as_bytes() {
        let b = blob(1, 16777218, 5, 2, 1, 0);
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(bytes_of(ValueRef::Text(hex.as_bytes())), b);
        assert_eq!(bytes_of(ValueRef::Null), Vec::<u8>::new());
    }
}
