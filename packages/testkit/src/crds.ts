// sig-network's ClusterNetworkPolicy CRD as the chart ships it (charts/flock/crds-upstream: the
// upstream network-policy-api file, unmodified), for cluster-tier tests of what reads or writes
// ClusterNetworkPolicies.
import { join } from 'node:path';
import type { ControlPlane } from './controlplane.js';
import { eventually } from './eventually.js';
import { kubectl } from './kubectl.js';
import { repoRoot } from './repo.js';

export const CNP_CRD_NAME = 'clusternetworkpolicies.policy.networking.k8s.io';

/** The chart's copy, from this file in src/ or in dist/src/. */
const UPSTREAM = join(
  repoRoot(import.meta.dirname),
  'charts/flock/crds-upstream/network-policy-api',
);

/** The CRD file of one channel of the release the chart ships (VERSION beside it). */
export function cnpCrdFile(channel: 'standard' | 'experimental' = 'experimental'): string {
  return join(UPSTREAM, channel, 'policy.networking.k8s.io_clusternetworkpolicies.yaml');
}

/** Apply the CRD (server-side, as helm would) and wait until it is Established. */
export async function installCnpCrd(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  channel: 'standard' | 'experimental' = 'experimental',
): Promise<void> {
  await kubectl(cp.kubeconfigPath, ['apply', '--server-side', '-f', cnpCrdFile(channel)]);
  await waitForCrds(cp.kubeconfigPath, [CNP_CRD_NAME]);
}

interface CrdList {
  items: {
    metadata: { name: string };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

/**
 * Wait until every named CRD (plural.group) is Established. Polled rather than `kubectl wait`,
 * which fails at once on a CRD whose status has no conditions yet (just created).
 */
export async function waitForCrds(
  kubeconfig: string,
  names: readonly string[],
  timeoutMs = 60_000,
): Promise<void> {
  await eventually(
    `CRDs established: ${names.join(', ')}`,
    async () => {
      const r = await kubectl(kubeconfig, ['get', 'crd', ...names, '-o', 'json']).catch(
        () => undefined,
      );
      if (!r) return false;
      const list = JSON.parse(r.stdout) as CrdList | CrdList['items'][number];
      const items = 'items' in list ? list.items : [list];
      const established = (c: CrdList['items'][number]) =>
        c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
      return items.length === names.length && items.every(established);
    },
    { timeoutMs, intervalMs: 200 },
  );
}
