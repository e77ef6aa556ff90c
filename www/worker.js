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
import __wbg_init, { Analysis, KernelPass, StreamHost, analyzeTraces, drillTraces, reportFile } from './pkg/nsys_lens.js';

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
      const bytes = host.kernelTailChunk();
      if (!bytes) break;
      self.postMessage({ id, type: 'kernel-tail', bytes }, [bytes.buffer]);
      await nextTask(); // a cancel can come in
      if (cancelled || (cancelFlag && Atomics.load(cancelFlag, 0) !== 0)) throw coded('the analysis was cancelled', 'cancelled');
    }
  } catch (e) {
    self.postMessage({ id, type: 'kernel-tail', error: errorMessage(e), code: errorCode(e) });
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

// ── the loader worker: the kernel table streamed once ──────────────────────────────────────────
// Its schedule is the core's (`KernelPass.next`): this side only forwards the analysis worker's
// messages and does what the pass answers.

// Messages from the analysis worker for this loader, in arrival order.
const inbox = { requestId: 0, messages: [], wake: null };

function deliver(message) {
  inbox.messages.push(message);
  inbox.wake?.();
}

// The first message of one of `kinds`, taken out of the inbox, or null.
function take(kinds) {
  const i = inbox.messages.findIndex((m) => kinds.includes(m.kind));
  return i < 0 ? null : inbox.messages.splice(i, 1)[0];
}

async function waitFor(kind) {
  for (;;) {
    const message = take([kind]);
    if (message?.error) throw coded(message.error, message.code || 'internal');
    if (message) return message;
    await new Promise((resolve) => {
      inbox.wake = resolve;
    });
  }
}

// What each of the pass's waits waits for.
const AWAITED = { 'need-plan': 'plan', 'need-feed': 'feed', 'need-offer': 'offer', 'need-tail': 'tail' };
const CONTINUE = { kind: 'continue' };

// A macrotask boundary without setTimeout's clamping, so that messages can be read.
function nextTask() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(null);
  });
}

async function streamKernels(id, file, waitForOffer = false) {
  inbox.requestId = id;
  const pass = KernelPass.open(file, progressTo(id, () => true), waitForOffer);
  try {
    let message = CONTINUE;
    for (;;) {
      const step = pass.next(message.kind, message.bytes);
      const kind = step.kind;
      if (kind === 'done') return { bytes: step.bytes, wasmMemoryBytes: self.nsysLensWasmMemoryBytes?.() ?? 0 };
      if (kind === 'answer') {
        const range = step.range;
        self.postMessage({ id, type: 'help', range: range ? [range[0], range[1]] : null });
        message = CONTINUE;
      } else if (kind === 'continue') {
        await nextTask(); // the plan and the offer go first
        message = take(['plan', 'offer']) || CONTINUE;
      } else {
        message = await waitFor(AWAITED[kind]);
      }
    }
  } finally {
    freeQuietly(pass);
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
      const opened = await openStreaming(id, msg.file, onProgress);
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
      self.postMessage({ id, type: 'progress', step: 'detecting', done: 0, total: 0 });
      return verdictView(analysis, msg.options);
    }
    case 'openHostSide': {
      // A file without kernel records (the streamed open refused it with `no-kernels`): there
      // is no kernel table to bound, so its host side is loaded whole and its report's
      // sections go to the page.
      await initWasm();
      const slot = msg.slot || 'main';
      for (const other of [...analyses.keys()]) freeAnalysis(other);
      cancelled = false;
      const analysis = Analysis.open(msg.file, progressTo(id, () => !cancelled));
      analyses.set(slot, analysis);
      const outline = new TextDecoder().decode(reportFile(analysis.id, 'outline', msg.top || 10));
      return { fileName: analysis.fileName(), outline };
    }
    case 'streamKernels': {
      // The second worker of a streaming open: the kernel table through the one-pass analyses.
      await initWasm();
      return await streamKernels(id, msg.file, msg.waitForOffer === true);
    }
    case 'detect':
      return { detect: analysisIn(msg.slot).detect(msg.options) };
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
    else part.reject(coded(msg.error || 'the kernel-streaming worker failed', msg.code || 'internal'));
    return;
  }
  if (msg.type === 'help') {
    // The loader's answer to this worker's offer: the kernel rows to read for it, or none.
    tailRanges.get(msg.id)?.resolve(msg.range);
    return;
  }
  if (msg.type === 'help-offer') return deliver({ kind: 'offer' });
  if (msg.type === 'kernel-tail') return deliver({ kind: 'tail', bytes: msg.bytes, error: msg.error, code: msg.code });
  if (msg.type === 'plan') return deliver({ kind: 'plan', bytes: msg.bytes });
  if (msg.type === 'feed') return deliver({ kind: 'feed', bytes: msg.bytes });
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
    self.postMessage({ id: msg.id, type: 'result', ok: false, error: errorMessage(e), code: errorCode(e), fatal });
  }
};

self.postMessage({ type: 'alive' });
