// nsys-lens analysis worker (a module worker when served; a classic one in the offline file).
//
// Owns the wasm `Analysis` of the open trace. The main thread never sees the trace: it posts the
// `File` object (read lazily here through the core's read-only SQLite VFS) and gets back JSON
// strings (detect report, aggregated timeline view, gap histogram, hover hit).
//
// Offline single-file build: the next line is the ONLY reference to the wasm-bindgen glue. The
// inliner replaces this whole line with the glue's source text (which declares `__wbg_init`,
// `Analysis` and the functions below at its top level, so the names below keep working) and
// makes the result a classic script (no import or export left; see the top of app.js).
import __wbg_init, { Analysis, LaneReader, analyzeTraces, keepNoRows, drillTraces, ranksHover, ranksTimeline, ranksTraces, bytesRead, keptRowsRoom, openBatch, readsSoFar, reportFile, rowsHandedOut, scanKernels, readKernelSlice, readerWaitsForSweep, kernelPart, stepPath, whatifApart, whatifFed, whatifNameCount, whatifNames, whatifPlan, whatifTraces } from './pkg/nsys_lens.js';

let ready = null; // Promise of the wasm init
const analyses = new Map(); // slot ('main', 'baseline', 'target', 'rank0' …) -> open Analysis
let cancelFlag = null; // Int32Array over a SharedArrayBuffer when the page is cross-origin isolated
let cancelled = false; // set by a 'cancel' message (only seen when the core yields between steps)
// The kernel table of an open in progress, scanned by the page's reader worker: open id ->
// {part} once it came ({part: an Array of Uint8Array, sweep: its sweep of the GPU work or
// null}, or null: the reader failed), or {resolve} while the open waits for it.
const kernelParts = new Map();

// A reader worker's: the kernel sweep's inputs from the analysis worker (null: it sweeps none).
let sweepInputsCame;
const sweepInputs = new Promise((resolve) => {
  sweepInputsCame = resolve;
});

// Resolves after the messages already queued were heard (a MessageChannel's task: a timer's
// would wait 4 ms once nested).
const tasks = new MessageChannel();
function nextTask() {
  return new Promise((resolve) => {
    tasks.port1.onmessage = () => resolve();
    tasks.port2.postMessage(0);
  });
}

// The reader worker's part for open `id` (null: read the kernel table here).
function partOfOpen(id) {
  const came = kernelParts.get(id);
  if (came && 'part' in came) {
    kernelParts.delete(id);
    return Promise.resolve(came.part);
  }
  return new Promise((resolve) => kernelParts.set(id, { resolve }));
}

function kernelPartCame(id, part) {
  const waiting = kernelParts.get(id);
  if (waiting?.resolve) {
    kernelParts.delete(id);
    waiting.resolve(part);
  } else kernelParts.set(id, { part });
}
// The core beats every few ten thousand rows a view folds: the page's watchdog hears the
// worker is alive while a synchronous call runs (it can send, not receive, meanwhile).
self.nsysLensHeartbeat = (rows) => self.postMessage({ type: 'heartbeat', rows: Number(rows) });

// The compiled module this worker was sent (the page's), handed on to its lanes.
let engineModule = null;

function initWasm(wasm) {
  if (!ready) {
    if (wasm instanceof WebAssembly.Module) engineModule = wasm;
    ready = (wasm ? __wbg_init({ module_or_path: wasm }) : __wbg_init()).then((exports) => {
      // Read by the benchmark: wasm memory only grows, so its size after a run is the peak.
      self.nsysLensWasmMemoryBytes = () => exports.memory.buffer.byteLength;
      return exports;
    });
  }
  return ready;
}

// The kind of a failure: the core's errors carry a `code` (`cancelled`, `truncated`, `not-sqlite`
// …); anything else is `internal`.
function errorCode(e) {
  return typeof e?.code === 'string' ? e.code : 'internal';
}

// A failure of this worker's own (not the core's), with its code.
function coded(message, code) {
  return Object.assign(new Error(message), { code });
}

function errorMessage(e) {
  if (e instanceof Error) return e.message || String(e);
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

// Times cross the boundary as JS numbers (ns, exact below 2^53); if the binding wants i64, the
// call is retried with BigInts.
let nsAsBigInt = false;
function withNs(call) {
  const big = (x) => BigInt(Math.round(x));
  const num = (x) => Math.round(x);
  if (nsAsBigInt) return call(big);
  try {
    return call(num);
  } catch (e) {
    if (!/BigInt/i.test(errorMessage(e))) throw e;
    nsAsBigInt = true;
    return call(big);
  }
}

function freeQuietly(object) {
  try {
    object?.free();
  } catch {
    /* already freed or consumed */
  }
}

function freeAnalysis(slot) {
  endLanes(slot);
  const analysis = analyses.get(slot);
  analyses.delete(slot);
  try {
    analysis?.free();
  } catch {
    /* already freed */
  }
}

// Every open request names the slot its trace goes to; other requests read a slot.
function analysisIn(slot) {
  const analysis = analyses.get(slot || 'main');
  if (!analysis) throw new Error(`no trace is open${slot && slot !== 'main' ? ` as ${slot}` : ''}`);
  return analysis;
}

// A progress callback for the core that posts each step to the page; `carryOn()` says whether
// to continue (false cancels).
function progressTo(id, carryOn) {
  return (step, done, total, bytes = bytesRead()) => {
    self.postMessage({ id, type: 'progress', step: String(step), done: Number(done), total: Number(total), bytes: Number(bytes) });
    return carryOn();
  };
}

// The gap histogram of one open trace, or why it was not computed.
function gapsOf(analysis) {
  try {
    return { gaps: analysis.gaps(), gapsError: null };
  } catch (e) {
    return { gaps: null, gapsError: errorMessage(e) };
  }
}

// What this instance read from files since `before` (a `readsSoFar`; null: since it began):
// reads, bytes and the milliseconds spent in FileReaderSync, which the benchmarks print.
function readsSince(before) {
  const now = JSON.parse(readsSoFar());
  return before ? { reads: now.reads - before.reads, bytes: now.bytes - before.bytes, ms: now.ms - before.ms } : now;
}

// What the verdict view shows of one open trace.
function verdictView(analysis, options) {
  return { detect: analysis.detect(options), extent: analysis.timelineExtent(), ...gapsOf(analysis), fileName: analysis.fileName() };
}

// Opens `file` with its kernel table read by the reader worker meanwhile (`kernels` message),
// or here if the reader failed. A cancel while waiting ends the wait.
// The verdict under `options` is folded beside: the host side hands the kernel sweep's inputs
// (or null) to the page as soon as its ranges are read, which relays them to the reader.
async function openBeside(id, file, options, onProgress) {
  const onSweep = (inputs) => self.postMessage({ id, type: 'sweep', inputs }, inputs ? [inputs.buffer] : []);
  const host = Analysis.openHost(file, options, onProgress, onSweep);
  // This worker's memory once its host side is read: the most it held while the reader ran.
  self.postMessage({ id, type: 'host-read', wasmBytes: self.nsysLensWasmMemoryBytes() });
  if (cancelled) {
    freeQuietly(host);
    throw coded('the analysis was cancelled', 'cancelled');
  }
  // Its launch calls are swept while the reader still reads (a pass after the join else).
  host.sweepLaunches();
  onProgress('loading kernels', 0, 0);
  const came = await partOfOpen(id);
  if (cancelled) {
    freeQuietly(host);
    throw coded('the analysis was cancelled', 'cancelled');
  }
  return host.join(came?.part ?? undefined, came?.sweep ?? undefined, onProgress);
}

// Lane workers (cross-origin isolated pages only): once a trace is open whose kernels or calls
// the scan did not keep, this worker starts lane workers on the same File; every pass then asks
// them for `rowid` ranges of those tables, which they decode while the pass folds (the core's
// `trace::Lane`, `web::lanes`). A pass is one synchronous call into wasm and hears no message,
// so a lane writes each answer into a SharedArrayBuffer the pass waits on with `Atomics.wait`.
// Each lane's buffer: a header of Int32s (answers written, answers taken, the lane's wasm
// memory in MiB, then each slot's length and status) and LANE_SLOTS slots, each room for a range's packed rows (8192 rows of
// at most 128 bytes).
const LANE_SLOTS = 6;
const LANE_SLOT_BYTES = 8192 * 128;
const [WRITTEN, TAKEN, MEMORY, SLOTS_AT] = [0, 1, 2, 3];
const LANE_HEADER_INTS = SLOTS_AT + 2 * LANE_SLOTS;
const LANE_HEADER_BYTES = 64;
// Lanes start for this many rows a pass would ask them (16 ranges) and at most this many
// lanes, one per core the analysis worker leaves.
const LANE_MIN_ROWS = 16 * 8192;
const LANES_MOST = 3;
// A lane that writes nothing for this long is taken for dead (a range takes milliseconds).
const LANE_STALL_MS = 20_000;
const laneSets = new Map(); // slot -> LaneSet
// Read by the tests and benchmarks: each open trace's lanes, what they were asked and answered.
self.nsysLensLanes = () =>
  [...laneSets.values()].map((s) => ({ lanes: s.lanes.length, ready: Boolean(s.numberedAs), asked: s.asked, taken: s.taken, failed: s.failed, memoryMiB: s.lanes.map((l) => Atomics.load(l.header, MEMORY)) }));

class LaneSet {
  constructor(count, file) {
    this.lanes = [];
    this.asked = 0;
    this.taken = 0;
    this.failed = null;
    this.numberedAs = null;
    const readies = [];
    for (let i = 0; i < count; i++) {
      const sab = new SharedArrayBuffer(LANE_HEADER_BYTES + LANE_SLOTS * LANE_SLOT_BYTES);
      const worker = new Worker(self.location.href, { type: 'module', name: `nsys-lens lane ${i}` });
      const lane = { worker, header: new Int32Array(sab, 0, LANE_HEADER_INTS), bytes: new Uint8Array(sab), taken: 0 };
      readies.push(
        new Promise((resolve, reject) => {
          worker.onmessage = (ev) => {
            const m = ev.data || {};
            if (m.type === 'lane-ready') resolve(m.numbered);
            else if (m.type === 'lane-failed') reject(new Error(m.error));
          };
          worker.onerror = (e) => {
            this.failed = this.failed || `a lane worker stopped: ${e.message || 'no reason given'}`;
            reject(new Error(this.failed));
          };
        }),
      );
      worker.postMessage({ type: 'lane', file, sab, wasm: engineModule });
      this.lanes.push(lane);
    }
    this.started = Promise.all(readies).then((all) => {
      const same = all.every((n) => n.length === 2 && n[0] === all[0][0] && n[1] === all[0][1]);
      if (!same) throw new Error('the lanes numbered the threads otherwise');
      this.numberedAs = all[0];
      return all[0];
    });
  }

  // Called by the core (`web::lanes::JsLanes`) during a pass.
  depth() {
    return LANE_SLOTS * this.lanes.length;
  }

  numbered() {
    return this.failed || !this.numberedAs ? null : new Uint32Array(this.numberedAs);
  }

  ask(kind, sql, low, high) {
    if (this.failed) throw new Error(this.failed);
    const lane = this.lanes[this.asked % this.lanes.length];
    lane.worker.postMessage({ type: 'ask', kind, sql, low, high });
    this.asked += 1;
  }

  // Whether the oldest answer is written (a failure is: `take` throws it at once).
  ready() {
    if (this.failed) return true;
    const lane = this.lanes[this.taken % this.lanes.length];
    return Atomics.load(lane.header, WRITTEN) > lane.taken;
  }

  take() {
    if (this.failed) throw new Error(this.failed);
    const lane = this.lanes[this.taken % this.lanes.length];
    const n = lane.taken;
    let waited = 0;
    while (Atomics.load(lane.header, WRITTEN) === n) {
      if (Atomics.wait(lane.header, WRITTEN, n, 1000) !== 'timed-out') continue;
      waited += 1000;
      self.postMessage({ type: 'heartbeat', rows: 0 });
      if (waited >= LANE_STALL_MS) {
        this.failed = `a lane worker answered nothing for ${LANE_STALL_MS / 1000} s`;
        throw new Error(this.failed);
      }
    }
    const slot = n % LANE_SLOTS;
    const len = lane.header[SLOTS_AT + 2 * slot];
    const status = lane.header[SLOTS_AT + 1 + 2 * slot];
    const start = LANE_HEADER_BYTES + slot * LANE_SLOT_BYTES;
    const bytes = lane.bytes.slice(start, start + len);
    lane.taken = n + 1;
    this.taken += 1;
    Atomics.store(lane.header, TAKEN, n + 1);
    Atomics.notify(lane.header, TAKEN);
    if (status !== 0) {
      this.failed = new TextDecoder().decode(bytes);
      throw new Error(this.failed);
    }
    return bytes;
  }

  end() {
    this.failed = this.failed || 'the lanes ended';
    for (const lane of this.lanes) lane.worker.terminate();
  }
}

// Starts lanes for the one trace open, when the page may share memory and the passes would
// ask them enough rows; the passes ask them once every lane has read its catalog.
function startLanes(slot, analysis, file) {
  // A worker may start workers of its own where the browser has `Worker` in workers.
  if (!self.crossOriginIsolated || typeof SharedArrayBuffer !== 'function' || typeof Worker !== 'function') return;
  const spare = (navigator.hardwareConcurrency || 1) - 1;
  if (spare < 1 || analyses.size !== 1 || analysis.rowsForLanes() < LANE_MIN_ROWS) return;
  const set = new LaneSet(Math.min(LANES_MOST, spare), file);
  laneSets.set(slot, set);
  set.started.then(
    () => {
      if (laneSets.get(slot) === set && analyses.get(slot) === analysis) {
        analysis.setLanes(set);
        self.postMessage({ type: 'lanes', lanes: set.lanes.length });
      }
    },
    () => endLanes(slot),
  );
}

function endLanes(slot) {
  laneSets.get(slot)?.end();
  laneSets.delete(slot);
}

// The what-if card's rows handed to a helper worker that opened no file (cross-origin isolated
// pages only; `whatif::Feed` in the core): the analysis worker's replay writes each batch of
// rows, packed, into a SharedArrayBuffer the page made (`engine.js`'s `whatifFed`), and the
// helper's replay takes them, each side a synchronous call into wasm waiting with
// `Atomics.wait`. The buffer: a header of Int32s (batches written, batches taken, who stopped,
// the slots, each slot's room, then each slot's length) and the slots.
const [FED_WRITTEN, FED_TAKEN, FED_STOPPED, FED_SLOTS, FED_ROOM, FED_LENGTHS] = [0, 1, 2, 3, 4, 5];
const FED_HEADER_BYTES = 64;
// Four slots, each room for a batch of 4096 rows at up to 256 bytes (packed, they take 12 to 20).
const FED_SLOT_COUNT = 4;
const FED_SLOT_BYTES = 4096 * 256;
const [HELPER_STOPPED, WRITER_STOPPED] = [1, 2];
// Names a piece of the analysis worker's names holds (`whatifNames`).
const NAMES_PIECE = 16_384;
// A side that waits this long for the other takes it for dead (a batch takes milliseconds).
const FED_STALL_MS = 20_000;

// A new buffer, its header written (the helper makes it: `feedBuffer`).
function newFeedBuffer() {
  const sab = new SharedArrayBuffer(FED_HEADER_BYTES + FED_SLOT_COUNT * FED_SLOT_BYTES);
  const header = new Int32Array(sab, 0, FED_HEADER_BYTES / 4);
  header[FED_SLOTS] = FED_SLOT_COUNT;
  header[FED_ROOM] = FED_SLOT_BYTES;
  return sab;
}

function fedBuffer(sab) {
  const header = new Int32Array(sab, 0, FED_HEADER_BYTES / 4);
  return { header, bytes: new Uint8Array(sab, FED_HEADER_BYTES), slots: header[FED_SLOTS], room: header[FED_ROOM], done: 0 };
}

// Waits while `header[at]` holds `value` (what the other side moves on), posting heartbeats;
// throws when the other side stopped or did nothing for FED_STALL_MS.
function fedWait(feed, at, value, stoppedBy, who) {
  for (let waited = 0; Atomics.load(feed.header, at) === value; ) {
    if (Atomics.load(feed.header, FED_STOPPED) === stoppedBy) throw new Error(`the ${who} stopped`);
    if (Atomics.wait(feed.header, at, value, 1000) !== 'timed-out') continue;
    waited += 1000;
    self.postMessage({ type: 'heartbeat', rows: 0 });
    if (waited >= FED_STALL_MS) throw new Error(`the ${who} did nothing for ${FED_STALL_MS / 1000} s`);
  }
}

// The analysis worker's end (`web::whatif::JsFeed`).
function feedOut(sab) {
  const feed = fedBuffer(sab);
  return {
    send(batch) {
      if (batch.length > feed.room) throw new Error(`a batch of rows took ${batch.length} bytes, more than a slot`);
      for (let taken = Atomics.load(feed.header, FED_TAKEN); feed.done - taken >= feed.slots; taken = Atomics.load(feed.header, FED_TAKEN)) {
        fedWait(feed, FED_TAKEN, taken, HELPER_STOPPED, 'what-if helper worker');
      }
      if (Atomics.load(feed.header, FED_STOPPED) === HELPER_STOPPED) throw new Error('the what-if helper worker stopped');
      const slot = feed.done % feed.slots;
      feed.bytes.set(batch, slot * feed.room);
      Atomics.store(feed.header, FED_LENGTHS + slot, batch.length);
      feed.done += 1;
      Atomics.store(feed.header, FED_WRITTEN, feed.done);
      Atomics.notify(feed.header, FED_WRITTEN);
    },
    stop: () => fedStop(feed, WRITER_STOPPED),
  };
}

// The helper's end (`web::whatif::JsFeedIn`).
function feedIn(sab) {
  const feed = fedBuffer(sab);
  return {
    take() {
      fedWait(feed, FED_WRITTEN, feed.done, WRITER_STOPPED, 'analysis worker');
      const slot = feed.done % feed.slots;
      const start = slot * feed.room;
      const batch = feed.bytes.slice(start, start + Atomics.load(feed.header, FED_LENGTHS + slot));
      feed.done += 1;
      Atomics.store(feed.header, FED_TAKEN, feed.done);
      Atomics.notify(feed.header, FED_TAKEN);
      if (feed.done % 16 === 0) self.postMessage({ type: 'heartbeat', rows: 0 });
      return batch;
    },
    stop: () => fedStop(feed, HELPER_STOPPED),
  };
}

function fedStop(feed, who) {
  Atomics.compareExchange(feed.header, FED_STOPPED, 0, who);
  Atomics.notify(feed.header, FED_WRITTEN);
  Atomics.notify(feed.header, FED_TAKEN);
}

// A lane worker's side: its reader of the file and its buffer.
let laneServer = null;

function laneMessage(msg) {
  if (msg.type === 'lane') {
    initWasm(msg.wasm)
      .then(() => {
        const reader = LaneReader.open(msg.file);
        laneServer = { reader, header: new Int32Array(msg.sab, 0, LANE_HEADER_INTS), bytes: new Uint8Array(msg.sab), written: 0 };
        self.postMessage({ type: 'lane-ready', numbered: Array.from(reader.numbered()) });
      })
      .catch((e) => self.postMessage({ type: 'lane-failed', error: errorMessage(e) }));
    return;
  }
  // 'ask': the range's packed rows (or the failure's text) into the next slot, once the
  // analysis worker took what that slot held.
  const lane = laneServer;
  let bytes;
  let status = 0;
  try {
    bytes = lane.reader.answer(msg.kind, msg.sql, msg.low, msg.high);
    if (bytes.length > LANE_SLOT_BYTES) throw new Error(`a range's rows took ${bytes.length} bytes, more than a lane's slot`);
  } catch (e) {
    bytes = new TextEncoder().encode(errorMessage(e)).slice(0, LANE_SLOT_BYTES);
    status = 1;
  }
  const n = lane.written;
  for (let taken = Atomics.load(lane.header, TAKEN); n - taken >= LANE_SLOTS; taken = Atomics.load(lane.header, TAKEN)) {
    Atomics.wait(lane.header, TAKEN, taken, 1000);
  }
  const slot = n % LANE_SLOTS;
  lane.bytes.set(bytes, LANE_HEADER_BYTES + slot * LANE_SLOT_BYTES);
  lane.header[SLOTS_AT + 2 * slot] = bytes.length;
  lane.header[SLOTS_AT + 1 + 2 * slot] = status;
  Atomics.store(lane.header, MEMORY, Math.ceil(self.nsysLensWasmMemoryBytes() / 2 ** 20));
  lane.written = n + 1;
  Atomics.store(lane.header, WRITTEN, n + 1);
  Atomics.notify(lane.header, WRITTEN);
}

async function handle(msg) {
  const { id, type } = msg;
  switch (type) {
    case 'init': {
      await initWasm(msg.wasm);
      return {};
    }
    case 'open': {
      await initWasm();
      const slot = msg.slot || 'main';
      keepNoRows(msg.keepNoRows === true);
      if (msg.only) for (const other of [...analyses.keys()]) freeAnalysis(other);
      freeAnalysis(slot);
      // The first of the files of one drop: its kept rows leave the others room.
      if (analyses.size === 0) openBatch(msg.batch || 1);
      cancelled = false;
      kernelParts.clear(); // parts of opens that ended before theirs came
      cancelFlag = msg.cancelFlag ? new Int32Array(msg.cancelFlag) : null;
      const onProgress = progressTo(id, () => {
        if (cancelFlag && Atomics.load(cancelFlag, 0) !== 0) cancelled = true;
        return !cancelled;
      });
      // The bytes read before this file: the page counts the scan's from here.
      self.postMessage({ id, type: 'progress', step: 'opening', done: 0, total: 0, bytes: bytesRead() });
      const readBefore = JSON.parse(readsSoFar());
      // The file is scanned once; every view then folds over its rows read again in start
      // order, as the CLI reads them (memory does not grow with the file). With a reader
      // worker, this one reads the host side while that one reads the kernel table.
      const opened = msg.reader ? await openBeside(id, msg.file, msg.options, onProgress) : Analysis.open(msg.file, onProgress);
      if (cancelled) {
        try {
          opened.free();
        } catch {
          /* ignore */
        }
        throw coded('the analysis was cancelled', 'cancelled');
      }
      const analysis = opened;
      analyses.set(slot, analysis);
      // Lanes serve one trace open at a time: rank files opened together read themselves.
      for (const other of [...laneSets.keys()]) if (other !== slot) endLanes(other);
      // The verdict's rows, counted by the heartbeat from here.
      self.postMessage({ id, type: 'progress', step: 'computing the verdict', done: 0, total: analysis.verdictRows(msg.options), passes: Array.from(analysis.verdictPasses(msg.options)), base: rowsHandedOut() });
      // The verdict first: the page shows it while the overview is computed (a what-if
      // helper's open asks for none).
      const detect = msg.verdict === false ? null : analysis.detect(msg.options);
      // The lanes read their catalogs once the verdict is computed, not during its passes (none
      // for a what-if helper's open: the cores are the analysis worker's lanes').
      if (msg.verdict !== false) startLanes(slot, analysis, msg.file);
      return { detect, fileName: analysis.fileName(), wasmBytes: self.nsysLensWasmMemoryBytes(), reads: readsSince(readBefore) };
    }
    case 'kernels':
      // The reader worker's part for the open `openId`, relayed by the page.
      kernelPartCame(msg.openId, msg.part ? { part: msg.part, sweep: msg.sweep ?? null } : null);
      return {};
    case 'sweep':
      // The kernel sweep's inputs for this reader's scan, relayed from the analysis worker.
      sweepInputsCame(msg.inputs ?? null);
      return {};
    case 'keptRowsRoom': {
      // What a trace opened into `slot` could keep of its rows (`only`: it closes the others).
      await initWasm();
      keepNoRows(msg.keepNoRows === true);
      const alone = msg.only || [...analyses.keys()].every((s) => s === (msg.slot || 'main'));
      if (alone) openBatch(msg.batch || 1);
      return { room: keptRowsRoom(msg.bytes, alone) };
    }
    case 'scanKernels': {
      // This worker is a reader: the kernel table of `file`, for the analysis worker.
      await initWasm(); // after the engine's 'init'
      const progress = progressTo(id, () => true);
      // The catalog and the GPU work besides the kernels first; then the kernel table in
      // slices, hearing the messages between two: once the analysis worker's ranges are read,
      // its kernel sweep's inputs come, and the GPU work is swept (the kernels kept so far, then
      // each slice as it is read). Inputs that come after the last slice sweep the kernels
      // kept (the page ends this worker if none ever come).
      scanKernels(msg.file, msg.room ?? undefined, progress);
      let early;
      sweepInputs.then((inputs) => {
        early = inputs;
      });
      // Past what this worker keeps, kernels read before the inputs came could not be swept:
      // it waits for them (`null` when the analysis worker will not sweep) before reading on.
      // The page's time left counts a waiting reader as one that will read on.
      const inputsCame = () => {
        self.postMessage({ id, type: 'progress', step: "waiting for the verdict's inputs", done: 0, total: 0, bytes: bytesRead(), waits: true });
        const beat = setInterval(() => self.postMessage({ type: 'heartbeat', rows: 0 }), 1000);
        return sweepInputs.finally(() => {
          clearInterval(beat);
          progress('loading kernels', 0, 0);
        });
      };
      for (let done = false; !done; ) {
        await nextTask();
        if (early === undefined && readerWaitsForSweep()) early = await inputsCame();
        done = readKernelSlice(early ?? undefined, progress);
      }
      let late;
      if (early === undefined) late = await inputsCame();
      const [swept, ...part] = kernelPart(late ?? undefined);
      const sweep = swept.length > 0 ? swept : null;
      return { part, sweep, early: early !== undefined, wasmBytes: self.nsysLensWasmMemoryBytes(), reads: readsSince(null) };
    }
    case 'openHostSide': {
      // A file without GPU work (its verdict refused with `no-kernels`): its report's sections
      // go to the page.
      await initWasm();
      const slot = msg.slot || 'main';
      for (const other of [...analyses.keys()]) freeAnalysis(other);
      cancelled = false;
      const analysis = Analysis.open(msg.file, progressTo(id, () => !cancelled));
      analyses.set(slot, analysis);
      const outline = new TextDecoder().decode(reportFile(analysis.id, 'outline', msg.top || 10));
      return { fileName: analysis.fileName(), outline };
    }
    case 'detect':
      return { detect: analysisIn(msg.slot).detect(msg.options) };
    case 'extent':
      // The timeline's extent (its summary built on the way).
      return { extent: analysisIn(msg.slot).timelineExtent() };
    case 'gaps':
      return gapsOf(analysisIn(msg.slot));
    case 'view':
      // Switching the verdict view between open files (baseline and target, rank files).
      return verdictView(analysisIn(msg.slot), msg.options);
    case 'timeline': {
      const analysis = analysisIn(msg.slot);
      return { view: withNs((ns) => analysis.timeline(ns(msg.start), ns(msg.end), msg.columns, msg.folded || [])) };
    }
    case 'hover': {
      const analysis = analyses.get(msg.slot || 'main');
      if (!analysis) return { hit: 'null' };
      return { hit: withNs((ns) => analysis.hover(msg.lane, ns(msg.t), ns(msg.slack), msg.folded || [], msg.row ?? undefined)) };
    }
    case 'analyze': {
      const baseline = analysisIn(msg.baseline).id;
      const target = msg.target ? analysisIn(msg.target).id : undefined;
      return { report: analyzeTraces(baseline, target, msg.options || '{}') };
    }
    case 'whatif': {
      const target = analysisIn(msg.slot).id;
      const baseline = msg.baseline ? analysisIn(msg.baseline).id : undefined;
      // `feed`: each batch of rows replayed also goes to a helper that opened no file.
      const feed = msg.feed ? feedOut(msg.feed) : undefined;
      try {
        return { view: whatifTraces(target, baseline, msg.options || '{}', msg.elsewhere ?? undefined, feed) };
      } catch (e) {
        feed?.stop();
        throw e;
      }
    }
    case 'whatifPlan': {
      // The steady cycles and the changes a helper worker replays (null: none to share), and
      // with `names` the names a helper that opens no file replays with.
      const id = analysisIn(msg.slot).id;
      const plan = whatifPlan(id, msg.options || '{}') ?? null;
      const names = [];
      if (plan && msg.names) {
        // In pieces, each copied out of wasm memory before the next is made.
        for (let from = 0, count = whatifNameCount(id); from < count; from += NAMES_PIECE) names.push(whatifNames(id, from, NAMES_PIECE));
      }
      // The memory the page weighs a helper against: this worker's and its lanes'.
      const lanes = [...laneSets.values()].flatMap((set) => set.lanes.map((l) => Atomics.load(l.header, MEMORY) * 2 ** 20));
      return { plan, names, wasmBytes: lanes.reduce((a, b) => a + b, self.nsysLensWasmMemoryBytes()) };
    }
    case 'feedBuffer':
      // The buffer this helper takes the analysis worker's rows from (`whatifFed`).
      return { feed: newFeedBuffer() };
    case 'whatifFed': {
      // This worker is a helper that opened no file: the plan's changes replayed over the rows
      // the analysis worker's replay hands it through `msg.feed`.
      await initWasm();
      const feed = feedIn(msg.feed);
      try {
        return { elsewhere: whatifFed(msg.names, msg.plan, feed), wasmBytes: self.nsysLensWasmMemoryBytes() };
      } catch (e) {
        feed.stop();
        throw e;
      }
    }
    case 'whatifApart':
      // This worker is a helper: the plan's changes replayed over its own open of the file.
      return { elsewhere: whatifApart(analysisIn(msg.slot).id, msg.plan), wasmBytes: self.nsysLensWasmMemoryBytes() };
    case 'stepPath':
      return { path: stepPath(analysisIn(msg.slot).id, msg.step, msg.options || '{}') };
    case 'drill': {
      const ids = new Uint32Array((msg.slots || ['main']).map((s) => analysisIn(s).id));
      return { report: drillTraces(ids, msg.options || '{}') };
    }
    case 'ranks': {
      const ids = new Uint32Array((msg.slots || ['main']).map((s) => analysisIn(s).id));
      return { view: ranksTraces(ids) };
    }
    case 'ranksTimeline': {
      // The ranks timeline of the last 'ranks' over the same slots.
      const ids = new Uint32Array((msg.slots || ['main']).map((s) => analysisIn(s).id));
      return { view: withNs((ns) => ranksTimeline(ids, ns(msg.start), ns(msg.end), msg.columns, msg.open || [])) };
    }
    case 'ranksHover': {
      const ids = new Uint32Array((msg.slots || ['main']).map((s) => analysisIn(s).id));
      return { hit: withNs((ns) => ranksHover(ids, msg.lane, ns(msg.t), ns(msg.slack), msg.open || [])) };
    }
    case 'report': {
      const bytes = reportFile(analysisIn(msg.slot).id, msg.format, msg.top || 10);
      return { bytes };
    }
    case 'close':
      for (const slot of msg.slot ? [msg.slot] : [...analyses.keys()]) freeAnalysis(slot);
      return {};
    default:
      throw new Error(`unknown request ${type}`);
  }
}

self.onmessage = async (ev) => {
  const msg = ev.data || {};
  if (msg.type === 'lane' || msg.type === 'ask') {
    laneMessage(msg);
    return;
  }
  if (msg.type === 'cancel') {
    cancelled = true;
    for (const id of [...kernelParts.keys()]) kernelPartCame(id, null);
    self.postMessage({ id: msg.id, type: 'cancel-ack' });
    return;
  }
  try {
    const result = await handle(msg);
    const transfer = result?.bytes ? [result.bytes.buffer] : result?.part ? [...result.part, ...(result.sweep ? [result.sweep] : [])].map((a) => a.buffer) : result?.names ? result.names.map((a) => a.buffer) : [];
    self.postMessage({ id: msg.id, type: 'result', ok: true, result }, transfer);
  } catch (e) {
    const fatal = typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError;
    self.postMessage({ id: msg.id, type: 'result', ok: false, error: errorMessage(e), code: errorCode(e), fatal });
  }
};

self.postMessage({ type: 'alive' });
