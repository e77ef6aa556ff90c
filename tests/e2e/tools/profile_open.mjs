// Profiles every thread of the page (V8's sampling profiler, recorded by Chromium's tracing, so a
// worker that ends still counts) while FILE opens to its verdict: the analysis worker and the
// reader worker that scans the kernel table meanwhile. Prints each thread's functions with the
// most self time. Wasm functions show by their Rust names only when the module keeps its name
// section (`wasm-opt -g`; `cargo xtask dist` strips it). Not a test.
// Usage: node tests/e2e/tools/profile_open.mjs FILE [--out TRACE.json]   (needs dist/, or NSYS_LENS_DIST)
import fs from 'node:fs';
import { launch, serve, openTrace, requireDist } from '../helpers.mjs';

const file = process.argv[2];
const outAt = process.argv.indexOf('--out');
const out = outAt > 0 ? process.argv[outAt + 1] : null;

requireDist();
const server = await serve();
const browser = await launch();
let trace;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${server.origin}/`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  await browser.startTracing(page, { categories: ['disabled-by-default-v8.cpu_profiler', '__metadata'] });
  const t0 = Date.now();
  await openTrace(page, file, { timeout: 600_000 });
  console.log(`verdict after ${(Date.now() - t0) / 1000} s`);
  trace = JSON.parse((await browser.stopTracing()).toString());
} finally {
  await browser.close();
  await server.close();
}
if (out) fs.writeFileSync(out, JSON.stringify(trace));
summarize(trace.traceEvents ?? trace);

// Self time per function name and thread, most first.
function summarize(events, top = 40) {
  const threads = new Map();
  for (const e of events) if (e.name === 'thread_name') threads.set(`${e.pid}:${e.tid}`, e.args.name);
  const profiles = new Map(); // pid:id -> {thread, nodes: Map, samples: [], deltas: []}
  for (const e of events) {
    if (e.name !== 'Profile' && e.name !== 'ProfileChunk') continue;
    const key = `${e.pid}:${e.id}`;
    if (!profiles.has(key)) profiles.set(key, { thread: threads.get(`${e.pid}:${e.tid}`) ?? `${e.pid}:${e.tid}`, nodes: new Map(), samples: [], deltas: [] });
    const p = profiles.get(key);
    const data = e.args?.data ?? {};
    for (const n of data.cpuProfile?.nodes ?? []) p.nodes.set(n.id, n);
    p.samples.push(...(data.cpuProfile?.samples ?? []));
    p.deltas.push(...(data.timeDeltas ?? []));
  }
  for (const p of profiles.values()) {
    const self = new Map();
    let total = 0;
    p.samples.forEach((id, i) => {
      const name = p.nodes.get(id)?.callFrame?.functionName || '(anonymous)';
      const t = Math.max(0, p.deltas[i + 1] ?? 0);
      self.set(name, (self.get(name) ?? 0) + t);
      total += t;
    });
    if (total < 2e5) continue;
    console.log(`${p.thread}: ${(total / 1e6).toFixed(2)} s sampled`);
    const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
    for (const [name, t] of rows) console.log(`${(100 * t / total).toFixed(1).padStart(5)}%  ${(t / 1e6).toFixed(2).padStart(6)} s  ${name.slice(0, 140)}`);
  }
}
