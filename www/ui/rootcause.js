// Root cause (spec §3): one trace's per-step breakdown, or a baseline vs target comparison, from
// the core's AnalyzeReport JSON (the same JSON as `nsys-lens analyze … --json`). The per-step
// wall-time plot is drawn by the core. Every figure carries its unrounded value in data-*.

import { el, clear, us, ns, int, num, isNum, rawValue, fitCanvas, drawFitted, panel, dataTable, durationColumn, signedPct, signedUs, breakable, copyButton, counted, timelineLink } from './format.js';

const STATUS_ORDER = { REGRESSION: 0, NEW: 1, IMPROVED: 2, REMOVED: 3, unchanged: 4 };

// onShow(item, side): opens the timeline of the baseline or target trace at item {start_ns, end_ns}.
export function renderRootCause(container, report, { drawStepTimes, drawKernelClasses = null, classColours = {}, markerField = null, onShow = null }) {
  clear(container);
  const { baseline, target, comparison } = report;
  container.dataset.profile = report.profile;
  const append = (...panels) => container.append(...panels.filter(Boolean));
  const traces = [baseline, target].filter(Boolean);
  const missing = traces.filter((t) => !isNum(t.wall_time_per_step_us));
  if (missing.length && comparison?.window) {
    // Steps could not be compared: the core compared the whole kernel windows instead.
    const w = comparison.window;
    append(
      rcMissing(missing, markerField),
      rcWindowSummary(comparison, w, baseline, target),
      rcClasses(traces, comparison, drawKernelClasses, classColours),
      rcDeltaTable('NVTX ops per second of window', 'rc-nvtx', w.nvtx, 'NVTX ranges starting in the kernel window, µs per second of window.', 'µs/s'),
      rcDeltaTable('GPU kernel time per second of window', 'rc-kernels', w.kernels, 'Kernel time by kernel name, µs per second of window.', 'µs/s'),
      rcDeltaTable('CUDA API time per second of window', 'rc-api', w.api, 'CPU time in CUDA API calls, µs per second of window.', 'µs/s'),
      rcDeltaTable('GPU-idle time by cause per second of window', 'rc-window-idle', w.idle_causes, 'Where the GPU-idle time went (the Drill-down attribution, all devices), µs per second of window.', 'µs/s'),
      rcHandoff(comparison.handoff),
      rcIsolation(traces),
    );
  } else if (missing.length) {
    // Steps could not be isolated in a trace: one sentence on why and the field to fix it,
    // then the whole kernel window (figures per second), never an empty per-step table.
    append(rcMissing(missing, markerField), ...traces.map(rcWindowFigures), rcClasses(traces, null, drawKernelClasses, classColours), rcIsolation(traces));
  } else if (comparison && target) {
    append(
      rcStepsSource(traces),
      rcCompareSummary(comparison, baseline, target),
      rcStepPlot([baseline, target], drawStepTimes),
      rcSlowestSteps([baseline, target], onShow),
      rcClasses([baseline, target], comparison, drawKernelClasses, classColours),
      comparison.nvtx_note
        ? rcNvtxTable(comparison, onShow)
        : rcDeltaTable('NVTX ops per step', 'rc-nvtx', comparison.nvtx, 'Host work inside each step, by NVTX range; sorted by absolute change; click a row to see its longest instance (in the target, else in the baseline) on the timeline.', 'µs/step', onShow),
      rcDeltaTable('GPU kernel time per step (kernels only)', 'rc-kernels', comparison.kernels, 'Kernel time per step by kernel name (kernel rows only; GPU busy above counts copies, memsets and graph replays too).'),
      rcDeltaTable('CUDA API time per step', 'rc-api', comparison.api, 'CPU time in CUDA API calls per step, by API.'),
      rcHandoff(comparison.handoff),
      rcIsolation([baseline, target]),
    );
  } else {
    append(
      rcStepsSource([baseline]),
      rcSingleSummary(baseline),
      rcStepPlot([baseline], drawStepTimes),
      rcSlowestSteps([baseline], onShow),
      rcClasses([baseline], null, drawKernelClasses, classColours),
      rcOpsTable('NVTX ops per step', 'rc-nvtx', baseline.nvtx_ops, onShow && ((item) => onShow(item, 'baseline')), baseline.nvtx_note),
      rcOpsTable('GPU kernel time per step (kernels only)', 'rc-kernels', baseline.kernel_ops),
      rcOpsTable('CUDA API time per step', 'rc-api', baseline.api_ops),
      rcHandoff(baseline.handoff),
      rcIsolation([baseline]),
    );
  }
}

// A figure: label, shown value, and the raw value for tests.
function rcFigure(key, label, value, shown, extra = null) {
  return el(
    'div',
    { class: 'rc-figure', 'data-rc': key, 'data-value': rawValue(value) },
    el('span', { class: 'rc-label', text: label }),
    el('span', { class: 'rc-value mono', text: shown ?? us(value) }),
    extra,
  );
}

// A change in percent with its sign (+35.5%), empty when there is none (NEW, REMOVED).
function rcSignedPct(d) {
  return signedPct(d);
}

function rcDelta(pair) {
  if (!pair) return null;
  const d = pair.delta_pct;
  const cls = !isNum(d) ? '' : d > 0 ? 'worse' : d < 0 ? 'better' : '';
  return el('span', { class: `rc-delta mono ${cls}`, text: rcSignedPct(d) });
}

function rcPairFigure(key, label, pair, fmt) {
  return el(
    'div',
    {
      class: 'rc-figure',
      'data-rc': key,
      'data-baseline': rawValue(pair?.baseline),
      'data-target': rawValue(pair?.target),
      'data-delta-pct': rawValue(pair?.delta_pct),
    },
    el('span', { class: 'rc-label', text: label }),
    el('span', { class: 'rc-value mono', text: `${fmt(pair?.baseline)} → ${fmt(pair?.target)}` }),
    rcDelta(pair),
  );
}

function rcCompareSummary(c, baseline, target) {
  const perStep = (v) => num(v, 1);
  return panel(
    `Baseline vs target · ${baseline.label} → ${target.label}`,
    'rc-summary',
    el(
      'div',
      { class: 'rc-figures' },
      rcPairFigure('wall_time_per_step_us', 'Wall time per step', c.wall_time_per_step_us, us),
      rcPairFigure('kernels_per_step', 'Kernels per step', c.kernels_per_step, perStep),
      rcPairFigure('inter_step_gap_p50_us', 'Inter-step gap p50', c.inter_step_gap_p50_us, us),
      rcPairFigure('gpu_time_per_step_us', baseline.gpu_time_label || 'GPU time per step', c.gpu_time_per_step_us, us),
    ),
    el('p', { class: 'rc-conclusion', 'data-testid': 'rc-conclusion', 'data-cause': c.primary_cause || '', text: c.conclusion || '' }),
    (c.comparability || []).length
      ? el(
          'div',
          { class: 'callout warn', 'data-testid': 'rc-comparability' },
          el('strong', { text: 'The two traces may not be comparable: ' }),
          el('ul', {}, c.comparability.map((w) => el('li', { text: typeof w === 'string' ? w : w.message || JSON.stringify(w) }))),
        )
      : null,
    (c.coverage || []).length
      ? el(
          'div',
          { class: 'callout warn', 'data-testid': 'rc-coverage' },
          el('strong', { text: 'The two captures cover different parts of the run: ' }),
          el('ul', {}, c.coverage.map((w) => el('li', { text: w }))),
        )
      : null,
    rcWarnings([baseline, target]),
  );
}

function rcSingleSummary(b) {
  const gap = b.inter_step_gap_us || {};
  return panel(
    `Per-step breakdown · ${b.label}`,
    'rc-summary',
    el(
      'div',
      { class: 'rc-figures' },
      rcFigure('wall_time_per_step_us', 'Wall time per step', b.wall_time_per_step_us),
      rcFigure('steady_steps', 'Steady-state steps', b.steady_steps, int(b.steady_steps)),
      rcFigure('kernels_per_step', 'Kernels per step', b.kernels_per_step, num(b.kernels_per_step, 1)),
      rcFigure('gpu_time_per_step_us', b.gpu_time_label || 'GPU time per step', b.gpu_time_per_step_us),
      rcFigure('inter_step_gap_p50_us', 'Inter-step gap p50', gap.p50),
      rcFigure('inter_step_gap_p90_us', 'Inter-step gap p90', gap.p90),
      rcFigure('iterations', 'Benchmark iterations', b.iterations, int(b.iterations)),
    ),
    rcWarnings([b]),
  );
}

// Why a trace has no per-step figures (the core's own words) and the step-marker field.
function rcMissing(traces, markerField) {
  const why = (t) => (t.warnings || []).find((w) => w.includes('per-step figures not computed')) || t.isolation?.reason || '';
  return panel(
    'Per-step figures not computed',
    'rc-missing',
    el(
      'ul',
      { class: 'rc-missing' },
      traces.map((t) => el('li', { 'data-label': t.label }, el('strong', { text: `${t.label}: ` }), why(t))),
    ),
    el(
      'p',
      { class: 'rc-marker-line' },
      el('span', { text: 'Name the NVTX range that marks one step (a built-in marker, a regex or a phase map) and the figures are computed again: ' }),
      markerField ? markerField() : null,
    ),
  );
}

function rcWarnings(traces) {
  const items = traces.flatMap((t) => (t.warnings || []).map((w) => `${t.label}: ${w}`));
  if (!items.length) return null;
  return el('div', { class: 'callout', 'data-testid': 'rc-warnings' }, el('ul', {}, items.map((w) => el('li', { text: w }))));
}

function rcStepPlot(traces, drawStepTimes) {
  const canvas = el('canvas', { 'data-testid': 'rc-step-plot', height: '280' });
  const wrap = el('div', { class: 'canvas-wrap' }, canvas);
  const series = traces.map((t) => ({ label: t.label, wall_us: t.step_wall_times_us || [] }));
  const section = panel('Wall time per step, step by step', 'rc-steps', wrap);
  // Drawn once the panel is in the document (the canvas takes its container's width).
  requestAnimationFrame(() => {
    fitCanvas(canvas, 280);
    try {
      drawStepTimes(canvas, JSON.stringify(series));
      canvas.dataset.drawn = '1';
    } catch (e) {
      wrap.append(el('p', { class: 'muted', text: `The plot could not be drawn: ${e.message || e}` }));
    }
  });
  return section;
}

function rcBadge(status) {
  return el('span', { class: `badge status-${String(status).toLowerCase()}`, text: status });
}

// Which method found the steps, when they were inferred (no marker): the core's sentence.
function rcStepsSource(traces) {
  const inferred = traces.filter((t) => t.steps?.source === 'inferred');
  if (!inferred.length) return null;
  const line = (t) => `${t.label}: ${t.steps.note}. No step marker: these are the trace's repeating unit, not named steps.`;
  return el(
    'div',
    { class: 'callout', 'data-testid': 'rc-steps-source' },
    el('ul', {}, inferred.map((t) => el('li', { 'data-label': t.label, 'data-method': t.steps.method, 'data-confidence': rawValue(t.steps.confidence), 'data-count': t.steps.count, text: line(t) }))),
  );
}

// The window comparison's summary: its note (it is a window comparison), figures, conclusion.
function rcWindowSummary(c, w, baseline, target) {
  const pct = (v) => (isNum(v) ? `${(v * 100).toFixed(1)}%` : '—');
  const num = (v) => (isNum(v) ? v.toFixed(1) : '—');
  return panel(
    `Window comparison · ${baseline.label} → ${target.label}`,
    'rc-window',
    el('p', { class: 'rc-window-note', 'data-testid': 'rc-window-note', text: w.note }),
    el(
      'div',
      { class: 'rc-figures' },
      rcPairFigure('gpu_busy_share', 'GPU busy', w.gpu_busy_share, pct),
      rcPairFigure('kernels_per_s', 'Kernels per second', w.kernels_per_s, num),
      rcPairFigure('kernel_us_per_kernel', 'Kernel time per kernel', w.kernel_us_per_kernel, us),
      rcPairFigure('window_s', 'Kernel window', w.window_s, (v) => (isNum(v) ? `${v.toFixed(3)} s` : '—')),
    ),
    el('p', { class: 'rc-conclusion', 'data-testid': 'rc-conclusion', 'data-cause': c.primary_cause || '', text: c.conclusion || '' }),
  );
}

// One trace without steps: its whole kernel window, per second of window.
function rcWindowFigures(t) {
  const w = t.window;
  if (!w) return null;
  const table = (title, testid, rows) =>
    rows.length
      ? panel(
          `${title} · ${t.label}`,
          testid,
          dataTable(
            ['Name', 'µs/s', 'µs/kernel', 'Calls/s', 'Total', 'Calls'],
            rows.map((r) =>
              el(
                'tr',
                { 'data-name': r.name, 'data-us-per-s': rawValue(r.us_per_s) },
                el('td', { class: 'mono name', text: r.name, title: r.name }),
                el('td', { class: 'mono num', text: r.us_per_s.toFixed(1) }),
                el('td', { class: 'mono num', text: r.us_per_kernel.toFixed(3) }),
                el('td', { class: 'mono num', text: r.calls_per_s.toFixed(1) }),
                el('td', { class: 'mono num', text: us(r.total_us) }),
                el('td', { class: 'mono num', text: int(r.calls) }),
              ),
            ),
          ),
        )
      : null;
  return el(
    'div',
    { 'data-testid': 'rc-window-figures', 'data-label': t.label },
    panel(
      `Whole kernel window · ${t.label}`,
      'rc-window',
      el('p', { class: 'rc-window-note', text: `No steps: the whole kernel window (${(w.window_s * 1000).toFixed(3)} ms, ${counted(w.kernels, 'kernel', 'kernels')} on ${counted(w.devices, 'device', 'devices')}), figures per second of window.` }),
      el(
        'div',
        { class: 'rc-figures' },
        rcFigure('gpu_busy_share', 'GPU busy', w.gpu_busy_share, `${(w.gpu_busy_share * 100).toFixed(1)}%`),
        rcFigure('kernels_per_s', 'Kernels per second', w.kernels_per_s, w.kernels_per_s.toFixed(1)),
      ),
    ),
    table('GPU kernel time per second of window', 'rc-kernels', w.kernel_ops),
    table('CUDA API time per second of window', 'rc-api', w.api_ops),
    table('NVTX ops per second of window', 'rc-nvtx', w.nvtx_ops),
  );
}

// GPU time per kernel class (the core's `kernel_classes`): the stacked bars drawn by the core,
// then the table: one trace's classes (per step, else per second of window, and per phase), or
// the comparison's deltas. Absent under trtllm-skill (the reference has no such table).
function rcClasses(traces, comparison, draw, colours) {
  const withClasses = traces.filter((t) => t.kernel_classes);
  if (!withClasses.length) return null;
  const canvas = el('canvas', { 'data-testid': 'rc-classes-chart', height: '120' });
  const wrap = el('div', { class: 'canvas-wrap' }, canvas);
  if (draw) {
    const json = JSON.stringify(withClasses.map((t) => ({ label: t.label, classes: t.kernel_classes })));
    requestAnimationFrame(() => {
      try {
        drawFitted(canvas, draw, json);
        canvas.dataset.drawn = '1';
      } catch (e) {
        wrap.append(el('p', { class: 'muted', text: `The chart could not be drawn: ${e.message || e}` }));
      }
    });
  }
  // The colour is set through the CSSOM (the page's CSP allows no inline style attribute).
  const swatch = (cls) => {
    const s = el('span', { class: 'swatch', 'data-colour': colours[cls] || '' });
    s.style.backgroundColor = colours[cls] || '#64748b';
    return s;
  };
  const note = 'Summed GPU time of each class\'s rows (kernels by name; copies, memsets and graph replays by kind — the timeline\'s colours): kernels running at once on several streams each count, so the classes can add up to more than GPU busy. A row counts in a step by when it was launched.';
  const k = comparison?.kernel_classes;
  if (k) {
    const per = k.per === 'step' ? 'per step' : 'per second of window';
    const deltaTable = (scope, classes, perText) =>
      dataTable(
        ['Class', { label: `Baseline ${perText}`, num: true }, { label: `Target ${perText}`, num: true }, { label: `Change ${perText}`, num: true }, { label: 'Change', num: true }, { label: `Rows ${perText}`, num: true }],
        classes.map((r) =>
          el(
            'tr',
            { 'data-class': r.class, 'data-baseline': rawValue(r.baseline_us), 'data-target': rawValue(r.target_us), 'data-delta': rawValue(r.delta_us), 'data-baseline-count': rawValue(r.baseline_count), 'data-target-count': rawValue(r.target_count) },
            el('td', { class: 'name nowrap' }, swatch(r.class), ` ${r.label}`),
            el('td', { class: 'mono num', text: us(r.baseline_us), dataset: { sort: String(r.baseline_us) } }),
            el('td', { class: 'mono num', text: us(r.target_us), dataset: { sort: String(r.target_us) } }),
            el('td', { class: 'mono num', text: signedUs(r.delta_us), dataset: { sort: String(r.delta_us) } }),
            el('td', { class: 'mono num', text: rcSignedPct(r.delta_pct), dataset: { sort: rawValue(r.delta_pct) } }),
            el('td', { class: 'mono num', text: `${num(r.baseline_count, 1)} → ${num(r.target_count, 1)}` }),
          ),
        ),
        { 'data-testid': 'rc-classes-table', 'data-scope': scope, 'data-per': k.per },
      );
    return panel(
      `GPU time per kernel class (${k.scope}, ${per})`,
      'rc-classes',
      el('p', { class: 'muted small', text: note }),
      wrap,
      deltaTable(k.scope, k.classes, per),
      ...(k.phases || []).map((p) => el('div', { class: 'rc-class-scope' }, el('h3', { text: `${p.scope}, per step` }), deltaTable(p.scope, p.classes, 'per step'))),
    );
  }
  const tables = withClasses.flatMap((t) => {
    const kc = t.kernel_classes;
    return [kc.per_step || kc.window, ...(kc.per_step ? kc.phases : [])].map((table) => ({ t, table }));
  });
  return panel(
    'GPU time per kernel class',
    'rc-classes',
    el('p', { class: 'muted small', text: note }),
    wrap,
    ...tables.map(({ t, table }) => {
      const per = table.per === 'step' ? 'per step' : 'per second of window';
      return el(
        'div',
        { class: 'rc-class-scope' },
        el('h3', { text: `${withClasses.length > 1 ? `${t.label} · ` : ''}${table.scope}, ${per}` }),
        dataTable(
          ['Class', { label: `GPU time ${per}`, num: true }, { label: `Rows ${per}`, num: true }, { label: 'Share', num: true }, { label: 'Total', num: true }, { label: 'Rows', num: true }],
          table.classes.map((r) =>
            el(
              'tr',
              { 'data-class': r.class, 'data-gpu-us': rawValue(r.gpu_us), 'data-count': rawValue(r.count), 'data-rows': String(r.rows) },
              el('td', { class: 'name nowrap' }, swatch(r.class), ` ${r.label}`),
              el('td', { class: 'mono num', text: us(r.gpu_us), dataset: { sort: String(r.gpu_us) } }),
              el('td', { class: 'mono num', text: num(r.count, 2), dataset: { sort: String(r.count) } }),
              el('td', { class: 'mono num', text: `${(r.share * 100).toFixed(1)}%`, dataset: { sort: String(r.share) } }),
              el('td', { class: 'mono num', text: us(r.total_us), dataset: { sort: String(r.total_us) } }),
              el('td', { class: 'mono num', text: int(r.rows), dataset: { sort: String(r.rows) } }),
            ),
          ),
          { 'data-testid': 'rc-classes-table', 'data-scope': table.scope, 'data-per': table.per, 'data-label': t.label },
        ),
      );
    }),
  );
}

// With `show`, a row whose op has a longest instance (the core's `longest`, in the target or the
// baseline) opens the timeline there, on that trace.
function rcDeltaTable(title, testid, deltas, note, unit = 'µs/step', show = null) {
  // Per step, or per second of kernel window in a window comparison.
  const per = unit === 'µs/step' ? 'per step' : 'per second of window';
  const sorted = [...(deltas || [])].sort(
    (a, b) => Math.abs(b.delta_us) - Math.abs(a.delta_us) || (STATUS_ORDER[a.status] ?? 9) - (STATUS_ORDER[b.status] ?? 9),
  );
  const base = durationColumn(sorted.map((r) => r.baseline_us_per_step));
  const targ = durationColumn(sorted.map((r) => r.target_us_per_step));
  const rows = sorted.map((r) =>
    el(
      'tr',
      rcDeltaAttrs(r, show),
      el('td', { class: 'mono name', title: r.name }, el('span', { class: 'clamp' }, breakable(r.name))),
      el('td', { class: 'mono num', text: base.cell(r.baseline_us_per_step), dataset: { sort: String(r.baseline_us_per_step) } }),
      el('td', { class: 'mono num', text: targ.cell(r.target_us_per_step), dataset: { sort: String(r.target_us_per_step) } }),
      el('td', { class: 'mono num', text: signedUs(r.delta_us), dataset: { sort: String(r.delta_us) } }),
      el('td', { class: 'mono num', text: rcSignedPct(r.delta_pct), dataset: { sort: rawValue(r.delta_pct) } }),
      el('td', { dataset: { sort: String(STATUS_ORDER[r.status] ?? 9) } }, rcBadge(r.status)),
    ),
  );
  return panel(
    title,
    testid,
    el('p', { class: 'muted small', text: note }),
    dataTable(
      [
        'Name',
        { label: base.header(`Baseline ${per}`), num: true },
        { label: targ.header(`Target ${per}`), num: true },
        { label: `Change ${per}`, num: true },
        { label: 'Change', num: true },
        'Status',
      ],
      rows,
      { 'data-testid': `${testid}-table` },
    ),
  );
}

// A delta row's attributes: its name, status and raw figures, and its timeline link.
function rcDeltaAttrs(r, show) {
  return {
    'data-name': r.name,
    'data-status': r.status,
    'data-baseline': rawValue(r.baseline_us_per_step),
    'data-target': rawValue(r.target_us_per_step),
    'data-delta': rawValue(r.delta_us),
    ...rcDeltaLink(r, show),
  };
}

function rcDeltaLink(r, show) {
  const w = r.longest;
  if (!show || !w) return {};
  const len = ns(w.end_ns - w.start_ns);
  const label = `Longest ${r.name} (${w.trace}): ${len}`;
  return {
    ...timelineLink(`Show the longest ${r.name} in the ${w.trace} (${len}) on the timeline`, () => show({ start_ns: w.start_ns, end_ns: w.end_ns, label }, w.trace)),
    'data-start-ns': String(w.start_ns),
    'data-end-ns': String(w.end_ns),
    'data-trace': w.trace,
  };
}

// The comparison's NVTX ops (standard): self time per step in both traces and its change, in
// the core's order (by change in self time); the core's note says how ops are grouped and what
// self time is. A grouped op's names open under its name; "Show as tree" puts each op under its
// parent (the core's `parent`, `depth`).
function rcNvtxTable(c, show) {
  const list = c.nvtx || [];
  const base = durationColumn(list.map((r) => r.baseline_self_us_per_step));
  const targ = durationColumn(list.map((r) => r.target_self_us_per_step));
  const rows = list.map((r) =>
    el(
      'tr',
      {
        ...rcDeltaAttrs(r, show),
        'data-self-baseline': rawValue(r.baseline_self_us_per_step),
        'data-self-target': rawValue(r.target_self_us_per_step),
        'data-self-delta': rawValue(r.self_delta_us),
        'data-parent': r.parent ?? '',
        'data-depth': String(r.depth ?? 0),
        'data-instances': r.instances ? `${r.instances.baseline}/${r.instances.target}/${r.instances.common}` : '',
      },
      el('td', { class: 'mono name', title: r.name }, el('span', { class: 'clamp' }, breakable(r.name)), rcMembers(r)),
      el('td', { class: 'mono num', text: base.cell(r.baseline_self_us_per_step), dataset: { sort: String(r.baseline_self_us_per_step) } }),
      el('td', { class: 'mono num', text: targ.cell(r.target_self_us_per_step), dataset: { sort: String(r.target_self_us_per_step) } }),
      el('td', { class: 'mono num', text: signedUs(r.self_delta_us), dataset: { sort: String(r.self_delta_us) } }),
      el('td', { class: 'mono num', text: signedUs(r.delta_us), dataset: { sort: String(r.delta_us) } }),
      el('td', { class: 'mono num', text: r.instances ? `${int(r.instances.baseline)} → ${int(r.instances.target)}` : '', dataset: { sort: String(r.instances?.target ?? 1) } }),
      el('td', { dataset: { sort: String(STATUS_ORDER[r.status] ?? 9) } }, rcBadge(r.status)),
    ),
  );
  const table = dataTable(
    [
      'Name',
      { label: base.header('Baseline self per step'), num: true },
      { label: targ.header('Target self per step'), num: true },
      { label: 'Self change per step', num: true },
      { label: 'Total change per step', num: true, title: 'The change in the op\'s whole time, its children\'s included' },
      { label: 'Names', num: true, title: 'How many names the op groups, baseline → target' },
      'Status',
    ],
    rows,
    { 'data-testid': 'rc-nvtx-table' },
  );
  return panel(
    'NVTX ops per step',
    'rc-nvtx',
    el('p', { class: 'muted small', 'data-testid': 'rc-nvtx-note', text: c.nvtx_note }),
    rcTreeToggle(table, list, rows, 'rc-nvtx-tree'),
    table,
  );
}

// "Show as tree": reorders `rows` (one per op of `list`) under their parents (the core's
// `parent`, indented by its `depth`), and back to the core's order; the table's `data-view`
// says which.
function rcTreeToggle(table, list, rows, testid) {
  const body = table.querySelector('tbody');
  const tableEl = table.querySelector('table');
  const toggle = el('input', { type: 'checkbox', 'data-testid': testid });
  toggle.addEventListener('change', () => {
    const order = toggle.checked ? rcTreeOrder(list) : list.map((_, i) => i);
    body.append(...order.map((i) => rows[i]));
    rows.forEach((tr, i) => {
      tr.cells[0].style.paddingLeft = toggle.checked ? `${0.5 + 1.25 * Math.min(list[i].depth ?? 0, 8)}rem` : '';
    });
    tableEl.dataset.view = toggle.checked ? 'tree' : 'flat';
  });
  tableEl.dataset.view = 'flat';
  return el('label', { class: 'small' }, toggle, ' Show as tree (each op under its parent)');
}

// The rows in tree order: each op under its parent (the core's `parent`), siblings in the core's
// order; an op whose parent has no row sits at the top.
function rcTreeOrder(list) {
  const at = new Map(list.map((r, i) => [r.name, i]));
  const children = new Map();
  const roots = [];
  list.forEach((r, i) => {
    const p = r.parent != null ? at.get(r.parent) : undefined;
    if (p === undefined || p === i) roots.push(i);
    else children.set(p, [...(children.get(p) || []), i]);
  });
  const out = [];
  const seen = new Set();
  const visit = (i) => {
    if (seen.has(i)) return;
    seen.add(i);
    out.push(i);
    for (const c of children.get(i) || []) visit(c);
  };
  roots.forEach(visit);
  list.forEach((_, i) => visit(i));
  return out;
}

// A grouped op's names in both traces (the core's `members`), opened under its name.
function rcMembers(r) {
  const members = r.members || [];
  if (!members.length) return null;
  const i = r.instances;
  return el(
    'details',
    { class: 'rc-members', 'data-testid': 'rc-members', onclick: (e) => e.stopPropagation() },
    el('summary', { class: 'small', text: i ? `${int(i.baseline)} → ${int(i.target)} names, ${int(i.common)} in both` : `${int(members.length)} names` }),
    el(
      'ul',
      { class: 'small' },
      members.map((m) =>
        el(
          'li',
          { 'data-name': m.name, 'data-baseline': rawValue(m.baseline_us_per_step), 'data-target': rawValue(m.target_us_per_step) },
          `${m.name}: ${us(m.baseline_us_per_step)} → ${us(m.target_us_per_step)}`,
        ),
      ),
    ),
  );
}

// A per-name table; with `show`, a row whose op has a longest instance opens the timeline there.
function rcOpsTable(title, testid, ops, show = null, note = null) {
  const list = ops || [];
  const perStep = durationColumn(list.map((r) => r.us_per_step));
  // NVTX ops of the standard profile carry self time (the note says what it is).
  const own = note ? durationColumn(list.map((r) => r.self_us_per_step)) : null;
  const total = durationColumn(list.map((r) => r.total_us));
  const link = (r) => (show && r.longest ? { ...timelineLink(`Show the longest ${r.name} (${ns(r.longest.end_ns - r.longest.start_ns)}) on the timeline`, () => show({ ...r.longest, label: `Longest ${r.name}: ${ns(r.longest.end_ns - r.longest.start_ns)}` })), 'data-start-ns': String(r.longest.start_ns), 'data-end-ns': String(r.longest.end_ns) } : {});
  const rows = list.map((r) =>
    el(
      'tr',
      { 'data-name': r.name, 'data-us-per-step': rawValue(r.us_per_step), 'data-self-us-per-step': rawValue(r.self_us_per_step), 'data-depth': r.depth ?? '', 'data-parent': r.parent ?? '', ...link(r) },
      el(
        'td',
        { class: 'mono name', title: r.name },
        el('span', { class: 'clamp' }, breakable(r.name)),
        (r.members || []).length
          ? el(
              'details',
              { class: 'rc-members', 'data-testid': 'rc-members', onclick: (e) => e.stopPropagation() },
              el('summary', { class: 'small', text: `${int(r.members.length)} names` }),
              el('ul', { class: 'small' }, r.members.map((m) => el('li', { 'data-name': m.name, 'data-us-per-step': rawValue(m.us_per_step) }, `${m.name}: ${us(m.us_per_step)}`))),
            )
          : null,
      ),
      el('td', { class: 'mono num', text: perStep.cell(r.us_per_step), dataset: { sort: String(r.us_per_step) } }),
      own ? el('td', { class: 'mono num', text: own.cell(r.self_us_per_step), dataset: { sort: String(r.self_us_per_step) } }) : null,
      el('td', { class: 'mono num', text: num(r.calls_per_step, 2), dataset: { sort: String(r.calls_per_step) } }),
      el('td', { class: 'mono num', text: total.cell(r.total_us), dataset: { sort: String(r.total_us) } }),
      el('td', { class: 'mono num', text: int(r.calls), dataset: { sort: String(r.calls) } }),
    ),
  );
  const table = dataTable(
    ['Name', { label: perStep.header('Time per step'), num: true }, own ? { label: own.header('Self per step'), num: true } : null, { label: 'Calls per step', num: true }, { label: total.header('Total'), num: true }, { label: 'Calls', num: true }].filter(Boolean),
    rows,
    { 'data-testid': `${testid}-table` },
  );
  return panel(
    title,
    testid,
    note ? el('p', { class: 'muted small', 'data-testid': `${testid}-note`, text: note }) : null,
    // NVTX ops with self time nest (the core's `parent`, `depth`): they can show as a tree.
    own ? rcTreeToggle(table, list, rows, `${testid}-tree`) : null,
    table,
  );
}

// The slowest step cycles of each trace (the core's `slowest_steps`), each opening the timeline
// at that step.
function rcSlowestSteps(traces, onShow) {
  const sides = ['baseline', 'target'];
  const listed = traces.map((t, i) => ({ t, side: sides[i] })).filter(({ t }) => (t.slowest_steps || []).length);
  if (!listed.length) return null;
  const two = traces.length > 1;
  const wall = durationColumn(listed.flatMap(({ t }) => t.slowest_steps.map((c) => c.wall_us)));
  const rows = listed.flatMap(({ t, side }) =>
    t.slowest_steps.map((c) =>
      el(
        'tr',
        {
          ...(onShow ? timelineLink('Show this step on the timeline', () => onShow({ ...c, label: `${two ? `${t.label}: ` : ''}step ${int(c.index + 1)}, ${us(c.wall_us)}` }, side)) : {}),
          'data-side': side,
          'data-index': String(c.index),
          'data-start-ns': String(c.start_ns),
          'data-end-ns': String(c.end_ns),
          'data-wall-us': rawValue(c.wall_us),
        },
        two ? el('td', { class: 'name', text: t.label }) : null,
        el('td', { class: 'mono num', text: int(c.index + 1), dataset: { sort: String(c.index) } }),
        el('td', { class: 'mono num', text: wall.cell(c.wall_us), dataset: { sort: String(c.wall_us) } }),
        el('td', { class: 'mono num', text: ns(c.start_ns - (t.isolation?.t0_ns ?? 0)), dataset: { sort: String(c.start_ns) } }),
      ),
    ),
  );
  return panel(
    'Slowest steps',
    'rc-slowest',
    el('p', { class: 'muted small', text: 'The longest steady step cycles (a step\'s start to the next step\'s start); click one to see it on the timeline.' }),
    dataTable(
      [two ? 'Trace' : null, { label: 'Step', num: true }, { label: wall.header('Wall time'), num: true }, { label: 'Starts at (from the trace start)', num: true }].filter(Boolean),
      rows,
      { 'data-testid': 'rc-slowest-table' },
    ),
  );
}

// The hand-off block of spec §4: top ops, their TensorRT-LLM functions, the line_profiler line.
function rcHandoff(h) {
  if (!h) return null;
  const text = h.text || '';
  const pre = el('pre', { class: 'handoff mono', 'data-testid': 'rc-handoff', text });
  return panel(
    'Optimization hand-off',
    'rc-handoff-panel',
    el('p', { class: 'muted small', text: 'For the host-performance work: the ops to profile first and a ready-to-paste line_profiler setting.' }),
    copyButton(text, pre, 'rc-copy-handoff'),
    pre,
    h.line_profiler ? el('p', { class: 'mono small', 'data-testid': 'rc-line-profiler', text: h.line_profiler }) : null,
    el('p', { class: 'small', 'data-testid': 'rc-handoff-next', text: 'Profile these functions, then drop the line_profiler output (.txt) here: the Hot lines view ranks its lines, and its next line keeps these functions.' }),
  );
}

/** `text` ending as a sentence does (the core's reasons may end without a full stop). */
function sentence(text) {
  return text && !/[.!?]$/.test(text) ? `${text}.` : text;
}

function rcIsolation(traces) {
  return panel(
    'How iterations were isolated',
    'rc-isolation',
    el(
      'ul',
      { class: 'rc-isolation' },
      traces.map((t) =>
        el(
          'li',
          { 'data-label': t.label, 'data-method': t.iteration_method },
          el('strong', { text: `${t.label}: ` }),
          `${t.iteration_method} — ${sentence(t.isolation?.reason || '')}`,
          t.benchmark_window ? ` Benchmark window ${ns(t.benchmark_window.start_ns - (t.isolation?.t0_ns ?? 0))} to ${ns(t.benchmark_window.end_ns - (t.isolation?.t0_ns ?? 0))} from the trace start.` : '',
        ),
      ),
    ),
  );
}
