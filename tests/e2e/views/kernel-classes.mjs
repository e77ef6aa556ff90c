// End-to-end: GPU time per kernel class on the Root cause view (issue 40 item 3) against the
// CLI's `analyze --json` for the same files: one trace's tables (per step, per phase) and the
// stacked bars drawn by the core, and a pair's deltas per class.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { artifact, cliJson, dropFiles, generate, showView, useSite } from '../helpers.mjs';

const TIMEOUT = 240_000;
let page;
let problems;
let tmp;
useSite('nsys-lens-classes-', (s) => ({ page, problems, tmp } = s));

const openFiles = (files) => dropFiles(page, files, TIMEOUT);

async function chartDrawn() {
  await page.waitForFunction(() => document.querySelector('[data-testid=rc-classes-chart]')?.dataset.drawn === '1', null, { timeout: 30_000 });
  const stats = await page.$eval('[data-testid=rc-classes-chart]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let coloured = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) coloured++;
    return { coloured, height: c.height };
  });
  assert.ok(stats.coloured > 500, `the stacked bars are drawn: ${JSON.stringify(stats)}`);
}

test('one trace: the class tables per step and per phase equal the CLI, with the stacked bar', { timeout: TIMEOUT }, async () => {
  const file = generate('kernel-classes', path.join(tmp, 'kernel-classes.sqlite'));
  await openFiles([file]);
  await showView(page, 'rootcause');
  const want = cliJson(['analyze', file]).baseline.kernel_classes;
  const tables = await page.$$eval('[data-testid=rc-classes-table]', (ts) =>
    ts.map((t) => ({
      scope: t.dataset.scope,
      per: t.dataset.per,
      rows: [...t.querySelectorAll('tbody tr')].map((r) => [r.dataset.class, Number(r.dataset.gpuUs), Number(r.dataset.count)]),
    })),
  );
  const expected = [want.per_step, ...want.phases].map((t) => ({
    scope: t.scope,
    per: t.per,
    rows: t.classes.map((r) => [r.class, r.gpu_us, r.count]),
  }));
  assert.deepEqual(tables, expected);
  assert.deepEqual(tables.map((t) => t.scope), ['steady steps', 'context steps', 'generation steps']);
  await chartDrawn();
  await page.locator('[data-testid=rc-classes]').screenshot({ path: artifact('rootcause-classes.png') });
  assert.deepEqual(problems, []);
});

test('a pair: the deltas per class and the class named in the conclusion equal the CLI', { timeout: TIMEOUT }, async () => {
  const baseline = generate('regression-baseline', path.join(tmp, 'regression-baseline.sqlite'));
  const target = generate('regression-target', path.join(tmp, 'regression-target.sqlite'));
  await openFiles([baseline, target]);
  await showView(page, 'rootcause');
  const labels = ['--baseline-label', 'regression-baseline.sqlite', '--target-label', 'regression-target.sqlite'];
  const want = cliJson(['analyze', baseline, target, ...labels]).comparison;
  const k = want.kernel_classes;
  const tables = await page.$$eval('[data-testid=rc-classes-table]', (ts) =>
    ts.map((t) => ({
      scope: t.dataset.scope,
      rows: [...t.querySelectorAll('tbody tr')].map((r) => [r.dataset.class, Number(r.dataset.baseline), Number(r.dataset.target), Number(r.dataset.delta)]),
    })),
  );
  const rows = (classes) => classes.map((r) => [r.class, r.baseline_us, r.target_us, r.delta_us]);
  assert.deepEqual(tables, [{ scope: k.scope, rows: rows(k.classes) }, ...k.phases.map((p) => ({ scope: p.scope, rows: rows(p.classes) }))]);
  assert.deepEqual(k.phases.map((p) => p.scope), ['context steps', 'generation steps']);
  // The target's 16 extra tiny launches per step are elementwise kernels.
  assert.ok(k.classes.find((r) => r.class === 'elementwise').delta_us > 0);
  assert.equal(await page.textContent('[data-testid=rc-conclusion]'), want.conclusion);
  await chartDrawn();
  await page.locator('[data-testid=rc-classes]').screenshot({ path: artifact('rootcause-classes-pair.png') });
  assert.deepEqual(problems, []);
});
