// What would it buy, in the page: the card beside the verdict shows what `nsys-lens whatif
// --json` says of the same file (the critical path split, every prediction, the bounds), a
// steady step's critical path is drawn on the timeline as `whatif --step N --json` walks it, and
// Root cause of the real before/after pair says where the regression lies on the critical path
// as `whatif AFTER --baseline BEFORE --json` does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSite, publicTrace, openTrace, dropFiles, cliJson, showView, timelineDrawn } from './helpers.mjs';

const BEFORE = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
const AFTER = publicTrace('GindaChen_nsys-ai__mfu_2gpu_after.sqlite');
const TIMEOUT = 240_000;

const s = {};
// Service workers refused (as in Firefox's private windows): the page stays as first loaded, not
// cross-origin isolated, and the card's helper opens the file itself (the isolated page's fed
// helper: isolated.test.mjs).
useSite('nsys-lens-whatif-', (opened) => Object.assign(s, opened), { serviceWorkers: 'block' });

async function whatifShown(page) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.whatifState), null, { timeout: TIMEOUT });
  const state = await page.evaluate(() => document.body.dataset.whatifState);
  const why = state === 'done' ? '' : await page.textContent('[data-testid=whatif-error]').catch(() => '');
  assert.equal(state, 'done', `the what-if card failed: ${why}`);
  return page.evaluate(() => document.getElementById('whatif').whatifView);
}

test('the what-if card shows what `whatif --json` says of the same file', { timeout: TIMEOUT }, async () => {
  const { page } = s;
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), false, 'no service worker, no isolation');
  await openTrace(page, BEFORE, { timeout: TIMEOUT });
  const shown = await whatifShown(page);
  const cli = cliJson(['whatif', BEFORE]);
  assert.deepEqual(shown.whatif, cli, 'the card answers as the CLI does');
  assert.ok(cli.steps > 0 && cli.predicted.length === 4, 'steady steps and the standard set');
  // With a core to spare, a helper worker that opened the same file replayed half the changes
  // and the card joined them: the answer above is the one replay's all the same.
  const helpers = await page.evaluate(() => (navigator.hardwareConcurrency > 1 ? performance.getEntriesByName('nsys-lens:whatif-helper').length : null));
  if (helpers !== null) assert.equal(helpers, 1, 'a helper worker replayed some of the changes');
  // The bar's legend: each part with time on the path, as the CLI splits it.
  for (const part of cli.critical_path.parts.filter((p) => p.share > 0)) {
    const us = await page.getAttribute(`[data-testid=whatif-part-${part.part}]`, 'data-us');
    assert.equal(Number(us), part.per_step_us, `${part.part} per step`);
  }
  // The predictions' table: a row per change after the replay's, named as the CLI names it.
  const changes = await page.$$eval('[data-table=whatif_predicted] tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));
  assert.deepEqual(changes.slice(1), cli.predicted.map((p) => p.change));
  assert.deepEqual(s.problems, [], 'no page error');
});

test("a steady step's critical path is drawn on the timeline as `whatif --step N` walks it", { timeout: TIMEOUT }, async () => {
  const { page } = s;
  const step = 3;
  await timelineDrawn(page);
  const before = await page.evaluate(() => Number(document.querySelector('[data-testid=timeline]').dataset.drawn));
  await page.fill('[data-testid=whatif-step]', String(step));
  await page.click('[data-testid=whatif-show-step]');
  await page.waitForFunction((n) => Number(document.querySelector('[data-testid=timeline]').dataset.drawn) > n && document.querySelector('[data-testid=timeline]').stepPath, before, { timeout: TIMEOUT });
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]').dataset.pathMarks) > 0, null, { timeout: TIMEOUT });
  const drawn = await page.evaluate(() => document.querySelector('[data-testid=timeline]').stepPath);
  const cli = cliJson(['whatif', BEFORE, '--step', String(step)]);
  assert.deepEqual(drawn, cli, 'the path drawn is the CLI’s');
  const { start, end, marks } = await page.evaluate(() => {
    const c = document.querySelector('[data-testid=timeline]');
    return { start: Number(c.dataset.start), end: Number(c.dataset.end), marks: Number(c.dataset.pathMarks) };
  });
  assert.ok(start <= cli.start_ns && end >= cli.end_ns, 'the view holds the step');
  // Every stretch of the path lies on a drawn lane: its thread's or its stream's.
  assert.equal(marks, cli.segments.length, 'each stretch found its lane');
  const note = await page.textContent('[data-testid=timeline-highlight-note]');
  assert.match(note, new RegExp(`critical path of steady step ${step}`));
  assert.deepEqual(s.problems, [], 'no page error');
});

test('Root cause of the real pair says where the regression lies on the critical path', { timeout: TIMEOUT }, async () => {
  const { page } = s;
  await dropFiles(page, [BEFORE, AFTER], TIMEOUT);
  await showView(page, 'rootcause');
  const holder = '[data-testid=rc-path-regression]';
  await page.waitForSelector(`${holder} [data-table=whatif_regression_parts]`, { timeout: TIMEOUT });
  const cli = cliJson(['whatif', AFTER, '--baseline', BEFORE]).regression;
  assert.equal(Number(await page.getAttribute(holder, 'data-delta-us')), cli.delta_us);
  const parts = await page.$$eval(`${holder} [data-table=whatif_regression_parts] tbody tr`, (rows) => rows.length);
  assert.equal(parts, cli.parts.filter((p) => p.baseline_us !== 0 || p.target_us !== 0).length);
  assert.deepEqual(s.problems, [], 'no page error');
});

test('a transfer-bound export: the card predicts halving its copies too, as `whatif --json` does', { timeout: TIMEOUT }, async () => {
  const { page } = s;
  const file = publicTrace('Lianhang666_gpu4__report2.sqlite');
  await openTrace(page, file, { timeout: TIMEOUT });
  const shown = await whatifShown(page);
  const cli = cliJson(['whatif', file]);
  assert.deepEqual(shown.whatif, cli, 'the card answers as the CLI does');
  assert.equal(cli.predicted.at(-1).change, 'copies ×0.5', 'copies fill most of its device time');
  const changes = await page.$$eval('[data-table=whatif_predicted] tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));
  assert.deepEqual(changes.slice(1), cli.predicted.map((p) => p.change));
  assert.deepEqual(s.problems, [], 'no page error');
});
