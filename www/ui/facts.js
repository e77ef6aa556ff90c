// Trace facts: what the export contains, per device / per process figures, and what could not be
// computed (coverage) or looks suspicious (warnings).

import { el, pct, us, int, clear, isNum } from './format.js';

function captureMode(t) {
  const g = t.cuda_graph_trace;
  if (g === null || g === undefined) return 'unknown (no capture metadata)';
  if (/node/i.test(g)) return 'CUDA graphs traced per node';
  if (/graph/i.test(g)) return 'CUDA graphs traced as a whole (kernels inside graphs not listed)';
  return String(g);
}

function gpuList(t) {
  const gpus = t.gpus || [];
  if (!gpus.length) return 'unknown models';
  const counts = new Map();
  for (const g of gpus) counts.set(g, (counts.get(g) || 0) + 1);
  return [...counts].map(([g, n]) => (n > 1 ? `${n}× ${g}` : g)).join(', ');
}

export function renderFacts(container, report) {
  clear(container);
  const t = report.trace || {};
  const dl = el('dl', { class: 'facts', 'data-testid': 'facts' });
  const fact = (k, v, testid) => dl.append(el('div', { class: 'fact' }, el('dt', { text: k }), el('dd', { class: 'mono', 'data-testid': testid, text: v })));
  fact('nsys version', t.nsys_version || 'unknown', 'fact-nsys-version');
  fact('Schema', t.schema_version || '—');
  fact('GPUs', gpuList(t), 'fact-gpus');
  fact('Devices with kernels', (t.devices || []).join(', ') || '—', 'fact-devices');
  fact('Processes', int(t.processes), 'fact-processes');
  fact('Kernels', int(t.kernels), 'fact-kernels');
  fact('Launch API calls', int(t.launch_api_calls));
  fact('NVTX ranges', int(t.nvtx_ranges));
  fact('Forward steps', int(t.forward_steps));
  fact('Capture mode', captureMode(t), 'fact-capture');
  fact('Profile', report.profile || '—');
  if (report.window) fact('Window', `${us(report.window.duration_us)} (${report.window.source})`);
  container.append(dl);

  const lists = el('div', { class: 'fact-lists' });
  const cov = report.coverage || [];
  lists.append(
    el(
      'div',
      { class: 'fact-list', 'data-testid': 'coverage' },
      el('h3', { text: 'Not computed' }),
      cov.length
        ? el('ul', {}, cov.map((c) => el('li', {}, el('strong', { text: `${c.subject}: ` }), c.reason)))
        : el('p', { class: 'muted', text: 'Everything was computed.' }),
    ),
  );
  const warns = report.warnings || [];
  lists.append(
    el(
      'div',
      { class: 'fact-list', 'data-testid': 'warnings' },
      el('h3', { text: 'Warnings' }),
      warns.length ? el('ul', {}, warns.map((w) => el('li', { text: typeof w === 'string' ? w : w.message || JSON.stringify(w) }))) : el('p', { class: 'muted', text: 'None.' }),
    ),
  );
  container.append(lists);

  const dev = report.per_device || [];
  if (dev.length) {
    container.append(
      el('h3', { text: 'Per device' }),
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { class: 'table', 'data-testid': 'per-device' },
          el('thead', {}, el('tr', {}, ['Device', 'GPU', 'Kernels', 'Busy', 'Window', 'Idle', 'NCCL'].map((h) => el('th', { text: h })))),
          el(
            'tbody',
            {},
            dev.map((d) =>
              el(
                'tr',
                {},
                el('td', { class: 'mono', text: d.device }),
                el('td', { text: d.gpu_name || '—' }),
                el('td', { class: 'mono num', text: int(d.kernels) }),
                el('td', { class: 'mono num', text: us(d.busy_us) }),
                el('td', { class: 'mono num', text: us(d.window_us) }),
                el('td', { class: 'mono num', text: pct(d.gpu_idle_ratio) }),
                el('td', { class: 'mono num', text: pct(d.nccl_ratio) }),
              ),
            ),
          ),
        ),
      ),
    );
  }
  const proc = report.per_process || [];
  if (proc.length) {
    container.append(
      el('h3', { text: 'Per process' }),
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { class: 'table', 'data-testid': 'per-process' },
          el('thead', {}, el('tr', {}, ['PID', 'Name', 'Devices', 'Launch calls', 'Launch time', 'Launch ratio', 'Host prep', 'Exposed prep'].map((h) => el('th', { text: h })))),
          el(
            'tbody',
            {},
            proc.map((p) =>
              el(
                'tr',
                {},
                el('td', { class: 'mono', text: p.pid }),
                el('td', { text: p.name || '—' }),
                el('td', { class: 'mono', text: (p.devices || []).join(', ') }),
                el('td', { class: 'mono num', text: int(p.launch_calls) }),
                el('td', { class: 'mono num', text: us(p.launch_us) }),
                el('td', { class: 'mono num', text: pct(p.launch_overhead_ratio) }),
                el('td', { class: 'mono num', text: isNum(p.host_prep_us) ? us(p.host_prep_us) : '—' }),
                el('td', { class: 'mono num', text: isNum(p.host_prep_exposed_us) ? us(p.host_prep_exposed_us) : '—' }),
              ),
            ),
          ),
        ),
      ),
    );
  }
}
