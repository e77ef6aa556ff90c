// End-to-end: line_profiler outputs dropped on the page open the Hot lines view, and what it
// shows is what `nsys-lens lprof` computes for the same files — the exported JSON and Markdown
// byte for byte, the hot lines' times and types, the drill-down line, the ranks merge, and a
// clear error for a text that is not line_profiler output. Screenshots at 1440 px.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { requireDist, openSite, cli, artifact, generate, ROOT } from './helpers.mjs';

const TIMEOUT = 60_000;
const FIXTURES = path.join(ROOT, 'crate', 'tests', 'fixtures', 'lprof');
const fixture = (name) => path.join(FIXTURES, name);
let site;
let page;
let problems;
let tmp;

function cliOut(args) {
  return execFileSync(cli(), ['lprof', ...args], { maxBuffer: 64 << 20 }).toString('utf8');
}

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-lprof-'));
  site = await openSite({ acceptDownloads: true, viewport: { width: 1440, height: 900 } });
  ({ page, problems } = site);
});

after(async () => {
  await site?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// Drops the files on the drop zone as a user would (a drop event carrying File objects).
async function drop(names) {
  const files = names.map((n) => ({ name: n, text: fs.readFileSync(fixture(n), 'utf8') }));
  const dt = await page.evaluateHandle((list) => {
    const t = new DataTransfer();
    for (const f of list) t.items.add(new File([f.text], f.name, { type: 'text/plain' }));
    return t;
  }, files);
  const seen = await page.evaluate(() => Number(document.querySelector('#lprof').dataset.renders || 0));
  await page.dispatchEvent('#dropzone', 'drop', { dataTransfer: dt });
  await page.waitForFunction(
    (n) => Number(document.querySelector('#lprof').dataset.renders || 0) > n && ['done', 'error'].includes(document.body.dataset.state) && !document.querySelector('#view-lprof').hidden,
    seen,
    { timeout: TIMEOUT },
  );
}

async function exported(testid) {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: TIMEOUT }), page.click(`[data-testid=${testid}]`)]);
  const out = path.join(tmp, download.suggestedFilename());
  await download.saveAs(out);
  return fs.readFileSync(out, 'utf8');
}

const ROUNDS = ['round1.txt', 'round2.txt', 'round3.txt'];

test('three rounds dropped give the CLI result: JSON and Markdown exports equal', async () => {
  await drop(ROUNDS);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done');
  assert.equal(await page.isVisible('[data-testid=tab-lprof]'), true);
  const cliJson = JSON.parse(cliOut(['--json', ...ROUNDS.map(fixture)]));
  const pageJson = JSON.parse(await exported('lp-export-json'));
  assert.deepEqual(pageJson, cliJson);
  assert.equal(await exported('lp-export-md'), cliOut(ROUNDS.map(fixture)));
});

test('the hot lines shown are the last round ranked by absolute time with their types', async () => {
  const cliJson = JSON.parse(cliOut(['--json', ...ROUNDS.map(fixture)]));
  const last = cliJson.rounds.at(-1);
  const rows = await page.$$eval('[data-testid=lp-hot-row]', (trs) => trs.map((r) => ({ ...r.dataset })));
  assert.deepEqual(
    rows.map((r) => [r.function, Number(r.line), Number(r.timeS), r.kind]),
    last.hot_lines.map((h) => [h.function, h.line, h.time_s, h.kind ?? '']),
  );
  const advice = await page.$eval('[data-testid=lp-advice]', (n) => ({ ...n.dataset, text: n.textContent }));
  assert.equal(advice.stop, String(cliJson.comparison.stopping.diminishing_returns));
  assert.equal(Number(advice.cumulative), cliJson.comparison.cumulative_improvement_pct);
  assert.ok(advice.text.includes(cliJson.comparison.stopping.advice));
  const shifts = await page.$$eval('[data-testid=lp-shift]', (ps) => ps.map((p) => p.textContent));
  assert.deepEqual(shifts, cliJson.comparison.steps.map((s) => `Bottleneck shift: ${s.shift}`));
  assert.equal(await page.evaluate(() => document.querySelector('[data-testid=lp-chart]').dataset.drawn), '1');
  // Rounds side by side: each function's total in each round, as the CLI has them.
  const side = await page.$$eval('[data-testid=lp-side-by-side] tbody tr', (trs) =>
    Object.fromEntries(trs.map((r) => [r.dataset.function, [...r.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value))])),
  );
  for (const [i, round] of cliJson.rounds.entries()) {
    for (const f of round.functions) assert.equal(side[f.key][i], f.total_s, `${f.key} in round ${i + 1}`);
  }
  await page.screenshot({ path: artifact('lprof-rounds-1440.png'), fullPage: true });
});

test('the drill-down gives the CLI next line, with a Copy button', async () => {
  await drop(['classify.txt']);
  const cliJson = JSON.parse(cliOut(['--json', fixture('classify.txt')]));
  assert.equal(await page.textContent('[data-testid=lp-next-line]'), cliJson.line_profiler);
  const items = await page.$$eval('[data-testid=lp-drill-item]', (li) => li.map((l) => l.dataset.qualified));
  assert.deepEqual(items, cliJson.rounds[0].drill_down.map((s) => s.qualified ?? ''));
  assert.equal(await page.isVisible('[data-testid=lp-copy-next]'), true);
  await page.screenshot({ path: artifact('lprof-classify-1440.png'), fullPage: true });
});

test('rank files merge when asked, as the CLI --ranks', async () => {
  await drop(['rank0.txt', 'rank1.txt']);
  await page.check('[data-testid=lp-ranks]');
  const cliJson = JSON.parse(cliOut(['--json', '--ranks', fixture('rank0.txt'), fixture('rank1.txt')]));
  assert.deepEqual(JSON.parse(await exported('lp-export-json')), cliJson);
});

test('with a trace pair open, the Root cause hand-off merges into the next line', async () => {
  const pair = ['regression-baseline', 'regression-target'].map((s) => generate(s, path.join(tmp, `${s}.sqlite`)));
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', pair);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'done', run, { timeout: 240_000 });
  await page.click('[data-testid=tab-rootcause]');
  await page.waitForFunction(() => document.body.dataset.rootcauseState === 'done', null, { timeout: 240_000 });
  assert.match(await page.textContent('[data-testid=rc-handoff-next]'), /drop the line_profiler output/);
  const handoff = await page.textContent('[data-testid=rc-line-profiler]');
  await drop(ROUNDS);
  const cliJson = JSON.parse(cliOut(['--json', '--handoff', handoff, ...ROUNDS.map(fixture)]));
  assert.equal(await page.textContent('[data-testid=lp-next-line]'), cliJson.line_profiler);
  assert.ok(cliJson.next_functions.some((f) => f.source === 'handoff'));
  assert.equal(await page.isVisible('[data-testid=tab-verdict]'), true, 'the trace session stays open');
  await page.screenshot({ path: artifact('lprof-with-trace-1440.png'), fullPage: false });
});

test('a text that is not line_profiler output gets the core message, not a crash', async () => {
  await drop(['not_lprof.txt']);
  const shown = await page.textContent('[data-testid=lp-error]');
  const run = spawnSync(cli(), ['lprof', fixture('not_lprof.txt')]);
  assert.equal(run.status, 3);
  const message = run.stderr.toString('utf8').replace(/^nsys-lens: /, '').trim();
  assert.equal(shown.replace(/\s+/g, ' '), message);
  assert.deepEqual(problems, []);
});
