// Every rank, one answer, in the page: the Drill-down's Ranks panel shows what `nsys-lens ranks
// --json` says of the same files — one export holding two ranks (the real mfu_2gpu_before), and
// the generated TP=4 straggler run written as one file per rank with clocks off by up to 1 ms,
// dropped together (three or more files are the ranks of one run) — with the skew of every
// collective drawn, the straggler's row emphasized, and the ranks timeline: a lane group per
// rank, moved by its file's clock offset, so a collective's arrivals read as the CLI's.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { useSite, publicTrace, openTrace, dropFiles, cliJson, showView, generate, artifact } from '../helpers.mjs';

const BEFORE = publicTrace('GindaChen_nsys-ai__mfu_2gpu_before.sqlite');
const TIMEOUT = 240_000;
// One wait of the page (a draw, a tooltip): shorter than a test, so a stuck one names itself.
const WAIT = 60_000;

const s = {};
useSite('nsys-lens-ranks-', (opened) => Object.assign(s, opened));

// The CLI names files by the path given, the page by the file's name.
function byName(report) {
  const r = structuredClone(report);
  r.files = r.files.map((f) => path.basename(f));
  for (const k of r.ranks) k.file = path.basename(k.file);
  return r;
}

async function ranksShown(page) {
  await showView(page, 'drill');
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-ranks]')?.ranksView, null, { timeout: WAIT });
  return page.evaluate(() => document.querySelector('[data-testid=drill-ranks]').ranksView);
}

// The ranks timeline as the core laid it out (its view, `layout` and `groups`), once drawn past
// draw number `after`.
async function ranksTimeline(page, after = 0) {
  await page.waitForFunction((n) => Number(document.querySelector('[data-testid=ranks-timeline]')?.dataset.drawn || 0) > n, after, { timeout: WAIT });
  return page.evaluate(() => {
    const c = document.querySelector('[data-testid=ranks-timeline]');
    return { view: c.timelineView, drawn: Number(c.dataset.drawn) };
  });
}

// Waits until the ranks timeline has drawn its last view at its canvas's size.
async function settled(page) {
  await page.waitForFunction(
    () => {
      const c = document.querySelector('[data-testid=ranks-timeline]');
      const p = c?.timelinePanel;
      return p && !p.inFlight && !p.dirty && !p.frame && p.drawnSeq === p.seq && c.width === Math.max(320, Math.floor(c.parentElement.clientWidth));
    },
    null,
    { timeout: WAIT },
  );
}

// What the panel shows beside the answer: the chart over every collective, the straggler's row
// emphasized, a lane group per rank named as `ranks` names it and moved by its file's offset.
async function checkPanel(page, shown, cli) {
  assert.equal(shown.chart.collectives, cli.collectives.count, 'the chart draws every collective');
  assert.equal(shown.chart.skew_ns.length, cli.collectives.count);
  assert.equal(Math.max(0, ...shown.chart.skew_ns) / 1000, cli.collectives.skew_us.max, 'its largest bar is the largest skew');
  await page.waitForFunction(() => document.querySelector('[data-testid=drill-skew-plot]')?.dataset.drawn === '1', null, { timeout: WAIT });
  const emphasized = await page.$$eval('[data-table=ranks] tbody tr.emphasized', (trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.deepEqual(emphasized, cli.straggler === null ? [] : [cli.ranks[cli.straggler].rank], 'the straggler, and only it, emphasized');
  // Each column's cells take the class the core gives them: the figures right-aligned, on one line.
  const figures = await page.$$eval('[data-table=ranks] tbody tr', (trs) =>
    trs.map((tr) => [...tr.cells].filter((td) => td.classList.contains('cell-num')).map((td) => {
      const range = document.createRange();
      range.selectNodeContents(td);
      return { text: td.textContent, lines: new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size };
    })),
  );
  assert.ok(figures.every((row) => row.length >= 6), `a rank's figures classed as numbers: ${JSON.stringify(figures)}`);
  assert.deepEqual(figures.flat().filter((f) => f.lines > 1), [], 'no figure breaks over lines');
  // The NVTX ops the cause's sentence cites, in a table of their own.
  const ops = await page.$$eval('[data-table=ranks_straggler_ops] tbody tr', (trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.deepEqual(ops, (cli.cause?.ops || []).map((o) => o.op), 'the cause\'s NVTX ops, as the CLI lists them');
  const { view } = await ranksTimeline(page);
  const files = cli.files.map((f) => path.basename(f));
  assert.deepEqual(
    view.groups.map((g) => [g.label, g.offset_ns, g.flagged]),
    cli.ranks.map((r, i) => [r.rank, cli.clock.offset_ns[files.indexOf(path.basename(r.file))], cli.straggler === i]),
    'a group per rank, on its file\'s offset',
  );
  let next = 0;
  for (const g of view.groups) {
    assert.equal(g.first_lane, next, 'groups in order, lanes contiguous');
    assert.ok(g.lanes >= 2, `${g.label}: its collectives and its GPU`);
    assert.equal(view.lanes[g.first_lane].kind, 'collectives');
    next += g.lanes;
  }
  assert.equal(view.lanes.length, next);
  assert.equal(view.layout.lanes.length, view.lanes.length, 'a place per lane');
  return view;
}

// Zooms the ranks timeline on the worst collective: each rank's collective kernel there starts
// at its arrival, so the first and last of them are the CLI's first and last arrival.
async function checkArrivals(page, cli, shot) {
  const worst = cli.collectives.worst[0];
  const pad = 20_000;
  const { drawn } = await ranksTimeline(page);
  await page.evaluate(
    ([a, b]) => document.querySelector('[data-testid=ranks-timeline]').timelinePanel.zoomTo(a, b),
    [worst.first_arrival_ns - pad, worst.last_arrival_ns + worst.transfer_us * 1000 + pad],
  );
  const { view } = await ranksTimeline(page, drawn);
  const starts = view.groups.map((g) => {
    const items = view.lanes[g.first_lane].items || [];
    const at = items.find((it) => it.start_ns <= worst.last_arrival_ns && it.end_ns > worst.first_arrival_ns);
    assert.ok(at, `${g.label}: its kernel of the worst collective is drawn`);
    assert.equal(view.names[at.name], worst.name);
    return at.start_ns;
  });
  assert.equal(Math.min(...starts), worst.first_arrival_ns, 'first arrival');
  assert.equal(Math.max(...starts), worst.last_arrival_ns, 'last arrival');
  const last = view.groups[starts.indexOf(worst.last_arrival_ns)];
  assert.equal(last.label, cli.ranks[worst.last_rank].rank, 'the last rank');
  // Hovered, the last rank's kernel says its name and its start on the common clock.
  const t = worst.last_arrival_ns + (worst.transfer_us * 1000) / 2;
  const labelPx = await page.evaluate(() => document.querySelector('[data-testid=ranks-timeline]').timelinePanel.layout.label_width_px);
  const x = labelPx + ((t - view.start_ns) / (view.end_ns - view.start_ns)) * view.columns;
  const y = view.layout.lanes[last.first_lane].top_px + 6;
  // The lane in the middle of the viewport first, as a user scrolls to what they hover: the
  // mouse cannot reach a lane below it (after the panel's screenshot the page may be scrolled
  // anywhere).
  await page.evaluate((laneY) => {
    const top = document.querySelector('[data-testid=ranks-timeline]').getBoundingClientRect().top;
    window.scrollBy(0, top + laneY - innerHeight / 2);
  }, y);
  const box = await page.locator('[data-testid=ranks-timeline]').boundingBox();
  await page.mouse.move(box.x + x, box.y + y);
  const tip = page.locator('.ranks-timeline-box [data-testid=tooltip-name]');
  await tip.waitFor({ timeout: WAIT });
  assert.equal(await tip.textContent(), worst.name);
  await page.locator('.ranks-timeline-box').screenshot({ path: artifact(shot) });
  await page.mouse.move(0, 0);
}

test('one export with two ranks: the Ranks panel is `ranks --json`', { timeout: TIMEOUT }, async () => {
  const { page } = s;
  await openTrace(page, BEFORE, { timeout: TIMEOUT });
  const shown = await ranksShown(page);
  const cli = cliJson(['ranks', BEFORE]);
  assert.deepEqual(byName(shown.ranks), byName(cli));
  assert.equal(cli.ranks.length, 2);
  const rows = await page.$$eval('[data-table=ranks] tbody tr', (trs) => trs.length);
  assert.equal(rows, cli.ranks.length, 'a row per rank');
  await checkPanel(page, shown, cli);
  await keyColumnStaysInView(page);
  assert.ok(cli.clock.offset_ns.every((o) => o === 0), 'one export: one clock');
  await page.locator('[data-testid=ranks-timeline]').screenshot({ path: artifact('ranks-timeline-mfu.png') });
  await checkArrivals(page, cli, 'ranks-timeline-mfu-zoomed.png');
  await keysZoomTheTimelineUnderThePointer(page);
  assert.deepEqual(s.problems, [], 'no page error');
});

// At 1024 px the ranks table is wider than its box and scrolls there: scrolled to its last
// column, each row's rank is still in view at the box's left edge, over the cells scrolled under it.
async function keyColumnStaysInView(page) {
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1024, height: viewport.height });
  const table = page.locator('[data-table=ranks]');
  await table.scrollIntoViewIfNeeded();
  const seen = await table.evaluate((t) => {
    const wrap = t.closest('.table-wrap');
    wrap.scrollLeft = wrap.scrollWidth;
    const left = wrap.getBoundingClientRect().left;
    return {
      scrolled: wrap.scrollLeft,
      keys: [...t.tBodies[0].rows].map((tr) => {
        const r = tr.cells[0].getBoundingClientRect();
        const top = document.elementFromPoint(r.left + 4, r.top + r.height / 2);
        return { at: Math.round(r.left - left), shown: tr.cells[0].contains(top) };
      }),
    };
  });
  await page.setViewportSize(viewport);
  assert.ok(seen.scrolled > 0, 'at 1024 px the ranks table scrolls in its box');
  assert.deepEqual(seen.keys, seen.keys.map(() => ({ at: 0, shown: true })), 'each rank stays in view at the left edge');
}

// W zooms the ranks timeline, not the page's timeline hidden behind the Drill-down (both
// listen on the document; a timeline not shown takes no keys).
async function keysZoomTheTimelineUnderThePointer(page) {
  const spanOf = (id) => page.$eval(`[data-testid=${id}]`, (c) => ({ shown: c.offsetParent !== null, span: Number(c.dataset.end) - Number(c.dataset.start), drawn: c.dataset.drawn }));
  const other = await spanOf('timeline');
  assert.ok(!other.shown, 'the page\'s timeline is hidden behind the Drill-down');
  const before = await spanOf('ranks-timeline');
  const box = await page.locator('[data-testid=ranks-timeline]').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const { drawn } = await ranksTimeline(page);
  await page.keyboard.press('w');
  await ranksTimeline(page, drawn);
  assert.ok((await spanOf('ranks-timeline')).span < before.span, 'the ranks timeline zoomed in');
  assert.deepEqual(await spanOf('timeline'), other, 'the page\'s timeline did not move');
  await page.mouse.move(0, 0);
}

test('four rank files with clock errors: the Ranks panel is `ranks FILE… --json`, on one clock', { timeout: TIMEOUT }, async () => {
  const { page, tmp } = s;
  const one = generate('tp4-straggler', path.join(tmp, 'tp4.sqlite'));
  const shifts = [0, 137_000, -420_000, 1_000_000];
  const files = shifts.map((shift, device) => {
    const file = path.join(tmp, `tp4_r${device}.sqlite`);
    fs.copyFileSync(one, file);
    const sql = `DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId != ${device}; UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + ${shift}, end = end + ${shift};`;
    execFileSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()', file, sql]);
    return file;
  });
  await dropFiles(page, files, TIMEOUT);
  const shown = await ranksShown(page);
  const cli = cliJson(['ranks', ...files]);
  assert.deepEqual(byName(shown.ranks), byName(cli));
  // Each file put back on file 0's clock: its offset undoes its planted error (within 5 µs).
  shifts.forEach((shift, i) => assert.ok(Math.abs(cli.clock.correction_ns[i] + shift) <= 5000, `file ${i}: ${cli.clock.correction_ns[i]} vs ${-shift}`));
  assert.deepEqual(
    cli.ranks.map((r) => r.rank),
    ['rank 0', 'rank 1', 'rank 2', 'rank 3'],
  );
  const clockRows = await page.$$eval('[data-table=ranks_clock] tbody tr', (trs) => trs.length);
  assert.equal(clockRows, 4, 'a clock row per file');
  await checkPanel(page, shown, cli);
  assert.ok(cli.straggler !== null, 'the planted straggler is found');
  // The whole panel in the viewport, for review (drawn again if the canvas's width changed).
  const viewport = page.viewportSize();
  const panel = page.locator('[data-testid=drill-ranks-panel]');
  const { height } = await panel.boundingBox();
  await page.setViewportSize({ width: viewport.width, height: Math.ceil(height) + 100 });
  await panel.scrollIntoViewIfNeeded();
  await settled(page);
  await panel.screenshot({ path: artifact('ranks-panel-tp4.png') });
  await page.setViewportSize(viewport);
  await settled(page);
  await checkArrivals(page, cli, 'ranks-timeline-tp4-zoomed.png');
  assert.deepEqual(s.problems, [], 'no page error');
});
