// A peer set follows pod changes by edits, not by being computed again from every pod: what a
// pod that left takes away is only what nothing else in the set's sources still holds.
import { describe, expect, it } from 'vitest';
import { cidrInterval, intervalElement, mergeIntervals, type Interval } from './addresses.js';
import { Cluster } from './cluster.js';
import { invalidate } from './invalidate.js';
import { SetCache, type CachedSet, type SetSource } from './sets.js';
import { parseState, type Peer } from './state.js';
import { namespace, pod, state } from '../testing/builders.js';

const everyPod: Peer = { namespaceSelector: {}, podSelector: {} };
const redPods: Peer = { namespaceSelector: {}, podSelector: { matchLabels: { app: 'red' } } };

const clusterOf = (pods: unknown[]) =>
  parseState(state({ namespaces: [namespace('x'), namespace('y')], pods, local: [] }));

const host = (ip: string): Interval => cidrInterval(`${ip}/32`)!.interval;

/** The set `source` gives in `cluster`, cached as a translation would leave it. */
function cached(cluster: Cluster, source: SetSource, blocks: string[] = []): CachedSet {
  const v4: Interval[] = blocks.map((b) => cidrInterval(b)!.interval);
  for (const p of source.peers)
    if (!p.ipBlock)
      for (const info of cluster.selectPeerPods(
        source.namespace,
        p.podSelector,
        p.namespaceSelector,
      ))
        for (const a of info.addresses) v4.push({ lo: a.n, hi: a.n });
  for (const a of source.fixed ?? []) v4.push({ lo: a.n, hi: a.n });
  const intervals = { 4: mergeIntervals(v4), 6: [] };
  return { v4: intervals[4].map((iv) => intervalElement(iv, 4)), v6: [], source, intervals };
}

describe('peer sets edited by pod changes', () => {
  const start = [
    pod('x/a', { app: 'red' }, ['10.0.0.1']),
    pod('x/b', { app: 'red' }, ['10.0.0.2']),
    pod('y/c', { app: 'red' }, ['10.0.0.3']),
  ];

  /** The set after `pods` replace `start`, or undefined when it was dropped. */
  function follow(source: SetSource, pods: unknown[], blocks: string[] = []) {
    const cluster = new Cluster(clusterOf(start));
    const cache = new SetCache();
    cache.peers.set('k', cached(cluster, source, blocks));
    invalidate(cache, cluster.update(clusterOf(pods)), cluster);
    return cache.peers.get('k')?.v4;
  }

  it('a pod that goes or stops matching takes its address away; the set is kept, edited', () => {
    const source = { namespace: 'x', peers: [redPods] };
    expect(follow(source, [start[0], start[2]])).toEqual(['10.0.0.1', '10.0.0.3']);
    const relabelled = pod('x/b', { app: 'blue' }, ['10.0.0.2']);
    expect(follow(source, [start[0], relabelled, start[2]])).toEqual(['10.0.0.1', '10.0.0.3']);
    // A new address: the old one goes, the new one comes.
    const moved = pod('x/b', { app: 'red' }, ['10.0.0.9']);
    expect(follow(source, [start[0], moved, start[2]])).toEqual([
      '10.0.0.1',
      '10.0.0.3',
      '10.0.0.9',
    ]);
  });

  it('an address another selected pod still holds stays (a hostNetwork or reused address)', () => {
    const twin = pod('y/d', { app: 'red' }, ['10.0.0.2']);
    const source = { namespace: 'x', peers: [everyPod] };
    const cluster = new Cluster(clusterOf([...start, twin]));
    const cache = new SetCache();
    cache.peers.set('k', cached(cluster, source));
    invalidate(cache, cluster.update(clusterOf([start[0], start[2], twin])), cluster);
    expect(cache.peers.get('k')?.v4).toEqual(['10.0.0.1-10.0.0.3']);
    // The twin unselected (relabelled), and b gone: nothing holds it.
    const blue = pod('y/d', { app: 'blue' }, ['10.0.0.2']);
    const red = { namespace: 'x', peers: [redPods] };
    const again = new Cluster(clusterOf([...start, twin]));
    cache.peers.set('r', cached(again, red));
    invalidate(cache, again.update(clusterOf([start[0], start[2], blue])), again);
    expect(cache.peers.get('r')?.v4).toEqual(['10.0.0.1', '10.0.0.3']);
  });

  it("an address inside the set's ipBlock or among its fixed addresses stays", () => {
    const block: Peer = { ipBlock: { cidr: '10.0.0.2/31' } };
    const withBlock = { namespace: 'x', peers: [redPods, block] };
    expect(follow(withBlock, [start[0]], ['10.0.0.2/31'])).toEqual(['10.0.0.1-10.0.0.3']);
    const fixed = {
      namespace: 'x',
      peers: [redPods],
      fixed: [{ family: 4 as const, n: host('10.0.0.3').lo }],
    };
    expect(follow(fixed, [start[0]])).toEqual(['10.0.0.1', '10.0.0.3']);
  });

  it('a set that would lose many addresses at once is computed again instead', () => {
    const many = Array.from({ length: 70 }, (_, i) =>
      pod(`x/p${i}`, { app: 'red' }, [`10.0.1.${i}`]),
    );
    const source = { namespace: 'x', peers: [redPods] };
    const cluster = new Cluster(clusterOf(many));
    const cache = new SetCache();
    cache.peers.set('k', cached(cluster, source));
    invalidate(cache, cluster.update(clusterOf([])), cluster);
    expect(cache.peers.has('k')).toBe(false);
  });
});
