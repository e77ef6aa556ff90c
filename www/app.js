// nsys-lens page: state and wiring. The page is thin — it renders what the Rust core returns.
//
// The offline single-file build inlines this module and its imports: the contract it relies on
// (one-line relative imports, unique top-level names, the worker's classic form) is in
// docs/offline-file.md.

import __wbg_init, { drawTimeline, drawRanksTimeline, drawSkewChart, drawGapHistogram, drawStepTimes, drawBarChart, drawIdleCauses, idleCauseColours, drawKernelClasses, kernelClassColours, drawLprofRounds, lprofAnalyze, metricCatalogue, timelineLayout, version, formatDuration, formatSignedDuration, durationColumnUnit, formatDurationIn, formatPercent, formatSignedPercent, formatCount, formatCounted } from './pkg/nsys_lens.js';
import { el, clear, counted, ns as nsText, METRICS, THRESHOLDS, useCatalogue, useFormatter, directionSign, panel, outlineTable } from './ui/format.js';
import { STALL_MS, WorkerEngine } from './ui/engine.js';
import { renderCards, renderCallouts } from './ui/cards.js';
import { renderPhases } from './ui/phases.js';
import { renderFacts } from './ui/facts.js';
import { renderGapTable, drawGaps } from './ui/gaps.js';
import { TimelinePanel } from './ui/timeline.js';
import { renderRootCause } from './ui/rootcause.js';
import { renderDrill } from './ui/drill.js';
import { renderVerdictCompare } from './ui/compare.js';
import { renderHostSide } from './ui/hostside.js';
import { LprofPanel, splitLineProfilerFiles } from './ui/lprof.js';
import { renderCapture } from './ui/capture.js';
import { renderWhatif } from './ui/whatif.js';
import { formatSize } from './ui/progress.js';
import { ranksPanel } from './ui/ranks.js';
import { saveReport } from './ui/exports.js';
import { inlineData, base64Bytes } from './ui/offline.js';

// A threshold input's label: the metric's title and id, the scope when not the aggregate, and
// the side it crosses on (all from the core's catalogue).
function thresholdLabel(f) {
  const m = METRICS.find((x) => x.key === f.metric);
  const scope = f.scope === 'aggregate' ? '' : `${f.scope[0].toUpperCase()}${f.scope.slice(1)} `;
  return `${scope}${m ? `${m.title} (${m.id})` : f.metric} ${directionSign(m?.direction)}`;
}

const $ = (id) => document.getElementById(id);

const appState = {
  engine: null,
  timeline: null,
  report: null,
  fileName: '',
  scope: 'aggregate',
  busy: false,
  defaults: null, // threshold defaults (fractions) by option key
  overrides: {}, // option key → fraction set by the user
  recomputeTimer: 0,
  recomputeSeq: 0,
  // The files of this run: mode 'single' | 'compare' | 'ranks', slots [{slot, name}], and which
  // slot the verdict view shows.
  session: null,
  view: 'verdict',
  views: {}, // view name -> {key, promise} of what it last rendered
  // The step-marker field as the user set it ('' = auto: the first built-in marker the trace
  // shows, which the field then displays), and the marker the trace showed.
  marker: '',
  foundMarker: '',
  taken: false, // a file was taken
};

let resolveReady;
const engineReady = new Promise((resolve) => {
  resolveReady = resolve;
});

// The core draws text only at positions it computes itself (plotters' exact text measurement
// needs a styled <span>, which the CSP forbids), so the drawing exports are called directly.

function setState(s) {
  document.body.dataset.state = s;
}

// The served site starts worker.js as a module; the offline file its classic-script form from a
// Blob URL (see the contract above).
function workerFactory(inline) {
  if (!inline) return () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'nsys-lens' });
  const url = URL.createObjectURL(new Blob([inline.workerSource], { type: 'text/javascript' }));
  return () => new Worker(url, { type: 'classic', name: 'nsys-lens' });
}

// The engine compiled once, for this page and every worker it starts (each is sent the compiled
// module, which the browser shares: a worker neither fetches nor compiles it again, and code
// optimised in one is there for all). The served module streams from its file as it downloads;
// a server that names it otherwise than application/wasm gets it read whole first.
async function compileEngine(inline) {
  if (inline) return WebAssembly.compile(base64Bytes(inline.wasmBase64));
  const response = await fetch(new URL('./pkg/nsys_lens_bg.wasm', import.meta.url));
  if (!response.ok) throw new Error(`the module could not be fetched (HTTP ${response.status})`);
  if (response.headers.get('Content-Type')?.startsWith('application/wasm')) return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
}

function detectOptions() {
  const profile = document.querySelector('input[name=profile]:checked')?.value || 'standard';
  return JSON.stringify({ profile, no_m3: false, thresholds: { ...appState.overrides }, step_marker: markerOption() });
}

// The marker the core is asked for: '' (auto) unless the user chose another than the trace's.
function markerOption() {
  const m = appState.marker.trim();
  return m === 'auto' || m === appState.foundMarker ? '' : m;
}

// The field shows the user's marker, else the one the trace showed (preselected).
function renderMarkerField(report) {
  const m = report.step_marker;
  if (!appState.marker && m?.auto && m.marker) appState.foundMarker = m.marker;
  const input = $('step-marker');
  if (document.activeElement !== input) input.value = appState.marker || (m?.auto ? m.marker || '' : '');
  // The core's phrase: the marker, the unit inferred from the kernel stream, or none.
  $('step-marker-note').textContent = report.step_source || '';
}

// A comparison's Verdict view: both files' reports side by side (the core's, nothing recomputed).
async function renderComparison() {
  const box = $('verdict-compare-panel');
  const session = appState.session;
  if (session?.mode !== 'compare') {
    box.hidden = true;
    return;
  }
  const names = Object.fromEntries(session.slots.map((e) => [e.slot, e.name]));
  const options = detectOptions();
  const [b, t] = await Promise.all(['baseline', 'target'].map((slot) => appState.engine.request('detect', { options, slot })));
  renderVerdictCompare($('verdict-compare'), JSON.parse(b.detect), JSON.parse(t.detect), names);
  box.hidden = false;
}

// ── rendering ────────────────────────────────────────────────────────────────────────────────────

function showError(message, title = 'Could not analyse this file.') {
  const box = $('error');
  clear(box);
  box.append(el('strong', { text: `${title} ` }), el('span', { 'data-testid': 'error-message', text: message }));
  box.hidden = false;
}

function hideError() {
  $('error').hidden = true;
}

// The watchdog's time: `?watchdog=S` (seconds) in the page's address, else STALL_MS.
function stallMs() {
  const s = Number(new URLSearchParams(location.search).get('watchdog'));
  return Number.isFinite(s) && s > 0 ? s * 1000 : STALL_MS;
}

// The analysis worker could not start or died: nothing can be analysed until a new one runs.
function engineDead(error, { started }) {
  const reason = error?.detail || error?.message || String(error);
  if (started) {
    showError(`${reason}. What it had open is gone: drop the file again to analyse it anew; reload the page if this repeats.`, 'The analysis worker stopped:');
  } else {
    showError(
      `${reason}. Nothing can be analysed in this page until it starts: reload the page; if this repeats, open it in a current Chrome, Edge or Firefox with scripts and workers allowed.`,
      'The analysis worker could not start:',
    );
  }
  $('progress').hidden = true;
  appState.busy = false;
  setState('error');
}

function renderVerdict(report) {
  const v = report.verdict === 'YES' ? 'YES' : 'NO';
  $('verdict').textContent = v;
  $('verdict-box').className = `verdict-box ${v === 'YES' ? 'yes' : 'no'}`;
  renderBound($('bound'), report.bound);
  $('file-name').textContent = appState.fileName;
  const t = report.trace || {};
  $('summary').textContent = report.summary;
  $('summary').append(
    el('span', { class: 'muted small block', text: `${t.nsys_version ? `nsys ${t.nsys_version} · ` : ''}${counted((t.devices || []).length, 'device', 'devices')} · ${counted(t.kernels ?? 0, 'kernel', 'kernels')} · profile ${report.profile}` }),
  );
  renderCallouts($('callouts'), report);
}

// What bounds the run, first: the core's kind and the sentence with the shares that decide it
// (none under trtllm-skill, which counts kernel rows only).
function renderBound(box, bound) {
  box.hidden = !bound;
  box.replaceChildren();
  if (!bound) return;
  box.append(
    el('span', { class: 'bound-label', text: 'What bounds the run: ' }),
    el('strong', { class: `bound-kind bound-${bound.kind}`, 'data-testid': 'bound-kind', text: bound.label }),
    el('span', { class: 'muted small block', 'data-testid': 'bound-evidence', text: bound.evidence }),
  );
}

function renderThresholdInputs(report) {
  const grid = $('threshold-grid');
  const th = report.thresholds || {};
  const defaults = {};
  for (const f of THRESHOLDS) defaults[f.option] = th[f.scope]?.[f.metric];
  appState.defaults = defaults;
  if (grid.childElementCount) return; // built once per trace; values stay as the user set them
  for (const f of THRESHOLDS) {
    const input = el('input', {
      type: 'number',
      min: '0',
      max: '100',
      step: '0.5',
      inputmode: 'decimal',
      'data-threshold': f.option,
      'data-testid': `threshold-${f.option}`,
      value: defaults[f.option] !== undefined ? String(+(defaults[f.option] * 100).toFixed(4)) : '',
    });
    input.addEventListener('input', () => {
      const pct = parseFloat(input.value);
      if (Number.isFinite(pct) && pct >= 0 && pct <= 100) {
        const frac = pct / 100;
        if (frac === appState.defaults[f.option]) delete appState.overrides[f.option];
        else appState.overrides[f.option] = frac;
        input.classList.toggle('changed', f.option in appState.overrides);
        input.setCustomValidity('');
        scheduleRecompute();
      } else {
        input.setCustomValidity('0 to 100');
      }
    });
    grid.append(el('label', { class: 'threshold' }, el('span', { text: thresholdLabel(f) }), el('span', { class: 'input-pct' }, input, '%')));
  }
}

function resetThresholdInputs() {
  appState.overrides = {};
  for (const input of $('threshold-grid').querySelectorAll('input')) {
    const d = appState.defaults?.[input.dataset.threshold];
    input.value = d !== undefined ? String(+(d * 100).toFixed(4)) : '';
    input.classList.remove('changed');
  }
}

function renderReport(report) {
  appState.report = report;
  renderVerdict(report);
  renderThresholdInputs(report);
  const onScope = (scope) => {
    appState.scope = scope;
    renderCards($('cards'), $('scope-tabs'), report, scope, onScope);
  };
  onScope(appState.scope);
  renderPhases($('phases'), report);
  renderFacts($('facts'), report);
  renderMarkerField(report);
  renderCapture($('capture'), $('capture-summary'), report);
  document.body.dataset.profile = report.profile || '';
}

function renderGaps(gapsJson, gapsError) {
  const canvas = $('gap-histogram');
  if (!gapsJson) {
    clear($('gap-table')).append(el('p', { class: 'muted', text: gapsError ? `Gap histogram not computed: ${gapsError}` : 'No gaps.' }));
    $('gaps-summary').textContent = '';
    return;
  }
  renderGapTable($('gap-table'), $('gaps-summary'), JSON.parse(gapsJson));
  try {
    drawGaps(canvas, gapsJson, drawGapHistogram);
    canvas.dataset.drawn = '1';
  } catch (e) {
    $('gaps-summary').textContent += ` (histogram could not be drawn: ${e.message || e})`;
  }
}

// ── actions ──────────────────────────────────────────────────────────────────────────────────────

function scheduleRecompute() {
  clearTimeout(appState.recomputeTimer);
  appState.recomputeTimer = setTimeout(recompute, 200);
}

async function recompute() {
  if (!appState.report || appState.busy) return;
  const seq = ++appState.recomputeSeq;
  setState('loading');
  $('recompute').textContent = 'recomputing…';
  try {
    const { detect } = await appState.engine.detect(detectOptions());
    if (seq !== appState.recomputeSeq) return;
    renderReport(JSON.parse(detect));
    await renderComparison();
    if (seq !== appState.recomputeSeq) return;
    $('recompute').textContent = '';
    setState('done');
  } catch (e) {
    if (seq !== appState.recomputeSeq) return;
    $('recompute').textContent = '';
    showError(e.message || String(e));
    setState('error');
  }
}

// One file: its verdict and root cause. Two: baseline then target, compared. More: the rank
// files of one run (the drill-down matches their collectives).
function sessionOf(files) {
  if (files.length === 1) return { mode: 'single', slots: [{ slot: 'main', file: files[0] }] };
  if (files.length === 2) {
    return { mode: 'compare', slots: [{ slot: 'baseline', file: files[0] }, { slot: 'target', file: files[1] }] };
  }
  return { mode: 'ranks', slots: files.map((file, i) => ({ slot: `rank${i}`, file })) };
}

function focusSlot(session) {
  return session.mode === 'compare' ? 'target' : session.slots[0].slot;
}

async function analyse(files) {
  const { profiles, traces: list } = splitLineProfilerFiles([...files].filter(Boolean));
  if (!list.length && !profiles.length) return;
  appState.taken = true; // the page no longer reloads itself for isolation
  if (!(await engineReady)) return;
  await openLineProfiles(profiles, list.length > 0);
  if (!list.length) return;
  if (appState.busy) await appState.engine.cancel();

  const session = sessionOf(list);
  const others = $('others');
  others.hidden = true;
  appState.busy = true;
  appState.session = null;
  appState.views = {};
  appState.whatif = null;
  clear($('whatif'));
  appState.recomputeSeq++;
  document.body.dataset.run = String(Number(document.body.dataset.run || 0) + 1);
  setState('loading');
  hideError();
  $('results').hidden = true;
  $('hostside').hidden = true;
  appState.timeline.clearTrace();
  $('progress').hidden = false;
  $('progress-bar').style.width = '2%';
  $('progress-bar').classList.add('indeterminate');

  // A new trace keeps the user's profile, but thresholds go back to the defaults.
  clear($('threshold-grid'));
  appState.overrides = {};
  appState.scope = 'aggregate';
  appState.foundMarker = '';

  performance.mark('nsys-lens:open');
  let current = session.slots[0].file;
  try {
    let focused = null;
    for (const [i, entry] of session.slots.entries()) {
      current = entry.file;
      const of = session.slots.length > 1 ? ` (${i + 1} of ${session.slots.length}, ${entry.slot})` : '';
      $('progress-file').textContent = `${entry.file.name} · ${formatSize(entry.file.size)}${of}`;
      $('progress-step').textContent = 'Opening…';
      const res = await appState.engine.open(entry.file, detectOptions(), showProgress, { slot: entry.slot, only: i === 0, batch: session.slots.length });
      entry.name = res.fileName || entry.file.name;
      entry.wasmBytes = res.wasmBytes ?? Infinity; // the analysis worker's, once this file is open
      if (entry.slot === focusSlot(session)) focused = res;
    }
    appState.session = session;
    appState.engine.focus = focusSlot(session);
    appState.fileName = session.slots.find((e) => e.slot === focusSlot(session)).name;
    $('progress').hidden = true;
    $('intro').hidden = true;
    $('results').hidden = false;
    renderSession();
    showView('verdict');
    renderReport(JSON.parse(focused.detect));
    performance.mark('nsys-lens:verdict'); // benchmarks measure open → verdict → first timeline paint
    // What bounds the run is on screen while the timeline's summary is built, then the gaps.
    const { extent } = await appState.engine.extent(appState.engine.focus);
    appState.timeline.setTrace(JSON.parse(extent), appState.engine);
    appState.timeline.drawNow();
    const { gaps, gapsError } = await appState.engine.gaps(appState.engine.focus);
    renderGaps(gaps, gapsError);
    await renderComparison();
    clearWindowAnalysis();
    appState.busy = false;
    setState('done');
    loadWhatif();
  } catch (e) {
    appState.busy = false;
    $('progress').hidden = true;
    const message = e?.message || String(e);
    if (e?.code === 'cancelled') {
      clear(others).append(el('span', { text: `Cancelled ${current.name}.` }));
      others.hidden = false;
      setState('idle');
    } else if (e?.code === 'no-kernels' && session.slots.length === 1) {
      await showHostSide(session, session.slots[0]);
    } else {
      showError(session.slots.length > 1 ? `${current.name}: ${message}` : message);
      setState('error');
    }
  }
}

// A file without kernel records has no verdict, but its host side: the report's sections,
// from a whole load of the file (there is no kernel table to bound).
async function showHostSide(session, entry) {
  appState.busy = true;
  $('progress').hidden = false;
  $('progress-step').textContent = 'No kernel records: reading the host side…';
  try {
    const res = await appState.engine.openHostSide(entry.file, showProgress, entry.slot);
    entry.name = res.fileName || entry.file.name;
    appState.session = session;
    appState.engine.focus = entry.slot;
    appState.fileName = entry.name;
    $('intro').hidden = true;
    renderHostSide($('hostside'), JSON.parse(res.outline), { exportReport: (format) => exportReport(entry.slot, format) });
    $('hostside').hidden = false;
    setState('done');
  } catch (e) {
    showError(e?.message || String(e));
    setState('error');
  } finally {
    appState.busy = false;
    $('progress').hidden = true;
  }
}

// line_profiler outputs (.txt): the Hot lines view. Dropped alone, they open next to the trace
// already open (its Root cause hand-off merges into the next line) or on their own.
async function openLineProfiles(profiles, withTraces) {
  const tab = $('tab-lprof');
  if (!profiles.length) {
    if (withTraces) {
      appState.lprof.clearFiles();
      tab.hidden = true;
    }
    return;
  }
  hideError();
  tab.hidden = false;
  try {
    await appState.lprof.load(profiles);
  } catch (e) {
    if (!withTraces) {
      $('intro').hidden = true;
      $('results').hidden = false;
      if (!appState.session) document.body.dataset.mode = 'lprof';
      showView('lprof');
      setState('error');
    }
    return;
  }
  if (withTraces) return;
  if (!appState.session) document.body.dataset.mode = 'lprof';
  $('intro').hidden = true;
  $('results').hidden = false;
  showView('lprof');
  setState('done');
}

// The progress line and bar (`share` 0–1, null while unknown).
function showProgress(text, share) {
  $('progress-step').textContent = text;
  const bar = $('progress-bar');
  if (share !== null && share !== undefined) {
    bar.classList.remove('indeterminate');
    bar.style.width = `${Math.max(2, Math.min(100, share * 100))}%`;
  }
}

// The files of the run, and (several files) which one the verdict view shows.
function renderSession() {
  const box = clear($('session'));
  const { mode, slots } = appState.session;
  document.body.dataset.mode = mode;
  if (mode === 'single') return;
  box.append(el('span', { class: 'muted small', text: mode === 'compare' ? 'Verdict of:' : 'Verdict of rank file:' }));
  for (const entry of slots) {
    const label = mode === 'compare' ? `${entry.slot} · ${entry.name}` : entry.name;
    box.append(
      el('button', {
        type: 'button',
        class: 'button small slot-button',
        'data-slot': entry.slot,
        'data-testid': `slot-${entry.slot}`,
        'aria-pressed': String(entry.slot === appState.engine.focus),
        text: label,
        onclick: () => focusOn(entry.slot),
      }),
    );
  }
}

// Shows the verdict, timeline and gaps of another open file.
async function focusOn(slot) {
  if (appState.busy || slot === appState.engine.focus) return;
  setState('loading');
  try {
    const res = await appState.engine.view(slot, detectOptions());
    appState.fileName = res.fileName;
    renderSession();
    renderReport(JSON.parse(res.detect));
    renderGaps(res.gaps, res.gapsError);
    appState.timeline.setTrace(JSON.parse(res.extent), appState.engine);
    clearWindowAnalysis();
    setState('done');
    loadWhatif();
  } catch (e) {
    showError(e.message || String(e));
    setState('error');
  }
}

// ── what would it buy ────────────────────────────────────────────────────────────────────────────

// Above this size the replay (several more reads of the file) waits for a click.
const WHATIF_AUTO_BYTES = 512 * 1024 * 1024;

// The page's wasm memory, all workers added up, that a what-if helper worker may take the
// analysis worker's to: one that opens the same file holds about as much; one that opens none
// (isolated pages) is bounded from above, so it may take it to the page's memory goal.
const [WHATIF_HELPER_BYTES, WHATIF_FED_BYTES] = [448 * 1024 * 1024, 512 * 1024 * 1024];

// Whether a helper worker that opens the file, holding what the analysis worker held once
// `entry` was open, fits beside it.
function helperFits(entry) {
  return 2 * (entry?.wasmBytes ?? Infinity) <= WHATIF_HELPER_BYTES;
}

// The what-if card of the trace shown, once per trace and step marker; it loads after the
// verdict, the timeline and the gaps, and the page is usable meanwhile.
async function loadWhatif({ asked = false } = {}) {
  if (!appState.session) return;
  const slot = appState.engine.focus;
  const key = `${slot}:${markerOption()}`;
  if (appState.whatif?.key === key) return;
  const token = {};
  appState.whatif = { key, token };
  const box = clear($('whatif'));
  const status = $('whatif-status');
  const size = appState.session.slots.find((e) => e.slot === slot)?.file?.size ?? 0;
  if (!asked && size > WHATIF_AUTO_BYTES) {
    status.textContent = '';
    box.append(
      el('p', { class: 'small', text: `The replay reads this ${formatSize(size)} file several more times. ` }),
      el('button', { type: 'button', class: 'button small', 'data-testid': 'whatif-compute', text: 'Replay the steady steps', onclick: () => ((appState.whatif = null), loadWhatif({ asked: true })) }),
    );
    document.body.dataset.whatifState = 'waiting';
    return;
  }
  status.textContent = 'Replaying the steady steps…';
  document.body.dataset.whatifState = 'loading';
  performance.mark('nsys-lens:whatif-asked'); // benchmarks time the card from here
  try {
    const entry = appState.session.slots.find((e) => e.slot === slot);
    const { view } = await appState.engine.whatifShared(slot, entry?.file, detectOptions(), { step_marker: markerOption() }, { fits: helperFits(entry), budget: WHATIF_FED_BYTES });
    if (appState.whatif?.token !== token) return;
    renderWhatif(box, JSON.parse(view), { onStep: (step) => showStepPath(slot, step) });
    status.textContent = '';
    performance.mark('nsys-lens:whatif');
    document.body.dataset.whatifState = 'done';
  } catch (e) {
    if (appState.whatif?.token !== token) return;
    appState.whatif = null;
    status.textContent = '';
    box.append(el('div', { class: 'error', 'data-testid': 'whatif-error', role: 'alert', text: e.message || String(e) }));
    document.body.dataset.whatifState = 'error';
  }
}

// Draws steady step `step`'s critical path on the timeline, zoomed to the step.
async function showStepPath(slot, step) {
  const { path } = await appState.engine.stepPath(slot, step, { step_marker: markerOption() });
  const p = JSON.parse(path);
  if (slot !== appState.engine.focus) return;
  $('timeline').stepPath = p; // test hook: the path drawn
  appState.timeline.zoomTo(p.start_ns, p.end_ns, `critical path of steady step ${step} (${p.segments.length} stretches)`, path);
  $('timeline').scrollIntoView({ block: 'center' });
}

// ── views: verdict, root cause, drill-down ──────────────────────────────────────────────────────

function showView(name) {
  appState.view = name;
  for (const tab of document.querySelectorAll('.view-tab')) tab.setAttribute('aria-selected', String(tab.dataset.view === name));
  for (const v of ['verdict', 'rootcause', 'drill', 'lprof']) $(`view-${v}`).hidden = v !== name;
  $('controls').hidden = name === 'lprof'; // the profile and thresholds are the traces'
  if (name === 'lprof') appState.lprof.drawChart();
  if (name === 'verdict') appState.timeline.redraw?.();
  if (name === 'rootcause') loadView('rootcause', rootCauseKey(), computeRootCause);
  if (name === 'drill') loadView('drill', drillKey(), computeDrill);
}

// Computes a view once per key (the files and options it depends on), then renders it.
async function loadView(name, key, compute) {
  if (!appState.session) return;
  const cached = appState.views[name];
  if (cached && cached.key === key) return;
  const token = {};
  appState.views[name] = { key, token };
  const status = $(`${name}-status`);
  status.textContent = name === 'rootcause' ? 'Isolating iterations and measuring each step…' : 'Finding gaps, graphs, patterns and stragglers…';
  document.body.dataset[`${name}State`] = 'loading';
  try {
    await compute();
    if (appState.views[name]?.token !== token) return;
    status.textContent = '';
    document.body.dataset[`${name}State`] = 'done';
  } catch (e) {
    if (appState.views[name]?.token !== token) return;
    appState.views[name] = null;
    clear($(name));
    status.textContent = '';
    $(name).append(el('div', { class: 'error', 'data-testid': `${name}-error`, role: 'alert', text: e.message || String(e) }));
    document.body.dataset[`${name}State`] = 'error';
  }
}

function profile() {
  return document.querySelector('input[name=profile]:checked')?.value || 'standard';
}

function rootCauseKey() {
  const { mode, slots } = appState.session;
  return `${mode}:${slots.map((e) => e.slot).join(',')}:${profile()}:${markerOption()}`;
}

async function computeRootCause() {
  const { mode, slots } = appState.session;
  const [baseline, target] = mode === 'compare' ? ['baseline', 'target'] : [appState.engine.focus, null];
  const names = Object.fromEntries(slots.map((e) => [e.slot, e.name]));
  // Titles use the file names (the slot too when both files have the same name).
  const same = target && names[baseline] === names[target];
  const label = (slot) => (same ? `${slot} · ${names[slot]}` : names[slot]);
  const options = { profile: profile(), baseline_label: label(baseline), step_marker: markerOption() };
  if (target) options.target_label = label(target);
  const { report } = await appState.engine.analyze(baseline, target, options);
  const parsed = JSON.parse(report);
  const onShow = (item, side) => showOnTimeline(item, side === 'target' ? target : baseline);
  renderRootCause($('rootcause'), parsed, { drawStepTimes, drawKernelClasses, classColours: JSON.parse(kernelClassColours()), names, markerField: markerFieldCopy, onShow });
  appState.lprof.setHandoff((parsed.comparison || parsed.baseline)?.handoff?.line_profiler);
  if (target) await renderPathRegression(baseline, target);
}

// A pair: where the step time's change lies on the critical path (the core's section of
// `whatif TARGET --baseline BASE`), below Root cause's comparison.
async function renderPathRegression(baseline, target) {
  const holder = el('div', { 'data-testid': 'rc-path-regression' }, el('p', { class: 'muted small', text: 'Walking both traces’ critical paths…' }));
  $('rootcause').append(holder);
  try {
    const { view } = await appState.engine.whatif(target, baseline, { step_marker: markerOption(), path_only: true });
    const parsed = JSON.parse(view);
    const s = parsed.regression;
    holder.dataset.deltaUs = String(parsed.whatif.regression.delta_us);
    clear(holder).append(panel(s.title, 'rc-path-regression-panel', ...s.text.map((t) => el('p', { class: 'small', text: t })), ...s.tables.map(outlineTable)));
  } catch (e) {
    clear(holder).append(el('div', { class: 'error', role: 'alert', text: `Critical paths not compared: ${e.message || e}` }));
  }
}

// The step-marker field again, where a view says no step was found: it sets the main field.
function markerFieldCopy() {
  const input = el('input', { type: 'text', list: 'step-marker-list', placeholder: 'vllm, a regex or a phase map', 'data-testid': 'rc-step-marker', spellcheck: 'false', value: appState.marker });
  const apply = () => setMarker(input.value);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') apply();
  });
  return el('span', { class: 'rc-marker' }, input, el('button', { type: 'button', class: 'button small', 'data-testid': 'rc-step-marker-apply', text: 'Apply', onclick: apply }));
}

// A new step marker: the verdict is measured again, the other views when shown.
function setMarker(value) {
  // The marker the trace shows, displayed in the field, is no choice of the user's.
  const v = value.trim();
  appState.marker = v === 'auto' || v === appState.foundMarker ? '' : v;
  $('step-marker').value = appState.marker || appState.foundMarker;
  recompute();
  loadWhatif();
  if (appState.view !== 'verdict') showView(appState.view); // their keys include the marker
}

function drillKey() {
  const { mode, slots } = appState.session;
  return `${mode === 'ranks' ? `ranks:${slots.length}` : `one:${appState.engine.focus}`}:${markerOption()}`;
}

async function computeDrill() {
  const { mode, slots } = appState.session;
  const drillSlots = mode === 'ranks' ? slots.map((e) => e.slot) : [appState.engine.focus];
  const { report } = await appState.engine.drill(drillSlots, { top: DRILL_TOP, step_marker: markerOption() });
  renderDrill($('drill'), JSON.parse(report), {
    ...drillDrawing(),
    onGap: (gap) => showOnTimeline(gap, slotOfFile(gap.file)),
    onShow: (item) => showOnTimeline(item, slotOfFile(item.file)),
    exportReport: (format) => exportReport(appState.engine.focus, format),
  });
  await renderRanks(drillSlots);
}

// Every rank, one answer (the core's `ranksTraces`, as `nsys-lens ranks FILE…`): each rank's
// record at the collectives, the skew chart, the ranks timeline and, over several files, the
// clock each was put on (`ui/ranks.js`).
async function renderRanks(slots) {
  const holder = el('div', { 'data-testid': 'drill-ranks' });
  $('drill').append(holder);
  try {
    const { view } = await appState.engine.ranks(slots);
    const parsed = JSON.parse(view);
    holder.ranksView = parsed; // test hook: what the panel shows, as the core returned it
    if (!parsed.ranks.ranks.length) return;
    holder.append(ranksPanel(parsed, slots, appState.engine, { drawSkewChart, drawRanksTimeline, timelineLayout }));
  } catch (e) {
    holder.append(el('div', { class: 'error', role: 'alert', text: `Ranks not computed: ${e.message || e}` }));
  }
}

// The slot of the open file named `file` (a rank file), if any.
function slotOfFile(file) {
  return appState.session.slots.find((e) => e.name === file)?.slot ?? null;
}

// Opens the Verdict view's timeline at `item` ({start_ns, end_ns, label}: a gap, a step, an NVTX
// op, a straggling collective), highlighted and named; of the trace in `slot` first when another
// one is shown.
async function showOnTimeline(item, slot = null) {
  if (!item) return;
  if (slot && slot !== appState.engine.focus) await focusOn(slot);
  showView('verdict');
  appState.timeline.zoomTo(item.start_ns, item.end_ns, item.label || '');
  $('timeline').scrollIntoView({ block: 'center' });
}

// What the drill-down draws with: the core's canvas exports and its cause colours.
function drillDrawing() {
  return { drawGapHistogram, drawBarChart, drawIdleCauses, idleCauseColours: JSON.parse(idleCauseColours()) };
}

// Another trace is shown: the last range's analysis was of the one before.
function clearWindowAnalysis() {
  const box = $('window-analysis');
  clear(box);
  box.hidden = true;
}

// The range selected on the timeline analysed as a window (`detect --window`, `drill --window`):
// its verdict, cards and drill-down, below the timeline.
async function analyseWindow({ start, end }) {
  const box = $('window-analysis');
  clear(box);
  box.hidden = false;
  delete box.dataset.verdict;
  const from = start - appState.timeline.extent.start;
  box.append(el('p', { class: 'muted small', text: 'Analysing the selected range (the whole trace is read once)…' }));
  const window = [start, end];
  try {
    const { detect } = await appState.engine.detect(JSON.stringify({ ...JSON.parse(detectOptions()), window }));
    const { report } = await appState.engine.drill([appState.engine.focus], { top: DRILL_TOP, window });
    const verdict = JSON.parse(detect);
    clear(box);
    const tabs = el('div', { class: 'tabs', role: 'tablist' });
    const cards = el('div');
    const drill = el('div');
    box.append(
      el('h3', { text: `This range: ${verdict.verdict === 'YES' ? 'YES' : 'NO'}, the CPU ${verdict.verdict === 'YES' ? 'is' : 'is not'} the bottleneck` }),
      el('p', { class: 'muted small', text: `${nsText(end - start)} from ${nsText(from)} after the trace start (detect --window ${start}:${end}). ${verdict.summary || ''}` }),
      tabs,
      cards,
      drill,
    );
    const onScope = (scope) => renderCards(cards, tabs, verdict, scope, onScope);
    onScope('aggregate');
    renderDrill(drill, JSON.parse(report), {
      ...drillDrawing(),
      onGap: (gap) => appState.timeline.zoomTo(gap.start_ns, gap.end_ns, gap.label || ''),
      onShow: (item) => appState.timeline.zoomTo(item.start_ns, item.end_ns, item.label || ''),
      exportReport: (format) => exportReport(appState.engine.focus, format),
    });
    box.dataset.verdict = verdict.verdict;
    box.dataset.aggregate = JSON.stringify(verdict.aggregate_metrics);
    box.dataset.window = JSON.stringify(verdict.window);
  } catch (e) {
    clear(box);
    box.append(el('p', { class: 'error', 'data-testid': 'window-error', text: `Could not analyse this range: ${e.message}` }));
  }
}

// Largest gaps and eager kernel names listed (the CLI's default `--top`).
const DRILL_TOP = 10;

// Builds the report in the worker and saves it: nothing leaves the machine.
async function exportReport(slot, format) {
  const { bytes } = await appState.engine.report(slot, format, DRILL_TOP);
  const name = appState.session.slots.find((e) => e.slot === slot)?.name || 'trace';
  saveReport(bytes, format, name);
  return bytes.length;
}

function wireLoading() {
  const input = $('file-input');
  input.addEventListener('change', () => {
    const files = [...input.files];
    input.value = ''; // the same file can be chosen again
    analyse(files);
  });
  const zone = $('dropzone');
  let depth = 0;
  document.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth++;
    zone.classList.add('over');
  });
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (!depth) zone.classList.remove('over');
  });
  document.addEventListener('dragover', (e) => {
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
  });
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    zone.classList.remove('over');
    if (e.dataTransfer?.files?.length) analyse(e.dataTransfer.files);
  });
  zone.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      input.click();
    }
  });
  $('cancel').addEventListener('click', () => appState.engine.cancel());
  for (const tab of document.querySelectorAll('.view-tab')) tab.addEventListener('click', () => showView(tab.dataset.view));
}

function wireControls() {
  for (const r of document.querySelectorAll('input[name=profile]')) {
    r.addEventListener('change', () => {
      recompute();
      if (appState.view === 'rootcause') showView('rootcause'); // its key includes the profile
    });
  }
  $('step-marker').addEventListener('change', (e) => setMarker(e.target.value));
  $('thresholds-reset').addEventListener('click', () => {
    resetThresholdInputs();
    recompute();
  });
}

// How long the first visit waits for its service worker to install before it goes on without
// cross-origin isolation.
const ISOLATION_WAIT_MS = 15_000;
// Set in this tab's sessionStorage before the page reloads itself, so it reloads at most once.
const RELOADED = 'nsys-lens-reloaded-for-isolation';

// Registers the service worker (offline use, cross-origin isolation). Resolves true when the
// page reloads itself: a page the worker did not serve is not cross-origin isolated, so the
// first visit reloads once the worker is active, through it, unless a file was taken meanwhile
// (coi-serviceworker's way, for hosts that cannot send COOP/COEP: docs/page.md).
async function registerServiceWorker(inline) {
  if (inline || !('serviceWorker' in navigator)) return false;
  if (location.protocol !== 'http:' && location.protocol !== 'https:') return false;
  const registered = navigator.serviceWorker.register('./sw.js', { scope: './' }).catch(() => null);
  // Isolated already, or a browser without the notion, or reloaded once in this tab already.
  if (self.crossOriginIsolated !== false || reloadedOnce()) return false;
  const registration = await registered;
  if (!registration) return false; // offline support and isolation are optional
  let timer = 0;
  const installing = registration.installing || registration.waiting;
  const active = await Promise.race([
    navigator.serviceWorker.ready.then(() => true),
    // An install that fails (an asset it caches is missing) makes the worker redundant.
    new Promise((resolve) => {
      installing?.addEventListener('statechange', () => {
        if (installing.state === 'redundant') resolve(false);
      });
    }),
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(false), ISOLATION_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (!active || appState.taken) return false;
  try {
    sessionStorage.setItem(RELOADED, '1');
  } catch {
    return false; // no way to tell the reloaded page: never risk a loop
  }
  // Not `location.reload()`: after it, Chromium's next reload (the user's) brought back the
  // first, unisolated document, which never became ready.
  location.replace(location.href);
  return true;
}

function reloadedOnce() {
  try {
    return sessionStorage.getItem(RELOADED) !== null;
  } catch {
    return true;
  }
}

async function main() {
  const inline = inlineData();
  let engineModule = null;
  wireLoading();
  wireControls();
  try {
    engineModule = await compileEngine(inline);
    await __wbg_init({ module_or_path: engineModule });
  } catch (e) {
    showError(`The analysis engine (WebAssembly) could not start: ${e.message || e}`);
    setState('error');
    resolveReady(false);
    return;
  }
  try {
    $('version').textContent = `v${version()}`;
  } catch {
    /* no version export */
  }
  useCatalogue(JSON.parse(metricCatalogue()));
  appState.lprof = new LprofPanel({ root: $('lprof'), wasm: { lprofAnalyze, drawLprofRounds } });
  useFormatter({
    duration: formatDuration,
    signedDuration: formatSignedDuration,
    columnUnit: durationColumnUnit,
    durationIn: formatDurationIn,
    percent: formatPercent,
    signedPercent: formatSignedPercent,
    count: formatCount,
    counted: formatCounted,
  });
  // `?rows=file`: every open keeps no row, as on an export too large to keep any (that path on a small file).
  const keepNoRows = new URLSearchParams(location.search).get('rows') === 'file';
  appState.engine = new WorkerEngine(workerFactory(inline), engineModule, { onDead: engineDead, stallMs: stallMs(), keepNoRows });
  appState.timeline = new TimelinePanel({
    canvas: $('timeline'),
    tooltip: $('tooltip'),
    rangeLabel: $('timeline-range'),
    resetButton: $('timeline-reset'),
    engine: appState.engine,
    wasm: { drawTimeline, timelineLayout },
    selectionBar: {
      box: $('timeline-selection'),
      label: $('timeline-selection-label'),
      analyse: $('timeline-analyse'),
      clear: $('timeline-unselect'),
    },
    onWindow: analyseWindow,
  });
  const reloading = registerServiceWorker(inline);
  // Ready means the analysis worker answered: its script ran and its wasm instantiated; and the
  // page is not about to reload itself.
  try {
    await appState.engine.initPromise;
  } catch {
    resolveReady(false); // engineDead has shown why
    return;
  }
  if (await reloading) return;
  document.body.dataset.ready = '1';
  resolveReady(true);
}

main();
