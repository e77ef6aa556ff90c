// End-to-end: the page served through its service worker (it reloads itself through it on the
// first visit) is cross-origin isolated, so its workers share memory. An open whose kernels and
// calls are not kept (`?rows=file`: as on an export too large to keep any) starts lane workers
// that read those tables' rowid ranges for every pass, and the what-if card's helper opens no
// file but replays the rows the analysis worker hands it. The views read so give the CLI's
// answers.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireDist, serve, launch, cliJson, generate, openTrace, showView, artifact, publicTrace } from './helpers.mjs';

const TIMEOUT = 240_000;
let browser;
let tmp;

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-lanes-'));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// The analysis worker's lanes (`self.nsysLensLanes` in worker.js), from whichever of the page's
// workers has them.
async function lanesOf(page) {
  for (const worker of page.workers()) {
    const sets = await worker.evaluate(() => self.nsysLensLanes?.() ?? []).catch(() => []);
    if (sets.length > 0) return sets;
  }
  return [];
}

// The page at `query`, once it reloaded itself through its service worker (cross-origin isolated).
async function isolatedPage(query) {
  const srv = await serve();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(`${srv.origin}/${query}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  assert.equal(await page.evaluate(() => !!navigator.serviceWorker.controller && self.crossOriginIsolated), true, 'served through the service worker');
  assert.equal(await page.evaluate(() => location.search), query, 'the reload kept the address');
  return { srv, context, page, problems };
}

test('isolated, a trace whose kernels and calls are not kept is read by lane workers: Root cause and the Drill-down equal the CLI', { timeout: TIMEOUT }, async () => {
  const { srv, context, page, problems } = await isolatedPage('?rows=file');

  // 128,000 kernels and as many launch calls: past the 16 ranges lanes start for.
  const file = generate('host-bound', path.join(tmp, 'host-bound.sqlite'), 100);
  await openTrace(page, file, { timeout: TIMEOUT });
  assert.equal(await page.textContent('[data-testid=verdict]'), cliJson(['detect', file]).verdict);
  await page.waitForFunction(() => performance.getEntriesByName('nsys-lens:lanes').length > 0, null, { timeout: 60_000 });
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const [before] = await lanesOf(page);
  assert.equal(before?.lanes, Math.min(3, cores - 1), `one lane per core the analysis worker leaves, ${cores} cores`);

  await showView(page, 'rootcause', TIMEOUT);
  const want = cliJson(['analyze', file]).baseline;
  const fig = async (k) => Number.parseFloat(await page.$eval(`[data-rc=${k}]`, (e) => e.dataset.value));
  assert.equal(await fig('wall_time_per_step_us'), want.wall_time_per_step_us);
  assert.equal(await fig('steady_steps'), want.steady_steps);
  assert.equal(await fig('kernels_per_step'), want.kernels_per_step);

  await showView(page, 'drill', TIMEOUT);
  const drill = cliJson(['drill', file, '--top', '10']);
  const summary = await page.$eval('[data-testid=drill-gap-summary]', (e) => ({ ...e.dataset }));
  assert.equal(Number(summary.gaps), drill.gaps.gaps);
  assert.equal(Number.parseFloat(summary.totalUs), drill.gaps.total_us);
  const causes = await page.$$eval('[data-testid=drill-idle-causes] tbody tr', (trs) => trs.map((t) => [t.dataset.kind, Number(t.dataset.ns)]));
  assert.deepEqual(causes, drill.idle.per_device.flatMap((d) => d.causes.map((c) => [c.kind, c.ns])));

  // The views' passes asked the lanes for ranges and took every answer.
  const [after] = await lanesOf(page);
  assert.equal(after.failed, null);
  assert.ok(after.taken > before.taken, `ranges taken: ${before.taken} before the views, ${after.taken} after`);
  assert.equal(after.asked, after.taken, 'every range asked was taken');
  await page.screenshot({ path: artifact('lanes-drill.png') });
  assert.deepEqual(problems, []);
  await context.close();
  await srv.close();
});

test("isolated, the what-if card's helper opens no file and replays the analysis worker's rows: the card equals `whatif --json`", { timeout: TIMEOUT }, async () => {
  const { srv, context, page, problems } = await isolatedPage('');
  const file = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
  await openTrace(page, file, { timeout: TIMEOUT });
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.whatifState), null, { timeout: TIMEOUT });
  assert.equal(await page.evaluate(() => document.body.dataset.whatifState), 'done');
  const shown = await page.evaluate(() => document.getElementById('whatif').whatifView);
  assert.deepEqual(shown.whatif, cliJson(['whatif', file]), 'the card answers as the CLI does');
  const helpers = await page.evaluate(() => performance.getEntriesByName('nsys-lens:whatif-helper').map((m) => m.detail));
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  if (cores > 1) {
    assert.equal(helpers.length, 1, 'a helper replayed some of the changes');
    assert.equal(helpers[0].fed, true, 'over the rows the analysis worker handed it');
  }
  assert.deepEqual(problems, []);
  await context.close();
  await srv.close();
});
