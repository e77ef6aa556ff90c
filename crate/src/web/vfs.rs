//! A read-only SQLite VFS over a JavaScript `Blob`/`File`, read lazily with `FileReaderSync`.
//!
//! Why: a multi-GB export must not be copied into wasm memory (a 32-bit address space, and the
//! browser's patience). SQLite asks for pages; this VFS serves them from 1 MiB slices of the
//! `File`, read synchronously (`FileReaderSync` exists only in dedicated Web Workers) and kept in
//! a small LRU that every open file shares, so wasm memory stays flat whatever the size and the
//! number of files.
//!
//! Files are registered under generated names ([`register`]) and opened with
//! `file:NAME?immutable=1` (read-only, URI): SQLite then takes no locks and opens no journal.
//! Temporary files SQLite creates itself (sorter spill, temp tables under
//! `PRAGMA temp_store=FILE`) come through the same VFS and are backed by memory.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::Uint8Array;
use serde::Serialize;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_rs::vfs::{
    AccessMode, DeviceCharacteristics, FileKind, LockLevel, MemChunksFile, OpenAccess, OpenOptions,
    OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsAppData, VfsError,
    VfsErrorCode, VfsFile, VfsResult, VfsStore, register_vfs,
};
use web_sys::{Blob, FileReaderSync};

/// The VFS name given to `Connection::open_with_flags_and_vfs`.
pub const VFS_NAME: &str = "nsys-lens-blob";
/// Bytes per cached block, and per `FileReaderSync` read at a random position: a point lookup
/// reads little.
pub const BLOCK_SIZE: u64 = 1 << 20;
/// Blocks per read once reads are sequential (a table scan): each read crosses to the browser's
/// file thread and back, so a 1 GB scan in 4 MiB reads spends about a quarter less time
/// reading than in 1 MiB ones, more when both workers read at once.
pub const READ_AHEAD_BLOCKS: u64 = 4;
/// Blocks kept for every open file together (16 MiB): SQLite's own page cache sits above this.
/// One cache, not one per file: eight rank files open at once kept 8 × 16 MiB, and the
/// instance reads one file at a time.
pub const CACHE_BLOCKS: usize = 16;
/// Chunk size of memory-backed temporary files.
const TEMP_CHUNK: usize = 64 * 1024;

/// How much of a registered file was read, for the page's diagnostics and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ReadStats {
    /// Size of the file.
    pub size: u64,
    /// `FileReaderSync` calls.
    pub reads: u64,
    /// Bytes copied out of the file.
    pub bytes: u64,
    /// Milliseconds spent in those calls.
    pub ms: f64,
}

/// A registered blob and its counters.
struct Entry {
    /// Names its blocks in the cache.
    id: u64,
    blob: Blob,
    size: u64,
    stats: Cell<ReadStats>,
}

thread_local! {
    /// What was read of every registered file in this instance (`size`: unused).
    static READ: Cell<ReadStats> = const { Cell::new(ReadStats { size: 0, reads: 0, bytes: 0, ms: 0.0 }) };
}

/// Bytes read from every registered file in this instance so far: the page's progress while
/// a file is scanned (the analysis and reader workers read it together).
pub fn bytes_read() -> u64 {
    READ.get().bytes
}

/// Reads, bytes and milliseconds in `FileReaderSync` of every registered file in this instance
/// so far (`size` 0): what the benchmarks print per worker.
pub fn reads_so_far() -> ReadStats {
    READ.get()
}

impl ReadStats {
    fn add(mut self, bytes: usize, ms: f64) -> ReadStats {
        self.reads += 1;
        self.bytes = self.bytes.saturating_add(bytes as u64);
        self.ms += ms;
        self
    }
}

impl Entry {
    fn record(&self, bytes: usize, ms: f64) {
        READ.set(READ.get().add(bytes, ms));
        self.stats.set(self.stats.get().add(bytes, ms));
    }
}

/// The VFS's state: registered blobs by name, the blocks read of them, and the last error
/// (SQLite asks for it).
#[derive(Default)]
pub struct AppData {
    files: RefCell<HashMap<String, Rc<Entry>>>,
    cache: RefCell<BlockCache>,
    error: RefCell<Option<VfsError>>,
}

/// The blocks read of every registered file, most recent last, at most [`CACHE_BLOCKS`]; a
/// block pushed out lends its buffer to the next one read (the allocator sees no churn).
#[derive(Default)]
struct BlockCache {
    /// (file, block index, bytes).
    blocks: Vec<(u64, u64, Vec<u8>)>,
    spare: Option<Vec<u8>>,
}

impl BlockCache {
    /// Moves block `idx` of `file` to the end if it is cached.
    fn touch(&mut self, file: u64, idx: u64) -> bool {
        let Some(pos) = self.blocks.iter().position(|b| (b.0, b.1) == (file, idx)) else {
            return false;
        };
        let hit = self.blocks.remove(pos);
        self.blocks.push(hit);
        true
    }

    /// The bytes of block `idx` of `file` if it is the most recent.
    fn last(&self, file: u64, idx: u64) -> Option<&[u8]> {
        self.blocks
            .last()
            .filter(|b| (b.0, b.1) == (file, idx))
            .map(|b| b.2.as_slice())
    }

    /// A buffer for a block about to be read: the one pushed out last, or a new one.
    fn buffer(&mut self) -> Vec<u8> {
        let mut buf = self.spare.take().unwrap_or_default();
        buf.clear();
        buf
    }

    /// Adds block `idx` of `file` as the most recent, pushing out the least recent if full.
    fn push(&mut self, file: u64, idx: u64, bytes: Vec<u8>) {
        if let Some(pos) = self.blocks.iter().position(|b| (b.0, b.1) == (file, idx)) {
            self.spare = Some(self.blocks.remove(pos).2);
        }
        if self.blocks.len() >= CACHE_BLOCKS {
            self.spare = Some(self.blocks.remove(0).2);
        }
        self.blocks.push((file, idx, bytes));
    }

    /// Drops the blocks of `file` (unregistered).
    fn forget(&mut self, file: u64) {
        self.blocks.retain(|b| b.0 != file);
    }
}

thread_local! {
    /// The VFS is registered once per wasm instance; its app data then lives as long as the instance.
    static APP: Cell<Option<&'static AppData>> = const { Cell::new(None) };
    static NEXT_ID: Cell<u64> = const { Cell::new(0) };
}

/// A file registered with the VFS; dropping it unregisters the file (open connections keep
/// reading through their own reference until they close).
#[derive(Debug)]
pub struct Registration {
    name: String,
}

impl Registration {
    /// The URI to open read-only (with `SQLITE_OPEN_URI`).
    pub fn uri(&self) -> String {
        format!("file:{}?immutable=1", self.name)
    }

    /// Blocks of this file in the cache every file shares.
    pub fn cached_blocks(&self) -> usize {
        let id = app()
            .ok()
            .and_then(|d| d.files.borrow().get(&self.name).map(|e| e.id));
        id.map_or(0, |id| cached(|b| b.0 == id))
    }

    /// Read counters so far.
    pub fn stats(&self) -> ReadStats {
        app()
            .ok()
            .and_then(|d| d.files.borrow().get(&self.name).map(|e| e.stats.get()))
            .unwrap_or_default()
    }
}

/// Blocks in the cache every registered file shares (at most [`CACHE_BLOCKS`]).
pub fn cached_blocks() -> usize {
    cached(|_| true)
}

fn cached(which: impl Fn(&(u64, u64, Vec<u8>)) -> bool) -> usize {
    app().map_or(0, |d| {
        d.cache.borrow().blocks.iter().filter(|b| which(b)).count()
    })
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(d) = app() {
            let entry = d.files.borrow_mut().remove(&self.name);
            if let Some(entry) = entry {
                d.cache.borrow_mut().forget(entry.id);
            }
        }
    }
}

/// Registers `blob` (a `File` is a `Blob`) under a fresh name, registering the VFS on first use.
pub fn register(blob: &Blob) -> Result<Registration, String> {
    let data = app()?;
    let id = NEXT_ID.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    // Generated names: the user's file name may hold URI-special characters (`?`, `#`, `%`).
    let name = format!("nsys-lens-{id}.sqlite");
    let size = blob_size(blob);
    let entry = Entry {
        id,
        blob: blob.clone(),
        size,
        stats: Cell::new(ReadStats {
            size,
            ..ReadStats::default()
        }),
    };
    data.files.borrow_mut().insert(name.clone(), Rc::new(entry));
    Ok(Registration { name })
}

/// `Blob.size` as bytes (a JS number: non-negative integer, but do not trust it blindly).
pub fn blob_size(blob: &Blob) -> u64 {
    let size = blob.size();
    if size.is_finite() && size > 0.0 {
        size as u64
    } else {
        0
    }
}

/// Reads `[start, end)` of a blob synchronously (dedicated workers only).
pub fn read_slice(
    reader: &FileReaderSync,
    blob: &Blob,
    start: u64,
    end: u64,
) -> Result<Vec<u8>, String> {
    read_array(reader, blob, start, end).map(|a| a.to_vec())
}

/// `[start, end)` of a blob as a JS array (still outside wasm memory).
fn read_array(
    reader: &FileReaderSync,
    blob: &Blob,
    start: u64,
    end: u64,
) -> Result<Uint8Array, String> {
    let slice = blob
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map_err(|e| format!("cannot slice the file: {}", js_text(&e)))?;
    let buffer = reader
        .read_as_array_buffer(&slice)
        .map_err(|e| format!("cannot read the file: {}", js_text(&e)))?;
    Ok(Uint8Array::new(&buffer))
}

/// A new `FileReaderSync`, or an error saying where the code must run.
pub fn reader() -> Result<FileReaderSync, String> {
    FileReaderSync::new().map_err(|_| {
        "FileReaderSync is not available: the trace must be opened in a dedicated Web Worker".into()
    })
}

/// A JS exception as text (an `Error`'s message, or the value's string form).
pub fn js_text(value: &wasm_bindgen::JsValue) -> String {
    if let Some(err) = wasm_bindgen::JsCast::dyn_ref::<js_sys::Error>(value) {
        return String::from(err.message());
    }
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

fn app() -> Result<&'static AppData, String> {
    if let Some(data) = APP.get() {
        return Ok(data);
    }
    // SAFETY: wasm32-unknown-unknown is single-threaded; the registration is never undone, so
    // the VFS and its app data live as long as the instance.
    let registered = unsafe { register_vfs::<Io, Vfs>(VFS_NAME, AppData::default(), false) }
        .map_err(|e| format!("cannot register the SQLite VFS: {e}"))?;
    let vfs = registered.into_raw();
    // SAFETY: `pAppData` of a VFS registered by `register_vfs` is a `VfsAppData<AppData>` that
    // is never freed (see above).
    let data: &'static AppData = unsafe { VfsAppData::<AppData>::get(vfs) };
    APP.set(Some(data));
    Ok(data)
}

fn read_only() -> VfsError {
    VfsError::new(
        VfsErrorCode::ReadOnly,
        "the trace is opened read-only".into(),
    )
}

fn io_read(msg: String) -> VfsError {
    VfsError::new(VfsErrorCode::IoRead, msg.into())
}

/// An open registered blob: its entry and a reader (its blocks are in the VFS's cache).
pub struct BlobFile {
    entry: Rc<Entry>,
    reader: FileReaderSync,
    /// The block after the last one read from the file: a miss there continues a scan.
    next_in_scan: Option<u64>,
}

impl BlobFile {
    /// Makes block `idx` the cache's most recent, reading it from the file on a miss.
    fn block(&mut self, cache: &RefCell<BlockCache>, idx: u64) -> VfsResult<()> {
        if cache.borrow_mut().touch(self.entry.id, idx) {
            return Ok(());
        }
        self.read_blocks(cache, idx)
    }

    /// Reads block `idx` from the file into the cache (most recent last), with the blocks after
    /// it when the reads follow each other.
    fn read_blocks(&mut self, cache: &RefCell<BlockCache>, idx: u64) -> VfsResult<()> {
        let count = if self.next_in_scan == Some(idx) {
            READ_AHEAD_BLOCKS
        } else {
            1
        };
        let start = idx.saturating_mul(BLOCK_SIZE);
        let end = start
            .saturating_add(count.saturating_mul(BLOCK_SIZE))
            .min(self.entry.size);
        let t0 = js_sys::Date::now();
        let array = read_array(&self.reader, &self.entry.blob, start, end).map_err(io_read)?;
        let len = array.length();
        self.entry.record(len as usize, js_sys::Date::now() - t0);
        let starts: Vec<u32> = (0..len).step_by(BLOCK_SIZE as usize).collect();
        self.next_in_scan = Some(idx + starts.len() as u64);
        // Each block copied once, straight from the JS array into its buffer; the requested
        // block goes last (most recent): the caller reads it from there.
        let mut cache = cache.borrow_mut();
        for (i, &at) in starts.iter().enumerate().rev() {
            let to = at.saturating_add(BLOCK_SIZE as u32).min(len);
            let part = array.subarray(at, to);
            let mut bytes = cache.buffer();
            bytes.resize(part.length() as usize, 0);
            part.copy_to(&mut bytes);
            cache.push(self.entry.id, idx + i as u64, bytes);
        }
        Ok(())
    }

    /// Copies `[offset, offset + buf.len())` into `buf`; returns the bytes copied (short at EOF,
    /// or if the file shrank since it was chosen).
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        let cache = &app().map_err(io_read)?.cache;
        let end = offset.saturating_add(buf.len() as u64).min(self.entry.size);
        let mut pos = offset;
        while pos < end {
            let idx = pos / BLOCK_SIZE;
            let in_block = (pos - idx * BLOCK_SIZE) as usize;
            let want = (end - pos) as usize;
            let dst_at = (pos - offset) as usize;
            self.block(cache, idx)?;
            let cache = cache.borrow();
            // None: the file is shorter than it said (it changed since it was chosen).
            let src = cache
                .last(self.entry.id, idx)
                .and_then(|block| block.get(in_block..))
                .unwrap_or_default();
            let n = want.min(src.len());
            if n == 0 {
                break;
            }
            if let (Some(dst), Some(src)) = (buf.get_mut(dst_at..dst_at + n), src.get(..n)) {
                dst.copy_from_slice(src);
            }
            pos += n as u64;
        }
        Ok((pos.saturating_sub(offset)) as usize)
    }
}

/// What SQLite opened: the registered trace, or one of its own temporary files.
pub enum File {
    Blob(BlobFile),
    Temp(MemChunksFile),
}

impl VfsFile for File {
    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match self {
            File::Blob(b) => b.read_at(buf, offset),
            File::Temp(m) => m.read(buf, offset),
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self {
            File::Blob(_) => Err(read_only()),
            File::Temp(m) => m.write(buf, offset),
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self {
            File::Blob(_) => Err(read_only()),
            File::Temp(m) => m.truncate(size),
        }
    }

    fn sync(&mut self, _: SyncOptions) -> VfsResult<()> {
        Ok(())
    }

    fn size(&self) -> VfsResult<u64> {
        match self {
            File::Blob(b) => Ok(b.entry.size),
            File::Temp(m) => m.size(),
        }
    }

    fn lock(&mut self, _: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn unlock(&mut self, _: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        Ok(false)
    }

    fn device_characteristics(&self) -> DeviceCharacteristics {
        match self {
            File::Blob(_) => DeviceCharacteristics::IMMUTABLE,
            File::Temp(_) => DeviceCharacteristics::NONE,
        }
    }
}

/// Whether SQLite wants a scratch file it owns (memory-backed here) rather than a database.
fn is_scratch(options: OpenOptions) -> bool {
    matches!(
        options.kind(),
        Some(
            FileKind::TempDb | FileKind::TransientDb | FileKind::TempJournal | FileKind::SubJournal
        )
    )
}

pub struct Store;

impl VfsStore for Store {
    type File = File;
    type AppData = AppData;

    fn record_error(data: &AppData, error: VfsError) {
        data.error.replace(Some(error));
    }

    fn last_error(data: &AppData) -> Option<VfsError> {
        data.error.borrow().clone()
    }

    fn open_file(data: &AppData, request: OpenRequest<'_>) -> VfsResult<OpenedFile<File>> {
        let name = request.filename.as_ref().map(|f| f.path().to_string());
        let Some(name) = name.filter(|_| !is_scratch(request.options)) else {
            return Ok(OpenedFile {
                file: File::Temp(MemChunksFile::new(TEMP_CHUNK)),
                access: OpenAccess::ReadWrite,
            });
        };
        let entry = data.files.borrow().get(&name).cloned().ok_or_else(|| {
            // Journals and WAL files of an immutable database are never needed.
            VfsError::new(
                VfsErrorCode::CantOpen,
                format!("{name}: not a registered file").into(),
            )
        })?;
        let reader = reader().map_err(|e| VfsError::new(VfsErrorCode::CantOpen, e.into()))?;
        Ok(OpenedFile {
            file: File::Blob(BlobFile {
                entry,
                reader,
                next_in_scan: None,
            }),
            access: OpenAccess::ReadOnly,
        })
    }

    fn close_file(_: &AppData, _: Option<&str>, _: File, _: OpenOptions) -> VfsResult<()> {
        Ok(())
    }

    fn access(data: &AppData, name: &str, _: AccessMode) -> VfsResult<bool> {
        Ok(data.files.borrow().contains_key(name))
    }

    fn full_pathname(_: &AppData, name: &str) -> VfsResult<String> {
        Ok(name.to_string())
    }

    fn delete_file(_: &AppData, _: &str, _: bool) -> VfsResult<()> {
        Err(read_only())
    }
}

pub struct Io;

impl SQLiteIoMethods for Io {
    type Store = Store;
}

pub struct Vfs;

impl SQLiteVfs<Io> for Vfs {
    type Os = WasmOsCallback;

    fn os(_: &AppData) -> &WasmOsCallback {
        &WasmOsCallback
    }
}
