// The host side of a file without kernel records (the core's report outline: `reportFile(id,
// 'outline')`): the verdict marked not computed with the capture advice (the outline's
// verdict section, shown once, in the box at the top), then each other section's
// sentences, findings and tables as the core wrote them — CUDA API calls by name, syncs,
// allocations, copies, NVTX ranges, processes, what could not be computed — and the report's
// exports.

import { el, clear, panel, outlineTable } from './format.js';
import { drFindings, drExports } from './drill.js';

export function renderHostSide(container, outline, { exportReport }) {
  clear(container);
  const n = outline.verdict_not_computed || {};
  container.append(
    el(
      'div',
      { class: 'verdict-row' },
      el(
        'div',
        { class: 'verdict-box' },
        el('span', { class: 'verdict-label', text: 'Host overhead verdict' }),
        el('span', { class: 'verdict not-computed', 'data-testid': 'hostside-verdict', text: n.verdict || 'not computed' }),
      ),
      el(
        'div',
        { class: 'verdict-summary' },
        el('div', { class: 'file-name', 'data-testid': 'hostside-file', text: outline.file }),
        el('div', { class: 'summary', 'data-testid': 'hostside-advice', text: capitalized(`${n.why ? `${n.why}. ` : ''}${n.advice || ''}`) }),
      ),
    ),
  );
  for (const s of outline.sections || []) {
    if (s.title === 'What to do next') {
      container.append(drFindings(s.findings || []));
      continue;
    }
    // The verdict and its capture advice are the box above (stated once on the page).
    if (s.title === 'Host-overhead verdict') continue;
    container.append(hostSection(s));
  }
  container.append(drExports(exportReport));
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function hostSection(s) {
  const slug = s.title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return panel(
    s.title,
    `hostside-${slug}`,
    ...(s.text || []).map((t) => el('p', { class: 'small', text: t })),
    ...(s.tables || []).map(outlineTable),
  );
}
