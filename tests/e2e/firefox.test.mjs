// End-to-end in stock Firefox (firefox-esr, its defaults: see firefox.mjs): the offline file from
// file:// and the site served on 127.0.0.1 analyse real traces exactly like the CLI. Skipped, with
// the reason printed, only when the Firefox binary is absent (`cargo xtask setup` installs it).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DIST,
  requireDist,
  serve,
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
import { firefoxMissing, launchFirefox, asPage } from './firefox.mjs';

const TIMEOUT = 240_000;
const OFFLINE = path.join(DIST, 'nsys-lens-offline.html');
const skip = firefoxMissing() || false;
if (skip) console.log(`Firefox tests skipped: ${skip}`);
let browser;
let tmp;

before(async () => {
  if (skip) return;
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-firefox-e2e-'));
  browser = await launchFirefox();
});

after(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// A fresh tab recording its requests, page errors and console errors.
async function newTab() {
  const raw = await browser.newPage();
  await raw.setViewport({ width: 1280, height: 900 });
  const requests = [];
  const problems = [];
  raw.on('request', (r) => requests.push(r.url()));
  raw.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  raw.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
  });
  return { page: asPage(raw), raw, requests, problems };
}

test('Firefox: the offline file from file:// analyses real traces like the CLI', { skip, timeout: TIMEOUT }, async () => {
  const { page, raw, requests, problems } = await newTab();
  const pageUrl = pathToFileURL(OFFLINE).href;
  await page.goto(pageUrl);
  await waitReady(page);
  assert.equal(await page.evaluate(() => location.protocol), 'file:');
  for (const file of [publicTrace('NVIDIA_Fuser__ee4fcf3__report1.sqlite'), generate('host-bound', path.join(tmp, 'host-bound.sqlite'))]) {
    await openTrace(page, file, { timeout: TIMEOUT });
    await assertMatchesCli(page, file);
    assert.ok((await timelineDrawn(page)).ink > 500, `timeline drawn for ${path.basename(file)}`);
    if (file.includes('NVIDIA_Fuser')) await page.screenshot({ path: artifact('offline-firefox-NVIDIA_Fuser.png'), fullPage: true });
  }
  assert.equal(await readerOpens(page), 2, 'each kernel table read by the reader worker');
  const outside = requests.filter((u) => !(u === pageUrl || u.startsWith('blob:') || u.startsWith('data:')));
  assert.deepEqual([...new Set(outside)], [], 'requests other than the page itself');
  assert.deepEqual(problems, [], 'page errors / console errors');
  await raw.close();
});

test('Firefox: the served page analyses real traces like the CLI, both profiles', { skip, timeout: TIMEOUT }, async () => {
  const srv = await serve();
  try {
    const { page, raw, requests, problems } = await newTab();
    await page.goto(`${srv.origin}/`);
    await waitReady(page);
    for (const file of [publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite'), path.join(tmp, 'host-bound.sqlite')]) {
      if (!fs.existsSync(file)) generate('host-bound', file);
      await openTrace(page, file, { timeout: TIMEOUT });
      await assertMatchesCli(page, file);
    }
    assert.equal(await readerOpens(page), 2, 'each kernel table read by the reader worker');
    await raw.click('[data-testid=profile-trtllm-skill]');
    await page.waitForFunction(() => document.body.dataset.profile === 'trtllm-skill' && document.body.dataset.state === 'done', null, { timeout: 60_000 });
    await assertMatchesCli(page, path.join(tmp, 'host-bound.sqlite'), 'trtllm-skill');
    assert.ok((await timelineDrawn(page)).ink > 500, 'timeline drawn');
    const outside = requests.filter((u) => !(u.startsWith(`${srv.origin}/`) || u.startsWith('blob:') || u.startsWith('data:')));
    assert.deepEqual([...new Set(outside)], [], 'requests outside the local site');
    assert.deepEqual(problems, [], 'page errors / console errors');
    await raw.close();
  } finally {
    await srv.close();
  }
});

test('Firefox: served through its service worker the page is cross-origin isolated, and a trace whose rows are not kept is read by lane workers: its verdict and Drill-down equal the CLI', { skip, timeout: TIMEOUT }, async () => {
  const srv = await serve();
  try {
    const { page, raw, problems } = await newTab();
    // The first visit reloads itself through the service worker.
    await page.goto(`${srv.origin}/?rows=file`);
    await waitReady(page);
    assert.equal(await page.evaluate(() => !!navigator.serviceWorker.controller && self.crossOriginIsolated), true);
    // 128,000 kernels and as many launch calls, none kept: past the 16 ranges lanes start for.
    const file = generate('host-bound', path.join(tmp, 'host-bound-lanes.sqlite'), 100);
    await openTrace(page, file, { timeout: TIMEOUT });
    await assertMatchesCli(page, file);
    await page.waitForFunction(() => performance.getEntriesByName('nsys-lens:lanes').length > 0, null, { timeout: 60_000 });
    await raw.click('[data-testid=tab-drill]');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.drillState), null, { timeout: TIMEOUT });
    assert.equal(await page.evaluate(() => document.body.dataset.drillState), 'done');
    const want = cliJson(['drill', file, '--top', '10']);
    const summary = await page.evaluate(() => ({ ...document.querySelector('[data-testid=drill-gap-summary]').dataset }));
    assert.equal(Number(summary.gaps), want.gaps.gaps);
    assert.equal(Number.parseFloat(summary.totalUs), want.gaps.total_us);
    assert.deepEqual(problems, [], 'page errors / console errors');
    await raw.close();
  } finally {
    await srv.close();
  }
});
