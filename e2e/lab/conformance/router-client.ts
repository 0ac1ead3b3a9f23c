// What a suite whose specs connect from outside the cluster needs (suites.ts `fromRouter`):
// ginkgo in the router's namespace, a kubeconfig naming the API server where the router reaches
// it (the lab's admin kubeconfig may point at a bridge on the host), and the sample Pool's
// Service ranges granted to the namespaces the e2e framework creates for those specs.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { POOLS } from '@flock/kube';
import type { Lab } from '../core/lab.js';
import { NODE_API_SERVER, samplePool } from '../core/plan.js';

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
  const kubeconfig = join(lab.options.dir, 'router.kubeconfig');
  await writeFile(kubeconfig, lab.cp!.kubeconfigYamlVia(NODE_API_SERVER), { mode: 0o600 });
  return { netns: lab.router!.ns.name, kubeconfig };
}
