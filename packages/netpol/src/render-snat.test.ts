import { describe, expect, it } from 'vitest';
import { diffTables } from './diff.js';
import { renderTable } from './render.js';
import { snatChains, translatorForward, translatorInput } from './render-snat.js';
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

describe('the NAT64 part of the SNAT chain', () => {
  const nat64 = { iface: 'flock64', pool: '192.168.240.0/20' };

  it("masquerades the translator's pool to any destination, before the cluster's ranges are kept", () => {
    const [chain] = snatChains({ sources: ['10.1.0.0/24'], keep: ['10.0.0.0/8'], nat64 });
    const text = chain!.lines.join('\n');
    const rule = 'iifname "flock64" ip saddr 192.168.240.0/20 masquerade fully-random';
    expect(text).toContain(rule);
    expect(text.indexOf(rule)).toBeLessThan(text.indexOf('ip daddr { 10.0.0.0/8 } return'));
    expect(text.indexOf('oifname @pod_ifaces return')).toBeLessThan(text.indexOf(rule));
  });

  it('stands alone on a public node (no private sources, nothing kept)', () => {
    const [chain] = snatChains({ sources: [], keep: [], nat64 });
    const text = chain!.lines.join('\n');
    expect(text).toContain('masquerade');
    expect(text).not.toContain('ip daddr');
    expect(text.match(/masquerade/g)).toHaveLength(1);
  });

  it('keeps the translator off the node: new input from its interface is dropped', () => {
    const ir = translate(parseState({ namespaces: [], pods: [], policies: [], locals: [] }));
    const text = renderTable(ir, { snat: { sources: [], keep: [], nat64 } })
      .chains.find((c) => c.name === 'input')!
      .lines.join('\n');
    expect(text).toContain('iifname "flock64" ct state new counter drop');
    expect(translatorInput(undefined)).toEqual([]);
  });

  it("keeps translated traffic from the cluster's own IPv4 ranges (forward)", () => {
    const ir = translate(parseState({ namespaces: [], pods: [], policies: [], locals: [] }));
    const deny = ['198.18.0.0/16', '10.96.0.0/16'];
    const text = renderTable(ir, { snat: { sources: [], keep: [], nat64: { ...nat64, deny } } })
      .chains.find((c) => c.name === 'forward')!
      .lines.join('\n');
    expect(text).toContain(
      'iifname "flock64" ip daddr { 10.96.0.0/16, 198.18.0.0/16 } counter drop',
    );
    // Before established flows are accepted: no translated flow to the cluster, old or new.
    expect(text.indexOf('iifname "flock64"')).toBeLessThan(text.indexOf('ct state established'));
    expect(translatorForward({ sources: [], keep: [], nat64 })).toEqual([]);
  });

  it('refuses an interface name or pool that could carry nft text', () => {
    expect(() =>
      snatChains({ sources: [], keep: [], nat64: { iface: 'a" accept', pool: nat64.pool } }),
    ).toThrow(/no interface name/);
    expect(() =>
      snatChains({ sources: [], keep: [], nat64: { iface: 'flock64', pool: '2001:db8::/96' } }),
    ).toThrow(/no IPv4 CIDR/);
  });
});

describe('the inter-node translator of private IPv4', () => {
  const interNode = { iface: 'flock46', prefix: 'fd12:3456:789a:4::/96' };
  const chain = (name: string) => {
    const ir = translate(parseState({ namespaces: [], pods: [], policies: [], locals: [] }));
    return renderTable(ir, {
      snat: { sources: ['10.20.3.0/24'], keep: ['10.20.0.0/16'], interNode },
    })
      .chains.find((c) => c.name === name)!
      .lines.join('\n');
  };

  it('keeps it off the node, and translates nothing itself (no masquerade)', () => {
    expect(chain('input')).toContain('iifname "flock46" ct state new counter drop');
    expect(chain('snat_postrouting')).not.toContain('flock46');
  });

  it('lets only the prefix into it: Tayga is not the one to refuse a flood of other sources', () => {
    const text = chain('forward');
    const rule = 'oifname "flock46" ip6 saddr != fd12:3456:789a:4::/96 counter drop';
    expect(text).toContain(rule);
    expect(text.indexOf(rule)).toBeLessThan(text.indexOf('ct state established'));
  });

  it('refuses an interface name or prefix that could carry nft text', () => {
    const o = (i: typeof interNode) => ({ sources: [], keep: [], interNode: i });
    expect(() => translatorInput(o({ ...interNode, iface: 'x" accept' }))).toThrow(/no interface/);
    expect(() => translatorForward(o({ ...interNode, prefix: '10.0.0.0/8' }))).toThrow(
      /no IPv6 CIDR/,
    );
  });
});
