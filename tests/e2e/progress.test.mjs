// The open's time estimates (`www/ui/progress.js`). No browser: the estimate is arithmetic over
// the rows the heartbeat counts and the passes the core says the verdict reads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenProgress, passesLeft } from '../../www/ui/progress.js';

// Passes read in turn, as `detect::verdict_passes` weighs them: 100 NVTX ranges, 400 GPU
// operations, 500 API calls.
const PASSES = [
  { rows: 100, weight: 1.5 },
  { rows: 400, weight: 2 },
  { rows: 500, weight: 1 },
];
// Their real time per row (ms): as weighed (14.5 s in all), and with GPU work five times slower
// than its weight says (a host-bound export's kernel sweep: 54.5 s in all).
const AS_WEIGHED = [15, 20, 10];
const SLOW_GPU = [15, 100, 10];

// The seconds the verdict stage says it has left after `done` rows, read at `paces`, the
// heartbeat beating every 10 rows.
function saidAfter(done, passes, paces) {
  let clock = 0;
  const lines = [];
  const progress = new OpenProgress(1, (text) => lines.push(text), { now: () => clock });
  progress.analysis({ step: 'computing the verdict', total: 1000, base: 0, passes: passes?.flatMap((p) => [p.rows, p.weight]) });
  const pace = paces.flatMap((ms, k) => Array(PASSES[k].rows).fill(ms));
  for (let row = 0; row < done; row++) {
    clock += pace[row];
    if ((row + 1) % 10 === 0 || row + 1 === done) progress.beat(row + 1);
  }
  const m = lines.at(-1).match(/about (\d+) s left/);
  return m ? Number(m[1]) : null;
}

// The real time left after `done` rows at `paces` (s).
function leftAfter(done, paces) {
  const pace = paces.flatMap((ms, k) => Array(PASSES[k].rows).fill(ms));
  return pace.slice(done).reduce((t, ms) => t + ms, 0) / 1000;
}

test('half-way through a pass, the verdict says the time it has left, not the slow pace to the end', () => {
  // 300 rows read in 5.5 s; 9 s left (200 GPU operations at 20 ms, 500 calls at 10 ms).
  assert.equal(leftAfter(300, AS_WEIGHED), 9);
  assert.equal(saidAfter(300, PASSES, AS_WEIGHED), 9);
  // Rows alone: 700 more at the pace so far, 12.8 s.
  assert.equal(saidAfter(300, null, AS_WEIGHED), 13);
});

test('a pass slower than its weight says is timed at its own pace, the passes after it at the pace of those done', () => {
  // 300 rows read in 21.5 s; 25 s left (200 GPU operations at 100 ms, 500 calls at 10 ms).
  assert.equal(leftAfter(300, SLOW_GPU), 25);
  assert.equal(saidAfter(300, PASSES, SLOW_GPU), 25);
  // In the calls' pass, its own pace: 250 calls left at 10 ms.
  assert.equal(saidAfter(750, PASSES, SLOW_GPU), 3);
});

test('the time left is null before the pass under way has a pace or passes to weigh', () => {
  assert.equal(passesLeft(null, [0], 10, 1000), null);
  assert.equal(passesLeft(PASSES, [0], 0, 1000), null, 'no row read');
  // Ten NVTX ranges in 150 ms: too few to time the pass by, so the weights place the rest.
  assert.equal(passesLeft(PASSES, [0], 10, 150), (90 * 15 + 800 * 10 + 500 * 10) / 1000);
});

// A read as the 10 GB export's goes (MB, s): the analysis worker reads its 480 MB at 8 MB/s
// from the start; the reader worker reads its catalog (20 MB in the first second), waits for the
// verdict's inputs until 15 s, then reads its 500 MB at 9 MB/s, ending last, at 70.6 s. Each
// worker says its bytes every half second. `said(share)`: the time left the page said once
// `share` of the file was read, and the time the read really had left then (s).
function readOf10GB() {
  const MB = 1e6;
  const end = { analysis: 60, reader: 15 + 500 / 9 };
  const bytes = {
    analysis: (t) => Math.min(t, end.analysis) * 8 * MB,
    reader: (t) => (t < 1 ? t * 20 : t < 15 ? 20 : 20 + Math.min(t - 15, end.reader - 15) * 9) * MB,
  };
  const analysisAt = (t) => (t <= end.analysis ? { step: t === end.analysis ? 'loading kernels' : 'loading NVTX ranges', total: t === end.analysis ? 0 : 1, bytes: bytes.analysis(t) } : null);
  const readerAt = (t) => ({ step: 'loading kernels', bytes: bytes.reader(t), waits: t >= 1 && t < 15 });
  return simulatedRead(1000 * MB, end.reader, analysisAt, readerAt);
}

// A read of a file of `fileBytes` that ends at `endS` s, each worker saying its bytes every half
// second (`analysisAt(t)`, `readerAt(t)`: the worker's message at `t` s, or null). `said(share)`:
// the time left the page said once `share` of the file was read, the time the read really had
// left then (s), and that share.
function simulatedRead(fileBytes, endS, analysisAt, readerAt) {
  let clock = 0;
  const lines = [];
  const progress = new OpenProgress(fileBytes, (text, share) => lines.push({ text, share, at: clock }), { reader: true, now: () => clock });
  progress.analysis({ step: 'opening', bytes: 0 });
  for (let ms = 500; ms <= endS * 1000; ms += 500) {
    clock = ms;
    const analysis = analysisAt(ms / 1000);
    if (analysis) progress.analysis(analysis);
    progress.reader(readerAt(ms / 1000));
  }
  return (share) => {
    const line = lines.find((l) => l.share >= share);
    const m = line.text.match(/about (?:(\d+) min )?(\d+) s left/);
    return { said: m ? Number(m[1] ?? 0) * 60 + Number(m[2]) : null, left: endS - line.at / 1000, share: line.share };
  };
}

test('reading the file, the time left counts the worker that waits as one that will read, and a worker done as none', () => {
  const said = readOf10GB();
  // While the reader waits, and once the analysis worker is done: within a sixth.
  for (const share of [0.1, 0.9]) {
    const { said: s, left } = said(share);
    assert.ok(Math.abs(s - left) <= Math.max(2, left / 6), `at ${share * 100} %: said ${s} s, ${left.toFixed(1)} s left`);
  }
  // While both read, the analysis worker's part ends first, which the bytes cannot tell: within
  // a quarter.
  for (const share of [0.25, 0.5, 0.75]) {
    const { said: s, left } = said(share);
    assert.ok(Math.abs(s - left) <= left / 4, `at ${share * 100} %: said ${s} s, ${left.toFixed(1)} s left`);
  }
  // The pace of both together so far said nearly twice the time at 10 %: 10 s for 10 %.
  const { left } = said(0.1);
  assert.ok((10 * 0.9) / 0.1 > 1.4 * left);
});

// A read as the 1 GB export's goes (MB, s): the analysis worker reads its 330 MB at 40 MB/s,
// done at 8.25 s; the reader worker reads its catalog (30 MB in the first second), then its table
// of 4 M rows (100 bytes each) at 30 MB/s, ending last, at 14.3 s. The two read 730 MB of a
// 600 MB file (pages both read, SQLite's catalog among them), so their bytes reach the file's
// size at 11.3 s. `said(share)` as in `readOf10GB`.
function readOf1GB() {
  const MB = 1e6;
  const end = { analysis: 330 / 40, reader: 1 + 400 / 30 };
  const bytes = {
    analysis: (t) => Math.min(t, end.analysis) * 40 * MB,
    reader: (t) => (t < 1 ? t * 30 : 30 + Math.min(t - 1, end.reader - 1) * 30) * MB,
  };
  const rows = (t) => Math.max(0, Math.round(((bytes.reader(t) - 30 * MB) / (400 * MB)) * 4e6));
  const analysisAt = (t) => {
    const hostRead = t >= end.analysis;
    if (t > end.analysis + 0.5) return null;
    return { step: hostRead ? 'loading kernels' : 'loading CUDA API calls', total: hostRead ? 0 : 1, bytes: bytes.analysis(t) };
  };
  const readerAt = (t) => {
    const step = t < 1 ? { step: 'loading strings', done: 1, total: 2 } : { step: 'loading kernels', done: rows(t), total: 4e6 };
    return { ...step, bytes: bytes.reader(t) };
  };
  return simulatedRead(600 * MB, end.reader, analysisAt, readerAt);
}

test('reading the file, the reader worker\'s rows tell the bytes it has left, past the file\'s size', () => {
  const said = readOf1GB();
  for (const share of [0.25, 0.5, 0.75, 0.9]) {
    const { said: s, left } = said(share);
    assert.ok(Math.abs(s - left) <= Math.max(1, left / 6), `at ${share * 100} %: said ${s} s, ${left.toFixed(1)} s left`);
  }
  // At 90 % of the read, with the two workers' bytes past the file's size, 1.4 s left: the
  // file's bytes alone said none (the bar full, no time left) for the last 3 s.
  const { left, share } = said(0.9);
  assert.ok(share < 1 && left > 1, `${share} of the read at ${left} s before its end`);
});

test('reading the file, the line says the share of the file read, in bytes and in percent alike, and the step under way', () => {
  const MB = 1e6;
  const lines = [];
  let clock = 0;
  const progress = new OpenProgress(600 * MB, (text) => lines.push(text), { reader: true, now: () => clock });
  progress.analysis({ step: 'opening', bytes: 0 });
  // The two workers have read 660 MB of the 600 MB file; the reader's rows say 84 MB are left
  // (600,000 rows at 140 bytes a row): 660 of 744 MB, 89 %.
  for (const [ms, analysis, reader, done] of [[500, 100, 50, 1e6], [1000, 330, 230, 2e6], [1500, 330, 330, 3e6]]) {
    clock = ms;
    progress.analysis({ step: 'loading CUDA API calls', total: 1, bytes: analysis * MB });
    progress.reader({ step: 'loading kernels', done, total: 3.6e6, bytes: reader * MB });
  }
  // Its host side read, the analysis worker says `done`: the step under way is the reader's.
  progress.analysis({ step: 'done', total: 1, done: 1, bytes: 330 * MB });
  const line = lines.at(-1);
  assert.ok(line.endsWith('· loading kernels'), line);
  const [, shown, percent] = /Reading the file: ([\d.]+) MiB of 572\.2 MiB \((\d+) %\)/.exec(line) ?? [];
  assert.equal(Number(percent), 89, line);
  assert.ok(Math.abs(Number(shown) / 572.2 - 660 / 744) < 0.001, line);
});
