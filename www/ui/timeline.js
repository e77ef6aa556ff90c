// Kernel timeline. The worker aggregates kernels per pixel column (kernels one by one only when
// zoomed in far enough); the core draws the view on this canvas. Here: the visible window, zoom
// (wheel around the pointer, W/S), pan (drag, A/D), reset (double-click), a selected range
// (shift-drag: its length, analysed as a window on request), a highlighted range (a clicked gap,
// step, NVTX op or straggling collective), folded lane groups (a click on a lane's label folds
// its process or device; the core lays the lanes out and places them: each view comes with its
// lanes' tops, heights and depth rows, `layout`), request throttling (one request in flight, coalesced per animation frame, stale answers
// dropped) and the hover tooltip.

import { el, ns, us, clear, isNum } from './format.js';

const MIN_SPAN_NS = 2000; // 2 µs across the whole width
const ZOOM_PER_PIXEL = 0.0015;
const HOVER_SLACK_PX = 3;
const KEY_ZOOM = 0.8; // W: the span × 0.8 per key press (S: ÷ 0.8), as Perfetto's W/S
const KEY_PAN = 0.15; // A/D: a sixth of the span per key press

// Whether keys pressed in `el` type text (W/S/A/D are then letters, not navigation).
function typesText(el) {
  return el.tagName === 'INPUT' && !['file', 'checkbox', 'radio', 'button', 'submit', 'reset', 'range'].includes(el.type);
}

export class TimelinePanel {
  // engine: the worker client; wasm: {drawTimeline, timelineLayout}
  // selectionBar: {box, label, analyse, clear} of the selected range; onWindow({start, end}):
  // analyse the selected range as a window. testid: what its overlays' data-testid start with
  // (a second panel on the page, the ranks timeline, names its own).
  constructor({ canvas, tooltip, rangeLabel, resetButton, engine, wasm, selectionBar = null, onWindow = null, testid = 'timeline' }) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.rangeLabel = rangeLabel;
    this.engine = engine;
    this.wasm = wasm;
    this.layout = JSON.parse(wasm.timelineLayout());
    this.extent = null;
    this.view = null; // {start, end} in ns
    this.lanes = 0;
    this.viewJson = null;
    this.seq = 0;
    this.drawnSeq = 0;
    this.inFlight = false;
    this.dirty = false;
    this.frame = 0;
    this.hoverFrame = 0;
    this.hoverSeq = 0;
    this.drag = null;
    this.generation = 0; // bumps on every new trace
    this.selection = null; // {start, end} ns: the shift-dragged range
    this.highlighted = null; // {start, end} ns: a clicked gap or finding
    this.path = null; // a step's critical path (StepPath JSON from the core), drawn over the lanes
    this.folded = new Set(); // lane groups shown folded (a lane's `group`: process:<pid>, device:<n>)
    this.pointerX = null; // canvas px of the pointer over the plot, for W/S
    this.selectionBar = selectionBar;
    this.onWindow = onWindow;
    this.selectionBox = this.overlay('tl-selection', `${testid}-selection-box`);
    this.highlightBox = this.overlay('tl-highlight', `${testid}-highlight`);
    // What the highlighted range is (a step, an op, a collective), beside the range label.
    this.highlightNote = el('span', { class: 'highlight-note', 'data-testid': `${testid}-highlight-note` });
    rangeLabel.after(this.highlightNote);

    canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    canvas.addEventListener('pointerdown', (e) => this.onPointerDown(e));
    canvas.addEventListener('pointermove', (e) => this.onPointerMove(e));
    canvas.addEventListener('pointerup', (e) => this.onPointerUp(e));
    canvas.addEventListener('pointercancel', (e) => this.onPointerUp(e));
    canvas.addEventListener('pointerleave', () => {
      this.pointerX = null;
      this.hideTooltip();
    });
    document.addEventListener('keydown', (e) => this.onKey(e));
    selectionBar?.clear?.addEventListener('click', () => this.select(null));
    selectionBar?.analyse?.addEventListener('click', () => {
      if (this.selection) this.onWindow?.({ ...this.selection });
    });
    canvas.addEventListener('click', (e) => this.onLabelClick(e));
    canvas.addEventListener('dblclick', () => this.reset());
    resetButton?.addEventListener('click', () => this.reset());
    // Its box, not the window: a scrollbar that comes with content added below narrows the box
    // without resizing the window.
    // Only a new width redraws: the box's height follows the canvas's own.
    let boxWidth = -1;
    new ResizeObserver(([entry]) => {
      const width = Math.floor(entry.contentRect.width);
      if (width === boxWidth) return;
      boxWidth = width;
      if (this.extent) this.schedule();
    }).observe(canvas.parentElement);
  }

  // A new trace: extent = {start_ns, end_ns}
  setTrace(extent, engine) {
    this.engine = engine || this.engine;
    this.generation++;
    this.extent = { start: extent.start_ns, end: Math.max(extent.end_ns, extent.start_ns + 1) };
    this.view = { ...this.extent };
    this.lanes = 0;
    this.viewJson = null;
    this.path = null;
    this.mark(null);
    this.folded = new Set();
    this.select(null);
    this.hideTooltip();
    this.schedule();
  }

  // The lane group under the pointer when it is over a lane's label, else null.
  groupAt(e) {
    if (!this.view || !this.parsed) return null;
    const loc = this.locate(e);
    if (loc.x >= 0 || loc.lane < 0) return null;
    return this.parsed.lanes?.[loc.lane]?.group || null;
  }

  // A click on a lane's label folds its group into one lane, or opens a folded one.
  onLabelClick(e) {
    const group = this.groupAt(e);
    if (!group) return;
    this.setFolded(group, !this.folded.has(group));
  }

  setFolded(group, folded) {
    if (folded) this.folded.add(group);
    else this.folded.delete(group);
    this.hideTooltip();
    this.schedule();
  }

  clearTrace() {
    this.generation++;
    this.extent = null;
    this.view = null;
    this.viewJson = null;
    this.path = null;
    const ctx = this.canvas.getContext('2d');
    ctx?.clearRect(0, 0, this.canvas.width, this.canvas.height);
    this.rangeLabel.textContent = '';
    this.mark(null);
    this.select(null);
    this.hideTooltip();
  }

  // Shows [start, end) ns with as much again on either side (a gap and its neighbours), marked,
  // with `label` saying what it is.
  // `path`: a step's critical path (the core's StepPath JSON) to draw over the lanes, or null.
  zoomTo(start, end, label = '', path = null) {
    if (!this.extent) return;
    const pad = Math.max(end - start, 1000);
    this.path = path;
    this.mark({ start, end }, label);
    this.view = this.clampView(start - pad, end + pad);
    this.schedule();
  }

  // The highlighted range (null: none) and what it is.
  mark(range, label = '') {
    this.highlighted = range;
    this.highlightNote.textContent = range && label ? label : '';
    this.highlightNote.hidden = !this.highlightNote.textContent;
  }

  // A box over the canvas (a range shown above the drawing; positioned in placeOverlays).
  overlay(cls, testid) {
    const box = el('div', { class: cls, 'data-testid': testid });
    box.hidden = true;
    this.canvas.parentElement.append(box);
    return box;
  }

  // The selected range: its box on the canvas, its length and the button that analyses it.
  select(range) {
    this.selection = range && range.end > range.start ? range : null;
    const bar = this.selectionBar;
    if (bar) {
      bar.box.hidden = !this.selection;
      if (this.selection) {
        const { start, end } = this.selection;
        bar.label.textContent = `Selected ${ns(end - start)}, from ${ns(start - this.extent.start)} to ${ns(end - this.extent.start)}`;
        bar.box.dataset.start = String(start);
        bar.box.dataset.end = String(end);
      }
    }
    this.placeOverlays();
  }

  // Puts the selection and highlight boxes over the range they mark in the drawn view.
  placeOverlays() {
    const place = (box, range) => {
      const view = this.drawnView;
      if (!range || !view) {
        box.hidden = true;
        return;
      }
      const cols = this.columns();
      const span = view.end - view.start;
      const x = (t) => Math.min(Math.max(((t - view.start) / span) * cols, 0), cols);
      const a = x(range.start);
      const b = Math.max(x(range.end), a + 2);
      if (range.end < view.start || range.start > view.end) {
        box.hidden = true;
        return;
      }
      const left = this.canvas.offsetLeft + this.layout.label_width_px + a;
      const lanes = this.parsed?.layout?.lanes || [];
      const top = lanes.length ? lanes[0].top_px : this.layout.top_px;
      const last = lanes[lanes.length - 1];
      const bottom = last ? last.top_px + last.height_px : top;
      box.style.left = `${left}px`;
      box.style.width = `${b - a}px`;
      box.style.top = `${this.canvas.offsetTop + top}px`;
      box.style.height = `${bottom - top}px`;
      box.hidden = false;
    };
    place(this.selectionBox, this.selection);
    place(this.highlightBox, this.highlighted);
  }

  // W/S zoom around the pointer (else the middle), A/D pan, as in Perfetto; not while typing.
  onKey(e) {
    if (!this.view || e.ctrlKey || e.metaKey || e.altKey) return;
    const target = e.target;
    if (target && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName) || typesText(target))) return;
    if (this.canvas.offsetParent === null) return; // the timeline is not shown
    const key = e.key.toLowerCase();
    const { start, end } = this.view;
    const span = end - start;
    const cols = this.columns();
    const at = this.pointerX !== null ? start + (Math.min(Math.max(this.pointerX, 0), cols) / cols) * span : start + span / 2;
    let next = null;
    if (key === 'w' || key === 's') {
      const f = key === 'w' ? KEY_ZOOM : 1 / KEY_ZOOM;
      next = this.clampView(at - (at - start) * f, at + (end - at) * f);
    } else if (key === 'a' || key === 'd') {
      const shift = (key === 'a' ? -1 : 1) * span * KEY_PAN;
      next = this.clampView(start + shift, end + shift);
    }
    if (!next) return;
    e.preventDefault();
    this.view = next;
    this.hideTooltip();
    this.schedule();
  }

  // Draws again (the canvas was hidden while another view was shown).
  redraw() {
    if (this.extent) this.schedule();
  }

  reset() {
    if (!this.extent) return;
    this.view = { ...this.extent };
    this.schedule();
  }

  // The core lays the timeline out in fixed canvas pixels (12 px labels), so the canvas is
  // sized 1:1 with CSS pixels, as tall as the drawn view's layout says (before the first view:
  // as it is).
  cssHeight() {
    return this.parsed?.layout?.height_px ?? this.canvas.height;
  }

  columns() {
    return Math.max(1, Math.floor(this.canvas.width - this.layout.label_width_px));
  }

  // Asks for the view at once rather than on the next frame: a request posted after this one
  // waits behind it in the worker.
  drawNow() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.pump();
  }

  // Test hook: `data-busy` is 1 from a view's request until the last one asked for is drawn.
  schedule() {
    this.dirty = true;
    this.canvas.dataset.busy = '1';
    if (!this.frame) this.frame = requestAnimationFrame(() => this.pump());
  }

  async pump() {
    this.frame = 0;
    if (this.inFlight) return;
    if (!this.dirty || !this.view) {
      this.canvas.dataset.busy = '0';
      return;
    }
    this.dirty = false;
    this.inFlight = true;
    const gen = this.generation;
    const seq = ++this.seq;
    this.fit();
    const { start, end } = this.view;
    const columns = this.columns();
    try {
      const { view } = await this.engine.timeline(start, end, columns, [...this.folded]);
      if (gen !== this.generation || seq < this.drawnSeq) return; // stale
      const parsed = JSON.parse(view);
      this.drawnSeq = seq;
      this.viewJson = view;
      this.parsed = parsed;
      this.drawnView = { start: parsed.start_ns, end: parsed.end_ns };
      // Test hook: the drawn view (lanes, items, names) for the end-to-end tests.
      this.canvas.timelineView = parsed;
      const lanes = (parsed.lanes || []).length;
      this.lanes = lanes;
      this.fit();
      this.arrow = null;
      this.canvas.dataset.pathMarks = String(this.wasm.drawTimeline(this.canvas, view, undefined, this.path ?? undefined));
      performance.mark('nsys-lens:timeline');
      this.canvas.dataset.drawn = String(seq);
      this.canvas.dataset.lanes = String(lanes);
      this.canvas.dataset.start = String(parsed.start_ns);
      this.canvas.dataset.end = String(parsed.end_ns);
      this.canvas.dataset.items = String((parsed.lanes || []).reduce((n, l) => n + (l.items || []).length, 0));
      this.canvas.dataset.folded = [...this.folded].sort().join(' ');
      if (parsed.range_label) this.rangeLabel.textContent = parsed.range_label;
      this.placeOverlays();
    } catch (e) {
      if (gen === this.generation) this.rangeLabel.textContent = `timeline unavailable: ${e.message}`;
    } finally {
      this.inFlight = false;
      if (this.dirty) this.schedule();
      else this.canvas.dataset.busy = '0';
    }
  }

  fit() {
    const cssWidth = Math.max(320, Math.floor(this.canvas.parentElement.clientWidth || 800));
    const w = cssWidth;
    const cssH = this.cssHeight();
    const h = cssH;
    if (this.canvas.width !== w) this.canvas.width = w;
    if (this.canvas.height !== h) this.canvas.height = h;
    this.canvas.style.width = `${cssWidth}px`;
    this.canvas.style.height = `${cssH}px`;
  }

  // Pointer position → {x: canvas px inside the plot, t: ns, lane: index or -1, row: index of the
  // lane's row under the pointer (an NVTX lane's depth row) or null}, from the drawn layout.
  locate(e) {
    const rect = this.canvas.getBoundingClientRect();
    const sx = this.canvas.width / rect.width;
    const sy = this.canvas.height / rect.height;
    const px = (e.clientX - rect.left) * sx;
    const py = (e.clientY - rect.top) * sy;
    const x = px - this.layout.label_width_px;
    const cols = this.columns();
    const span = this.view.end - this.view.start;
    const t = this.view.start + (Math.min(Math.max(x, 0), cols) / cols) * span;
    const within = (b) => py >= b.top_px && py < b.top_px + b.height_px;
    const places = this.parsed?.layout?.lanes || [];
    const lane = places.findIndex(within);
    const row = lane >= 0 ? places[lane].rows.findIndex(within) : -1;
    return { x, t, lane, row: row >= 0 ? row : null, inPlot: x >= 0 && x <= cols, nsPerPx: span / cols, sx };
  }

  clampView(start, end) {
    const full = this.extent.end - this.extent.start;
    let span = Math.min(Math.max(end - start, Math.min(MIN_SPAN_NS, full)), full);
    let s = start;
    if (s < this.extent.start) s = this.extent.start;
    if (s + span > this.extent.end) s = this.extent.end - span;
    return { start: s, end: s + span };
  }

  onWheel(e) {
    if (!this.view) return;
    e.preventDefault();
    const loc = this.locate(e);
    const delta = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    const factor = Math.exp(delta * ZOOM_PER_PIXEL);
    const t = loc.t;
    const start = t - (t - this.view.start) * factor;
    const end = t + (this.view.end - t) * factor;
    this.view = this.clampView(start, end);
    this.hideTooltip();
    this.schedule();
  }

  onPointerDown(e) {
    if (!this.view || e.button !== 0 || this.groupAt(e)) return;
    this.canvas.setPointerCapture?.(e.pointerId);
    const select = e.shiftKey ? this.locate(e).t : null;
    this.drag = { x: e.clientX, view: { ...this.view }, moved: false, select };
    this.canvas.classList.add('dragging');
    this.hideTooltip();
  }

  onPointerMove(e) {
    if (!this.view) return;
    if (this.drag?.select != null) {
      const t = this.locate(e).t;
      const a = this.drag.select;
      this.select({ start: Math.round(Math.min(a, t)), end: Math.round(Math.max(a, t)) });
      return;
    }
    if (this.drag) {
      const loc = this.locate(e);
      const dxCanvas = (e.clientX - this.drag.x) * loc.sx;
      if (Math.abs(dxCanvas) > 1) this.drag.moved = true;
      const span = this.drag.view.end - this.drag.view.start;
      const shift = (dxCanvas / this.columns()) * span;
      this.view = this.clampView(this.drag.view.start - shift, this.drag.view.end - shift);
      this.schedule();
      return;
    }
    this.pointerX = this.locate(e).x;
    this.canvas.classList.toggle('on-group', !!this.groupAt(e));
    this.pendingHover = e;
    if (!this.hoverFrame) this.hoverFrame = requestAnimationFrame(() => this.hover());
  }

  onPointerUp(e) {
    if (!this.drag) return;
    this.canvas.releasePointerCapture?.(e.pointerId);
    this.drag = null;
    this.canvas.classList.remove('dragging');
  }

  async hover() {
    this.hoverFrame = 0;
    const e = this.pendingHover;
    if (!e || !this.view) return;
    const loc = this.locate(e);
    if (!loc.inPlot || loc.lane < 0) {
      this.hideTooltip();
      return;
    }
    const seq = ++this.hoverSeq;
    const gen = this.generation;
    try {
      const { hit } = await this.engine.hover(loc.lane, loc.t, loc.nsPerPx * HOVER_SLACK_PX, [...this.folded], loc.row);
      if (seq !== this.hoverSeq || gen !== this.generation || this.drag) return;
      const h = hit ? JSON.parse(hit) : null;
      if (!h) {
        this.hideTooltip();
        return;
      }
      this.showTooltip(h, e, loc);
    } catch {
      this.hideTooltip();
    }
  }

  showTooltip(h, e, loc) {
    const tip = this.tooltip;
    clear(tip);
    const lane = this.parsed?.lanes?.[loc.lane];
    const where = [
      isNum(h.device) ? `device ${h.device}` : null,
      isNum(h.stream) ? `stream ${h.stream}` : null,
      h.track ? `thread ${h.track}` : null,
    ].filter(Boolean);
    tip.append(
      el('div', { class: 'tip-name', 'data-testid': 'tooltip-name', text: h.name }),
      el('div', { class: 'tip-row mono', 'data-testid': 'tooltip-what' }, `${us(h.duration_us)}`, where.length ? ` · ${where.join(', ')}` : '', lane?.kind === 'steps' ? ' · step' : '', h.work ? ` · ${h.work}` : ''),
      el('div', { class: 'tip-row mono muted', text: `starts at ${ns(h.start_ns - this.extent.start)} from the trace start` }),
    );
    if (h.link) {
      const l = h.link;
      const what = l.kind === 'api' ? 'launched by' : 'launches';
      tip.append(
        el('div', { class: 'tip-row', 'data-testid': 'tooltip-link' }, `${what} `, el('span', { class: 'mono', text: l.name })),
        el('div', { class: 'tip-row mono muted', text: `${l.place ? `${l.place} · ` : ''}at ${ns(l.start_ns - this.extent.start)}, ${us((l.end_ns - l.start_ns) / 1e3)}` }),
      );
    }
    this.showArrow(this.arrowOf(h, loc.lane));
    tip.hidden = false;
    const wrap = this.canvas.parentElement.getBoundingClientRect();
    let left = e.clientX - wrap.left + 14;
    const top = e.clientY - wrap.top + 14;
    const maxLeft = wrap.width - tip.offsetWidth - 4;
    if (left > maxLeft) left = Math.max(4, e.clientX - wrap.left - tip.offsetWidth - 14);
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }

  hideTooltip() {
    this.tooltip.hidden = true;
    this.showArrow(null);
  }

  // Draws the view again with a launch → kernel arrow (or without one: `null`).
  showArrow(arrow) {
    const key = arrow ? JSON.stringify(arrow) : null;
    if (key === (this.arrow ?? null) || !this.viewJson) return;
    this.arrow = key;
    this.wasm.drawTimeline(this.canvas, this.viewJson, key ?? undefined, this.path ?? undefined);
    this.canvas.dataset.arrow = key ?? '';
  }

  // The arrow of a hover whose other end is shown: from the launch call to the kernel.
  arrowOf(h, lane) {
    const link = h.link;
    if (!link || link.lane === null || link.lane === undefined) return null;
    return link.kind === 'api'
      ? { from_lane: link.lane, from_ns: link.start_ns, to_lane: lane, to_ns: h.start_ns }
      : { from_lane: lane, from_ns: h.start_ns, to_lane: link.lane, to_ns: link.start_ns };
  }
}
