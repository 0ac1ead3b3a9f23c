// Does kube-proxy on this node deliver a Service address yet? Its health check (kube-proxy-
// health.ts) counts local endpoints, not addresses: when the operator has just written a new
// load-balancer address into a Service's status, the health check may say 200 while kube-proxy
// has not synced the address yet, and what the router sends meanwhile ends in the node's
// blackhole of the range (seen on the lab: the first connection after the announcement, twice
// in fourteen rollouts under load). So an address is announced only once kube-proxy holds it.
//
// kube-proxy in nftables mode keeps every address it delivers (ClusterIPs, external and
// load-balancer IPs) in the verdict maps `service-ips` (with endpoints) and
// `no-endpoint-services` (without) of its tables `ip kube-proxy` and `ip6 kube-proxy`, keyed
// address . protocol . port. One read lists those maps (`nft -j list map`, four commands
// however many Services there are). Without the table of a family (kube-proxy in iptables or
// IPVS mode, or a replacement) there is nothing to read: every address of that family counts as
// held and the health check alone gates, as before.
import { isIP } from 'node:net';
import type { Protocol } from '@flock/api';
import { run } from '@flock/exec';
import { canonicalAddress } from '@flock/ipam';
import { z } from 'zod';

/** What kube-proxy holds, as read once. */
export interface KubeProxyView {
  has(address: string, protocol: Protocol, port: number): boolean;
}

/** Read kube-proxy's view now. */
export type ReadKubeProxy = () => Promise<KubeProxyView>;

export const KUBE_PROXY_TABLE = 'kube-proxy';
export const KUBE_PROXY_ADDRESS_MAPS = ['service-ips', 'no-endpoint-services'] as const;

const NETNS_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** "address protocol port", the address canonical and the protocol as the API spells it. */
export function rulesKey(address: string, protocol: Protocol, port: number): string {
  return `${canonicalAddress(address) ?? address} ${protocol} ${port}`;
}

const Element = z.tuple([
  z.object({ concat: z.tuple([z.string(), z.string(), z.union([z.number(), z.string()])]) }),
  z.unknown(),
]);
const MapListing = z.object({
  nftables: z.array(
    z.union([z.object({ map: z.object({ elem: z.array(z.unknown()).optional() }) }), z.unknown()]),
  ),
});

/** The keys of one `nft -j list map` of kube-proxy's (elements of another shape are skipped). */
export function parseMapListing(json: string): string[] {
  const keys: string[] = [];
  for (const item of MapListing.parse(JSON.parse(json)).nftables) {
    const elems = (item as { map?: { elem?: unknown[] } }).map?.elem ?? [];
    for (const raw of elems) {
      const e = Element.safeParse(raw);
      if (!e.success) continue;
      const [address, proto, port] = e.data[0].concat;
      const protocol = proto.toUpperCase();
      if (protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP') continue;
      keys.push(rulesKey(address, protocol, Number(port)));
    }
  }
  return keys;
}

/** The real read: `nft` in this namespace, or in the named one (`ip netns exec NAME`). */
export function nftReadKubeProxy(netns?: string): ReadKubeProxy {
  if (netns !== undefined && !NETNS_NAME.test(netns))
    throw new Error(`invalid network namespace name ${JSON.stringify(netns)}`);
  const nft = (args: string[]) => {
    const [file, argv] =
      netns === undefined ? ['nft', args] : ['ip', ['netns', 'exec', netns, 'nft', ...args]];
    return run(file, argv, { okCodes: [0, 1], timeoutMs: 10_000 });
  };
  /** The keys of a family's maps; undefined when kube-proxy has no table of that family. */
  const readFamily = async (family: 'ip' | 'ip6'): Promise<Set<string> | undefined> => {
    const keys = new Set<string>();
    for (const map of KUBE_PROXY_ADDRESS_MAPS) {
      const listed = await nft(['-j', 'list', 'map', family, KUBE_PROXY_TABLE, map]);
      if (listed.code === 0) {
        for (const key of parseMapListing(listed.stdout)) keys.add(key);
        continue;
      }
      const tables = await nft(['list', 'tables', family]);
      if (tables.code !== 0) throw new Error(`nft list tables ${family}: ${tables.stderr.trim()}`);
      const present = tables.stdout
        .split('\n')
        .some((l) => l.trim() === `table ${family} ${KUBE_PROXY_TABLE}`);
      if (!present) return undefined;
      throw new Error(`nft list map ${family} ${KUBE_PROXY_TABLE} ${map}: ${listed.stderr.trim()}`);
    }
    return keys;
  };
  return async () => {
    const [v4, v6] = await Promise.all([readFamily('ip'), readFamily('ip6')]);
    return {
      has: (address, protocol, port) => {
        const keys = isIP(address) === 6 ? v6 : v4;
        return keys === undefined || keys.has(rulesKey(address, protocol, port));
      },
    };
  };
}
