// Phase table: aggregate, context and generation side by side. A scope the core did not compute
// has no column: the table says once, under it, which and why.

import { METRICS, SCOPES, el, pct, us, int, rawValue, directionSign, clear, isNum } from './format.js';
import { scopeOf, phasesNote } from './cards.js';

// A metric's cell: its value; a crossed threshold is stated in words (a ▲ would read as "went
// up", and there is no earlier trace here to go up from).
function metricCell(s, key) {
  const v = s.metrics[key];
  const ev = s.evidence[key] || {};
  const crossed = key === 'nccl_ratio' ? (s.ncclCaveat ? 'caveat' : null) : ev.crossed;
  const cls = crossed === true ? 'crossed' : crossed === 'caveat' ? 'caveat' : isNum(v) ? '' : 'na';
  return el(
    'td',
    { class: `mono num ${cls}`, dataset: { metric: key, value: rawValue(v) }, title: isNum(ev.threshold) ? `threshold ${directionSign(ev.direction)} ${pct(ev.threshold)}` : '' },
    isNum(v) ? pct(v) : 'n/a',
    crossed === true ? el('span', { class: 'mark', text: 'crossed' }) : null,
    crossed === 'caveat' ? el('span', { class: 'mark', text: 'caveat' }) : null,
  );
}

export function renderPhases(container, report) {
  clear(container);
  const all = SCOPES.map((sc) => ({ ...sc, s: scopeOf(report, sc.key) }));
  const scopes = all.filter((sc) => sc.s);
  const missing = all.filter((sc) => !sc.s);
  const head = el('tr', {}, el('th', { text: '' }), scopes.map((sc) => el('th', { scope: 'col', text: sc.title })));
  const rows = [];
  const row = (label, cell, cls = '') =>
    rows.push(el('tr', { class: cls }, el('th', { scope: 'row', text: label }), scopes.map((sc) => cell(sc.s, sc.key))));

  row('Verdict', (s, key) =>
    el('td', { dataset: { scope: key } }, el('span', { class: `verdict-chip ${s.verdict === 'YES' ? 'yes' : 'no'}`, text: s.verdict })),
  );
  row('Iterations', (s) => el('td', { class: 'mono num', text: isNum(s.iterations) ? int(s.iterations) : 'all' }));
  row('Window', (s) => el('td', { class: 'mono num', text: s.window ? us(s.window.duration_us) : '—' }));
  row('Intervals', (s) =>
    el('td', { class: 'mono num', title: s.window?.source || '', text: s.window ? `${int(s.window.intervals)} (${s.window.source})` : '—' }),
  );
  if (scopes.some((sc) => sc.s.bound)) {
    // What the GPU did in each scope, as the core split it (shares of the busy time).
    const share = (kind) => (s) => {
      const v = s.bound?.of_busy?.[kind];
      return el('td', { class: 'mono num', dataset: { busy: kind, value: rawValue(v) }, text: isNum(v) ? pct(v) : '—' });
    };
    row('GPU busy: compute', share('compute'), 'busy-row');
    row('GPU busy: communication', share('communication'), 'busy-row');
    row('GPU busy: transfers (copies, memsets)', share('transfer'), 'busy-row');
    row('GPU work bound', (s) => el('td', { dataset: { bound: s.bound?.kind || '' }, text: s.bound?.label || '—' }), 'busy-row');
  }
  for (const m of METRICS) row(`${m.title} (${m.id})`, (s) => metricCell(s, m.key), 'metric-row');
  row('Crossed', (s) => el('td', { class: 'mono num', text: `${s.crossedCount ?? 0} of ${s.applicableCount ?? 0}` }));
  row('Host prep confirmed', (s) => el('td', { text: s.hostPrepConfirmed ? 'yes' : 'no', class: s.hostPrepConfirmed ? 'crossed' : '' }));

  container.append(el('div', { class: 'table-wrap' }, el('table', { class: 'table phase-table', 'data-testid': 'phase-table' }, el('thead', {}, head), el('tbody', {}, rows))));
  if (missing.length) {
    const why = phasesNote(report);
    const names = missing.map((sc) => sc.title.toLowerCase()).join(' and ');
    const subject = `${names[0].toUpperCase()}${names.slice(1)} phase${missing.length > 1 ? 's' : ''}`;
    container.append(el('p', { class: 'muted small', 'data-testid': 'phases-not-computed', text: why ? `${subject}: ${why.reason}` : `${subject} not computed.` }));
  }
}
