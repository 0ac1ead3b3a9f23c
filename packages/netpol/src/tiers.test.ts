// The tier cache of IncrementalTranslator: what a change leaves alone is the previous state's
// object (so renderTable and diffTables skip it), what it touches is built again — and the IR is
// always translate()'s (incremental.test.ts checks that on random histories).
import { describe, expect, it } from 'vitest';
import type { TierIR } from './ir.js';
import { renderTable } from './render.js';
import { Pod } from '@flock/api';
import { ClusterNetworkPolicy, Namespace, Node, parseState, type State } from './state.js';
import { clusterPolicy, local, namespace, node, pod, state } from '../testing/builders.js';
import { IncrementalTranslator, translate } from './translate.js';

const start = parseState(
  state({
    namespaces: [namespace('x', { team: 'a' }), namespace('y', { team: 'b' })],
    pods: [
      pod('x/p', { app: 'web' }, ['10.0.0.1'], [{ name: 'http', port: 8080 }]),
      pod('x/q', { app: 'web' }, ['10.0.0.2'], [{ name: 'http', port: 8080 }]),
      pod('y/r', { app: 'db' }, ['10.0.1.1']),
    ],
    clusterPolicies: [
      clusterPolicy('adm', 'Admin', 1, {
        subject: { namespaces: { matchLabels: { team: 'a' } } },
        ingress: [
          { action: 'Deny', from: [{ namespaces: { matchLabels: { team: 'b' } } }] },
          {
            action: 'Accept',
            from: [{ namespaces: {} }],
            protocols: [{ destinationNamedPort: 'http' }],
          },
        ],
        egress: [{ action: 'Deny', to: [{ nodes: { matchLabels: { role: 'infra' } } }] }],
      }),
      clusterPolicy('base', 'Baseline', 1, {
        subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } } },
        ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }],
      }),
    ],
    nodes: [node('n1', { role: 'infra' }, ['192.168.0.1'])],
    local: [local('x/p', 'fl-p'), local('x/q', 'fl-q')],
  }),
);

const tiersOf = (ir: ReturnType<typeof translate>): (TierIR | undefined)[] =>
  ir.pods.flatMap((p) => [p.ingress?.admin, p.ingress?.baseline, p.egress?.admin]);

/** Translate `next` after `start` incrementally; also check it against translate(). */
function step(next: (s: State) => State) {
  const tr = new IncrementalTranslator();
  const before = tr.translate(start);
  const after = tr.translate(next(start));
  expect(after).toEqual(translate(next(start)));
  return { before: tiersOf(before), after: tiersOf(after) };
}

const replacePod = (s: State, key: string, change: (p: Pod) => unknown): State => ({
  ...s,
  pods: s.pods.map((p) =>
    `${p.metadata.namespace}/${p.metadata.name}` === key ? Pod.parse(change(p)) : p,
  ),
});

describe('IncrementalTranslator: the tier cache', () => {
  it('pods with the same rules share one tier object, kept while nothing it reads changes', () => {
    const { before, after } = step((s) => ({
      ...s,
      pods: [...s.pods, Pod.parse(pod('y/new', { app: 'db' }, ['10.0.1.9']))],
    }));
    expect(before[0]).toBeDefined();
    expect(before[0]).toBe(before[3]); // x/p and x/q: the same admin ingress tier
    // The new pod changes the peer set's content, not its name: the same objects.
    after.forEach((t, i) => expect(t).toBe(before[i]));
    const tr = new IncrementalTranslator();
    const first = renderTable(tr.translate(start));
    const second = renderTable(tr.translate({ ...start, pods: [...start.pods] }));
    const tierChains = (t: typeof first) =>
      t.chains.filter((c) => /^(admin|baseline)_/.test(c.name));
    tierChains(second).forEach((c, i) => expect(c.lines).toBe(tierChains(first)[i]?.lines));
  });

  it('a local pod label change rebuilds what selects it', () => {
    const { before, after } = step((s) =>
      replacePod(s, 'x/q', (p) => ({ ...p, metadata: { ...p.metadata, labels: { app: 'api' } } })),
    );
    expect(after[4]).toBeUndefined(); // x/q leaves the Baseline subject
    expect(after[1]).toBe(before[1]);
  });

  it('a local pod named-port change rebuilds its ingress tier only', () => {
    const { before, after } = step((s) =>
      replacePod(s, 'x/q', (p) => ({
        ...p,
        spec: { containers: [{ name: 'main', ports: [{ name: 'http', containerPort: 9000 }] }] },
      })),
    );
    expect(after[3]).not.toEqual(before[3]);
    expect(after[0]).toBe(before[0]);
    expect(after[5]).toBe(before[5]);
  });

  it('a namespace label change rebuilds the tiers of its pods', () => {
    const { after } = step((s) => ({
      ...s,
      namespaces: s.namespaces.map((n) =>
        n.metadata.name === 'x' ? Namespace.parse(namespace('x', { team: 'c' })) : n,
      ),
    }));
    expect(after[0]).toBeUndefined();
    expect(after[2]).toBeUndefined();
  });

  it('a node change rebuilds the rules with node peers', () => {
    const { before, after } = step((s) => ({
      ...s,
      nodes: [Node.parse(node('n1', { role: 'infra' }, ['192.168.0.2']))],
    }));
    expect(after[2]).toEqual(before[2]); // the same set name, new content
    const tr = new IncrementalTranslator();
    tr.translate(start);
    const moved = tr.translate({ ...start, nodes: [Node.parse(node('n1', {}, ['192.168.0.1']))] });
    expect(tiersOf(moved)[2]).toEqual({ policies: ['adm'], rules: [] }); // no infra node left
  });

  it('a policy update, add or delete rebuilds the tiers', () => {
    const update = (s: State): State => ({
      ...s,
      clusterPolicies: s.clusterPolicies.map((p) =>
        p.metadata.name === 'base'
          ? ClusterNetworkPolicy.parse(
              clusterPolicy('base', 'Baseline', 1, {
                subject: { namespaces: {} },
                ingress: [{ action: 'Accept', from: [{ namespaces: {} }] }],
              }),
            )
          : p,
      ),
    });
    expect(step(update).after[1]?.rules[0]?.action).toBe('accept');
    const removed = step((s) => ({ ...s, clusterPolicies: s.clusterPolicies.slice(1) }));
    expect(removed.after[0]).toBeUndefined();
    const added = step((s) => ({
      ...s,
      clusterPolicies: [
        ...s.clusterPolicies,
        ClusterNetworkPolicy.parse(
          clusterPolicy('adm0', 'Admin', 0, {
            subject: { namespaces: {} },
            ingress: [{ action: 'Pass', from: [{ namespaces: {} }] }],
          }),
        ),
      ],
    }));
    expect(added.after[0]?.policies).toEqual(['adm0', 'adm']);
  });
});
