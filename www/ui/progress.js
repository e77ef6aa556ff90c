// What the page says while a file opens, in two stages, each with the time it has left at its
// pace so far:
// - reading: the bytes of the file both workers have read (the analysis worker the host side,
//   the reader worker the kernel table), of those and the bytes left. Once the reader reads its
//   table, its bytes left are its rows left at its bytes per row so far, read at its own pace
//   (its bytes over the time it spent reading them), the rest of the file's bytes at the other
//   worker's, and the read ends when the later of the two does. Before, the bytes left are read
//   at the pace of the workers still to read together, each at its own: a worker that waits,
//   or has not begun, at the others' pace, one that is done not at all. (The reader waits for
//   the verdict's inputs on large files; the worker with the smaller tables ends first; the two
//   read some pages both, so their bytes reach the file's size before the reader is done.)
// - the verdict: the rows its passes have read (the core's heartbeat), of the rows the core says
//   they read (`Analysis.verdictRows`). Its time left is the pass under way's rows left at that
//   pass's own pace, and the passes after it at the pace of those done, each pass's rows weighed
//   by its time per row (`Analysis.verdictPasses`, for rows read from the file or kept). A pass's
//   time per row depends on the export too (what its folds do per row), so the weights only place
//   the passes not yet begun.
// The estimates are samples the benchmark compares with the stage's real end
// (`performance` marks `nsys-lens:progress`).

const SAMPLE_MS = 1000;
// No estimate before this much of a stage, nor this soon: the first reads (the catalog, SQLite's
// pages) are not the pace of the rest.
const MIN_SHARE = 0.02;
const MIN_MS = 2000;
// A worker's pace once it has read for this long.
const MIN_PACE_MS = 500;

export function formatSize(bytes) {
  if (!Number.isFinite(bytes)) return '';
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(2)} GiB`;
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(0)} KiB`;
  return `${bytes} B`;
}

// Seconds as "about 1 min 20 s".
function timeLeft(seconds) {
  const s = Math.max(1, Math.round(seconds));
  if (s < 60) return `about ${s} s left`;
  const m = Math.floor(s / 60);
  return `about ${m} min ${String(s % 60).padStart(2, '0')} s left`;
}

// Whether a stage begun at `t0` with `share` of it done at `now` has a pace to tell.
function paced(t0, now, share) {
  return share >= MIN_SHARE && now - t0 >= MIN_MS && share < 1;
}

// The time a stage begun at `t0` has left when `share` of it is done at `now`, at its pace so
// far, or null.
function secondsLeft(t0, now, share) {
  return paced(t0, now, share) ? ((now - t0) * (1 - share)) / share / 1000 : null;
}

// A worker's part of the file's read: `state` 'idle' (not begun), 'reading', 'waiting' (it will
// read on) or 'done'; `ms` the time it spent reading. Its pace is of what it read since `from`,
// when it last began to read again after a wait (before a wait the reader read its catalog, not
// the kernel table).
function worker() {
  return { bytes: 0, ms: 0, state: 'idle', at: 0, from: { bytes: 0, ms: 0 }, base: null, step: null, table: null };
}

// The step in which the reader worker reads its one table, whose rows it counts against the
// table's (`done` of `total`).
const TABLE_STEP = 'loading kernels';

// A worker's message `msg` at `now` (its `bytes` so far, its step), after which it is in
// `state`: the time since its last message counts as reading if it was reading then.
function heard(w, msg, state, now) {
  if (w.state === 'reading') w.ms += now - w.at;
  else if (state === 'reading' && w.state !== 'idle') w.from = { bytes: w.bytes, ms: w.ms };
  w.bytes = msg.bytes - (w.base ?? 0);
  w.at = now;
  w.state = state;
  w.step = { step: msg.step, done: msg.done, total: msg.total };
  if (msg.step === TABLE_STEP && msg.done > 0 && msg.total >= msg.done) {
    w.table ??= { bytes: w.bytes, done: msg.done };
    w.table.latest = { done: msg.done, total: msg.total };
  }
}

// The bytes a worker reading its one table still has to read, at its bytes per row of the table
// so far; 0 once done, null before it has read rows of it twice. Why not the file's bytes left:
// both workers read some pages (SQLite's catalog, pages two tables share), so their bytes add
// up past the file's size before the reader is done (at 1 GB 2 s before it), and the file
// holds tables neither reads.
export function tableLeft(w) {
  if (w.state === 'done') return 0;
  const t = w.table;
  if (t === null || t.latest.done <= t.done) return null;
  return ((w.bytes - t.bytes) / (t.latest.done - t.done)) * (t.latest.total - t.latest.done);
}

// A reading worker's bytes per ms since it last began, or null before it read for a while.
function paceOf(w, now) {
  if (w.state !== 'reading') return null;
  const ms = w.ms + now - w.at - w.from.ms;
  const pace = (w.bytes - w.from.bytes) / ms;
  return ms >= MIN_PACE_MS && pace > 0 ? pace : null;
}

// The seconds the read has left with `left` bytes of the file to read by `workers`, or null
// while no worker reading has a pace. Once the reader worker's rows tell its bytes left
// (`tableLeft`), it reads those at its pace and the other workers the rest of `left` at theirs,
// and the read ends when the last of them does. Before, the bytes left are read at the pace of
// the workers still to read together (`sharedLeft`).
export function readLeft(workers, left, now, reader = null) {
  const own = reader === null ? null : tableLeft(reader);
  const ownPace = reader === null ? null : paceOf(reader, now);
  if (own === null || (own > 0 && ownPace === null)) return sharedLeft(workers, left, now);
  const others = workers.filter((w) => w !== reader && w.state !== 'done');
  const rest = Math.max(0, left - own);
  let restMs = 0;
  if (rest > 0 && others.length > 0) {
    const perMs = others.reduce((sum, w) => sum + (paceOf(w, now) ?? NaN), 0);
    if (!(perMs > 0)) return sharedLeft(workers, left, now);
    restMs = rest / perMs;
  }
  return Math.max(own > 0 ? own / ownPace : 0, restMs) / 1000;
}

// The bytes left at the pace of the workers still to read, each reading at its own, one that
// waits, has not begun or has no pace yet at the mean pace of those that have one, a worker done
// at none.
function sharedLeft(workers, left, now) {
  const known = workers.map((w) => paceOf(w, now)).filter((p) => p !== null);
  if (known.length === 0) return null;
  const mean = known.reduce((a, b) => a + b, 0) / known.length;
  const perMs = workers.filter((w) => w.state !== 'done').reduce((sum, w) => sum + (paceOf(w, now) ?? mean), 0);
  return Math.max(0, left) / perMs / 1000;
}

// [rows, weight, rows, weight …] as [{rows, weight}], or null.
function passesOf(flat) {
  if (!Array.isArray(flat) || flat.length < 2) return null;
  const passes = [];
  for (let i = 0; i + 1 < flat.length; i += 2) passes.push({ rows: flat[i], weight: flat[i + 1] });
  return passes;
}

// The seconds the verdict has left after `done` rows at `now`, or null: the pass under way's rows
// left at its own pace (once it has read a twentieth of them, for a quarter of a second), the
// passes after it at the time per weighed row of the passes done (of the pass under way while it
// is the first). `at[k]`: when pass k began (ms).
export function passesLeft(passes, at, done, now) {
  if (!passes) return null;
  let begun = 0;
  let k = 0;
  while (k < passes.length - 1 && done >= begun + passes[k].rows) begun += passes[k++].rows;
  const pass = passes[k];
  const read = Math.min(Math.max(done - begun, 0), pass.rows);
  const t0 = at[0];
  const tk = at[k] ?? now;
  const weighedBefore = passes.slice(0, k).reduce((t, p) => t + p.rows * p.weight, 0);
  const unit = k > 0 && weighedBefore > 0 ? (tk - t0) / weighedBefore : read > 0 ? (now - tk) / (read * pass.weight) : null;
  if (unit === null || !(unit >= 0)) return null;
  const ownPace = read >= pass.rows / 20 && now - tk >= 250 ? (now - tk) / read : pass.weight * unit;
  const after = passes.slice(k + 1).reduce((t, p) => t + p.rows * p.weight, 0);
  return ((pass.rows - read) * ownPace + after * unit) / 1000;
}

export class OpenProgress {
  // `show(text, share)`: the line and the bar (share 0–1, or null when unknown). `reader`: a
  // reader worker reads the kernel table beside the analysis worker.
  // `mark(name, detail)`: the performance marks the benchmarks read (none for a what-if
  // helper's open).
  constructor(fileBytes, show, { reader = false, now = () => performance.now(), mark = (name, detail) => performance.mark(name, detail) } = {}) {
    this.fileBytes = fileBytes;
    this.mark = mark;
    this.show = show;
    this.now = now;
    this.t0 = now();
    this.workers = { analysis: worker(), reader: reader ? worker() : null };
    this.workers.analysis.at = this.t0;
    this.verdict = null;
    this.step = '';
    this.sampledAt = -Infinity;
  }

  // A progress message of the analysis worker (`bytes`: read by its instance so far; `base`: the
  // verdict begins, its rows counted from the heartbeat's `base`).
  analysis(msg) {
    if (msg.base !== undefined) {
      const t0 = this.now();
      this.verdict = { t0, total: msg.total, base: msg.base, done: 0, passes: passesOf(msg.passes), at: [t0], last: { done: 0, at: t0 } };
      this.mark('nsys-lens:verdict-stage');
    } else if (msg.bytes !== undefined) {
      this.workers.analysis.base ??= msg.bytes; // read before this file
      // With a reader, 'loading kernels' of no rows: the host side read, the kernel table
      // awaited from it (read here after all if the reader fails).
      const awaits = msg.step === 'loading kernels' && !(msg.total > 0) && this.workers.reader !== null;
      heard(this.workers.analysis, msg, awaits ? 'done' : 'reading', this.now());
    }
    // The host side read, the kernel table awaited from the reader worker (benchmarks read it).
    if (msg.step === 'loading kernels' && this.step !== msg.step) this.mark('nsys-lens:host-side');
    this.step = msg.step;
    this.render();
  }

  // A progress message of the reader worker (a fresh instance: its bytes are this file's); it
  // waits for the verdict's inputs after a message marked `waits`.
  reader(msg) {
    const w = this.workers.reader;
    if (w && msg.bytes !== undefined) heard(w, msg, msg.waits ? 'waiting' : 'reading', this.now());
    this.render();
  }

  // The reader worker answered, or failed (the analysis worker then reads the kernel table).
  readerDone() {
    const w = this.workers.reader;
    if (w) heard(w, { ...w.step, bytes: w.bytes }, 'done', this.now());
  }

  // The analysis worker's heartbeat: `rows` handed out by its passes so far.
  beat(rows) {
    const v = this.verdict;
    if (!v) return;
    v.done = Math.max(0, rows - v.base);
    this.passBegun(v, this.now());
    this.render();
  }

  // When each pass the rows read since the last beat crossed into began, between that beat and
  // this one in proportion to the rows.
  passBegun(v, now) {
    if (v.passes) {
      let begun = 0;
      for (let k = 0; k + 1 < v.passes.length; k++) {
        begun += v.passes[k].rows;
        if (v.at[k + 1] === undefined && v.done >= begun) {
          const span = v.done - v.last.done;
          v.at[k + 1] = span > 0 ? v.last.at + ((now - v.last.at) * (begun - v.last.done)) / span : now;
        }
      }
    }
    v.last = { done: v.done, at: now };
  }

  render() {
    const now = this.now();
    const v = this.verdict;
    let text;
    let share;
    let eta;
    if (v) {
      share = v.total > 0 ? Math.min(1, v.done / v.total) : null;
      const spent = now - v.t0;
      eta = v.passes ? (spent >= MIN_MS && share < 1 ? passesLeft(v.passes, v.at, v.done, now) : null) : secondsLeft(v.t0, now, share);
      const rows = `${v.done.toLocaleString('en-US')} of ${v.total.toLocaleString('en-US')} rows`;
      text = `Computing the verdict: ${rows}${share === null ? '' : ` (${Math.round(share * 100)} %)`}`;
    } else {
      const { reader } = this.workers;
      const workers = [this.workers.analysis, reader].filter((w) => w !== null);
      const read = workers.reduce((sum, w) => sum + w.bytes, 0);
      // The bytes the reader's rows say it has left are left, though the two workers' bytes
      // add up to the file's size.
      const left = Math.max(this.fileBytes - read, (reader && tableLeft(reader)) ?? 0);
      share = this.fileBytes > 0 ? Math.min(1, read / (read + left)) : null;
      eta = paced(this.t0, now, share) ? readLeft(workers, left, now, reader) : null;
      // The file's share read, not the bytes read, which count the pages both workers read.
      const shown = share === null ? Math.min(read, this.fileBytes) : this.fileBytes * share;
      // Once the analysis worker's host side is read, the step under way is the reader's.
      const step = this.step === 'done' && reader?.state === 'reading' ? (reader.step?.step ?? this.step) : this.step;
      text = `Reading the file: ${formatSize(shown)} of ${formatSize(this.fileBytes)}${share === null ? '' : ` (${Math.round(share * 100)} %)`} · ${step}`;
    }
    if (eta !== null) text += ` · ${timeLeft(eta)}${v ? '' : ' to read it, then the verdict'}`;
    this.show(text, share);
    if (now - this.sampledAt >= SAMPLE_MS) {
      this.sampledAt = now;
      // Each worker's bytes and state too, to weigh other estimators against the same run.
      const parts = Object.fromEntries(Object.entries(this.workers).map(([k, w]) => [k, w && { bytes: w.bytes, ms: w.ms, state: w.state, ...w.step }]));
      this.mark('nsys-lens:progress', { detail: { stage: v ? 'verdict' : 'read', share, eta, at: now, ...parts } });
    }
  }
}
