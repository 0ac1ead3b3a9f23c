// A policy flock cannot enforce is told to its owner: a Warning Event (PolicyNotEnforceable) on
// the NetworkPolicy or ClusterNetworkPolicy itself, where `kubectl describe` shows it.
import { CLUSTER_NETWORK_POLICIES, apiVersionOf, type EventRecorder } from '@flock/kube';
import type { PolicyWarning } from './reconciler.js';

export function policyWarnings(events: Pick<EventRecorder, 'event'>): PolicyWarning {
  return (p) =>
    void events.event(
      p.kind === 'ClusterNetworkPolicy'
        ? {
            apiVersion: apiVersionOf(CLUSTER_NETWORK_POLICIES),
            kind: CLUSTER_NETWORK_POLICIES.kind,
            metadata: { name: p.name, ...(p.uid ? { uid: p.uid } : {}) },
          }
        : {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'NetworkPolicy',
            metadata: { name: p.name, namespace: p.namespace, ...(p.uid ? { uid: p.uid } : {}) },
          },
      { type: 'Warning', reason: 'PolicyNotEnforceable', action: 'Enforce', note: p.message },
    );
}
