// Browser benchmark of many rank files (issue 50: "8 exports of 500 MB in the page within
// 512 MiB"): the generated TP=4 straggler run at `--scale`, written as one file per rank the
// way tests/e2e/views/ranks.mjs writes it (each file keeps one device's kernels and every host
// row, its kernels shifted by a planted clock error), the four written twice over as `--files`
// files (ranks 4–7 are copies of ranks 0–3 under other clock errors). All dropped on the page
// at once, as a user drops a run's rank files: the time from the drop to the Drill-down's Ranks
// panel, and the analysis and reader workers' wasm memory, next to the native
// `nsys-lens ranks FILE…` (wall time, peak resident memory). Prints figures; not a test.
// Usage: node tests/e2e/tools/bench_ranks.mjs [--scale N] [--files N] [--cli PATH] [--page-only]
//        [--site DIR]
// (needs dist/: cargo xtask dist)
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

import { ROOT, launch, dropFiles, nativeRun, requireDist, serve, showView } from '../helpers.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const SCALE = Number(arg('--scale', '3000'));
const FILES = Number(arg('--files', '8'));
const SHIFTS = [0, 137_000, -420_000, 1_000_000, 250_000, -90_000, 600_000, -300_000];

function releaseCli() {
  const given = arg('--cli', null);
  if (given) return path.resolve(given);
  execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'nsys-lens'], { cwd: ROOT, stdio: 'inherit' });
  return path.join(ROOT, 'target', 'release', 'nsys-lens');
}

// The rank files, cached under target/bench/ by scale.
function rankFiles(cli) {
  const dir = path.join(ROOT, 'target', 'bench', `ranks-tp4-scale${SCALE}`);
  fs.mkdirSync(dir, { recursive: true });
  const one = path.join(dir, 'tp4.sqlite');
  if (!fs.existsSync(one)) execFileSync(cli, ['gen', 'tp4-straggler', one, '--scale', String(SCALE)], { stdio: 'inherit' });
  return Array.from({ length: FILES }, (_, i) => {
    const file = path.join(dir, `trace_rank${i}.sqlite`);
    if (fs.existsSync(file)) return file;
    const device = i % 4;
    const shift = SHIFTS[i % SHIFTS.length];
    fs.copyFileSync(one, `${file}.part`);
    const sql = `DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId != ${device}; UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + ${shift}, end = end + ${shift}; VACUUM;`;
    execFileSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()', `${file}.part`, sql]);
    fs.renameSync(`${file}.part`, file);
    return file;
  });
}


async function browserRun(origin, files) {
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/`);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
    const t0 = Date.now();
    await dropFiles(page, files, 3_600_000);
    const verdictSeconds = (Date.now() - t0) / 1000;
    const workerBytes = async () => Math.max(0, ...(await Promise.all(page.workers().map((w) => w.evaluate(() => self.nsysLensWasmMemoryBytes?.() ?? 0).catch(() => 0)))));
    const verdictBytes = await workerBytes();
    await showView(page, 'drill', 3_600_000);
    await page.waitForFunction(() => document.querySelector('[data-testid=drill-ranks]')?.ranksView, null, { timeout: 3_600_000 });
    const ranksSeconds = (Date.now() - t0) / 1000;
    const analysisBytes = await workerBytes();
    const readers = await page.evaluate(() => performance.getEntriesByName('nsys-lens:reader').map((e) => e.detail?.wasmBytes ?? 0));
    const opens = await page.evaluate(() => performance.getEntriesByName('nsys-lens:opened').map((e) => e.detail?.wasmBytes ?? 0));
    const shown = await page.evaluate(() => document.querySelector('[data-testid=drill-ranks]').ranksView);
    return { verdictSeconds, ranksSeconds, analysisBytes, verdictBytes, readerBytes: Math.max(0, ...readers), opens, ranks: shown.ranks?.ranks?.length ?? 0 };
  } finally {
    await browser.close();
  }
}

requireDist();
const cli = releaseCli();
const files = rankFiles(cli);
const sizes = files.map((f) => fs.statSync(f).size);
// `--page-only`: the page alone (the native figures are printed as not measured).
const native = process.argv.includes('--page-only') ? null : nativeRun(cli, ['ranks', ...files, '--json', '-o', '/dev/null']);
// `--site DIR`: serve a copy of dist/ (a build may go on meanwhile).
const { origin, close } = await serve(path.resolve(arg('--site', path.join(ROOT, 'dist'))));
let run;
try {
  run = await browserRun(origin, files);
} finally {
  close();
}
const mib = (b) => `${(b / (1 << 20)).toFixed(0)} MiB`;
console.log(`\n${FILES} rank files of gen tp4-straggler --scale ${SCALE}: ${mib(Math.min(...sizes))}–${mib(Math.max(...sizes))} each, ${mib(sizes.reduce((a, b) => a + b, 0))} in all\n`);
console.log('| measure | value | goal |');
console.log('|---|---:|---|');
console.log(`| ranks the page shows | ${run.ranks} | ${FILES} |`);
console.log(`| page: drop → verdict | ${run.verdictSeconds.toFixed(1)} s | |`);
console.log(`| page: drop → Ranks panel | ${run.ranksSeconds.toFixed(1)} s | |`);
console.log(`| native \`ranks FILE… --json\` | ${native ? `${native.seconds.toFixed(1)} s` : 'not measured'} | |`);
console.log(`| wasm memory of the analysis worker, every file open and its verdict shown | ${mib(run.verdictBytes)} | < 512 MiB |`);
console.log(`| wasm memory of the analysis worker, the Ranks panel shown | ${mib(run.analysisBytes)} | < 512 MiB |`);
console.log(`| largest wasm memory of a reader worker (each ends after its scan) | ${mib(run.readerBytes)} | < 512 MiB |`);
console.log(`| wasm memory of the analysis worker after each file's open and verdict | ${run.opens.map(mib).join(', ')} | |`);
console.log(`| native peak RSS | ${native ? mib(native.rssBytes) : 'not measured'} | |`);
