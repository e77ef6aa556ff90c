// End-to-end: a public export without kernel records, dropped on the page, shows its host side
// (CUDA API calls by name, syncs, allocations, processes) with the verdict marked not computed
// and the capture advice that fits — the numbers equal to the CLI's `report` of the same file.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useSite, publicTrace, artifact, cli, ROOT } from '../helpers.mjs';

// A count as the page shows it (thousands separated by the core's formatter).
const count = (text) => Number(String(text).replace(/[,\u00a0 ]/g, ''));

const TIMEOUT = 240_000;
let site;
let tmp;

useSite('nsys-lens-hostside-', (s) => ({ site, tmp } = s));


// The CLI's report.json of `file`.
function reportJson(file) {
  const out = path.join(tmp, path.basename(file, '.sqlite'));
  execFileSync(cli(), ['report', file, '--out', out], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8'));
}

// Drops `file` on the page as a user would (a drop event carrying the File).
async function dropFile(page, file) {
  const run = await page.evaluate(() => Number(document.body.dataset.run || 0));
  const bytes = fs.readFileSync(file).toString('base64');
  await page.evaluate(
    ([name, b64]) => {
      const bin = atob(b64);
      const buf = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) buf[i] = bin.charCodeAt(i);
      const dt = new DataTransfer();
      dt.items.add(new File([buf], name));
      document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    [path.basename(file), bytes],
  );
  await page.waitForFunction(
    (r) => Number(document.body.dataset.run || 0) > r && ['done', 'error'].includes(document.body.dataset.state),
    run,
    { timeout: TIMEOUT },
  );
}

// Rows of the table `name` in the host-side view, as {first cell: [cells]}.
async function tableRows(page, name) {
  return page.evaluate((n) => {
    const out = {};
    for (const tr of document.querySelectorAll(`#hostside table[data-table="${n}"] tbody tr`)) {
      const cells = [...tr.querySelectorAll('td')].map((td) => td.textContent);
      out[cells[0]] = cells;
    }
    return out;
  }, name);
}

async function tableHeaders(page, name) {
  return page.evaluate((n) => [...document.querySelectorAll(`#hostside table[data-table="${n}"] thead th`)].map((th) => th.textContent), name);
}

// A duration cell in µs: its own unit ("213.473 s"), or the one its column header names
// ("Total (ms)").
const UNIT_US = { ns: 1e-3, 'µs': 1, ms: 1e3, s: 1e6 };
function durationUs(text, header) {
  const m = String(text).replace(/,/g, '').match(/^(-?[\d.]+)\s*(ns|µs|ms|s)?$/u);
  assert.ok(m, `a duration: ${text}`);
  const unit = m[2] || (String(header).match(/\((ns|µs|ms|s)\)/u) || [])[1];
  assert.ok(unit, `a unit for ${text} (${header})`);
  const decimals = (m[1].split('.')[1] || '').length;
  return { us: Number(m[1]) * UNIT_US[unit], halfStep: 0.5 * 10 ** -decimals * UNIT_US[unit] };
}

test('a kernel-less export dropped on the page shows its host side, equal to the CLI report', { timeout: TIMEOUT }, async () => {
  const { page, problems, requests, srv } = site;
  const file = publicTrace('ZhangXin8069_qcu__test_report1.e5c172f.sqlite');
  const want = reportJson(file);
  await dropFile(page, file);
  const state = await page.evaluate(() => document.body.dataset.state);
  const error = await page.evaluate(() => document.getElementById('error').hidden ? '' : document.getElementById('error').textContent);
  assert.equal(state, 'done', `the page shows the host side, not an error: ${error}`);
  assert.ok(await page.isVisible('[data-testid=hostside]'));
  assert.ok(!(await page.isVisible('#results')), 'no verdict view without kernels');
  assert.equal(await page.textContent('[data-testid=hostside-verdict]'), 'not computed: no kernel records');
  const advice = await page.textContent('[data-testid=hostside-advice]');
  assert.ok(advice.includes(want.verdict_not_computed.advice), advice);
  assert.ok(advice.includes('cudaProfilerStop()'), 'launches without kernel records: stop the capture cleanly');

  // Every CUDA API name, sync and allocation with the CLI's count and time.
  const tables = { api_calls: want.explain.api_calls, syncs: want.explain.syncs, allocations: want.explain.allocations };
  for (const [name, summary] of Object.entries(tables)) {
    const rows = await tableRows(page, name);
    const headers = await tableHeaders(page, name);
    assert.equal(Object.keys(rows).length, summary.by_name.length, `${name}: one row per name`);
    for (const n of summary.by_name) {
      assert.ok(rows[n.name], `${name}: ${n.name} listed`);
      assert.equal(count(rows[n.name][1]), n.count, `${name}: ${n.name} count`);
      const shown = durationUs(rows[n.name][2].replace(/\u00a0/g, ' '), headers[2]);
      // Rounded for display: equal to the CLI's µs within half of its last digit.
      assert.ok(Math.abs(shown.us - n.total_us) <= shown.halfStep * 1.0001, `${name}: ${n.name} total: ${rows[n.name][2]} vs ${n.total_us} µs`);
    }
  }
  const syncs = await tableRows(page, 'syncs');
  const total = Object.values(syncs).reduce((a, r) => a + count(r[1]), 0);
  assert.equal(total, 11451, 'the 11 451 blocking syncs (cuEventSynchronize, cudaDeviceSynchronize, cuCtxSynchronize)');
  const processes = await tableRows(page, 'processes');
  const processHeaders = await tableHeaders(page, 'processes');
  for (const p of want.explain.processes) {
    const row = processes[String(p.pid)];
    const at = (label) => processHeaders.findIndex((h) => h.startsWith(label));
    assert.equal(count(row[at('API calls')]), p.api_calls, `pid ${p.pid} API calls`);
    assert.equal(count(row[at('Sync calls')]), p.sync_calls, `pid ${p.pid} syncs`);
  }
  // The sync finding counts the whole capture, and says so.
  const findings = await page.textContent('[data-testid=drill-findings]');
  assert.ok(findings.includes('Blocking host-device synchronization (whole capture: no kernel records)'), findings);
  await page.screenshot({ path: artifact('hostside-zhangxin.png'), fullPage: true });

  // The report's exports work from the host side too.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-md]')]);
  const md = fs.readFileSync(await download.path(), 'utf8');
  assert.ok(md.includes('Host overhead verdict: not computed: no kernel records'), md.slice(0, 400));

  assert.deepEqual(requests.outside(srv.origin), [], 'nothing requested outside the page');
  assert.deepEqual(problems, []);
});

test('an export without a CUDA table: the advice is --trace=cuda, then a kernel trace analyses normally', { timeout: TIMEOUT }, async () => {
  const { page, problems } = site;
  await dropFile(page, publicTrace('amir-ghz_DynamicViT__nsys_profile.sqlite'));
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done');
  const advice = await page.textContent('[data-testid=hostside-advice]');
  assert.ok(advice.includes('--trace=cuda'), advice);
  await page.screenshot({ path: artifact('hostside-amir.png'), fullPage: true });

  await dropFile(page, publicTrace('LeiWang1999_memfusion_artifact__report1.sqlite'));
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done');
  assert.ok(!(await page.isVisible('[data-testid=hostside]')), 'the host-side view is gone');
  assert.ok(['YES', 'NO'].includes(await page.textContent('[data-testid=verdict]')));
  assert.deepEqual(problems, []);
});

// CO18326 has a CUDA API table but no kernel table and no launch call (`SELECT name FROM
// sqlite_master`; its 2 runtime calls are cuModuleGetLoadingMode and cudaGetDeviceProperties):
// the advice is to capture the part of the run that launches kernels. The page states it once,
// in the verdict box; the summary and the coverage notes point to it.
test('a kernel-less export states its capture advice once on the page', { timeout: TIMEOUT }, async () => {
  const { page, problems } = site;
  const file = publicTrace('CO18326_uvmTorch__report1.sqlite');
  const want = reportJson(file).verdict_not_computed.advice;
  assert.ok(want.includes('--delay/--duration'), want);
  await dropFile(page, file);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done');
  const text = await page.evaluate(() => document.body.innerText);
  assert.equal(text.split(want).length - 1, 1, 'the advice appears exactly once');
  assert.ok((await page.textContent('[data-testid=hostside-advice]')).includes(want));
  await page.screenshot({ path: artifact('hostside-co18326.png'), fullPage: true });
  assert.deepEqual(problems, []);
});
