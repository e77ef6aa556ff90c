// Phase table: aggregate, context and generation side by side.

import { METRICS, SCOPES, el, pct, us, int, rawValue, directionSign, clear, isNum } from './format.js';
import { scopeOf } from './cards.js';

function metricCell(s, key) {
  if (!s) return el('td', { class: 'na', text: '—' });
  const v = s.metrics[key];
  const ev = s.evidence[key] || {};
  const crossed = key === 'nccl_ratio' ? (s.ncclCaveat ? 'caveat' : null) : ev.crossed;
  const cls = crossed === true ? 'crossed' : crossed === 'caveat' ? 'caveat' : isNum(v) ? '' : 'na';
  return el(
    'td',
    { class: `mono num ${cls}`, dataset: { metric: key, value: rawValue(v) }, title: isNum(ev.threshold) ? `threshold ${directionSign(ev.direction)} ${pct(ev.threshold)}` : '' },
    pct(v),
    crossed === true ? el('span', { class: 'mark', text: ' ▲', 'aria-label': 'crossed' }) : null,
    crossed === 'caveat' ? el('span', { class: 'mark', text: ' !', 'aria-label': 'caveat' }) : null,
  );
}

export function renderPhases(container, report) {
  clear(container);
  const scopes = SCOPES.map((sc) => ({ ...sc, s: scopeOf(report, sc.key) }));
  const head = el('tr', {}, el('th', { text: '' }), scopes.map((sc) => el('th', { scope: 'col', text: sc.title })));
  const rows = [];
  const row = (label, cell, cls = '') =>
    rows.push(el('tr', { class: cls }, el('th', { scope: 'row', text: label }), scopes.map((sc) => (sc.s ? cell(sc.s, sc.key) : el('td', { class: 'na', text: sc.key === 'aggregate' ? '—' : 'not computed' })))));

  row('Verdict', (s, key) =>
    el('td', { dataset: { scope: key } }, el('span', { class: `verdict-chip ${s.verdict === 'YES' ? 'yes' : 'no'}`, text: s.verdict })),
  );
  row('Iterations', (s) => el('td', { class: 'mono num', text: isNum(s.iterations) ? int(s.iterations) : 'all' }));
  row('Window', (s) => el('td', { class: 'mono num', text: s.window ? us(s.window.duration_us) : '—' }));
  row('Intervals', (s) =>
    el('td', { class: 'mono num', title: s.window?.source || '', text: s.window ? `${int(s.window.intervals)} (${s.window.source})` : '—' }),
  );
  for (const m of METRICS) row(`${m.title} (${m.id})`, (s) => metricCell(s, m.key), 'metric-row');
  row('Crossed', (s) => el('td', { class: 'mono num', text: `${s.crossedCount ?? 0} / ${s.applicableCount ?? 0}` }));
  row('Host prep confirmed', (s) => el('td', { text: s.hostPrepConfirmed ? 'yes' : 'no', class: s.hostPrepConfirmed ? 'crossed' : '' }));

  container.append(el('table', { class: 'table phase-table', 'data-testid': 'phase-table' }, el('thead', {}, head), el('tbody', {}, rows)));
  if (!report.phases || Object.keys(report.phases).length === 0) {
    const why = (report.coverage || []).find((c) => c.subject === 'phases');
    container.append(el('p', { class: 'muted small', text: why ? why.reason : 'No phases in this trace.' }));
  }
}
