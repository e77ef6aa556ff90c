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
import __wbg_init, { Analysis, KernelPass, StreamHost, analyzeTraces, drillTraces, loadKernels, reportFile } from './pkg/nsys_lens.js';

let ready = null; // Promise of the wasm init
const analyses = new Map(); // slot ('main', 'baseline', 'target', 'rank0' …) -> open Analysis
let cancelFlag = null; // Int32Array over a SharedArrayBuffer when the page is cross-origin isolated
let cancelled = false; // set by a 'cancel' message (only seen when the core yields between steps)
let openingId = 0; // the open request in progress (a kernel part for another one is dropped)
const kernelParts = new Map(); // open request id -> {promise, resolve, reject} of its kernel part
const tailRanges = new Map(); // open request id -> {promise, resolve} of the rows the loader gives

// The kernel part of open request `id`, whether its message came already or not.
function kernelPart(id) {
  let part = kernelParts.get(id);
  if (!part) {
    part = {};
    part.promise = new Promise((resolve, reject) => Object.assign(part, { resolve, reject }));
    part.promise.catch(() => {});
    kernelParts.set(id, part);
  }
  return part;
}

function initWasm(wasm) {
  if (!ready) {
    ready = (wasm ? __wbg_init({ module_or_path: wasm }) : __wbg_init()).then((exports) => {
      // Read by the benchmark: wasm memory only grows, so its size after a run is the peak.
      self.nsysLensWasmMemoryBytes = () => exports.memory.buffer.byteLength;
      return exports;
    });
  }
  return ready;
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

// Loads everything but the kernel table here while the page has a second worker load the
// kernels; the page forwards that worker's bytes (or its error) as a 'kernels' message.
function openParallel(id, file, onProgress) {
  return openWithKernels(id, () => Analysis.openHost(file, onProgress), (host, bytes) => host.attachKernels(bytes));
}

// The host side in steps: while NVTX is read, chunks of windows go to the page (which forwards
// them to the kernel-streaming worker, fed as its sweeps need them); after NVTX the plan goes
// there too; then the API calls load here while the kernel table streams there.
function openStreaming(id, file, onProgress) {
  // The chunks stay here too (outside wasm memory): the launch sweep reads them again.
  const chunks = [];
  const onFeed = (bytes) => {
    chunks.push(bytes.slice());
    self.postMessage({ id, type: 'feed', bytes }, [bytes.buffer]);
  };
  const openHost = () => {
    const host = StreamHost.open(file, onProgress, onFeed);
    try {
      const plan = host.plan();
      self.postMessage({ id, type: 'plan', bytes: plan }, [plan.buffer]);
      host.loadRest(onProgress, (i) => chunks[i]);
      chunks.length = 0;
      return host;
    } catch (e) {
      freeQuietly(host);
      throw e;
    }
  };
  const help = (host, kernels) => readForLoader(id, host, kernels);
  return openWithKernels(id, openHost, (host, bytes) => host.attach(bytes), help);
}

// Once the host side is loaded, the loader is still reading the kernel table (the longer job):
// offer to read part of it. The loader answers with the rows it gives (or none); they go to it
// in chunks, which it feeds to its analyses after its own rows.
async function readForLoader(id, host, kernels) {
  let range;
  const given = new Promise((resolve) => tailRanges.set(id, { resolve }));
  try {
    self.postMessage({ id, type: 'help-offer' });
    range = await Promise.race([given, kernels.then(() => null, () => null)]);
  } finally {
    tailRanges.delete(id);
  }
  if (!range) return;
  try {
    host.readKernelTail(range[0], range[1]);
    for (;;) {
      const bytes = host.kernelTailChunk(CHUNK_ROWS);
      if (!bytes) break;
      self.postMessage({ id, type: 'kernel-tail', bytes }, [bytes.buffer]);
      await nextTask(); // a cancel can come in
      if (cancelled || (cancelFlag && Atomics.load(cancelFlag, 0) !== 0)) throw new Error('cancelled');
    }
  } catch (e) {
    self.postMessage({ id, type: 'kernel-tail', error: errorMessage(e) });
    throw e;
  }
}

// Opens the host side (`openHost()`), optionally helps the other worker (`help(host, kernels)`),
// waits for its bytes of open `id`, and joins them (`attach(host, bytes)`); whatever fails
// frees what was opened.
async function openWithKernels(id, openHost, attach, help = null) {
  openingId = id;
  const kernels = kernelPart(id).promise;
  let host;
  try {
    host = openHost();
  } catch (e) {
    kernelParts.delete(id);
    openingId = 0;
    throw e;
  }
  let bytes;
  try {
    if (help) await help(host, kernels);
    bytes = await kernels;
  } catch (e) {
    freeQuietly(host);
    throw e;
  } finally {
    kernelParts.delete(id);
    openingId = 0;
  }
  return attach(host, bytes);
}

// Rows per chunk of the kernel pass: between chunks, before the plan has come, the worker
// takes its messages.
const CHUNK_ROWS = 1 << 16;
const plan = { bytes: null, arrived: null, resolve: null };
plan.arrived = new Promise((resolve) => {
  plan.resolve = resolve;
});

// A macrotask boundary without setTimeout's clamping, so the plan's message can be read.
function nextTask() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(null);
  });
}

// Rows the analysis worker reads for this loader, once its host side is loaded: the share of
// the rows left when it offers (it reads about as fast; the analyses stay here).
const TAIL_SHARE = 0.62;
const tail = { requestId: 0, offered: false, answered: false, closed: false, chunks: [], error: null, wake: null };
tail.offer = new Promise((resolve) => {
  tail.offerCame = resolve;
});

function answerOffer(range) {
  tail.answered = true;
  self.postMessage({ id: tail.requestId, type: 'help', range: range ? [range[0], range[1]] : null });
}

// Chunks of windows from the analysis worker, kept here (outside wasm memory) until the pass's
// sweeps wait for the next one.
const feed = { chunks: [], wake: null };

function feedPass(pass) {
  while (pass.needsFeed() && feed.chunks.length) pass.feed(feed.chunks.shift());
}

// Waits until the pass has the chunk of windows it waits for (or waits for none).
async function awaitFeed(pass) {
  feedPass(pass);
  while (pass.needsFeed()) {
    await new Promise((resolve) => {
      feed.wake = resolve;
    });
    feedPass(pass);
  }
}

// The next chunk of the rows the analysis worker reads for this loader.
async function nextTailChunk() {
  for (;;) {
    if (tail.error) throw new Error(tail.error);
    if (tail.chunks.length) return tail.chunks.shift();
    await new Promise((resolve) => {
      tail.wake = resolve;
    });
  }
}

// The kernel table read once in rowid chunks through the one-pass analyses. Until the plan
// comes, chunks wait in a bounded buffer; when it is full, reading waits for the plan. Once
// the analysis worker offers, part of the rows left go to it.
async function streamKernels(id, file, waitForOffer = false) {
  tail.requestId = id;
  const pass = KernelPass.open(file, progressTo(id, () => true));
  try {
    for (;;) {
      if (!pass.hasPlan()) {
        if (!plan.bytes && (pass.bufferFull() || waitForOffer)) await plan.arrived;
        else if (!plan.bytes) await nextTask();
        if (plan.bytes) pass.setPlan(plan.bytes);
      } else {
        if (waitForOffer) await tail.offer; // the page's test hook
        await nextTask(); // the analysis worker's offer and windows can come in
        if (tail.offered && !tail.answered) answerOffer(pass.splitTail(TAIL_SHARE));
        if (pass.bufferFull()) await awaitFeed(pass);
        else feedPass(pass);
      }
      if (!pass.step(CHUNK_ROWS)) break;
    }
    if (!pass.hasPlan()) {
      await plan.arrived;
      pass.setPlan(plan.bytes);
    }
    tail.closed = true;
    if (tail.offered && !tail.answered) answerOffer(null);
    while (pass.tailPending()) {
      pass.pushTail(await nextTailChunk());
      feedPass(pass);
    }
    await awaitFeed(pass);
    const bytes = pass.finish();
    return { bytes, wasmMemoryBytes: self.nsysLensWasmMemoryBytes?.() ?? 0 };
  } catch (e) {
    freeQuietly(pass);
    throw e;
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
  return (step, done, total) => {
    self.postMessage({ id, type: 'progress', step: String(step), done: Number(done), total: Number(total) });
    return carryOn();
  };
}

// What the verdict view shows of one open trace.
function verdictView(analysis, options) {
  let gaps = null;
  let gapsError = null;
  try {
    gaps = analysis.gaps();
  } catch (e) {
    gapsError = errorMessage(e);
  }
  return { detect: analysis.detect(options), extent: analysis.timelineExtent(), gaps, gapsError, fileName: analysis.fileName() };
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
      if (msg.only) for (const other of [...analyses.keys()]) freeAnalysis(other);
      freeAnalysis(slot);
      cancelled = false;
      cancelFlag = msg.cancelFlag ? new Int32Array(msg.cancelFlag) : null;
      const onProgress = progressTo(id, () => {
        if (cancelFlag && Atomics.load(cancelFlag, 0) !== 0) cancelled = true;
        return !cancelled;
      });
      let opened;
      if (msg.parallel === 'stream') opened = await openStreaming(id, msg.file, onProgress);
      else if (msg.parallel) opened = await openParallel(id, msg.file, onProgress);
      else opened = Analysis.open(msg.file, onProgress);
      if (cancelled) {
        try {
          opened.free();
        } catch {
          /* ignore */
        }
        throw new Error('cancelled');
      }
      const analysis = opened;
      analyses.set(slot, analysis);
      self.postMessage({ id, type: 'progress', step: 'detecting', done: 0, total: 0 });
      return verdictView(analysis, msg.options);
    }
    case 'streamKernels': {
      // The second worker of a streaming open: the kernel table through the one-pass analyses.
      await initWasm();
      return await streamKernels(id, msg.file, msg.waitForOffer === true);
    }
    case 'loadKernels': {
      // The second worker of a parallel open: only the kernel table, returned as bytes.
      await initWasm();
      const bytes = loadKernels(msg.file, progressTo(id, () => true));
      return { bytes, wasmMemoryBytes: self.nsysLensWasmMemoryBytes?.() ?? 0 };
    }
    case 'detect':
      return { detect: analysisIn(msg.slot).detect(msg.options) };
    case 'view':
      // Switching the verdict view between open files (baseline and target, rank files).
      return verdictView(analysisIn(msg.slot), msg.options);
    case 'timeline': {
      const analysis = analysisIn(msg.slot);
      return { view: withNs((ns) => analysis.timeline(ns(msg.start), ns(msg.end), msg.columns)) };
    }
    case 'hover': {
      const analysis = analyses.get(msg.slot || 'main');
      if (!analysis) return { hit: 'null' };
      return { hit: withNs((ns) => analysis.hover(msg.lane, ns(msg.t), ns(msg.slack))) };
    }
    case 'analyze': {
      const baseline = analysisIn(msg.baseline).id;
      const target = msg.target ? analysisIn(msg.target).id : undefined;
      return { report: analyzeTraces(baseline, target, msg.options || '{}') };
    }
    case 'drill': {
      const ids = new Uint32Array((msg.slots || ['main']).map((s) => analysisIn(s).id));
      return { report: drillTraces(ids, msg.options || '{}') };
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
  if (msg.type === 'kernels') {
    if (msg.id !== openingId) return; // that open already ended (failed or was cancelled)
    const part = kernelPart(msg.id);
    if (msg.bytes) part.resolve(msg.bytes);
    else part.reject(new Error(msg.error || 'the kernel-loading worker failed'));
    return;
  }
  if (msg.type === 'help') {
    // The loader's answer to this worker's offer: the kernel rows to read for it, or none.
    tailRanges.get(msg.id)?.resolve(msg.range);
    return;
  }
  if (msg.type === 'help-offer') {
    tail.offered = true;
    tail.offerCame();
    if (tail.closed && !tail.answered) answerOffer(null);
    return;
  }
  if (msg.type === 'kernel-tail') {
    if (msg.error) tail.error = msg.error;
    else tail.chunks.push(msg.bytes);
    tail.wake?.();
    return;
  }
  if (msg.type === 'plan') {
    plan.bytes = msg.bytes;
    plan.resolve();
    return;
  }
  if (msg.type === 'feed') {
    feed.chunks.push(msg.bytes);
    feed.wake?.();
    return;
  }
  if (msg.type === 'cancel') {
    cancelled = true;
    self.postMessage({ id: msg.id, type: 'cancel-ack' });
    return;
  }
  try {
    const result = await handle(msg);
    const transfer = result && result.bytes ? [result.bytes.buffer] : [];
    self.postMessage({ id: msg.id, type: 'result', ok: true, result }, transfer);
  } catch (e) {
    const fatal = typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError;
    self.postMessage({ id: msg.id, type: 'result', ok: false, error: errorMessage(e), fatal });
  }
};

self.postMessage({ type: 'alive' });
