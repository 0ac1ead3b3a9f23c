// A policy flock cannot enforce is told to its owner: a Warning Event (PolicyNotEnforceable, or
// PolicyOverLimit for one over flock's size limit) on the NetworkPolicy or ClusterNetworkPolicy
// itself, where `kubectl describe` shows it; a pod of this node over flock's limits, which is
// isolated for it, gets one on the pod (PodOverLimit).
import { CLUSTER_NETWORK_POLICIES, apiVersionOf, type EventRecorder } from '@flock/kube';
import type { PolicyWarning } from './reconciler.js';
import type { PolicyProblem } from './state.js';

function involved(p: PolicyProblem) {
  const uid = p.uid ? { uid: p.uid } : {};
  switch (p.kind) {
    case 'ClusterNetworkPolicy':
      return {
        apiVersion: apiVersionOf(CLUSTER_NETWORK_POLICIES),
        kind: CLUSTER_NETWORK_POLICIES.kind,
        metadata: { name: p.name, ...uid },
      };
    case 'Pod':
      return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: p.name, namespace: p.namespace, ...uid },
      };
    default:
      return {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: p.name, namespace: p.namespace, ...uid },
      };
  }
}

export function policyWarnings(events: Pick<EventRecorder, 'event'>): PolicyWarning {
  return (p) =>
    void events.event(involved(p), {
      type: 'Warning',
      reason: p.reason ?? 'PolicyNotEnforceable',
      action: 'Enforce',
      note: p.message,
    });
}
