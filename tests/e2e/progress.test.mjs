// The open's time estimates (`www/ui/progress.js`). No browser: the estimate is arithmetic over
// the rows the heartbeat counts and the passes the core says the verdict reads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenProgress, weighed } from '../../www/ui/progress.js';

// Passes read in turn, each at its own time per row (ms): 100 NVTX ranges at 15, 400 GPU
// operations at 20, 500 API calls at 10 — 14.5 s in all, as `detect::verdict_passes` weighs them.
const PASSES = [
  { rows: 100, weight: 1.5 },
  { rows: 400, weight: 2 },
  { rows: 500, weight: 1 },
];
const MS_PER_WEIGHT = 10;

// The time the verdict stage says it has left after `done` rows, read at the passes' paces.
function saidAfter(done, passes) {
  let clock = 0;
  const lines = [];
  const progress = new OpenProgress(1, (text) => lines.push(text), () => clock);
  progress.analysis({ step: 'computing the verdict', total: 1000, base: 0, passes: passes?.flatMap((p) => [p.rows, p.weight]) });
  let left = done;
  for (const p of PASSES) {
    clock += Math.min(left, p.rows) * p.weight * MS_PER_WEIGHT;
    left -= Math.min(left, p.rows);
  }
  progress.beat(done);
  const m = lines.at(-1).match(/about (\d+) s left/);
  return m ? Number(m[1]) : null;
}

test('the rows of the passes still to read are weighed by their time per row', () => {
  assert.equal(weighed(PASSES, 0), 0);
  assert.equal(weighed(PASSES, 100), 150 / 1450, 'the NVTX pass done');
  assert.equal(weighed(PASSES, 300), 550 / 1450, 'half-way through the GPU work');
  assert.equal(weighed(PASSES, 1000), 1);
  assert.equal(weighed(null, 10), null);
});

test('half-way through a slow pass, the verdict says the time it has left, not the slow pace to the end', () => {
  // 300 rows read in 5.5 s; 9 s left (200 GPU operations at 20 ms, 500 calls at 10 ms).
  assert.equal(saidAfter(300, PASSES), 9);
  // Rows alone: 700 more at the pace so far, 12.8 s.
  assert.equal(saidAfter(300, null), 13);
});
