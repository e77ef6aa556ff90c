// Browser benchmark (issue 3): in headless Chromium, a generated trace of ≥ 1 GB — time from
// handing the file to the page to the verdict, first timeline paint after the verdict, peak wasm
// memory of the analysis worker — next to the native CLI on the same file. Prints figures; not a
// test. Usage: node tests/e2e/tools/bench.mjs [--scale N]   (needs dist/: cargo xtask dist)
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { ROOT, launch, openTrace, requireDist, serve } from '../helpers.mjs';

const scaleArg = process.argv.indexOf('--scale');
const SCALE = scaleArg > 0 ? Number(process.argv[scaleArg + 1]) : 6000;

function releaseCli() {
  execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'nsys-lens'], { cwd: ROOT, stdio: 'inherit' });
  return path.join(ROOT, 'target', 'release', 'nsys-lens');
}

function trace(cli) {
  const dir = path.join(ROOT, 'target', 'bench');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `host-bound-scale${SCALE}.sqlite`);
  if (!fs.existsSync(file)) execFileSync(cli, ['gen', 'host-bound', file, '--scale', String(SCALE)], { stdio: 'inherit' });
  return file;
}

function nativeSeconds(cli, file) {
  const t0 = process.hrtime.bigint();
  execFileSync(cli, ['detect', file, '--json', '-o', '/dev/null']);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function browserRun(origin, file) {
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/`);
    const t0 = Date.now();
    await openTrace(page, file, { timeout: 600_000 });
    const verdictSeconds = (Date.now() - t0) / 1000;
    await page.waitForFunction(() => performance.getEntriesByName('nsys-lens:timeline').length > 0, null, { timeout: 60_000 });
    const paint = await page.evaluate(() => {
      const verdict = performance.getEntriesByName('nsys-lens:verdict')[0].startTime;
      const timeline = performance.getEntriesByName('nsys-lens:timeline').find((m) => m.startTime >= verdict);
      return (timeline.startTime - verdict) / 1000;
    });
    const loaderBytes = await page.evaluate(() => performance.getEntriesByName('nsys-lens:loader-memory').at(-1)?.detail ?? 0);
    const worker = page.workers()[0];
    const wasmBytes = worker ? await worker.evaluate(() => self.nsysLensWasmMemoryBytes?.() ?? 0) : 0;
    return { verdictSeconds, paint, wasmBytes, loaderBytes };
  } finally {
    await browser.close();
  }
}

requireDist();
const cli = releaseCli();
const file = trace(cli);
const size = fs.statSync(file).size;
const native = [nativeSeconds(cli, file), nativeSeconds(cli, file)].sort((a, b) => a - b)[0];
const site = await serve();
let run;
try {
  run = await browserRun(site.origin, file);
} finally {
  await site.close();
}
const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;
console.log(`| browser benchmark: gen host-bound --scale ${SCALE} (${mib(size)}) | value | goal |`);
console.log('|---|---:|---|');
console.log(`| native \`nsys-lens detect --json\` | ${native.toFixed(2)} s | |`);
console.log(`| page: file handed over → verdict shown | ${run.verdictSeconds.toFixed(2)} s | |`);
console.log(`| page / native | ${(run.verdictSeconds / native).toFixed(2)}× | ≤ 2.5× |`);
console.log(`| first timeline paint after the verdict | ${run.paint.toFixed(2)} s | < 1 s |`);
console.log(`| peak wasm memory of the analysis worker | ${mib(run.wasmBytes)} | < 512 MB |`);
console.log(`| peak wasm memory of the kernel-loading worker (released after loading) | ${mib(run.loaderBytes)} | |`);
