// The README's picture: the verdict view on a real public export, taken by the suite so that it
// shows the page as it is. It is written to docs/img/verdict.png (commit it when it changes) after
// the page's verdict, what bounds the run and every metric card were checked against the CLI's
// `detect --json` on the same file; the README shows it and names that file.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, useSite, publicTrace, openTrace, assertMatchesCli } from '../helpers.mjs';

const TRACE = 'GindaChen_nsys-ai__mfu_2gpu_before.sqlite';
const PICTURE = path.join(ROOT, 'docs', 'img', 'verdict.png');
const TIMEOUT = 240_000;

const s = {};
useSite('nsys-lens-picture-', (opened) => Object.assign(s, opened));

test(`the README's picture: the verdict view on ${TRACE}`, { timeout: TIMEOUT }, async () => {
  const { page } = s;
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.includes('](docs/img/verdict.png)'), 'the README shows the picture');
  assert.ok(readme.includes(TRACE.replace(/^GindaChen_nsys-ai__/, '')), `the README names ${TRACE}`);

  const file = publicTrace(TRACE);
  await openTrace(page, file, { timeout: TIMEOUT });
  const { report } = await assertMatchesCli(page, file);
  assert.ok(report.bound, 'what bounds the run is shown');
  // What would it buy loads after the verdict: the picture shows it done.
  await page.waitForFunction(() => document.body.dataset.whatifState === 'done', null, { timeout: TIMEOUT });
  await page.evaluate(() => document.fonts.ready);
  // From the top of the page to the end of the metric cards (half the gap to the next panel):
  // the verdict, what bounds the run, what a fix would buy, the capture checks and the metrics.
  const { width, bottom } = await page.evaluate(() => {
    const panel = document.getElementById('cards').closest('section');
    const next = panel.nextElementSibling;
    const end = panel.getBoundingClientRect().bottom;
    const gap = next ? next.getBoundingClientRect().top - end : 0;
    return {
      width: document.documentElement.clientWidth,
      bottom: Math.round(end + window.scrollY + Math.min(8, gap / 2)),
    };
  });
  fs.mkdirSync(path.dirname(PICTURE), { recursive: true });
  await page.screenshot({ path: PICTURE, fullPage: true, clip: { x: 0, y: 0, width, height: bottom } });
  const png = fs.readFileSync(PICTURE);
  assert.equal(png.readUInt32BE(16), width, 'picture width');
  assert.equal(png.readUInt32BE(20), bottom, 'picture height');
  assert.deepEqual(s.problems, [], 'no page error');
});
