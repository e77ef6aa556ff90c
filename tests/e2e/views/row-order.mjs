// End-to-end: nsys promises no row order ("It cannot be assumed that rows will continue to be
// exported in any particular order, including timestamp order", Nsight Systems 2025.6 release
// notes). Exports rewritten by tests/tools/reorder.py — tables grouped per device/stream or per
// thread, stored in shuffled time chunks, or reversed — open in the page like the original: the
// verdict, Root cause and the drill-down equal the CLI's on the original file. In CI the three
// orders are shared out among the inputs; under --full every input is read in every order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { showView as showViewOf, cliJson, generate, publicTrace, openTrace, assertMatchesCli, timelineDrawn, useSite, ROOT, FULL } from '../helpers.mjs';

const TIMEOUT = 240_000;
const ORDERS = ['grouped', 'chunks', 'reversed'];
let page;
let problems;
let tmp;
useSite('nsys-lens-order-', (s) => ({ page, problems, tmp } = s));

function reordered(src, order) {
  const dst = path.join(tmp, `${path.basename(src, '.sqlite')}.${order}.sqlite`);
  execFileSync('python3', [path.join(ROOT, 'tests', 'tools', 'reorder.py'), src, dst, order]);
  return dst;
}

const showView = (name) => showViewOf(page, name, TIMEOUT);

const num = (s) => (s === '' || s === undefined ? null : Number.parseFloat(s));

// Root cause's figures and the drill-down's gaps and idle causes, as the page shows them.
async function deeperViews() {
  await showView('rootcause');
  const fig = async (k) => num(await page.$eval(`[data-rc=${k}]`, (e) => e.dataset.value).catch(() => ''));
  const rootcause = {
    wall: await fig('wall_time_per_step_us'),
    steps: await fig('steady_steps'),
    kernels: await fig('kernels_per_step'),
  };
  await showView('drill');
  const shown = await page.$eval('[data-testid=drill-gap-summary]', (e) => ({ ...e.dataset }));
  const summary = { gaps: Number(shown.gaps), total: num(shown.totalUs) };
  const causes = await page.$$eval('[data-testid=drill-idle-causes] tbody tr', (trs) => trs.map((t) => [t.dataset.kind, Number(t.dataset.device), Number(t.dataset.ns)]));
  const findings = await page.$$eval('[data-testid=drill-findings] li', (l) => l.map((f) => f.dataset.title));
  await page.click('[data-testid=tab-verdict]');
  return { rootcause, summary, causes, findings };
}

// What the CLI says of the original file, in the page's terms.
function cliViews(file) {
  const analyze = cliJson(['analyze', file]).baseline;
  const drill = cliJson(['drill', file, '--top', '10']);
  return {
    rootcause: {
      wall: analyze.wall_time_per_step_us ?? null,
      steps: analyze.steady_steps ?? null,
      kernels: analyze.kernels_per_step ?? null,
    },
    summary: { gaps: drill.gaps.gaps, total: drill.gaps.total_us },
    causes: drill.idle.per_device.flatMap((d) => d.causes.map((c) => [c.kind, d.device, c.ns])),
    findings: drill.findings.map((f) => f.title),
  };
}

// One generated run of several ranks and one real export in CI; every input under --full.
const INPUTS = [
  ['tp2-phases', () => generate('tp2-phases', path.join(tmp, 'tp2-phases.sqlite'))],
  ['mfu_2gpu_before', () => publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite')],
  ...(FULL ? [
    ['copy-bound', () => generate('copy-bound', path.join(tmp, 'copy-bound.sqlite'))],
    ['serving-graphs', () => generate('serving-graphs', path.join(tmp, 'serving-graphs.sqlite'))],
    ['h100_2gpu_1s', () => publicTrace('GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite')],
    ['power_iteration', () => publicTrace('brycelelbach_nsightful__power_iteration__baseline.sqlite')],
  ] : []),
];

// The orders input `i` is rewritten in: every one under --full, else the three shared out
// among the inputs (each order read once).
const ordersOf = (i) => (FULL ? ORDERS : ORDERS.filter((_, k) => k % INPUTS.length === i));

for (const [i, [name, input]] of INPUTS.entries()) {
  test(`${name} in any row order: the page's verdict, Root cause and drill-down equal the CLI's on the original`, { timeout: TIMEOUT * 3 }, async () => {
    const original = input();
    const verdict = cliJson(['detect', original]).verdict;
    const want = cliViews(original);
    assert.ok(want.summary.gaps > 0 && want.causes.length > 0, 'the original has gaps and idle causes to compare');
    for (const order of ordersOf(i)) {
      const file = reordered(original, order);
      await openTrace(page, file, { timeout: TIMEOUT });
      const { report } = await assertMatchesCli(page, file);
      assert.equal(report.verdict, verdict, `${order}: the CLI's verdict is the original's`);
      await timelineDrawn(page);
      assert.deepEqual(await deeperViews(), want, `${name} in ${order} order`);
      fs.rmSync(file);
    }
  });
}

test('the pages of reordered exports logged no errors', () => {
  assert.deepEqual(problems, []);
});
