// End-to-end: after one visit over http, the service worker serves the site's own assets, so the
// page loads and analyses a trace with the server gone.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireDist, serve, launch, detectJson, generate, openTrace, artifact } from './helpers.mjs';

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

test('the hosted page works offline after the first visit, cross-origin isolated', { timeout: TIMEOUT }, async () => {
  const srv = await serve();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${srv.origin}/`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), false, 'the first visit, before the service worker, is not isolated');
  // Installed and controlling (reload once so the first page is controlled too).
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  await page.reload();
  await page.waitForFunction(() => !!navigator.serviceWorker.controller, null, { timeout: 30_000 });
  // Served through the worker, the page is cross-origin isolated (the server sends no COOP/COEP,
  // as GitHub Pages sends none): its workers may share memory.
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), true, 'the page loaded through the service worker is cross-origin isolated');
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

  // The server is gone and the browser is offline: the page still loads and analyses.
  await srv.close();
  await context.setOffline(true);
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  const file = generate('host-bound', path.join(tmp, 'host-bound.sqlite'));
  await openTrace(page, file, { timeout: TIMEOUT });
  assert.equal(await page.textContent('[data-testid=verdict]'), detectJson(file).verdict);
  await page.screenshot({ path: artifact('service-worker-offline.png') });
  await context.close();
});
