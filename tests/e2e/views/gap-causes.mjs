// The gap tables show what the trace shows (issue 48): on a public export with no CUDA graph,
// the verdict's gap table has no cause column (the verdict's histogram attributes nothing; no
// guessed "typical cause"), its buckets hold the same idle time as `drill --json`'s device-idle
// buckets and as M1's numerator (one window for idle time), and the Drill-down's "GPU-idle time
// by gap size" table gives each bucket the causes `drill --json` measured in it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSite, publicTrace, openTrace, cliJson, detectJson, showView, artifact } from '../helpers.mjs';

const TRACE = 'GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite';
const TIMEOUT = 240_000;

const s = {};
useSite('nsys-lens-gap-causes-', (opened) => Object.assign(s, opened));

// Each row of a bucket table: its label, count and cells.
async function rows(page, testid) {
  return page.$$eval(`[data-testid=${testid}] tbody tr`, (trs) =>
    trs.map((tr) => ({ bucket: tr.dataset.bucket, count: Number(tr.dataset.count), cells: [...tr.children].map((td) => td.textContent) })),
  );
}

test(`gap tables on ${TRACE}: no guessed cause, the drill-down's measured ones`, { timeout: TIMEOUT }, async () => {
  const { page } = s;
  const file = publicTrace(TRACE);
  await openTrace(page, file, { timeout: TIMEOUT });
  await page.waitForSelector('[data-testid=gap-table] tbody tr', { timeout: TIMEOUT });
  const drill = cliJson(['drill', file]);
  const idle = drill.gaps.device_idle;
  const detect = detectJson(file);

  // The verdict's table: the drill-down's device-idle buckets, without a cause column.
  const headers = await page.$$eval('[data-testid=gap-table] thead th', (ths) => ths.map((th) => th.textContent));
  assert.deepEqual(headers, ['Gap', 'Count', headers[2], 'Share'], 'no cause column');
  assert.match(headers[2], /^Total/);
  const verdictRows = await rows(page, 'gap-table');
  assert.deepEqual(
    verdictRows.map((r) => [r.bucket, r.count]),
    idle.buckets.map((b) => [b.label, b.count]),
  );
  const text = await page.textContent('#gap-table');
  assert.doesNotMatch(text, /CUDA-graph|typical|\.item\(\)/, 'no guessed cause on a trace without CUDA graphs');
  // One window: the buckets' time is M1's numerator.
  const total = idle.buckets.reduce((a, b) => a + b.total_us, 0);
  assert.ok(Math.abs(total - detect.evidence.gpu_idle_ratio.numerator_us) < 1e-3, `${total} vs ${detect.evidence.gpu_idle_ratio.numerator_us}`);
  await page.locator('#gap-table').screenshot({ path: artifact('verdict-gap-table.png') });

  // The Drill-down's table: the same buckets with the causes `drill --json` measured.
  await showView(page, 'drill', TIMEOUT);
  const drillRows = await rows(page, 'drill-idle-bucket-table');
  assert.deepEqual(
    drillRows.map((r) => [r.bucket, r.count]),
    idle.buckets.map((b) => [b.label, b.count]),
  );
  for (const [i, b] of idle.buckets.entries()) {
    const cell = await page.textContent(`[data-testid=drill-idle-bucket-table] tbody tr:nth-child(${i + 1}) [data-testid=bucket-causes]`);
    const kinds = (b.causes || []).map((c) => c.kind);
    if (!kinds.length) assert.equal(cell, '—', b.label);
    else assert.deepEqual(cell.split(', ').map((x) => x.split(' ')[0]), kinds, b.label);
  }
  await page.locator('[data-testid=drill-idle-by-size]').screenshot({ path: artifact('drill-idle-gaps.png') });
  assert.deepEqual(s.problems, [], 'no page error');
});
