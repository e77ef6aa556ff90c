// What the page says while a file opens, in two stages, each with the time it has left at its
// pace so far:
// - reading: the bytes of the file both workers have read (the analysis worker the host side,
//   the reader worker the kernel table), of the file's size;
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

// The time a stage begun at `t0` has left when `share` of it is done at `now`, at its pace so
// far, or null.
function secondsLeft(t0, now, share) {
  const spent = now - t0;
  if (!(share >= MIN_SHARE) || spent < MIN_MS || share >= 1) return null;
  return (spent * (1 - share)) / share / 1000;
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
  // `show(text, share)`: the line and the bar (share 0–1, or null when unknown).
  constructor(fileBytes, show, now = () => performance.now()) {
    this.fileBytes = fileBytes;
    this.show = show;
    this.now = now;
    this.t0 = now();
    this.bytes = { analysis: 0, reader: 0 };
    this.base = null; // the analysis worker's bytes read before this file
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
      performance.mark('nsys-lens:verdict-stage');
    } else if (msg.bytes !== undefined) {
      this.base ??= msg.bytes;
      this.bytes.analysis = msg.bytes - this.base;
    }
    // The host side read, the kernel table awaited from the reader worker (benchmarks read it).
    if (msg.step === 'loading kernels' && this.step !== msg.step) performance.mark('nsys-lens:host-side');
    this.step = msg.step;
    this.render();
  }

  // A progress message of the reader worker (a fresh instance: its bytes are this file's).
  reader(msg) {
    if (msg.bytes !== undefined) this.bytes.reader = msg.bytes;
    this.render();
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
      const read = this.bytes.analysis + this.bytes.reader;
      share = this.fileBytes > 0 ? Math.min(1, read / this.fileBytes) : null;
      eta = secondsLeft(this.t0, now, share);
      text = `Reading the file: ${formatSize(Math.min(read, this.fileBytes))} of ${formatSize(this.fileBytes)}${share === null ? '' : ` (${Math.round(share * 100)} %)`} · ${this.step}`;
    }
    if (eta !== null) text += ` · ${timeLeft(eta)}${v ? '' : ' to read it, then the verdict'}`;
    this.show(text, share);
    if (now - this.sampledAt >= SAMPLE_MS) {
      this.sampledAt = now;
      performance.mark('nsys-lens:progress', { detail: { stage: v ? 'verdict' : 'read', share, eta, at: now } });
    }
  }
}
