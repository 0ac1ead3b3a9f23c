// The versions a ClusterNetworkPolicy conformance report names.
import { clusterVersions } from '../conformance/run.js';
import type { Lab } from '../core/lab.js';
import { cnpCrd } from '../../shared/cnp-crd.js';

export async function conformanceVersions(lab: Lab): Promise<Record<string, string>> {
  const crd = cnpCrd('experimental');
  return {
    ...(await clusterVersions(lab)),
    'ClusterNetworkPolicy CRD (charts/flock/crds-upstream)': `network-policy-api ${crd.metadata.annotations['policy.networking.k8s.io/bundle-version'] ?? '?'}, ${crd.metadata.annotations['policy.networking.k8s.io/channel'] ?? '?'} channel`,
  };
}
