// End-to-end: Root cause's NVTX ops grouped by shape and nested as a tree (issue 40) against the
// CLI's `analyze --json` for the same pair — the generated indexed-layers captures (layers 0-7
// vs 4-11, aten::to ⊃ aten::_to_copy ⊃ aten::copy_): the same rows in the same order (by change
// in self time), the same self times, statuses, instances and members, the core's note, the
// coverage warning, and the tree view putting every op under its parent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { artifact, cliJson, dropFiles, generate, showView, useSite } from '../helpers.mjs';

const TIMEOUT = 240_000;
let page;
let problems;
let tmp;
useSite('nsys-lens-shapes-', (s) => ({ page, problems, tmp } = s));

const openFiles = (files) => dropFiles(page, files, TIMEOUT);

const pageRows = () =>
  page.$$eval('[data-testid=rc-nvtx-table] tbody tr', (trs) =>
    trs.map((t) => ({
      name: t.dataset.name,
      status: t.dataset.status,
      selfBaseline: Number(t.dataset.selfBaseline),
      selfTarget: Number(t.dataset.selfTarget),
      selfDelta: Number(t.dataset.selfDelta),
      delta: Number(t.dataset.delta),
      parent: t.dataset.parent,
      depth: Number(t.dataset.depth),
      instances: t.dataset.instances,
      members: [...t.querySelectorAll('[data-testid=rc-members] li')].map((li) => [li.dataset.name, Number(li.dataset.baseline), Number(li.dataset.target)]),
    })),
  );

// Rows in tree order: every op after its parent, one deeper, inside its parent's subtree.
function assertTree(tree) {
  const at = new Map(tree.map((r, i) => [r.name, i]));
  for (const [i, r] of tree.entries()) {
    if (!r.parent) continue;
    const p = at.get(r.parent);
    assert.ok(p < i, `${r.name} after its parent ${r.parent}`);
    assert.equal(r.depth, tree[p].depth + 1, r.name);
    assert.ok(tree.slice(p + 1, i).every((x) => x.depth > tree[p].depth), `${r.name} inside ${r.parent}'s subtree`);
  }
}

test('indexed layers: the grouped NVTX table and its tree equal the CLI', { timeout: TIMEOUT }, async () => {
  const baseline = generate('indexed-layers-baseline', path.join(tmp, 'indexed-layers-baseline.sqlite'));
  const target = generate('indexed-layers-target', path.join(tmp, 'indexed-layers-target.sqlite'));
  await openFiles([baseline, target]);
  await showView(page, 'rootcause');
  const labels = ['--baseline-label', path.basename(baseline), '--target-label', path.basename(target)];
  const want = cliJson(['analyze', baseline, target, ...labels]).comparison;
  assert.equal(await page.textContent('[data-testid=rc-nvtx-note]'), want.nvtx_note);
  const rows = await pageRows();
  assert.deepEqual(
    rows.map((r) => r.name),
    want.nvtx.map((r) => r.name),
    'the core order: by change in self time',
  );
  for (const [i, r] of rows.entries()) {
    const w = want.nvtx[i];
    assert.equal(r.status, w.status, r.name);
    assert.equal(r.selfBaseline, w.baseline_self_us_per_step, r.name);
    assert.equal(r.selfTarget, w.target_self_us_per_step, r.name);
    assert.equal(r.selfDelta, w.self_delta_us, r.name);
    assert.equal(r.delta, w.delta_us, r.name);
    assert.equal(r.parent, w.parent ?? '', r.name);
    assert.equal(r.depth, w.depth ?? 0, r.name);
    assert.equal(r.instances, w.instances ? `${w.instances.baseline}/${w.instances.target}/${w.instances.common}` : '', r.name);
    assert.deepEqual(r.members, (w.members || []).map((m) => [m.name, m.baseline_us_per_step, m.target_us_per_step]), r.name);
  }
  const grouped = rows.find((r) => r.name === 'FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)');
  assert.ok(grouped && grouped.status === 'unchanged' && grouped.members.length === 12, JSON.stringify(grouped));
  assert.deepEqual(rows.filter((r) => ['NEW', 'REMOVED'].includes(r.status)).map((r) => r.name), ['broadcast_requests']);
  // The coverage warning, as the core words it.
  const coverage = await page.$$eval('[data-testid=rc-coverage] li', (lis) => lis.map((li) => li.textContent));
  assert.deepEqual(coverage, want.coverage);
  // A grouped op opens to its names.
  await page.click('[data-testid=rc-nvtx-table] tr[data-name="FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)"] summary');
  assert.ok(await page.isVisible('[data-testid=rc-nvtx-table] tr[data-name="FSDP::pre_forward (blocks.*._checkpoint_wrapped_module)"] li[data-name="FSDP::pre_forward (blocks.11._checkpoint_wrapped_module)"]'));
  await page.screenshot({ path: artifact('rootcause-shapes.png'), fullPage: false });
  // The tree: every op right under its parent's subtree, children deeper by one.
  await page.check('[data-testid=rc-nvtx-tree]');
  assert.equal(await page.getAttribute('[data-testid=rc-nvtx-table]', 'data-view'), 'tree');
  const tree = await pageRows();
  assert.deepEqual([...tree.map((r) => r.name)].sort(), [...rows.map((r) => r.name)].sort());
  assertTree(tree);
  assert.deepEqual(
    tree.filter((r) => r.name.startsWith('aten::')).map((r) => r.name),
    ['aten::to', 'aten::_to_copy', 'aten::copy_'],
  );
  await page.screenshot({ path: artifact('rootcause-shapes-tree.png'), fullPage: false });
  await page.uncheck('[data-testid=rc-nvtx-tree]');
  assert.deepEqual((await pageRows()).map((r) => r.name), want.nvtx.map((r) => r.name));
  assert.deepEqual(problems, []);
});

test('one trace: its NVTX ops show as a tree too, each under its parent as the CLI nests them', { timeout: TIMEOUT }, async () => {
  const baseline = generate('indexed-layers-baseline', path.join(tmp, 'indexed-layers-single.sqlite'));
  await openFiles([baseline]);
  await showView(page, 'rootcause');
  const want = cliJson(['analyze', baseline]).baseline.nvtx_ops;
  const single = () =>
    page.$$eval('[data-testid=rc-nvtx-table] tbody tr', (trs) =>
      trs.map((t) => ({ name: t.dataset.name, parent: t.dataset.parent, depth: Number(t.dataset.depth || 0) })),
    );
  const flat = await single();
  assert.deepEqual(flat.map((r) => r.name), want.map((r) => r.name), 'the core order');
  assert.deepEqual(flat.map((r) => [r.parent, r.depth]), want.map((r) => [r.parent ?? '', r.depth ?? 0]));
  await page.check('[data-testid=rc-nvtx-tree]');
  assert.equal(await page.getAttribute('[data-testid=rc-nvtx-table]', 'data-view'), 'tree');
  const tree = await single();
  assertTree(tree);
  assert.deepEqual(
    tree.filter((r) => r.name.startsWith('aten::')).map((r) => r.name),
    ['aten::to', 'aten::_to_copy', 'aten::copy_'],
  );
  await page.uncheck('[data-testid=rc-nvtx-tree]');
  assert.deepEqual((await single()).map((r) => r.name), want.map((r) => r.name));
  assert.deepEqual(problems, []);
});
