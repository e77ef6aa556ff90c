// The Capture card of the Verdict view: the core's capture checks (`capture` of detect's JSON),
// each with its status, the evidence the trace's rows gave and the flag that fixes it, and the
// steady window after a warm-up beside the whole window. Nothing is computed here.
import { el, clear, pct, us } from './format.js';

const BADGE = { ok: ['OK', 'badge-no'], warn: ['WARN', 'badge-yes'], unknown: ['?', 'badge-na'] };

function checkRow(c) {
  const [label, cls] = BADGE[c.status] || BADGE.unknown;
  return el(
    'li',
    { class: `capture-check capture-${c.status}`, 'data-testid': `capture-${c.id}`, 'data-status': c.status },
    el('span', { class: `badge ${cls}`, text: label }),
    el(
      'div',
      { class: 'capture-body' },
      el('strong', { text: c.title }),
      el('span', { class: 'capture-evidence', text: ` ${c.evidence}` }),
      c.fix ? el('code', { class: 'capture-fix block', text: c.fix }) : null,
    ),
  );
}

function steadyBlock(s) {
  return el(
    'div',
    { class: 'callout callout-info capture-steady', 'data-testid': 'capture-steady' },
    el('strong', { text: `Steady window after the warm-up: ${us(s.duration_us)}` }),
    el('span', {
      text: ` (${s.start_ns}–${s.end_ns} ns, after ${s.after}). GPU idle ${pct(s.gpu_idle_ratio)} here against ${pct(s.whole_gpu_idle_ratio)} over the whole window; utilization ${pct(
        s.gpu_utilization,
      )} against ${pct(s.whole_gpu_utilization)}. By these two metrics: ${s.verdict}.`,
    }),
    el('code', { class: 'capture-fix block', text: `Full verdict of this window: ${s.command}` }),
  );
}

export function renderCapture(container, summary, report) {
  clear(container);
  const cap = report.capture;
  if (!cap) {
    summary.textContent = '';
    return;
  }
  const warn = cap.checks.filter((c) => c.status === 'warn').length;
  const unknown = cap.checks.filter((c) => c.status === 'unknown').length;
  summary.textContent = `${warn} to fix, ${unknown} the export cannot tell, ${cap.checks.length - warn - unknown} ok`;
  const order = { warn: 0, unknown: 1, ok: 2 };
  const checks = [...cap.checks].sort((a, b) => order[a.status] - order[b.status]);
  if (cap.steady_window) container.append(steadyBlock(cap.steady_window));
  container.append(el('ul', { class: 'capture-list' }, checks.map(checkRow)));
}
