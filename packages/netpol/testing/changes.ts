// Random sequences of cluster changes for the incremental-translation property tests: pods come,
// go, change labels, addresses, ports or phase; namespaces change labels; policies come and go,
// cluster policies are also updated in place; nodes and pod ranges change; pods join and leave this node. A
// change yields a new State that shares every unchanged object with the previous one (as the
// agent's caches do), and now and then a fully re-parsed copy (every object new, same content).
import { Pod } from '@flock/api';
import fc from 'fast-check';
import {
  ClusterNetworkPolicy,
  LocalPod,
  Namespace,
  NetworkPolicy,
  Node,
  parseState,
  type State,
} from '../src/state.js';
import {
  arbitraryState,
  clusterPolicies,
  labels,
  nodeObjects,
  nodes,
  podRanges,
  portName,
  protocol,
  type NodeSpec,
} from './arbitrary.js';

const NAMESPACES = ['x', 'y', 'z'];

const podSpec = fc.record({
  ns: fc.constantFrom(...NAMESPACES),
  labels,
  v4: fc.option(fc.integer({ min: 0, max: 1023 }), { nil: undefined }),
  v6: fc.option(fc.integer({ min: 0, max: 0xffff }), { nil: undefined }),
  ports: fc.array(
    fc.record({ name: portName, containerPort: fc.integer({ min: 1, max: 65535 }), protocol }),
    { maxLength: 3 },
  ),
  failed: fc.boolean(),
});
type PodSpec = typeof podSpec extends fc.Arbitrary<infer T> ? T : never;

export type Change =
  | { kind: 'podAdd'; pod: PodSpec }
  | { kind: 'podRemove'; at: number }
  | { kind: 'podReplace'; at: number; pod: PodSpec }
  | { kind: 'podLabels'; at: number; labels: Record<string, string> }
  | { kind: 'namespaceLabels'; at: number; labels: Record<string, string> }
  | { kind: 'policyAdd'; policy: unknown }
  | { kind: 'policyRemove'; at: number }
  | { kind: 'clusterPolicyAdd'; spec: unknown }
  | { kind: 'clusterPolicyRemove'; at: number }
  | { kind: 'clusterPolicyReplace'; at: number; spec: unknown }
  | { kind: 'nodes'; nodes: NodeSpec[] }
  | { kind: 'podRanges'; ranges: string[] }
  | { kind: 'localAdd'; at: number }
  | { kind: 'localRemove'; at: number }
  | { kind: 'reparse' };

const at = fc.nat({ max: 50 });

export function arbitraryChange(): fc.Arbitrary<Change> {
  const extraPolicies = arbitraryState().map((s) => s.policies ?? []);
  return fc.oneof(
    { weight: 3, arbitrary: podSpec.map((pod) => ({ kind: 'podAdd' as const, pod })) },
    { weight: 2, arbitrary: at.map((i) => ({ kind: 'podRemove' as const, at: i })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(at, podSpec)
        .map(([i, pod]) => ({ kind: 'podReplace' as const, at: i, pod })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(at, labels)
        .map(([i, l]) => ({ kind: 'podLabels' as const, at: i, labels: l })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(at, labels)
        .map(([i, l]) => ({ kind: 'namespaceLabels' as const, at: i, labels: l })),
    },
    {
      weight: 1,
      arbitrary: extraPolicies
        .filter((p) => p.length > 0)
        .map((p) => ({ kind: 'policyAdd' as const, policy: p[0] })),
    },
    { weight: 1, arbitrary: at.map((i) => ({ kind: 'policyRemove' as const, at: i })) },
    {
      weight: 1,
      arbitrary: clusterPolicies
        .filter((p) => p.length > 0)
        .map((p) => ({ kind: 'clusterPolicyAdd' as const, spec: p[0] })),
    },
    { weight: 1, arbitrary: at.map((i) => ({ kind: 'clusterPolicyRemove' as const, at: i })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          at,
          clusterPolicies.filter((p) => p.length > 0),
        )
        .map(([i, p]) => ({ kind: 'clusterPolicyReplace' as const, at: i, spec: p[0] })),
    },
    { weight: 1, arbitrary: nodes.map((n) => ({ kind: 'nodes' as const, nodes: n })) },
    {
      weight: 1,
      arbitrary: podRanges.map((r) => ({ kind: 'podRanges' as const, ranges: r })),
    },
    { weight: 2, arbitrary: at.map((i) => ({ kind: 'localAdd' as const, at: i })) },
    { weight: 1, arbitrary: at.map((i) => ({ kind: 'localRemove' as const, at: i })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'reparse' as const }) },
  );
}

export function arbitraryHistory(maxChanges = 12) {
  return fc.record({
    start: arbitraryState(),
    changes: fc.array(arbitraryChange(), { minLength: 1, maxLength: maxChanges }),
  });
}

function podObject(name: string, p: PodSpec) {
  return Pod.parse({
    metadata: { name, namespace: p.ns, labels: p.labels },
    spec: { containers: [{ name: 'c', ports: p.ports }] },
    status: {
      phase: p.failed ? 'Failed' : 'Running',
      podIPs: [
        ...(p.v4 !== undefined ? [{ ip: `10.0.${p.v4 >> 8}.${p.v4 & 255}` }] : []),
        ...(p.v6 !== undefined ? [{ ip: `fd00::${p.v6.toString(16)}` }] : []),
      ],
    },
  });
}

const pick = <T>(list: readonly T[], i: number): T | undefined =>
  list.length ? list[i % list.length] : undefined;

/** The state after `change` (step: a number unique to this change, for new names). */
export function applyChange(state: State, change: Change, step: number): State {
  const s: State = { ...state };
  const without = <T>(list: readonly T[], item: T) => list.filter((x) => x !== item);
  const podKey = (p: Pod) => `${p.metadata.namespace}/${p.metadata.name}`;
  const isLocal = (p: Pod) => s.local.some((l) => `${l.namespace}/${l.name}` === podKey(p));
  switch (change.kind) {
    case 'podAdd':
      s.pods = [...s.pods, podObject(`q${step}`, change.pod)];
      break;
    case 'podRemove': {
      const p = pick(s.pods, change.at);
      if (p && !isLocal(p)) s.pods = without(s.pods, p);
      break;
    }
    case 'podReplace': {
      // Same name, new addresses/ports/phase (and namespace when it is not on this node).
      const p = pick(s.pods, change.at);
      if (!p) break;
      const spec = isLocal(p) ? { ...change.pod, ns: p.metadata.namespace } : change.pod;
      s.pods = s.pods.map((x) => (x === p ? podObject(p.metadata.name, spec) : x));
      break;
    }
    case 'podLabels': {
      const p = pick(s.pods, change.at);
      if (!p) break;
      const next = Pod.parse({ ...p, metadata: { ...p.metadata, labels: change.labels } });
      s.pods = s.pods.map((x) => (x === p ? next : x));
      break;
    }
    case 'namespaceLabels': {
      const n = pick(s.namespaces, change.at);
      if (!n) break;
      const next = Namespace.parse({ metadata: { ...n.metadata, labels: change.labels } });
      s.namespaces = s.namespaces.map((x) => (x === n ? next : x));
      break;
    }
    case 'policyAdd': {
      const raw = change.policy as { metadata: { namespace: string }; spec: unknown };
      s.policies = [
        ...s.policies,
        NetworkPolicy.parse({
          metadata: { name: `np-q${step}`, namespace: raw.metadata.namespace },
          spec: raw.spec,
        }),
      ];
      break;
    }
    case 'policyRemove': {
      const p = pick(s.policies, change.at);
      if (p) s.policies = without(s.policies, p);
      break;
    }
    case 'clusterPolicyAdd':
      s.clusterPolicies = [
        ...s.clusterPolicies,
        ClusterNetworkPolicy.parse({ metadata: { name: `cnp-q${step}` }, spec: change.spec }),
      ];
      break;
    case 'clusterPolicyRemove': {
      const p = pick(s.clusterPolicies, change.at);
      if (p) s.clusterPolicies = without(s.clusterPolicies, p);
      break;
    }
    case 'clusterPolicyReplace': {
      // An update: the same name, a new spec (tier, priority, subject or rules).
      const p = pick(s.clusterPolicies, change.at);
      if (!p) break;
      const next = ClusterNetworkPolicy.parse({ metadata: p.metadata, spec: change.spec });
      s.clusterPolicies = s.clusterPolicies.map((x) => (x === p ? next : x));
      break;
    }
    case 'nodes':
      s.nodes = nodeObjects(change.nodes).map((n) => Node.parse(n));
      break;
    case 'podRanges':
      s.podRanges = change.ranges;
      break;
    case 'localAdd': {
      const p = pick(s.pods, change.at);
      if (!p || isLocal(p)) break;
      s.local = [
        ...s.local,
        LocalPod.parse({
          namespace: p.metadata.namespace,
          name: p.metadata.name,
          interface: `q${step}`,
        }),
      ];
      break;
    }
    case 'localRemove': {
      const l = pick(s.local, change.at);
      if (l) s.local = without(s.local, l);
      break;
    }
    case 'reparse':
      return parseState(JSON.parse(JSON.stringify(s)));
  }
  return s;
}
