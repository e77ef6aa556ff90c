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

// A long identifier (kernel, NVTX or API name) as text with a break opportunity after each `_`
// and `::`, so it wraps between its words before it breaks anywhere.
export function breakable(text) {
  const parts = String(text ?? '').split(/(?<=_|::)/);
  return parts.flatMap((p, i) => (i ? [document.createElement('wbr'), p] : [p]));
}

export function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

// The core's formatter (`crate::format`, exported by the wasm module): durations, percentages and
// counts read here exactly as in the reports. Set once at start by `useFormatter`.
const FMT = {};

export function useFormatter(fns) {
  Object.assign(FMT, fns);
}

// A share (0–1) as a percentage: `12.3%`.
export function pct(v, digits = 1) {
  return isNum(v) ? FMT.percent(v, digits) : '—';
}

// A change in percent (35.5) with its sign: `+35.5%`.
export function signedPct(v) {
  return isNum(v) ? FMT.signedPercent(v) : '';
}

// µs → a duration in the unit that fits it.
export function us(v) {
  return isNum(v) ? FMT.duration(v) : '—';
}

// A change of duration (µs) with its sign.
export function signedUs(v) {
  return isNum(v) ? FMT.signedDuration(v) : '—';
}

export function ns(v) {
  return isNum(v) ? us(v / 1e3) : '—';
}

// A count with thousands separators.
export function int(v) {
  return isNum(v) ? FMT.count(v, 0) : '—';
}

// A count and its noun, singular for one: `1 device`, `2 devices`.
export function counted(v, one, many) {
  return isNum(v) ? FMT.counted(v, one, many) : '—';
}

// A mean (kernels per step…) with `decimals` decimals and thousands separators.
export function num(v, decimals = 1) {
  return isNum(v) ? FMT.count(v, decimals) : '—';
}

// A column of durations (µs): the unit the core gives it, named once in the header (`Total (ms)`),
// or none when its values span units, each cell then carrying its own.
export function durationColumn(values) {
  const unit = FMT.columnUnit(Float64Array.from(values.filter(isNum)));
  return {
    unit,
    header: (label) => (unit ? `${label} (${unit})` : label),
    cell: (v) => (isNum(v) ? FMT.durationIn(v, unit) : '—'),
  };
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
// Draws `json` with the core's `draw` (which returns the height it needs) on `canvas` sized to
// its container: at `cssHeight` first, again at the height the chart asked for.
export function drawFitted(canvas, draw, json, cssHeight = 120) {
  fitCanvas(canvas, cssHeight);
  const needed = draw(canvas, json);
  if (needed && needed !== canvas.height) {
    fitCanvas(canvas, needed);
    draw(canvas, json);
  }
}

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

// A table that scrolls horizontally only when its columns cannot shrink further. `headers` are
// labels or {label, num, title}; `num` columns are right-aligned. Every header sorts the rows by
// its column (a cell's data-sort, else its text; numbers as numbers), click again to reverse.
// The attributes of a table row that opens the timeline at what it names (click or Enter).
export function timelineLink(title, show) {
  return {
    class: 'clickable',
    tabindex: '0',
    title,
    onclick: show,
    onkeydown: (e) => {
      if (e.key === 'Enter') show();
    },
  };
}

export function dataTable(headers, rows, attrs = {}) {
  const cols = headers.map((h) => (typeof h === 'string' ? { label: h } : h));
  const body = el('tbody', {}, rows);
  const head = el(
    'tr',
    {},
    cols.map((c, i) =>
      el(
        'th',
        { scope: 'col', class: c.num ? 'num' : '', title: c.title, 'aria-sort': 'none' },
        el('button', { type: 'button', class: 'sort', text: c.label, onclick: (e) => sortBy(body, i, e.currentTarget.closest('th')) }),
      ),
    ),
  );
  return el('div', { class: 'table-wrap' }, el('table', { class: 'table', ...attrs }, el('thead', {}, head), body));
}

// A table of the core's report outline (`{name, title, headers, classes, rows, emphasized}`,
// cells as the report writes them) under its title; "None." when it has no rows. Each column's
// cells take the class the core gives them (`classes`: `num` right-aligned and unbroken, `key`
// unbroken, `label` wrapped between words, `text` wrapped anywhere), as in the HTML report.
// Rows the core emphasizes (`emphasized`: [{row, why}], the straggler among the ranks) are
// styled and say why on hover.
export function outlineTable(t) {
  const why = new Map((t.emphasized || []).map((e) => [e.row, e.why]));
  const classes = t.classes || [];
  const rows = t.rows.map((r, i) =>
    el(
      'tr',
      why.has(i) ? { class: 'emphasized', title: why.get(i), 'data-emphasized': why.get(i) } : {},
      r.map((c, j) => el('td', { class: `cell-${classes[j] || 'text'} small`, text: c })),
    ),
  );
  const headers = t.headers.map((label, j) => ({ label, num: classes[j] === 'num' }));
  return el(
    'div',
    { class: 'host-table' },
    el('h3', { text: t.title }),
    rows.length ? dataTable(headers, rows, { 'data-table': t.name }) : el('p', { class: 'muted small', 'data-table': t.name, text: 'None.' }),
  );
}

function sortKey(td) {
  const raw = td?.dataset.sort ?? td?.textContent ?? '';
  const n = Number(raw);
  return raw !== '' && Number.isFinite(n) ? n : raw.toLowerCase();
}

function sortBy(body, col, th) {
  const descending = th.getAttribute('aria-sort') !== 'descending';
  for (const other of th.parentElement.children) other.setAttribute('aria-sort', 'none');
  th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
  const rows = [...body.rows];
  rows.sort((a, b) => {
    const x = sortKey(a.cells[col]);
    const y = sortKey(b.cells[col]);
    const c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === 'number' ? -1 : 1;
    return descending ? -c : c;
  });
  body.append(...rows);
}

// A Copy button for `text`, with a status beside it; where the clipboard is refused (permissions,
// file://) it selects `node` for a manual copy.
export function copyButton(text, node, testid) {
  const status = el('span', { class: 'muted small', 'aria-live': 'polite' });
  const button = el('button', {
    type: 'button',
    class: 'button small',
    'data-testid': testid,
    text: 'Copy',
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text);
        status.textContent = 'copied';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(node);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        status.textContent = 'selected — press Ctrl+C';
      }
    },
  });
  return el('div', { class: 'handoff-actions' }, button, status);
}
