// Stock Firefox (Debian's firefox-esr) for the end-to-end tests, driven over WebDriver BiDi by
// puppeteer-core. Firefox is started here, not by puppeteer: puppeteer's profile sets preferences
// that change what a page may do (file:// pages reading other files, popups), and so does
// Firefox's own remote agent unless `remote.prefs.recommended` is false. The fresh profile below
// sets that, what the driver needs to fill a file input, and quiet-network preferences only, so
// the page sees Firefox's defaults.
//
// `asPage` gives a puppeteer page the few playwright calls the shared helpers use (openTrace,
// assertMatchesCli, timelineDrawn), so one assertion code serves both browsers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { removeDir } from './helpers.mjs';

export const FIREFOX = process.env.FIREFOX || '/usr/bin/firefox-esr';

// Why the Firefox tests cannot run here, or null. Only a missing binary skips them (`cargo xtask
// setup` installs firefox-esr); anything else is a failure.
export function firefoxMissing() {
  return fs.existsSync(FIREFOX) ? null : `no Firefox at ${FIREFOX}: run \`cargo xtask setup\` (apt-get install -y firefox-esr) or set FIREFOX`;
}

// Preferences of the test profile: none changes what a page may do.
const PREFS = {
  // Keep Firefox's defaults: the remote agent would otherwise apply its "recommended" automation
  // preferences (security.fileuri.strict_origin_policy false, popups allowed, …).
  'remote.prefs.recommended': false,
  // The driver's input.setFiles builds the File in the tab's process (File.createFromFileName, an
  // API only privileged code has; pages cannot call it): Firefox refuses that there by default.
  'dom.file.createInChild': true,
  // No background traffic (the machine may have no network): updates, telemetry, remote settings.
  'app.update.disabledForTesting': true,
  'browser.shell.checkDefaultBrowser': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.reportingpolicy.firstRun': false,
  'network.connectivity-service.enabled': false,
  'network.captive-portal-service.enabled': false,
  'services.settings.server': 'data:,#remote-settings-dummy/v1',
  'browser.startup.homepage_override.mstone': 'ignore',
};

// Headless Firefox with a fresh profile; resolves to puppeteer's Browser. `browser.close()` ends
// Firefox and removes the profile.
export async function launchFirefox() {
  const missing = firefoxMissing();
  if (missing) throw new Error(missing);
  // Imported first: a missing driver must not leave a Firefox running that holds the test open.
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'nsys-lens-firefox-'));
  fs.writeFileSync(
    path.join(profile, 'user.js'),
    Object.entries(PREFS)
      .map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});`)
      .join('\n'),
  );
  const child = spawn(FIREFOX, ['--headless', '--no-remote', '--remote-debugging-port=0', '--profile', profile, 'about:blank'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.on('exit', () => removeDir(profile));
  let log = '';
  const endpoint = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Firefox did not open WebDriver BiDi within 60 s:\n${log}`)), 60_000);
    const read = (chunk) => {
      log += chunk;
      const m = log.match(/WebDriver BiDi listening on (ws:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Firefox exited (${code}) before WebDriver BiDi listened:\n${log}`));
    });
  });
  let browser;
  try {
    browser = await puppeteer.connect({ browserWSEndpoint: `${await endpoint}/session`, protocol: 'webDriverBiDi' });
  } catch (e) {
    child.kill();
    throw e;
  }
  const close = browser.close.bind(browser);
  browser.close = async () => {
    await close().catch(() => {});
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    }
  };
  return browser;
}

// The playwright page calls the shared helpers use, over a puppeteer page.
export function asPage(page) {
  return {
    raw: page,
    goto: (url) => page.goto(url),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    waitForSelector: (selector, options) => page.waitForSelector(selector, options),
    waitForFunction: (fn, arg, options = {}) => page.waitForFunction(fn, { polling: 100, ...options }, arg),
    textContent: (selector) => page.$eval(selector, (e) => e.textContent),
    setInputFiles: async (selector, file) => {
      const input = await page.$(selector);
      await input.uploadFile(file);
    },
    screenshot: (options) => page.screenshot(options),
  };
}
