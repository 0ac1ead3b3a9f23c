import { describe, expect, it } from 'vitest';
import { NftApplier } from './apply.js';
import { diffTables } from './diff.js';
import { FakeNftKernel } from '../testing/fake-kernel.js';
import { parseState } from './state.js';
import { renderTable, tableScript } from './render.js';
import { local, namespace, pod, policy, state } from '../testing/builders.js';
import { translate } from './translate.js';

const isolate = policy('x/p', {
  podSelector: { matchLabels: { app: 'a' } },
  ingress: [{ from: [{ podSelector: { matchLabels: { role: 'c' } } }] }],
});
const table = (pods: unknown[], policies: unknown[] = [isolate], locals = [local('x/a', 'fl-a')]) =>
  renderTable(
    translate(parseState(state({ namespaces: [namespace('x')], pods, policies, local: locals }))),
  );
const a = pod('x/a', { app: 'a' }, ['10.0.0.1']);
const c = (i: number, ip: string) => pod(`x/c${i}`, { role: 'c' }, [ip]);

describe('diffTables', () => {
  it('is empty for equal tables and undefined when a set comes or goes', () => {
    expect(diffTables(table([a, c(1, '10.0.0.9')]), table([a, c(1, '10.0.0.9')]))).toBe('');
    // The peer set holds nothing without c1: it is not written, so the structure differs.
    expect(diffTables(table([a]), table([a, c(1, '10.0.0.9')]))).toBeUndefined();
  });

  it('flushes a set that loses an element and declares it again whole (a merged interval)', () => {
    const diff = diffTables(
      table([a, c(1, '10.0.0.8'), c(2, '10.0.0.20')]),
      table([a, c(1, '10.0.0.8'), c(3, '10.0.0.9')]),
    );
    expect(diff?.split('\n').slice(1)).toEqual([
      'flush set inet flock flock_table_exists',
      'flush set inet flock peers_0_v4',
      'table inet flock {',
      '\tset peers_0_v4 {',
      '\t\ttype ipv4_addr',
      '\t\tflags interval',
      '\t\tcomment "x/p ingress[0]"',
      '\t\telements = { 10.0.0.8/31 }',
      '\t}',
      '}',
      '',
    ]);
    expect(diff).not.toMatch(/(add|delete) element/); // nft would read every interval set first
  });

  it('writes a change that only adds as one table block, guarded against a missing table', () => {
    const b = pod('x/b', { app: 'a' }, ['10.0.0.2']);
    const one = table([a, b, c(1, '10.0.0.9')]);
    const two = table(
      [a, b, c(1, '10.0.0.9')],
      [isolate],
      [local('x/a', 'fl-a'), local('x/b', 'fl-b')],
    );
    const add = diffTables(one, two)!;
    expect(add.split('\n').slice(1, 3)).toEqual([
      'flush set inet flock flock_table_exists',
      'table inet flock {',
    ]);
    expect(add).not.toMatch(/delete/); // a deletion makes the kernel wait (10–20 ms)
    expect(add).toContain('\tchain ingress_fl-b {');
    expect(add).toContain('\t\telements = { "fl-b" : jump ingress_fl-b }');
    expect(add).not.toContain('"fl-a"'); // only what is new
    const kernel = new FakeNftKernel();
    kernel.execute(tableScript(one));
    kernel.execute(add);
    const reference = new FakeNftKernel();
    reference.execute(tableScript(two));
    expect(kernel.normalised()).toEqual(reference.normalised());
    // The reverse empties the map before it deletes the chain an element jumped to.
    const remove = diffTables(two, one)!.split('\n');
    expect(remove.indexOf('flush map inet flock ingress_pods')).toBeLessThan(
      remove.indexOf('delete chain inet flock ingress_fl-b'),
    );
    expect(remove.indexOf('flush map inet flock ingress_pods')).toBeGreaterThan(0);
    expect(remove).toContain('\t\telements = { "fl-a" : jump ingress_fl-a }');
  });

  it('re-points the map element of a chain whose rules changed', () => {
    const other = policy('x/q', { podSelector: {}, ingress: [{}] });
    const before = table([a, c(1, '10.0.0.9')], [isolate]);
    const after = table([a, c(1, '10.0.0.9')], [isolate, other]);
    const kernel = new FakeNftKernel();
    kernel.execute(tableScript(before));
    const diff = diffTables(before, after)!;
    expect(diff).toContain('delete chain inet flock ingress_fl-a');
    kernel.execute(diff);
    const reference = new FakeNftKernel();
    reference.execute(tableScript(after));
    expect(kernel.normalised()).toEqual(reference.normalised()); // the chain now comes last
  });
});

describe('NftApplier.applyTable', () => {
  it('replaces first, then sends diffs, skips no-ops, and replaces after forget()', async () => {
    const kernel = new FakeNftKernel();
    const applier = new NftApplier(kernel.run);
    expect(await applier.applyTable(table([a, c(1, '10.0.0.9')]))).toBe('replace');
    expect(await applier.applyTable(table([a, c(1, '10.0.0.9'), c(2, '10.0.0.7')]))).toBe('diff');
    expect(kernel.scripts.at(-1)).toMatch(
      /\tset peers_0_v4 \{\n(\t\t.*\n)*\t\telements = \{ 10\.0\.0\.7 \}\n/,
    );
    expect(await applier.applyTable(table([a, c(1, '10.0.0.9'), c(2, '10.0.0.7')]))).toBe(
      'unchanged',
    );
    applier.forget();
    expect(await applier.applyTable(table([a, c(1, '10.0.0.9')]))).toBe('replace');
    expect(applier.counts).toEqual({ replace: 2, diff: 1, unchanged: 1 });
    expect(applier.lastApplied).toBe(kernel.listing());
  });

  it('falls back to a replace when the diff fails (the table was removed meanwhile)', async () => {
    const kernel = new FakeNftKernel();
    const applier = new NftApplier(kernel.run);
    await applier.applyTable(table([a, c(1, '10.0.0.9')]));
    kernel.deleteTable();
    expect(await applier.applyTable(table([a, c(1, '10.0.0.9'), c(2, '10.0.0.7')]))).toBe(
      'replace',
    );
    expect(kernel.listing()).toContain('10.0.0.7');
  });

  it('a failed replace leaves nothing remembered: the next call replaces again', async () => {
    const kernel = new FakeNftKernel();
    let fail = false;
    const applier = new NftApplier(async (s) => {
      if (fail) throw new Error('nft refused');
      await kernel.run(s);
    });
    await applier.applyTable(table([a, c(1, '10.0.0.9')]));
    fail = true;
    await expect(applier.applyTable(table([a, c(1, '10.0.0.7')]))).rejects.toThrow('nft refused');
    fail = false;
    expect(await applier.applyTable(table([a, c(1, '10.0.0.7')]))).toBe('replace');
  });
});
