// End-to-end: the Root cause and Drill-down views against the CLI's `analyze --json` and
// `drill --json` for the same files — the regression pair compared, one trace's breakdown, the
// drill-down of a TP=2 run and of several rank files, CUDA-graph coverage, gap click → timeline,
// and the report exports built in the page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { showView as showViewOf, requireDist, openSite, cli, generate, artifact, openTrace, canvasStats, publicTrace } from './helpers.mjs';

const TIMEOUT = 240_000;
let site;
let srv;
let browser;
let page;
let requests;
let problems; // page errors and console errors, checked at the end
let tmp;

function cliJson(args) {
  const out = execFileSync(cli(), [...args, '--json'], { maxBuffer: 256 << 20 });
  return JSON.parse(out.toString('utf8'));
}

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-deeper-'));
  for (const s of ['regression-baseline', 'regression-target', 'tp2-straggler', 'cuda-graphs']) generate(s, path.join(tmp, `${s}.sqlite`));
  site = await openSite({ acceptDownloads: true });
  ({ srv, browser, page, requests, problems } = site);
});

after(async () => {
  await site?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const file = (s) => path.join(tmp, `${s}.sqlite`);

async function openFiles(files) {
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', files);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'done', run, { timeout: TIMEOUT });
}

const showView = (name) => showViewOf(page, name, TIMEOUT);

// Rows of a table as {name: dataset}.
async function rows(testid) {
  return page.evaluate((id) => Object.fromEntries([...document.querySelectorAll(`[data-testid=${id}] tbody tr`)].map((r) => [r.dataset.name, { ...r.dataset }])), testid);
}

const num = (s) => (s === '' || s === undefined ? null : Number.parseFloat(s));

async function assertComparisonMatchesCli(profile) {
  // The page labels the traces by their file names (the CLI's --*-label).
  const labels = ['--baseline-label', 'regression-baseline.sqlite', '--target-label', 'regression-target.sqlite'];
  const want = cliJson(['analyze', file('regression-baseline'), file('regression-target'), '--profile', profile, ...labels]);
  const c = want.comparison;
  const wall = await page.$eval('[data-rc=wall_time_per_step_us]', (e) => ({ ...e.dataset }));
  assert.equal(num(wall.baseline), c.wall_time_per_step_us.baseline, `${profile} baseline wall/step`);
  assert.equal(num(wall.target), c.wall_time_per_step_us.target, `${profile} target wall/step`);
  assert.equal(num(wall.deltaPct), c.wall_time_per_step_us.delta_pct, `${profile} wall delta %`);
  const kps = await page.$eval('[data-rc=kernels_per_step]', (e) => ({ ...e.dataset }));
  assert.equal(num(kps.baseline), c.kernels_per_step.baseline);
  assert.equal(num(kps.target), c.kernels_per_step.target);
  assert.equal(await page.textContent('[data-testid=rc-conclusion]'), c.conclusion);
  for (const [table, list] of [['rc-nvtx', c.nvtx], ['rc-kernels', c.kernels], ['rc-api', c.api]]) {
    const got = await rows(table);
    assert.equal(Object.keys(got).length, list.length, `${profile} ${table} rows`);
    for (const r of list) {
      const g = got[r.name];
      assert.ok(g, `${profile} ${table} has ${r.name}`);
      assert.equal(g.status, r.status, `${table} ${r.name} status`);
      assert.equal(num(g.baseline), r.baseline_us_per_step, `${table} ${r.name} baseline`);
      assert.equal(num(g.target), r.target_us_per_step, `${table} ${r.name} target`);
      assert.equal(num(g.delta), r.delta_us, `${table} ${r.name} delta`);
    }
  }
  assert.equal(await page.textContent('[data-testid=rc-handoff]'), c.handoff.text);
  return want;
}

test('two files: baseline vs target comparison equals `analyze --json` (both profiles)', { timeout: TIMEOUT }, async () => {
  await openFiles([file('regression-baseline'), file('regression-target')]);
  assert.equal(await page.textContent('[data-testid=file-name]'), 'regression-target.sqlite', 'the verdict view shows the target');
  await showView('rootcause');
  const want = await assertComparisonMatchesCli('standard');
  // The regression: the generator placed these.
  const nvtx = await rows('rc-nvtx');
  assert.equal(nvtx._fetch_new_requests.status, 'REGRESSION');
  assert.equal(nvtx._update_requests.status, 'REGRESSION');
  assert.equal(nvtx.broadcast_requests.status, 'NEW');
  // Sorted by absolute change, largest first.
  const order = await page.$$eval('[data-testid=rc-nvtx] tbody tr', (trs) => trs.map((t) => Math.abs(Number(t.dataset.delta))));
  assert.deepEqual(order, [...order].sort((a, b) => b - a));
  assert.match(await page.textContent('[data-testid=rc-line-profiler]'), /^TLLM_LINE_PROFILER_FUNCTIONS=/);
  await page.waitForSelector('[data-testid=rc-step-plot][data-drawn="1"]');
  const plot = await canvasStats(page, '[data-testid=rc-step-plot]');
  assert.ok(plot.ink > 500, `step plot drawn (${plot.ink} ink pixels)`);
  assert.ok(want.baseline.step_wall_times_us.length > 5);
  await page.screenshot({ path: artifact('rootcause-compare.png'), fullPage: true });

  await page.check('[data-testid=profile-trtllm-skill]');
  await page.waitForFunction(() => document.querySelector('#rootcause')?.dataset.profile === 'trtllm-skill' && document.body.dataset.rootcauseState === 'done', null, { timeout: TIMEOUT });
  await assertComparisonMatchesCli('trtllm-skill');
  await page.check('[data-testid=profile-standard]');
  await page.waitForFunction(() => document.querySelector('#rootcause')?.dataset.profile === 'standard' && document.body.dataset.rootcauseState === 'done', null, { timeout: TIMEOUT });

  // The baseline's own verdict is one click away.
  await page.click('[data-testid=tab-verdict]');
  await page.click('[data-testid=slot-baseline]');
  await page.waitForFunction(() => document.querySelector('[data-testid=file-name]').textContent === 'regression-baseline.sqlite' && document.body.dataset.state === 'done', null, { timeout: TIMEOUT });
  const detect = cliJson(['detect', file('regression-baseline')]);
  assert.equal(await page.textContent('[data-testid=verdict]'), detect.verdict);
});

test('one file: its own per-step breakdown equals `analyze --json`', { timeout: TIMEOUT }, async () => {
  await openTrace(page, file('tp2-straggler'), { timeout: TIMEOUT });
  await showView('rootcause');
  const want = cliJson(['analyze', file('tp2-straggler')]).baseline;
  const fig = async (k) => num(await page.$eval(`[data-rc=${k}]`, (e) => e.dataset.value));
  assert.equal(await fig('wall_time_per_step_us'), want.wall_time_per_step_us);
  assert.equal(await fig('steady_steps'), want.steady_steps);
  assert.equal(await fig('kernels_per_step'), want.kernels_per_step);
  assert.equal(await fig('inter_step_gap_p50_us'), want.inter_step_gap_us.p50);
  const nvtx = await rows('rc-nvtx');
  assert.equal(Object.keys(nvtx).length, want.nvtx_ops.length);
  for (const op of want.nvtx_ops) assert.equal(num(nvtx[op.name].usPerStep), op.us_per_step, op.name);
  assert.equal(await page.getAttribute('[data-testid=rc-isolation] li', 'data-method'), want.iteration_method);
});

async function assertDrillMatchesCli(files) {
  const want = cliJson(['drill', ...files, '--top', '10']);
  const summary = await page.$eval('[data-testid=drill-gap-summary]', (e) => ({ ...e.dataset }));
  assert.equal(Number(summary.gaps), want.gaps.gaps);
  assert.equal(num(summary.totalUs), want.gaps.total_us);
  const top = await page.$$eval('[data-testid=drill-top-gaps] tbody tr', (trs) => trs.map((t) => ({ ...t.dataset })));
  assert.equal(top.length, want.gaps.top.length);
  top.forEach((g, i) => {
    assert.equal(num(g.gapUs), want.gaps.top[i].gap_us, `top gap ${i + 1}`);
    assert.equal(g.startNs, String(want.gaps.top[i].start_ns));
  });
  if (want.stragglers.ranks.length >= 2) {
    const s = await page.$eval('[data-testid=drill-straggler]', (e) => ({ ...e.dataset }));
    assert.equal(num(s.share), want.stragglers.share);
    assert.equal(num(s.latenessUs), want.stragglers.mean_lateness_us);
    assert.equal(Number(s.collectives), want.stragglers.collectives);
    assert.equal(s.device, want.stragglers.rank ? String(want.stragglers.rank.device) : '');
  } else {
    assert.equal(await page.$('[data-testid=drill-straggler]'), null, 'no straggler verdict for one rank');
  }
  const cov = await page.$eval('[data-drill=coverage]', (e) => e.dataset.value);
  assert.equal(num(cov), want.graphs.coverage);
  // One findings list: the page shows the CLI's findings, in its order.
  const titles = await page.$$eval('[data-testid=drill-findings] li', (l) => l.map((f) => f.dataset.title));
  assert.deepEqual(titles, want.findings.map((f) => f.title));
  // Where the idle time went: every cause of every device, as the CLI attributes it.
  // Each with its label and the frames its CPU samples name.
  const causes = await page.$$eval('[data-testid=drill-idle-causes] tbody tr', (trs) => trs.map((t) => [t.dataset.kind, Number(t.dataset.device), Number(t.dataset.ns), t.dataset.label, t.dataset.frames]));
  const frames = (c) => (c.frames || []).map((f) => `${f.frame}=${f.samples}`).join('\n');
  assert.deepEqual(causes, want.idle.per_device.flatMap((d) => d.causes.map((c) => [c.kind, d.device, c.ns, c.label, frames(c)])));
  return want;
}

test('drill-down of a TP=2 trace equals `drill --json`; a gap click zooms the timeline to it', { timeout: TIMEOUT }, async () => {
  await openTrace(page, file('tp2-straggler'), { timeout: TIMEOUT });
  await showView('drill');
  const want = await assertDrillMatchesCli([file('tp2-straggler')]);
  assert.equal(want.stragglers.rank.device, 1, 'the generator made rank 1 late');
  if (want.patterns.found) {
    assert.equal(Number(await page.getAttribute('[data-testid=drill-pattern-summary]', 'data-layers')), want.patterns.layers);
  }
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-lateness-plot]').height > 0);
  assert.ok((await canvasStats(page, '[data-testid=drill-lateness-plot]')).ink > 200, 'lateness plot drawn');
  assert.ok((await canvasStats(page, '[data-testid=drill-gap-histogram]')).ink > 200, 'gap histogram drawn');
  await page.screenshot({ path: artifact('drill-tp2.png'), fullPage: true });

  const gap = want.gaps.top[0];
  const before = await page.getAttribute('[data-testid=timeline]', 'data-drawn');
  await page.click('[data-testid=drill-top-gaps] tbody tr:first-child');
  await page.waitForFunction((b) => document.querySelector('[data-testid=timeline]').dataset.drawn !== b && !document.querySelector('[data-testid=view-verdict]').hidden, before, { timeout: 30_000 });
  const view = await page.$eval('[data-testid=timeline]', (c) => ({ start: Number(c.dataset.start), end: Number(c.dataset.end) }));
  assert.ok(view.start <= gap.start_ns && view.end >= gap.end_ns, `the view ${view.start}–${view.end} holds the gap ${gap.start_ns}–${gap.end_ns}`);
  assert.ok(view.end - view.start <= 4 * (gap.end_ns - gap.start_ns) + 4000, 'zoomed in on the gap');
  await page.screenshot({ path: artifact('drill-gap-on-timeline.png') });
});

test('the trace\'s own records explain idle time in the page as in `drill --json`: module and lazy loading, the profiler, a full command buffer, the launching thread off its CPU and its sampled code', { timeout: TIMEOUT }, async () => {
  const trace = generate('host-records', path.join(tmp, 'host-records.sqlite'));
  await openTrace(page, trace, { timeout: TIMEOUT });
  await showView('drill');
  const want = await assertDrillMatchesCli([trace]);
  const kinds = want.idle.per_device[0].causes.map((c) => c.kind);
  for (const k of ['module_load', 'lazy_load', 'profiler', 'host_ahead', 'cpu_busy', 'cpu_waiting']) assert.ok(kinds.includes(k), `${k} in ${kinds}`);
  const busy = await page.$eval('[data-testid=drill-idle-causes] tbody tr[data-kind=cpu_busy]', (t) => t.textContent);
  assert.match(busy, /tokenize \(libserving\.so\)/, 'the sampled function is shown');
  // What the other GPUs ran while the launching thread waited on a full command buffer: the
  // core's sentence, as `drill --json` gives it.
  const ahead = want.idle.per_device[0].causes.find((c) => c.kind === 'host_ahead');
  const shown = await page.$eval('[data-testid=drill-idle-causes] tbody tr[data-kind=host_ahead] [data-testid=drill-idle-meanwhile]', (m) => m.textContent);
  assert.equal(shown, `meanwhile ${ahead.meanwhile.sentence}`);
  assert.match(shown, /device 1 ran/, 'the scenario plants device 1\'s work during the wait');
  await page.screenshot({ path: artifact('drill-host-records.png'), fullPage: true });
});

test('a public export: idle causes and findings equal `drill --json`; a cause lists its gaps and zooms the timeline to the largest', { timeout: TIMEOUT }, async () => {
  const trace = publicTrace('brycelelbach_nsightful__power_iteration__baseline.sqlite');
  await openTrace(page, trace, { timeout: TIMEOUT });
  await showView('drill');
  const want = await assertDrillMatchesCli([trace]);
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-idle-chart]').height > 0);
  assert.ok((await canvasStats(page, '[data-testid=drill-idle-chart]')).ink > 200, 'idle-cause chart drawn');
  const first = want.idle.per_device[0].causes[0];
  assert.equal(first.kind, 'nvtx', 'the IO range holds the idle time (read from the rows in crate/tests/drill.rs)');
  await page.screenshot({ path: artifact('drill-idle-causes.png'), fullPage: true });
  const before = await page.getAttribute('[data-testid=timeline]', 'data-drawn');
  await page.click('[data-testid=drill-idle-causes] tbody tr:first-child');
  const listed = await page.$$eval('[data-testid=drill-idle-gap-list] tbody tr', (trs) => trs.map((t) => [Number(t.dataset.startNs), Number(t.dataset.endNs)]));
  assert.deepEqual(listed, first.gaps.map((g) => [g.start_ns, g.end_ns]));
  await page.waitForFunction((b) => document.querySelector('[data-testid=timeline]').dataset.drawn !== b && !document.querySelector('[data-testid=view-verdict]').hidden, before, { timeout: 30_000 });
  const view = await page.$eval('[data-testid=timeline]', (c) => ({ start: Number(c.dataset.start), end: Number(c.dataset.end) }));
  const gap = first.gaps[0];
  assert.ok(view.start <= gap.start_ns && view.end >= gap.end_ns, `the view ${view.start}–${view.end} holds the gap ${gap.start_ns}–${gap.end_ns}`);
});

test('three rank files: stragglers across files equal `drill a b c --json`', { timeout: TIMEOUT }, async () => {
  const ranks = [0, 1, 2].map((i) => {
    const f = path.join(tmp, `rank${i}.sqlite`);
    fs.copyFileSync(file('tp2-straggler'), f);
    return f;
  });
  await openFiles(ranks);
  assert.equal(await page.getAttribute('body', 'data-mode'), 'ranks');
  await showView('drill');
  await assertDrillMatchesCli(ranks);
});

test('CUDA-graph coverage of the cuda-graphs scenario equals the CLI and the generator', { timeout: TIMEOUT }, async () => {
  await openTrace(page, file('cuda-graphs'), { timeout: TIMEOUT });
  await showView('drill');
  const want = await assertDrillMatchesCli([file('cuda-graphs')]);
  const answers = JSON.parse(fs.readFileSync(path.join(tmp, 'cuda-graphs.answers.json'), 'utf8'));
  const graphKernels = Number(await page.getAttribute('[data-drill=graph_kernels]', 'data-value'));
  assert.equal(graphKernels, want.graphs.graph_kernels);
  const placed = answers.graph_kernels ?? answers.drill?.graph_kernels;
  if (placed !== undefined) assert.equal(graphKernels, placed, 'graph kernels placed by the generator');
});

test('report exports are built in the page: HTML self-contained, CSV zip, Markdown, JSON', { timeout: TIMEOUT }, async () => {
  await openTrace(page, file('tp2-straggler'), { timeout: TIMEOUT });
  await showView('drill');
  const saved = {};
  for (const format of ['html', 'csv-zip', 'md', 'json']) {
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: TIMEOUT }), page.click(`[data-testid=export-${format}]`)]);
    const out = path.join(tmp, download.suggestedFilename());
    await download.saveAs(out);
    saved[format] = fs.readFileSync(out);
  }
  const html = saved.html.toString('utf8');
  assert.match(html, /<html/i);
  assert.doesNotMatch(html, /(src|href)\s*=\s*["']?https?:/i, 'no external asset in the HTML report');
  assert.match(html, /<svg/i, 'plots embedded');
  // It opens offline: from file://, every request outside the file refused.
  const offline = await browser.newContext({ offline: true });
  const outside = [];
  offline.on('request', (r) => {
    if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) outside.push(r.url());
  });
  const htmlPath = path.join(tmp, 'opened-offline.html');
  fs.writeFileSync(htmlPath, saved.html);
  const viewer = await offline.newPage();
  await viewer.goto(`file://${htmlPath}`);
  assert.ok((await viewer.$$('svg')).length > 0, 'the report shows its plots offline');
  assert.match(await viewer.textContent('body'), /Straggler|straggler/);
  await viewer.screenshot({ path: artifact('report-html-offline.png') });
  await offline.close();
  assert.deepEqual(outside, [], 'the HTML report requested nothing');
  assert.equal(saved['csv-zip'].subarray(0, 2).toString('latin1'), 'PK', 'a zip');
  const report = JSON.parse(saved.json.toString('utf8'));
  assert.ok(report.drill && report.explain && report.detect, 'report.json has the detect, explain and drill sections');
  assert.match(saved.md.toString('utf8'), /^# /m);
  // The same report as `nsys-lens report`, key for key (the CLI given the file name the page
  // labels the trace by): built from the Drill-down the page computed and the verdict it shows.
  const dir = path.join(tmp, 'cli-report');
  execFileSync(cli(), ['report', path.basename(file('tp2-straggler')), '--out', dir], { stdio: 'ignore', cwd: path.dirname(file('tp2-straggler')) });
  const cliJsonReport = JSON.parse(fs.readFileSync(path.join(dir, 'report.json'), 'utf8'));
  assert.deepEqual(report, cliJsonReport);
});

test('two files, the target not an export: the error names the file, the page stays usable', { timeout: TIMEOUT }, async () => {
  const junk = path.join(tmp, 'target-junk.sqlite');
  fs.writeFileSync(junk, Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 7919) % 251)));
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', [file('regression-baseline'), junk]);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'error', run, { timeout: TIMEOUT });
  const message = await page.textContent('[data-testid=error-message]');
  assert.match(message, /^target-junk\.sqlite: .*SQLite/, message);
  await openTrace(page, file('tp2-straggler'), { timeout: TIMEOUT });
  assert.ok(await page.isHidden('[data-testid=error]'));
  assert.equal(await page.textContent('[data-testid=file-name]'), 'tp2-straggler.sqlite');
});

test('no request left 127.0.0.1 and the page logged no errors (deeper views)', () => {
  assert.ok(requests.urls.length > 5);
  assert.deepEqual(requests.outside(srv.origin), []);
  assert.deepEqual(problems, []);
});
