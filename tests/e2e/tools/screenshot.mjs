// Opens a trace in the page and saves screenshots under tests/artifacts/ (development aid, not a
// test):
//   node tests/e2e/tools/screenshot.mjs TRACE.sqlite [name] [--site DIR] [--width 1280]
//        [--offline] [--browser chromium|firefox]
// --offline opens DIR/nsys-lens-offline.html from file:// instead of serving DIR over http.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { serve, launch, openTrace, artifact, DIST } from '../helpers.mjs';
import { launchFirefox, asPage } from '../firefox.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(k);
  if (i < 0) return d;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const flag = (k) => {
  const i = args.indexOf(k);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};
const site = path.resolve(opt('--site', DIST));
const width = Number(opt('--width', 1280));
const firefox = opt('--browser', 'chromium') === 'firefox';
const offline = flag('--offline');
const [trace, name = 'page'] = args;
const srv = offline ? null : await serve(site);
const browser = firefox ? await launchFirefox() : await launch();
try {
  let page;
  if (firefox) {
    const raw = await browser.newPage();
    await raw.setViewport({ width, height: 900 });
    raw.on('console', (m) => console.log(`[console.${m.type()}] ${m.text()}`));
    raw.on('pageerror', (e) => console.log(`[pageerror] ${e.message}`));
    page = asPage(raw);
  } else {
    page = await browser.newPage({ viewport: { width, height: 900 } });
    page.on('console', (m) => console.log(`[console.${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => console.log(`[pageerror] ${e.message}`));
  }
  await page.goto(offline ? pathToFileURL(path.join(site, 'nsys-lens-offline.html')).href : `${srv.origin}/`);
  if (trace) await openTrace(page, path.resolve(trace), { expect: process.env.EXPECT || 'done' });
  await new Promise((r) => setTimeout(r, 500));
  await page.screenshot({ path: artifact(`${name}-top.png`) });
  await page.screenshot({ path: artifact(`${name}-full.png`), fullPage: true });
  console.log('state', await page.evaluate(() => document.body.dataset.state));
} finally {
  await browser.close();
  await srv?.close();
}
