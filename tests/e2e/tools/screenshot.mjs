// Opens a trace in the page and saves screenshots (development aid, not a test):
//   node tests/e2e/tools/screenshot.mjs TRACE.sqlite [name] [--site DIR] [--width 1280]
import path from 'node:path';
import { serve, launch, openTrace, artifact, DIST } from '../helpers.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(k);
  if (i < 0) return d;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const site = path.resolve(opt('--site', DIST));
const width = Number(opt('--width', 1280));
const [trace, name = 'page'] = args;
const srv = await serve(site);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  page.on('console', (m) => console.log(`[console.${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => console.log(`[pageerror] ${e.message}`));
  await page.goto(`${srv.origin}/`);
  if (trace) await openTrace(page, path.resolve(trace), { expect: process.env.EXPECT || 'done' });
  await page.waitForTimeout(500);
  await page.screenshot({ path: artifact(`${name}-top.png`) });
  await page.screenshot({ path: artifact(`${name}-full.png`), fullPage: true });
  console.log('state', await page.evaluate(() => document.body.dataset.state));
} finally {
  await browser.close();
  await srv.close();
}
