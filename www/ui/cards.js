// Verdict cards: one grid per scope (aggregate, context, generation), one card per metric of
// spec §2, each with value, threshold and direction, crossed or not, the figures its value is
// computed from — numerator / denominator (µs), or for a mean of ratios with their own
// denominators each device's or process's (`evidence.parts`) — and what the metric means: all
// read from the detect report, nothing recomputed.

import { METRICS, SCOPES, el, pct, us, rawValue, directionSign, clear, isNum, counted } from './format.js';

// The pieces of the report that describe one scope, or null when the scope was not computed.
export function scopeOf(report, scope) {
  if (scope === 'aggregate') {
    return {
      verdict: report.verdict,
      metrics: report.aggregate_metrics || {},
      evidence: report.evidence || {},
      crossed: report.crossed_details || {},
      crossedCount: report.crossed_count,
      applicableCount: report.applicable_count,
      hostPrepConfirmed: report.host_prep_confirmed,
      ncclCaveat: report.nccl_caveat,
      thresholds: report.thresholds?.aggregate || {},
      window: report.window,
      bound: report.bound,
    };
  }
  const p = report.phases?.[scope];
  if (!p) return null;
  return {
    verdict: p.verdict,
    metrics: p.metrics || {},
    evidence: p.evidence || {},
    crossed: p.crossed_details || {},
    crossedCount: p.crossed_count,
    applicableCount: p.applicable_count,
    hostPrepConfirmed: p.host_prep_confirmed,
    ncclCaveat: p.nccl_caveat,
    thresholds: p.thresholds || {},
    window: p.window,
    iterations: p.iteration_count,
    bound: p.bound,
  };
}

function cardStatus(key, value, ev, s) {
  if (!isNum(value)) return { cls: 'na', text: 'not applicable' };
  if (key === 'nccl_ratio') {
    return s.ncclCaveat ? { cls: 'caveat', text: 'caveat' } : { cls: 'ok', text: 'no caveat' };
  }
  const crossed = ev?.crossed ?? s.crossed?.[key];
  if (crossed === true) return { cls: 'crossed', text: 'crossed' };
  if (crossed === false) return { cls: 'ok', text: 'not crossed' };
  return { cls: 'na', text: 'not applicable' };
}

function metricCard(key, s) {
  const m = METRICS.find((x) => x.key === key);
  const value = s.metrics[key] ?? null;
  const ev = s.evidence[key] || {};
  const threshold = ev.threshold ?? (key === 'nccl_ratio' ? s.thresholds.nccl_ratio_caveat : s.thresholds[key]);
  const status = cardStatus(key, value, ev, s);
  const parts = Array.isArray(ev.parts) ? ev.parts : [];
  const ratio = parts.length
    ? el(
        'ul',
        { class: 'card-parts', 'data-testid': 'card-parts', title: 'the value is the mean of these' },
        parts.map((p) =>
          el('li', { dataset: { numeratorUs: rawValue(p.numerator_us), denominatorUs: rawValue(p.denominator_us), value: rawValue(p.value) } }, `${isNum(p.device) ? `GPU ${p.device}` : `pid ${p.pid}`}: ${us(p.numerator_us)} / ${us(p.denominator_us)} = ${pct(p.value)}`),
        ),
      )
    : isNum(ev.numerator_us) && isNum(ev.denominator_us)
      ? `${us(ev.numerator_us)} / ${us(ev.denominator_us)}`
      : 'not computed';
  return el(
    'article',
    {
      class: `card status-${status.cls}`,
      dataset: { metric: key, value: rawValue(value), crossed: String(ev.crossed ?? '') },
      'data-testid': `card-${key}`,
    },
    el(
      'header',
      { class: 'card-head' },
      el('span', { class: 'card-title', text: m.title }),
      el('span', { class: 'card-id mono', text: m.id }),
    ),
    el('div', { class: 'card-value mono', text: pct(value) }),
    el(
      'div',
      { class: 'card-line' },
      el('span', { class: `chip chip-${status.cls}`, text: status.text }),
      el('span', {
        class: 'card-threshold mono',
        text: isNum(threshold)
          ? `${key === 'nccl_ratio' ? 'caveat ' : 'threshold '}${directionSign(ev.direction)} ${pct(threshold)}`
          : '',
      }),
    ),
    el('div', { class: 'card-ratio mono', title: parts.length ? `mean of ${parts.length}` : 'numerator / denominator' }, parts.length ? `mean of ${parts.length}:` : null, ratio),
    el('p', { class: 'card-meaning', text: ev.meaning || '' }),
  );
}

// The coverage note that says why the phases were not computed: the verdict's own ('phases'),
// or the loader's missing NVTX table, which the core states once (not again under 'phases').
export function phasesNote(report) {
  const notes = report.coverage || [];
  return notes.find((c) => c.subject === 'phases') || notes.find((c) => c.subject === 'NVTX_EVENTS');
}

export function renderCards(container, tabs, report, activeScope, onScope) {
  clear(container);
  clear(tabs);
  for (const { key: scope, title } of SCOPES) {
    const s = scopeOf(report, scope);
    const tab = el(
      'button',
      {
        type: 'button',
        role: 'tab',
        class: `tab${scope === activeScope ? ' active' : ''}`,
        'aria-selected': String(scope === activeScope),
        'data-testid': `tab-${scope}`,
        onclick: () => onScope(scope),
      },
      title,
      s ? el('span', { class: `badge badge-${s.verdict === 'YES' ? 'yes' : 'no'}`, text: s.verdict }) : el('span', { class: 'badge badge-na', text: '—' }),
    );
    tabs.append(tab);

    const box = el('div', { class: 'scope', dataset: { scope }, hidden: scope !== activeScope });
    if (!s) {
      const why = phasesNote(report);
      box.append(
        el('p', { class: 'muted' }, `${title} phase not computed${why ? `: ${why.reason}` : '.'}`),
      );
    } else {
      const facts = [];
      facts.push(`${s.crossedCount ?? 0} of ${s.applicableCount ?? 0} applicable metrics crossed`);
      if (isNum(s.iterations)) facts.push(`${s.iterations} iterations`);
      if (s.window) facts.push(`window ${us(s.window.duration_us)}${s.window.intervals > 1 ? ` (${s.window.intervals} intervals)` : ''}`);
      box.append(
        el(
          'div',
          { class: 'scope-head' },
          el('span', { class: `verdict-chip ${s.verdict === 'YES' ? 'yes' : 'no'}`, 'data-testid': `verdict-${scope}`, text: s.verdict }),
          el('span', { class: 'muted', text: facts.join(' · ') }),
          s.hostPrepConfirmed ? el('span', { class: 'chip chip-crossed', text: 'host prep confirmed' }) : null,
        ),
      );
      const grid = el('div', { class: 'cards' });
      for (const { key } of METRICS) grid.append(metricCard(key, s));
      box.append(grid);
      const devices = (scope === 'aggregate' ? report.per_device : report.phases?.[scope]?.per_device) || [];
      const procs = (scope === 'aggregate' ? report.per_process : report.phases?.[scope]?.per_process) || [];
      if (devices.length > 1 || procs.length > 1) {
        box.append(
          el('p', {
            class: 'muted small scope-note',
            text: `Values are means over ${counted(devices.length, 'device', 'devices')} / ${counted(procs.length, 'process', 'processes')}: numerator / denominator are their sums where each divides by the window; a card listing each device or process shows the figures its mean is taken over.`,
          }),
        );
      }
    }
    container.append(box);
  }
}

// Callouts under the verdict: host-prep confirmation and the NCCL caveat (one callout each,
// one line per scope where it applies).
export function renderCallouts(container, report) {
  clear(container);
  const scopes = SCOPES.map((sc) => ({ ...sc, s: scopeOf(report, sc.key) })).filter((x) => x.s);
  const prep = scopes.filter((x) => x.s.hostPrepConfirmed);
  if (prep.length) {
    container.append(
      el(
        'div',
        { class: 'callout callout-warm', 'data-testid': 'callout-host-prep' },
        el('strong', { text: `Host input preparation is a confirmed bottleneck (${prep.map((x) => x.title.toLowerCase()).join(', ')}).` }),
        el('span', { text: ' M3b and M3c both crossed: exposed host prep is a large share of the window and explains most GPU idle time.' }),
        el(
          'ul',
          {},
          prep.map(({ key, title, s }) =>
            el(
              'li',
              { 'data-testid': `callout-host-prep-${key}` },
              el('span', { class: 'callout-scope', text: title }),
              `${isNum(s.evidence.host_prep_perf_impact?.numerator_us) ? `${us(s.evidence.host_prep_perf_impact.numerator_us)} of prep ran while the GPU waited: ` : ''}${pct(
                s.metrics.host_prep_perf_impact,
              )} of the window (M3b), ${pct(s.metrics.host_prep_idle_attribution)} of GPU idle time (M3c)`,
            ),
          ),
        ),
      ),
    );
  }
  const nccl = scopes.filter((x) => x.s.ncclCaveat);
  if (nccl.length) {
    container.append(
      el(
        'div',
        { class: 'callout callout-info', 'data-testid': 'callout-nccl' },
        el('strong', { text: `NCCL caveat (${nccl.map((x) => x.title.toLowerCase()).join(', ')}).` }),
        el('span', {
          text: ' Communication kernels take a large share of GPU busy time: idle gaps may be waits on other ranks rather than host overhead. M5 never counts toward the verdict.',
        }),
        el(
          'ul',
          {},
          nccl.map(({ key, title, s }) =>
            el(
              'li',
              { 'data-testid': `callout-nccl-${key}` },
              el('span', { class: 'callout-scope', text: title }),
              `NCCL ${pct(s.metrics.nccl_ratio)} of GPU busy time (caveat above ${pct(s.thresholds.nccl_ratio_caveat ?? 0.2)})`,
            ),
          ),
        ),
      ),
    );
  }
}
