// Small builders of Kubernetes-shaped objects for tests and benchmarks (not exported by the
// package): they write what a kubectl user would, so tests read like NetworkPolicy YAML.
import { pod as apiPod } from '@flock/api/testing';
import type { StateInput } from '../src/state.js';

export interface PortDecl {
  name: string;
  port: number;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export function namespace(name: string, labels: Record<string, string> = {}) {
  return { metadata: { name, labels } };
}

export function pod(
  ref: string,
  labels: Record<string, string>,
  ips: string[],
  ports: PortDecl[] = [],
  extra: Record<string, unknown> = {},
) {
  const [ns, name] = ref.split('/') as [string, string];
  return {
    ...apiPod({
      name,
      namespace: ns,
      labels,
      nodeName: undefined,
      podIPs: ips,
      ports: ports.map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' })),
    }),
    ...extra,
  };
}

export function policy(ref: string, spec: Record<string, unknown>) {
  const [ns, name] = ref.split('/') as [string, string];
  return { metadata: { name, namespace: ns }, spec };
}

/** A ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2). */
export function clusterPolicy(
  name: string,
  tier: 'Admin' | 'Baseline',
  priority: number,
  spec: Record<string, unknown>,
) {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier, priority, ...spec },
  };
}

/** A Node with these labels and status.addresses (InternalIP, then a Hostname entry). */
export function node(name: string, labels: Record<string, string>, ips: string[]) {
  return {
    metadata: { name, labels },
    status: {
      addresses: [
        ...ips.map((address) => ({ type: 'InternalIP', address })),
        { type: 'Hostname', address: name },
      ],
    },
  };
}

export function local(ref: string, iface: string, anycast?: string[]) {
  const [ns, name] = ref.split('/') as [string, string];
  return { namespace: ns, name, interface: iface, ...(anycast ? { anycast } : {}) };
}

export function state(parts: Partial<Record<keyof StateInput, unknown[]>>): StateInput {
  return {
    namespaces: (parts.namespaces ?? []) as StateInput['namespaces'],
    pods: (parts.pods ?? []) as StateInput['pods'],
    policies: (parts.policies ?? []) as StateInput['policies'],
    clusterPolicies: (parts.clusterPolicies ?? []) as StateInput['clusterPolicies'],
    nodes: (parts.nodes ?? []) as StateInput['nodes'],
    local: (parts.local ?? []) as StateInput['local'],
  };
}
