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
  const progress = new OpenProgress(1, (text) => lines.push(text), () => clock);
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
