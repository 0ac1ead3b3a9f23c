// The node the routing benches plan for: a NodeConfig spec and n pods with their allocations
// (a tenth pinned, a tenth serving one of 16 anycast addresses), all Running and Ready.
import type { NodeConfigSpec, Pod } from '@flock/api';
import type { AllocationEntry } from '../../src/store/index.js';
import type { PodOf } from '../../src/node/liveness.js';

export const BENCH_SPEC: NodeConfigSpec = {
  pool: 'bench',
  cidr6: '2001:db8:100::/64',
  cidr4: '10.0.0.0/16',
  pinnedCIDRs: ['2001:db8:200::/64'],
  anycastCIDRs: ['2001:db8:300::/112'],
  bgp: { asn: 64512, peers: [{ address: '2001:db8:ffff::1', asn: 65000 }] },
};

export function benchNode(n: number): { entries: AllocationEntry[]; podOf: PodOf } {
  const entries: AllocationEntry[] = [];
  const pods = new Map<string, Pod>();
  for (let i = 0; i < n; i++) {
    const hex = (i + 1).toString(16);
    const name = `pod-${i}`;
    entries.push({
      containerID: `c${i}`,
      ifname: 'eth0',
      namespace: 'default',
      pod: name,
      podUID: `uid-${i}`,
      ip6: i % 10 === 0 ? `2001:db8:200::${hex}` : `2001:db8:100::${hex}`,
      ip4: `10.0.${i >> 8}.${i & 255}`,
      pinned: i % 10 === 0,
      anycast: i % 10 === 1 ? [`2001:db8:300::${(i % 16) + 1}`] : [],
      state: 'committed',
      createdAt: '2026-11-29T10:00:00.000Z',
    });
    pods.set(`default/${name}`, {
      metadata: { namespace: 'default', name, uid: `uid-${i}` },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
  }
  return { entries, podOf: (ns: string, name: string) => pods.get(`${ns}/${name}`) };
}
