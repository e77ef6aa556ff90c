//! The CUDA API calls read natively on a thread and a connection of their own while the host
//! side hands them on: when a thread reads the kernel table beside the host side, the host
//! side's thread is the longest (the ranges, then the calls and whatever folds or keeps them),
//! and SQLite's stepping and decoding of the calls is most of its work. Apart, that work shares
//! the cores with the kernels' reader rather than waiting behind the ranges' folds. The calls
//! are handed on in table order, as one thread would.

use std::path::Path;

use super::super::load::LoadOptions;
use super::super::schema::Schema;
use super::super::tables::Loader;
use crate::error::Result;
use crate::model::rows::CallRow;
use crate::model::{Strings, Trace};

/// Calls handed from the reading thread at a time, and the batches in flight.
#[cfg(not(target_arch = "wasm32"))]
const BATCH_ROWS: usize = 4096;
#[cfg(not(target_arch = "wasm32"))]
const BATCHES: usize = 16;

/// What [`Loader::read_runtime`] reads, on a thread of its own reading `apart` (the file `ctx`
/// has open) when it is given; `sink` gets the calls here, in table order.
pub(super) fn read(
    ctx: &mut Loader<'_, '_>,
    apart: Option<&Path>,
    (schema, strings, trace, opts): (&Schema, &Strings, &mut Trace, LoadOptions),
    sink: &mut dyn FnMut(CallRow),
) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(file) = apart {
        return read_apart(ctx.path, file, (schema, strings, trace, opts), sink);
    }
    let _ = apart;
    ctx.read_runtime(schema, strings, trace, opts, sink)
}

/// The reading thread reports no progress: only scans that report none read the calls apart
/// (`FileScan::of_file`, `FileScan::of_file_folding`).
#[cfg(not(target_arch = "wasm32"))]
fn read_apart(
    path: &str,
    file: &Path,
    (schema, strings, trace, opts): (&Schema, &Strings, &mut Trace, LoadOptions),
    sink: &mut dyn FnMut(CallRow),
) -> Result<()> {
    let (to_host, batches) = std::sync::mpsc::sync_channel::<Vec<CallRow>>(BATCHES);
    std::thread::scope(|threads| {
        let reader = threads.spawn(move || -> Result<()> {
            super::own_connection(file, path, |ctx| {
                let mut batch = Vec::with_capacity(BATCH_ROWS);
                // A send fails only when the host side's thread is gone (a panic): nothing to do.
                ctx.read_runtime(schema, strings, trace, opts, &mut |call| {
                    batch.push(call);
                    if batch.len() == BATCH_ROWS {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_ROWS));
                        let _ = to_host.send(full);
                    }
                })?;
                let _ = to_host.send(batch);
                Ok(())
            })
        });
        // The loop ends when the reader does, whatever ends it (its sender is dropped then).
        for batch in batches {
            batch.into_iter().for_each(&mut *sink);
        }
        reader.join().map_err(|_| crate::error::Error::Internal {
            detail: format!("the thread reading the CUDA API calls of {path} stopped"),
        })?
    })
}
