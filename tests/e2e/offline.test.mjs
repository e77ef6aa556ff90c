// End-to-end: dist/nsys-lens-offline.html opened from file:// in headless Chromium with its
// default settings (no switch lets a file:// page do more: see helpers.mjs), every network
// request blocked, analyses real traces exactly like the CLI.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DIST,
  launch,
  generate,
  publicTrace,
  artifact,
  waitReady,
  openTrace,
  timelineDrawn,
  assertMatchesCli,
  readerOpens,
  cliJson,
} from './helpers.mjs';

const TIMEOUT = 240_000;
const OFFLINE = path.join(DIST, 'nsys-lens-offline.html');
let browser;
let tmp;

before(async () => {
  if (!fs.existsSync(OFFLINE)) {
    throw new Error(`${OFFLINE} missing: run \`cargo xtask dist\` (or \`cargo xtask test\`) first`);
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-offline-'));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

test('the offline file\'s policy: hashed inline code, Blob workers, wasm, no fetch, no eval', () => {
  const html = fs.readFileSync(OFFLINE, 'utf8');
  const policy = html.match(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/)?.[1];
  assert.ok(policy, 'a CSP meta');
  const directives = Object.fromEntries(policy.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
  assert.deepEqual(directives['default-src'], ["'none'"]);
  assert.deepEqual(directives['connect-src'], ["'none'"]);
  assert.deepEqual(directives['worker-src'], ['blob:']);
  assert.ok(directives['script-src'].every((s) => /^'sha256-[A-Za-z0-9+/=]+'$/.test(s) || s === "'wasm-unsafe-eval'"), `script-src: ${directives['script-src']}`);
  assert.ok(!/'unsafe-eval'|'unsafe-inline'/.test(policy), policy);
});

test('offline single file from file:// analyses real traces like the CLI, with the network blocked', { timeout: TIMEOUT }, async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const requests = [];
  const pageUrl = pathToFileURL(OFFLINE).href;
  await context.route('**/*', (route) => {
    const url = route.request().url();
    requests.push(url);
    // Only the page itself (file://) and in-memory URLs; everything else is refused.
    if (url === pageUrl || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    return route.abort('blockedbyclient');
  });
  context.on('request', (r) => requests.push(r.url()));
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
  });
  await page.goto(pageUrl);
  await waitReady(page);
  assert.equal(await page.evaluate(() => location.protocol), 'file:');

  for (const file of [
    publicTrace('NVIDIA_Fuser__ee4fcf3__report1.sqlite'),
    generate('host-bound', path.join(tmp, 'host-bound.sqlite')),
    publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite'),
  ]) {
    await openTrace(page, file, { timeout: TIMEOUT });
    await assertMatchesCli(page, file);
    assert.ok((await timelineDrawn(page)).ink > 500, `timeline drawn for ${path.basename(file)}`);
    // What would it buy: the card's answer is the CLI's, from file:// too.
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.whatifState), null, { timeout: TIMEOUT });
    const shown = await page.evaluate(() => document.getElementById('whatif').whatifView?.whatif);
    assert.deepEqual(shown, cliJson(['whatif', file]), `what-if card of ${path.basename(file)}`);
    if (file.includes('NVIDIA_Fuser')) await page.screenshot({ path: artifact('offline-chromium-NVIDIA_Fuser.png'), fullPage: true });
  }
  await page.screenshot({ path: artifact('offline-file-url.png') });
  assert.equal(await readerOpens(page), 3, 'each kernel table read by the reader worker (a Blob worker too)');

  const outside = requests.filter((u) => !(u === pageUrl || u.startsWith('blob:') || u.startsWith('data:')));
  assert.deepEqual([...new Set(outside)], [], 'requests other than the page itself');
  assert.deepEqual(problems, [], 'page errors / console errors');
  await context.close();
});
