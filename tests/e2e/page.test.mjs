// End-to-end: the page served from dist/ on 127.0.0.1, in headless Chromium, against the CLI.
//
// For every trace the page's verdict and every metric card's data-value must equal the CLI's
// `detect --json` (aggregate and phases), and nothing may be requested outside 127.0.0.1.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  requireDist,
  openSite,
  detectJson,
  generate,
  publicTrace,
  artifact,
  openTrace,
  canvasStats,
  timelineDrawn,
  assertMatchesCli as matchesCli,
  readerOpens,
} from './helpers.mjs';

const TIMEOUT = 240_000;
let site;
let srv;
let browser;
let page;
let requests;
let problems; // page errors and console errors, checked at the end
let tmp;

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-e2e-'));
  site = await openSite();
  ({ srv, browser, page, requests, problems } = site);
});

after(async () => {
  await site?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// The page's numbers against the CLI's report for the same file.
const assertMatchesCli = (file, profile) => matchesCli(page, file, profile);

async function load(file, expect = 'done') {
  await openTrace(page, file, { expect, timeout: TIMEOUT });
}

test('generated host-bound trace: verdict YES and every card equals the CLI', { timeout: TIMEOUT }, async () => {
  const file = generate('host-bound', path.join(tmp, 'host-bound.sqlite'));
  await load(file);
  const { report, compared } = await assertMatchesCli(file);
  assert.equal(report.verdict, 'YES');
  assert.equal(compared, 21, 'aggregate + context + generation × 7 metrics');
  assert.ok(await page.isVisible('[data-testid=callout-host-prep-aggregate]'), 'host-prep confirmation callout');
  await page.screenshot({ path: artifact('host-bound-top.png') });
  await page.screenshot({ path: artifact('host-bound-full.png'), fullPage: true });
});

test('timeline: drawn, wheel zoom redraws, hover shows a kernel', { timeout: TIMEOUT }, async () => {
  const canvas = '[data-testid=timeline]';
  const first = await timelineDrawn(page, canvas);
  assert.ok(first.ink > 500, `the timeline has drawn pixels (${first.ink})`);
  const range0 = await page.textContent('[data-testid=timeline-range]');
  const fullSpan = await page.evaluate((sel) => {
    const d = document.querySelector(sel).dataset;
    return Number(d.end) - Number(d.start);
  }, canvas);

  await page.locator(canvas).scrollIntoViewIfNeeded();
  const box = await page.locator(canvas).boundingBox();
  // Where the core placed the drawn view's lanes (its `layout`).
  const places = await page.evaluate(() => document.querySelector('[data-testid=timeline]').timelineView.layout.lanes);
  assert.ok(places.length >= 1, 'at least one lane');
  const middle = (i) => box.y + places[i].top_px + places[i].rows[0].height_px / 2;
  // Zoom in around a point in the plot area, several wheel steps.
  const x = box.x + 150 + (box.width - 150) * 0.4;
  const y = middle(Math.min(1, places.length - 1));
  await page.mouse.move(x, y);
  for (let i = 0; i < 4; i++) {
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(80);
  }
  await page.waitForFunction(
    ([sel, drawn]) => Number(document.querySelector(sel).dataset.drawn || 0) > drawn,
    [canvas, Number(first.drawn)],
    { timeout: 30_000 },
  );
  await page.waitForTimeout(300);
  const zoomed = await canvasStats(page, canvas);
  assert.notEqual(zoomed.hash, first.hash, 'zoom changed the drawn pixels');
  assert.notEqual(await page.textContent('[data-testid=timeline-range]'), range0, 'the visible range changed');
  const span = await page.evaluate((sel) => {
    const d = document.querySelector(sel).dataset;
    return Number(d.end) - Number(d.start);
  }, canvas);
  assert.ok(span < fullSpan / 2, `zoomed in: ${span} ns of ${fullSpan} ns`);
  await page.screenshot({ path: artifact('timeline-zoomed.png'), clip: { x: 0, y: Math.max(0, box.y - 60), width: 1280, height: box.height + 80 } });

  // Drag pans; double-click resets.
  const beforePan = await page.evaluate((sel) => document.querySelector(sel).dataset.start, canvas);
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + 120, y, { steps: 6 });
  await page.mouse.up();
  await page.waitForFunction(([sel, s]) => document.querySelector(sel).dataset.start !== s, [canvas, beforePan], { timeout: 30_000 });
  await page.mouse.dblclick(x, y);
  await page.waitForFunction((sel) => !/×/.test(document.querySelector('[data-testid=timeline-range]').textContent), canvas, { timeout: 30_000 });

  // Hover over busy columns until the tooltip names a kernel.
  let named = null;
  for (let i = 0; i < 40 && !named; i++) {
    const hx = box.x + 152 + ((box.width - 154) * i) / 40;
    await page.mouse.move(hx, y);
    await page.waitForTimeout(120);
    if (await page.isVisible('[data-testid=tooltip]')) named = await page.textContent('[data-testid=tooltip-name]');
  }
  assert.ok(named && named.length > 0, 'the tooltip shows a kernel name');
  // The forward-step lane's tooltip names a step: the page holds no step name and reads
  // the hovered one back from the file.
  let step = null;
  for (let i = 0; i < 40 && !step; i++) {
    const hx = box.x + 152 + ((box.width - 154) * i) / 40;
    await page.mouse.move(hx, middle(0));
    await page.waitForTimeout(120);
    if (await page.isVisible('[data-testid=tooltip]')) step = await page.textContent('[data-testid=tooltip-name]');
  }
  assert.match(step ?? '', /^\[Executor\] _forward_step \d+: \d+ ctx reqs, \d+ gen reqs$/, `the step lane's tooltip: ${step}`);
  await page.screenshot({ path: artifact('timeline-hover.png'), clip: { x: 0, y: Math.max(0, box.y - 60), width: 1280, height: box.height + 140 } });
});

test('gap histogram: drawn, nine buckets in the table', { timeout: TIMEOUT }, async () => {
  const stats = await canvasStats(page, '[data-testid=gap-histogram]');
  assert.ok(stats.ink > 500, `the histogram has drawn pixels (${stats.ink})`);
  const rows = await page.$$eval('[data-testid=gap-table] tbody tr', (trs) => trs.length);
  assert.equal(rows, 9);
});

test('profile switch to trtllm-skill recomputes without reloading', { timeout: TIMEOUT }, async () => {
  const file = path.join(tmp, 'host-bound.sqlite');
  await page.check('[data-testid=profile-trtllm-skill]');
  await page.waitForSelector('body[data-profile="trtllm-skill"][data-state="done"]', { timeout: 60_000 });
  const { report } = await assertMatchesCli(file, 'trtllm-skill');
  const std = detectJson(file, 'standard');
  assert.notEqual(report.aggregate_metrics.gpu_idle_ratio, std.aggregate_metrics.gpu_idle_ratio, 'the profiles differ on this trace');
  await page.screenshot({ path: artifact('host-bound-trtllm-skill.png') });
  await page.check('[data-testid=profile-standard]');
  await page.waitForSelector('body[data-profile="standard"][data-state="done"]', { timeout: 60_000 });
  await assertMatchesCli(file, 'standard');
});

test('editing a threshold recomputes the verdict', { timeout: TIMEOUT }, async () => {
  await page.click('#thresholds summary');
  const input = '[data-testid=threshold-gpu_idle_ratio]';
  await page.fill(input, '95');
  await page.waitForFunction(() => document.querySelector('[data-scope=aggregate] [data-metric=gpu_idle_ratio]')?.dataset.crossed === 'false', null, { timeout: 60_000 });
  await page.waitForSelector('body[data-state="done"]');
  await page.click('#thresholds-reset');
  await page.waitForFunction(() => document.querySelector('[data-scope=aggregate] [data-metric=gpu_idle_ratio]')?.dataset.crossed === 'true', null, { timeout: 60_000 });
  await page.click('#thresholds summary');
});

test('generated gpu-bound trace: verdict NO, equals the CLI', { timeout: TIMEOUT }, async () => {
  const file = generate('gpu-bound', path.join(tmp, 'gpu-bound.sqlite'));
  await load(file);
  const { report } = await assertMatchesCli(file);
  assert.equal(report.verdict, 'NO');
  await page.screenshot({ path: artifact('gpu-bound-top.png') });
});

test('a kernel table out of start order: the page reads it as sorted runs and equals the CLI', { timeout: TIMEOUT }, async () => {
  // nsys promises no row order (2025.6 release notes): the page's one pass stops at the first
  // kernel out of order and measures the verdict over the file's rows read in start order.
  const sorted = generate('tp2-straggler', path.join(tmp, 'sorted.sqlite'));
  const file = path.join(tmp, 'reversed.sqlite');
  fs.copyFileSync(sorted, file);
  const reverse = `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript('''CREATE TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start DESC;
DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k; DROP TABLE k;''')
c.commit()`;
  execFileSync('python3', ['-c', reverse, file]);
  await load(file);
  const { report } = await assertMatchesCli(file);
  assert.equal(report.verdict, detectJson(sorted).verdict, 'the sorted file\'s verdict');
  const stats = await canvasStats(page, '[data-testid=timeline]');
  assert.ok(stats.ink > 500, `the timeline is drawn (${stats.ink} ink pixels)`);
});

test('on a one-core machine the page opens the file the same way', { timeout: TIMEOUT }, async () => {
  const one = await openSite({}, () => Object.defineProperty(navigator, 'hardwareConcurrency', { get: () => 1 }));
  try {
    const cores = await one.page.evaluate(() => navigator.hardwareConcurrency);
    assert.equal(cores, 1);
    const file = path.join(tmp, 'host-bound.sqlite');
    await openTrace(one.page, file, { timeout: TIMEOUT });
    await matchesCli(one.page, file);
    assert.equal(await readerOpens(one.page), 0, 'no reader worker on one core');
  } finally {
    await one.close();
  }
});

test('a reader worker the browser refuses: the analysis worker reads the kernel table itself', { timeout: TIMEOUT }, async () => {
  // Every worker after the first (the analysis worker) is refused, as a policy might.
  const refused = await openSite({}, () => {
    const Real = window.Worker;
    let made = 0;
    window.Worker = class extends Real {
      constructor(...args) {
        made += 1;
        if (made > 1) throw new Error('no second worker');
        super(...args);
      }
    };
  });
  try {
    const file = path.join(tmp, 'host-bound.sqlite');
    await openTrace(refused.page, file, { timeout: TIMEOUT });
    await matchesCli(refused.page, file);
    assert.equal(await readerOpens(refused.page), 0, 'no reader answered');
    assert.deepEqual(refused.problems, [], 'page errors / console errors');
  } finally {
    await refused.close();
  }
});

// Copies, memsets and graph replays are GPU work: the page's verdict counts them as the CLI's
// does, bound included.
for (const scenario of ['copy-bound', 'serving-graphs', 'serving-graphs-node']) {
  test(`generated ${scenario}: equals the CLI, what bounds the run first`, { timeout: TIMEOUT }, async () => {
    const file = generate(scenario, path.join(tmp, `${scenario}.sqlite`));
    await load(file);
    const { report } = await assertMatchesCli(file);
    assert.ok(report.bound, 'a bound under standard');
    if (scenario === 'copy-bound') assert.equal(report.bound.kind, 'transfer-bound');
    if (scenario === 'serving-graphs') assert.ok(report.bound.replays > 0, 'replays counted');
  });
}

for (const name of [
  'GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite',
  'GindaChen_nsys-ai__mfu_2gpu_before.sqlite',
  'brycelelbach_nsightful__power_iteration__baseline.sqlite',
  'LeiWang1999_memfusion_artifact__report1.sqlite',
]) {
  test(`public trace ${name}: equals the CLI`, { timeout: TIMEOUT }, async () => {
    const file = publicTrace(name);
    const opens = await readerOpens(page);
    await load(file);
    assert.equal(await readerOpens(page), opens + 1, 'the kernel table read by the reader worker');
    const { report } = await assertMatchesCli(file);
    // What was not computed is said on the page.
    const coverage = await page.textContent('[data-testid=coverage]');
    for (const c of report.coverage) assert.ok(coverage.includes(c.reason), `coverage note shown: ${c.reason}`);
    const version = await page.textContent('[data-testid=fact-nsys-version]');
    assert.equal(version, report.trace.nsys_version || 'unknown');
    await page.screenshot({ path: artifact(`public-${name.replace(/\.sqlite$/, '')}.png`), fullPage: true });
  });
}

test('random bytes: a clear error, then the next file analyses normally', { timeout: TIMEOUT }, async () => {
  const junk = path.join(tmp, 'random.sqlite');
  fs.writeFileSync(junk, crypto.randomBytes(64 * 1024));
  await load(junk, 'error');
  const message = (await page.textContent('[data-testid=error]')).trim();
  assert.ok(message.length > 20, `an error message is shown: ${message}`);
  assert.ok(await page.isVisible('[data-testid=error]'));
  await page.screenshot({ path: artifact('error-random-bytes.png') });

  const rep = path.join(tmp, 'trace.nsys-rep');
  fs.writeFileSync(rep, Buffer.concat([Buffer.from('NSYS-REPORT'), crypto.randomBytes(4096)]));
  await load(rep, 'error');
  assert.match(await page.textContent('[data-testid=error]'), /export|sqlite/i, 'the .nsys-rep message says how to export');

  const empty = path.join(tmp, 'empty.sqlite');
  fs.writeFileSync(empty, '');
  await load(empty, 'error');

  const file = path.join(tmp, 'host-bound.sqlite');
  await load(file);
  assert.ok(await page.isHidden('[data-testid=error]'), 'the error is gone');
  await assertMatchesCli(file);
});

test('two files: baseline and target, the verdict view shows the target and switches', { timeout: TIMEOUT }, async () => {
  const a = path.join(tmp, 'host-bound.sqlite');
  const b = path.join(tmp, 'gpu-bound.sqlite');
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', [b, a]);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'done', run, { timeout: TIMEOUT });
  assert.equal(await page.textContent('[data-testid=file-name]'), 'host-bound.sqlite');
  assert.match(await page.textContent('[data-testid=session]'), /baseline · gpu-bound\.sqlite.*target · host-bound\.sqlite/s);
  await assertMatchesCli(a);
  await page.click('[data-testid=slot-baseline]');
  await page.waitForFunction(() => document.querySelector('[data-testid=file-name]').textContent === 'gpu-bound.sqlite' && document.body.dataset.state === 'done', null, { timeout: TIMEOUT });
  await assertMatchesCli(b);
});

test('cancel stops a running analysis and the page stays usable', { timeout: TIMEOUT }, async () => {
  const big = generate('host-bound', path.join(tmp, 'big.sqlite'), 250);
  await page.setInputFiles('#file-input', big);
  await page.waitForSelector('body[data-state="loading"]', { timeout: 30_000 });
  await page.click('[data-testid=cancel]');
  await page.waitForSelector('body[data-state="idle"]', { timeout: 30_000 });
  const file = path.join(tmp, 'host-bound.sqlite');
  await load(file);
  await assertMatchesCli(file);
});

test('a 320,000-kernel trace (the reader worker\'s part in several blocks): the verdict equals the CLI\'s in both profiles', { timeout: TIMEOUT }, async () => {
  // The cancel test's trace.
  const big = path.join(tmp, 'big.sqlite');
  await load(big);
  await assertMatchesCli(big);
  await page.check('[data-testid=profile-trtllm-skill]');
  await page.waitForSelector('body[data-profile="trtllm-skill"][data-state="done"]', { timeout: 60_000 });
  await assertMatchesCli(big, 'trtllm-skill');
  await page.check('[data-testid=profile-standard]');
  await page.waitForSelector('body[data-profile="standard"][data-state="done"]', { timeout: 60_000 });
});

test('no request left 127.0.0.1 and the page logged no errors', () => {
  assert.ok(requests.urls.length > 5, 'requests were recorded');
  assert.deepEqual(requests.outside(srv.origin), [], 'requests outside the local site');
  assert.deepEqual(problems, [], 'page errors / console errors');
});

// The tables the verdict reads under each profile: `trtllm-skill`'s busy time is kernels only.
const VERDICT_TABLES = {
  standard: ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET'],
  'trtllm-skill': ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS'],
};

for (const [profile, expected] of [['standard', 31883], ['trtllm-skill', 30594]]) {
  test(`${profile}: the progress line counts the file both workers read, then the verdict's rows (the calls: the ranges and GPU work swept beside the scan) against the rows SQL counts`, { timeout: TIMEOUT }, async () => {
    const file = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
    const count = `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(sum(c.execute(f'SELECT count(*) FROM {t}').fetchone()[0] for t in sys.argv[2:]))`;
    const rows = Number(execFileSync('python3', ['-c', count, file, ...VERDICT_TABLES[profile]]).toString().trim());
    assert.equal(rows, expected, 'mfu_2gpu_before: 4,010 kernels, 7,466 calls, 19,118 ranges (and 1,020 copies, 269 memsets)');
    await page.check(`[data-testid=profile-${profile}]`);
    await page.evaluate(() => {
      const line = document.getElementById('progress-step');
      window.progressSeen = [];
      new MutationObserver(() => window.progressSeen.push(line.textContent)).observe(line, { childList: true, characterData: true, subtree: true });
    });
    await openTrace(page, file, { timeout: TIMEOUT });
    assert.equal(await page.evaluate(() => document.body.dataset.profile), profile);
    const seen = await page.evaluate(() => window.progressSeen);
    const size = `${(fs.statSync(file).size / (1 << 20)).toFixed(1)} MiB`;
    const reading = seen.filter((t) => t.startsWith('Reading the file: '));
    assert.ok(reading.length > 0 && reading.every((t) => t.includes(` of ${size}`)), seen.join('\n'));
    const shares = reading.map((t) => Number(/\((\d+) %\)/.exec(t)?.[1] ?? 0));
    assert.ok(Math.max(...shares) >= 90, `the file read reached ${Math.max(...shares)} %`);
    // The export is in start order: the analysis worker folded its ranges and the reader worker
    // swept the GPU work beside the scan, so the verdict's passes read only the calls.
    const reader = await page.evaluate(() => performance.getEntriesByName('nsys-lens:reader').at(-1)?.detail);
    assert.equal(reader?.swept, true, 'the reader worker swept the GPU work');
    const calls = Number(execFileSync('python3', ['-c', count, file, 'CUPTI_ACTIVITY_KIND_RUNTIME']).toString().trim());
    const verdict = seen.filter((t) => t.startsWith('Computing the verdict: '));
    assert.ok(verdict.length > 0, seen.join('\n'));
    assert.ok(verdict.every((t) => t.includes(` of ${calls.toLocaleString('en-US')} rows`)), verdict.join('\n'));
    await page.check('[data-testid=profile-standard]');
    await page.waitForSelector('body[data-profile="standard"][data-state="done"]', { timeout: 60_000 });
  });
}
