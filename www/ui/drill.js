// Drill-down (spec §4–§5) from the core's DrillReport JSON (the same JSON as `nsys-lens drill
// --json`): gaps (histogram drawn by the core, largest gaps with what ran around them — click one
// to see it on the timeline), CUDA-graph coverage, the per-layer pattern, stragglers across
// ranks, findings, and the explainer report's exports, all built in this tab.

import { el, clear, us, ns, int, pct, rawValue, fitCanvas, drawFitted, panel, dataTable, durationColumn, breakable, timelineLink } from './format.js';
import { renderGapTable } from './gaps.js';

export function renderDrill(container, report, deps) {
  clear(container);
  const panels = [
    drFindings(report.findings || []),
    drIdle(report.idle, deps),
    drIdleBuckets(report.gaps?.device_idle),
    drGaps(report.gaps, deps),
    drGraphs(report.graphs),
    drPattern(report.patterns),
    drStragglers(report.stragglers, deps),
    drExports(deps.exportReport),
    drCoverage(report.coverage || []),
  ];
  container.append(...panels.filter(Boolean));
}

function drFact(key, label, value, shown) {
  return el(
    'div',
    { class: 'rc-figure', 'data-drill': key, 'data-value': rawValue(value) ?? '' },
    el('span', { class: 'rc-label', text: label }),
    el('span', { class: 'rc-value mono', text: shown }),
  );
}

// What overlapped a gap, longest overlap first: the first three in the cell, one per line (the
// name may wrap, its count and time never), all of them in its tooltip.
function drOverlaps(list) {
  const all = [...(list || [])].sort((a, b) => b.overlap_us - a.overlap_us);
  const text = (o) => `${o.name}${o.count > 1 ? ` ×${int(o.count)}` : ''} (${us(o.overlap_us)})`;
  const item = (o) =>
    el(
      'li',
      {},
      el('span', { class: 'overlap-name' }, breakable(o.name)),
      ' ',
      el('span', { class: 'nowrap muted', text: `${o.count > 1 ? `×${int(o.count)} ` : ''}${us(o.overlap_us)}` }),
    );
  const more = all.length > 3 ? el('li', { class: 'muted', text: `+${all.length - 3} more` }) : null;
  return el(
    'td',
    { class: 'small overlaps', title: all.map(text).join('\n') || '', dataset: { sort: String(all[0]?.overlap_us ?? 0) } },
    all.length ? el('ul', { class: 'overlap-list' }, all.slice(0, 3).map(item), more) : '—',
  );
}

// The kernels either side of a gap, one per line.
// A device-idle stretch at the window's edge has no operation on that side (null).
function drNeighbours(gap) {
  const prev = gap.prev_kernel ?? '(window start)';
  const next = gap.next_kernel ?? '(window end)';
  return el(
    'td',
    { class: 'mono small neighbours', title: `${prev} → ${next}` },
    el('div', { class: 'clamp' }, breakable(prev)),
    el('div', { class: 'clamp' }, el('span', { class: 'muted', text: '→ ' }), breakable(next)),
  );
}

// Where the GPU-idle time went (the core's attribution): the chart per device drawn by the core,
// then one row per cause and device; a row lists the gaps holding most of that cause and zooms
// the timeline to the largest, a gap zooms to itself.
function drIdle(idle, { drawIdleCauses, idleCauseColours, onGap }) {
  const devices = (idle && idle.per_device) || [];
  if (!devices.length) return null;
  const canvas = el('canvas', { 'data-testid': 'drill-idle-chart', height: '120' });
  requestAnimationFrame(() => drawFitted(canvas, drawIdleCauses, JSON.stringify(idle)));
  const colours = idleCauseColours;
  const gapList = el('div', { class: 'idle-gaps', 'data-testid': 'drill-idle-gaps' });
  const several = devices.some((d) => d.file !== devices[0].file);
  const where = (d) => `${several ? `${d.file} · ` : ''}GPU ${d.device}`;
  const showCause = (d, c) => {
    clear(gapList);
    const gaps = c.gaps || [];
    gapList.append(
      el('h3', { text: `${c.kind}${c.label ? ` (${c.label})` : ''} on ${where(d)}: the gaps holding most of it (click one to see it on the timeline)` }),
      dataTable(
        ['Gap', 'Its time here', 'Starts at'],
        gaps.map((g) =>
          el(
            'tr',
            {
              class: 'clickable',
              tabindex: '0',
              'data-start-ns': String(g.start_ns),
              'data-end-ns': String(g.end_ns),
              onclick: () => onGap({ ...g, device: d.device, file: d.file }),
              onkeydown: (e) => {
                if (e.key === 'Enter') onGap({ ...g, device: d.device, file: d.file });
              },
            },
            el('td', { class: 'mono num', text: ns(g.end_ns - g.start_ns) }),
            el('td', { class: 'mono num', text: ns(g.ns) }),
            el('td', { class: 'mono num', text: ns(g.start_ns) }),
          ),
        ),
        { 'data-testid': 'drill-idle-gap-list' },
      ),
    );
    if (gaps.length) onGap({ ...gaps[0], device: d.device, file: d.file });
  };
  const rows = devices.flatMap((d) =>
    (d.causes || []).map((c) =>
      el(
        'tr',
        {
          class: 'clickable',
          tabindex: '0',
          title: 'List the gaps of this cause and show the largest on the timeline',
          'data-kind': c.kind,
          'data-device': String(d.device),
          'data-ns': String(c.ns),
          'data-label': c.label,
          'data-frames': (c.frames || []).map((f) => `${f.frame}=${f.samples}`).join('\n'),
          onclick: () => showCause(d, c),
          onkeydown: (e) => {
            if (e.key === 'Enter') showCause(d, c);
          },
        },
        el('td', { class: 'nowrap' }, el('span', { class: 'swatch', 'data-colour': colours[c.kind] || '' }), ` ${c.kind}`),
        el('td', { class: 'mono nowrap', text: where(d) }),
        el('td', { class: 'mono num', text: ns(c.ns) }),
        el('td', { class: 'mono num', text: pct(c.share) }),
        el(
          'td',
          { class: 'mono name small', title: heldBy(c).join('\n') },
          heldBy(c).slice(0, 3).join(' · ') || '—',
          c.meanwhile ? el('div', { class: 'muted', 'data-testid': 'drill-idle-meanwhile', text: `meanwhile ${c.meanwhile.sentence}` }) : null,
        ),
        el('td', { class: 'mono name small', 'data-testid': 'drill-idle-frames', title: sampled(c).join('\n'), text: sampled(c).slice(0, 2).join(' · ') || '—' }),
      ),
    ),
  );
  const panelNode = panel(
    'Where the GPU-idle time went',
    'drill-idle',
    el('p', { class: 'muted small', text: 'Every nanosecond of each device\'s idle time given to one cause, from what the launching processes recorded during it: calls, NVTX ranges, the driver\'s and the profiler\'s overhead records (profiler: nsys\'s own work, not your application), and where the launching threads were (cpu_busy: on a CPU running untraced code; cpu_waiting: off-CPU). Click a cause to list its gaps.' }),
    el('div', { class: 'canvas-wrap' }, canvas),
    dataTable(['Cause', 'Device', 'Idle time', 'Share of its idle time', 'Held by (inside the gaps)', 'CPU samples (launching threads)'], rows, { 'data-testid': 'drill-idle-causes' }),
    gapList,
  );
  // Swatch colours come from the core; set as properties (the page's CSP forbids inline style).
  for (const s of panelNode.querySelectorAll('.swatch')) s.style.backgroundColor = s.dataset.colour;
  return panelNode;
}

// The frames the launching threads' CPU samples name inside a cause's time, with their share.
function sampled(c) {
  return (c.frames || []).map((f) => `${f.frame} ${pct(f.share)} (${f.samples})`);
}

// The calls or ranges holding a cause's idle time; untraced time has no label: nothing recorded.
function heldBy(c) {
  return (c.labels || []).map((l) => (l.label ? `${l.label} ${ns(l.ns)}` : `nothing recorded ${ns(l.ns)}`));
}

// The device-idle time by gap size, each bucket with the causes the attribution measured in its
// gaps (the core's `causes`): the verdict's gap table, measured.
function drIdleBuckets(idle) {
  if (!idle || !(Number(idle.gaps) > 0)) return null;
  const table = el('div', { 'data-testid': 'drill-idle-buckets' });
  const summary = el('p', { class: 'muted small' });
  renderGapTable(table, summary, { buckets: idle.buckets, gaps: idle.gaps, total_us: idle.total_us }, 'drill-idle-bucket-table');
  return panel('GPU-idle time by gap size', 'drill-idle-by-size', el('p', { class: 'small', text: idle.reading || '' }), summary, table);
}

function drGaps(g, { drawGapHistogram, onGap }) {
  if (!g) return null;
  if (!(Number(g.gaps) > 0)) {
    return panel(
      'Gaps between kernels',
      'drill-gaps',
      el('p', { class: 'muted empty-state', 'data-testid': 'drill-gap-summary', 'data-gaps': String(g.gaps ?? 0), 'data-total-us': rawValue(g.total_us), text: 'No gaps between kernels in this window: every stream ran its kernels back to back.' }),
    );
  }
  const canvas = el('canvas', { 'data-testid': 'drill-gap-histogram', height: '260' });
  requestAnimationFrame(() => {
    fitCanvas(canvas, 260);
    const hist = { buckets: g.buckets, gaps: g.gaps, total_us: g.total_us, devices: [] };
    drawGapHistogram(canvas, JSON.stringify(hist));
  });
  const top = g.top || [];
  const size = durationColumn(top.map((gap) => gap.gap_us));
  const rows = top.map((gap, i) =>
    el(
      'tr',
      {
        ...timelineLink('Show this gap on the timeline', () => onGap({ ...gap, label: `Gap ${i + 1}: ${us(gap.gap_us)}, GPU ${gap.device} · stream ${gap.stream}` })),
        'data-rank': String(i + 1),
        'data-gap-us': rawValue(gap.gap_us),
        'data-start-ns': String(gap.start_ns),
        'data-end-ns': String(gap.end_ns),
      },
      el('td', { class: 'mono num', text: String(i + 1) }),
      el('td', { class: 'mono num', text: size.cell(gap.gap_us), title: gap.reading || '', dataset: { sort: String(gap.gap_us) } }),
      el('td', { class: 'mono nowrap', text: `GPU ${gap.device} · stream ${gap.stream}`, dataset: { sort: String(gap.device * 1e6 + (gap.stream ?? 0)) } }),
      drNeighbours(gap),
      drOverlaps(gap.nvtx),
      drOverlaps(gap.api),
    ),
  );
  return panel(
    'Gaps between kernels',
    'drill-gaps',
    el('p', { class: 'muted small', 'data-testid': 'drill-gap-summary', 'data-gaps': String(g.gaps), 'data-total-us': rawValue(g.total_us), text: `${int(g.gaps)} gaps per stream · ${us(g.total_us)} in all. ${g.reading || ''}` }),
    el('div', { class: 'canvas-wrap' }, canvas),
    el('h3', { text: 'Largest gaps (click one to see it on the timeline)' }),
    dataTable(
      [
        { label: '#', num: true },
        { label: size.header('Gap'), num: true, title: 'Hover a gap for what its measured causes say' },
        'Where',
        'Kernels either side',
        { label: 'NVTX open on the launching thread', title: 'NVTX ranges open on the thread that launched the next kernel, longest overlap first' },
        { label: 'CUDA API calls during the gap', title: 'CUDA API calls of the launching process overlapping the gap, longest overlap first' },
      ],
      rows,
      { 'data-testid': 'drill-top-gaps', class: 'table top-gaps' },
    ),
  );
}

function drGraphs(gr) {
  if (!gr) return null;
  const eager = gr.eager_top || [];
  const time = durationColumn(eager.map((k) => k.total_us));
  const rows = eager.map((k) =>
    el(
      'tr',
      { 'data-name': k.name, 'data-count': String(k.count) },
      el('td', { class: 'mono name', title: k.name }, el('span', { class: 'clamp' }, breakable(k.name))),
      el('td', { text: k.category || '' }),
      el('td', { text: k.capturable ? 'yes' : 'no' }),
      el('td', { class: 'mono num', text: int(k.count), dataset: { sort: String(k.count) } }),
      el('td', { class: 'mono num', text: time.cell(k.total_us), dataset: { sort: String(k.total_us) } }),
    ),
  );
  const phases = (gr.phases || []).map((p) => `${p.phase}: ${pct(p.coverage)} of ${int(p.kernels)} kernels`).join(' · ');
  return panel(
    'CUDA-graph coverage',
    'drill-graphs',
    el(
      'div',
      { class: 'rc-figures' },
      drFact('coverage', 'Kernels launched by graphs', gr.coverage, pct(gr.coverage)),
      drFact('graph_kernels', 'Graph kernels', gr.graph_kernels, int(gr.graph_kernels)),
      drFact('eager_kernels', 'Eager kernels', gr.eager_kernels, int(gr.eager_kernels)),
      drFact('graph_share', 'GPU compute time in graphs', gr.graph_share, pct(gr.graph_share)),
      drFact('graph_executions', 'Graph executions', gr.graph_executions, int(gr.graph_executions)),
      gr.graphs != null ? drFact('graphs', 'Distinct graphs', gr.graphs, int(gr.graphs)) : null,
      gr.graph_nodes ? drFact('graph_nodes', 'Graph kernel nodes', gr.graph_nodes, int(gr.graph_nodes)) : null,
      el('div', { class: 'rc-figure', 'data-drill': 'capture_mode', 'data-value': gr.capture_mode }, el('span', { class: 'rc-label', text: 'Capture' }), el('span', { class: 'rc-value', text: gr.capture_mode })),
    ),
    phases ? el('p', { class: 'small', text: `Per phase — ${phases}` }) : null,
    gr.advice ? el('div', { class: 'callout warn', 'data-testid': 'drill-graph-advice', text: gr.advice }) : null,
    rows.length ? el('h3', { text: 'Eager kernels by name' }) : null,
    rows.length ? dataTable(['Kernel', 'Category', 'Capturable', { label: 'Count', num: true }, { label: time.header('Time'), num: true }], rows, { 'data-testid': 'drill-eager' }) : null,
  );
}

function drPattern(p) {
  if (!p) return null;
  if (!p.found) return panel('Per-layer kernel pattern', 'drill-pattern', el('p', { class: 'muted', text: p.note || 'No repeating per-layer kernel sequence was found.' }));
  const layer = p.kernels || [];
  const gapCol = durationColumn(layer.map((k) => k.mean_gap_us));
  const durCol = durationColumn(layer.map((k) => k.mean_duration_us));
  const kernels = layer.map((k) =>
    el(
      'tr',
      { 'data-index': String(k.index), 'data-name': k.name },
      el('td', { class: 'mono num', text: String(k.index) }),
      el('td', { class: 'mono name', title: k.name }, el('span', { class: 'clamp' }, breakable(k.name))),
      el('td', { text: k.category }),
      el('td', { class: 'mono num', text: gapCol.cell(k.mean_gap_us), dataset: { sort: String(k.mean_gap_us) } }),
      el('td', { class: 'mono num', text: durCol.cell(k.mean_duration_us), dataset: { sort: String(k.mean_duration_us) } }),
    ),
  );
  const blockList = p.blocks || [];
  const perLayer = durationColumn(blockList.map((b) => b.gap_per_layer_us));
  const totalGap = durationColumn(blockList.map((b) => b.total_gap_us));
  const blocks = blockList.map((b) =>
    el(
      'tr',
      { 'data-rank': String(b.rank), 'data-operation': b.operation, 'data-total-gap-us': rawValue(b.total_gap_us) },
      el('td', { class: 'mono num', text: String(b.rank) }),
      el('td', { text: b.operation }),
      el('td', { class: 'mono nowrap', text: b.kernels }),
      el('td', { text: b.category }),
      el('td', { class: 'mono num', text: perLayer.cell(b.gap_per_layer_us), dataset: { sort: String(b.gap_per_layer_us) } }),
      el('td', { class: 'mono num', text: totalGap.cell(b.total_gap_us), dataset: { sort: String(b.total_gap_us) } }),
      el('td', { text: b.priority }),
    ),
  );
  return panel(
    'Per-layer kernel pattern',
    'drill-pattern',
    el('p', {
      class: 'small',
      'data-testid': 'drill-pattern-summary',
      'data-layers': String(p.layers),
      'data-kernels': String((p.kernels || []).length),
      text: `${(p.kernels || []).length} kernels repeat ${int(p.layers)} times in each of ${int(p.steps)} steady-state steps (GPU ${p.device}, ${p.source}).`,
    }),
    el('h3', { text: 'Functional blocks, by total preceding gap × layers' }),
    dataTable(
      [{ label: 'Rank', num: true }, 'Operation', 'Kernels', 'Category', { label: perLayer.header('Gap per layer'), num: true }, { label: totalGap.header('Total gap'), num: true }, 'Priority'],
      blocks,
      { 'data-testid': 'drill-blocks' },
    ),
    el(
      'details',
      { class: 'layer-details' },
      el('summary', { text: `The layer, kernel by kernel (${kernels.length} kernels)` }),
      dataTable(
        [{ label: '#', num: true }, 'Kernel', 'Category', { label: gapCol.header('Mean preceding gap'), num: true }, { label: durCol.header('Mean duration'), num: true }],
        kernels,
        { 'data-testid': 'drill-layer' },
      ),
    ),
  );
}

// A rank as the reader knows it; the file is named only when the ranks come from several files.
function drRankName(r, oneFile = false) {
  return `${r.file && !oneFile ? `${r.file} · ` : ''}GPU ${r.device} · pid ${r.pid}`;
}

function drStragglers(s, { drawBarChart, onShow }) {
  if (!s) return null;
  const ranks = s.ranks || [];
  if (ranks.length < 2) {
    return panel('Stragglers', 'drill-stragglers', el('p', { class: 'muted', text: s.note || 'One rank only: drop the rank files of one run together to compare ranks.' }));
  }
  const oneFile = new Set(ranks.map((r) => r.file || '')).size === 1;
  const canvas = el('canvas', { 'data-testid': 'drill-lateness-plot', height: '120' });
  const chart = {
    title: 'Mean lateness per rank at collectives (µs)',
    bars: ranks.map((r) => ({
      label: drRankName(r, oneFile),
      value: r.mean_lateness_us,
      text: `${us(r.mean_lateness_us)} · last in ${pct(r.share)}`,
      flagged: !!s.rank && r.device === s.rank.device && r.pid === s.rank.pid && (r.file || '') === (s.rank.file || ''),
    })),
  };
  requestAnimationFrame(() => drawFitted(canvas, drawBarChart, JSON.stringify(chart)));
  const verdict = s.rank
    ? `${drRankName(s.rank, oneFile)} arrives last in ${pct(s.share)} of ${int(s.collectives)} collectives, ${us(s.mean_lateness_us)} late on average.`
    : `No straggler: no rank is last in more than ${pct(s.threshold, 0)} of ${int(s.collectives)} collectives.`;
  return panel(
    'Stragglers',
    'drill-stragglers',
    el('p', {
      class: s.rank ? 'callout warn' : 'callout',
      'data-testid': 'drill-straggler',
      'data-share': rawValue(s.share),
      'data-lateness-us': rawValue(s.mean_lateness_us),
      'data-collectives': String(s.collectives),
      'data-device': s.rank ? String(s.rank.device) : '',
      text: verdict,
    }),
    s.alignment ? el('p', { class: 'muted small', text: s.alignment }) : null,
    el('div', { class: 'canvas-wrap' }, canvas),
    drRankTable(ranks, oneFile, onShow),
  );
}

// Each rank's record; a rank that arrived last somewhere links to its latest collective.
function drRankTable(ranks, oneFile, onShow) {
  const late = durationColumn(ranks.map((r) => r.mean_lateness_us));
  const rows = ranks.map((r) => {
    const w = r.worst;
    const label = w ? `${drRankName(r, oneFile)}: collective #${int(w.index + 1)}, ${us(w.lateness_us)} late` : '';
    const link = w && onShow ? timelineLink('Show this collective on the timeline', () => onShow({ start_ns: w.start_ns, end_ns: w.end_ns, file: r.file, label })) : {};
    return el(
      'tr',
      { ...link, 'data-device': String(r.device), 'data-start-ns': w ? String(w.start_ns) : '', 'data-end-ns': w ? String(w.end_ns) : '' },
      el('td', { class: 'nowrap', text: drRankName(r, oneFile) }),
      el('td', { class: 'mono num', text: int(r.collective_kernels), dataset: { sort: String(r.collective_kernels) } }),
      el('td', { class: 'mono num', text: `${int(r.last)} (${pct(r.share)})`, dataset: { sort: String(r.last) } }),
      el('td', { class: 'mono num', text: late.cell(r.mean_lateness_us), dataset: { sort: String(r.mean_lateness_us) } }),
      el('td', { class: 'mono num', text: w ? `#${int(w.index + 1)} · ${us(w.lateness_us)} late` : '—', dataset: { sort: String(w?.lateness_us ?? -1) } }),
    );
  });
  return dataTable(
    ['Rank', { label: 'Collectives', num: true }, { label: 'Last in', num: true }, { label: late.header('Mean lateness'), num: true }, { label: 'Latest collective', num: true }],
    rows,
    { 'data-testid': 'drill-rank-table' },
  );
}

export function drFindings(findings) {
  const items = findings.map((f) =>
    el(
      'li',
      { class: `finding severity-${f.severity}`, 'data-severity': f.severity, 'data-source': f.source, 'data-title': f.title },
      el('div', {}, el('span', { class: `badge severity-${f.severity}`, text: f.severity }), ' ', el('strong', { text: f.title })),
      el('div', { class: 'small', text: f.evidence }),
      el('div', { class: 'small' }, el('em', { text: 'Fix: ' }), f.fix, f.pattern ? el('span', { class: 'muted', text: ` (${f.pattern})` }) : null),
    ),
  );
  return panel(
    'Findings',
    'drill-findings',
    items.length ? el('ol', { class: 'findings' }, items) : el('p', { class: 'muted', text: 'Nothing stands out.' }),
  );
}

export function drExports(exportReport) {
  const status = el('span', { class: 'muted small', 'data-testid': 'export-status', 'aria-live': 'polite' });
  const button = (format, label) =>
    el('button', {
      type: 'button',
      class: 'button',
      'data-testid': `export-${format}`,
      text: label,
      onclick: async () => {
        status.textContent = `building ${label}…`;
        try {
          const n = await exportReport(format);
          status.textContent = `${label} saved (${int(n)} bytes)`;
        } catch (e) {
          status.textContent = `could not build ${label}: ${e.message || e}`;
        }
      },
    });
  return panel(
    'Explainer report',
    'drill-exports',
    el('p', { class: 'muted small', text: 'The full report (top kernels, launch storm, syncs, memory copies, NVTX, launch latency, findings), built here in the browser.' }),
    el('div', { class: 'export-buttons' }, button('md', 'Markdown'), button('json', 'JSON'), button('csv-zip', 'CSV (zip)'), button('html', 'HTML report'), status),
  );
}

function drCoverage(notes) {
  if (!notes.length) return null;
  return panel(
    'Not computed',
    'drill-coverage',
    el('ul', {}, notes.map((n) => el('li', {}, el('span', { class: 'mono', text: n.subject }), ` — ${n.reason}`))),
  );
}
