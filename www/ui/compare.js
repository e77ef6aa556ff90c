// The Verdict view of a comparison: the baseline's and the target's detect reports side by side,
// every metric of every scope (aggregate, context, generation) as `baseline → target`, as the
// core reported them (nothing recomputed; data-* carry the raw values).

import { METRICS, SCOPES, el, clear, pct, int, rawValue, dataTable } from './format.js';
import { scopeOf } from './cards.js';

const raw = (v) => (typeof v === 'string' ? v : rawValue(v));

// A row: what, the baseline's shown value, the target's, and the raw values for tests.
function row(key, scope, label, [b, t], fmt) {
  return el(
    'tr',
    { 'data-metric': key, 'data-scope': scope, 'data-baseline': raw(b), 'data-target': raw(t) },
    el('td', { text: label }),
    el('td', { class: 'mono num', text: fmt(b) }),
    el('td', { class: 'mono num', text: fmt(t) }),
  );
}

const shown = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

// A step marker as one word: its key, or its source (regex, phase map), or none.
function markerName(report) {
  const m = report.step_marker;
  if (!m) return 'none';
  return m.marker || m.source;
}

// The rows of one scope, or none when neither trace has it.
function scopeRows(scope, title, base, target) {
  const [b, t] = [scopeOf(base, scope), scopeOf(target, scope)];
  if (!b && !t) return [];
  const both = (f) => [b ? f(b) : null, t ? f(t) : null];
  const rows = [
    row('verdict', scope, `${title} verdict`, both((s) => s.verdict), shown),
    row('crossed_count', scope, `${title} metrics crossed`, both((s) => (s.crossedCount === undefined ? null : `${s.crossedCount} of ${s.applicableCount}`)), shown),
  ];
  if (scope !== 'aggregate') rows.push(row('iteration_count', scope, `${title} steps`, both((s) => s.iterations), int));
  for (const m of METRICS) {
    rows.push(row(m.key, scope, `${title} ${m.title} (${m.id})`, both((s) => s.metrics[m.key] ?? null), (v) => pct(v)));
  }
  return rows;
}

// `names`: {baseline, target} file names, for the column heads.
export function renderVerdictCompare(container, base, target, names) {
  clear(container);
  const rows = [
    row('step_marker', 'trace', 'Step marker', [markerName(base), markerName(target)], shown),
    row('kernels', 'trace', 'Kernels', [base.trace?.kernels ?? null, target.trace?.kernels ?? null], int),
    ...SCOPES.flatMap((s) => scopeRows(s.key, s.title, base, target)),
  ];
  container.append(
    dataTable(['', `baseline · ${names.baseline}`, `target · ${names.target}`], rows, { 'data-testid': 'verdict-compare-table' }),
  );
}
