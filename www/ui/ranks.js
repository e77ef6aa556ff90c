// The Ranks panel of the Drill-down (the core's `ranksTraces`, as `nsys-lens ranks FILE…`):
// the answer's sentences and tables (the straggler's row emphasized by the core), the skew of
// every collective drawn by the core, and the ranks timeline — a lane group per rank on the
// clock the core put the files on, laid out and drawn by the core, zoomed and panned by the
// same TimelinePanel as the trace's timeline.

import { el, panel, outlineTable, drawFitted } from './format.js';
import { TimelinePanel } from './timeline.js';

let ranksOnScreen = null; // the ranks timeline on screen (one answer at a time)

// The ranks panel of `parsed` (`{ranks, section, chart, timeline}`) over the traces in `slots`.
// wasm: {drawSkewChart, drawRanksTimeline, timelineLayout}.
export function ranksPanel(parsed, slots, engine, wasm) {
  const s = parsed.section;
  const chart = el('canvas', { 'data-testid': 'drill-skew-plot', height: '240' });
  const timeline = timelineBox();
  const node = panel(
    s.title,
    'drill-ranks-panel',
    ...s.text.map((t) => el('p', { class: 'small', text: t })),
    el('div', { class: 'canvas-wrap' }, chart),
    timeline.box,
    ...s.tables.map(outlineTable),
  );
  requestAnimationFrame(() => {
    drawFitted(chart, wasm.drawSkewChart, JSON.stringify(parsed.chart), 240);
    chart.dataset.drawn = '1';
    showTimeline(timeline, parsed.timeline, slots, engine, wasm);
  });
  return node;
}

// The ranks timeline's canvas, range label, reset button and tooltip.
function timelineBox() {
  const canvas = el('canvas', { class: 'ranks-timeline', 'data-testid': 'ranks-timeline', height: '160' });
  const range = el('span', { class: 'range mono', 'data-testid': 'ranks-timeline-range' });
  const reset = el('button', { type: 'button', class: 'button small', text: 'Reset zoom' });
  const tooltip = el('div', { class: 'tooltip', hidden: '' });
  const box = el(
    'div',
    { class: 'ranks-timeline-box' },
    el('div', { class: 'panel-head' }, el('h3', { text: 'Ranks on one clock' }), el('div', { class: 'timeline-meta' }, range, reset)),
    el('p', {
      class: 'muted small',
      text: "One group per rank, each file moved by its clock offset so the collectives line up: the rank's collective kernels (red), then its GPU's work (a click on a ▸ label shows its streams). Wheel or W/S to zoom, drag or A/D to pan, double-click to reset, hover for the kernel under the pointer. The straggler's group is marked red at the left.",
    }),
    el('div', { class: 'canvas-wrap' }, canvas, tooltip),
  );
  return { box, canvas, range, reset, tooltip };
}

// Shows the ranks timeline over `extent` ({start_ns, end_ns} of the common clock); the one
// shown before stops answering (its canvas is gone).
function showTimeline(t, extent, slots, engine, wasm) {
  ranksOnScreen?.clearTrace();
  const source = {
    timeline: (start, end, columns, open) => engine.ranksTimeline(slots, start, end, columns, open),
    hover: (lane, t, slack, open) => engine.ranksHover(slots, lane, t, slack, open),
  };
  ranksOnScreen = new TimelinePanel({
    canvas: t.canvas,
    tooltip: t.tooltip,
    rangeLabel: t.range,
    resetButton: t.reset,
    engine: source,
    wasm: { drawTimeline: (canvas, view) => wasm.drawRanksTimeline(canvas, view), timelineLayout: wasm.timelineLayout },
    testid: 'ranks-timeline',
  });
  t.canvas.timelinePanel = ranksOnScreen; // test hook: zoom it as a user would
  ranksOnScreen.setTrace(extent);
}
