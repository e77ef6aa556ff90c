// End-to-end: the timeline's collapsible tracks and the links into it, on a public export with
// NVTX, two GPUs and NCCL collectives (mfu_2gpu_before). A click on a process's (or a device's)
// label folds its lanes into one — the core lays the lanes out, so the drawn lane count changes —
// and a second click opens it again; a slowest step (Root cause), an NVTX op (Root cause) and a
// straggler's latest collective (Drill-down) each open the timeline on a view containing them,
// highlighted. A device's streams fold the same way (on a one-GPU export with four streams).
// Screenshots at 1440 and 1024 px go to tests/artifacts/.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { requireDist, openSite, publicTrace, artifact, openTrace, timelineDrawn, timelineSettled, generate } from './helpers.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const TIMEOUT = 300_000;
const CANVAS = '[data-testid=timeline]';
const TRACE = 'GindaChen_nsys-ai__mfu_2gpu_before.sqlite';
let site;
let page;

before(async () => {
  requireDist();
  site = await openSite({ viewport: { width: 1440, height: 1000 } });
  ({ page } = site);
  await openTrace(page, publicTrace(TRACE), { timeout: TIMEOUT });
  await timelineDrawn(page, CANVAS);
});

after(async () => {
  await site?.close();
});

// The drawn view (the panel's test hook), its draw sequence and the canvas box.
async function drawn() {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const r = c.getBoundingClientRect();
    return { view: c.timelineView, seq: Number(c.dataset.drawn), folded: c.dataset.folded || '', box: { x: r.left, y: r.top } };
  }, CANVAS);
}

// Waits until the timeline has drawn after sequence `seq` and no request is pending.
async function drawnAfter(seq) {
  await page.waitForFunction(([sel, s]) => Number(document.querySelector(sel).dataset.drawn) > s, [CANVAS, seq], { timeout: TIMEOUT });
  await timelineSettled(page, CANVAS, TIMEOUT);
  return drawn();
}

// Clicks the label of lane `i` of the drawn view, where the core's layout places it.
async function clickLabel(i) {
  await page.locator(CANVAS).scrollIntoViewIfNeeded();
  const { box, view } = await drawn();
  const lane = view.layout.lanes[i];
  await page.mouse.click(box.x + 30, box.y + lane.top_px + lane.height_px / 2 - 2);
}

async function showView(name) {
  await page.click(`[data-testid=tab-${name}]`);
  await page.waitForFunction((n) => ['done', 'error'].includes(document.body.dataset[`${n}State`]), name, { timeout: TIMEOUT });
  assert.equal(await page.evaluate((n) => document.body.dataset[`${n}State`], name), 'done', `${name} view`);
}

// The timeline panel as it is on screen, from its title, at the viewport's width (no full-page
// capture: that resizes the viewport, and the page draws the canvas again at the new width).
async function shot(name) {
  await page.evaluate(() => document.getElementById('timeline-title').scrollIntoView({ block: 'start' }));
  await page.waitForTimeout(200);
  const { width, height } = page.viewportSize();
  const top = await page.evaluate(() => document.getElementById('timeline-title').getBoundingClientRect().top);
  const y = Math.max(0, top - 12);
  const { box } = await drawn();
  const bottom = box.y + (await page.evaluate((sel) => document.querySelector(sel).getBoundingClientRect().height, CANVAS)) + 16;
  await page.screenshot({ path: artifact(name), clip: { x: 0, y, width, height: Math.min(bottom - y, height - y) } });
}

// Clicks `row` (a table row naming [data-start-ns, data-end-ns]) and checks the timeline opens on
// a view containing it, highlighted.
async function opensTimelineAt(row, what) {
  const start = Number(await row.getAttribute('data-start-ns'));
  const end = Number(await row.getAttribute('data-end-ns'));
  assert.ok(end > start, `${what}: a span to show (${start}–${end})`);
  const { seq } = await drawn();
  await row.click();
  let d = await drawnAfter(seq);
  // The view request may have been sent before the zoom: wait for the view holding the item.
  for (let i = 0; i < 40 && !(d.view.start_ns <= start && d.view.end_ns >= end); i++) d = await drawnAfter(d.seq);
  assert.ok(d.view.start_ns <= start && d.view.end_ns >= end, `${what}: view ${d.view.start_ns}–${d.view.end_ns} holds ${start}–${end}`);
  assert.ok(d.view.end_ns - d.view.start_ns < 4 * (end - start) + 4000, `${what}: zoomed to it`);
  const mark = await page.evaluate(() => {
    const b = document.querySelector('[data-testid=timeline-highlight]');
    return { hidden: b.hidden, width: b.getBoundingClientRect().width };
  });
  assert.ok(!mark.hidden && mark.width > 0, `${what}: highlighted`);
  const note = await page.textContent('[data-testid=timeline-highlight-note]');
  assert.ok(note.length > 0, `${what}: named beside the range`);
  return { ...d, note };
}

// Zooms in (W around the middle, three presses between looks) until the host lanes are read
// (they show from a narrow view).
async function zoomToHostLanes() {
  await page.locator(CANVAS).scrollIntoViewIfNeeded();
  let d = await drawn();
  const canvasWidth = await page.evaluate((sel) => document.querySelector(sel).width, CANVAS);
  await page.mouse.move(d.box.x + 150 + (canvasWidth - 150) / 2, d.box.y + 30);
  for (let i = 0; i < 10 && !d.view.lanes.some((l) => l.kind === 'api'); i++) {
    for (let w = 0; w < 3; w++) await page.keyboard.press('w');
    d = await drawnAfter(d.seq);
  }
  return d;
}

// Folds the first group whose key starts with `prefix` by a click on its label, checks the core's
// lanes, takes `shots` (name → viewport width) folded, and opens it again.
async function foldAndOpen(prefix, shots = {}) {
  let d = await drawn();
  const open = d.view.lanes;
  const first = open.findIndex((l) => (l.group || '').startsWith(prefix));
  assert.ok(first >= 0, `a ${prefix} group of several lanes: ${open.map((l) => l.label).join(' | ')}`);
  const group = open[first].group;
  const members = open.filter((l) => l.group === group).length;
  assert.ok(open[first].label.startsWith('▾'), open[first].label);
  await clickLabel(first);
  let folded = await drawnAfter(d.seq);
  for (let i = 0; i < 10 && folded.folded !== group; i++) folded = await drawnAfter(folded.seq);
  assert.equal(folded.folded, group);
  assert.equal(folded.view.lanes.length, open.length - members + 1, `${group}: its ${members} lanes are one`);
  const lane = folded.view.lanes[first];
  assert.equal(lane.group, group);
  assert.equal(lane.folded, members);
  assert.ok(lane.label.startsWith('▸'), lane.label);
  assert.equal(await page.evaluate((sel) => Number(document.querySelector(sel).dataset.lanes), CANVAS), folded.view.lanes.length);
  for (const [name, width] of Object.entries(shots)) {
    await page.setViewportSize({ width, height: width > 1200 ? 1000 : 900 });
    const now = await drawnAfter((await drawn()).seq - 1);
    assert.equal(now.view.lanes.length, folded.view.lanes.length, `still folded at ${width} px`);
    await shot(name);
  }
  await page.setViewportSize({ width: 1440, height: 1000 });
  await drawnAfter((await drawn()).seq - 1);
  const before = (await drawn()).seq;
  await clickLabel(first);
  d = await drawnAfter(before);
  for (let i = 0; i < 10 && d.folded !== ''; i++) d = await drawnAfter(d.seq);
  assert.equal(d.folded, '');
  assert.equal(d.view.lanes.length, open.length, `${group}: opened again`);
}

test("a process's lanes fold into one, and open again", { timeout: TIMEOUT }, async () => {
  const d = await zoomToHostLanes();
  assert.ok(d.view.lanes.some((l) => l.kind === 'api'), 'host lanes after zooming in');
  await foldAndOpen('process:', { 'links-folded-process-1440.png': 1440, 'links-folded-process-1024.png': 1024 });
});

test('a slowest step and an NVTX op of Root cause open the timeline there', { timeout: TIMEOUT }, async () => {
  await showView('rootcause');
  const step = page.locator('[data-testid=rc-slowest-table] tbody tr').first();
  const { note } = await opensTimelineAt(step, 'slowest step');
  const index = Number(await step.getAttribute('data-index'));
  assert.match(note, new RegExp(`^step ${index + 1}, `), note);
  await shot('links-step-1440.png');
  await showView('rootcause');
  const op = page.locator('[data-testid=rc-nvtx-table] tbody tr[data-start-ns]').first();
  await opensTimelineAt(op, 'NVTX op');
  await page.setViewportSize({ width: 1024, height: 900 });
  await drawnAfter((await drawn()).seq - 1);
  await shot('links-nvtx-op-1024.png');
  await page.setViewportSize({ width: 1440, height: 1000 });
});

test("a straggler's latest collective opens the timeline there", { timeout: TIMEOUT }, async () => {
  await showView('drill');
  const row = page.locator('[data-testid=drill-rank-table] tbody tr[data-start-ns]:not([data-start-ns=""])').first();
  const d = await opensTimelineAt(row, 'straggling collective');
  const start = Number(await row.getAttribute('data-start-ns'));
  const device = Number(await row.getAttribute('data-device'));
  // The collective is drawn on its device's lane: a kernel item starting there.
  const items = d.view.lanes.filter((l) => l.device === device).flatMap((l) => l.items || []);
  assert.ok(items.some((i) => i.start_ns === start), `GPU ${device} draws the collective at ${start}`);
  await shot('links-straggler-1440.png');
  await page.setViewportSize({ width: 1024, height: 900 });
  await drawnAfter((await drawn()).seq - 1);
  await shot('links-straggler-1024.png');
});

test("a device's stream lanes fold into one, and open again", { timeout: TIMEOUT }, async () => {
  // No public two-GPU export has two streams on a device; this one has four on GPU 0.
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openTrace(page, publicTrace('Lianhang666_gpu4__report2.sqlite'), { timeout: TIMEOUT });
  await timelineDrawn(page, CANVAS);
  await zoomToHostLanes();
  await foldAndOpen('device:', { 'links-folded-device-1440.png': 1440 });
});

test("a comparison's NVTX op opens the timeline at its longest instance in the target", { timeout: TIMEOUT }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-links-'));
  try {
    const base = generate('regression-baseline', path.join(dir, 'base.sqlite'));
    const target = generate('regression-target', path.join(dir, 'target.sqlite'));
    await openTrace(page, [base, target], { timeout: TIMEOUT });
    await showView('rootcause');
    // The op new in the target: its longest instance can only be in the target's file.
    const row = page.locator('[data-testid=rc-nvtx-table] tbody tr[data-status=NEW][data-start-ns]').first();
    assert.equal(await row.getAttribute('data-trace'), 'target');
    const name = await row.getAttribute('data-name');
    const { note } = await opensTimelineAt(row, `comparison NVTX op ${name}`);
    assert.ok(note.includes(name) && note.includes('target'), note);
    await shot('links-compare-nvtx-op-1440.png');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
