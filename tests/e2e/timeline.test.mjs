// End-to-end: the kernel timeline at 1440 px on a public export and a generated trace — W/S
// zoom to kernels drawn one by one, a kernel's name under the pointer from the core's hit test,
// and a shift-dragged range analysed as a window equal to `nsys-lens detect --window`.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { requireDist, openSite, cli, generate, publicTrace, artifact, openTrace, timelineDrawn, canvasStats } from './helpers.mjs';

const TIMEOUT = 300_000;
const CANVAS = '[data-testid=timeline]';
let site;
let page;
let tmp;

before(async () => {
  requireDist();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-timeline-'));
  site = await openSite({ viewport: { width: 1440, height: 1000 } });
  ({ page } = site);
});

after(async () => {
  await site?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// The drawn view (the panel's test hook) and the canvas's place on the page.
async function drawnView() {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const r = c.getBoundingClientRect();
    return { view: c.timelineView, drawn: Number(c.dataset.drawn), box: { x: r.left, y: r.top, width: r.width, height: r.height } };
  }, CANVAS);
}

// Waits until no view request is pending: the drawn sequence stops changing.
async function settled() {
  let last = -1;
  for (;;) {
    await page.waitForTimeout(250);
    const { drawn } = await drawnView();
    if (drawn === last) return;
    last = drawn;
  }
}

// The timeline panel as it is on screen (no full-page capture: that resizes the viewport, and the
// page redraws the canvas at the new width).
async function shot(name) {
  const { box } = await drawnView();
  const y = Math.max(0, box.y - 90);
  await page.screenshot({ path: artifact(name), clip: { x: 0, y, width: 1440, height: Math.min(box.height + 200, 1000 - y) } });
}

const LAYOUT = { label: 150, top: 24, lane: 24 };

// Zooms with W around the busiest column of the first kernel lane until kernels are drawn one by
// one; a mid-zoom screenshot on the way.
async function zoomToKernels(prefix) {
  // The pointer on the middle of the widest kernel drawn on its own, else on the busiest column
  // of the first kernel lane (W zooms around it).
  const aim = async () => {
    const { view, box } = await drawnView();
    const li = view.lanes.findIndex((l) => l.kind === 'kernels');
    const busy = view.lanes[li].busy;
    let col = busy.indexOf(Math.max(...busy));
    let best = 0;
    const span = view.end_ns - view.start_ns;
    for (const it of view.lanes[li].items || []) {
      const a = Math.max(it.start_ns, view.start_ns);
      const b = Math.min(it.end_ns, view.end_ns);
      if (b - a > best) {
        best = b - a;
        col = (((a + b) / 2 - view.start_ns) / span) * view.columns;
      }
    }
    await page.mouse.move(box.x + 1 + LAYOUT.label + col, box.y + 1 + LAYOUT.top + li * LAYOUT.lane + 8);
  };
  await aim();
  for (let i = 0; i < 120; i++) {
    await page.keyboard.press('w');
    if (i === 15) {
      await settled();
      await shot(`${prefix}-timeline-mid.png`);
    }
    if (i % 5 === 4) {
      await settled();
      if ((await widestItemPx()) >= 60) break;
      await aim();
    }
  }
  await settled();
  const widest = await widestItemPx();
  assert.ok(widest >= 20, `kernels drawn one by one at deep zoom, the widest ${widest} px`);
}

// Width in px of the widest kernel drawn on its own (0: none).
async function widestItemPx() {
  const { view } = await drawnView();
  const span = view.end_ns - view.start_ns;
  let widest = 0;
  for (const l of view.lanes) {
    if (l.kind !== 'kernels') continue;
    for (const it of l.items || []) {
      const w = ((Math.min(it.end_ns, view.end_ns) - Math.max(it.start_ns, view.start_ns)) / span) * view.columns;
      widest = Math.max(widest, w);
    }
  }
  return widest;
}

// The widest kernel drawn on its own: hovering its middle shows its name (the core's hit test).
async function hoverWidestKernel() {
  const { view, box } = await drawnView();
  const span = view.end_ns - view.start_ns;
  let best = null;
  view.lanes.forEach((l, i) => {
    if (l.kind !== 'kernels') return;
    for (const it of l.items || []) {
      const a = Math.max(it.start_ns, view.start_ns);
      const b = Math.min(it.end_ns, view.end_ns);
      if (!best || b - a > best.b - best.a) best = { a, b, lane: i, name: view.names[it.name] };
    }
  });
  assert.ok(best, 'a kernel item');
  // +1: the canvas's border.
  const x = box.x + 1 + LAYOUT.label + (((best.a + best.b) / 2 - view.start_ns) / span) * view.columns;
  const y = box.y + 1 + LAYOUT.top + best.lane * LAYOUT.lane + 10;
  await page.mouse.move(x - 5, y);
  await page.mouse.move(x, y, { steps: 3 });
  await page.waitForFunction(
    (name) => {
      const tip = document.querySelector('[data-testid=tooltip]');
      return !tip.hidden && tip.querySelector('[data-testid=tooltip-name]')?.textContent === name;
    },
    best.name,
    { timeout: 20_000 },
  );
  // Its launch call, when the export joins them (correlation id): named, with the arrow drawn.
  await page.waitForTimeout(300);
  const link = await page.evaluate(() => ({
    text: document.querySelector('[data-testid=tooltip-link]')?.textContent ?? null,
    arrow: document.querySelector('[data-testid=timeline]').dataset.arrow || '',
    tooltip: document.querySelector('[data-testid=tooltip]').innerText,
  }));
  return { ...best, link };
}

// Shift-drags from 30 % to 55 % of the plot, analyses the range and compares with the CLI.
async function windowEqualsCli(file, prefix) {
  await page.dblclick(CANVAS);
  await settled();
  const { box } = await drawnView();
  const plot = box.width - LAYOUT.label;
  const y = box.y + LAYOUT.top + 30;
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + LAYOUT.label + plot * 0.3, y);
  await page.mouse.down();
  await page.mouse.move(box.x + LAYOUT.label + plot * 0.42, y, { steps: 4 });
  await page.mouse.move(box.x + LAYOUT.label + plot * 0.55, y, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  const sel = await page.evaluate(() => {
    const b = document.querySelector('[data-testid=timeline-selection]');
    return { hidden: b.hidden, start: Number(b.dataset.start), end: Number(b.dataset.end), label: document.querySelector('[data-testid=timeline-selection-label]').textContent };
  });
  assert.equal(sel.hidden, false, 'the selection bar shows');
  assert.match(sel.label, /^Selected /);
  assert.ok(sel.end > sel.start, JSON.stringify(sel));
  await shot(`${prefix}-timeline-selection.png`);
  // The box marks the range: 25 % of the plot, from 30 %.
  const marked = await page.evaluate(() => document.querySelector('[data-testid=timeline-selection-box]').getBoundingClientRect().toJSON());
  const { box: now } = await drawnView();
  assert.ok(Math.abs(marked.left - (now.x + 1 + LAYOUT.label + plot * 0.3)) < 3, `selection box at ${marked.left}`);
  assert.ok(Math.abs(marked.width - plot * 0.25) < 4, `selection box ${marked.width} px wide`);
  await page.click('[data-testid=timeline-analyse]');
  await page.waitForFunction(
    () => {
      const b = document.querySelector('[data-testid=window-analysis]');
      return b.dataset.verdict || b.querySelector('[data-testid=window-error]');
    },
    undefined,
    { timeout: TIMEOUT },
  );
  const got = await page.evaluate(() => {
    const b = document.querySelector('[data-testid=window-analysis]');
    return { verdict: b.dataset.verdict, aggregate: JSON.parse(b.dataset.aggregate || 'null'), error: b.textContent };
  });
  assert.ok(got.verdict, got.error);
  const out = execFileSync(cli(), ['detect', file, '--json', '--window', `${sel.start}:${sel.end}`], { maxBuffer: 64 << 20 });
  const want = JSON.parse(out.toString('utf8'));
  assert.equal(got.verdict, want.verdict);
  assert.deepEqual(got.aggregate, want.aggregate_metrics);
  return { sel, want };
}

for (const [prefix, source] of [
  ['h100', () => publicTrace('GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite')],
  ['host-bound', () => generate('host-bound', path.join(tmp, 'host-bound.sqlite'))],
]) {
  test(`${prefix}: whole, mid and deep zoom; a kernel's name on hover; a window equals detect --window`, { timeout: TIMEOUT }, async () => {
    const file = source();
    await openTrace(page, file, { timeout: TIMEOUT });
    await timelineDrawn(page, CANVAS);
    await page.locator(CANVAS).scrollIntoViewIfNeeded();
    await settled();
    const range = await page.textContent('[data-testid=timeline-range]');
    assert.ok(range.length > 0);
    await shot(`${prefix}-timeline-whole.png`);
    await zoomToKernels(prefix);
    await shot(`${prefix}-timeline-deep.png`);
    const hit = await hoverWidestKernel();
    assert.ok(hit.name.length > 0);
    assert.ok((await canvasStats(page, CANVAS)).ink > 500, 'the timeline stays drawn under the hover');
    if (prefix === 'host-bound') {
      assert.match(hit.link.text ?? '', /^launched by cuda\w*Launch/, `the launch call: ${JSON.stringify(hit.link)}`);
      const arrow = JSON.parse(hit.link.arrow);
      assert.equal(arrow.to_lane, hit.lane, 'the arrow ends on the kernel');
      assert.ok(arrow.from_lane < hit.lane, 'from a host lane above');
    }
    await shot(`${prefix}-timeline-hover.png`);
    const { want } = await windowEqualsCli(file, prefix);
    assert.ok(want.window.duration_us > 0);
    await page.locator('[data-testid=window-analysis]').screenshot({ path: artifact(`${prefix}-timeline-window.png`) });
  });
}
