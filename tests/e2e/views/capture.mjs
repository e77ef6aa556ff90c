// End-to-end: the Verdict view's Capture card against the CLI's `detect --json` `capture`, for
// generated captures the checks must flag and real exports: every check's status, evidence and
// fix, and the steady window after a warm-up. The card is screenshotted for review.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { useSite, detectJson, generate, publicTrace, artifact, openTrace } from '../helpers.mjs';

const TIMEOUT = 240_000;
let site;
let page;
let tmp;

useSite('nsys-lens-capture-', (s) => ({ site, page, tmp } = s));


// The card as the page shows it: per check its status, evidence and fix; the steady block.
async function readCapture() {
  return page.evaluate(() => {
    const checks = {};
    for (const li of document.querySelectorAll('[data-testid=capture-card] li.capture-check')) {
      const id = li.dataset.testid.replace(/^capture-/, '');
      checks[id] = {
        status: li.dataset.status,
        evidence: li.querySelector('.capture-evidence')?.textContent.trim() ?? '',
        fix: li.querySelector('.capture-fix')?.textContent ?? null,
      };
    }
    const steady = document.querySelector('[data-testid=capture-steady]')?.textContent ?? null;
    return { checks, steady };
  });
}

async function assertCaptureMatchesCli(file, shot) {
  await openTrace(page, file, { timeout: TIMEOUT });
  const want = detectJson(file).capture;
  const got = await readCapture();
  const name = path.basename(file);
  assert.deepEqual(Object.keys(got.checks).sort(), want.checks.map((c) => c.id).sort(), `${name}: checks shown`);
  for (const c of want.checks) {
    const g = got.checks[c.id];
    assert.equal(g.status, c.status, `${name}: ${c.id} status`);
    assert.equal(g.evidence, c.evidence, `${name}: ${c.id} evidence`);
    assert.equal(g.fix, c.fix, `${name}: ${c.id} fix`);
  }
  if (want.steady_window) {
    assert.ok(got.steady, `${name}: steady window shown`);
    assert.ok(got.steady.includes(`${want.steady_window.start_ns}–${want.steady_window.end_ns} ns`), `${name}: ${got.steady}`);
    // The command names the file as each front end knows it (the CLI: its path; the page: its name).
    assert.ok(got.steady.includes(`nsys-lens detect --window ${want.steady_window.start_ns}:${want.steady_window.end_ns} ${name}`), `${name}: command in ${got.steady}`);
  } else {
    assert.equal(got.steady, null, `${name}: no steady window`);
  }
  if (shot) {
    const card = await page.$('[data-testid=capture-card]');
    await card.screenshot({ path: artifact(shot) });
  }
  return want;
}

test('a JIT warm-up capture: the card equals the CLI, warm-up flagged, steady window shown', { timeout: TIMEOUT }, async () => {
  const file = generate('capture-warmup', path.join(tmp, 'capture-warmup.sqlite'));
  const want = await assertCaptureMatchesCli(file, 'capture-card-warmup.png');
  assert.equal(want.checks.find((c) => c.id === 'warmup').status, 'warn');
  assert.ok(want.steady_window);
});

test('a 46-kernel capture: flagged too short, the same on the page', { timeout: TIMEOUT }, async () => {
  const file = generate('capture-short', path.join(tmp, 'capture-short.sqlite'));
  const want = await assertCaptureMatchesCli(file, 'capture-card-short.png');
  assert.equal(want.checks.find((c) => c.id === 'length').status, 'warn');
});

test('real exports: nvFuser JIT, the 2-kernel mock and a 1 s 2-GPU capture equal the CLI', { timeout: TIMEOUT }, async () => {
  for (const [name, shot] of [
    ['NVIDIA_Fuser__df8f397__report1.sqlite', 'capture-card-nvfuser.png'],
    ['GindaChen_nsys-ai__mock.sqlite', null],
    ['GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite', null],
  ]) {
    await assertCaptureMatchesCli(publicTrace(name), shot);
  }
});

test('CPU samples and scheduling: ok with both (power_iteration), unknown with the flags without (h100), as the CLI says', { timeout: TIMEOUT }, async () => {
  for (const [name, status] of [
    ['brycelelbach_nsightful__power_iteration__baseline.sqlite', 'ok'],
    ['GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite', 'unknown'],
  ]) {
    const want = await assertCaptureMatchesCli(publicTrace(name), null);
    const check = want.checks.find((c) => c.id === 'cpu_records');
    assert.equal(check?.status, status, name);
    const shown = await page.getAttribute('[data-testid=capture-card] [data-testid=capture-cpu_records]', 'data-status');
    assert.equal(shown, status, `${name}: the card shows the check`);
    if (status !== 'ok') assert.match(check.fix, /--sample=process-tree --cpuctxsw=process-tree --python-sampling=true/);
  }
});
