// The page's engine (its wasm module) opening a file and computing its verdict in Node, on one
// thread and with no browser: the wall and CPU time of each, and the time its file reads take
// through `fs` instead of the browser's `FileReaderSync`. The page's open on one worker
// (`Analysis.open`, no reader worker), so two builds of the module compare within about a tenth,
// where the page's own times wander by a third on these shared cores. Prints figures; not a test.
// Usage: node tests/e2e/tools/engine_cpu.mjs FILE [--runs N] [--dist DIR ...]
//   (each --dist a built page, `cargo xtask dist`; default dist/ or NSYS_LENS_DIST; the builds
//   run in turn, N rounds)
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DIST } from '../helpers.mjs';

const file = process.argv[2];
if (!file || !fs.existsSync(file)) throw new Error('usage: engine_cpu.mjs FILE [--runs N] [--dist DIR ...]');
const runsAt = process.argv.indexOf('--runs');
const RUNS = runsAt > 0 ? Number(process.argv[runsAt + 1]) : 3;
const dists = process.argv.flatMap((a, i) => (a === '--dist' ? [path.resolve(process.argv[i + 1])] : []));

// The VFS reads `file.slice(a, b)` with `FileReaderSync`; here both read the file with `fs`.
let readMs = 0;
globalThis.FileReaderSync = class {
  readAsArrayBuffer(part) {
    const t0 = performance.now();
    const len = Math.max(0, Math.min(part.end, part.file.size) - part.start);
    const bytes = new Uint8Array(len);
    fs.readSync(part.file.fd, bytes, 0, len, part.start);
    readMs += performance.now() - t0;
    return bytes.buffer;
  }
};
class NodeFile {
  constructor(p) {
    this.fd = fs.openSync(p, 'r');
    this.size = fs.fstatSync(this.fd).size;
    this.name = path.basename(p);
    this.lastModified = 0;
    this.type = '';
  }
  slice(start = 0, end = this.size) {
    return { file: this, start, end };
  }
}
globalThis.nsysLensHeartbeat = () => {};

// Each build's module, instantiated once (its first run includes the engine's compile tiers).
async function engine(dist) {
  const glue = await import(pathToFileURL(path.join(dist, 'pkg', 'nsys_lens.js')).href);
  await glue.default({ module_or_path: fs.readFileSync(path.join(dist, 'pkg', 'nsys_lens_bg.wasm')) });
  return glue;
}

function run(glue, input) {
  readMs = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const analysis = glue.Analysis.open(input, () => true);
  const t1 = performance.now();
  analysis.detect('{}');
  const t2 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  analysis.free();
  return { open: (t1 - t0) / 1000, verdict: (t2 - t1) / 1000, cpu: (cpu.user + cpu.system) / 1e6, reads: readMs / 1000 };
}

const builds = [];
for (const dist of dists.length ? dists : [DIST]) builds.push({ dist, glue: await engine(dist), runs: [] });
const input = new NodeFile(file);
for (let round = 0; round <= RUNS; round++) {
  for (const b of builds) {
    const r = run(b.glue, input);
    if (round > 0) b.runs.push(r); // round 0 warms the module up
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (x) => `${x.toFixed(2)} s`;
console.log(`| ${path.basename(file)} (${(input.size / 1048576).toFixed(0)} MiB), ${RUNS} runs each after one to warm up | open | verdict | CPU time (open + verdict) | of it, file reads through fs |`);
console.log('|---|---:|---:|---:|---:|');
for (const b of builds) {
  const m = (k) => median(b.runs.map((r) => r[k]));
  const range = `${s(Math.min(...b.runs.map((r) => r.cpu)))}–${s(Math.max(...b.runs.map((r) => r.cpu)))}`;
  console.log(`| ${b.dist} | ${s(m('open'))} | ${s(m('verdict'))} | ${s(m('cpu'))} (${range}) | ${s(m('reads'))} |`);
}
