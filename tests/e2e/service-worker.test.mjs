// End-to-end: the first visit over http reloads itself once through the service worker, which
// serves the site's own assets cross-origin isolated, so the page loads and analyses a trace
// with the server gone; a file taken before the worker is active is kept, not reloaded away; a
// worker whose install fails is not waited for.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireDist, serve, launch, detectJson, generate, openTrace, artifact, DIST } from './helpers.mjs';

const TIMEOUT = 240_000;
let browser;
let tmp;

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-sw-'));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// How many times the page's document was loaded (the main frame navigated) since this call.
function countLoads(page) {
  const seen = { loads: 0 };
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) seen.loads += 1;
  });
  return seen;
}

test('the hosted page reloads itself once on the first visit to come back cross-origin isolated, and works offline after it', { timeout: TIMEOUT }, async () => {
  const srv = await serve();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const seen = countLoads(page);
  await page.goto(`${srv.origin}/`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  // Served through the worker, the page is cross-origin isolated (the server sends no COOP/COEP,
  // as GitHub Pages sends none): its workers may share memory.
  assert.equal(seen.loads, 2, 'loaded, then reloaded once by the page itself');
  assert.equal(await page.evaluate(() => !!navigator.serviceWorker.controller && self.crossOriginIsolated), true, 'the reloaded page is served by the worker, cross-origin isolated');
  const cached = await page.evaluate(async () => {
    const keys = await caches.keys();
    const cache = await caches.open(keys.find((k) => k.startsWith('nsys-lens-')));
    return (await cache.keys()).map((r) => new URL(r.url).pathname);
  });
  for (const asset of ['/pkg/nsys_lens.js', '/pkg/nsys_lens_bg.wasm', '/worker.js', '/app.js', '/ui/timeline.js']) {
    assert.ok(cached.includes(asset), `${asset} is cached (${cached.join(', ')})`);
  }

  // Isolated, a cancel reaches the analysis worker through shared memory as well: the open
  // stops and the page stays usable.
  const big = generate('host-bound', path.join(tmp, 'big.sqlite'), 250);
  await page.setInputFiles('#file-input', big);
  await page.waitForSelector('body[data-state="loading"]', { timeout: 30_000 });
  await page.click('[data-testid=cancel]');
  await page.waitForSelector('body[data-state="idle"]', { timeout: 30_000 });

  // The server is gone and the browser is offline: the page still loads and analyses, with no
  // reload of its own (isolated already).
  await srv.close();
  await context.setOffline(true);
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  assert.equal(seen.loads, 3, 'the reload asked, and none of its own');
  const file = generate('host-bound', path.join(tmp, 'host-bound.sqlite'));
  await openTrace(page, file, { timeout: TIMEOUT });
  assert.equal(await page.textContent('[data-testid=verdict]'), detectJson(file).verdict);
  await page.screenshot({ path: artifact('service-worker-offline.png') });
  await context.close();
});

test('a file taken before the service worker is active is opened, not reloaded away', { timeout: TIMEOUT }, async () => {
  const srv = await serve();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The worker's registration waits for the test's word, so the file is surely taken first.
  await context.addInitScript(() => {
    const container = navigator.serviceWorker;
    const register = container.register.bind(container);
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    window.releaseServiceWorker = release;
    container.register = (...args) => released.then(() => register(...args));
  });
  const page = await context.newPage();
  const seen = countLoads(page);
  try {
    await page.goto(`${srv.origin}/`);
    const file = generate('host-bound', path.join(tmp, 'taken-first.sqlite'));
    await page.setInputFiles('#file-input', file);
    await page.evaluate(() => window.releaseServiceWorker());
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: TIMEOUT });
    assert.equal(await page.textContent('[data-testid=verdict]'), detectJson(file).verdict);
    // The worker is active now, and the page kept its file.
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => new Promise((resolve) => setTimeout(resolve, 500))));
    assert.equal(seen.loads, 1, 'no reload once a file was taken');
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), false, 'not isolated until the next visit');
  } finally {
    await context.close();
    await srv.close();
  }
});

test('a service worker whose install fails: the page is ready without waiting out its limit, unisolated', { timeout: TIMEOUT }, async () => {
  // A copy of the site missing one asset the worker caches: its install fails.
  const site = path.join(tmp, 'site-missing-an-asset');
  fs.cpSync(DIST, site, { recursive: true });
  fs.rmSync(path.join(site, 'favicon.svg'));
  const srv = await serve(site);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const seen = countLoads(page);
  try {
    await page.goto(`${srv.origin}/`);
    // Well within the 15 s the page would wait for a worker that installs.
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10_000 });
    assert.equal(seen.loads, 1, 'no reload');
    assert.equal(await page.evaluate(() => self.crossOriginIsolated), false);
    const file = generate('host-bound', path.join(tmp, 'install-failed.sqlite'));
    await openTrace(page, file, { timeout: TIMEOUT });
    assert.equal(await page.textContent('[data-testid=verdict]'), detectJson(file).verdict);
  } finally {
    await context.close();
    await srv.close();
  }
});
