// Shared fixtures of the routing unit tests: a NodeConfig, allocation entries, pods.
import {
  ADDRESSCLAIM_KIND,
  API_VERSION,
  claimName,
  type AddressClaim,
  type NodeConfig,
  type Pod,
} from '@flock/api';
import { cidrsContainIp } from '@flock/ipam';
import type { ClaimOf } from '../src/claims/ownership.js';
import { nodeConfig, pod as buildPod } from '@flock/api/testing';
import type { AllocationEntry } from '../src/store/index.js';

export const NODE_CONFIG: NodeConfig = nodeConfig({
  metadata: { generation: 3 },
  spec: {
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: ['2001:db8:200::/64', '198.51.100.0/24'],
    anycastCIDRs: ['2001:db8:300::/120', '203.0.113.0/28'],
    pinnedGrants: [{ anyNamespace: true }],
    anycastGrants: [{ anyNamespace: true }],
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
    claimKey: 'Deployment/app',
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

/**
 * Claims that give every entry what it asks for: its pinned-range addresses held by its pod,
 * its anycast addresses the group of its namespace and key. `except` leaves addresses out.
 */
export function claimsFor(
  entries: readonly AllocationEntry[],
  options: { pinnedCIDRs?: readonly string[]; except?: readonly string[] } = {},
): ClaimOf {
  const pinned = options.pinnedCIDRs ?? NODE_CONFIG.spec.pinnedCIDRs ?? [];
  const claims = new Map<string, AddressClaim>();
  const put = (address: string, spec: Omit<AddressClaim['spec'], 'address'>) => {
    if (!options.except?.includes(address) && !claims.has(address))
      claims.set(address, {
        apiVersion: API_VERSION,
        kind: ADDRESSCLAIM_KIND,
        metadata: { name: claimName(address) },
        spec: { address, ...spec },
      });
  };
  for (const e of entries) {
    const key = e.claimKey ?? `Pod/${e.pod}`;
    for (const ip of [e.ip6, ...(e.ip4 ? [e.ip4] : [])].filter((a) => cidrsContainIp(pinned, a)))
      put(ip, {
        kind: 'Pinned',
        namespace: e.namespace,
        key,
        holders: [{ node: 'node-a', pod: e.pod, uid: e.podUID }],
      });
    for (const ip of e.anycast)
      put(ip, { kind: 'Anycast', namespace: e.namespace, key, holders: [{ node: 'node-a' }] });
  }
  return (address) => claims.get(address);
}
