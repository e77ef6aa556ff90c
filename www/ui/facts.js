// Trace facts: what the export contains, per device / per process figures, and what could not be
// computed (coverage) or looks suspicious (warnings).

import { el, pct, int, clear, isNum, us, durationColumn, dataTable } from './format.js';

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
  fact('Export schema', t.export_schema_version || '—');
  fact('GPUs', gpuList(t), 'fact-gpus');
  // Device ids, not a count: "GPU 0" reads as the device, "0" as none.
  fact('Devices with kernels', (t.devices || []).map((d) => `GPU ${d}`).join(', ') || 'none', 'fact-devices');
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

  const dev = [...(report.per_device || [])].sort((a, b) => Number(a.device) - Number(b.device));
  if (dev.length) {
    const busy = durationColumn(dev.map((d) => d.busy_us));
    const win = durationColumn(dev.map((d) => d.window_us));
    container.append(
      el('h3', { text: 'Per device' }),
      dataTable(
        ['Device', 'GPU', { label: 'Kernels', num: true }, { label: busy.header('Busy'), num: true }, { label: win.header('Window'), num: true }, { label: 'Idle', num: true }, { label: 'NCCL', num: true }],
        dev.map((d) =>
          el(
            'tr',
            {},
            el('td', { class: 'mono nowrap', text: `GPU ${d.device}`, dataset: { sort: String(d.device) } }),
            el('td', { text: d.gpu_name || '—' }),
            el('td', { class: 'mono num', text: int(d.kernels), dataset: { sort: String(d.kernels) } }),
            el('td', { class: 'mono num', text: busy.cell(d.busy_us), dataset: { sort: String(d.busy_us) } }),
            el('td', { class: 'mono num', text: win.cell(d.window_us), dataset: { sort: String(d.window_us) } }),
            el('td', { class: 'mono num', text: pct(d.gpu_idle_ratio), dataset: { sort: String(d.gpu_idle_ratio) } }),
            el('td', { class: 'mono num', text: pct(d.nccl_ratio), dataset: { sort: String(d.nccl_ratio) } }),
          ),
        ),
        { 'data-testid': 'per-device' },
      ),
    );
  }
  // Processes: most launch time first (the host side this view is about), then by pid.
  const proc = [...(report.per_process || [])].sort((a, b) => (b.launch_us ?? 0) - (a.launch_us ?? 0) || String(a.pid).localeCompare(String(b.pid)));
  if (proc.length) {
    const launch = durationColumn(proc.map((p) => p.launch_us));
    const prep = durationColumn(proc.map((p) => p.host_prep_us));
    const exposed = durationColumn(proc.map((p) => p.host_prep_exposed_us));
    const sortable = (v) => (isNum(v) ? String(v) : '');
    container.append(
      el('h3', { text: 'Per process (most launch time first)' }),
      dataTable(
        [
          'PID',
          'Name',
          'Devices',
          { label: 'Launch calls', num: true },
          { label: launch.header('Launch time'), num: true },
          { label: 'Launch ratio', num: true },
          { label: prep.header('Host prep'), num: true },
          { label: exposed.header('Exposed prep'), num: true },
        ],
        proc.map((p) =>
          el(
            'tr',
            {},
            el('td', { class: 'mono', text: p.pid }),
            el('td', { text: p.name || '—' }),
            el('td', { class: 'mono nowrap', text: (p.devices || []).map((d) => `GPU ${d}`).join(', ') || '—' }),
            el('td', { class: 'mono num', text: int(p.launch_calls), dataset: { sort: sortable(p.launch_calls) } }),
            el('td', { class: 'mono num', text: launch.cell(p.launch_us), dataset: { sort: sortable(p.launch_us) } }),
            el('td', { class: 'mono num', text: pct(p.launch_overhead_ratio), dataset: { sort: sortable(p.launch_overhead_ratio) } }),
            el('td', { class: 'mono num', text: prep.cell(p.host_prep_us), dataset: { sort: sortable(p.host_prep_us) } }),
            el('td', { class: 'mono num', text: exposed.cell(p.host_prep_exposed_us), dataset: { sort: sortable(p.host_prep_exposed_us) } }),
          ),
        ),
        { 'data-testid': 'per-process' },
      ),
    );
  }
}
