// How fast a worker reads a picked file with `FileReaderSync`, by the size of each read: what
// the page's blob VFS (`crate/src/web/vfs.rs`) reads a table scan in; beside it, the same reads
// with `await blob.arrayBuffer()` and one `file.stream()` of the whole. Headless Chromium with
// the suite's switches; one worker, then two reading at once (the page's analysis and reader
// workers). Prints MiB/s per read size (sync / arrayBuffer / stream); not a test. The file is
// read up to 256 MiB per size.
// Usage: node tests/e2e/tools/read_sizes.mjs FILE [--sizes 1,4,8,16] [--workers 1,2]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, removeDir, serve } from '../helpers.mjs';

const file = process.argv[2];
if (!file || !fs.existsSync(file)) throw new Error('usage: read_sizes.mjs FILE [--sizes 1,4,8,16] [--workers 1,2]');
const listArg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return (at > 0 ? process.argv[at + 1] : fallback).split(',').map(Number);
};
const SIZES = listArg('--sizes', '1,4,8,16');
const WORKERS = listArg('--workers', '1,2');

// The worker reads the file three ways per size, each read copied into one buffer (as the VFS
// copies a read into its blocks), and answers `[[MiB, sync, arrayBuffer, stream MiB/s], …]`.
const WORKER = `onmessage = async (e) => {
  const { file, sizes } = e.data;
  const reader = new FileReaderSync();
  const upTo = Math.min(file.size, 256 << 20);
  const out = [];
  for (const mib of sizes) {
    const step = Math.round(mib * 1048576);
    const into = new Uint8Array(step);
    const rate = (t0) => upTo / (1 << 20) / ((performance.now() - t0) / 1000);
    let t0 = performance.now();
    for (let at = 0; at < upTo; at += step) {
      const read = new Uint8Array(reader.readAsArrayBuffer(file.slice(at, at + step)));
      into.set(read.subarray(0, Math.min(read.length, step)));
    }
    const sync = rate(t0);
    t0 = performance.now();
    for (let at = 0; at < upTo; at += step) {
      const read = new Uint8Array(await file.slice(at, at + step).arrayBuffer());
      into.set(read.subarray(0, Math.min(read.length, step)));
    }
    const buffer = rate(t0);
    t0 = performance.now();
    const chunks = file.slice(0, upTo).stream().getReader();
    while (!(await chunks.read()).done);
    const stream = rate(t0);
    out.push([mib, sync, buffer, stream]);
  }
  postMessage(out);
};`;

const PAGE = `<!doctype html><input type=file id=f><script>
document.getElementById('f').onchange = async (e) => {
  const { workers, sizes } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  const url = URL.createObjectURL(new Blob([${JSON.stringify(WORKER)}]));
  const runs = Array.from({ length: workers }, () => new Promise((done) => {
    const w = new Worker(url);
    w.onmessage = (m) => { done(m.data); w.terminate(); };
    w.postMessage({ file: e.target.files[0], sizes });
  }));
  window.readSizes = await Promise.all(runs);
};
</script>`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-read-sizes-'));
fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
const srv = await serve(dir);
const browser = await launch();
try {
  console.log(`| \`FileReaderSync\` / \`arrayBuffer()\` / stream reads of ${path.basename(file)}, MiB/s | ${SIZES.map((s) => `${s} MiB`).join(' | ')} |`);
  console.log(`|---|${SIZES.map(() => '---:').join('|')}|`);
  for (const workers of WORKERS) {
    const page = await browser.newPage();
    await page.goto(`${srv.origin}/#${encodeURIComponent(JSON.stringify({ workers, sizes: SIZES }))}`);
    await page.setInputFiles('#f', file);
    await page.waitForFunction(() => window.readSizes, null, { timeout: 600_000 });
    const runs = await page.evaluate(() => window.readSizes);
    runs.forEach((run, i) => {
      const label = workers === 1 ? 'one worker' : `worker ${i + 1} of ${workers} reading at once`;
      console.log(`| ${label} | ${run.map(([, sync, buffer, stream]) => `${sync.toFixed(0)} / ${buffer.toFixed(0)} / ${stream.toFixed(0)}`).join(' | ')} |`);
    });
    await page.close();
  }
} finally {
  await browser.close();
  await srv.close();
  removeDir(dir);
}
