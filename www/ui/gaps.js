// GPU-idle gap histogram: the core draws the nine buckets of spec §4 on a canvas; the table
// beside it lists them with the typical cause of such gaps (reference §9.1) — a hint, not a
// measurement: the Drill-down measures what held each gap.

import { el, us, int, pct, clear, fitCanvas, isNum } from './format.js';

export function renderGapTable(container, summary, hist) {
  clear(container);
  clear(summary);
  if (!hist) return;
  const buckets = hist.buckets || [];
  const devices = Array.isArray(hist.devices) ? hist.devices.length : hist.devices;
  summary.textContent = `${int(hist.gaps)} gaps between kernels · ${us(hist.total_us)} of GPU idle time${
    isNum(devices) ? ` · ${devices} device(s)` : ''
  } · share = share of idle time`;
  container.append(
    el(
      'table',
      { class: 'table gap-table', 'data-testid': 'gap-table' },
      el('thead', {}, el('tr', {}, ['Gap', 'Count', 'Total', 'Share', 'Typical cause (not measured here; the Drill-down measures it)'].map((h) => el('th', { text: h })))),
      el(
        'tbody',
        {},
        buckets.map((b) =>
          el(
            'tr',
            { dataset: { bucket: b.label, count: String(b.count) } },
            el('td', { class: 'mono nowrap', text: b.label }),
            el('td', { class: 'mono num', text: int(b.count) }),
            el('td', { class: 'mono num', text: us(b.total_us) }),
            el('td', { class: 'mono num' }, el('span', { class: 'share-bar' }, el('span', { class: 'share-fill', dataset: { share: String(b.share) } })), pct(b.share)),
            el('td', { class: 'cause', text: b.cause || '' }),
          ),
        ),
      ),
    ),
  );
  // Bar widths through CSSOM (inline style attributes are blocked by the CSP).
  for (const fill of container.querySelectorAll('.share-fill')) {
    const s = Number(fill.dataset.share);
    fill.style.width = `${Math.max(0, Math.min(1, isNum(s) ? s : 0)) * 100}%`;
  }
}

export function drawGaps(canvas, histJson, drawGapHistogram) {
  fitCanvas(canvas, 260);
  drawGapHistogram(canvas, histJson);
}
