//! The replays' rows as bytes, for replays on another of the page's workers. wasm32 has no
//! threads, so where natively `fan_out` hands each batch to threads, the page's analysis worker
//! reads the rows once, replays its share of the changes and hands each batch, packed, to a
//! [`Feed`]: a helper worker that opened no file unpacks the same batches and replays the rest
//! ([`replay_fed`]). Each replay takes the same rows in the same order as in one worker, so it
//! gives what it gives there.

use super::{CycleIndex, Replay, Replayed, Start};
use crate::analyze::breakdown::CycleBounds;
use crate::error::{Error, Result};
use crate::model::Strings;
use crate::model::packed::{Base, Fields, Out, Packable, PackedWork};
use crate::model::rows::KernelRow;
use crate::whatif::Costs;

/// Where the analysis worker's batches go: each batch packed (one byte per row kind, then its
/// fields), then an empty one once the rows are read. An error ends the replays of both sides.
pub trait Feed {
    fn send(&mut self, batch: &[u8]) -> Result<()>;
}

const SYNC: u8 = 0;
const NVTX: u8 = 1;
const CALL: u8 = 2;
const WORK: u8 = 3;

/// What the next row of each kind is packed against: the last row of its kind in the batch.
#[derive(Default)]
struct Bases([Base; 4]);

impl Bases {
    fn put<T: Packable>(&mut self, kind: u8, row: &T, bytes: &mut Vec<u8>) -> Result<()> {
        let base = &mut self.0[usize::from(kind)];
        bytes.push(kind);
        put_fields(&row.pack(*base), bytes)?;
        *base = row.base();
        Ok(())
    }

    fn take<T: Packable>(&mut self, kind: u8, input: &mut &[u8]) -> Result<T> {
        let packed = T::Packed::take(input).ok_or_else(damaged)?;
        let base = &mut self.0[usize::from(kind)];
        let row = T::unpack(packed, *base);
        *base = row.base();
        Ok(row)
    }
}

fn put_fields(fields: &impl Fields, bytes: &mut Vec<u8>) -> Result<()> {
    let mut out = Out::default();
    fields.put(&mut out);
    let packed = out.bytes().ok_or_else(|| Error::Internal {
        detail: "a replayed row did not pack".into(),
    })?;
    bytes.extend_from_slice(packed);
    Ok(())
}

fn damaged() -> Error {
    Error::Internal {
        detail: "a batch of replayed rows does not unpack".into(),
    }
}

/// `batch` as bytes: each row's kind, then its fields against the last row of its kind (each
/// batch from [`Base::default`], so a batch unpacks alone), GPU work's kind and bytes after
/// its fields. An empty batch is no bytes.
pub(super) fn pack(batch: &[Start]) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(batch.len() * 16);
    let mut bases = Bases::default();
    for row in batch {
        match row {
            Start::Sync(r) => bases.put(SYNC, r, &mut bytes)?,
            Start::Nvtx(r) => bases.put(NVTX, r, &mut bytes)?,
            Start::Call(r) => bases.put(CALL, r, &mut bytes)?,
            Start::Work(r) => {
                bases.put(WORK, r, &mut bytes)?;
                put_fields(&PackedWork::of(r), &mut bytes)?;
            }
        }
    }
    Ok(bytes)
}

/// The batch [`pack`] packed.
pub(super) fn unpack(mut bytes: &[u8]) -> Result<Vec<Start>> {
    let mut batch = Vec::with_capacity(bytes.len() / 12);
    let mut bases = Bases::default();
    while let Some((&kind, rest)) = bytes.split_first() {
        bytes = rest;
        let input = &mut bytes;
        batch.push(match kind {
            SYNC => Start::Sync(bases.take(kind, input)?),
            NVTX => Start::Nvtx(bases.take(kind, input)?),
            CALL => Start::Call(bases.take(kind, input)?),
            WORK => {
                let mut row: KernelRow = bases.take(kind, input)?;
                PackedWork::take(input)
                    .and_then(|w| w.apply(&mut row))
                    .ok_or_else(damaged)?;
                Start::Work(row)
            }
            other => {
                return Err(Error::Internal {
                    detail: format!("a batch of replayed rows holds a row of kind {other}"),
                });
            }
        });
    }
    Ok(batch)
}

/// The replays under `costs` of the batches `next` gives (packed by [`pack`]; an empty one
/// ends them), named by `strings` (the analysis worker's names, [`Strings::from_values`]),
/// over the steady `cycles`: what [`super::replay_all`] gives over the rows themselves.
pub fn replay_fed(
    strings: &Strings,
    cycles: &[CycleBounds],
    costs: &[Costs],
    next: &mut dyn FnMut() -> Result<Vec<u8>>,
) -> Result<Vec<Replayed>> {
    let index = CycleIndex::new(cycles);
    let mut folds: Vec<Replay<'_>> = costs
        .iter()
        .map(|c| Replay::new(strings, c, &index))
        .collect();
    loop {
        let bytes = next()?;
        if bytes.is_empty() {
            break;
        }
        let batch = unpack(&bytes)?;
        for fold in &mut folds {
            fold.take_all(&batch);
        }
    }
    Ok(folds.into_iter().map(Replay::finish).collect())
}
