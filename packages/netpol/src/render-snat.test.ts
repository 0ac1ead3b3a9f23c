import { describe, expect, it } from 'vitest';
import { diffTables } from './diff.js';
import { renderTable } from './render.js';
import { snatChains } from './render-snat.js';
import { translate } from './translate.js';
import { parseState } from './state.js';

describe('the SNAT chain of private IPv4', () => {
  it('is absent without sources, and translates only the slice, beyond the kept ranges', () => {
    expect(snatChains(undefined)).toEqual([]);
    expect(snatChains({ sources: [], keep: ['10.0.0.0/8'] })).toEqual([]);
    const [chain] = snatChains({
      sources: ['10.1.0.0/25', '10.1.0.128/25'],
      keep: ['10.0.0.0/8', '172.16.0.0/12'],
    });
    expect(chain!.hook).toBe(true);
    const text = chain!.lines.join('\n');
    expect(text).toContain('type nat hook postrouting priority srcnat');
    // Adjacent slices merge into one element.
    expect(text).toMatch(/ip saddr \{ 10\.1\.0\.0\/24 \} masquerade fully-random/);
    expect(text).toMatch(/ip daddr \{ 10\.0\.0\.0\/8, 172\.16\.0\.0\/12 \} return/);
    // The pod interfaces' return comes first: a pod of this node always sees the real source.
    expect(text.indexOf('oifname @pod_ifaces return')).toBeLessThan(text.indexOf('masquerade'));
  });

  it('refuses anything that is not an IPv4 CIDR (the text goes into nft)', () => {
    expect(() => snatChains({ sources: ['2001:db8::/64'], keep: [] })).toThrow(/no IPv4 CIDR/);
    expect(() =>
      snatChains({ sources: ['10.1.0.0/24'], keep: ['10.0.0.0/8; flush ruleset'] }),
    ).toThrow(/no IPv4 CIDR/);
  });

  it('appearing or going replaces the whole table at once (a hooked chain changed)', () => {
    const ir = translate(parseState({ namespaces: [], pods: [], policies: [], locals: [] }));
    const plain = renderTable(ir);
    const natted = renderTable(ir, { snat: { sources: ['10.1.0.0/24'], keep: ['10.0.0.0/8'] } });
    expect(diffTables(plain, natted)).toBeUndefined();
    expect(diffTables(natted, natted)).toBe('');
  });
});
