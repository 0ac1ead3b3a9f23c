// ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) in the terms translate() already has:
// which local pods a policy's subject selects, and each rule as a RuleView — `namespaces` and
// `pods` peers become namespaceSelector / podSelector peers, `networks` become ipBlocks, `nodes`
// stay node selectors, and `protocols` become NetworkPolicy ports. Policies are ordered by tier,
// then priority (lower first), then name: the API leaves ties to the implementation, and the name
// makes them deterministic. `domainNames` peers cannot be enforced (flock sees no DNS): they match
// nothing, which for the Accept rules they are allowed in is the API's "fail closed".
import {
  matchesSelector,
  type CnpProtocol,
  type LabelSelector,
  type Protocol,
  type Tier,
} from '@flock/api';
import type { PodInfo } from './cluster.js';
import type { RuleAction } from './ir.js';
import type { ClusterNetworkPolicy, Peer, PolicyPort } from './state.js';
import type { Direction, RuleView } from './translator.js';

export interface ClusterRuleView extends RuleView {
  action: RuleAction;
  comment: string;
}

export interface ClusterPolicyView {
  /** Unique to this view (so to its policy object): part of the tier cache's keys. */
  id: number;
  name: string;
  tier: Tier;
  priority: number;
  policy: ClusterNetworkPolicy;
  ingress: ClusterRuleView[];
  egress: ClusterRuleView[];
}

const ACTION: Record<string, RuleAction> = { Accept: 'accept', Deny: 'deny', Pass: 'pass' };
const PROTOCOLS: Protocol[] = ['TCP', 'UDP', 'SCTP'];

function portsOf(protocols: readonly CnpProtocol[] | null | undefined): PolicyPort[] {
  const out: PolicyPort[] = [];
  for (const p of protocols ?? []) {
    if (p.destinationNamedPort != null) {
      // The name carries its protocol on the pod (containerPort.protocol): any of them.
      for (const protocol of PROTOCOLS) out.push({ protocol, port: p.destinationNamedPort });
      continue;
    }
    const entries: [Protocol, typeof p.tcp][] = [
      ['TCP', p.tcp],
      ['UDP', p.udp],
      ['SCTP', p.sctp],
    ];
    for (const [protocol, match] of entries) {
      const port = match?.destinationPort;
      if (!port) continue;
      if (port.range) out.push({ protocol, port: port.range.start, endPort: port.range.end });
      else if (port.number != null) out.push({ protocol, port: port.number });
    }
  }
  return out;
}

interface AnyPeer {
  namespaces?: LabelSelector | null;
  pods?: { namespaceSelector?: LabelSelector | null; podSelector: LabelSelector } | null;
  nodes?: LabelSelector | null;
  networks?: string[] | null;
}

function ruleView(
  peers: readonly AnyPeer[],
  protocols: readonly CnpProtocol[] | null | undefined,
  action: string,
  comment: string,
): ClusterRuleView {
  const selectorPeers: Peer[] = [];
  const nodes: LabelSelector[] = [];
  for (const p of peers) {
    if (p.namespaces) selectorPeers.push({ namespaceSelector: p.namespaces });
    if (p.pods)
      selectorPeers.push({
        namespaceSelector: p.pods.namespaceSelector ?? {},
        podSelector: p.pods.podSelector,
      });
    if (p.nodes) nodes.push(p.nodes);
    for (const cidr of p.networks ?? []) selectorPeers.push({ ipBlock: { cidr } });
    // domainNames: nothing (see above).
  }
  return {
    peers: selectorPeers,
    nodes,
    ports: portsOf(protocols),
    action: ACTION[action] ?? 'deny',
    comment,
  };
}

// A view is a function of its policy object (state objects are read as immutable): kept, so that
// its peer lists keep their identity and their JSON is computed once (translate's peersJson).
const VIEWS = new WeakMap<ClusterNetworkPolicy, ClusterPolicyView>();
let views = 0;

function viewOf(policy: ClusterNetworkPolicy): ClusterPolicyView {
  const hit = VIEWS.get(policy);
  if (hit) return hit;
  const name = policy.metadata.name;
  const { tier, priority } = policy.spec;
  const label = (direction: Direction, i: number, rule: string | null | undefined) =>
    `${tier} ${name} ${direction}[${i}]${rule ? ` ${rule}` : ''}`;
  const view: ClusterPolicyView = {
    id: ++views,
    name,
    tier,
    priority,
    policy,
    ingress: (policy.spec.ingress ?? []).map((r, i) =>
      ruleView(r.from, r.protocols, r.action, label('ingress', i, r.name)),
    ),
    egress: (policy.spec.egress ?? []).map((r, i) =>
      ruleView(r.to, r.protocols, r.action, label('egress', i, r.name)),
    ),
  };
  VIEWS.set(policy, view);
  return view;
}

/** The policies in order of evaluation: Admin before Baseline, then priority, then name. */
export function clusterPolicyViews(policies: readonly ClusterNetworkPolicy[]): ClusterPolicyView[] {
  return policies
    .map(viewOf)
    .sort(
      (a, b) =>
        (a.tier === b.tier ? 0 : a.tier === 'Admin' ? -1 : 1) ||
        a.priority - b.priority ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
}

/** Does the policy's subject select this pod? (Its namespace's labels are given.) */
export function subjectSelects(
  view: ClusterPolicyView,
  pod: PodInfo,
  namespaceLabels: Record<string, string>,
): boolean {
  const { namespaces, pods } = view.policy.spec.subject;
  if (namespaces) return matchesSelector(namespaces, namespaceLabels);
  if (pods)
    return (
      matchesSelector(pods.namespaceSelector ?? undefined, namespaceLabels) &&
      matchesSelector(pods.podSelector, pod.labels)
    );
  return false;
}
