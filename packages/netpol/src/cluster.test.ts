// The cluster index (cluster.ts): what update() reports as changed, by object and by content.
import { describe, expect, it } from 'vitest';
import { Cluster } from './cluster.js';
import { parseState } from './state.js';
import { namespace, pod, state } from '../testing/builders.js';

const clusterOf = (pods: unknown[]) =>
  parseState(state({ namespaces: [namespace('x')], pods, local: [] }));

describe('the cluster index follows pod objects', () => {
  it('a Pod object that went and comes back is a new pod again; one kept is not read again', () => {
    const [a, b] = [pod('x/a', { app: 'red' }, ['10.0.0.1']), pod('x/b', {}, ['10.0.0.2'])];
    const first = clusterOf([a, b]);
    const cluster = new Cluster(first);
    const kept = cluster.pod('x', 'a');
    const gone = cluster.update(clusterOf([first.pods[0]!]));
    expect(gone.pods.map((c) => [c.before?.key, c.after?.key])).toEqual([['x/b', undefined]]);
    expect(cluster.pod('x', 'b')).toBeUndefined();
    // The very object of the first state, listed again (a cache that hands back what it had).
    const back = cluster.update(first);
    expect(back.pods.map((c) => [c.before?.key, c.after?.key])).toEqual([[undefined, 'x/b']]);
    expect(cluster.pod('x', 'b')?.pod).toBe(first.pods[1]);
    expect(cluster.pod('x', 'a')).toBe(kept);
    expect(cluster.selectPeerPods('x', {}, undefined).map((p) => p.key)).toEqual(['x/a', 'x/b']);
  });
});
