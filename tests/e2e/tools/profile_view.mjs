// Profiles the page's analysis worker (V8's sampling profiler over CDP) while one deeper view
// computes: opens FILE, opens the views before VIEW untimed, then VIEW profiled; prints the
// functions with the most self time (wasm functions by their Rust names). Not a test.
// Usage: node tests/e2e/tools/profile_view.mjs FILE [rootcause|drill] [--out PROFILE.cpuprofile]
// [--profile standard|trtllm-skill]
import fs from 'node:fs';
import { launch, serve, openTrace, requireDist } from '../helpers.mjs';

const file = process.argv[2];
const view = process.argv[3] ?? 'drill';
const outAt = process.argv.indexOf('--out');
const out = outAt > 0 ? process.argv[outAt + 1] : null;
const ORDER = ['rootcause', 'drill'];
const profileAt = process.argv.indexOf('--profile');
const PROFILE = profileAt > 0 ? process.argv[profileAt + 1] : 'standard';

requireDist();
const server = await serve();
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const cdp = await page.context().newCDPSession(page);
  const workers = [];
  cdp.on('Target.attachedToTarget', (e) => workers.push(e));
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  await page.goto(`${server.origin}/`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  await page.evaluate((p) => {
    document.querySelector(`input[name=profile][value=${p}]`).checked = true;
  }, PROFILE);
  await openTrace(page, file, { timeout: 600_000 });
  const open = async (name) => {
    const t0 = Date.now();
    await page.click(`[data-testid=tab-${name}]`);
    console.log(`  click on ${name} returned after ${(Date.now() - t0) / 1000} s`);
    await page.waitForFunction((k) => ['done', 'error'].includes(document.body.dataset[k]), `${name}State`, { timeout: 1_800_000 });
    return (Date.now() - t0) / 1000;
  };
  for (const before of ORDER.slice(0, ORDER.indexOf(view))) console.log(`${before}: ${await open(before)} s (not profiled)`);
  // The analysis worker is the first worker the page starts.
  const worker = workers.find((w) => w.targetInfo.type === 'worker');
  if (!worker) throw new Error(`no worker target: ${JSON.stringify(workers.map((w) => w.targetInfo.type))}`);
  let next = 1;
  const pending = new Map();
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    if (e.sessionId !== worker.sessionId) return;
    const msg = JSON.parse(e.message);
    if (msg.id && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    }
  });
  const send = (method, params = {}) => new Promise((resolve) => {
    const id = next++;
    pending.set(id, resolve);
    cdp.send('Target.sendMessageToTarget', { sessionId: worker.sessionId, message: JSON.stringify({ id, method, params }) });
  });
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: 1000 });
  await send('Profiler.start');
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.start');
  console.log(`${view}: ${await open(view)} s (profiled)`);
  const { result } = await send('Profiler.stop');
  const main = (await cdp.send('Profiler.stop')).profile;
  const profile = result.profile;
  if (out) fs.writeFileSync(out, JSON.stringify(profile));
  console.log('analysis worker:');
  summarize(profile);
  console.log('page (main thread):');
  summarize(main, 12);
} finally {
  await browser.close();
  await server.close();
}

// Self time per function name, most first.
function summarize(profile, top = 45) {
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = profile.timeDeltas;
  let total = 0;
  profile.samples.forEach((id, i) => {
    const name = byId.get(id).callFrame.functionName || '(anonymous)';
    const t = dt[i] ?? 0;
    self.set(name, (self.get(name) ?? 0) + t);
    total += t;
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, t] of rows) console.log(`${(100 * t / total).toFixed(1).padStart(5)}%  ${(t / 1e6).toFixed(2).padStart(6)} s  ${name.slice(0, 150)}`);
}
