// Browser benchmark: in headless Chromium, a generated trace of ≥ 1 GB — time from
// the page taking the file (its workers started, as they are once the page has loaded) to the
// verdict, first timeline paint after the verdict, peak wasm
// memory of the analysis worker — next to the native CLI on the same file. With `--views`, the
// what-if card, Root cause, Drill-down and report export are then timed in turn (time to each
// shown, and the analysis worker's wasm memory after it), next to the native `whatif`,
// `analyze`, `drill` and `report`
// (time and peak resident memory, from /usr/bin/time -v). Prints figures; not a test.
// The reader worker's wasm memory (it scans the kernel table while the analysis worker reads the
// host side, and ends then) is printed beside.
// Usage: node tests/e2e/tools/bench.mjs [--scenario NAME] [--scale N] [--runs N] [--views]
// [--file PATH] [--cli PATH] [--profile standard|trtllm-skill] [--page-only (no native runs)] [--no-service-worker] [--rows-file]   (needs dist/: cargo xtask dist, or NSYS_LENS_DIST=another build)
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { ARTIFACTS, ROOT, launch, nativeRun, openTrace, requireDist, serve } from '../helpers.mjs';

const scaleArg = process.argv.indexOf('--scale');
const SCALE = scaleArg > 0 ? Number(process.argv[scaleArg + 1]) : 6000;
const scenarioArg = process.argv.indexOf('--scenario');
// `host-bound` names its steps through StringIds; `gpu-bound` writes them inline, as most
// real exports do.
const SCENARIO = scenarioArg > 0 ? process.argv[scenarioArg + 1] : 'host-bound';
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 3;
const VIEWS = process.argv.includes('--views');
// The page reloads itself through its service worker on a first visit, cross-origin isolated,
// so that lane workers read the rows an open did not keep and the what-if helper is fed the
// analysis worker's rows. `--no-service-worker`: the browser refuses the worker (as Firefox's
// private windows do), so the page stays as first loaded, not isolated. `--rows-file`: with
// `?rows=file`, every open keeping no row.
const NO_SERVICE_WORKER = process.argv.includes('--no-service-worker');
const ROWS_FILE = process.argv.includes('--rows-file');
const fileArg = process.argv.indexOf('--file');
const FILE = fileArg > 0 ? path.resolve(process.argv[fileArg + 1]) : null;

const cliArg = process.argv.indexOf('--cli');
const profileArg = process.argv.indexOf('--profile');
// The page's profile (its radio checked before the trace is opened) and the native commands'.
const PROFILE = profileArg > 0 ? process.argv[profileArg + 1] : 'standard';

function releaseCli() {
  if (cliArg > 0) return path.resolve(process.argv[cliArg + 1]);
  execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'nsys-lens'], { cwd: ROOT, stdio: 'inherit' });
  return path.join(ROOT, 'target', 'release', 'nsys-lens');
}

function trace(cli) {
  const dir = path.join(ROOT, 'target', 'bench');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${SCENARIO}-scale${SCALE}.sqlite`);
  if (!fs.existsSync(file)) execFileSync(cli, ['gen', SCENARIO, file, '--scale', String(SCALE)], { stdio: 'inherit' });
  return file;
}


// The deeper views' native commands, as the page computes them.
function nativeViews(cli, file) {
  const dir = path.join(ROOT, 'target', 'bench');
  fs.mkdirSync(dir, { recursive: true });
  const out = fs.mkdtempSync(path.join(dir, 'report-'));
  try {
    return {
      whatif: nativeRun(cli, ['whatif', file, '--json', '-o', '/dev/null']),
      rootcause: nativeRun(cli, ['analyze', file, '--profile', PROFILE, '--json', '-o', '/dev/null']),
      drill: nativeRun(cli, ['drill', file, '--json', '-o', '/dev/null']),
      report: nativeRun(cli, ['report', file, '--out', out]),
    };
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

function nativeSeconds(cli, file) {
  const t0 = process.hrtime.bigint();
  execFileSync(cli, ['detect', file, '--profile', PROFILE, '--json', '-o', '/dev/null']);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

// Waits until the page and its analysis worker have instantiated the wasm module, as they have
// by the time a user has picked a file.
async function pageWarm(page) {
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const workers = page.workers();
    const ready = await Promise.all(workers.map((w) => w.evaluate(() => typeof self.nsysLensWasmMemoryBytes === 'function').catch(() => false)));
    if (ready.filter(Boolean).length >= 1) return;
    if (Date.now() > deadline) throw new Error('the page\'s workers did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Waits for the what-if card (it replays the steady steps after the verdict, the timeline and
// the gaps, on the analysis worker; above 512 MiB once asked: the bench clicks) and times it
// from the replay asked to the card shown. Then opens Root cause, Drill-down, then exports the
// Markdown report, each once the worker is free: a view asked while the card computes waits for
// it. Per step its time and the analysis worker's wasm memory after it (a wasm memory only grows:
// the peak so far), and a screenshot of each view in tests/artifacts/bench-VIEW.png.
async function openViews(page, analysis) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  // null once the worker is gone (an instance that aborted, e.g. out of memory, is replaced).
  const memory = () => analysis.evaluate(() => self.nsysLensWasmMemoryBytes?.() ?? 0).catch(() => null);
  const whatif = await whatifCard(page, memory);
  const view = async (name) => {
    const t0 = Date.now();
    await page.click(`[data-testid=tab-${name}]`);
    const key = `${name}State`;
    await page.waitForFunction((k) => ['done', 'error'].includes(document.body.dataset[k]), key, { timeout: 1_800_000 });
    const state = await page.evaluate((k) => document.body.dataset[k], key);
    const error = state === 'error' ? await page.textContent(`[data-testid=${name}-error]`) : null;
    await page.screenshot({ path: path.join(ARTIFACTS, `bench-${name}.png`) });
    return { seconds: (Date.now() - t0) / 1000, wasmBytes: await memory(), error };
  };
  const rootcause = await view('rootcause');
  const drill = await view('drill');
  let report = { seconds: 0, wasmBytes: 0, error: 'no drill-down to export from' };
  if (!drill.error) {
    const t0 = Date.now();
    try {
      await Promise.all([page.waitForEvent('download', { timeout: 1_800_000 }), page.click('[data-testid=export-md]')]);
      report = { seconds: (Date.now() - t0) / 1000, wasmBytes: await memory(), error: null };
    } catch (e) {
      report = { seconds: (Date.now() - t0) / 1000, wasmBytes: await memory(), error: e.message };
    }
  }
  return { whatif, rootcause, drill, report };
}

// The what-if card's time from the replay asked to the card shown, as a view's.
async function whatifCard(page, memory) {
  const state = () => page.evaluate(() => document.body.dataset.whatifState);
  await page.waitForFunction(() => ['waiting', 'done', 'error'].includes(document.body.dataset.whatifState), null, { timeout: 1_800_000 });
  if ((await state()) === 'waiting') {
    await page.click('[data-testid=whatif-compute]');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.whatifState), null, { timeout: 1_800_000 });
  }
  const error = (await state()) === 'error' ? await page.textContent('[data-testid=whatif-error]') : null;
  const { seconds, helperBytes } = await page.evaluate(() => {
    const asked = performance.getEntriesByName('nsys-lens:whatif-asked').at(-1)?.startTime;
    const shown = performance.getEntriesByName('nsys-lens:whatif').at(-1)?.startTime ?? performance.now();
    // A helper worker replayed some changes (it ended with the card): its wasm memory then.
    const helper = performance.getEntriesByName('nsys-lens:whatif-helper').at(-1)?.detail?.wasmBytes ?? null;
    return { seconds: asked === undefined ? 0 : (shown - asked) / 1000, helperBytes: helper };
  });
  return { seconds, wasmBytes: await memory(), helperBytes, error };
}

// Whether the page the runs measured was cross-origin isolated.
let isolated = false;

async function browserRun(origin, file) {
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, serviceWorkers: NO_SERVICE_WORKER ? 'block' : 'allow' });
    await page.goto(`${origin}/${ROWS_FILE ? '?rows=file' : ''}`);
    await pageWarm(page);
    isolated = await page.evaluate(() => self.crossOriginIsolated);
    const analysis = page.workers()[0];
    await page.evaluate((p) => {
      document.querySelector(`input[name=profile][value=${p}]`).checked = true;
    }, PROFILE);
    await openTrace(page, file, { timeout: 600_000 });
    await page.waitForFunction(() => performance.getEntriesByName('nsys-lens:timeline').length > 0, null, { timeout: 60_000 });
    // From the page taking the file (the drop or the picker's change event) to the verdict shown.
    const { verdictSeconds, paint, painted } = await page.evaluate(() => {
      const open = performance.getEntriesByName('nsys-lens:open').at(-1).startTime;
      const verdict = performance.getEntriesByName('nsys-lens:verdict').at(-1).startTime;
      const timeline = performance.getEntriesByName('nsys-lens:timeline').find((m) => m.startTime >= verdict);
      return { verdictSeconds: (verdict - open) / 1000, paint: (timeline.startTime - verdict) / 1000, painted: (timeline.startTime - open) / 1000 };
    });
    // When each stage of the open ended, in seconds from the file taken: the analysis worker's
    // host side, the reader worker's kernel table, the join (the verdict's passes begin).
    const stages = await page.evaluate(() => {
      const open = performance.getEntriesByName('nsys-lens:open').at(-1).startTime;
      const at = (name) => {
        const m = performance.getEntriesByName(name).filter((e) => e.startTime >= open).at(0);
        return m ? (m.startTime - open) / 1000 : null;
      };
      const reader = performance.getEntriesByName('nsys-lens:reader').at(-1)?.detail;
      return { inputs: at('nsys-lens:sweep-inputs'), host: at('nsys-lens:host-side'), reader: at('nsys-lens:reader'), swept: reader ? (reader.swept ? (reader.early ? 'as read' : 'after the read') : 'no') : '—', passes: at('nsys-lens:verdict-stage'), verdict: at('nsys-lens:verdict') };
    });
    const progress = await page.evaluate(() => ({
      samples: performance.getEntriesByName('nsys-lens:progress').map((m) => m.detail),
      verdictAt: performance.getEntriesByName('nsys-lens:verdict-stage').at(-1)?.startTime,
      endAt: performance.getEntriesByName('nsys-lens:opened').at(-1)?.startTime,
    }));
    const wasmBytes = await analysis.evaluate(() => self.nsysLensWasmMemoryBytes?.() ?? 0);
    // The reader worker's, as it answered (it ends then): 0 if no reader read the kernels.
    const readerBytes = await page.evaluate(() => performance.getEntriesByName('nsys-lens:reader').at(-1)?.detail?.wasmBytes ?? 0);
    // The analysis worker's once its host side was read: the most it held while the reader ran.
    const hostReadBytes = await page.evaluate(() => performance.getEntriesByName('nsys-lens:host-read').at(-1)?.detail?.wasmBytes ?? 0);
    // And once the verdict was computed, before the timeline's first paint.
    const verdictBytes = await page.evaluate(() => performance.getEntriesByName('nsys-lens:opened').at(-1)?.detail?.wasmBytes ?? 0);
    // What each worker read of the file (reads, bytes, ms in FileReaderSync): the analysis
    // worker's from the open to the verdict, the reader worker's for the kernel table.
    const reads = await page.evaluate(() => ({
      analysis: performance.getEntriesByName('nsys-lens:opened').at(-1)?.detail?.reads ?? null,
      reader: performance.getEntriesByName('nsys-lens:reader').at(-1)?.detail?.reads ?? null,
    }));
    const views = VIEWS ? await openViews(page, analysis) : null;
    // The lane workers the analysis worker started, and the ranges they answered.
    const lanes = await analysis.evaluate(() => self.nsysLensLanes?.() ?? []).catch(() => []);
    return { lanes, verdictSeconds, paint, painted, wasmBytes, readerBytes, hostReadBytes, verdictBytes, views, progress, stages, reads };
  } finally {
    await browser.close();
  }
}

requireDist();
const cli = releaseCli();
const file = FILE ?? trace(cli);
const size = fs.statSync(file).size;
const PAGE_ONLY = process.argv.includes('--page-only');
const native = PAGE_ONLY ? NaN : [nativeSeconds(cli, file), nativeSeconds(cli, file)].sort((a, b) => a - b)[0];
const natives = VIEWS && !PAGE_ONLY ? nativeViews(cli, file) : null;
const site = await serve();
// A fresh browser per run; the median run is reported (the slowest and fastest alongside).
const runs = [];
try {
  for (let i = 0; i < RUNS; i++) runs.push(await browserRun(site.origin, file));
} finally {
  await site.close();
}
runs.sort((a, b) => a.verdictSeconds - b.verdictSeconds);
const run = runs[Math.floor((runs.length - 1) / 2)];
const spread = runs.length > 1 ? ` (${runs.length} runs: ${runs[0].verdictSeconds.toFixed(2)}–${runs.at(-1).verdictSeconds.toFixed(2)} s)` : '';
const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;
// A view's median time over the runs (each run's view is timed apart from its verdict), the
// spread beside it, and the largest wasm memory any run reached; the first failure if any failed.
function viewMedian(views) {
  const failed = views.find((v) => v.error);
  if (failed) return { ...failed, spread: '' };
  const sorted = [...views].sort((a, b) => a.seconds - b.seconds);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  const spread = sorted.length > 1 ? ` (${sorted.map((v) => v.seconds.toFixed(2)).join(', ')})` : '';
  const memories = views.map((v) => v.wasmBytes);
  const wasmBytes = memories.includes(null) ? null : Math.max(...memories);
  const helperBytes = Math.max(0, ...views.map((v) => v.helperBytes ?? 0));
  return { seconds: median.seconds, wasmBytes, helperBytes, error: null, spread };
}
const title = `${FILE ? path.basename(FILE) : `gen ${SCENARIO} --scale ${SCALE}`}, profile ${PROFILE}`;
console.log(`| browser benchmark: ${title} (${mib(size)}) | value | goal |`);
console.log('|---|---:|---|');
if (!PAGE_ONLY) console.log(`| native \`nsys-lens detect --json\` | ${native.toFixed(2)} s | |`);
console.log(`| page: file taken (drop or picker) → verdict shown, median${spread} | ${run.verdictSeconds.toFixed(2)} s | |`);
if (!PAGE_ONLY) console.log(`| page / native | ${(run.verdictSeconds / native).toFixed(2)}× | ≤ 1.5× (issue 51's goal) |`);
console.log(`| first timeline paint after the verdict (the verdict is shown first) | ${run.paint.toFixed(2)} s | < 1 s |`);
console.log(`| file taken → first timeline paint | ${run.painted.toFixed(2)} s | |`);
console.log(`| peak wasm memory of the analysis worker | ${mib(run.wasmBytes)} | < 512 MB |`);
console.log(`| page cross-origin isolated (lane workers, the what-if helper fed) | ${isolated ? 'yes' : 'no'} | |`);
if (isolated) {
  const l = run.lanes?.[0];
  console.log(`| lane workers (isolated page): lanes, ranges asked and taken, failure, each lane's wasm memory | ${l ? `${l.lanes}, ${l.asked}, ${l.taken}, ${l.failed ?? 'none'}, ${l.memoryMiB.map((m) => `${m} MiB`).join(' + ')}` : 'none started'} | |`);
}
if (run.verdictBytes) console.log(`| wasm memory of the analysis worker once the verdict was computed (before the timeline) | ${mib(run.verdictBytes)} | |`);
console.log(`| peak wasm memory of the reader worker (ended after the scan) | ${run.readerBytes ? mib(run.readerBytes) : 'no reader'} | < 512 MB |`);
if (run.readerBytes && run.hostReadBytes) {
  // Both workers' memory while both ran: the analysis worker's once its host side was read
  // (its memory only grows, and it waits for the reader's part after that) and the reader's.
  const both = run.hostReadBytes + run.readerBytes;
  console.log(`| wasm memory of both workers while the reader ran (the analysis worker's at its host side's end + the reader's) | ${mib(run.hostReadBytes)} + ${mib(run.readerBytes)} = ${mib(both)} | ≤ 512 MiB |`);
}
{
  // The open's stages in the median run: where the verdict's time goes.
  const s = run.stages;
  const t = (x) => (x === null ? '—' : `${x.toFixed(2)} s`);
  console.log(`| the median run's stages, from the file taken: the kernel sweep's inputs sent (analysis worker's ranges read), host side read, kernel table read and its GPU work swept (reader worker), verdict's passes begin, verdict shown | ${t(s.inputs)}, ${t(s.host)}, ${t(s.reader)}, ${t(s.passes)}, ${t(s.verdict)} | |`);
  console.log(`| the reader worker swept the GPU work | ${s.swept} | |`);
  const r = (x) => (x ? `${x.reads} reads, ${mib(x.bytes)}, ${(x.ms / 1000).toFixed(2)} s` : '—');
  console.log(`| the median run's file reads (\`FileReaderSync\`): analysis worker to the verdict; reader worker | ${r(run.reads.analysis)}; ${r(run.reads.reader)} | |`);
}
if (VIEWS) {
  const names = { whatif: ['what-if card', 'whatif --json'], rootcause: ['Root cause', 'analyze --json'], drill: ['Drill-down', 'drill --json'], report: ['report (Markdown export)', 'report --out DIR'] };
  console.log('');
  console.log('| view, after the verdict (median of the runs) | page time | native time | page / native | wasm memory of the analysis worker after it (largest run) | native peak RSS |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [key, [label, cmd]] of Object.entries(names)) {
    const p = viewMedian(runs.map((r) => r.views[key]));
    const n = natives?.[key];
    const shown = p.error ? `failed after ${p.seconds.toFixed(2)} s: ${p.error.slice(0, 400)}` : `${p.seconds.toFixed(2)} s${p.spread}`;
    const ratio = p.error || !n ? '' : `${(p.seconds / n.seconds).toFixed(2)}×`;
    const helper = p.helperBytes ? ` (+ ${mib(p.helperBytes)} in the helper worker that replayed some changes)` : '';
    const wasm = p.wasmBytes === null ? 'worker gone' : `${mib(p.wasmBytes)}${helper}`;
    console.log(`| ${label} (native \`${cmd}\`) | ${shown} | ${n ? `${n.seconds.toFixed(2)} s` : '—'} | ${ratio} | ${wasm} | ${n ? mib(n.rssBytes) : '—'} |`);
  }
}
// The page's time estimates while the file opened (`ui/progress.js`), against when each stage
// really ended: at a few shares of the stage, the time left it said and the time it took.
{
  const { samples, verdictAt, endAt } = run.progress;
  // Every sample, to weigh other estimators against the same run.
  const dump = path.join(ROOT, 'target', 'bench', `progress-${path.basename(file, '.sqlite')}.json`);
  fs.mkdirSync(path.dirname(dump), { recursive: true });
  fs.writeFileSync(dump, JSON.stringify(run.progress));
  console.log('');
  console.log('| stage (the median run) | at | time left said | time it took | error |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [stage, end] of [['read', verdictAt], ['verdict', endAt]]) {
    const said = samples.filter((s) => s.stage === stage && s.eta !== null);
    for (const share of [0.1, 0.25, 0.5, 0.75, 0.9]) {
      const s = said.find((x) => x.share >= share);
      if (!s || end === undefined) continue;
      const took = (end - s.at) / 1000;
      const err = took > 0 ? `${(((s.eta - took) / took) * 100).toFixed(0)} %` : '';
      console.log(`| ${stage === 'read' ? 'reading the file' : 'computing the verdict'} | ${(s.share * 100).toFixed(0)} % | ${s.eta.toFixed(1)} s | ${took.toFixed(1)} s | ${err} |`);
    }
  }
}
