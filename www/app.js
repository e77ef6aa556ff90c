// nsys-lens page: state and wiring. The page is thin — it renders what the Rust core returns.
//
// ─── Contract with the offline single-file build (dist/nsys-lens-offline.html) ───────────────────
// The inliner (`cargo xtask dist`, xtask/src/web/offline.rs) must, from the assembled dist/:
//  1. Page script. Replace <script type="module" src="app.js"></script> by ONE inline
//     <script type="module"> holding app.js and every module it imports, transitively, dependencies
//     first (here: ui/format.js, ui/engine.js, ui/cards.js, ui/phases.js, ui/facts.js, ui/gaps.js,
//     ui/timeline.js, then app.js):
//     - delete each relative import line (`import … from './…';` — always ONE line each);
//     - replace the one line `import __wbg_init, { … } from './pkg/nsys_lens.js';` by the
//       wasm-bindgen glue's text (pkg/nsys_lens.js) verbatim: the glue declares `__wbg_init` and
//       the imported functions/classes at its top level (its own `export`s are harmless);
//     - keep everything else (`export` on our declarations is legal in an inline module; top-level
//       names are unique across the modules and the glue). No module may contain `</script`.
//  2. Before it, give the data, EITHER as a data block (no CSP hash needed, preferred)
//        <script type="application/json" id="nsys-lens-inline">{"wasmBase64":…,"workerSource":…,"glueSource":…}</script>
//     OR as a classic script `window.NSYS_LENS_INLINE = { wasmBase64, workerSource, glueSource };`.
//     wasmBase64 = base64 of pkg/nsys_lens_bg.wasm; workerSource = worker.js with its glue import
//     line (`import __wbg_init, { Analysis } from './pkg/nsys_lens.js';`) replaced by the glue's
//     text — or left as is, then this file substitutes glueSource at run time; glueSource =
//     pkg/nsys_lens.js (the glue must not import snippets: no inline_js / module= bindings).
//     This file then starts the worker from a Blob URL of workerSource, initialises the main-thread
//     instance with init({module_or_path: bytes}) and posts the same bytes to the worker.
//  3. Inline styles.css as <style> in place of the <link rel="stylesheet">; icons → data: URLs.
//  4. Replace the CSP meta by one allowing exactly that: script-src 'sha256-…' 'wasm-unsafe-eval';
//     worker-src blob:; style-src 'sha256-…'; img-src data: blob:; connect-src 'none'; etc.
// In that mode no service worker is registered and nothing is fetched.
// ─────────────────────────────────────────────────────────────────────────────────────────────────

import __wbg_init, { drawTimeline, drawGapHistogram, timelineLayout, version } from './pkg/nsys_lens.js';
import { el, clear } from './ui/format.js';
import { WorkerEngine } from './ui/engine.js';
import { renderCards, renderCallouts } from './ui/cards.js';
import { renderPhases } from './ui/phases.js';
import { renderFacts } from './ui/facts.js';
import { renderGapTable, drawGaps } from './ui/gaps.js';
import { TimelinePanel } from './ui/timeline.js';

const GLUE_IMPORT_LINE = /^import __wbg_init, \{[^}]*\} from '\.\/pkg\/nsys_lens\.js';[^\n]*$/m;

// Threshold inputs: option key → where its default lives in the report's `thresholds`.
const THRESHOLD_FIELDS = [
  { key: 'gpu_idle_ratio', scope: 'aggregate', field: 'gpu_idle_ratio', label: 'GPU idle (M1) >' },
  { key: 'launch_overhead_ratio', scope: 'aggregate', field: 'launch_overhead_ratio', label: 'Launch overhead (M2) >' },
  { key: 'gpu_utilization', scope: 'aggregate', field: 'gpu_utilization', label: 'GPU utilization (M4) <' },
  { key: 'host_prep_exposed_ratio', scope: 'aggregate', field: 'host_prep_exposed_ratio', label: 'Host prep exposed (M3a) >' },
  { key: 'host_prep_perf_impact', scope: 'aggregate', field: 'host_prep_perf_impact', label: 'Host prep impact (M3b) >' },
  { key: 'host_prep_idle_attribution', scope: 'aggregate', field: 'host_prep_idle_attribution', label: 'Host prep idle attr. (M3c) >' },
  { key: 'generation_gpu_idle_ratio', scope: 'generation', field: 'gpu_idle_ratio', label: 'Generation GPU idle >' },
  { key: 'generation_gpu_utilization', scope: 'generation', field: 'gpu_utilization', label: 'Generation GPU util. <' },
];

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

function inlineData() {
  if (window.NSYS_LENS_INLINE) return window.NSYS_LENS_INLINE;
  const block = document.getElementById('nsys-lens-inline');
  if (block) {
    try {
      return JSON.parse(block.textContent);
    } catch {
      return null;
    }
  }
  return null;
}

function base64Bytes(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

function workerFactory(inline) {
  if (!inline) return () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'nsys-lens' });
  let source = inline.workerSource;
  if (GLUE_IMPORT_LINE.test(source)) source = source.replace(GLUE_IMPORT_LINE, () => inline.glueSource);
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  return () => new Worker(url, { type: 'module', name: 'nsys-lens' });
}

function detectOptions() {
  const profile = document.querySelector('input[name=profile]:checked')?.value || 'standard';
  return JSON.stringify({ profile, no_m3: false, thresholds: { ...appState.overrides } });
}

// ── rendering ────────────────────────────────────────────────────────────────────────────────────

function showError(message) {
  const box = $('error');
  clear(box);
  box.append(el('strong', { text: 'Could not analyse this file. ' }), el('span', { 'data-testid': 'error-message', text: message }));
  box.hidden = false;
}

function hideError() {
  $('error').hidden = true;
}

function renderVerdict(report) {
  const v = report.verdict === 'YES' ? 'YES' : 'NO';
  $('verdict').textContent = v;
  $('verdict-box').className = `verdict-box ${v === 'YES' ? 'yes' : 'no'}`;
  $('file-name').textContent = appState.fileName;
  const t = report.trace || {};
  const why = [];
  const scopes = [
    ['aggregate', report],
    ['context', report.phases?.context],
    ['generation', report.phases?.generation],
  ];
  for (const [name, s] of scopes) {
    if (s && s.verdict === 'YES') why.push(`${name} (${s.crossed_count} of ${s.applicable_count} metrics crossed)`);
  }
  $('summary').textContent =
    v === 'YES'
      ? `The host CPU is a bottleneck: ${why.join('; ')}.`
      : `The host CPU does not look like the bottleneck: fewer than 2 applicable metrics crossed in every scope (aggregate ${report.crossed_count} of ${report.applicable_count}).`;
  $('summary').append(
    el('span', { class: 'muted small block', text: `${t.nsys_version ? `nsys ${t.nsys_version} · ` : ''}${(t.devices || []).length} device(s) · ${t.kernels ?? 0} kernels · profile ${report.profile}` }),
  );
  renderCallouts($('callouts'), report);
}

function renderThresholdInputs(report) {
  const grid = $('threshold-grid');
  const th = report.thresholds || {};
  const defaults = {};
  for (const f of THRESHOLD_FIELDS) defaults[f.key] = th[f.scope]?.[f.field];
  appState.defaults = defaults;
  if (grid.childElementCount) return; // built once per trace; values stay as the user set them
  for (const f of THRESHOLD_FIELDS) {
    const input = el('input', {
      type: 'number',
      min: '0',
      max: '100',
      step: '0.5',
      inputmode: 'decimal',
      'data-threshold': f.key,
      'data-testid': `threshold-${f.key}`,
      value: defaults[f.key] !== undefined ? String(+(defaults[f.key] * 100).toFixed(4)) : '',
    });
    input.addEventListener('input', () => {
      const pct = parseFloat(input.value);
      if (Number.isFinite(pct) && pct >= 0 && pct <= 100) {
        const frac = pct / 100;
        if (frac === appState.defaults[f.key]) delete appState.overrides[f.key];
        else appState.overrides[f.key] = frac;
        input.classList.toggle('changed', f.key in appState.overrides);
        input.setCustomValidity('');
        scheduleRecompute();
      } else {
        input.setCustomValidity('0 to 100');
      }
    });
    grid.append(el('label', { class: 'threshold' }, el('span', { text: f.label }), el('span', { class: 'input-pct' }, input, '%')));
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
    $('recompute').textContent = '';
    setState('done');
  } catch (e) {
    if (seq !== appState.recomputeSeq) return;
    $('recompute').textContent = '';
    showError(e.message || String(e));
    setState('error');
  }
}

async function analyse(files) {
  const list = [...files].filter(Boolean);
  if (!list.length) return;
  const file = list[0];
  if (!(await engineReady)) return;
  if (appState.busy) await appState.engine.cancel();

  const others = $('others');
  if (list.length > 1) {
    clear(others).append(
      el('strong', { text: `Analysing ${file.name}. ` }),
      `Comparing traces (baseline vs target) and several ranks is coming soon; not analysed: ${list
        .slice(1)
        .map((f) => f.name)
        .join(', ')}.`,
    );
    others.hidden = false;
  } else {
    others.hidden = true;
  }

  appState.busy = true;
  appState.recomputeSeq++;
  document.body.dataset.run = String(Number(document.body.dataset.run || 0) + 1);
  setState('loading');
  hideError();
  $('results').hidden = true;
  appState.timeline.clearTrace();
  $('progress').hidden = false;
  $('progress-file').textContent = `${file.name} · ${formatSize(file.size)}`;
  $('progress-step').textContent = 'Opening…';
  $('progress-bar').style.width = '2%';
  $('progress-bar').classList.add('indeterminate');

  // A new trace keeps the user's profile, but thresholds go back to the defaults.
  clear($('threshold-grid'));
  appState.overrides = {};
  appState.scope = 'aggregate';

  performance.mark('nsys-lens:open');
  try {
    const res = await appState.engine.open(file, detectOptions(), (step, done, total) => {
      $('progress-step').textContent = total > 0 ? `${step} (${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')})` : step;
      const bar = $('progress-bar');
      if (total > 0) {
        bar.classList.remove('indeterminate');
        bar.style.width = `${Math.max(2, Math.min(100, (done / total) * 100))}%`;
      }
    });
    appState.fileName = res.fileName || file.name;
    $('progress').hidden = true;
    $('intro').hidden = true;
    $('results').hidden = false;
    renderReport(JSON.parse(res.detect));
    performance.mark('nsys-lens:verdict'); // benchmarks measure open → verdict → first timeline paint
    renderGaps(res.gaps, res.gapsError);
    appState.timeline.setTrace(JSON.parse(res.extent), appState.engine);
    appState.busy = false;
    setState('done');
  } catch (e) {
    appState.busy = false;
    $('progress').hidden = true;
    const message = e?.message || String(e);
    if (message === 'cancelled') {
      clear(others).append(el('span', { text: `Cancelled ${file.name}.` }));
      others.hidden = false;
      setState('idle');
    } else {
      showError(message);
      setState('error');
    }
  }
}

function formatSize(bytes) {
  if (!Number.isFinite(bytes)) return '';
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(2)} GiB`;
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(0)} KiB`;
  return `${bytes} B`;
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
}

function wireControls() {
  for (const r of document.querySelectorAll('input[name=profile]')) r.addEventListener('change', () => recompute());
  $('thresholds-reset').addEventListener('click', () => {
    resetThresholdInputs();
    recompute();
  });
}

function registerServiceWorker(inline) {
  if (inline || !('serviceWorker' in navigator)) return;
  if (location.protocol !== 'http:' && location.protocol !== 'https:') return;
  navigator.serviceWorker.register('./sw.js', { scope: './' }).catch(() => {
    /* offline support is optional */
  });
}

async function main() {
  const inline = inlineData();
  let wasmBytes = null;
  wireLoading();
  wireControls();
  try {
    if (inline) {
      wasmBytes = base64Bytes(inline.wasmBase64);
      await __wbg_init({ module_or_path: wasmBytes });
    } else {
      await __wbg_init();
    }
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
  appState.engine = new WorkerEngine(workerFactory(inline), wasmBytes);
  appState.timeline = new TimelinePanel({
    canvas: $('timeline'),
    tooltip: $('tooltip'),
    rangeLabel: $('timeline-range'),
    resetButton: $('timeline-reset'),
    engine: appState.engine,
    wasm: { drawTimeline, timelineLayout },
  });
  registerServiceWorker(inline);
  document.body.dataset.ready = '1';
  resolveReady(true);
}

main();
