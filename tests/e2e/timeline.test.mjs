// End-to-end: the kernel timeline at 1440 px on a public export and a generated trace — W/S
// zoom to kernels drawn one by one, a kernel's name under the pointer from the core's hit test,
// and a shift-dragged range analysed as a window equal to `nsys-lens detect --window`; nested
// NVTX ranges (PyTorch emit_nvtx, 5 levels) named in their depth rows at deep zoom, a depth row
// hovered naming its own range, not its parent; graph replays and copies drawn on their lanes,
// busy as the CLI measures them, hovered with their names and launch calls. Lanes are placed
// where the core's layout says (the drawn view's `layout`: each lane's top, height and rows).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { requireDist, openSite, cli, generate, publicTrace, artifact, openTrace, timelineDrawn, timelineSettled, canvasStats, detectJson, assertMatchesCli } from './helpers.mjs';

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

const settled = () => timelineSettled(page, CANVAS, TIMEOUT);

// The timeline panel as it is on screen (no full-page capture: that resizes the viewport, and the
// page redraws the canvas at the new width).
async function shot(name) {
  // The whole canvas on screen (a narrower viewport wraps the text above it lower).
  await page.evaluate((sel) => {
    const r = document.querySelector(sel).getBoundingClientRect();
    if (r.top < 90 || r.bottom > window.innerHeight) window.scrollBy(0, r.top - 100);
  }, CANVAS);
  const { box } = await drawnView();
  const { width, height } = page.viewportSize();
  const y = Math.max(0, box.y - 90);
  await page.screenshot({ path: artifact(name), clip: { x: 0, y, width, height: Math.min(box.height + 200, height - y) } });
}

// The lane-label column's width (plot::TIMELINE_LAYOUT); lanes' places come with each view.
const LAYOUT = { label: 150 };

// The middle of lane `i` of the drawn view's first row, from its top (canvas px).
function laneMiddle(view, i) {
  const row = view.layout.lanes[i].rows[0];
  return row.top_px + row.height_px / 2;
}

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
    await page.mouse.move(box.x + 1 + LAYOUT.label + col, box.y + 1 + laneMiddle(view, li));
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
  const y = box.y + 1 + laneMiddle(view, best.lane);
  // Its launch call, when the export joins them (correlation id): named, with the arrow drawn.
  const link = await hoverNaming(x, y, best.name);
  return { ...best, link };
}

// Hovers (x, y) until the tooltip names `name`; returns what it says of the item's kind and its
// launch link, and the arrow drawn.
async function hoverNaming(x, y, name) {
  await page.mouse.move(x - 5, y);
  await page.mouse.move(x, y, { steps: 3 });
  await page.waitForFunction(
    (want) => {
      const tip = document.querySelector('[data-testid=tooltip]');
      return !tip.hidden && tip.querySelector('[data-testid=tooltip-name]')?.textContent === want;
    },
    name,
    { timeout: 20_000 },
  );
  await page.waitForTimeout(300);
  return page.evaluate(() => ({
    text: document.querySelector('[data-testid=tooltip-link]')?.textContent ?? null,
    what: document.querySelector('[data-testid=tooltip-what]')?.textContent ?? '',
    arrow: document.querySelector('[data-testid=timeline]').dataset.arrow || '',
    tooltip: document.querySelector('[data-testid=tooltip]').innerText,
  }));
}

// Shift-drags from 30 % to 55 % of the plot, analyses the range and compares with the CLI.
async function windowEqualsCli(file, prefix) {
  await page.dblclick(CANVAS);
  await settled();
  const { box, view } = await drawnView();
  const plot = box.width - LAYOUT.label;
  const y = box.y + laneMiddle(view, Math.min(1, view.lanes.length - 1));
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

// The deepest NVTX range drawn on its own in the view (the widest of those), with its lane and
// its width in px; null when no lane draws ranges one by one.
function deepestRange(view) {
  const span = view.end_ns - view.start_ns;
  const px = (it) => ((Math.min(it.end_ns, view.end_ns) - Math.max(it.start_ns, view.start_ns)) / span) * view.columns;
  let best = null;
  view.lanes.forEach((l, lane) => {
    if (l.kind !== 'nvtx') return;
    for (const it of l.items || []) {
      const item = { ...it, depth: it.depth ?? 0 }; // depth 0 is left out of the JSON
      const better = !best || item.depth > best.item.depth || (item.depth === best.item.depth && px(item) > best.px);
      if (better) best = { lane, item, px: px(item) };
    }
  });
  return best;
}

// The range of `lane` at `depth` enclosing `item` (the latest to start), or null.
function enclosing(view, lane, item, depth) {
  const within = (p) => (p.depth ?? 0) === depth && p.start_ns <= item.start_ns && p.end_ns >= item.end_ns;
  return (view.lanes[lane].items || []).filter(within).pop() ?? null;
}

// Hovers (x, y) and returns the tooltip's name once it shows one (null: none within 10 s).
async function tooltipAt(x, y) {
  await page.mouse.move(x - 4, y);
  await page.mouse.move(x, y, { steps: 3 });
  try {
    await page.waitForFunction(() => {
      const tip = document.querySelector('[data-testid=tooltip]');
      return !tip.hidden && tip.querySelector('[data-testid=tooltip-name]')?.textContent;
    }, undefined, { timeout: 10_000 });
  } catch {
    return null;
  }
  await page.waitForTimeout(300);
  return page.textContent('[data-testid=tooltip-name]');
}

// Light pixels (a name's white letters) inside a box of the canvas, in canvas px.
async function lightPixels(x, y, w, h) {
  return page.evaluate(([sel, x, y, w, h]) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(Math.round(x), Math.round(y), Math.max(1, Math.round(w)), Math.max(1, Math.round(h))).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] > 200 && d[i + 2] > 200) n++;
    return n;
  }, [CANVAS, x, y, w, h]);
}

test('h100: nested NVTX ranges are named in their depth rows at deep zoom; a depth row hovers its own range', { timeout: TIMEOUT }, async () => {
  await page.setViewportSize({ width: 1440, height: 1000 });
  await openTrace(page, publicTrace('GindaChen_nsys-ai__h100_2gpu_1s.v2.sqlite'), { timeout: TIMEOUT });
  await timelineDrawn(page, CANVAS);
  await page.locator(CANVAS).scrollIntoViewIfNeeded();
  await settled();
  // W around the NVTX lanes' busiest column (most ranges: PyTorch's ops, not a long wait) until
  // ranges are drawn one by one, then around the deepest one drawn until it is wide enough for
  // its name (the innermost ops last a few µs).
  let { view, box } = await drawnView();
  const counts = view.lanes.filter((l) => l.kind === 'nvtx').map((l) => l.count);
  assert.ok(counts.length > 0, 'NVTX lanes in the whole view');
  const total = counts[0].map((_, c) => counts.reduce((n, lane) => n + lane[c], 0));
  await page.mouse.move(box.x + 1 + LAYOUT.label + total.indexOf(Math.max(...total)) + 0.5, box.y + 12);
  let deepest = null;
  for (let i = 0; i < 160; i++) {
    await page.keyboard.press('w');
    if (i % 4 !== 3) continue;
    await settled();
    ({ view, box } = await drawnView());
    deepest = deepestRange(view);
    if (deepest && deepest.item.depth >= 2 && deepest.px >= 100) break;
    if (deepest) {
      const mid = (Math.max(deepest.item.start_ns, view.start_ns) + Math.min(deepest.item.end_ns, view.end_ns)) / 2;
      await page.mouse.move(box.x + 1 + LAYOUT.label + ((mid - view.start_ns) / (view.end_ns - view.start_ns)) * view.columns, box.y + 12);
    }
  }
  assert.ok(deepest && deepest.item.depth >= 2 && deepest.px >= 100, `a range 2 deep or more drawn wide: ${JSON.stringify(deepest)}`);
  // The depth-2 range holding it, and that one's parent.
  const item = enclosing(view, deepest.lane, deepest.item, 2);
  const parent = item && enclosing(view, deepest.lane, item, 1);
  assert.ok(item && parent, 'the depth-2 range and its parent are drawn');
  const span = view.end_ns - view.start_ns;
  const xOf = (t) => LAYOUT.label + ((Math.min(Math.max(t, view.start_ns), view.end_ns) - view.start_ns) / span) * view.columns;
  const target = { lane: deepest.lane, item, px: xOf(item.end_ns) - xOf(item.start_ns), name: view.names[item.name], parentName: view.names[parent.name] };
  const nvtx = view.lanes[target.lane];
  assert.equal(nvtx.depths, 5, 'laid out for the thread\'s 5 nesting levels (SQL in crate/tests/timeline.rs)');
  const rows = view.layout.lanes[target.lane].rows;
  assert.equal(rows.length, 5, 'a row per depth');
  for (const r of rows) assert.ok(r.height_px >= 14, `each depth row holds a name: ${JSON.stringify(r)}`);
  // Lanes follow one another: none overlaps the next.
  view.layout.lanes.forEach((l, i) => {
    const next = view.layout.lanes[i + 1];
    if (next) assert.equal(next.top_px, l.top_px + l.height_px, `lane ${i} ends where lane ${i + 1} starts`);
  });
  const canvasHeight = await page.evaluate((sel) => document.querySelector(sel).height, CANVAS);
  assert.equal(canvasHeight, view.layout.height_px, 'the canvas is as tall as the core lays it out');
  await shot('h100-nvtx-deep-1440.png');
  // The range's name is drawn in its row: white letters on the range's box.
  const a = xOf(target.item.start_ns);
  const row2 = rows[2];
  const letters = await lightPixels(a + 2, row2.top_px + 1, Math.min(target.px - 4, 120), row2.height_px - 2);
  assert.ok(letters >= 20, `the depth-2 range's name drawn in its row (${letters} light pixels)`);
  // Hovering the depth-2 row names that range; the row above names its parent.
  const x = box.x + 1 + (a + xOf(target.item.end_ns)) / 2;
  const inRow = (r) => box.y + 1 + r.top_px + r.height_px / 2;
  assert.equal(await tooltipAt(x, inRow(rows[2])), target.name, 'the depth-2 row: the range itself');
  assert.equal(await tooltipAt(x, inRow(rows[1])), target.parentName, 'the depth-1 row: its parent');
  assert.notEqual(target.name, target.parentName);
  await shot('h100-nvtx-hover-1440.png');
  // At 1024 px the same lane keeps its rows (the layout does not depend on the width).
  await page.mouse.move(0, 0);
  const seq = (await drawnView()).drawn;
  await page.setViewportSize({ width: 1024, height: 900 });
  await page.waitForFunction(([sel, s]) => Number(document.querySelector(sel).dataset.drawn) > s, [CANVAS, seq], { timeout: TIMEOUT });
  await settled();
  ({ view } = await drawnView());
  assert.deepEqual(
    view.layout.lanes[target.lane].rows.map((r) => r.height_px),
    rows.map((r) => r.height_px),
  );
  await shot('h100-nvtx-deep-1024.png');
  await page.setViewportSize({ width: 1440, height: 1000 });
});

// What the GPU did, on `serving-graphs` (graph replays traced at graph level) and `copy-bound`
// (weight copies): the device lane's busy time over the whole view equals the CLI's per-device
// busy time and the view starts at the CLI's window start (the first GPU operation); zoomed in
// (W around a column whose longest row is one), a replay or a copy is drawn on its own, its hover
// names it (graph id, direction and bytes, its kind) and its launch call (`cudaGraphLaunch`,
// `cudaMemcpyAsync`), with the arrow drawn.

const spanOf = (view) => view.end_ns - view.start_ns;
const xOf = (view, t) => LAYOUT.label + ((t - view.start_ns) / spanOf(view)) * view.columns;

// The widest item of a device lane named with `prefix` (null: none drawn), with its width in px.
function widestItem(view, prefix) {
  let best = null;
  view.lanes.forEach((l, lane) => {
    if (l.kind !== 'kernels') return;
    for (const it of l.items || []) {
      const name = view.names[it.name];
      if (!name.startsWith(prefix)) continue;
      const px = xOf(view, Math.min(it.end_ns, view.end_ns)) - xOf(view, Math.max(it.start_ns, view.start_ns));
      if (!best || px > best.px) best = { lane, name, px, start: it.start_ns, end: it.end_ns };
    }
  });
  return best;
}

// The pointer on a column of a device lane whose longest row is named with `prefix` (the
// middle of the widest such item once items are drawn).
async function aim(prefix) {
  const { view, box } = await drawnView();
  const item = widestItem(view, prefix);
  if (item) {
    const mid = (Math.max(item.start, view.start_ns) + Math.min(item.end, view.end_ns)) / 2;
    await page.mouse.move(box.x + 1 + xOf(view, mid), box.y + 1 + laneMiddle(view, item.lane));
    return;
  }
  const lane = view.lanes.findIndex((l) => l.kind === 'kernels' && l.top.some((t) => t >= 0 && view.names[t].startsWith(prefix)));
  assert.ok(lane >= 0, `a device lane's column names ${prefix}: ${JSON.stringify(view.names.slice(0, 20))}`);
  const col = view.lanes[lane].top.findIndex((t) => t >= 0 && view.names[t].startsWith(prefix));
  await page.mouse.move(box.x + 1 + LAYOUT.label + col + 0.5, box.y + 1 + laneMiddle(view, lane));
}

for (const [scenario, prefix, kind, api] of [
  ['serving-graphs', '[CUDA graph replay] graph ', 'graph replay', 'cudaGraphLaunch'],
  ['copy-bound', '[CUDA memcpy Host-to-Device] ', 'copy', 'cudaMemcpy'],
]) {
  test(`${scenario}: lanes hold what the GPU did, as the CLI measures it; a ${kind} hovered names itself and its launch call`, { timeout: TIMEOUT }, async () => {
    const file = generate(scenario, path.join(tmp, `${scenario}.sqlite`));
    await openTrace(page, file, { timeout: TIMEOUT });
    await assertMatchesCli(page, file);
    await timelineDrawn(page, CANVAS);
    await page.locator(CANVAS).scrollIntoViewIfNeeded();
    await settled();
    const want = detectJson(file);
    let { view } = await drawnView();
    assert.equal(view.origin_ns, want.window.start_ns, 'the timeline starts at the first GPU operation');
    assert.equal(view.end_ns, want.window.end_ns, 'and ends at the last one\'s end');
    const col = spanOf(view) / view.columns;
    for (const d of want.per_device) {
      const lanes = view.lanes.filter((l) => l.kind === 'kernels' && l.device === d.device);
      assert.equal(lanes.length, 1, `one lane on device ${d.device}`);
      const busyNs = lanes[0].busy.reduce((a, b) => a + b * col, 0);
      assert.ok(Math.abs(busyNs - d.busy_us * 1e3) / spanOf(view) < 2e-3, `device ${d.device}: busy ${busyNs} ns on the timeline, ${d.busy_us} µs by the CLI`);
    }
    await shot(`${scenario}-work-whole.png`);
    // W around a column whose longest row is a replay (a copy) until one is drawn 60 px wide.
    await aim(prefix);
    let item = null;
    for (let i = 0; i < 120; i++) {
      await page.keyboard.press('w');
      if (i % 5 !== 4) continue;
      await settled();
      ({ view } = await drawnView());
      item = widestItem(view, prefix);
      if (item && item.px >= 60) break;
      await aim(prefix);
    }
    assert.ok(item && item.px >= 20, `a ${kind} drawn on its own: ${JSON.stringify(item)}`);
    const { box } = await drawnView();
    const mid = (Math.max(item.start, view.start_ns) + Math.min(item.end, view.end_ns)) / 2;
    const x = box.x + 1 + xOf(view, mid);
    const y = box.y + 1 + laneMiddle(view, item.lane);
    const tip = await hoverNaming(x, y, item.name);
    assert.ok(tip.what.endsWith(` · ${kind}`), `the hover says it is a ${kind}: ${tip.what}`);
    assert.match(tip.text ?? '', new RegExp(`^launched by ${api}`), `its launch call: ${tip.text}`);
    const arrow = JSON.parse(tip.arrow);
    assert.equal(arrow.to_lane, item.lane, `the arrow ends on the ${kind}`);
    assert.ok(arrow.from_lane < item.lane, 'from a host lane above');
    await shot(`${scenario}-work-hover.png`);
  });
}
