// End-to-end: an analysis worker that cannot start, or dies, is an error on the page — never a
// page that says it is ready and then fails on the first file. The served site in headless
// Chromium (browser defaults); the worker's failures are real ones: its script missing, or an
// uncaught exception inside the running worker.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireDist, serve, launch, openSite, generate, openTrace, assertMatchesCli, publicTrace, waitReady } from './helpers.mjs';

const TIMEOUT = 240_000;
let tmp;
let trace;

before(() => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-worker-failure-'));
  trace = generate('host-bound', path.join(tmp, 'host-bound.sqlite'));
});

after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const pageState = (page) =>
  page.evaluate(() => ({
    state: document.body.dataset.state,
    ready: document.body.dataset.ready ?? null,
    run: document.body.dataset.run ?? null,
    error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
  }));

test('the worker script cannot load: the page shows why and what to do, and never says ready', { timeout: TIMEOUT }, async () => {
  const srv = await serve();
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.route(`${srv.origin}/worker.js`, (route) => route.fulfill({ status: 404, contentType: 'text/plain', body: 'not found' }));
    await page.goto(`${srv.origin}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 60_000 });
    const s = await pageState(page);
    assert.equal(s.ready, null, 'the page is not marked ready');
    assert.match(s.error, /The analysis worker could not start: its script could not be loaded or run\./);
    assert.match(s.error, /reload the page/i, 'says what to do');
    // A file given now starts nothing and the error stays.
    await page.setInputFiles('#file-input', trace);
    await page.waitForTimeout(500);
    const after = await pageState(page);
    assert.equal(after.run, null, 'no analysis started');
    assert.equal(after.state, 'error');
  } finally {
    await browser.close();
    await srv.close();
  }
});

test('the analysis worker dies after a trace was analysed: an error on the page; the next file analyses anew', { timeout: TIMEOUT }, async () => {
  const site = await openSite();
  try {
    const { page } = site;
    await openTrace(page, trace, { timeout: TIMEOUT });
    await assertMatchesCli(page, trace);
    // The what-if card settled: its helper worker, which ends with it, is gone.
    await page.waitForFunction(() => ['done', 'error', 'waiting'].includes(document.body.dataset.whatifState), null, { timeout: TIMEOUT });
    // An uncaught exception in every worker of the page (the analysis worker and its idle
    // loader): each reports it to the page as its error event.
    const workers = page.workers();
    assert.ok(workers.length >= 1, 'the page runs workers');
    // (A worker that ended since it was listed cannot crash; the analysis worker does not end.)
    for (const w of workers) await w.evaluate(() => setTimeout(() => { throw new Error('simulated crash'); })).catch((e) => assert.match(e.message, /closed/));
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 30_000 });
    const s = await pageState(page);
    assert.match(s.error, /The analysis worker stopped: Uncaught Error: simulated crash\./);
    assert.match(s.error, /drop the file again/i, 'says what to do');
    // A fresh worker takes the next file.
    await openTrace(page, trace, { timeout: TIMEOUT });
    await assertMatchesCli(page, trace);
  } finally {
    await site.close();
  }
});

// The copy of the real `mfu_2gpu_after` export that once hung the page (issue 48): two bit
// flips in NVTX_EVENTS pages leave a rowid out of order in its b-tree.
function twoFlipCopy(dir) {
  const bytes = fs.readFileSync(publicTrace('GindaChen_nsys-ai__mfu_2gpu_after.sqlite'));
  assert.equal(bytes[105020], 224, 'the public export is the one the flips were found on');
  assert.equal(bytes[1687256], 0);
  bytes[105020] = 232;
  bytes[1687256] = 64;
  const out = path.join(dir, 'mfu_2gpu_after.two-flips.sqlite');
  fs.writeFileSync(out, bytes);
  return out;
}

test('an export whose b-tree is out of order ends in a clear refusal naming the table, and the page stays usable', { timeout: TIMEOUT }, async () => {
  const damaged = twoFlipCopy(tmp);
  const site = await openSite();
  try {
    const { page } = site;
    const started = Date.now();
    await openTrace(page, damaged, { expect: 'error', timeout: 30_000 });
    console.log(`# two-flip export refused in ${Date.now() - started} ms (page)`);
    const s = await pageState(page);
    assert.match(s.error, /damaged/);
    assert.match(s.error, /NVTX_EVENTS/);
    assert.match(s.error, /out of order/);
    await openTrace(page, trace, { timeout: TIMEOUT });
    await assertMatchesCli(page, trace);
    assert.deepEqual(site.problems, []);
  } finally {
    await site.close();
  }
});

test('a worker that makes no progress is ended by the watchdog with a clear error; the next file analyses anew', { timeout: TIMEOUT }, async () => {
  const site = await openSite();
  try {
    const { page } = site;
    // A watchdog of 3 s (the page's `?watchdog=` setting) keeps the test short.
    await page.goto(`${site.srv.origin}/?watchdog=3`);
    await waitReady(page);
    // The analysis worker is stuck in a synchronous loop, as the core was on a damaged file:
    // it can neither answer nor beat.
    for (const w of page.workers()) w.evaluate(() => { for (;;); }).catch(() => {});
    const started = Date.now();
    await page.setInputFiles('#file-input', trace);
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 30_000 });
    const waited = Date.now() - started;
    const s = await pageState(page);
    assert.match(s.error, /made no progress for 3 s/);
    assert.match(s.error, /PRAGMA integrity_check/, 'says how to check the file');
    assert.ok(waited >= 3_000, `ended after the watchdog's time, not before (${waited} ms)`);
    await openTrace(page, trace, { timeout: TIMEOUT });
    await assertMatchesCli(page, trace);
  } finally {
    await site.close();
  }
});
