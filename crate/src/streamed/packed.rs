//! Kernels as bytes: each as differences from the previous one (row, start) and its duration,
//! as postcard varints (about 11 bytes for a kernel of a real export, against 48 for a
//! [`KernelEvent`]). Kernels waiting for the plan are held so, and kernel rows read by the
//! analysis worker for the loader cross between the workers so. Of a graph node only whether
//! there is one is kept: all the kernel pass's analyses ask.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::{KernelEvent, Ns};

/// A packed kernel; fields in [`KernelEvent`] terms.
#[derive(Serialize, Deserialize)]
struct Packed {
    row_step: i64,
    start_step: i64,
    duration: i64,
    /// The device times two, plus one if the kernel has a graph node.
    device_and_graph: u64,
    stream: u32,
    process: u32,
    /// The name id plus one, 0 for none (`NO_NAME` would take five bytes).
    name: u32,
}

/// Postcard's varints: 10 bytes per 64-bit field, 5 per 32-bit one.
pub const MAX_PACKED: usize = 4 * 10 + 3 * 5;

/// Packs kernels one after the other into a buffer that [`unpack`] reads from its start.
#[derive(Debug, Default, Clone, Copy)]
pub struct Packer {
    /// The last packed kernel's row and start.
    last: (i64, Ns),
}

impl Packer {
    pub fn pack(&mut self, ev: &KernelEvent, out: &mut Vec<u8>) {
        let (row, start) = self.last;
        let packed = Packed {
            row_step: ev.row.wrapping_sub(row),
            start_step: ev.start.wrapping_sub(start),
            duration: ev.end.wrapping_sub(ev.start),
            device_and_graph: u64::from(ev.device) << 1 | u64::from(ev.graph_node != 0),
            stream: ev.stream,
            process: ev.process,
            name: ev.short_name.wrapping_add(1),
        };
        let mut scratch = [0u8; MAX_PACKED];
        if let Ok(bytes) = postcard::to_slice(&packed, &mut scratch) {
            out.extend_from_slice(bytes);
        }
        self.last = (ev.row, ev.start);
    }
}

/// The kernels a [`Packer`] wrote into `bytes`; bytes that do not decode end with an error.
pub fn unpack(bytes: &[u8]) -> impl Iterator<Item = Result<KernelEvent>> + '_ {
    unpack_from(bytes)
}

/// [`unpack`] of a buffer it owns.
pub fn unpack_owned(bytes: Vec<u8>) -> impl Iterator<Item = Result<KernelEvent>> {
    unpack_from(bytes)
}

fn unpack_from<B: AsRef<[u8]>>(bytes: B) -> Unpacker<B> {
    Unpacker {
        bytes,
        at: 0,
        last: (0, 0),
    }
}

/// Reads the kernels a [`Packer`] wrote into a buffer, one at a time.
pub struct Unpacker<B: AsRef<[u8]>> {
    bytes: B,
    at: usize,
    last: (i64, Ns),
}

impl Unpacker<Vec<u8>> {
    /// A reader of a buffer it owns.
    pub fn new(bytes: Vec<u8>) -> Unpacker<Vec<u8>> {
        unpack_from(bytes)
    }
}

impl<B: AsRef<[u8]>> Iterator for Unpacker<B> {
    type Item = Result<KernelEvent>;

    fn next(&mut self) -> Option<Result<KernelEvent>> {
        let bytes = self.bytes.as_ref();
        let rest = bytes.get(self.at..).filter(|r| !r.is_empty())?;
        let packed = match postcard::take_from_bytes::<Packed>(rest) {
            Ok((packed, tail)) => {
                self.at = bytes.len() - tail.len();
                packed
            }
            Err(e) => {
                self.at = bytes.len();
                return Some(Err(Error::Internal {
                    detail: format!("packed kernels did not decode: {e}"),
                }));
            }
        };
        let row = self.last.0.wrapping_add(packed.row_step);
        let start = self.last.1.wrapping_add(packed.start_step);
        self.last = (row, start);
        Some(Ok(KernelEvent {
            row,
            start,
            end: start.wrapping_add(packed.duration),
            device: (packed.device_and_graph >> 1) as u32,
            stream: packed.stream,
            process: packed.process,
            short_name: packed.name.wrapping_sub(1),
            graph_node: packed.device_and_graph & 1,
            work: crate::model::Work::Kernel,
            bytes: 0,
        }))
    }
}
