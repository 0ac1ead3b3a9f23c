// What a suite whose specs connect from outside the cluster needs (suites.ts `fromRouter`):
// ginkgo in the router's namespace, a kubeconfig naming the API server where the router reaches
// it (the lab's admin kubeconfig may point at a bridge on the host), and the sample Pool's
// Service ranges granted to the namespaces the e2e framework creates for those specs.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { POOLS } from '@flock/kube';
import type { Lab } from '../core/lab.js';
import { NODE_API_SERVER, ROUTER_UPLINKS4, samplePool } from '../core/plan.js';

/**
 * The router's own IPv4 source while a suite runs from it (RFC 6598 space: outside every lab
 * range). Every IPv4 address the router has is in ROUTER_UPLINKS4, the /16 the ESIPP specs take
 * for the nodes' subnet (they compare a client's address with the node InternalIP's /16).
 */
export const CLIENT_SOURCE4 = '100.64.0.1';
const CLIENT_NAT_TABLE = 'flab_client';

export interface RouterClient {
  /** The router's network namespace (ginkgo runs there). */
  netns: string;
  /** Admin credentials, the API server at its address on the control plane's link. */
  kubeconfig: string;
}

/** A Service-range grant for the namespaces of these e2e frameworks (their `e2e-framework` label). */
export function e2eServiceGrant(frameworks: readonly string[]): object {
  return {
    namespaceSelector: {
      matchExpressions: [{ key: 'e2e-framework', operator: 'In', values: [...frameworks] }],
    },
  };
}

export async function routerClient(
  lab: Lab,
  o: { frameworks: readonly string[] },
): Promise<RouterClient> {
  const pool = samplePool(lab.nodePrefix4) as { spec: { services: { grants: object[] } } };
  pool.spec.services.grants.push(e2eServiceGrant(o.frameworks));
  await lab.apply(POOLS, pool);
  // A client outside the cluster has an address outside every node's subnet (the ESIPP specs
  // check the source a pod sees against the node's /64): the router's link addresses share the
  // nodes' /64s, so they are deprecated for source selection (RFC 6724 rule 3) and the router's
  // own connections leave from its loopback address. BGP and the nodes' routes are unaffected.
  for (const plan of lab.plans)
    await lab.router!.ns.exec('ip', [
      '-6',
      'addr',
      'change',
      `${plan.router6}/64`,
      'dev',
      plan.routerIf,
      'preferred_lft',
      '0',
    ]);
  // IPv4 has no such deprecation: the router's own IPv4 connections (a socket's, so never a
  // forwarded packet) are translated to CLIENT_SOURCE4, which the nodes' default routes reach.
  const ns = lab.router!.ns;
  await ns.exec('ip', ['addr', 'replace', `${CLIENT_SOURCE4}/32`, 'dev', 'lo']);
  await ns.exec('nft', ['add', 'table', 'ip', CLIENT_NAT_TABLE]);
  await ns.exec('nft', [
    'add chain ip',
    CLIENT_NAT_TABLE,
    'post { type nat hook postrouting priority srcnat ; }',
  ]);
  await ns.exec('nft', ['flush', 'chain', 'ip', CLIENT_NAT_TABLE, 'post']);
  await ns.exec('nft', [
    'add rule ip',
    CLIENT_NAT_TABLE,
    `post meta skuid 0 ip saddr ${ROUTER_UPLINKS4} snat to ${CLIENT_SOURCE4}`,
  ]);
  // The rest of the world behind the router: a default route at the lowest preference, into
  // the loopback, where what is not the router's own is dropped. Without it, an address no
  // node announces any more has no route at all and a client's connect() fails at once
  // (ENETUNREACH), which the specs' "no longer reachable" checks count as an answer; with it,
  // the datagram leaves and nothing comes back, as from an Internet address serving nothing.
  // (No dummy link: this kernel has no dummy driver.)
  for (const family of ['-4', '-6'])
    await ns.exec('ip', [family, 'route', 'replace', 'default', 'dev', 'lo', 'metric', '4096']);
  const kubeconfig = join(lab.options.dir, 'router.kubeconfig');
  await writeFile(kubeconfig, lab.cp!.kubeconfigYamlVia(NODE_API_SERVER), { mode: 0o600 });
  return { netns: lab.router!.ns.name, kubeconfig };
}
