// Does kube-proxy on this node deliver a Service address yet? Its health check (kube-proxy-
// health.ts) counts local endpoints, not addresses: when the operator has just written a new
// load-balancer address into a Service's status, the health check may say 200 while kube-proxy
// has not synced the address yet, and what the router sends meanwhile ends in the node's
// blackhole of the range (measured on the lab: the first connection after the announcement,
// once in ten rollouts under load). So an address is announced only once kube-proxy's rules
// hold it.
//
// kube-proxy in nftables mode keeps every address it delivers (ClusterIPs, external and
// load-balancer IPs) in the verdict maps `service-ips` (with endpoints) and
// `no-endpoint-services` (without) of its tables `ip kube-proxy` and `ip6 kube-proxy`, keyed
// address . protocol . port: one `nft get element` tells. Without that table (kube-proxy in
// iptables or IPVS mode, or a replacement) there is nothing to read: the answer is yes and the
// health check alone gates, as before.
import { isIP } from 'node:net';
import type { Protocol } from '@flock/api';
import { run } from '@flock/exec';

/** Does kube-proxy here deliver `address` on `protocol`/`port` (or cannot it be told)? */
export type KubeProxyRules = (
  address: string,
  protocol: Protocol,
  port: number,
) => Promise<boolean>;

/** kube-proxy's maps (nftables mode) that hold the addresses it knows. */
export const KUBE_PROXY_TABLE = 'kube-proxy';
export const KUBE_PROXY_ADDRESS_MAPS = ['service-ips', 'no-endpoint-services'] as const;

const PROTOCOLS: Record<Protocol, string> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };
const NETNS_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The gate's key for one address of a Service: "address protocol port". */
export function rulesKey(address: string, protocol: Protocol, port: number): string {
  return `${address} ${protocol} ${port}`;
}

export function parseRulesKey(key: string): [string, Protocol, number] {
  const [address, protocol, port] = key.split(' ');
  return [address!, protocol as Protocol, Number(port)];
}

/** The real check: `nft` in this namespace, or in the named one (`ip netns exec NAME`). */
export function nftKubeProxyRules(netns?: string): KubeProxyRules {
  if (netns !== undefined && !NETNS_NAME.test(netns))
    throw new Error(`invalid network namespace name ${JSON.stringify(netns)}`);
  const nft = async (args: string[]) => {
    const [file, argv] =
      netns === undefined ? ['nft', args] : ['ip', ['netns', 'exec', netns, 'nft', ...args]];
    return run(file, argv, { okCodes: [0, 1], timeoutMs: 5_000 });
  };
  return async (address, protocol, port) => {
    const family = isIP(address);
    if (family === 0) throw new Error(`not an IP address: ${JSON.stringify(address)}`);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`bad port ${port}`);
    const proto = PROTOCOLS[protocol];
    if (!proto) throw new Error(`bad protocol ${JSON.stringify(protocol)}`);
    const table = family === 6 ? 'ip6' : 'ip';
    for (const map of KUBE_PROXY_ADDRESS_MAPS) {
      const element = `{ ${address} . ${proto} . ${port} }`;
      if ((await nft(['get', 'element', table, KUBE_PROXY_TABLE, map, element])).code === 0)
        return true;
    }
    // Not there: is kube-proxy's table there at all (nftables mode)?
    const tables = await nft(['list', 'tables', table]);
    if (tables.code !== 0) throw new Error(`nft list tables ${table}: ${tables.stderr.trim()}`);
    return !tables.stdout
      .split('\n')
      .some((l) => l.trim() === `table ${table} ${KUBE_PROXY_TABLE}`);
  };
}
