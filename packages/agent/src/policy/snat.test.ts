import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { onSnatChange, nodeSnat } from './snat.js';

const publicNode = nodeConfig({ spec: { cidr4: '192.0.2.16/28' } });
const privateNode = nodeConfig({
  spec: {
    cidr4: '10.20.3.0/24',
    ipv4: { assign: 'Always', mode: 'Private', clusterCIDRs: ['10.20.0.0/16'] },
  },
});

describe('private IPv4 SNAT of a node', () => {
  it("translates a Private node's slice beyond the pool's range; nothing on a public node", () => {
    expect(nodeSnat(privateNode.spec)).toEqual({
      sources: ['10.20.3.0/24'],
      keep: ['10.20.0.0/16'],
    });
    // A Private slice ends with its own range kept when the pool's is not copied.
    const bare = {
      ...privateNode.spec,
      ipv4: { assign: 'Always' as const, mode: 'Private' as const },
    };
    expect(nodeSnat(bare)?.keep).toEqual(['10.20.3.0/24']);
    expect(nodeSnat(publicNode.spec)).toBeUndefined();
    expect(nodeSnat(undefined)).toBeUndefined();
    // With a translation prefix, the inter-node translator's rules come along.
    const translated = {
      ...privateNode.spec,
      ipv4: { ...privateNode.spec.ipv4!, interNodePrefix: 'fd12:3456:789a:4::/96' },
    };
    expect(nodeSnat(translated)?.interNode).toEqual({
      iface: 'flock46',
      prefix: 'fd12:3456:789a:4::/96',
    });
  });

  it("adds NAT64's pool on its translator's device, on a public node too", () => {
    const nat64 = { prefix: '64:ff9b::/96', pool: '192.168.240.0/20' };
    expect(nodeSnat({ ...publicNode.spec, nat64 })).toEqual({
      sources: [],
      keep: [],
      nat64: { iface: 'flock64', pool: '192.168.240.0/20', deny: ['192.168.240.0/20'] },
    });
    const guarded = { ...nat64, clusterCIDRs: ['198.18.0.0/16'] };
    expect(nodeSnat({ ...publicNode.spec, nat64: guarded })?.nat64?.deny).toEqual([
      '198.18.0.0/16',
      '192.168.240.0/20',
    ]);
    expect(nodeSnat({ ...privateNode.spec, nat64 })).toMatchObject({
      sources: ['10.20.3.0/24'],
      nat64: { pool: '192.168.240.0/20' },
    });
  });

  it('asks for a pass when the SNAT changes, not on every NodeConfig update', () => {
    let passes = 0;
    const listener = onSnatChange(() => passes++);
    listener(publicNode);
    listener(publicNode);
    expect(passes).toBe(0);
    listener(privateNode);
    listener({ ...privateNode, spec: { ...privateNode.spec } });
    expect(passes).toBe(1);
    listener(undefined);
    expect(passes).toBe(2);
    listener({
      ...publicNode,
      spec: { ...publicNode.spec, nat64: { prefix: '64:ff9b::/96', pool: '192.168.240.0/20' } },
    });
    expect(passes).toBe(3);
  });
});
