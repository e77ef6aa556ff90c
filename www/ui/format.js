// Small display helpers shared by the UI modules. Numbers are only rounded here, for display;
// data-* attributes always carry the core's values unchanged.

// The core's metric catalogue (`metricCatalogue()`): metrics {key, id, title, direction} in
// report order and the editable thresholds {option, scope, metric}; filled once at start.
export const METRICS = [];
export const THRESHOLDS = [];

export function useCatalogue(catalogue) {
  METRICS.splice(0, METRICS.length, ...catalogue.metrics);
  THRESHOLDS.splice(0, THRESHOLDS.length, ...catalogue.thresholds);
}

export const SCOPES = [
  { key: 'aggregate', title: 'Aggregate' },
  { key: 'context', title: 'Context' },
  { key: 'generation', title: 'Generation' },
];

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

export function pct(v, digits = 1) {
  return isNum(v) ? `${(v * 100).toFixed(digits)}%` : '—';
}

// µs → readable duration
export function us(v) {
  if (!isNum(v)) return '—';
  const a = Math.abs(v);
  if (a === 0) return '0 µs';
  if (a >= 1e6) return `${(v / 1e6).toFixed(3)} s`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(2)} ms`;
  if (a >= 1) return `${v.toFixed(1)} µs`;
  return `${(v * 1e3).toFixed(0)} ns`;
}

export function ns(v) {
  return isNum(v) ? us(v / 1e3) : '—';
}

export function int(v) {
  return isNum(v) ? Math.round(v).toLocaleString('en-US') : '—';
}

// The exact value for a data-value attribute: the number as JSON wrote it (shortest round-trip
// form), or empty for null.
export function rawValue(v) {
  return isNum(v) ? String(v) : '';
}

export function directionSign(direction) {
  return direction === 'below' ? '<' : '>';
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Size a canvas to its container's width and the given height. The core draws in canvas pixels
// with fixed font sizes, so the backing store is 1:1 with CSS pixels.
export function fitCanvas(canvas, cssHeight) {
  const dpr = 1;
  const cssWidth = Math.max(320, Math.floor(canvas.parentElement.clientWidth || canvas.clientWidth || 800));
  const w = Math.floor(cssWidth * dpr);
  const h = Math.floor(cssHeight * dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${cssHeight}px`;
  return dpr;
}

// A titled panel of the page (a <section class="panel">) with a test id.
export function panel(title, testid, ...children) {
  return el('section', { class: 'panel', 'data-testid': testid }, el('div', { class: 'panel-head' }, el('h2', { text: title })), ...children);
}

// A scrollable table: header labels and ready-made <tr> rows.
export function dataTable(headers, rows, attrs = {}) {
  return el(
    'div',
    { class: 'table-wrap' },
    el('table', { class: 'table', ...attrs }, el('thead', {}, el('tr', {}, headers.map((h) => el('th', { text: h })))), el('tbody', {}, rows)),
  );
}
