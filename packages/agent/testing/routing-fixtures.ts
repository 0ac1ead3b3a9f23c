// Shared fixtures of the routing unit tests: a NodeConfig, allocation entries, pods.
import type { NodeConfig, Pod } from '@flock/api';
import { nodeConfig, pod as buildPod } from '@flock/api/testing';
import type { AllocationEntry } from '../src/store/index.js';

export const NODE_CONFIG: NodeConfig = nodeConfig({
  metadata: { generation: 3 },
  spec: {
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: ['2001:db8:200::/64', '198.51.100.0/24'],
    anycastCIDRs: ['2001:db8:300::/120', '203.0.113.0/28'],
    bgp: { asn: 64512, peers: [{ address: '2001:db8:ffff::1', asn: 65000 }] },
  },
});

export function entry(name: string, over: Partial<AllocationEntry> = {}): AllocationEntry {
  return {
    containerID: `c-${name}`,
    ifname: 'eth0',
    namespace: 'default',
    pod: name,
    podUID: `uid-${name}`,
    ip6: '2001:db8:100::1',
    pinned: false,
    anycast: [],
    state: 'committed',
    createdAt: '2026-11-29T10:00:00.000Z',
    ...over,
  };
}

/** A pod of `default` on node-a (Running and Ready unless told otherwise). */
export function pod(
  name: string,
  over: {
    uid?: string;
    ready?: boolean;
    phase?: string;
    annotations?: Record<string, string>;
    /** Being deleted (a deletionTimestamp), e.g. evicted from a node whose kubelet died. */
    terminating?: boolean;
  } = {},
): Pod {
  return buildPod({ name, ...over });
}
