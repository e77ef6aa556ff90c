// Every rank, one answer, in the page: the Drill-down's Ranks panel shows what `nsys-lens ranks
// --json` says of the same files — one export holding two ranks (the real mfu_2gpu_before), and
// the generated TP=4 straggler run written as one file per rank with clocks off by up to 1 ms,
// dropped together (three or more files are the ranks of one run) — with the skew chart drawn.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useSite, publicTrace, openTrace, dropFiles, cliJson, showView, generate } from './helpers.mjs';

const BEFORE = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
const TIMEOUT = 240_000;

const s = {};
useSite('nsys-lens-ranks-', (opened) => Object.assign(s, opened));

// The CLI names files by the path given, the page by the file's name.
function byName(report) {
  const r = structuredClone(report);
  r.files = r.files.map((f) => path.basename(f));
  for (const k of r.ranks) k.file = path.basename(k.file);
  return r;
}

async function ranksShown(page) {
  await showView(page, 'drill');
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-ranks]')?.ranksView, null, { timeout: TIMEOUT });
  return page.evaluate(() => document.querySelector('[data-testid=drill-ranks]').ranksView);
}

test('one export with two ranks: the Ranks panel is `ranks --json`', { timeout: TIMEOUT }, async () => {
  const { page } = s;
  await openTrace(page, BEFORE, { timeout: TIMEOUT });
  const shown = await ranksShown(page);
  const cli = cliJson(['ranks', BEFORE]);
  assert.deepEqual(byName(shown.ranks), byName(cli));
  assert.equal(cli.ranks.length, 2);
  const rows = await page.$$eval('[data-table=ranks] tbody tr', (trs) => trs.length);
  assert.equal(rows, cli.ranks.length, 'a row per rank');
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-skew-plot]')?.dataset.drawn === '1', null, { timeout: TIMEOUT });
  assert.deepEqual(s.problems, [], 'no page error');
});

test('four rank files with clock errors: the Ranks panel is `ranks FILE… --json`, on one clock', { timeout: TIMEOUT }, async () => {
  const { page, tmp } = s;
  const one = generate('tp4-straggler', path.join(tmp, 'tp4.sqlite'));
  const shifts = [0, 137_000, -420_000, 1_000_000];
  const files = shifts.map((shift, device) => {
    const file = path.join(tmp, `tp4_r${device}.sqlite`);
    fs.copyFileSync(one, file);
    const sql = `DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId != ${device}; UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + ${shift}, end = end + ${shift};`;
    execFileSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()', file, sql]);
    return file;
  });
  await dropFiles(page, files, TIMEOUT);
  const shown = await ranksShown(page);
  const cli = cliJson(['ranks', ...files]);
  assert.deepEqual(byName(shown.ranks), byName(cli));
  // Each file put back on file 0's clock: its offset undoes its planted error (within 5 µs).
  shifts.forEach((shift, i) => assert.ok(Math.abs(cli.clock.correction_ns[i] + shift) <= 5000, `file ${i}: ${cli.clock.correction_ns[i]} vs ${-shift}`));
  assert.deepEqual(
    cli.ranks.map((r) => r.rank),
    ['rank 0', 'rank 1', 'rank 2', 'rank 3'],
  );
  const clockRows = await page.$$eval('[data-table=ranks_clock] tbody tr', (trs) => trs.length);
  assert.equal(clockRows, 4, 'a clock row per file');
  assert.deepEqual(s.problems, [], 'no page error');
});
