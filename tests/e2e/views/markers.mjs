// End-to-end: step markers on the page. A vLLM-marked trace is read under the marker the page
// preselects; the step-marker field recomputes the verdict, Root cause and Drill-down (each
// equal to the CLI given the same marker); Root cause without steps says why in one sentence
// with the field to fix it; two files show the Verdict side by side, baseline → target, every
// metric equal to `detect --json` of each file.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useSite, cli, artifact, openTrace, publicTrace, METRIC_KEYS } from '../helpers.mjs';

const TIMEOUT = 240_000;
let site;
let page;
let tmp;

function cliJson(args) {
  const out = execFileSync(cli(), [...args, '--json'], { maxBuffer: 256 << 20 });
  return JSON.parse(out.toString('utf8'));
}

function gen(scenario, markers) {
  const out = path.join(tmp, `${scenario}-${markers}.sqlite`);
  execFileSync(cli(), ['gen', scenario, out, '--markers', markers], { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

useSite('nsys-lens-markers-', (s) => ({ site, page, tmp } = s));


const num = (s) => (s === '' || s === undefined ? null : Number.parseFloat(s));

async function rootCauseDone() {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.rootcauseState), null, { timeout: TIMEOUT });
  assert.equal(await page.evaluate(() => document.body.dataset.rootcauseState), 'done');
}

// Waits for the verdict to be measured again after a marker change.
async function verdictAgain(before) {
  await page.waitForFunction((b) => document.body.dataset.state === 'done' && document.getElementById('step-marker-note').textContent !== b, before, { timeout: TIMEOUT });
}

test('the step-marker field: preselected, and it recomputes verdict, root cause and drill-down', { timeout: TIMEOUT }, async () => {
  const file = gen('regression-baseline', 'vllm');
  await openTrace(page, file, { timeout: TIMEOUT });
  assert.equal(await page.inputValue('[data-testid=step-marker]'), 'vllm', 'the marker the trace shows is preselected');
  assert.match(await page.textContent('[data-testid=step-marker-note]'), /^built-in marker vllm \(found in the trace\): execute_context/);
  const detect = cliJson(['detect', file]);
  assert.equal(detect.step_marker.marker, 'vllm');
  const phaseCount = (p) => page.$$eval('#phases tbody tr', (trs) => trs.length);
  assert.ok((await phaseCount()) >= 2, 'context and generation phases');

  await page.click('[data-testid=tab-rootcause]');
  await rootCauseDone();
  const want = cliJson(['analyze', file]).baseline;
  const fig = async (k) => num(await page.$eval(`[data-rc=${k}]`, (e) => e.dataset.value));
  assert.equal(await fig('wall_time_per_step_us'), want.wall_time_per_step_us);
  assert.equal(await fig('steady_steps'), want.steady_steps);

  // A marker the trace does not have: no steps, one sentence and the field to fix it.
  let note = await page.textContent('[data-testid=step-marker-note]');
  await page.fill('[data-testid=step-marker]', 'pytorch');
  await page.dispatchEvent('[data-testid=step-marker]', 'change');
  await verdictAgain(note);
  await rootCauseDone();
  await page.waitForSelector('[data-testid=rc-missing]');
  assert.equal(await page.$('[data-rc=wall_time_per_step_us]'), null, 'no wall of empty figures');
  const missing = await page.textContent('[data-testid=rc-missing] li');
  assert.match(missing, /regression-baseline-vllm\.sqlite: .*ProfilerStep#N/);
  const none = cliJson(['detect', file, '--phase-map', 'pytorch']);
  assert.deepEqual(none.phases, {});
  await page.screenshot({ path: artifact('rootcause-no-steps.png'), fullPage: true });

  // The field in the sentence: a regex with counts gives the built-in figures again.
  const re = String.raw`^execute_context_(?P<ctx>\d+)\(\d+\)_generation_(?P<gen>\d+)\(\d+\)$`;
  note = await page.textContent('[data-testid=step-marker-note]');
  await page.fill('[data-testid=rc-step-marker]', re);
  await page.click('[data-testid=rc-step-marker-apply]');
  await verdictAgain(note);
  await rootCauseDone();
  await page.waitForSelector('[data-rc=wall_time_per_step_us]');
  const byRegex = cliJson(['analyze', file, '--step-regex', re]).baseline;
  assert.equal(byRegex.step_marker.source, 'regex');
  assert.equal(await fig('wall_time_per_step_us'), byRegex.wall_time_per_step_us);
  assert.equal(await fig('wall_time_per_step_us'), want.wall_time_per_step_us);
  assert.equal(await page.inputValue('[data-testid=step-marker]'), re);
  assert.match(await page.textContent('[data-testid=step-marker-note]'), /^regex \(given\): /);

  // The drill-down reads the same marker (its per-phase figures need the steps).
  await page.click('[data-testid=tab-drill]');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.drillState), null, { timeout: TIMEOUT });
  assert.equal(await page.evaluate(() => document.body.dataset.drillState), 'done');

  // Back to auto.
  note = await page.textContent('[data-testid=step-marker-note]');
  await page.fill('[data-testid=step-marker]', 'auto');
  await page.dispatchEvent('[data-testid=step-marker]', 'change');
  await verdictAgain(note);
  assert.equal(await page.inputValue('[data-testid=step-marker]'), 'vllm');
  await page.click('[data-testid=tab-verdict]');
});

// No step marker: the hint says what the verdict's streamed kernel pass inferred, as the CLI's
// loaded `detect` (and `analyze`) do, with the generator's kernels per step and steps.
test('without a marker, the field hint names the unit inferred from the kernel stream', { timeout: TIMEOUT }, async () => {
  const file = gen('host-bound', 'none');
  const answers = JSON.parse(fs.readFileSync(file.replace(/\.sqlite$/, '.answers.json'), 'utf8'));
  const phases = answers.profiles.standard.phases;
  const steps = phases.context.iteration_count + phases.generation.iteration_count;
  const period = answers.kernels / steps;
  await openTrace(page, file, { timeout: TIMEOUT });
  const note = await page.textContent('[data-testid=step-marker-note]');
  assert.equal(note, `no step marker; steps inferred from the kernel stream by kernel-sequence (confidence 100.0%): ${period} kernels × ${steps} repeats on device 0`);
  assert.equal(note, cliJson(['detect', file]).step_source);
  assert.equal(await page.inputValue('[data-testid=step-marker]'), '');
  await page.screenshot({ path: artifact('marker-inferred.png'), fullPage: true });

  // One CUDA graph launched per step: the launches mark the steps (N launches, N − 1 steps).
  const graphs = gen('cuda-graphs', 'none');
  const graphAnswers = JSON.parse(fs.readFileSync(graphs.replace(/\.sqlite$/, '.answers.json'), 'utf8'));
  await openTrace(page, graphs, { timeout: TIMEOUT });
  const graphNote = await page.textContent('[data-testid=step-marker-note]');
  assert.equal(graphNote, cliJson(['detect', graphs]).step_source);
  assert.match(graphNote, new RegExp(`^no step marker; steps inferred from CUDA-graph launches by graph-launch \\(confidence 100\\.0%\\): ${graphAnswers.cuda_graphs.graph_launches - 1} steps from one graph launch to the next`));

  // A real export without markers: FastVideo's 119-kernel repeat, back to back.
  const real = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
  await openTrace(page, real, { timeout: TIMEOUT });
  const realNote = await page.textContent('[data-testid=step-marker-note]');
  assert.equal(realNote, cliJson(['detect', real]).step_source);
  assert.match(realNote, /^no step marker; steps inferred from the kernel stream by kernel-sequence \(confidence 100\.0%\): 119 kernels × 16 repeats on device 1; the repeats run back to back/);
});

test('two files: the Verdict shows baseline → target for every metric, as `detect --json` of each', { timeout: TIMEOUT }, async () => {
  const baseline = gen('regression-baseline', 'sglang');
  const target = gen('regression-target', 'sglang');
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  await page.setInputFiles('#file-input', [baseline, target]);
  await page.waitForFunction((r) => Number(document.body.dataset.run) === r + 1 && document.body.dataset.state === 'done', run, { timeout: TIMEOUT });
  await page.waitForSelector('[data-testid=verdict-compare-table]');
  assert.ok(await page.isVisible('[data-testid=verdict-compare]'));
  const head = await page.$$eval('[data-testid=verdict-compare-table] th', (ths) => ths.map((t) => t.textContent));
  assert.deepEqual(head, ['', 'baseline · regression-baseline-sglang.sqlite', 'target · regression-target-sglang.sqlite']);
  const rows = await page.$$eval('[data-testid=verdict-compare-table] tbody tr', (trs) => trs.map((t) => ({ ...t.dataset })));
  const row = (scope, metric) => rows.find((r) => r.scope === scope && r.metric === metric);
  const [b, t] = [cliJson(['detect', baseline]), cliJson(['detect', target])];
  assert.equal(row('trace', 'step_marker').baseline, 'sglang');
  assert.equal(row('trace', 'step_marker').target, 'sglang');
  assert.equal(row('aggregate', 'verdict').baseline, b.verdict);
  assert.equal(row('aggregate', 'verdict').target, t.verdict);
  for (const key of METRIC_KEYS) {
    const r = row('aggregate', key);
    assert.ok(r, `aggregate ${key} row`);
    assert.equal(num(r.baseline), b.aggregate_metrics[key], `baseline ${key}`);
    assert.equal(num(r.target), t.aggregate_metrics[key], `target ${key}`);
  }
  const gen_ = row('generation', 'iteration_count');
  assert.equal(num(gen_.baseline), b.phases.generation.iteration_count);
  assert.equal(num(gen_.target), t.phases.generation.iteration_count);
  for (const key of METRIC_KEYS) {
    const r = row('generation', key);
    assert.equal(num(r.baseline), b.phases.generation.metrics[key], `baseline generation ${key}`);
    assert.equal(num(r.target), t.phases.generation.metrics[key], `target generation ${key}`);
  }
  await page.screenshot({ path: artifact('verdict-compare.png'), fullPage: true });

  // Root cause titles use the file names.
  await page.click('[data-testid=tab-rootcause]');
  await rootCauseDone();
  const title = await page.textContent('[data-testid=rc-summary] h2');
  assert.equal(title, 'Baseline vs target · regression-baseline-sglang.sqlite → regression-target-sglang.sqlite');
  const labels = ['--baseline-label', 'regression-baseline-sglang.sqlite', '--target-label', 'regression-target-sglang.sqlite'];
  const c = cliJson(['analyze', baseline, target, ...labels]).comparison;
  const wall = await page.$eval('[data-rc=wall_time_per_step_us]', (e) => ({ ...e.dataset }));
  assert.equal(num(wall.baseline), c.wall_time_per_step_us.baseline);
  assert.equal(num(wall.target), c.wall_time_per_step_us.target);
  assert.equal(await page.textContent('[data-testid=rc-conclusion]'), c.conclusion);
});

test('the page logged no errors (markers)', () => {
  assert.deepEqual(site.problems, []);
});
