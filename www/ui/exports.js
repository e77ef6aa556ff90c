// The report's files as the page saves them, through a Blob URL: nothing leaves the machine.

import { el } from './format.js';

const EXPORTS = {
  md: { ext: 'md', type: 'text/markdown' },
  json: { ext: 'json', type: 'application/json' },
  html: { ext: 'html', type: 'text/html' },
  'csv-zip': { ext: 'csv.zip', type: 'application/zip' },
};

// Saves the report `bytes` in `format` ('md', 'json', 'html', 'csv-zip') of the trace file
// `name`, as `NAME.report.EXT`.
export function saveReport(bytes, format, name) {
  const spec = EXPORTS[format];
  const base = name.replace(/\.sqlite$/i, '');
  const url = URL.createObjectURL(new Blob([bytes], { type: spec.type }));
  const a = el('a', { href: url, download: `${base}.report.${spec.ext}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
