// GPU-idle gap histogram: the core draws the nine buckets of spec §4 on a canvas; the table
// beside it lists them: count, time and share, and the causes of their time where the core
// measured them (`causes`: the Drill-down's attribution; the verdict's histogram carries none, so
// the column is left out rather than filled with a cause the trace does not show). With no gap,
// neither: one sentence says so.

import { el, int, pct, us, clear, fitCanvas, isNum, durationColumn, dataTable } from './format.js';

// A bucket's measured causes, each with its share of the bucket's gap time, in the core's order
// (largest first).
export function causeMix(causes) {
  return causes.length ? causes.map((c) => `${c.kind}${c.label ? ` (${c.label})` : ''} ${pct(c.share)}`).join(', ') : '—';
}

// Whether a histogram has any gap to show.
export function hasGaps(hist) {
  return !!hist && Number(hist.gaps) > 0;
}

export function renderGapTable(container, summary, hist, testid = 'gap-table') {
  clear(container);
  clear(summary);
  if (!hist) return;
  const buckets = hist.buckets || [];
  // Causes are shown only where the core measured them.
  const measured = buckets.some((b) => Array.isArray(b.causes) && b.causes.length);
  const devices = Array.isArray(hist.devices) ? hist.devices.length : hist.devices;
  if (!hasGaps(hist)) {
    container.append(el('p', { class: 'muted empty-state', 'data-testid': 'gaps-empty', text: 'No gaps between kernels in this window: the GPU ran kernels back to back.' }));
    return;
  }
  summary.textContent = `${int(hist.gaps)} idle stretches (gaps between GPU work, and a device's time in the window before its first or after its last operation) · ${us(hist.total_us)} of GPU idle time${
    isNum(devices) ? ` · ${devices === 1 ? '1 device' : `${devices} devices`}` : ''
  } · share = share of idle time${measured ? '' : ' · what held each bucket: Drill-down'}`;
  const total = durationColumn(buckets.map((b) => b.total_us));
  const headers = ['Gap', { label: 'Count', num: true }, { label: total.header('Total'), num: true }, { label: 'Share', num: true }];
  if (measured) headers.push({ label: 'Measured causes', title: "each cause's share of the bucket's gap time, as the Drill-down attributes it" });
  const table = dataTable(
    headers,
    buckets.map((b, i) =>
      el(
        'tr',
        { dataset: { bucket: b.label, count: String(b.count) } },
        el('td', { class: 'mono nowrap', text: b.label, dataset: { sort: String(i) } }),
        el('td', { class: 'mono num', text: int(b.count), dataset: { sort: String(b.count) } }),
        el('td', { class: 'mono num', text: total.cell(b.total_us), dataset: { sort: String(b.total_us) } }),
        el('td', { class: 'mono num', dataset: { sort: String(b.share) } }, el('span', { class: 'share-bar' }, el('span', { class: 'share-fill', dataset: { share: String(b.share) } })), pct(b.share)),
        measured ? el('td', { class: 'cause', 'data-testid': 'bucket-causes', text: causeMix(b.causes || []) }) : null,
      ),
    ),
    { 'data-testid': testid },
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
