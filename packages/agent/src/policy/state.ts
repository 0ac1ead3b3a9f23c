// The input of @flock/netpol's translate(), built from the agent's own knowledge: this node's
// pods are its allocation-store entries (addresses from the store — the Pod's status.podIPs is
// only set after ADD returns — host veth from the container ID, anycast as validated at ADD),
// every other pod of the cluster is a peer known by status.podIPs (those inside the pod ranges
// of its node, when admitPeer says which). Deterministic.
import { matchesSelector, type Pod } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import { NAMESPACE_NAME_LABEL, type LocalPod, type NetworkPolicy, type State } from '@flock/netpol';
import { hostVethName } from '../datapath/index.js';
import { overLimit } from '../node/pod-trim.js';
import { hasPodAddress } from '../node/trimmed-pod.js';
import type { PolicyNamespace } from './caches.js';
import type { PolicyNode } from './policy-nodes.js';
import type { CheckedClusterPolicy } from './cluster-validate.js';
import type { CheckedPolicy } from './validate.js';

/**
 * Label of the stand-in of a local pod whose Pod object is unknown (gone, or another pod now
 * has its name). The key is not a valid Kubernetes label key, so no real pod can carry it.
 */
export const UNKNOWN_POD_LABEL = 'flock:unknown-pod';
/** Name of the policy that isolates such pods (not a valid object name: no clash possible). */
export const UNKNOWN_POD_POLICY = 'flock:unknown-pods';

/** One allocation of this node (committed, or the pending one whose ADD is being finished). */
export interface LocalAttachment {
  entry: AllocationEntry;
  /** The Pod as last seen; undefined when it was never seen. */
  pod: Pod | undefined;
  /**
   * The source addresses it may use (claims/ownership.ts usableSources); absent: all of its
   * addresses and anycast addresses.
   */
  sources?: { addresses: readonly string[]; anycast: readonly string[] };
  /** Being torn down (AllocationEntry.removing): isolated both ways, whatever its Pod. */
  removing?: boolean;
}

export interface PolicyInputs {
  namespaces: readonly PolicyNamespace[];
  /** Every pod of the cluster (this node's included: they are recognised and skipped). */
  pods: readonly Pod[];
  policies: readonly CheckedPolicy[];
  /** ClusterNetworkPolicies (none when the CRD is not installed). */
  clusterPolicies?: readonly CheckedClusterPolicy[];
  /** Nodes, for ClusterNetworkPolicy `nodes` peers. */
  nodes?: readonly PolicyNode[];
  locals: readonly LocalAttachment[];
  /**
   * A peer with only the addresses policy may use (undefined: none); absent: all of them. See
   * peer-addresses.ts: status.podIPs are the word of the pod's node.
   */
  admitPeer?: (pod: Pod) => Pod | undefined;
  /** Where the cluster's pods have their addresses (fail-closed Deny of unknown peers). */
  podRanges?: readonly string[];
}

/**
 * A policy that cannot be enforced as written and selects a pod of this node, or a pod of this
 * node over flock's limits (pod-trim.ts), which no policy can select as written.
 */
export interface PolicyProblem {
  /** A NetworkPolicy unless said otherwise. */
  kind?: 'ClusterNetworkPolicy' | 'Pod';
  /** '' for a ClusterNetworkPolicy (cluster-scoped). */
  namespace: string;
  name: string;
  uid?: string;
  message: string;
  /** The Event's reason when not PolicyNotEnforceable: the object is over flock's limits. */
  reason?: 'PolicyOverLimit' | 'PodOverLimit';
}

export interface BuiltState {
  state: State;
  problems: PolicyProblem[];
  /** `namespace/pod` of local attachments whose Pod is unknown (isolated). */
  unknownPods: string[];
}

const podKey = (namespace: string, name: string) => `${namespace}/${name}`;

function addresses(entry: AllocationEntry): { ip: string }[] {
  return [{ ip: entry.ip6 }, ...(entry.ip4 ? [{ ip: entry.ip4 }] : [])];
}

/** Is this attachment's Pod the one it was made for (same UID)? */
function knows(local: LocalAttachment): local is LocalAttachment & { pod: Pod } {
  const uid = local.pod?.metadata.uid;
  return local.pod !== undefined && (uid === undefined || uid === local.entry.podUID);
}

/** The attachment that keeps the pod's own name: the newest one of the pod's current UID. */
function primaries(locals: readonly LocalAttachment[]): Map<string, LocalAttachment> {
  const out = new Map<string, LocalAttachment>();
  for (const l of locals) {
    if (!knows(l)) continue;
    const key = podKey(l.entry.namespace, l.entry.pod);
    const best = out.get(key);
    if (
      !best ||
      l.entry.createdAt > best.entry.createdAt ||
      (l.entry.createdAt === best.entry.createdAt && l.entry.containerID < best.entry.containerID)
    )
      out.set(key, l);
  }
  return out;
}

export function buildPolicyState(input: PolicyInputs): BuiltState {
  const vethOf = (l: LocalAttachment) => hostVethName(l.entry.containerID, l.entry.ifname);
  const locals = [...input.locals].sort((a, b) => (vethOf(a) < vethOf(b) ? -1 : 1));
  const primary = primaries(locals);
  // The pods of this node whose Pod is known (primary's), by namespace then name: the walk over
  // every pod of the cluster below builds no key.
  const localNames = new Map<string, Set<string>>();
  for (const { entry } of primary.values()) {
    const names = localNames.get(entry.namespace) ?? new Set<string>();
    localNames.set(entry.namespace, names.add(entry.pod));
  }
  const pods: Pod[] = [];
  const local: LocalPod[] = [];
  const unknownPods: string[] = [];
  const unknownNamespaces = new Set<string>();
  const localLabels: { namespace: string; labels: Record<string, string> }[] = [];
  const problems: PolicyProblem[] = [];

  for (const l of locals) {
    const { entry } = l;
    const veth = hostVethName(entry.containerID, entry.ifname);
    const key = podKey(entry.namespace, entry.pod);
    // Its labels were not kept: isolated like an unknown pod, and said so on the pod.
    const over = knows(l) && !l.removing ? overLimit(l.pod) : undefined;
    if (over)
      problems.push({
        kind: 'Pod',
        namespace: entry.namespace,
        name: entry.pod,
        uid: entry.podUID,
        message: `pod ${key}: ${over} — isolated both ways until it has fewer`,
        reason: 'PodOverLimit',
      });
    const known = knows(l) && !l.removing && !over;
    // A second attachment of the same pod (an old sandbox) or an unknown pod: a name of its own.
    const name = known && primary.get(key) === l ? entry.pod : `${entry.pod}@${veth}`;
    const labels = known ? (l.pod.metadata.labels ?? {}) : { [UNKNOWN_POD_LABEL]: 'true' };
    if (!known) {
      if (!l.removing && !over) unknownPods.push(key);
      unknownNamespaces.add(entry.namespace);
    }
    pods.push({
      metadata: { namespace: entry.namespace, name, labels },
      spec: { containers: known ? (l.pod.spec?.containers ?? []) : [] },
      status: {
        ...(known && l.pod.status?.phase ? { phase: l.pod.status.phase } : {}),
        podIPs: l.sources ? l.sources.addresses.map((ip) => ({ ip })) : addresses(entry),
      },
    });
    const anycast = l.sources ? [...l.sources.anycast] : entry.anycast;
    // A pod being torn down takes no more hostPort traffic.
    const hostPorts = entry.hostPorts?.length && !l.removing ? { hostPorts: entry.hostPorts } : {};
    local.push({ namespace: entry.namespace, name, interface: veth, anycast, ...hostPorts });
    localLabels.push({ namespace: entry.namespace, labels });
  }

  for (const pod of input.pods) {
    const { namespace, name } = pod.metadata;
    // This node's: from the store.
    if (localNames.get(namespace)?.has(name)) continue;
    if (pod.spec?.hostNetwork) continue; // the node's addresses, not the pod's
    if (!hasPodAddress(pod)) continue; // nothing to match
    if (overLimit(pod)) continue; // its labels were not kept: it matches no selector
    const peer = input.admitPeer ? input.admitPeer(pod) : pod;
    if (peer) pods.push(peer);
  }

  const policies: NetworkPolicy[] = input.policies.map((p) => p.policy);
  for (const namespace of [...unknownNamespaces].sort()) {
    policies.push({
      metadata: { namespace, name: UNKNOWN_POD_POLICY },
      spec: {
        podSelector: { matchLabels: { [UNKNOWN_POD_LABEL]: 'true' } },
        policyTypes: ['Ingress', 'Egress'],
      },
    });
  }
  for (const { policy, problem, reason } of input.policies) {
    if (!problem) continue;
    const { namespace, name, uid } = policy.metadata;
    const selects = localLabels.some(
      (l) => l.namespace === namespace && matchesSelector(policy.spec.podSelector, l.labels),
    );
    if (selects)
      problems.push({
        namespace,
        name,
        ...(uid ? { uid } : {}),
        message: problem,
        ...(reason ? { reason } : {}),
      });
  }
  const clusterPolicies = (input.clusterPolicies ?? []).map((c) => c.policy);
  problems.push(...clusterProblems(input, localLabels));

  return {
    state: {
      namespaces: namespacesFor(input.namespaces, pods, policies),
      pods,
      policies,
      clusterPolicies,
      nodes: [...(input.nodes ?? [])],
      local,
      podRanges: [...(input.podRanges ?? [])],
    },
    problems,
    unknownPods,
  };
}

/** ClusterNetworkPolicies that cannot be enforced as written and select a pod of this node. */
function clusterProblems(
  input: PolicyInputs,
  locals: readonly { namespace: string; labels: Record<string, string> }[],
): PolicyProblem[] {
  const checked = (input.clusterPolicies ?? []).filter((c) => c.problem);
  if (checked.length === 0) return [];
  const nsLabels = new Map(
    input.namespaces.map((n) => [
      n.metadata.name,
      { ...n.metadata.labels, [NAMESPACE_NAME_LABEL]: n.metadata.name },
    ]),
  );
  return checked.flatMap(({ policy, problem, reason }) => {
    const { namespaces, pods } = policy.spec.subject;
    const selects = locals.some((l) => {
      const labels = nsLabels.get(l.namespace) ?? { [NAMESPACE_NAME_LABEL]: l.namespace };
      if (namespaces) return matchesSelector(namespaces, labels);
      return (
        pods != null &&
        matchesSelector(pods.namespaceSelector ?? undefined, labels) &&
        matchesSelector(pods.podSelector, l.labels)
      );
    });
    const { name, uid } = policy.metadata;
    return selects
      ? [
          {
            kind: 'ClusterNetworkPolicy' as const,
            namespace: '',
            name,
            ...(uid ? { uid } : {}),
            message: problem ?? '',
            ...(reason ? { reason } : {}),
          },
        ]
      : [];
  });
}

/**
 * The cached namespaces, plus a bare one for each namespace a pod or policy names that the
 * namespace cache has not seen yet (caches are only eventually consistent with each other).
 */
function namespacesFor(
  cached: readonly PolicyNamespace[],
  pods: readonly Pod[],
  policies: readonly NetworkPolicy[],
): PolicyNamespace[] {
  const known = new Set(cached.map((n) => n.metadata.name));
  const missing = new Set<string>();
  for (const o of [...pods, ...policies]) {
    if (!known.has(o.metadata.namespace)) missing.add(o.metadata.namespace);
  }
  return [...cached, ...[...missing].sort().map((name) => ({ metadata: { name } }))];
}
