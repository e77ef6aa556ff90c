// Hot lines: line_profiler text outputs dropped on the page (alone or with traces), analysed by
// the core (`lprofAnalyze`, the same JSON as `nsys-lens lprof --json`): function totals, the hot
// lines ranked by absolute time with their type and the rule that gave it, the next functions to
// profile as a ready TLLM_LINE_PROFILER_FUNCTIONS line, rounds compared, and the round chart drawn
// by the core. Every figure carries the core's unrounded value in data-*.

import { el, clear, isNum, rawValue, fitCanvas, panel, dataTable, copyButton } from './format.js';

// line_profiler writes plain text; TensorRT-LLM's TLLM_LINE_PROFILER_PATH names it as the user
// chooses, `.txt` by convention. Everything else is a trace.
export function splitLineProfilerFiles(files) {
  const profiles = [];
  const traces = [];
  for (const f of files) (/\.(txt|log)$/i.test(f.name) ? profiles : traces).push(f);
  return { profiles, traces };
}

// Seconds in the unit that reads best (display only).
function lpSecs(v) {
  if (!isNum(v)) return '—';
  const a = Math.abs(v);
  if (a >= 1) return `${v.toFixed(3)} s`;
  if (a >= 1e-3) return `${(v * 1e3).toFixed(2)} ms`;
  return `${(v * 1e6).toFixed(1)} µs`;
}

function lpSignedSecs(v) {
  return isNum(v) ? `${v < 0 ? '−' : '+'}${lpSecs(Math.abs(v))}` : '—';
}

function lpNum(v, digits = 1) {
  return isNum(v) ? v.toFixed(digits) : '—';
}

function lpKindBadge(kind, severity, rule) {
  if (!kind) return el('span', { class: 'muted', text: '—' });
  return el('span', { class: `badge lp-kind severity-${severity || 'low'}`, 'data-kind': kind, title: rule || '', text: kind });
}

function lpStatusBadge(status) {
  return el('span', { class: `badge status-${status.toLowerCase()}`, 'data-status': status, text: status });
}

// Copies `text`; when the clipboard is refused, selects `node` for a manual copy.
function lpDownload(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export class LprofPanel {
  constructor({ root, wasm }) {
    this.root = root;
    this.wasm = wasm; // { lprofAnalyze, drawLprofRounds }
    this.files = [];
    this.ranks = false;
    this.round = null; // index of the round whose hot lines are shown (default: the last)
    this.handoff = null; // the Root cause hand-off's TLLM_LINE_PROFILER_FUNCTIONS line
    this.view = null;
  }

  get active() {
    return this.files.length > 0;
  }

  clearFiles() {
    this.files = [];
    this.view = null;
    clear(this.root);
  }

  // Reads the files as text (they stay in this tab) and analyses them.
  async load(files) {
    this.files = await Promise.all(files.map(async (f) => ({ name: f.name, text: await f.text() })));
    this.ranks = false;
    this.round = null;
    return this.render();
  }

  setHandoff(line) {
    if ((line || null) === this.handoff) return;
    this.handoff = line || null;
    if (this.active) this.render();
  }

  // Analyses and renders; returns the view, or throws the core's error (code `not-line-profiler`).
  render() {
    this.root.dataset.renders = String(Number(this.root.dataset.renders || 0) + 1);
    const options = { top: 10, ranks: this.ranks };
    if (this.handoff) options.handoff = this.handoff;
    let view;
    try {
      view = JSON.parse(this.wasm.lprofAnalyze(JSON.stringify(this.files), JSON.stringify(options)));
    } catch (e) {
      clear(this.root).append(el('div', { class: 'error', role: 'alert', 'data-testid': 'lp-error', text: e.message || String(e) }));
      this.view = null;
      throw e;
    }
    this.view = view;
    const { report } = view;
    const last = report.rounds.length - 1;
    if (this.round === null || this.round > last) this.round = last;
    const shown = report.rounds[this.round];
    clear(this.root);
    this.root.dataset.rounds = String(report.rounds.length);
    this.root.append(
      ...[
        this.header(report),
        report.comparison ? this.advice(report.comparison) : null,
        this.next(report),
        this.roundPicker(report),
        this.functions(shown),
        this.hotLines(shown),
        this.drillDown(shown),
        report.comparison ? this.comparison(report) : null,
        report.rounds.length > 1 ? this.chart(view.chart) : null,
      ].filter(Boolean),
    );
    this.drawChart();
    return view;
  }

  header(report) {
    const files = this.files.map((f) => f.name).join(', ');
    const what = this.ranks ? `${this.files.length} rank files of one round` : report.rounds.length > 1 ? `${report.rounds.length} rounds, in the order dropped` : 'one round';
    const ranks =
      this.files.length > 1
        ? el(
            'label',
            { class: 'small' },
            el('input', {
              type: 'checkbox',
              'data-testid': 'lp-ranks',
              checked: this.ranks,
              onchange: (e) => {
                this.ranks = e.target.checked;
                this.round = null;
                this.render();
              },
            }),
            ' these files are the ranks of one round (merge them)',
          )
        : null;
    const exports = el(
      'div',
      { class: 'handoff-actions' },
      el('button', { type: 'button', class: 'button small', 'data-testid': 'lp-export-md', text: 'Export Markdown', onclick: () => lpDownload('line-profiler-rounds.md', this.view.markdown, 'text/markdown') }),
      el('button', { type: 'button', class: 'button small', 'data-testid': 'lp-export-json', text: 'Export JSON', onclick: () => lpDownload('line-profiler-rounds.json', `${JSON.stringify(this.view.report, null, 2)}\n`, 'application/json') }),
    );
    return panel(
      'line_profiler rounds',
      'lp-summary',
      el('p', { class: 'muted small', text: `${what}: ${files}. Hot lines are ranked by absolute time; each line's type comes from its own text (hover a badge for the rule).` }),
      ranks,
      exports,
      ...report.rounds.flatMap((r) => r.warnings.map((w) => el('p', { class: 'note small', 'data-testid': 'lp-warning', text: w }))),
    );
  }

  advice(c) {
    const s = c.stopping;
    return el(
      'div',
      { class: `callout lp-advice ${s.diminishing_returns ? 'lp-stop' : 'lp-go'}`, 'data-testid': 'lp-advice', 'data-stop': String(s.diminishing_returns), 'data-cumulative': rawValue(c.cumulative_improvement_pct) },
      el('strong', { text: `Cumulative improvement ${isNum(c.cumulative_improvement_pct) ? `${c.cumulative_improvement_pct.toFixed(1)} %` : '—'}. ` }),
      s.advice,
    );
  }

  next(report) {
    const line = report.line_profiler;
    const pre = el('pre', { class: 'handoff mono lp-next-pre', 'data-testid': 'lp-next-line', text: line || 'No function to name yet: no known profiled function, hand-off or drill-down target.' });
    const sources = { profiled: 'profiled now', handoff: 'nsys hand-off', drill_down: 'drill-down' };
    return panel(
      'Next profiling round',
      'lp-next',
      el('p', { class: 'muted small', text: this.handoff ? 'The functions profiled now, the Root cause hand-off’s and the drill-down’s, in one line (it replaces TensorRT-LLM’s default targets).' : 'The functions profiled now and the drill-down’s, in one line (it replaces TensorRT-LLM’s default targets). Open a trace’s Root cause to merge its hand-off.' }),
      line ? copyButton(line, pre, 'lp-copy-next') : null,
      pre,
      el(
        'ul',
        { class: 'lp-next-list' },
        report.next_functions.map((f) =>
          el('li', { 'data-source': f.source }, el('code', { text: f.name }), ` — ${sources[f.source] || f.source}${f.certainty === 'assumed' ? ' (module/class assumed: check)' : ''}`),
        ),
      ),
    );
  }

  roundPicker(report) {
    if (report.rounds.length < 2) return null;
    return el(
      'div',
      { class: 'tabs lp-rounds', role: 'tablist', 'data-testid': 'lp-round-tabs' },
      el('span', { class: 'muted small', text: 'Hot lines of round:' }),
      report.rounds.map((r, i) =>
        el('button', {
          type: 'button',
          class: 'button small slot-button',
          'aria-pressed': String(i === this.round),
          'data-round': String(i),
          text: `${i + 1} · ${r.label}`,
          onclick: () => {
            this.round = i;
            this.render();
          },
        }),
      ),
    );
  }

  functions(round) {
    const rows = round.functions.map((f) =>
      el(
        'tr',
        { 'data-testid': 'lp-function-row', 'data-function': f.key, 'data-total-s': rawValue(f.total_s) },
        el('td', { class: 'mono', text: f.key, title: f.file }),
        el('td', { class: 'mono num', text: lpSecs(f.total_s) }),
        el('td', { class: 'mono num', text: isNum(f.calls) ? String(f.calls) : '—' }),
        el('td', { class: 'mono num', text: isNum(f.calls) && f.calls > 0 ? lpSecs(f.total_s / f.calls) : '—' }),
        el('td', { class: 'small', text: [f.qualified ? f.qualified : '', f.truncated ? 'output cut' : '', f.summary_only ? 'summary only' : '', f.source_missing ? 'source not found' : ''].filter(Boolean).join(' · ') }),
      ),
    );
    return panel(`Functions · ${round.label}`, 'lp-functions', dataTable(['Function', 'Total', 'Calls', 'Per call', 'Notes'], rows));
  }

  hotLines(round) {
    const max = Math.max(...round.hot_lines.map((h) => h.time_s), 0);
    const rows = round.hot_lines.map((h, i) => {
      const bar = el('div', { class: 'lp-bar' });
      bar.style.width = `${max > 0 ? (h.time_s / max) * 100 : 0}%`;
      return el(
        'tr',
        { 'data-testid': 'lp-hot-row', 'data-function': h.function, 'data-line': String(h.line), 'data-time-s': rawValue(h.time_s), 'data-kind': h.kind || '' },
        el('td', { class: 'mono num', text: String(i + 1) }),
        el('td', { class: 'mono small', text: `${h.function_name}:${h.line}`, title: h.function }),
        el('td', { class: 'lp-code' }, el('code', { text: h.text })),
        el('td', {}, lpKindBadge(h.kind, h.severity, h.rule)),
        el('td', { class: 'mono num', text: String(h.hits) }),
        el('td', { class: 'mono num', text: isNum(h.per_hit_us) ? `${h.per_hit_us.toFixed(2)} µs` : '—' }),
        el('td', { class: 'mono num', text: lpNum(h.hits_per_call) }),
        el('td', { class: 'lp-time' }, el('div', { class: 'lp-bar-track' }, bar), el('span', { class: 'mono num', text: `${lpSecs(h.time_s)} · ${(h.share_of_function * 100).toFixed(1)} %` })),
      );
    });
    const rules = el(
      'ul',
      { class: 'lp-rules small' },
      round.hot_lines.slice(0, 5).map((h) => el('li', {}, el('strong', { text: `${h.function_name}:${h.line} ${h.kind || ''}` }), ` — ${h.rule || ''}`)),
    );
    return panel(
      'Hot lines (by absolute time)',
      'lp-hot',
      dataTable(['#', 'Where', 'Code', 'Type', 'Hits', 'Per hit', 'Hits/call', 'Time · % of function'], rows, { class: 'table lp-hot-table' }),
      rules,
    );
  }

  drillDown(round) {
    if (!round.drill_down.length) return null;
    return panel(
      'Drill down: profile these next',
      'lp-drill',
      el('p', { class: 'muted small', text: 'A line holds more than 80 % of its function’s time calling a function that is not profiled: its lines are where the time goes.' }),
      el(
        'ul',
        { class: 'lp-drill-list' },
        round.drill_down.map((s) =>
          el('li', { 'data-testid': 'lp-drill-item', 'data-qualified': s.qualified || '' }, el('code', { text: s.qualified || s.callee }), el('span', { class: 'muted small block', text: s.reason })),
        ),
      ),
    );
  }

  comparison(report) {
    const c = report.comparison;
    const label = (i) => `${i + 1} · ${report.rounds[i].label}`;
    const steps = c.steps.map((s) => {
      const fnRows = s.functions.map((f) =>
        el(
          'tr',
          { 'data-function': f.function, 'data-delta-s': rawValue(f.delta_s), 'data-status': f.status },
          el('td', { class: 'mono', text: f.function }),
          el('td', { class: 'mono num', text: lpSecs(f.before_s) }),
          el('td', { class: 'mono num', text: lpSecs(f.after_s) }),
          el('td', { class: 'mono num', text: `${lpSignedSecs(f.delta_s)}${isNum(f.delta_pct) ? ` (${f.delta_pct >= 0 ? '+' : ''}${f.delta_pct.toFixed(1)} %)` : ''}` }),
          el('td', {}, lpStatusBadge(f.status)),
        ),
      );
      const lineRows = s.lines.map((l) =>
        el(
          'tr',
          { 'data-delta-s': rawValue(l.delta_s), 'data-status': l.status },
          el('td', { class: 'lp-code' }, el('code', { text: l.text })),
          el('td', { class: 'mono small', text: l.function }),
          el('td', { class: 'mono num', text: lpSecs(l.before_s) }),
          el('td', { class: 'mono num', text: lpSecs(l.after_s) }),
          el('td', { class: 'mono num', text: lpSignedSecs(l.delta_s) }),
          el('td', {}, lpStatusBadge(l.status)),
        ),
      );
      return el(
        'div',
        { class: 'lp-step', 'data-testid': 'lp-step', 'data-improvement': rawValue(s.improvement_pct) },
        el('h3', { text: `${label(s.from)} → ${label(s.to)}: ${isNum(s.improvement_pct) ? `${s.improvement_pct.toFixed(1)} % faster` : '—'} (${lpSecs(s.common_before_s)} → ${lpSecs(s.common_after_s)} over the functions both profiled)` }),
        s.shift ? el('p', { class: 'lp-shift', 'data-testid': 'lp-shift', text: `Bottleneck shift: ${s.shift}` }) : null,
        dataTable(['Function', 'Before', 'After', 'Delta', 'Status'], fnRows),
        dataTable(['Line', 'Function', 'Before', 'After', 'Delta', 'Status'], lineRows),
      );
    });
    return panel('Rounds compared', 'lp-compare', ...steps);
  }

  // The rounds side by side: the core's chart series (function time per round) as a table too.
  chart(chart) {
    this.chartJson = JSON.stringify(chart);
    this.canvas = el('canvas', { 'data-testid': 'lp-chart', height: '300' });
    const rows = chart.series.map((s) =>
      el('tr', { 'data-function': s.label }, el('td', { class: 'mono', text: s.label }), s.seconds.map((v) => el('td', { class: 'mono num', 'data-value': rawValue(v), text: v > 0 ? lpSecs(v) : '—' }))),
    );
    return panel(
      'Function time per round',
      'lp-chart-panel',
      el('div', { class: 'canvas-wrap' }, this.canvas),
      dataTable(['Function', ...chart.rounds.map((r, i) => `${i + 1} · ${r}`)], rows, { class: 'table', 'data-testid': 'lp-side-by-side' }),
    );
  }

  // Draws once to learn the height the legend needs, then at that height.
  drawChart() {
    if (!this.canvas || !this.canvas.isConnected || !this.chartJson) return;
    try {
      fitCanvas(this.canvas, 300);
      const h = this.wasm.drawLprofRounds(this.canvas, this.chartJson);
      if (h !== this.canvas.height) {
        fitCanvas(this.canvas, h);
        this.wasm.drawLprofRounds(this.canvas, this.chartJson);
      }
      this.canvas.dataset.drawn = '1';
    } catch (e) {
      this.canvas.replaceWith(el('p', { class: 'muted', text: `The chart could not be drawn: ${e.message || e}` }));
    }
  }
}
