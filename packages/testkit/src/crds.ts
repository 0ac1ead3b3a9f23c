// sig-network's ClusterNetworkPolicy CRD as the chart ships it (charts/flock/crds-upstream: the
// upstream network-policy-api file, unmodified), for cluster-tier tests of what reads or writes
// ClusterNetworkPolicies.
import { join } from 'node:path';
import type { ControlPlane } from './controlplane.js';
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
  await kubectl(cp.kubeconfigPath, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    `crd/${CNP_CRD_NAME}`,
  ]);
}
