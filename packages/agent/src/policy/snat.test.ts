import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { onSnatChange, privateSnat } from './snat.js';

const publicNode = nodeConfig({ spec: { cidr4: '192.0.2.16/28' } });
const privateNode = nodeConfig({
  spec: {
    cidr4: '10.20.3.0/24',
    ipv4: { assign: 'Always', mode: 'Private', clusterCIDRs: ['10.20.0.0/16'] },
  },
});

describe('private IPv4 SNAT of a node', () => {
  it("translates a Private node's slice beyond the pool's range; nothing on a public node", () => {
    expect(privateSnat(privateNode.spec)).toEqual({
      sources: ['10.20.3.0/24'],
      keep: ['10.20.0.0/16'],
    });
    expect(privateSnat(publicNode.spec)).toBeUndefined();
    expect(privateSnat(undefined)).toBeUndefined();
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
  });
});
