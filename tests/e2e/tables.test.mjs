// Tables and numbers as a reader sees them, in headless Chromium at 1440 px: the largest-gaps
// table fits its column, no header shows `Μ` (an upper-cased µ), "not computed" is said once per
// table, durations read in the unit the CLI's report states, and headers sort their rows.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { requireDist, openSite, openTrace, publicTrace, generate, artifact, cli } from './helpers.mjs';

const TIMEOUT = 240_000;
let site;
let page;
let tmp;

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-tables-'));
  site = await openSite({ viewport: { width: 1440, height: 900 } });
  ({ page } = site);
});

after(async () => {
  await site?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// Shows a view; the verdict is there as soon as the file is open, the others say when done.
async function showView(name) {
  await page.click(`[data-testid=tab-${name}]`);
  if (name === 'verdict') return;
  await page.waitForFunction((n) => ['done', 'error'].includes(document.body.dataset[`${n}State`]), name, { timeout: TIMEOUT });
  assert.equal(await page.evaluate((n) => document.body.dataset[`${n}State`], name), 'done', `${name} view`);
}

// Every visible table header's rendered text (CSS transforms applied) and, per table, how often
// it says "not computed".
async function readTables() {
  return page.evaluate(() =>
    [...document.querySelectorAll('table')]
      .filter((t) => t.offsetParent)
      .map((t) => ({
        id: t.dataset.testid || t.closest('[data-testid]')?.dataset.testid || '',
        headers: [...t.querySelectorAll('thead th')].map((th) => th.innerText),
        notComputed: (t.innerText.match(/not computed/gi) || []).length,
      })),
  );
}

test('the largest-gaps table of a real export fits its column at 1440 px; gap times read as the report states them', { timeout: TIMEOUT }, async () => {
  // Its largest GPU-idle gaps are tens of ms (h100's were copies, idle no more).
  const file = publicTrace('brycelelbach_nsightful__power_iteration__baseline.sqlite');
  await openTrace(page, file, { timeout: TIMEOUT });
  await showView('drill');
  const fit = await page.$eval('[data-testid=drill-top-gaps]', (t) => {
    const box = t.closest('.table-wrap');
    return { scroll: box.scrollWidth, client: box.clientWidth, rows: t.tBodies[0].rows.length };
  });
  assert.ok(fit.rows > 0, 'the table has rows');
  assert.ok(fit.scroll <= fit.client, `largest gaps: ${fit.scroll} px of content in ${fit.client} px`);
  await page.screenshot({ path: artifact('tables-drill-power-iteration-1440.png'), fullPage: true });

  // The gap column: one unit in its header, each cell the CLI's gap in that unit.
  const want = JSON.parse(execFileSync(cli(), ['drill', file, '--json'], { maxBuffer: 256 << 20 }).toString('utf8'));
  const header = await page.$eval('[data-testid=drill-top-gaps] thead th:nth-child(2)', (th) => th.innerText);
  assert.equal(header, 'Gap (ms)', 'the gaps are tens of ms: the column is in ms');
  const cells = await page.$$eval('[data-testid=drill-top-gaps] tbody tr', (trs) => trs.map((tr) => ({ us: Number(tr.dataset.gapUs), text: tr.cells[1].innerText })));
  assert.equal(cells.length, want.gaps.top.length);
  for (const c of cells) assert.equal(c.text, (c.us / 1000).toFixed(2), `${c.us} µs reads ${c.text}`);
  // The findings cite the largest gap the same way.
  const largest = (want.gaps.top[0].gap_us / 1000).toFixed(2);
  const findings = await page.textContent('[data-testid=drill-findings]');
  assert.ok(findings.includes(`${largest}\u00a0ms`), `a finding cites the largest gap as ${largest} ms`);
  assert.ok(!/\d{5,}\.\d\s?µs/.test(findings), 'no five-digit µs beside ms');
});

test('a header sorts its rows, and again in reverse', { timeout: TIMEOUT }, async () => {
  const order = () => page.$$eval('[data-testid=drill-top-gaps] tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.gapUs)));
  const before = await order();
  const sorted = [...before].sort((a, b) => b - a);
  assert.deepEqual(before, sorted, 'largest gap first as the core gives them');
  await page.click('[data-testid=drill-top-gaps] thead th:nth-child(2) button');
  assert.deepEqual(await order(), sorted, 'first click: largest first');
  assert.equal(await page.getAttribute('[data-testid=drill-top-gaps] thead th:nth-child(2)', 'aria-sort'), 'descending');
  await page.click('[data-testid=drill-top-gaps] thead th:nth-child(2) button');
  assert.deepEqual(await order(), [...sorted].reverse(), 'second click: smallest first');
});

test('no header in any view shows Μ, and "not computed" is said at most once per table', { timeout: TIMEOUT }, async () => {
  const a = generate('regression-baseline', path.join(tmp, 'a.sqlite'));
  const b = generate('regression-target', path.join(tmp, 'b.sqlite'));
  // One export without phases (phase columns not computed), one pair with steps (Root cause).
  const runs = [[publicTrace('GindaChen_nsys-ai__mock.sqlite')], [a, b]];
  for (const files of runs) {
    await openTrace(page, files, { timeout: TIMEOUT });
    for (const view of ['verdict', 'rootcause', 'drill']) {
      await showView(view);
      const tables = await readTables();
      if (view !== 'rootcause' || files.length > 1) assert.ok(tables.length > 0, `${view}: tables shown`);
      for (const t of tables) {
        for (const h of t.headers) assert.ok(!h.includes('\u039c'), `${view} ${t.id}: header "${h}" has a Greek capital Mu`);
        assert.ok(t.notComputed <= 1, `${view} ${t.id}: "not computed" ${t.notComputed} times`);
      }
      await page.screenshot({ path: artifact(`tables-${path.basename(files[0], '.sqlite')}-${view}.png`), fullPage: true });
    }
  }
  // Root cause of the pair: the per-step column states its unit once in the header, or, when its
  // values span units, each cell carries its own; either way µ is the micro sign (U+00B5).
  await showView('rootcause');
  const col = await page.$eval('[data-testid=rc-nvtx] table', (t) => ({
    header: t.tHead.rows[0].cells[1].innerText,
    cells: [...t.tBodies[0].rows].map((r) => r.cells[1].innerText),
  }));
  // (The standard NVTX table's first figure is the op's self time.)
  const unit = /^Baseline (self )?per step \((ns|\u00b5s|ms|s)\)$/.test(col.header);
  assert.ok(unit || /^Baseline (self )?per step$/.test(col.header), `header: ${col.header}`);
  const number = unit ? /^[\d,]+(\.\d+)?$/ : /^[\d,]+(\.\d+)?\u00a0(ns|\u00b5s|ms|s)$/;
  for (const c of col.cells) assert.match(c, number, `${col.header}: ${c}`);
});

test('a trace without phases: the phase table has no "not computed" cell, one sentence says which phases and why', { timeout: TIMEOUT }, async () => {
  await openTrace(page, publicTrace('GindaChen_nsys-ai__mock.sqlite'), { timeout: TIMEOUT });
  await showView('verdict');
  const cols = await page.$$eval('[data-testid=phase-table] thead th', (ths) => ths.map((th) => th.innerText));
  assert.deepEqual(cols, ['', 'Aggregate'], 'only the computed scope has a column');
  const cells = await page.$eval('[data-testid=phase-table]', (t) => (t.innerText.match(/not computed/gi) || []).length);
  assert.equal(cells, 0);
  const note = await page.textContent('[data-testid=phases-not-computed]');
  assert.match(note, /^Context and generation phases[: ]/);
  assert.equal((note.match(/not computed/g) || []).length, 1, note);
  assert.ok(!(await page.textContent('[data-testid=phase-table]')).includes('▲'), 'no arrow for a crossed threshold');
});
