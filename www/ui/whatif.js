// "What would it buy" (the core's `whatifTraces`): the critical path of the steady steps split
// by what it waited on, the step time predicted after each change, and one step's critical path
// drawn on the timeline. The sentences and tables are the core's report section as the report
// writes them; the bar draws the parts' shares the core computed.

import { el, clear, outlineTable, pct, us } from './format.js';

// `view`: {whatif, section} as the worker returns it. `onStep(step)` draws that steady step's
// critical path on the timeline.
export function renderWhatif(container, view, { onStep }) {
  clear(container);
  const w = view.whatif;
  container.whatifView = view; // test hook: what the card shows, as the core returned it
  container.dataset.steps = String(w.steps);
  container.append(...view.section.text.map((t) => el('p', { class: 'small', 'data-testid': 'whatif-text', text: t })));
  if (w.steps > 0) container.append(pathBar(w.critical_path), stepPicker(w.steps, onStep));
  const [predicted, ...more] = view.section.tables.map(outlineTable);
  if (predicted) container.append(predicted);
  // The path by part (the bar's legend, as a table) and the names on it, on request.
  if (more.length) container.append(el('details', { class: 'whatif-more' }, el('summary', { class: 'small', text: 'The critical path by part, and the names with most time on it' }), ...more));
}

// The critical path per step as one bar, a stretch per part, and its legend.
function pathBar(path) {
  const parts = path.parts.filter((p) => p.share > 0);
  const bar = el(
    'div',
    { class: 'path-bar', 'data-testid': 'whatif-path-bar', role: 'img', 'aria-label': 'Critical path per step by part' },
    parts.map((p) => {
      const stretch = el('span', { class: `path-part part-${p.part}`, title: `${p.label}: ${us(p.per_step_us)} (${pct(p.share)})` });
      stretch.style.width = `${(100 * p.share).toFixed(3)}%`; // CSSOM: the page's CSP allows no style attribute
      return stretch;
    }),
  );
  const legend = el(
    'ul',
    { class: 'path-legend small' },
    parts.map((p) =>
      el(
        'li',
        { 'data-testid': `whatif-part-${p.part}`, 'data-us': String(p.per_step_us) },
        el('span', { class: `swatch part-${p.part}` }),
        `${p.label} ${us(p.per_step_us)} · ${pct(p.share)}`,
      ),
    ),
  );
  return el('div', { class: 'path-split' }, bar, legend);
}

// Which steady step's critical path the timeline draws.
function stepPicker(steps, onStep) {
  const input = el('input', { type: 'number', min: '0', max: String(steps - 1), step: '1', value: '0', 'data-testid': 'whatif-step', 'aria-label': 'Steady step' });
  const status = el('span', { class: 'muted small', 'data-testid': 'whatif-step-status', 'aria-live': 'polite' });
  const show = async () => {
    const step = Math.round(Number(input.value));
    if (!Number.isFinite(step) || step < 0 || step >= steps) {
      status.textContent = `a step from 0 to ${steps - 1}`;
      return;
    }
    status.textContent = 'walking the path…';
    try {
      await onStep(step);
      status.textContent = '';
    } catch (e) {
      status.textContent = e.message || String(e);
    }
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') show();
  });
  return el(
    'div',
    { class: 'whatif-step' },
    el('span', { class: 'small', text: `Critical path of steady step (0–${steps - 1}) ` }),
    input,
    el('button', { type: 'button', class: 'button small', 'data-testid': 'whatif-show-step', text: 'Show on the timeline', onclick: show }),
    status,
  );
}
