import { describe, expect, it } from 'vitest';
import { MAX_NODE_PEER_ADDRESSES, NodePeerSpec, nodePeerOf, sameNodePeer } from './node-peer.js';

describe('nodePeerOf', () => {
  it('keeps the labels and the IP addresses, each once, in their order', () => {
    const spec = nodePeerOf({
      metadata: { labels: { zone: 'a' } },
      status: {
        addresses: [
          { address: '2001:db8::1' },
          { address: 'node-1' },
          { address: 'node-1.example.com' },
          { address: '192.0.2.1' },
          { address: '2001:db8::1' },
        ],
      },
    });
    expect(spec).toEqual({ labels: { zone: 'a' }, addresses: ['2001:db8::1', '192.0.2.1'] });
    expect(NodePeerSpec.parse(spec)).toEqual(spec);
  });

  it('a Node without labels or status is a record with no addresses; never more than the cap', () => {
    expect(nodePeerOf({ metadata: {} })).toEqual({ addresses: [] });
    expect(nodePeerOf({ metadata: { labels: {} }, status: null })).toEqual({ addresses: [] });
    const many = Array.from({ length: 40 }, (_, i) => ({ address: `2001:db8::${i + 1}` }));
    const spec = nodePeerOf({ metadata: {}, status: { addresses: many } });
    expect(spec.addresses).toHaveLength(MAX_NODE_PEER_ADDRESSES);
    expect(NodePeerSpec.safeParse(spec).success).toBe(true);
  });

  it('the schema refuses what is no address', () => {
    expect(NodePeerSpec.safeParse({ addresses: ['node-1'] }).success).toBe(false);
  });
});

describe('sameNodePeer', () => {
  it('labels in any order are the same; an address moved or a label changed is not', () => {
    const a = { labels: { x: '1', y: '2' }, addresses: ['2001:db8::1', '192.0.2.1'] };
    expect(sameNodePeer(a, { labels: { y: '2', x: '1' }, addresses: [...a.addresses] })).toBe(true);
    expect(sameNodePeer(a, { ...a, addresses: ['192.0.2.1', '2001:db8::1'] })).toBe(false);
    expect(sameNodePeer(a, { ...a, labels: { x: '1', y: '3' } })).toBe(false);
    expect(sameNodePeer(a, { addresses: a.addresses })).toBe(false);
  });
});
