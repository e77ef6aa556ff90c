// GPU-idle gap histogram: the core draws the nine buckets of spec §4 on a canvas; the table
// beside it lists them with the typical cause of such gaps (reference §9.1) — a hint, not a
// measurement: the Drill-down measures what held each gap. With no gap, neither: one sentence
// says so.

import { el, int, pct, us, clear, fitCanvas, isNum, durationColumn, dataTable } from './format.js';

// Whether a histogram has any gap to show.
export function hasGaps(hist) {
  return !!hist && Number(hist.gaps) > 0;
}

export function renderGapTable(container, summary, hist) {
  clear(container);
  clear(summary);
  if (!hist) return;
  const buckets = hist.buckets || [];
  const devices = Array.isArray(hist.devices) ? hist.devices.length : hist.devices;
  if (!hasGaps(hist)) {
    container.append(el('p', { class: 'muted empty-state', 'data-testid': 'gaps-empty', text: 'No gaps between kernels in this window: the GPU ran kernels back to back.' }));
    return;
  }
  summary.textContent = `${int(hist.gaps)} gaps between kernels · ${us(hist.total_us)} of GPU idle time${
    isNum(devices) ? ` · ${devices === 1 ? '1 device' : `${devices} devices`}` : ''
  } · share = share of idle time`;
  const total = durationColumn(buckets.map((b) => b.total_us));
  const table = dataTable(
    ['Gap', { label: 'Count', num: true }, { label: total.header('Total'), num: true }, { label: 'Share', num: true }, 'Typical cause (not measured here; the Drill-down measures it)'],
    buckets.map((b, i) =>
      el(
        'tr',
        { dataset: { bucket: b.label, count: String(b.count) } },
        el('td', { class: 'mono nowrap', text: b.label, dataset: { sort: String(i) } }),
        el('td', { class: 'mono num', text: int(b.count), dataset: { sort: String(b.count) } }),
        el('td', { class: 'mono num', text: total.cell(b.total_us), dataset: { sort: String(b.total_us) } }),
        el('td', { class: 'mono num', dataset: { sort: String(b.share) } }, el('span', { class: 'share-bar' }, el('span', { class: 'share-fill', dataset: { share: String(b.share) } })), pct(b.share)),
        el('td', { class: 'cause', text: b.cause || '' }),
      ),
    ),
    { 'data-testid': 'gap-table' },
  );
  table.querySelector('table').classList.add('gap-table');
  container.append(table);
  // Bar widths through CSSOM (inline style attributes are blocked by the CSP).
  for (const fill of container.querySelectorAll('.share-fill')) {
    const s = Number(fill.dataset.share);
    fill.style.width = `${Math.max(0, Math.min(1, isNum(s) ? s : 0)) * 100}%`;
  }
}

// Draws the histogram, or hides the canvas when there is no gap (an empty plot says nothing).
export function drawGaps(canvas, histJson, drawGapHistogram) {
  const hist = JSON.parse(histJson);
  canvas.hidden = !hasGaps(hist);
  if (canvas.hidden) return;
  fitCanvas(canvas, 260);
  drawGapHistogram(canvas, histJson);
}
