// Shared pieces of the end-to-end tests: a static server over dist/, headless Chromium through
// playwright-core, the CLI as the oracle, and the public traces.

import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { before, after } from 'node:test';
import { fileURLToPath } from 'node:url';

// `cargo xtask test --full` (before a release) sets NSYS_LENS_FULL=1: the exhaustive sweeps run;
// without it a sweep keeps one representative per behaviour.
export const FULL = !!process.env.NSYS_LENS_FULL && process.env.NSYS_LENS_FULL !== '0';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = process.env.NSYS_LENS_DIST ? path.resolve(process.env.NSYS_LENS_DIST) : path.join(ROOT, 'dist');
export const ARTIFACTS = path.join(ROOT, 'tests', 'artifacts');
export const SHARED = process.env.NSYS_LENS_SHARED ? path.resolve(process.env.NSYS_LENS_SHARED) : path.resolve(ROOT, '..', 'shared');
export const PUBLIC_TRACES = path.join(SHARED, 'traces', 'public');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const METRIC_KEYS = [
  'gpu_idle_ratio',
  'launch_overhead_ratio',
  'gpu_utilization',
  'nccl_ratio',
  'host_prep_exposed_ratio',
  'host_prep_perf_impact',
  'host_prep_idle_attribution',
];

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

// Fails with an actionable message when the site was not built.
export function requireDist() {
  const need = ['index.html', 'app.js', 'worker.js', 'pkg/nsys_lens.js', 'pkg/nsys_lens_bg.wasm'];
  const missing = need.filter((f) => !fs.existsSync(path.join(DIST, f)));
  if (missing.length) {
    throw new Error(
      `the site is not built: ${missing.map((f) => path.join(DIST, f)).join(', ')} missing. ` +
        'Run `cargo xtask dist` (or `cargo xtask test`, which builds it first), then `node --test tests/e2e/`.',
    );
  }
}

// A static file server over `root` on 127.0.0.1 and a free port.
export async function serve(root = DIST) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    let rel = decodeURIComponent(url.pathname);
    if (rel.endsWith('/')) rel += 'index.html';
    const file = path.resolve(root, `.${rel}`);
    if (!file.startsWith(path.resolve(root) + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
        'content-length': st.size,
        'cache-control': 'no-cache',
      });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file).pipe(res);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { server, port, origin: `http://127.0.0.1:${port}`, close: () => {
      server.closeAllConnections?.();
      return new Promise((r) => server.close(r));
    },
  };
}

// The only switches the browsers get: headless, no sandbox (containers), and no background
// network traffic. None changes what a page may do (no file-access, web-security or feature
// switches), so every test sees the browser's defaults.
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Headless Chromium with CHROMIUM_ARGS only: playwright's own default switches (popup blocking
// off, feature overrides …) are left out; it still needs its pipe and a fresh profile.
export async function launch() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium chromium-driver (or set CHROMIUM)`);
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-chromium-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    ignoreDefaultArgs: true,
    args: [...CHROMIUM_ARGS, `--user-data-dir=${profile}`, '--remote-debugging-pipe', '--no-startup-window'],
  });
  const close = browser.close.bind(browser);
  browser.close = async (...args) => {
    await close(...args);
    removeDir(profile);
  };
  return browser;
}

// Removes a browser profile; the browser may still be writing to it as it exits.
export function removeDir(dir) {
  try {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (e) {
    console.error(`could not remove ${dir}: ${e.message}`);
  }
}

// The CLI binary, built on demand.
export function cli() {
  const exe = path.join(ROOT, 'target', 'debug', process.platform === 'win32' ? 'nsys-lens.exe' : 'nsys-lens');
  if (!fs.existsSync(exe)) execFileSync('cargo', ['build', '--quiet', '--bin', 'nsys-lens'], { cwd: ROOT, stdio: 'inherit' });
  return exe;
}

// `nsys-lens ARGS… --json`, parsed.
export function cliJson(args) {
  const out = execFileSync(cli(), [...args, '--json'], { cwd: ROOT, maxBuffer: 256 << 20 });
  return JSON.parse(out.toString('utf8'));
}

// Drops `files` on the page's file input and waits for the analysis run they start to finish.
export async function dropFiles(page, files, timeout = 240_000) {
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', files);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'done', run, { timeout });
}

export function detectJson(file, profile = 'standard') {
  const out = execFileSync(cli(), ['detect', file, '--json', '--profile', profile], { cwd: ROOT, maxBuffer: 64 << 20 });
  return JSON.parse(out.toString('utf8'));
}

// `nsys-lens gen SCENARIO OUT [--scale N]`: the export and its answers (`OUT.answers.json`),
// copied from what this build of the CLI generated before for the same scenario and scale. The
// generator is deterministic, and each test file runs in a process of its own: a scenario several
// files read is generated once (`target/e2e-gen/`, by the CLI's build; written under a name of its
// own, then renamed, so files generating at once never read half of one).
export function generate(scenario, out, scale = null) {
  const exe = cli();
  const built = fs.statSync(exe);
  const dir = path.join(ROOT, 'target', 'e2e-gen', `${Math.round(built.mtimeMs)}-${built.size}`);
  const key = `${scenario}-${scale ?? 1}`;
  const kept = path.join(dir, `${key}.sqlite`);
  const answers = (file) => file.replace(/\.sqlite$/, '.answers.json');
  if (!fs.existsSync(kept)) {
    if (!fs.existsSync(dir)) {
      // A new build of the CLI: what earlier builds generated is not read again.
      const root = path.dirname(dir);
      for (const old of fs.existsSync(root) ? fs.readdirSync(root) : []) {
        if (old !== path.basename(dir)) removeDir(path.join(root, old));
      }
      fs.mkdirSync(dir, { recursive: true });
    }
    const fresh = path.join(dir, `${key}.${process.pid}.sqlite`);
    const args = ['gen', scenario, fresh, ...(scale ? ['--scale', String(scale)] : [])];
    execFileSync(exe, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    fs.renameSync(answers(fresh), answers(kept));
    fs.renameSync(fresh, kept);
  }
  fs.copyFileSync(kept, out);
  if (out.endsWith('.sqlite')) fs.copyFileSync(answers(kept), answers(out));
  return out;
}

export function publicTrace(name) {
  const file = path.join(PUBLIC_TRACES, name);
  if (!fs.existsSync(file)) throw new Error(`public trace missing: ${file} (set NSYS_LENS_SHARED to the shared folder)`);
  return file;
}

export function artifact(name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}

// Records every request of a context; `outside(origin)` lists those that left the page's origin.
export function recordRequests(context) {
  const urls = [];
  context.on('request', (req) => urls.push(req.url()));
  return {
    urls,
    outside(origin) {
      return urls.filter((u) => !(u.startsWith(`${origin}/`) || u.startsWith('blob:') || u.startsWith('data:')));
    },
  };
}

// The page's cards and table cells, as {scope: {metric: value string}}.
export async function readCards(page) {
  return page.evaluate(() => {
    const out = {};
    for (const box of document.querySelectorAll('#cards [data-scope]')) {
      const scope = box.dataset.scope;
      for (const card of box.querySelectorAll('[data-metric]')) {
        (out[scope] ||= {})[card.dataset.metric] = card.dataset.value;
      }
    }
    return out;
  });
}

// What the cards must say, from the CLI report.
export function expectedCards(report) {
  const out = { aggregate: {} };
  for (const k of METRIC_KEYS) out.aggregate[k] = report.aggregate_metrics[k];
  for (const phase of ['context', 'generation']) {
    const p = report.phases?.[phase];
    if (!p) continue;
    out[phase] = {};
    for (const k of METRIC_KEYS) out[phase][k] = p.metrics[k];
  }
  return out;
}

export function parseValue(s) {
  return s === '' || s === undefined ? null : Number.parseFloat(s);
}

// Waits until the page is ready (its analysis worker answered); fails with the page's message
// when it shows an error instead.
export async function waitReady(page, timeout = 60_000) {
  await page.waitForFunction(() => document.body.dataset.ready === '1' || document.body.dataset.state === 'error', undefined, { timeout });
  const { ready, error } = await page.evaluate(() => ({ ready: document.body.dataset.ready, error: document.getElementById('error')?.textContent }));
  if (ready !== '1') throw new Error(`the page is not ready: ${error}`);
}

// Loads `file` through the page's file input and waits for the result (or the error).
export async function openTrace(page, file, { expect = 'done', timeout = 120_000 } = {}) {
  await waitReady(page);
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', file);
  // body[data-run] counts analyses started: wait for this one, then for its outcome (an error
  // ends the wait at once, with the page's message).
  await page.waitForFunction(
    ([r, want]) => Number(document.body.dataset.run || 0) > r && (document.body.dataset.state === want || document.body.dataset.state === 'error'),
    [run, expect],
    { timeout },
  );
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== expect) {
    const message = await page.evaluate(() => document.getElementById('error')?.textContent || '');
    throw new Error(`${path.basename(file)}: the page ended in state ${state}, not ${expect}: ${message}`);
  }
}

// How many opens of this page had their kernel table read by the reader worker (its part
// handed to the analysis worker: the page's `nsys-lens:reader` marks).
export async function readerOpens(page) {
  return page.evaluate(() => performance.getEntriesByName('nsys-lens:reader').length);
}

// The page's verdict, every metric card's value and each phase verdict against the CLI's
// `detect --json` for the same file; returns the report and how many cards were compared.
export async function assertMatchesCli(page, file, profile = 'standard') {
  const name = path.basename(file);
  const report = detectJson(file, profile);
  const verdict = await page.textContent('[data-testid=verdict]');
  assert.equal(verdict, report.verdict, `verdict of ${name} (${profile})`);
  assert.ok(verdict === 'YES' || verdict === 'NO');
  // What bounds the run, first: the CLI's kind and evidence, or nothing under trtllm-skill.
  // (Playwright and Puppeteer pages alike: plain DOM reads.)
  const shown = await page.evaluate(() => {
    const box = document.querySelector('[data-testid=bound]');
    const text = (id) => document.querySelector(`[data-testid=${id}]`)?.textContent;
    return { hidden: box.hidden, kind: text('bound-kind'), evidence: text('bound-evidence') };
  });
  if (report.bound) {
    assert.equal(shown.hidden, false, `bound of ${name} shown`);
    assert.equal(shown.kind, report.bound.label, `bound of ${name}`);
    assert.equal(shown.evidence, report.bound.evidence, `bound evidence of ${name}`);
  } else {
    assert.equal(shown.hidden, true, `no bound under ${profile}`);
  }
  const cards = await readCards(page);
  const want = expectedCards(report);
  assert.deepEqual(Object.keys(cards).sort(), Object.keys(want).sort(), `scopes with cards for ${name}`);
  let compared = 0;
  for (const [scope, metrics] of Object.entries(want)) {
    for (const key of METRIC_KEYS) {
      assert.ok(key in cards[scope], `${scope} card ${key} missing`);
      const got = parseValue(cards[scope][key]);
      assert.equal(got, metrics[key], `${name} ${profile} ${scope}.${key}: page ${cards[scope][key]} vs CLI ${metrics[key]}`);
      compared++;
    }
  }
  for (const phase of ['context', 'generation']) {
    if (!report.phases?.[phase]) continue;
    assert.equal(await page.textContent(`[data-testid=verdict-${phase}]`), report.phases[phase].verdict, `${phase} verdict`);
  }
  return { report, compared };
}

// Waits until the timeline canvas has been drawn; returns its pixel statistics.
export async function timelineDrawn(page, canvas = '[data-testid=timeline]') {
  await page.waitForFunction((sel) => Number(document.querySelector(sel).dataset.drawn || 0) > 0, canvas, { timeout: 60_000 });
  return canvasStats(page, canvas);
}

// Waits until the timeline asks for no view (its `data-busy`), two frames on: a resize's
// observer, which asks for a view at the new width, has run by then.
export async function timelineSettled(page, canvas = '[data-testid=timeline]', timeout = 300_000) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.busy === '0', canvas, { timeout });
}

// Pixels of a canvas that differ from white, and a hash of its content.
export async function canvasStats(page, selector) {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const ctx = c.getContext('2d');
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    let ink = 0;
    let hash = 2166136261;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink++;
      hash = Math.imul(hash ^ (data[i] + 3 * data[i + 1] + 7 * data[i + 2]), 16777619) >>> 0;
    }
    return { width: c.width, height: c.height, ink, hash, drawn: c.dataset.drawn || '' };
  }, selector);
}

// The served site in a fresh browser page: every request that is not the local site is blocked
// (and recorded), page errors and console errors are collected; `initScript` runs in the page
// before its own scripts (to pose as another machine). `close()` ends it all.
// The site the `useSite` calls of one test process share when they ask for no context options,
// opened by the first and closed once the process's tests are done.
let sharedSite = null;

// One served site and browser page for a test module, with a temporary directory named by
// `prefix`: opened before its tests (handed to `opened` as { site, page, problems, tmp }), closed
// after. Modules of one test file (`views.test.mjs`) that ask for no context options share one
// site and page, read in turn: a first visit costs 2.6 s of CPU (the browser, the page loaded,
// its service worker installed, the page reloaded isolated).
export function useSite(prefix, opened, contextOptions = {}) {
  const s = { site: null, page: null, problems: null, tmp: null };
  const own = Object.keys(contextOptions).length > 0;
  if (!own && !sharedSite) {
    sharedSite = { opening: null };
    const shared = sharedSite;
    after(async () => (await shared.opening)?.close());
  }
  const shared = sharedSite;
  before(async () => {
    requireDist();
    s.tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    if (own) s.site = await openSite(contextOptions);
    else s.site = await (shared.opening ??= openSite());
    ({ page: s.page, problems: s.problems } = s.site);
    opened(s);
  });
  after(async () => {
    if (own) await s.site?.close();
    if (s.tmp) removeDir(s.tmp);
  });
}

export async function openSite(contextOptions = {}, initScript = null) {
  const srv = await serve();
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...contextOptions });
  const requests = recordRequests(context);
  if (initScript) await context.addInitScript(initScript);
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${srv.origin}/`) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
  });
  await page.goto(`${srv.origin}/`);
  await waitReady(page);
  return {
    srv,
    browser,
    page,
    requests,
    problems,
    close: async () => {
      await browser.close();
      await srv.close();
    },
  };
}

// Opens the tab of view `name` (`rootcause`, `drill`) and waits until it is done; fails with the
// view's own error message otherwise.
export async function showView(page, name, timeout = 240_000) {
  await page.click(`[data-testid=tab-${name}]`);
  await page.waitForFunction((n) => ['done', 'error'].includes(document.body.dataset[`${n}State`]), name, { timeout });
  const state = await page.evaluate((n) => document.body.dataset[`${n}State`], name);
  const why = state === 'done' ? '' : await page.textContent(`[data-testid=${name}-error]`).catch(() => '');
  assert.equal(state, 'done', `${name} view failed: ${why}`);
}

// The native command's wall time and peak resident set (GNU time's `-v` report).
export function nativeRun(cli, args) {
  const t0 = process.hrtime.bigint();
  const run = spawnSync('/usr/bin/time', ['-v', cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const out = run.stderr.toString();
  if (run.status !== 0) throw new Error(`${path.basename(cli)} ${args.join(' ')} failed: ${out.slice(-2000)}`);
  const kib = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(out)?.[1] ?? 0);
  return { seconds, rssBytes: kib * 1024 };
}
