// Screenshots of every view (Verdict, Root cause, Drill-down, the report HTML; the host side of a
// file without kernel records) for each trace at
// 1440 and 1024 px, saved under tests/artifacts/views/, and an audit of what a reader would trip
// on, printed per view (development aid, not a test):
//   node tests/e2e/tools/views.mjs [--widths 1440,1024] TRACE.sqlite…
// Audit: a table wider than its box, a header with `Μ` (an upper-cased µ), "not computed" more
// than once in a table, a number cell that wraps, a ▲/▼ in a table cell.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { serve, launch, openTrace, artifact, cli } from '../helpers.mjs';

const args = process.argv.slice(2);
const wi = args.indexOf('--widths');
const widths = wi >= 0 ? args.splice(wi, 2)[1].split(',').map(Number) : [1440, 1024];
const traces = args;
const TIMEOUT = 240_000;

function audit() {
  const out = [];
  for (const t of document.querySelectorAll('table')) {
    if (!t.offsetParent) continue;
    const box = t.closest('.table-wrap, .scroll') || t.parentElement;
    const name = t.dataset.testid || t.closest('[data-testid]')?.dataset.testid || t.querySelector('caption')?.textContent || 'table';
    if (box.scrollWidth > box.clientWidth + 1) out.push(`${name}: ${box.scrollWidth} px wide in ${box.clientWidth} px`);
    for (const th of t.querySelectorAll('th')) if (th.innerText.includes('\u039c')) out.push(`${name}: header "${th.innerText}" has Greek Mu`);
    const nc = (t.innerText.match(/not computed/gi) || []).length;
    const title = t.closest('.host-table')?.querySelector('h3')?.textContent || name;
    if (nc > 1 && !/^Not computed/.test(title)) out.push(`${name}: "not computed" ${nc} times`);
    // A number that breaks over lines: one of its text nodes has boxes on more than one line.
    for (const td of t.querySelectorAll('td.num')) {
      for (const node of td.childNodes) {
        if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) out.push(`${name}: number cell wraps: "${td.innerText}"`);
      }
    }
    for (const td of t.querySelectorAll('td')) if (/[▲▼]/.test(td.innerText)) out.push(`${name}: arrow in a cell: "${td.innerText}"`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} px`);
  return [...new Set(out)];
}

async function view(page, name) {
  await page.click(`[data-testid=tab-${name}]`);
  if (name === 'verdict') return;
  await page.waitForFunction((n) => ['done', 'error'].includes(document.body.dataset[`${n}State`]), name, { timeout: TIMEOUT });
  await new Promise((r) => setTimeout(r, 400));
}

// The whole page, and the same in parts of 1000 px (legible when viewed one at a time).
async function shoot(page, name) {
  await page.screenshot({ path: artifact(`views/${name}.png`), fullPage: true });
  const { w, h } = await page.evaluate(() => ({ w: document.documentElement.clientWidth, h: document.documentElement.scrollHeight }));
  for (let y = 0, i = 0; y < h; y += 1000, i++) {
    await page.screenshot({ path: artifact(`views/parts/${name}-${i}.png`), fullPage: true, clip: { x: 0, y, width: w, height: Math.min(1000, h - y) } });
  }
}

const srv = await serve();
const browser = await launch();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-views-'));
fs.mkdirSync(artifact('views/parts'), { recursive: true });
try {
  for (const trace of traces) {
    const stem = path.basename(trace).replace(/\.sqlite$/, '');
    const reportDir = path.join(tmp, stem);
    let reportHtml = null;
    try {
      execFileSync(cli(), ['report', trace, '--out', reportDir], { stdio: 'ignore' });
      reportHtml = path.join(reportDir, 'report.html');
    } catch {
      console.log(`${stem}: no report (the CLI refused the file)`);
    }
    for (const width of widths) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      page.on('pageerror', (e) => console.log(`${stem} [pageerror] ${e.message}`));
      page.on('console', (m) => m.type() === 'error' && console.log(`${stem} [console.error] ${m.text()}`));
      await page.goto(`${srv.origin}/`);
      try {
        await openTrace(page, path.resolve(trace), { timeout: TIMEOUT });
      } catch (e) {
        console.log(`${stem} @${width}: ${e.message}`);
        await page.screenshot({ path: artifact(`views/${stem}-${width}-error.png`), fullPage: true });
        await page.close();
        continue;
      }
      // A file without kernel records shows its host side, and no view to switch between.
      const hostSide = await page.locator('#hostside').isVisible();
      if (!hostSide) {
        // The verdict view once its timeline is drawn and its replay done.
        await page
          .waitForFunction(() => document.querySelector('canvas[data-testid=timeline]')?.dataset.lanes && ['done', 'error', 'waiting'].includes(document.body.dataset.whatifState), null, { timeout: TIMEOUT })
          .catch(() => console.log(`${stem}: the timeline or the replay did not finish`));
      }
      for (const v of hostSide ? ['hostside'] : ['verdict', 'rootcause', 'drill']) {
        if (v !== 'verdict' && v !== 'hostside') await view(page, v);
        await shoot(page, `${stem}-${width}-${v}`);
        const problems = await page.evaluate(audit);
        console.log(`${stem} @${width} ${v}: ${problems.length ? problems.join(' | ') : 'ok'}`);
      }
      if (reportHtml) {
        await page.goto(pathToFileURL(reportHtml).href);
        await shoot(page, `${stem}-${width}-report`);
        const problems = await page.evaluate(audit);
        console.log(`${stem} @${width} report: ${problems.length ? problems.join(' | ') : 'ok'}`);
      }
      await page.close();
    }
  }
} finally {
  await browser.close();
  await srv.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
