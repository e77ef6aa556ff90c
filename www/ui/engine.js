import { OpenProgress } from './progress.js';
// The page's side of the analysis worker: request/response by id, progress, cancel; a worker
// that cannot start or dies is reported (onDead) and a fresh one starts on the next request; one
// that does not answer a cancel or traps is replaced at once.

const CANCEL_GRACE_MS = 400;
// A what-if helper that opens no file holds this much besides the names and the plan: a fresh
// wasm instance (about 20 MiB) and its replays' state.
const HELPER_BASE_BYTES = 32 * 1024 * 1024;
// A worker that has not evaluated its script by then is reported as unable to start.
const START_TIMEOUT_MS = 60_000;
// A worker that works on a request and sends nothing (no progress, no heartbeat: the core beats
// every 65,536 rows a view folds) for this long is stuck: it is ended and the page says so.
export const STALL_MS = 30_000;
const STALL_CHECK_MS = 1_000;

// An error of the worker itself (not of a request): `detail` says what happened, for the page.
function workerError(detail) {
  return Object.assign(new Error(`the analysis worker failed: ${detail}`), { detail });
}


export class WorkerEngine {
  // makeWorker: () => Worker; wasm: the page's compiled WebAssembly.Module each worker instantiates;
  // onDead(error, {started}): the worker could not start (started false: its script failed, it
  // did not answer in time, or the wasm did not instantiate) or died after starting (true).
  // stallMs: the watchdog's time (STALL_MS); onHeard: called on every message of the worker.
  // keepNoRows: every open keeps no row, each pass reading the file (the page's `?rows=file`).
  constructor(makeWorker, wasm, { onDead = null, stallMs = STALL_MS, onHeard = null, keepNoRows = false } = {}) {
    this.makeWorker = makeWorker;
    this.keepNoRows = keepNoRows;
    this.wasm = wasm;
    this.onDead = onDead;
    this.stallMs = stallMs;
    this.onHeard = onHeard;
    this.heardAt = performance.now();
    this.watchdog = null;
    this.focus = 'main'; // the slot the verdict view (detect, timeline, hover) reads
    this.worker = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject, onProgress}
    this.openId = 0;
    this.cancelFlag = null;
    this.start();
  }

  start() {
    let w;
    try {
      w = this.makeWorker();
    } catch (e) {
      // The browser refused to create it (a policy, an unsupported worker type).
      this.worker = null;
      this.alive = false;
      this.queue = [];
      const err = workerError(`the browser refused to create it (${e?.message || e})`);
      this.initPromise = Promise.reject(err);
      this.initPromise.catch(() => {});
      this.onDead?.(err, { started: false });
      return;
    }
    this.worker = w;
    // Requests wait for the worker's 'alive' message: a message posted before the worker module
    // finished evaluating (top-level await in its imports) could be lost.
    this.alive = false;
    this.queue = [];
    w.onmessage = (ev) => this.onMessage(ev.data || {});
    w.onerror = (ev) => {
      ev.preventDefault?.();
      this.fail(workerError(ev.message || 'its script could not be loaded or run'));
    };
    w.onmessageerror = () => this.fail(workerError('it sent an unreadable message'));
    clearTimeout(this.startTimer);
    this.startTimer = setTimeout(() => {
      if (this.worker === w && !this.alive) this.fail(workerError(`no answer within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    const init = this.request('init', { wasm: this.wasm });
    this.initPromise = init;
    // A worker that runs but cannot instantiate the wasm is as unusable as one that never ran.
    init.catch((e) => {
      if (this.worker === w && this.alive) this.onDead?.(e, { started: false });
    });
  }

  // Ends the worker and rejects everything in flight with `err`.
  stop(err) {
    clearTimeout(this.startTimer);
    clearInterval(this.watchdog);
    this.watchdog = null;
    this.worker?.terminate();
    this.worker = null;
    this.alive = false;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
  }

  // Kill the worker, reject everything in flight, start a fresh one.
  restart(reason) {
    this.stop(reason instanceof Error ? reason : new Error(String(reason || 'restarted')));
    this.start();
  }

  // The worker failed: its script did not load or run, it did not start in time, or it crashed
  // (a wasm trap, out of memory) and cannot be trusted; what it held (the open traces) is gone.
  // Report it; the next request starts a fresh worker (not at once: one that dies as it starts
  // would loop).
  fail(err) {
    const started = this.alive;
    this.stop(err);
    this.onDead?.(err, { started });
  }

  // The worker was heard from (any message), or given work after a silence.
  heard() {
    this.heardAt = performance.now();
    this.onHeard?.();
  }

  // While requests are in flight, a worker heard from by nobody for `stallMs` is stuck in a
  // synchronous step (a bug, or a file the core loops over): it is ended with a clear error,
  // everything in flight rejected, and the next request starts a fresh one.
  watch() {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => {
      if (this.pending.size === 0) {
        clearInterval(this.watchdog);
        this.watchdog = null;
      } else if (this.alive && performance.now() - this.heardAt > this.stallMs) {
        const s = Math.round(this.stallMs / 1000);
        const err = workerError(
          `it made no progress for ${s} s (no rows read), so it was ended. The export may be damaged: check it with sqlite3 trace.sqlite 'PRAGMA integrity_check' or export it again`,
        );
        this.fail(Object.assign(err, { code: 'stalled' }));
      }
    }, STALL_CHECK_MS);
  }

  onMessage(msg) {
    this.heard();
    if (msg.type === 'heartbeat') {
      this.onBeat?.(msg.rows);
      return;
    }
    if (msg.type === 'lanes') {
      // The analysis worker's lane workers began reading for its passes (`worker.js`).
      performance.mark('nsys-lens:lanes', { detail: { lanes: msg.lanes } });
      return;
    }
    if (msg.type === 'alive') {
      clearTimeout(this.startTimer);
      this.alive = true;
      for (const [m, transfer] of this.queue.splice(0)) this.worker.postMessage(m, transfer);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'progress') {
      p.onProgress?.(msg.step, msg.done, msg.total, msg);
    } else if (p.on?.[msg.type]) {
      p.on[msg.type](msg);
    } else if (msg.type === 'cancel-ack') {
      /* the worker saw the cancel; the open request settles with 'cancelled' */
    } else if (msg.type === 'result') {
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(Object.assign(new Error(msg.error), { code: msg.code || 'internal' }));
      // A wasm trap (a panic in the core) leaves the instance unusable: start a fresh worker.
      if (!msg.ok && msg.fatal) this.restart(new Error(msg.error));
    }
  }

  // `on` maps other message types the worker sends for this request to handlers; `transfer`
  // lists the buffers the message moves to the worker.
  request(type, payload = {}, onProgress = null, on = {}, transfer = []) {
    if (!this.worker) this.start();
    if (!this.worker) return this.initPromise; // rejected: the browser refused to create it
    const id = this.nextId++;
    if (this.pending.size === 0) this.heard();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress, type, on });
      this.watch();
      try {
        const m = { id, type, ...payload };
        if (this.alive) this.worker.postMessage(m, transfer);
        else this.queue.push([m, transfer]);
      } catch (e) {
        this.pending.delete(id);
        reject(e);
      }
    });
  }

  // Opens `file` into `slot` ('main', 'baseline', 'target', 'rank0' …); `only` closes every
  // other slot first; `batch`: the files of one drop it is the first of. `show(text, share)` hears
  // the progress (`OpenProgress`).
  // A what-if helper's open (`helper`) has no reader worker (this worker reads the kernel table
  // itself), no verdict and no performance marks (the benchmarks read the page's own).
  async open(file, options, show, { slot = 'main', only = true, batch = 1, helper = false } = {}) {
    const mark = helper ? () => {} : (name, detail) => performance.mark(name, detail);
    if (!this.worker) this.start(); // the last one died: the open below talks to this one
    await this.initPromise.catch((e) => {
      // A failed init (wasm missing) is fatal for this worker; try once more with a fresh one.
      this.restart(e);
      return this.initPromise;
    });
    let cancelFlag;
    if (globalThis.crossOriginIsolated && typeof SharedArrayBuffer === 'function') {
      this.cancelFlag = new Int32Array(new SharedArrayBuffer(4));
      cancelFlag = this.cancelFlag.buffer;
    } else {
      this.cancelFlag = null;
    }
    // With a core to spare, a reader worker scans the kernel table meanwhile, on a wasm
    // instance of its own; its part goes to the analysis worker, which reads the table itself
    // if none comes. The reader keeps no more of its rows than that worker would copy in.
    const reader = !helper && (navigator.hardwareConcurrency || 1) > 1;
    const progress = new OpenProgress(file.size, show, { reader, mark });
    const room = reader
      ? await this.request('keptRowsRoom', { bytes: file.size, slot, only, batch, keepNoRows: this.keepNoRows }).then((r) => r.room, () => undefined)
      : undefined;
    const id = this.nextId;
    this.openId = id;
    if (reader) {
      this.readKernels(file, room, (step, done, total, msg) => progress.reader(msg)).then((came) => {
        progress.readerDone();
        if (this.openId !== id) return;
        const part = came?.part ?? null;
        const sweep = came?.sweep ?? null;
        const transfer = part ? [...part, ...(sweep ? [sweep] : [])].map((a) => a.buffer) : [];
        this.request('kernels', { openId: id, part, sweep }, null, {}, transfer).catch(() => {});
      });
    }
    try {
      // The worker scans the file once; every view then folds over its rows.
      this.onBeat = (rows) => progress.beat(rows);
      // The analysis worker's kernel sweep inputs go to the reader, which sweeps its rows.
      const relay = {
        sweep: (msg) => {
          mark('nsys-lens:sweep-inputs');
          this.reader?.request('sweep', { inputs: msg.inputs }, null, {}, msg.inputs ? [msg.inputs.buffer] : []).catch(() => {});
        },
        'host-read': (msg) => mark('nsys-lens:host-read', { detail: { wasmBytes: msg.wasmBytes } }),
      };
      const opened = await this.request('open', { file, options, cancelFlag, slot, only, reader, batch, verdict: !helper, keepNoRows: this.keepNoRows }, (step, done, total, msg) => progress.analysis(msg), relay);
      // The analysis worker's wasm memory once this trace is open (benchmarks read it).
      mark('nsys-lens:opened', { detail: { wasmBytes: opened.wasmBytes ?? 0, reads: opened.reads } });
      return opened;
    } finally {
      if (this.openId === id) this.openId = 0;
      this.onBeat = null;
      this.stopReader();
    }
  }

  // The kernel table of `file` as a reader worker scans it, `{part, sweep}` (null if it cannot),
  // its kept rows within `room` bytes, and its sweep of the GPU work when the analysis worker
  // sent the inputs; the worker ended once it has answered: its wasm memory goes with it.
  async readKernels(file, room, onProgress) {
    this.stopReader();
    // While the analysis worker waits for the part, the reader's messages are its life signs.
    const reader = new WorkerEngine(this.makeWorker, this.wasm, { stallMs: this.stallMs, onHeard: () => this.heard() });
    this.reader = reader;
    try {
      const { part, sweep, early, wasmBytes, reads } = await reader.request('scanKernels', { file, room }, onProgress);
      // `swept`: the reader swept the GPU work, `early`: as it read the kernel table.
      performance.mark('nsys-lens:reader', { detail: { wasmBytes, reads, swept: Boolean(sweep), early } });
      return { part, sweep };
    } catch {
      return null;
    } finally {
      if (this.reader === reader) this.stopReader();
    }
  }

  stopReader() {
    this.reader?.terminate();
    this.reader = null;
  }

  terminate() {
    this.stopReader();
    this.stop(new Error('terminated'));
  }

  // Cancel the analysis in progress. Resolves when the worker is free again.
  async cancel() {
    const id = this.openId;
    if (!id || !this.pending.has(id)) return;
    if (this.cancelFlag) Atomics.store(this.cancelFlag, 0, 1);
    this.stopReader();
    if (this.alive) this.worker.postMessage({ id, type: 'cancel' });
    const settled = new Promise((resolve) => {
      const p = this.pending.get(id);
      const { resolve: res, reject: rej } = p;
      p.resolve = (v) => {
        resolve();
        res(v);
      };
      p.reject = (e) => {
        resolve();
        rej(e);
      };
    });
    const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), CANCEL_GRACE_MS));
    if ((await Promise.race([settled, timeout])) === 'timeout' && this.pending.has(id)) {
      // The core is inside a synchronous step and cannot read our message: replace the worker.
      this.restart(Object.assign(new Error('the analysis was cancelled'), { code: 'cancelled' }));
    }
  }

  detect(options) {
    return this.request('detect', { options, slot: this.focus });
  }

  // The timeline's extent of `slot` (after its verdict, which `open` returns).
  extent(slot) {
    return this.request('extent', { slot });
  }

  // The gap histogram of `slot`.
  gaps(slot) {
    return this.request('gaps', { slot });
  }

  // Verdict, timeline extent and gaps of `slot`, which becomes the focus.
  view(slot, options) {
    this.focus = slot;
    return this.request('view', { slot, options });
  }

  // folded: the lane groups shown folded (a lane's `group`), laid out by the core.
  timeline(start, end, columns, folded = []) {
    return this.request('timeline', { start, end, columns, folded, slot: this.focus });
  }

  // row: the index of the lane's row under the pointer (its layout's `rows`; an NVTX lane's
  // depth row), null between rows.
  hover(lane, t, slack, folded = [], row = null) {
    return this.request('hover', { lane, t, slack, folded, row, slot: this.focus });
  }

  // AnalyzeReport JSON: the root cause of `baseline`, compared with `target` (a slot or null).
  analyze(baseline, target, options) {
    return this.request('analyze', { baseline, target, options: JSON.stringify(options || {}) });
  }

  // What a fix would buy for the trace in `slot` (`{whatif, section, regression}` JSON),
  // against the trace in `baseline` when given.
  // `feed`: a helper's buffer each batch of the rows replayed also goes to (`whatifFed`).
  whatif(slot, baseline, options, elsewhere = null, feed = null) {
    return this.request('whatif', { slot, baseline, options: JSON.stringify(options || {}), elsewhere, feed });
  }

  // The what-if card of `slot` (`whatif`'s answer) with its replays on two workers when the
  // machine has a core to spare and both fit the page's memory (`fits`): a helper worker opens
  // `file` with `openOptions` while this one finds the steady steps (the plan), then each
  // replays its share of the changes and this one joins the helper's predictions. Any failure
  // of the helper: this worker replays them all.
  // On a cross-origin isolated page the helper opens no file (`whatifFed`, within `budget`).
  async whatifShared(slot, file, openOptions, options, { fits, budget }) {
    if ((navigator.hardwareConcurrency || 1) < 2) return this.whatif(slot, null, options);
    if (globalThis.crossOriginIsolated && typeof SharedArrayBuffer === 'function') return this.whatifFed(slot, options, budget);
    if (!file || !fits) return this.whatif(slot, null, options);
    const helper = new WorkerEngine(this.makeWorker, this.wasm, { stallMs: this.stallMs, keepNoRows: this.keepNoRows });
    try {
      const opened = helper.open(file, openOptions, () => {}, { helper: true });
      opened.catch(() => {});
      const { plan } = await this.request('whatifPlan', { slot, options: JSON.stringify(options || {}) });
      if (!plan) return await this.whatif(slot, null, options);
      const away = opened.then(() => helper.request('whatifApart', { slot: 'main', plan }));
      away.catch(() => {});
      await this.whatif(slot, null, { ...options, split: true });
      const came = await away.catch(() => null);
      if (!came) return await this.whatif(slot, null, options);
      // The benchmarks read the helper's wasm memory (it ends with the card).
      performance.mark('nsys-lens:whatif-helper', { detail: { wasmBytes: came.wasmBytes } });
      return await this.whatif(slot, null, { ...options, split: true }, came.elsewhere);
    } finally {
      helper.terminate();
    }
  }

  // The what-if card of `slot` with its replays on two workers, the helper opening no file:
  // this worker finds the steady steps (the plan), then replays its share of the changes and
  // hands each batch of the rows it reads to the helper through a SharedArrayBuffer
  // (`worker.js`' feed), which replays the rest over them with this worker's names; this one
  // joins the helper's predictions. It holds the names, the plan and its replays' state, not
  // the rows: about HELPER_BASE_BYTES and 2.5 times the names' and the plan's bytes (measured:
  // 90 MiB at 1 GB for 26 MB of them), which must fit in `budget` with this worker's wasm
  // memory and its lanes'. Any failure of the helper: this worker replays them all.
  async whatifFed(slot, options, budget) {
    const helper = new WorkerEngine(this.makeWorker, this.wasm, { stallMs: this.stallMs });
    const alone = () => this.whatif(slot, null, options);
    try {
      const { plan, names, wasmBytes } = await this.request('whatifPlan', { slot, options: JSON.stringify(options || {}), names: true });
      if (!plan) return await alone();
      const sent = names.reduce((n, a) => n + a.byteLength, plan.byteLength);
      if (wasmBytes + HELPER_BASE_BYTES + 2.5 * sent > budget) return await alone();
      const made = await helper.request('feedBuffer', {}).catch(() => null);
      if (!made) return await alone();
      const away = helper.request('whatifFed', { feed: made.feed, plan, names }, null, {}, names.map((a) => a.buffer));
      away.catch(() => {});
      const split = { ...options, split: true };
      try {
        await this.whatif(slot, null, split, null, made.feed);
      } catch (e) {
        if (!this.worker) throw e; // this worker died: the page says so
        return await alone();
      }
      const came = await away.catch(() => null);
      if (!came) return await alone();
      performance.mark('nsys-lens:whatif-helper', { detail: { wasmBytes: came.wasmBytes, fed: true } });
      return await this.whatif(slot, null, split, came.elsewhere);
    } finally {
      helper.terminate();
    }
  }

  // The critical path of steady step `step` of the trace in `slot` (StepPath JSON).
  stepPath(slot, step, options) {
    return this.request('stepPath', { slot, step, options: JSON.stringify(options || {}) });
  }

  // The ranks at their collectives over `slots` (`{ranks, section, chart, timeline}` JSON).
  ranks(slots) {
    return this.request('ranks', { slots });
  }

  // The ranks timeline of the last `ranks(slots)` over [start, end) of its common clock in
  // `columns` columns; `open`: the rank groups (`rank:<i>`) shown one lane per stream.
  ranksTimeline(slots, start, end, columns, open = []) {
    return this.request('ranksTimeline', { slots, start, end, columns, open });
  }

  // What lies under the pointer on `lane` of the last ranks timeline drawn (Hit JSON or null).
  ranksHover(slots, lane, t, slack, open = []) {
    return this.request('ranksHover', { slots, lane, t, slack, open });
  }

  // DrillReport JSON over `slots` (one trace, or the rank files of one run).
  drill(slots, options) {
    return this.request('drill', { slots, options: JSON.stringify(options || {}) });
  }

  // A file without GPU work opened into `slot` (its verdict refused with `no-kernels`):
  // `{fileName, outline}`, the report's sections as JSON.
  openHostSide(file, show, slot = 'main', top = 10) {
    const onProgress = (step, done, total) => show(total > 0 ? `${step} (${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')})` : step, total > 0 ? done / total : null);
    return this.request('openHostSide', { file, slot, top }, onProgress);
  }

  // The explainer report of `slot` as a Uint8Array: format 'md' | 'json' | 'html' | 'csv-zip'.
  report(slot, format, top = 10) {
    return this.request('report', { slot, format, top });
  }
}
