//! A kernel part ([`super::Part::Kernels`] of [`super::load_part`]) as bytes, to move it between two wasm instances.
//!
//! Why: the page loads the kernel table in a second Web Worker while the analysis worker loads
//! the rest; workers share no memory, so the kernels cross as one transferable buffer. The
//! layout is a length-prefixed JSON header (processes, coverage, column lengths) followed by the
//! raw columns. It is only ever read by the same build that wrote it (same endianness), and the
//! reader goes through a callback so the browser can copy each column straight from a JS buffer
//! into its final `Vec` without a second copy of the whole part in wasm memory.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{CoverageNote, Kernels, Trace};

const MAGIC: &[u8; 8] = b"NSLKERN1";

#[derive(Serialize, Deserialize)]
struct Header {
    present: bool,
    global_pids: Vec<i64>,
    process_names: Vec<String>,
    coverage: Vec<(String, String)>,
    /// Element counts of the columns, in [`columns`] order.
    lengths: Vec<usize>,
}

/// The kernel columns as byte slices, in a fixed order.
fn columns(k: &Kernels) -> [&[u8]; 10] {
    use bytemuck::cast_slice as b;
    [
        b(&k.start),
        b(&k.end),
        b(&k.device),
        b(&k.stream),
        b(&k.process),
        b(&k.correlation),
        b(&k.short_name),
        b(&k.demangled_name),
        b(&k.graph_node),
        b(&k.graph_id),
    ]
}

/// The encoded part: the header bytes and the column slices to append after it. The caller
/// writes `MAGIC`, the header length (u32 LE), the header, then every column, contiguously.
pub struct Encoded<'a> {
    pub header: Vec<u8>,
    pub columns: [&'a [u8]; 10],
}

impl Encoded<'_> {
    pub fn len(&self) -> usize {
        MAGIC.len() + 4 + self.header.len() + self.columns.iter().map(|c| c.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The prefix written before the columns: magic, header length, header.
    pub fn prefix(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 4 + self.header.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.header.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.header);
        out
    }

    /// Everything in one buffer (native tests; the browser copies piecewise instead).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = self.prefix();
        for c in self.columns {
            out.extend_from_slice(c);
        }
        out
    }
}

/// Describes `part` for transfer.
pub fn encode(part: &Trace) -> Encoded<'_> {
    let k = &part.kernels;
    let cols = columns(k);
    let lengths = [
        k.start.len(),
        k.end.len(),
        k.device.len(),
        k.stream.len(),
        k.process.len(),
        k.correlation.len(),
        k.short_name.len(),
        k.demangled_name.len(),
        k.graph_node.len(),
        k.graph_id.len(),
    ];
    let header = Header {
        present: part.present.kernels,
        global_pids: part.processes.global_pid.clone(),
        process_names: part.processes.name.clone(),
        coverage: part
            .coverage
            .iter()
            .map(|n| (n.subject.clone(), n.reason.clone()))
            .collect(),
        lengths: lengths.to_vec(),
    };
    Encoded {
        // Serializing plain vectors of numbers and strings cannot fail.
        header: serde_json::to_vec(&header).unwrap_or_default(),
        columns: cols,
    }
}

/// Reads a part written by [`encode`]. `read(offset, dst)` fills `dst` from the buffer at
/// `offset`; `total` is the buffer's length.
pub fn decode(total: usize, mut read: impl FnMut(usize, &mut [u8])) -> Result<Trace> {
    let bad = |why: &str| Error::Io {
        path: "kernel part".into(),
        detail: format!("the kernel table sent by the loading worker is unreadable ({why})"),
    };
    let mut fixed = [0u8; 12];
    if total < fixed.len() {
        return Err(bad("too short"));
    }
    read(0, &mut fixed);
    if &fixed[..8] != MAGIC {
        return Err(bad("wrong magic"));
    }
    let header_len = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]) as usize;
    let mut at = fixed.len();
    if at.checked_add(header_len).is_none_or(|end| end > total) {
        return Err(bad("truncated header"));
    }
    let mut header = vec![0u8; header_len];
    read(at, &mut header);
    at += header_len;
    let header: Header = serde_json::from_slice(&header).map_err(|e| bad(&e.to_string()))?;
    if header.lengths.len() != 10 || header.process_names.len() != header.global_pids.len() {
        return Err(bad("bad header"));
    }
    let mut columns = ColumnReader {
        lengths: &header.lengths,
        next: 0,
        at,
        total,
        read,
    };
    let k = Kernels {
        start: columns.next().map_err(bad)?,
        end: columns.next().map_err(bad)?,
        device: columns.next().map_err(bad)?,
        stream: columns.next().map_err(bad)?,
        process: columns.next().map_err(bad)?,
        correlation: columns.next().map_err(bad)?,
        short_name: columns.next().map_err(bad)?,
        demangled_name: columns.next().map_err(bad)?,
        graph_node: columns.next().map_err(bad)?,
        graph_id: columns.next().map_err(bad)?,
    };
    let mut part = Trace {
        kernels: k,
        ..Trace::default()
    };
    part.present.kernels = header.present;
    for (g, name) in header.global_pids.iter().zip(header.process_names) {
        let p = part.processes.intern(*g);
        part.processes.name[p as usize] = name;
    }
    part.coverage = header
        .coverage
        .into_iter()
        .map(|(subject, reason)| CoverageNote { subject, reason })
        .collect();
    Ok(part)
}

/// Reads the columns after the header, in order, straight into their typed vectors (one copy
/// from the source buffer, none through an intermediate byte vector).
struct ColumnReader<'h, F> {
    lengths: &'h [usize],
    next: usize,
    at: usize,
    total: usize,
    read: F,
}

impl<F: FnMut(usize, &mut [u8])> ColumnReader<'_, F> {
    fn next<T: bytemuck::Pod>(&mut self) -> std::result::Result<Vec<T>, &'static str> {
        let n = *self.lengths.get(self.next).ok_or("too few columns")?;
        self.next += 1;
        let bytes = n
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| self.at.checked_add(b).is_some_and(|end| end <= self.total))
            .ok_or("truncated columns")?;
        let mut column = vec![T::zeroed(); n];
        (self.read)(self.at, bytemuck::cast_slice_mut(&mut column));
        self.at += bytes;
        Ok(column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let mut t = Trace::default();
        let p = t.processes.intern(0x0100_0000_2a00_0000);
        t.processes.name[p as usize] = "python3".into();
        t.present.kernels = true;
        t.kernels.start = vec![10, 20, i64::MAX];
        t.kernels.end = vec![15, 31, i64::MAX];
        t.kernels.device = vec![0, 1, 7];
        t.kernels.stream = vec![7, 7, 13];
        t.kernels.process = vec![p; 3];
        t.kernels.correlation = vec![1, 2, u32::MAX];
        t.kernels.short_name = vec![3, 4, 5];
        t.kernels.demangled_name = vec![6, 7, 8];
        t.kernels.graph_node = vec![0, 99];
        t.note("CUPTI_ACTIVITY_KIND_KERNEL.streamId", "absent");
        t
    }

    #[test]
    fn round_trip_keeps_every_column_and_process() {
        let part = sample();
        let bytes = encode(&part).to_vec();
        let back = decode(bytes.len(), |at, dst| {
            dst.copy_from_slice(&bytes[at..at + dst.len()])
        })
        .unwrap();
        let (a, b) = (&part.kernels, &back.kernels);
        assert_eq!((&a.start, &a.end, &a.device), (&b.start, &b.end, &b.device));
        assert_eq!(
            (&a.stream, &a.process, &a.correlation),
            (&b.stream, &b.process, &b.correlation)
        );
        assert_eq!(
            (&a.short_name, &a.demangled_name),
            (&b.short_name, &b.demangled_name)
        );
        assert_eq!((&a.graph_node, &a.graph_id), (&b.graph_node, &b.graph_id));
        assert_eq!(back.processes.global_pid, part.processes.global_pid);
        assert_eq!(back.processes.name, vec!["python3".to_string()]);
        assert_eq!(back.coverage.len(), 1);
        assert!(back.present.kernels);
    }

    #[test]
    fn truncated_or_foreign_bytes_are_an_error_not_a_panic() {
        let bytes = encode(&sample()).to_vec();
        for cut in [0, 5, 12, 40, bytes.len() - 1] {
            let b = &bytes[..cut];
            let r = decode(b.len(), |at, dst| {
                dst.copy_from_slice(&b[at..at + dst.len()])
            });
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        let junk = [7u8; 64];
        let r = decode(junk.len(), |at, dst| {
            dst.copy_from_slice(&junk[at..at + dst.len()])
        });
        assert!(r.unwrap_err().to_string().contains("unreadable"));
    }
}
