import { chromium } from 'playwright-core';
import fs from 'node:fs';
const [,, url, file, out] = process.argv;
const profile = fs.mkdtempSync('/tmp/chr-');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, ignoreDefaultArgs: true,
  args: ['--headless','--no-sandbox','--disable-gpu','--disable-quic','--no-first-run','--disable-background-networking','--disable-component-update','--disable-sync', `--user-data-dir=${profile}`, '--remote-debugging-pipe', '--no-startup-window'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
page.on('console', m => { if (m.type() === 'error') console.log('console:', m.text()); });
await page.goto(url);
await page.waitForFunction(() => document.body.dataset.ready === '1' || document.body.dataset.state === 'error', undefined, { timeout: 60000 });
await page.setInputFiles('#file-input', file);
await page.waitForFunction(() => document.body.dataset.state === 'done' || document.body.dataset.state === 'error', undefined, { timeout: 120000 });
console.log('state', await page.evaluate(() => document.body.dataset.state), await page.evaluate(() => document.getElementById('error')?.textContent));
console.log('bound', await page.evaluate(() => document.getElementById('bound')?.textContent));
console.log('verdict', await page.evaluate(() => document.getElementById('verdict')?.textContent));
await page.screenshot({ path: out, fullPage: false });
await browser.close();
